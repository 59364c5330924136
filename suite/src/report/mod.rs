//! The clause matrix: every clause of the contract → passed / failed / skipped (with the reason)
//! / not run, with the scenarios and request_ids behind each verdict; and its renderings.
//!
//! Rules: a clause passes only if every scenario tagged with it passed, no rule of the judge
//! (`crate::judge`) found against it at the level, and something was judged: its evidence, the
//! exchanges its rules judged plus those of its passed scenarios, is not zero. One failed
//! scenario fails it; otherwise a blocked scenario (another data shape, ENV-7) blocks it, and a
//! skipped one makes it skipped; a clause no scenario of the run checks, or that nothing judged,
//! is "not run".
//!
//! Every clause has two verdicts. The seed verdict leaves out scenarios tagged `@ext-<choice>`
//! (they check a reference choice) and the ext differences steps noticed; the full verdict counts
//! both. An ext clause has one verdict, required only at the full level. The run's level decides
//! which clauses the exit status requires.

mod collector;
pub(crate) mod html;
mod render;

use chataigne_contract::clauses::CLAUSES;
use serde::Serialize;

pub use collector::{Collector, Reporter, RunLog, ScenarioExtras, ScenarioKey, scenario_key};
pub use html::{html, html_could_not_start};
pub use render::{LEVELS, console_matrix, markdown, verdict_lines};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    /// The clause could not be checked: a step could not read the state it needs because the
    /// server's answers have another data shape (ENV-7). Neither a pass nor a failure of it.
    Blocked,
    Skipped,
    NotRun,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Blocked => "blocked",
            Status::Skipped => "skipped",
            Status::NotRun => "not run",
        }
    }
}

pub use crate::profile::Level;
pub use crate::world::Halt;

/// Create the directory a report file goes in, if it has one.
pub fn create_parent(path: &std::path::Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        anyhow::Context::with_context(std::fs::create_dir_all(dir), || {
            format!("cannot create {}", dir.display())
        })?;
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub suite_version: String,
    pub endpoint: String,
    pub features: String,
    pub capabilities: crate::context::Capabilities,
    /// The level the exit status certifies.
    pub level: Level,
    pub summary: Summary,
    pub clauses: Vec<ClauseResult>,
    /// Feature files that did not parse.
    pub parse_errors: Vec<String>,
    /// Where the run's time went, besides the scenarios' own calls.
    pub timing: Timing,
    /// Why the differential oracle compared nothing in this run (`crate::oracle`): its
    /// comparisons are skipped, never passed. Absent when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle_not_run: Option<String>,
    /// Why the audit of untouched records did not run (`crate::audit`): skipped, never passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_not_run: Option<String>,
}

/// Where a run's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Timing {
    /// Seconds spent waiting for rate windows (an earlier run's on a server nothing resets, or a
    /// burst's own before it runs again on a fresh window when the run's earlier calls on its pair
    /// left the reference's window undecided); overlapping waits count once.
    pub waited_for_rate_windows_s: f64,
}

/// Counts over the clauses the run's level requires (seed clauses at the seed level, every
/// clause at the full level).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub certified: bool,
    pub required: usize,
    pub passed: usize,
    pub failed: usize,
    pub blocked: usize,
    pub skipped: usize,
    pub not_run: usize,
    /// Clauses that pass at the seed level but not at the full level, and ext clauses that
    /// failed: differences from this project's choices, not counted at the seed level.
    pub ext_differences: Vec<String>,
    /// The run was cut short (its deadline passed): not a verdict on the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// Required clauses something judged (evidence above zero).
    pub judged: usize,
    /// Why nothing was judged, when no required clause was: not a verdict, exit 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nothing_judged: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClauseResult {
    pub id: String,
    pub title: String,
    /// A clause of this project's (`ext`), or of the seed contract (`seed`).
    pub level: &'static str,
    /// The verdict at the seed level: only what the seed requires (for an ext clause, the same
    /// as `full_status`).
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The verdict with this project's extensions and the reference server's choices.
    pub full_status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_reason: Option<String>,
    pub scenarios: Vec<ScenarioResult>,
    /// Failures found by automatic checks (e.g. every output validated, PROTO-4).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// Those of `findings` that count at the seed level (the others are ext rules' findings).
    #[serde(skip)]
    pub seed_findings: Vec<String>,
    /// What was seen: exchanges judged at the seed level (the judge's seed rules on every
    /// exchange, plus the exchanges of the passed scenarios that count at the seed level), then
    /// at the full level. A pass needs evidence.
    pub evidence: u64,
    pub full_evidence: u64,
}

