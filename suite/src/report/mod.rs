//! The clause matrix: every clause of the contract → passed / failed / skipped (with the reason)
//! / not run, with the scenarios and request_ids behind each verdict; and its renderings.
//!
//! Rules: a clause passes only if every scenario tagged with it passed and no automatic check
//! found against it; one failed scenario fails it; otherwise a skipped scenario makes it
//! skipped; a clause no scenario of the run checks is "not run".

mod collector;
mod render;

use chataigne_contract::clauses::CLAUSES;
use serde::Serialize;

pub use collector::{Collector, Reporter, RunLog, ScenarioExtras, ScenarioKey, scenario_key};
pub use render::{console_matrix, markdown};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    Skipped,
    NotRun,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::NotRun => "not run",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub suite_version: String,
    pub endpoint: String,
    pub features: String,
    pub capabilities: crate::context::Capabilities,
    pub summary: Summary,
    pub clauses: Vec<ClauseResult>,
    /// Feature files that did not parse.
    pub parse_errors: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub not_run: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClauseResult {
    pub id: String,
    pub title: String,
    /// A reference-server extension of the seed contract.
    pub ext: bool,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub scenarios: Vec<ScenarioResult>,
    /// Failures found by automatic checks (e.g. every output validated, PROTO-4).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub feature: String,
    pub name: String,
    pub line: usize,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub request_ids: Vec<String>,
    #[serde(skip)]
    pub tags: Vec<String>,
}

/// A finding against a clause outside the scenarios tagged with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub clause: String,
    pub detail: String,
}

impl Report {
    /// Fold scenario results and findings into the matrix of every clause.
    pub fn build(
        scenarios: &[ScenarioResult],
        findings: &[Finding],
        header: ReportHeader,
        parse_errors: Vec<String>,
    ) -> Report {
        let clauses: Vec<ClauseResult> = CLAUSES
            .iter()
            .map(|clause| {
                let tagged: Vec<ScenarioResult> =
                    scenarios.iter().filter(|s| s.tags.iter().any(|t| t == clause.id)).cloned().collect();
                let found: Vec<String> =
                    findings.iter().filter(|f| f.clause == clause.id).map(|f| f.detail.clone()).collect();
                let (status, reason) = verdict(&tagged, &found);
                ClauseResult {
                    id: clause.id.to_owned(),
                    title: clause.title.to_owned(),
                    ext: clause.ext,
                    status,
                    reason,
                    scenarios: tagged,
                    findings: found,
                }
            })
            .collect();
        let count = |s: Status| clauses.iter().filter(|c| c.status == s).count();
        let summary = Summary {
            passed: count(Status::Passed),
            failed: count(Status::Failed),
            skipped: count(Status::Skipped),
            not_run: count(Status::NotRun),
        };
        Report {
            suite_version: env!("CARGO_PKG_VERSION").to_owned(),
            endpoint: header.endpoint,
            features: header.features,
            capabilities: header.capabilities,
            summary,
            clauses,
            parse_errors,
        }
    }

    /// 0: every required clause passed; 1: a clause failed, or (with `require_all`) was skipped
    /// or not run, or a feature did not parse.
    pub fn exit_code(&self, require_all: bool) -> u8 {
        let failed = self.summary.failed > 0 || !self.parse_errors.is_empty();
        let incomplete = self.summary.skipped + self.summary.not_run > 0;
        if failed || (require_all && incomplete) { 1 } else { 0 }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ReportHeader {
    pub endpoint: String,
    pub features: String,
    pub capabilities: crate::context::Capabilities,
}

fn verdict(scenarios: &[ScenarioResult], findings: &[String]) -> (Status, Option<String>) {
    let failed: Vec<&ScenarioResult> = scenarios.iter().filter(|s| s.status == Status::Failed).collect();
    if let Some(first) = failed.first() {
        let step = first.failed_step.as_deref().unwrap_or("a hook");
        let more = if failed.len() > 1 { format!(" (and {} more)", failed.len() - 1) } else { String::new() };
        return (Status::Failed, Some(format!("{}: {step}{more}", first.name)));
    }
    if let Some(first) = findings.first() {
        let line = first.lines().next().unwrap_or_default();
        return (Status::Failed, Some(line.to_owned()));
    }
    if scenarios.is_empty() {
        return (Status::NotRun, Some("no scenario of this run checks it".to_owned()));
    }
    // The stdio half of a clause does not hold back a clause checked over HTTP, as long as
    // something of the clause passed (the scenario itself stays reported as skipped).
    let stdio_only = |s: &&ScenarioResult| {
        s.status == Status::Skipped && s.skip_reason.as_deref() == Some(crate::context::NEEDS_STDIO)
    };
    let applicable: Vec<&ScenarioResult> = scenarios.iter().filter(|s| !stdio_only(s)).collect();
    let considered: Vec<&ScenarioResult> = if applicable.iter().any(|s| s.status == Status::Passed) {
        applicable
    } else {
        scenarios.iter().collect()
    };
    let mut reasons: Vec<&str> = considered
        .into_iter()
        .filter(|s| s.status != Status::Passed)
        .map(|s| s.skip_reason.as_deref().unwrap_or("skipped"))
        .collect();
    if reasons.is_empty() {
        return (Status::Passed, None);
    }
    reasons.sort_unstable();
    reasons.dedup();
    (Status::Skipped, Some(reasons.join(", ")))
}

#[cfg(test)]
mod tests;
