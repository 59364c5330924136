//! `fuzz --junit FILE`: a JUnit report for CI. A testcase per clause the fuzzer judged, named
//! and classed by the clause; a clause with findings has one testcase per finding, each with
//! one failure holding the request, the response, the request_id and what was wrong; each reason
//! calls were blocked is a testcase with an error, so a run that judged nothing fails CI.

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
    // What could not be judged: an error each, never a passed testcase.
    let mut errors = 0;
    for b in &report.blocked {
        errors += 1;
        let _ = writeln!(
            cases,
            "    <testcase classname=\"blocked\" name=\"blocked: {what}\" time=\"0\">\n      <error type=\"{why:?}\" message=\"{msg}\">{times} time(s)</error>\n    </testcase>",
            what = escape(&b.what),
            why = b.why,
            msg = escape(&b.reason),
            times = b.times,
        );
    }
    if report.nothing_judged() {
        errors += 1;
        let _ = writeln!(
            cases,
            "    <testcase classname=\"blocked\" name=\"nothing judged\" time=\"0\">\n      <error type=\"NothingJudged\" message=\"{} call(s), {} unjudged\"/>\n    </testcase>",
            report.calls, report.unjudged_calls
        );
    }
    tests += errors;
    let failures = report.findings.len();
    let time = report.elapsed_ms as f64 / 1000.0;
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"chataigne-conformance fuzz\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\">\n  <testsuite name=\"fuzz seed {seed} budget {budget}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\">\n{cases}  </testsuite>\n</testsuites>\n",
        seed = report.seed,
        budget = escape(&report.budget),
    )
}

/// Text safe in an XML attribute or element.
pub fn escape(text: &str) -> String {
    crate::text::escape_markup(text, crate::text::Markup::Xml)
}