impl ClauseResult {
    pub fn ext(&self) -> bool {
        self.level == "ext"
    }

    /// The full-level verdict when it says something the seed verdict does not (an ext clause
    /// has one verdict only).
    pub fn full_differs(&self) -> Option<Status> {
        (!self.ext() && self.full_status != self.status).then_some(self.full_status)
    }

    /// The verdict at `level`.
    pub fn at(&self, level: Level) -> Status {
        match level {
            Level::Seed => self.status,
            Level::Full => self.full_status,
        }
    }

    /// Whether `level` requires this clause.
    pub fn required_at(&self, level: Level) -> bool {
        level == Level::Full || !self.ext()
    }
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
    /// The reference choices this scenario checks as a whole (`@ext-<choice>` tags): it counts
    /// at the full level only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ext_choices: Vec<String>,
    /// Reference choices the server did not make, noticed by steps whose seed-level check
    /// passed: `<choice>: <what differed>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ext_differences: Vec<String>,
    pub request_ids: Vec<String>,
    /// The exchanges it made: what its steps judged (a scenario that passed with none proved
    /// nothing).
    pub exchanges: usize,
    /// Skipped because it checks what the specification lets this server do without (sessions):
    /// like the stdio half of a clause, it does not hold back a clause whose other scenarios passed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_applicable: bool,
    /// Not run because the run's deadline passed ([`Halt::OutOfTime`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
    /// When it ran, in the run's milliseconds: where a run's time goes (docs/BENCHMARKS.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<ScenarioTiming>,
    #[serde(skip)]
    pub tags: Vec<String>,
    /// The exchange a failure shows (the failing step's, or the last one made).
    #[serde(skip)]
    pub last_exchange: Option<crate::client::Exchange>,
}

/// A scenario's place in the run, in milliseconds since the run started: queued (its before hook
/// began), started (the scenarios it conflicts with were done, `crate::schedule`), finished (its
/// after hook and any reset were done).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ScenarioTiming {
    pub queued_ms: u64,
    pub started_ms: u64,
    pub finished_ms: u64,
}

impl ScenarioResult {
    /// Its status at `level`: at the full level a difference from a reference choice fails it.
    pub fn at(&self, level: Level) -> Status {
        if level == Level::Full && self.status == Status::Passed && !self.ext_differences.is_empty() {
            Status::Failed
        } else {
            self.status
        }
    }

    fn counts_at(&self, level: Level) -> bool {
        level == Level::Full || self.ext_choices.is_empty()
    }
}

/// A finding against a clause outside the scenarios tagged with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub clause: String,
    /// A finding of an ext rule fails its clause at the full level only.
    pub level: crate::judge::RuleLevel,
    pub detail: String,
}

impl Finding {
    pub fn seed(clause: &str, detail: impl Into<String>) -> Finding {
        Finding { clause: clause.to_owned(), level: crate::judge::RuleLevel::Seed, detail: detail.into() }
    }

    fn counts_at(&self, level: Level) -> bool {
        level == Level::Full || self.level == crate::judge::RuleLevel::Seed
    }
}

