//! Renderings of the clause matrix: a Markdown table for a CI step summary, and the plain table
//! printed at the end of a console run. Both start from the same verdict lines, so a person
//! reads the outcome in one sentence: certified or not, at which level, and why.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{ClauseResult, Level, Report, Status};

fn icon(status: Status) -> &'static str {
    match status {
        Status::Passed => "✅",
        Status::Failed => "❌",
        Status::Blocked => "⛔",
        Status::Skipped => "⏭️",
        Status::NotRun => "➖",
    }
}

/// One table cell: no pipes or newlines.
fn cell(text: &str) -> String {
    crate::text::table_cell(text, 160)
}

/// What the two levels mean, for readers who meet them first in a report.
pub const LEVELS: &str = "seed = required by the seed contract; ext = this project's extension or \
    the reference server's choice. The seed level certifies the seed clauses and ignores \
    differences from reference choices; the full level (--level full) requires everything.";

/// The verdict in one line, then what was not checked and why, then the differences from this
/// project's choices that the level does not count.
pub fn verdict_lines(report: &Report) -> Vec<String> {
    let s = &report.summary;
    let level = report.level.as_str();
    let what = if report.level == Level::Seed { "seed clauses" } else { "clauses" };
    let checked = s.passed + s.failed + s.blocked;
    let mut lines = Vec::new();
    if let Some(why) = &s.interrupted {
        lines.push(format!("NOT CERTIFIED at the {level} level: {why}."));
    }
    if let Some(why) = &s.nothing_judged {
        lines.push(format!("NO VERDICT at the {level} level: {why}."));
    }
    let head = if s.certified {
        format!("CERTIFIED at the {level} level")
    } else if s.failed + s.blocked == 0 && s.interrupted.is_none() && report.parse_errors.is_empty() {
        format!("NOT CERTIFIED at the {level} level (--require-all: every required clause must be checked)")
    } else {
        format!("NOT CERTIFIED at the {level} level")
    };
    lines.push(format!(
        "{head}: {} {what}, {checked} checked ({} passed, {} failed, {} blocked), {} skipped, {} not run.",
        s.required, s.passed, s.failed, s.blocked, s.skipped, s.not_run
    ));
    let ids = |status: Status| -> Vec<&ClauseResult> {
        report.required().filter(|c| c.at(report.level) == status).collect()
    };
    let join = |cs: &[&ClauseResult]| cs.iter().map(|c| c.id.as_str()).collect::<Vec<_>>().join(", ");
    let failed = ids(Status::Failed);
    if !failed.is_empty() {
        lines.push(format!("  failed: {}", join(&failed)));
    }
    let blocked = ids(Status::Blocked);
    if !blocked.is_empty() {
        lines.push(format!(
            "  blocked (the server's data shape differs, see ENV-7; not checked, not a pass): {}",
            join(&blocked)
        ));
    }
    for (status, label) in [(Status::Skipped, "skipped"), (Status::NotRun, "not run")] {
        let mut by_reason: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for c in ids(status) {
            let reason = c.reason.clone().unwrap_or_else(|| label.to_owned());
            by_reason.entry(reason).or_default().push(&c.id);
        }
        for (reason, clauses) in by_reason {
            lines.push(format!("  {label} ({reason}): {}", clauses.join(", ")));
        }
    }
    if !s.ext_differences.is_empty() {
        lines.push(format!(
            "  differs from this project's choices (not required at the seed level; --level full): {}",
            s.ext_differences.join(", ")
        ));
    }
    if !report.parse_errors.is_empty() {
        lines.push(format!("  {} feature file(s) did not parse", report.parse_errors.len()));
    }
    lines
}

/// The full-level cell: shown when it says something the seed verdict does not.
fn full_cell(c: &ClauseResult) -> String {
    c.full_differs().map(|s| format!("{} {}", icon(s), s.as_str())).unwrap_or_default()
}

