//! Every bound docs/CONTRACT.md states has derived edges (`chataigne_conformance::edges::BOUNDS`):
//! the document is read for what looks like a bound (`a..=b`, a size in KiB or MiB, a number of
//! days, seconds, hours or calls per minute), and each must be a token of a row of `BOUNDS`
//! whose edges derive something. A bound added to the contract without edges fails here.

use chataigne_conformance::edges::{self, BOUNDS, Family};
use chataigne_conformance::matrices::{self, Expect};
use chataigne_contract::ToolName;

const CONTRACT: &str = include_str!("../../../docs/CONTRACT.md");

/// `digits` + `suffix` wherever `suffix` follows a number and ends a word.
fn numbered(text: &str, prefix: &str, suffix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(suffix) {
        let before = &text[..at];
        let digits: String = before
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let ends = text[at + suffix.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        let lead = &before[..before.len() - digits.len()];
        if !digits.is_empty() && ends && lead.ends_with(prefix) {
            out.push(format!("{prefix}{digits}{suffix}"));
        }
    }
    out
}

/// Every bound the document states, as written.
fn stated(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("..=") {
        let low: String = text[..at].chars().rev().take_while(char::is_ascii_digit).collect();
        let high: String = text[at + 3..].chars().take_while(char::is_ascii_digit).collect();
        if !low.is_empty() && !high.is_empty() {
            out.push(format!("{}..={high}", low.chars().rev().collect::<String>()));
        }
    }
    for (prefix, suffix) in [
        ("", " KiB"),
        ("", " MiB"),
        ("at most ", " days"),
        ("", " s"),
        ("", " h"),
        ("", " calls per minute"),
        ("", "/min"),
    ] {
        out.extend(numbered(text, prefix, suffix));
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_scanner_finds_what_a_bound_looks_like() {
    let found =
        stated("limit 1..=50, a body over 1 MiB, at most 366 days, reads 15 s, 24 h, 1000/min; 3 hosts");
    assert_eq!(found, ["1 MiB", "1..=50", "1000/min", "15 s", "24 h", "at most 366 days"]);
}

#[test]
fn every_bound_of_the_contract_has_a_row_and_every_row_is_in_the_contract() {
    let found = stated(CONTRACT);
    assert!(found.len() >= 15, "{found:?}");
    let tokens: Vec<&str> = BOUNDS.iter().flat_map(|b| b.tokens.iter().copied()).collect();
    for bound in &found {
        assert!(
            tokens.contains(&bound.as_str()),
            "docs/CONTRACT.md states `{bound}` and suite/src/edges.rs's BOUNDS has no row for it: derive its edges"
        );
    }
    for token in tokens {
        assert!(
            found.iter().any(|f| f == token),
            "BOUNDS names `{token}`, which docs/CONTRACT.md does not state"
        );
    }
}

#[test]
fn every_bound_derives_edges_below_on_and_above_it() {
    let dataset = chataigne_contract::dataset::generate();
    let rows = matrices::bound_rows(&dataset);
    let features = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../features");
    for bound in BOUNDS {
        let of = |member: &'static str| {
            rows.iter().filter(move |r| r.argument == member && r.clause == bound.clause)
        };
        let ok = match bound.family {
            Family::Schema { member } => {
                of(member).any(|r| r.expect == Expect::Served)
                    && of(member).any(|r| r.expect == Expect::Refused)
            }
            Family::Length { member } => {
                // Past the bound in ASCII, and in the units a server could count otherwise.
                let edges: Vec<_> = of(member).map(|r| r.edge.clone()).collect();
                of(member).any(|r| r.expect == Expect::Refused)
                    && edges.iter().any(|e| e.contains("two-byte"))
                    && edges.iter().any(|e| e.contains("astral"))
            }
            Family::Calendar => {
                let range: Vec<_> = rows.iter().filter(|r| r.argument == matrices::RANGE).collect();
                range.iter().any(|r| r.expect == Expect::Served)
                    && range.iter().any(|r| r.expect == Expect::Refused)
                    && range.iter().all(|r| r.clause == bound.clause)
            }
            Family::Body => {
                edges::BODY_EDGES.iter().any(|e| e.chunked && !e.within)
                    && edges::BODY_EDGES.iter().any(|e| !e.chunked && e.within)
            }
            Family::Page => {
                !matrices::page_size_rows(&dataset).is_empty()
                    && !matrices::item_size_rows(&dataset).is_empty()
            }
            Family::Output => chataigne_conformance::judge::RULES
                .iter()
                .any(|r| r.clause == bound.clause && r.name == "summary-within-4-kib"),
            Family::Deadline => {
                let deadlines = matrices::deadline_rows(&dataset);
                ToolName::ALL.iter().all(|t| deadlines.iter().any(|r| r.tool == *t))
            }
            Family::Scenarios { feature } => std::fs::read_to_string(features.join(feature))
                .is_ok_and(|text| text.contains(&format!("@{}", bound.clause))),
        };
        assert!(ok, "{} ({:?}): no edges derived from {:?}", bound.clause, bound.tokens, bound.family);
    }
}
