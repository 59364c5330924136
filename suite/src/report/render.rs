//! Renderings of the clause matrix: a Markdown table for a CI step summary, and the plain table
//! printed at the end of a console run.

use std::fmt::Write as _;

use super::{Report, Status};

fn icon(status: Status) -> &'static str {
    match status {
        Status::Passed => "✅",
        Status::Failed => "❌",
        Status::Skipped => "⏭️",
        Status::NotRun => "➖",
    }
}

/// One table cell: no pipes or newlines.
fn cell(text: &str) -> String {
    let one_line = text.lines().next().unwrap_or_default();
    let cut = crate::client::cut(one_line, 160);
    cut.replace('|', "\\|")
}

/// A Markdown summary fit for `$GITHUB_STEP_SUMMARY`: totals, then one row per clause.
pub fn markdown(report: &Report) -> String {
    let s = &report.summary;
    let mut out = String::new();
    let _ = writeln!(out, "## Chataigne conformance: {}", report.endpoint);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "**{} passed, {} failed, {} skipped, {} not run** of {} clauses (suite {}).",
        s.passed,
        s.failed,
        s.skipped,
        s.not_run,
        report.clauses.len(),
        report.suite_version
    );
    let caps = &report.capabilities;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(
        out,
        "Control API: {}. Server log: {}. Features: {}.",
        yes_no(caps.control_api),
        yes_no(caps.server_log),
        report.features
    );
    for e in &report.parse_errors {
        let _ = writeln!(out, "\n> ❌ feature did not parse: {}", cell(e));
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "| clause | | status | scenarios | detail |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for c in &report.clauses {
        let passed = c.scenarios.iter().filter(|s| s.status == Status::Passed).count();
        let ext = if c.ext { "ext" } else { "" };
        let detail = match (&c.reason, c.status) {
            (_, Status::Passed) => cell(&c.title),
            (Some(reason), _) => cell(reason),
            (None, _) => cell(&c.title),
        };
        let _ = writeln!(
            out,
            "| {} | {ext} | {} {} | {passed}/{} | {detail} |",
            c.id,
            icon(c.status),
            c.status.as_str(),
            c.scenarios.len()
        );
    }
    let findings: Vec<_> = report.clauses.iter().filter(|c| !c.findings.is_empty()).collect();
    let failures: Vec<_> = report
        .clauses
        .iter()
        .flat_map(|c| c.scenarios.iter().filter(|s| s.status == Status::Failed).map(move |s| (c, s)))
        .collect();
    if !failures.is_empty() || !findings.is_empty() {
        let _ = writeln!(out, "\n<details><summary>Failures</summary>\n");
        for c in &findings {
            let _ = writeln!(
                out,
                "**{}**, found on every call:\n\n```text\n{}\n```\n",
                c.id,
                c.findings.join("\n")
            );
        }
        let mut shown = std::collections::BTreeSet::new();
        for (_, s) in failures {
            if !shown.insert((s.feature.clone(), s.line)) {
                continue;
            }
            let _ = writeln!(out, "**{}** ({}:{})", s.name, s.feature, s.line);
            let _ = writeln!(
                out,
                "\n```text\n{}\n{}\n```\n",
                s.failed_step.as_deref().unwrap_or_default(),
                s.message.as_deref().unwrap_or_default()
            );
        }
        let _ = writeln!(out, "</details>");
    }
    out
}

/// The matrix as plain text, after cucumber's own output.
pub fn console_matrix(report: &Report) -> String {
    let mut out = String::from("\nClause matrix\n");
    for c in &report.clauses {
        let ext = if c.ext { " (ext)" } else { "" };
        let n = c.scenarios.len();
        let passed = c.scenarios.iter().filter(|s| s.status == Status::Passed).count();
        let detail = match c.status {
            Status::Passed => String::new(),
            _ => c.reason.as_deref().map(|r| format!(" — {}", cell(r))).unwrap_or_default(),
        };
        let _ = writeln!(out, "  {:<8} {:<8} {passed}/{n}{ext}{detail}", c.id, c.status.as_str());
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "{} passed, {} failed, {} skipped, {} not run",
        s.passed, s.failed, s.skipped, s.not_run
    );
    out
}