/// A Markdown summary fit for `$GITHUB_STEP_SUMMARY`: the verdict, then one row per clause.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Chataigne conformance: {}", report.endpoint);
    let _ = writeln!(out);
    let mut lines = verdict_lines(report).into_iter();
    if let Some(first) = lines.next() {
        let _ = writeln!(out, "**{first}**");
    }
    let _ = writeln!(out);
    for line in lines {
        let _ = writeln!(out, "- {}", line.trim());
    }
    let caps = &report.capabilities;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Suite {}. Control API: {}. Server log: {}. Features: {}.",
        report.suite_version,
        yes_no(caps.control_api),
        yes_no(caps.server_log),
        report.features
    );
    let _ = writeln!(out, "Levels: {LEVELS}");
    if let Some(why) = &report.audit_not_run {
        let _ = writeln!(out, "\n> Audit of untouched records skipped (not a pass): {}", cell(why));
    }
    if let Some(why) = &report.oracle_not_run {
        let _ = writeln!(out, "\n> Differential oracle skipped (not a pass): {}", cell(why));
    }
    for e in &report.parse_errors {
        let _ = writeln!(out, "\n> ❌ feature did not parse: {}", cell(e));
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "| clause | level | verdict | full level | evidence | scenarios | detail |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for c in &report.clauses {
        let passed = c.scenarios.iter().filter(|s| s.status == Status::Passed).count();
        let detail = match (&c.reason, c.status) {
            (_, Status::Passed) => match &c.full_reason {
                Some(full) => cell(full),
                None => cell(&c.title),
            },
            (Some(reason), _) => cell(reason),
            (None, _) => cell(&c.title),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} {} | {} | {} | {passed}/{} | {detail} |",
            c.id,
            c.level,
            icon(c.status),
            c.status.as_str(),
            full_cell(c),
            c.evidence,
            c.scenarios.len()
        );
    }
    let findings: Vec<_> = report.clauses.iter().filter(|c| !c.findings.is_empty()).collect();
    let failures = failed_scenarios(report);
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
        for s in failures {
            let _ = writeln!(out, "**{}** ({}:{})", s.name, s.feature, s.line);
            let _ = writeln!(out, "\n```text\n{}\n```\n", failure_text(s));
        }
        let _ = writeln!(out, "</details>");
    }
    out
}

/// Every scenario that did not pass at the full level, once each (a scenario tagged with two
/// clauses is listed under both).
pub(super) fn failed_scenarios(report: &Report) -> Vec<&super::ScenarioResult> {
    let mut shown = std::collections::BTreeSet::new();
    report
        .clauses
        .iter()
        .flat_map(|c| &c.scenarios)
        .filter(|s| s.at(Level::Full) == Status::Failed || s.status == Status::Blocked)
        .filter(|s| shown.insert((s.feature.clone(), s.line, s.name.clone())))
        .collect()
}

/// The failed step and its message; for a scenario that passed at the seed level, the
/// differences from the reference's choices.
fn failure_text(s: &super::ScenarioResult) -> String {
    if s.status == Status::Passed {
        let mut text = String::from("passes at the seed level; differs from the reference's choices:\n");
        for d in &s.ext_differences {
            let _ = writeln!(text, "  {d}");
        }
        return text.trim_end().to_owned();
    }
    let scope = if s.ext_choices.is_empty() {
        String::new()
    } else {
        format!("(checks the reference's choice: {})\n", s.ext_choices.join(", "))
    };
    format!(
        "{scope}{}\n{}",
        s.failed_step.as_deref().unwrap_or_default(),
        s.message.as_deref().unwrap_or_default()
    )
}

/// The matrix as plain text, after the run's progress, then the failures, then the verdict.
pub fn console_matrix(report: &Report) -> String {
    let mut out = String::from("\nClause matrix (level: seed = the seed contract, ext = this project's)\n");
    let _ = writeln!(
        out,
        "  {:<8} {:<5} {:<8} {:<12} {:>8} detail",
        "clause", "level", "verdict", "full level", "evidence"
    );
    for c in &report.clauses {
        let n = c.scenarios.len();
        let passed = c.scenarios.iter().filter(|s| s.status == Status::Passed).count();
        let full = c.full_differs().map(Status::as_str).unwrap_or_default();
        let detail = match (c.status, &c.full_reason) {
            (Status::Passed, Some(full)) => format!(" — {}", cell(full)),
            (Status::Passed, None) => String::new(),
            _ => c.reason.as_deref().map(|r| format!(" — {}", cell(r))).unwrap_or_default(),
        };
        let _ = writeln!(
            out,
            "  {:<8} {:<5} {:<8} {:<12} {:>8} {passed}/{n}{detail}",
            c.id,
            c.level,
            c.status.as_str(),
            full,
            c.evidence
        );
    }
    let failures = failed_scenarios(report);
    if !failures.is_empty() {
        let _ = writeln!(out, "\nFailures");
        for s in failures {
            let _ = writeln!(out, "\n● {} ({}:{})", s.name, s.feature, s.line);
            for line in failure_text(s).lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    for c in report.clauses.iter().filter(|c| !c.findings.is_empty()) {
        let _ = writeln!(out, "\n● {}, found on every call:", c.id);
        for f in c.findings.iter().take(5) {
            let _ = writeln!(out, "    {}", cell(f));
        }
    }
    let _ = writeln!(out);
    for line in verdict_lines(report) {
        let _ = writeln!(out, "{line}");
    }
    out
}