impl Report {
    /// Fold scenario results and findings into the matrix of every clause.
    pub fn build(
        scenarios: &[ScenarioResult],
        findings: &[Finding],
        evidence: &crate::judge::Tally,
        header: ReportHeader,
        parse_errors: Vec<String>,
    ) -> Report {
        let clauses: Vec<ClauseResult> = CLAUSES
            .iter()
            .map(|clause| {
                let tagged: Vec<ScenarioResult> =
                    scenarios.iter().filter(|s| s.tags.iter().any(|t| t == clause.id)).cloned().collect();
                let found = |level: Level| -> Vec<String> {
                    findings
                        .iter()
                        .filter(|f| f.clause == clause.id && f.counts_at(level))
                        .map(|f| f.detail.clone())
                        .collect()
                };
                let judged = evidence.get(clause.id).cloned().unwrap_or_default();
                let seen = |level: Level| {
                    let steps: usize = tagged
                        .iter()
                        .filter(|s| s.counts_at(level) && s.at(level) == Status::Passed)
                        .map(|s| s.exchanges)
                        .sum();
                    judged.judged(level == Level::Full) + steps as u64
                };
                let full_evidence = seen(Level::Full);
                let evidence = if clause.ext { full_evidence } else { seen(Level::Seed) };
                let (full_status, full_reason) =
                    verdict(&tagged, &found(Level::Full), Level::Full, full_evidence);
                let (status, reason) = if clause.ext {
                    (full_status, full_reason.clone())
                } else {
                    verdict(&tagged, &found(Level::Seed), Level::Seed, evidence)
                };
                let full_reason =
                    (full_status != status || full_reason != reason).then_some(full_reason).flatten();
                ClauseResult {
                    id: clause.id.to_owned(),
                    title: clause.title.to_owned(),
                    level: if clause.ext { "ext" } else { "seed" },
                    status,
                    reason,
                    full_status,
                    full_reason,
                    findings: found(Level::Full),
                    seed_findings: found(Level::Seed),
                    scenarios: tagged,
                    evidence,
                    full_evidence,
                }
            })
            .collect();
        let level = header.level;
        let mut summary = summarize(&clauses, level, parse_errors.is_empty());
        if header.require_all && summary.skipped + summary.not_run > 0 {
            summary.certified = false;
        }
        // A failure or a block is a verdict; only a run with neither and no evidence has none.
        if summary.judged == 0 && summary.failed + summary.blocked == 0 {
            summary.certified = false;
            let ran = scenarios.iter().filter(|s| s.status != Status::Skipped).count();
            summary.nothing_judged = Some(format!(
                "nothing was judged: {ran} scenario(s) of {} ran and no required clause was checked against \
                 the server; a --tags or --name filter, or a --features folder, left nothing to run",
                header.features
            ));
        }
        let cut_short = scenarios.iter().filter(|s| s.cut_short).count();
        if cut_short > 0 {
            summary.certified = false;
            summary.interrupted = Some(format!(
                "the run's deadline passed with {cut_short} scenario(s) not run (the server answers too slowly, or not at all)"
            ));
        }
        Report {
            suite_version: env!("CARGO_PKG_VERSION").to_owned(),
            endpoint: header.endpoint,
            features: header.features,
            capabilities: header.capabilities,
            level,
            summary,
            clauses,
            parse_errors,
            timing: Timing::default(),
            oracle_not_run: None,
            audit_not_run: None,
        }
    }

    /// The verdict on a server that lists under half of the contract's tools: the tool-list
    /// clauses fail with `reason`, every other one is not run for it.
    pub fn not_a_contract_server(header: ReportHeader, reason: &str) -> Report {
        let mut report = Report::build(&[], &[], &Default::default(), header, Vec::new());
        for c in &mut report.clauses {
            let status =
                if matches!(c.id.as_str(), "PROTO-3" | "ABS-1") { Status::Failed } else { Status::NotRun };
            (c.status, c.full_status) = (status, status);
            c.reason = Some(reason.to_owned());
            c.full_reason = None;
        }
        report.summary = summarize(&report.clauses, report.level, true);
        report
    }

    /// The verdict on a server whose answer to `initialize` could not be read as MCP (a
    /// mismatched id, a body that is not what its Content-Type says, an event never ended): the
    /// clause it breaks fails with the exchange as its finding, every other one is not run.
    pub fn protocol_broken(header: ReportHeader, clause: &str, detail: &str) -> Report {
        let finding = Finding::seed(clause, detail);
        let mut report = Report::build(&[], &[finding], &Default::default(), header, Vec::new());
        let why = format!("not run: the server's answer to initialize could not be read ({clause})");
        for c in report.clauses.iter_mut().filter(|c| c.id != clause) {
            (c.status, c.full_status) = (Status::NotRun, Status::NotRun);
            c.reason = Some(why.clone());
            c.full_reason = None;
        }
        report.summary = summarize(&report.clauses, report.level, true);
        report
    }

    /// 0: certified at the run's level (no required clause failed or blocked); 1: not, or
    /// (with `require_all`) a required clause was skipped or not run, or a feature did not
    /// parse; 2: nothing failed and nothing was judged (no verdict at all).
    pub fn exit_code(&self, require_all: bool) -> u8 {
        let incomplete = self.summary.skipped + self.summary.not_run > 0;
        let failed = self.summary.failed + self.summary.blocked > 0;
        if !failed && self.summary.nothing_judged.is_some() {
            return 2;
        }
        if !self.summary.certified || (require_all && incomplete) { 1 } else { 0 }
    }

    /// The clauses the run's level requires.
    pub fn required(&self) -> impl Iterator<Item = &ClauseResult> {
        self.clauses.iter().filter(|c| c.required_at(self.level))
    }
}

