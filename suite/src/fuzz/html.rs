//! `fuzz --html FILE`: a fuzz run as one self-contained page, laid out like a run's report (the
//! same style, escaping and Content-Security-Policy): the verdict, every clause the run judged
//! with its findings, then each finding folded with its calls, request, response, request_id
//! and the curl lines that reproduce it.

use std::fmt::Write as _;

use super::junit;
use super::report::{Finding, FuzzReport};
use crate::profile::Level;
use crate::report::Status;
use crate::report::html::{badge, esc, page, pretty_json};

/// Whether a finding counts at `level`: one under an ext clause, or that differs from one of the
/// reference's choices, is a difference below the full level.
pub fn counts(finding: &Finding, level: Level) -> bool {
    let ext = chataigne_contract::clauses::find(finding.clause).is_some_and(|c| c.ext);
    level == Level::Full || !(ext || finding.choice.is_some())
}

pub fn render(report: &FuzzReport, level: Level) -> String {
    let counted = report.findings.iter().filter(|f| counts(f, level)).count();
    let differences = report.findings.len() - counted;
    let mut body = String::new();
    let _ = writeln!(body, "<h1>Chataigne conformance: fuzz</h1>");
    let _ = writeln!(
        body,
        "<p class=\"sub\">seed {} · budget {} · level {} · {} calls in {:.1} s{}</p>",
        report.seed,
        esc(&report.budget),
        level.as_str(),
        report.calls,
        report.elapsed_ms as f64 / 1000.0,
        if report.read_only { " · read-only (no write tool was called)" } else { "" }
    );
    let unjudged = !report.blocked.is_empty() || report.nothing_judged();
    let (tone, head) = if counted == 0 && unjudged {
        (
            "stopped",
            format!(
                "No verdict: {} blocked reason(s), {} call(s) unjudged{}",
                report.blocked.len(),
                report.unjudged_calls,
                if report.nothing_judged() { ", nothing was judged" } else { "" }
            ),
        )
    } else if counted == 0 && differences == 0 {
        ("ok", "No finding: every rule the fuzzer judges held".to_owned())
    } else if counted == 0 {
        (
            "ok",
            format!(
                "No finding at the {} level: differences from the reference's choices only",
                level.as_str()
            ),
        )
    } else {
        ("ko", format!("{counted} finding(s): the server breaks the contract"))
    };
    let _ = writeln!(
        body,
        "<section class=\"verdict {tone}\" id=\"verdict\">\n<p class=\"head\">{}</p>",
        esc(&head)
    );
    let mut lines = Vec::new();
    if differences > 0 {
        lines.push(format!(
            "{differences} finding(s) under ext clauses differ from the reference's choices: not counted at the {} level",
            level.as_str()
        ));
    }
    lines.push(format!("--seed {} makes the same calls against the same server", report.seed));
    let _ = writeln!(body, "<ul>");
    for line in lines {
        let _ = writeln!(body, "<li>{}</li>", esc(&line));
    }
    let _ = writeln!(body, "</ul>");
    if !report.findings.is_empty() {
        let _ = writeln!(
            body,
            "<p class=\"jump\"><a href=\"#findings\">{} finding(s) below</a>, each folded: open one for its calls and how to reproduce it.</p>",
            report.findings.len()
        );
    }
    let _ = writeln!(body, "</section>");

    let _ = writeln!(
        body,
        "<h2>Clauses judged</h2>\n<table>\n<tr><th>Clause</th><th>Verdict</th><th>Findings</th></tr>"
    );
    for clause in junit::clauses(report) {
        let found: Vec<(usize, &Finding)> =
            report.findings.iter().enumerate().filter(|(_, f)| f.clause == clause).collect();
        let (class, verdict) = match found.first() {
            // Not "passed": a fuzz run finds faults, it does not certify a clause.
            None => ("passed", "<span class=\"badge passed\">✓ no finding</span>".to_owned()),
            Some((_, f)) if counts(f, level) => ("failed", badge(Status::Failed)),
            // Shown apart, never as a pass: the server differs from the reference's choice.
            Some(_) => ("blocked", "<span class=\"badge skipped\">≠ difference</span>".to_owned()),
        };
        let links: Vec<String> = found
            .iter()
            .map(|(i, f)| format!("<a href=\"#finding-{}\">{} {}</a>", i + 1, i + 1, esc(&f.tool)))
            .collect();
        let links =
            if links.is_empty() { "<span class=\"none\">none</span>".to_owned() } else { links.join(" · ") };
        let _ = writeln!(
            body,
            "<tr class=\"{class}\"><td class=\"id\">{}</td><td>{verdict}</td><td class=\"detail\">{links}</td></tr>",
            esc(clause)
        );
    }
    let _ = writeln!(body, "</table>");

    if !report.blocked.is_empty() {
        let _ = writeln!(
            body,
            "<h2 id=\"blocked\">Blocked: not judged</h2>\n<table>\n<tr><th>Why</th><th>What</th><th>Times</th><th>Reason</th></tr>"
        );
        for b in &report.blocked {
            let _ = writeln!(
                body,
                "<tr class=\"blocked\"><td class=\"id\">{}</td><td>{}</td><td>{}</td><td class=\"detail\">{}</td></tr>",
                esc(&format!("{:?}", b.why)),
                esc(&b.what),
                b.times,
                esc(&b.reason)
            );
        }
        let _ = writeln!(body, "</table>");
    }

    if !report.findings.is_empty() {
        let _ = writeln!(body, "<h2 id=\"findings\">Findings</h2>");
        for (i, f) in report.findings.iter().enumerate() {
            body.push_str(&finding(i + 1, f, counts(f, level)));
        }
    }
    page(&format!("Chataigne conformance: fuzz, seed {}", report.seed), &body)
}

