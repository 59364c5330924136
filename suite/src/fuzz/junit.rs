//! `fuzz --junit FILE`: a JUnit report for CI. A testcase per clause the fuzzer judged, named
//! and classed by the clause; a clause with findings has one testcase per finding, each with
//! one failure holding the request, the response, the request_id and what was wrong.

use std::fmt::Write as _;

use super::report::FuzzReport;

/// The clauses the fuzzer's oracles judge on every run; those of the write sequences only when
/// writes were fuzzed.
const ALWAYS: &[&str] = &[
    "PROTO-1", "PROTO-2", "PROTO-3", "PROTO-4", "ENV-1", "ENV-2", "ENV-3", "ENV-4", "ENV-5", "ENV-6",
    "PAG-1", "PAG-2", "PAG-3", "PAG-4", "PAG-5", "PAG-8", "LIM-1", "LIM-7", "AUTH-3", "AUTH-4", "AUTH-5",
    "AUTH-6",
];
const WRITES: &[&str] = &["IDEM-1", "IDEM-2", "IDEM-3", "PRE-1", "PRE-2", "PRE-3", "ABS-2"];

/// The clauses a report's run judged, and any other a finding names, in order.
pub fn clauses(report: &FuzzReport) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = ALWAYS.to_vec();
    if !report.read_only {
        out.extend(WRITES);
    }
    out.extend(report.findings.iter().map(|f| f.clause));
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert(*c));
    out
}

pub fn render(report: &FuzzReport) -> String {
    let clauses = clauses(report);
    let mut cases = String::new();
    let mut tests = 0;
    for clause in &clauses {
        let found: Vec<_> = report.findings.iter().filter(|f| f.clause == *clause).collect();
        if found.is_empty() {
            tests += 1;
            let _ = writeln!(cases, r#"    <testcase classname="{0}" name="{0}" time="0"/>"#, escape(clause));
            continue;
        }
        for (i, f) in found.iter().enumerate() {
            tests += 1;
            let mut text = String::new();
            for step in &f.steps_before {
                let _ = writeln!(
                    text,
                    "after: {} {}",
                    step["tool"].as_str().unwrap_or_default(),
                    step["arguments"]
                );
            }
            let _ = writeln!(text, "persona: {}", f.persona);
            let _ = writeln!(text, "request: {}", f.request);
            let _ = writeln!(text, "response: {}", f.response);
            let _ = writeln!(text, "request_id: {}", f.request_id.as_deref().unwrap_or("(none)"));
            let _ = writeln!(text, "difference: {}", f.detail);
            let _ = writeln!(text, "reproduce:\n{}", f.reproduction);
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{c}\" name=\"{c} finding {n}: {tool}\" time=\"0\">\n      <failure type=\"{c}\" message=\"{msg}\">{body}</failure>\n    </testcase>",
                c = escape(clause),
                n = i + 1,
                tool = escape(&f.tool),
                msg = escape(&f.detail),
                body = escape(&text),
            );
        }
    }
    let failures = report.findings.len();
    let time = report.elapsed_ms as f64 / 1000.0;
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"chataigne-conformance fuzz\" tests=\"{tests}\" failures=\"{failures}\" time=\"{time:.3}\">\n  <testsuite name=\"fuzz seed {seed} budget {budget}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time:.3}\">\n{cases}  </testsuite>\n</testsuites>\n",
        seed = report.seed,
        budget = escape(&report.budget),
    )
}

/// Text safe in an XML attribute or element: the five markup characters escaped, and the
/// characters XML 1.0 cannot hold at all (most controls) replaced by U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Newlines and tabs in an attribute would be normalized to spaces by a reader.
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_and_no_forbidden_character() {
        let got = escape("a<b>&\"c'\u{1}\u{7}d\ne\u{FFFF}");
        assert_eq!(got, "a&lt;b&gt;&amp;&quot;c&apos;\u{FFFD}\u{FFFD}d&#10;e\u{FFFD}");
    }
}