fn summarize(clauses: &[ClauseResult], level: Level, parsed: bool) -> Summary {
    let required: Vec<&ClauseResult> = clauses.iter().filter(|c| c.required_at(level)).collect();
    let count = |s: Status| required.iter().filter(|c| c.at(level) == s).count();
    let ext_differences = clauses
        .iter()
        .filter(|c| {
            let differs = c.full_status == Status::Failed || c.full_status == Status::Blocked;
            differs && (level == Level::Seed) && (c.ext() || c.status != c.full_status)
        })
        .map(|c| c.id.clone())
        .collect();
    let (failed, blocked) = (count(Status::Failed), count(Status::Blocked));
    let judged = required
        .iter()
        .filter(|c| if level == Level::Full { c.full_evidence > 0 } else { c.evidence > 0 })
        .count();
    Summary {
        judged,
        nothing_judged: None,
        certified: parsed && failed == 0 && blocked == 0,
        interrupted: None,
        required: required.len(),
        passed: count(Status::Passed),
        failed,
        blocked,
        skipped: count(Status::Skipped),
        not_run: count(Status::NotRun),
        ext_differences,
    }
}

#[derive(Debug, Clone, Default)]
pub struct ReportHeader {
    pub endpoint: String,
    pub features: String,
    pub capabilities: crate::context::Capabilities,
    pub level: Level,
    /// `--require-all`: a required clause skipped or not run also means not certified.
    pub require_all: bool,
}

/// What a clause that would pass says when nothing judged it.
pub const NOTHING_JUDGED: &str = "nothing was judged: no exchange of this run was checked against it";

fn verdict(
    scenarios: &[ScenarioResult],
    findings: &[String],
    level: Level,
    evidence: u64,
) -> (Status, Option<String>) {
    let counted: Vec<&ScenarioResult> = scenarios.iter().filter(|s| s.counts_at(level)).collect();
    let failed: Vec<&&ScenarioResult> = counted.iter().filter(|s| s.at(level) == Status::Failed).collect();
    if let Some(first) = failed.first() {
        let more = if failed.len() > 1 { format!(" (and {} more)", failed.len() - 1) } else { String::new() };
        let why = match (&first.failed_step, first.status) {
            (Some(step), Status::Failed) => step.clone(),
            (_, Status::Failed) => "a hook".to_owned(),
            // Passed at the seed level: what differs from the reference's choice.
            _ => format!("differs from the reference: {}", first.ext_differences.join("; ")),
        };
        return (Status::Failed, Some(format!("{}: {why}{more}", first.name)));
    }
    if let Some(first) = findings.first() {
        let line = first.lines().next().unwrap_or_default();
        return (Status::Failed, Some(line.to_owned()));
    }
    if let Some(first) = counted.iter().find(|s| s.status == Status::Blocked) {
        let why =
            first.message.as_deref().and_then(|m| m.lines().next()).unwrap_or(crate::world::BLOCKED_BY_SHAPE);
        return (Status::Blocked, Some(format!("{}: {why}", first.name)));
    }
    if counted.is_empty() {
        let why = if scenarios.is_empty() {
            "no scenario of this run checks it"
        } else {
            "only reference choices are checked (full level)"
        };
        return (Status::NotRun, Some(why.to_owned()));
    }
    // The stdio half of a clause does not hold back a clause checked over HTTP, as long as
    // something of the clause passed (the scenario itself stays reported as skipped).
    let stdio_only = |s: &&&ScenarioResult| {
        s.status == Status::Skipped
            && (s.not_applicable || s.skip_reason.as_deref() == Some(crate::context::NEEDS_STDIO))
    };
    let applicable: Vec<&&ScenarioResult> = counted.iter().filter(|s| !stdio_only(s)).collect();
    let considered: Vec<&&ScenarioResult> = if applicable.iter().any(|s| s.status == Status::Passed) {
        applicable
    } else {
        counted.iter().collect()
    };
    let mut reasons: Vec<&str> = considered
        .into_iter()
        .filter(|s| s.status != Status::Passed)
        .map(|s| s.skip_reason.as_deref().unwrap_or("skipped"))
        .collect();
    if reasons.is_empty() {
        if evidence == 0 {
            return (Status::NotRun, Some(NOTHING_JUDGED.to_owned()));
        }
        return (Status::Passed, None);
    }
    reasons.sort_unstable();
    reasons.dedup();
    (Status::Skipped, Some(reasons.join(", ")))
}

#[cfg(test)]
mod tests;