/// One finding, folded.
fn finding(n: usize, f: &Finding, counted: bool) -> String {
    let status = if counted {
        badge(Status::Failed)
    } else {
        "<span class=\"badge skipped\">≠ difference</span>".to_owned()
    };
    let mut out = format!(
        "<details class=\"failure\" id=\"finding-{n}\"><summary>{status} <b>{}</b><span class=\"where\">{} · {} · {}</span></summary>\n<div class=\"body\">\n",
        esc(&f.detail),
        esc(f.clause),
        esc(&f.tool),
        esc(&f.persona)
    );
    let mut facts = format!(
        "<dt>clause</dt><dd>{}</dd><dt>tool</dt><dd>{}</dd><dt>persona</dt><dd>{}</dd>",
        esc(f.clause),
        esc(&f.tool),
        esc(&f.persona)
    );
    if let Some(m) = &f.mutation {
        let _ = write!(facts, "<dt>mutation</dt><dd>{}</dd>", esc(m));
    }
    if let Some(choice) = f.choice {
        let _ = write!(
            facts,
            "<dt>differs from</dt><dd>the reference's choice <code>{}</code></dd>",
            esc(choice)
        );
    }
    let shrunk = if f.shrunk { "shrunk to a minimum" } else { "as found (not shrunk)" };
    let _ = write!(facts, "<dt>arguments</dt><dd>{shrunk}</dd><dt>seed</dt><dd>{}</dd>", f.seed);
    let _ = writeln!(out, "<dl class=\"facts\">{facts}</dl>");
    for (i, step) in f.steps_before.iter().enumerate() {
        let tool = step["tool"].as_str().unwrap_or_default();
        let _ = writeln!(
            out,
            "<div class=\"exchange\"><div class=\"label\">call {}<span>{}</span></div><pre>{}</pre></div>",
            i + 1,
            esc(tool),
            esc(&pretty_json(&step["arguments"].to_string()))
        );
    }
    // The whole answer where the transcript kept it (tokens masked), else its summary.
    let response = f.calls.last().map_or_else(|| f.response.clone(), |c| c.response.to_string());
    for (label, text) in
        [("request", pretty_json(&f.request.to_string())), ("response", pretty_json(&response))]
    {
        let _ = writeln!(
            out,
            "<div class=\"exchange {label}\"><div class=\"label\">{label}</div><pre>{}</pre></div>",
            esc(&text)
        );
    }
    if let Some(id) = &f.request_id {
        let _ = writeln!(out, "<p class=\"rid\">request_id <code>{}</code></p>", esc(id));
    }
    let _ = writeln!(
        out,
        "<div class=\"exchange\"><div class=\"label\">reproduce<span>the owner's token as $TOKEN</span></div><pre>{}</pre></div>",
        esc(&f.reproduction)
    );
    if f.replay.is_some() {
        let _ = writeln!(
            out,
            "<p class=\"title\">With <code>--out DIR</code>: <code>chataigne-conformance replay DIR/finding-{n:02}-{}.json</code> runs it again.</p>",
            esc(f.clause)
        );
    }
    out.push_str("</div></details>\n");
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn finding(clause: &'static str, detail: &str) -> Finding {
        Finding {
            clause,
            tool: "list_orders".to_owned(),
            persona: "owner".to_owned(),
            arguments: json!({ "limit": 51 }),
            detail: detail.to_owned(),
            mutation: Some("limit above its maximum".to_owned()),
            steps_before: vec![json!({ "tool": "get_order", "arguments": { "order_id": "ord_1" } })],
            request: json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call" }),
            response: r#"{"result":{"text":"<script>alert(1)</script>"}}"#.to_owned(),
            request_id: Some("req_'x'".to_owned()),
            reproduction: "curl -H \"authorization: Bearer $TOKEN\"".to_owned(),
            shrunk: true,
            seed: 7,
            replay: None,
            choice: None,
            calls: Vec::new(),
        }
    }

    fn report(findings: Vec<Finding>) -> FuzzReport {
        FuzzReport {
            seed: 7,
            budget: "400calls".to_owned(),
            calls: 400,
            elapsed_ms: 420,
            read_only: false,
            findings,
            blocked: Vec::new(),
            unjudged_calls: 0,
            rules: crate::fuzz::report::RulesRound::default(),
        }
    }

    #[test]
    fn a_finding_is_failed_its_clause_linked_and_the_server_text_escaped() {
        let page = render(&report(vec![finding("PAG-2", "limit 51 accepted <b>")]), Level::Full);
        assert!(page.contains("1 finding(s): the server breaks the contract"), "{page}");
        assert!(page.contains("<tr class=\"failed\"><td class=\"id\">PAG-2</td>"), "{page}");
        assert!(page.contains("href=\"#finding-1\""), "{page}");
        assert!(page.contains("id=\"finding-1\""), "{page}");
        assert!(page.contains("limit 51 accepted &lt;b&gt;"), "{page}");
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;"), "{page}");
        assert!(page.contains("req_&#39;x&#39;"), "{page}");
        // Every other clause judged is shown passed.
        assert!(page.contains("<tr class=\"passed\"><td class=\"id\">PROTO-1</td>"), "{page}");
    }

    #[test]
    fn an_ext_finding_is_a_difference_at_the_seed_level_and_a_failure_at_full() {
        // PAG-2's refused limit is an ext clause: the seed allows clamping.
        assert!(chataigne_contract::clauses::find("PAG-2").is_some_and(|c| c.ext));
        let seed = render(&report(vec![finding("PAG-2", "limit 51 accepted")]), Level::Seed);
        assert!(seed.contains("No finding"), "{seed}");
        assert!(seed.contains("≠ difference"), "{seed}");
        assert!(!seed.contains("<tr class=\"failed\">"), "{seed}");
        let full = render(&report(vec![finding("PAG-2", "limit 51 accepted")]), Level::Full);
        assert!(full.contains("<tr class=\"failed\">"), "{full}");
    }

    #[test]
    fn a_run_with_blocked_calls_and_no_finding_is_no_verdict() {
        let mut r = report(Vec::new());
        r.blocked.push(super::super::observed::Blocked {
            why: super::super::observed::Why::RateLimited,
            what: "list_orders as `owner`".to_owned(),
            reason: "still refused <for> its rate".to_owned(),
            times: 3,
        });
        r.unjudged_calls = 3;
        let page = render(&r, Level::Full);
        assert!(page.contains("class=\"verdict stopped\""), "{page}");
        assert!(!page.contains("No finding"), "{page}");
        assert!(page.contains("still refused &lt;for&gt; its rate"), "{page}");
        assert_eq!(r.exit_code(0), 2);
    }

    #[test]
    fn a_clean_run_passes_every_clause_it_judged() {
        let page = render(&report(Vec::new()), Level::Full);
        assert!(page.contains("No finding"), "{page}");
        assert!(!page.contains("class=\"failed\""), "{page}");
        assert_eq!(page.matches("<tr class=\"passed\">").count(), junit::clauses(&report(Vec::new())).len());
    }
}
