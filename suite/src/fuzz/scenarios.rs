//! The rules' own cases first: with a time budget, `fuzz` runs the suite's scenarios (every rule's
//! derived cases: bounds and edges, every surface, the differential oracle) before drawing cases
//! of its own, so that what the rules know is explored before what chance finds. Each scenario
//! that fails and each judge finding becomes a finding under its clause, with the exchange the
//! failing step made last; a scenario that could not be judged is blocked, never a pass.

use std::io;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::observed::{Blocked, PERSONA, Why};
use super::report::{self, Finding, RulesRound};
use crate::context::RunOptions;
use crate::features::FeatureSource;
use crate::profile::Profile;
use crate::report::{Level, Report, ScenarioResult, Status};

/// Why the scenarios do not run first, if they do not: they make thousands of calls (a budget
/// of calls cannot hold them) and they write (without a control API to reset the server
/// afterwards, `fuzz` writes nothing).
pub fn why_not(budget: super::budget::Budget, writes: bool, asked_off: bool) -> Option<&'static str> {
    if asked_off {
        Some("--no-rules")
    } else if matches!(budget, super::budget::Budget::Calls(_)) {
        Some(
            "a budget of calls counts the fuzzer's own calls; the rules' scenarios make thousands (give a duration, e.g. --budget 60s)",
        )
    } else if !writes {
        Some(
            "the rules' scenarios write, and the profile has no control API to reset the server afterwards (`chataigne-conformance run` runs them)",
        )
    } else {
        None
    }
}

/// Run every scenario against `profile`'s server, within `time`; its findings under their
/// clauses and the scenarios it could not judge.
pub fn run(
    profile: &Profile,
    time: Duration,
    seed: u64,
    secrets: &[&str],
) -> (RulesRound, Vec<Finding>, Vec<Blocked>) {
    let started = Instant::now();
    let mut profile = profile.clone();
    // Both verdicts are in every report; the fuzz level decides later which findings count.
    profile.level = Level::Full;
    profile.deadline_s = time.as_secs().max(1);
    let argv = ["fuzz", "--color", "never"];
    let result = <crate::runner::CucumberOpts<cucumber::cli::Empty> as clap::Parser>::try_parse_from(argv)
        .map_err(anyhow::Error::from)
        .and_then(|opts| {
            let outputs = crate::runner::Outputs { console: io::sink(), junit: None, cucumber_json: None };
            crate::runner::run_profile(profile, RunOptions::default(), FeatureSource::Embedded, opts, outputs)
        });
    let elapsed_ms = started.elapsed().as_millis();
    match result {
        Ok(report) => {
            let (mut round, findings, blocked) = fold(&report, seed, secrets);
            round.elapsed_ms = elapsed_ms;
            (round, findings, blocked)
        }
        Err(e) => {
            let why = format!("the scenarios could not start: {}", format!("{e:#}").replace('\n', " "));
            let blocked = vec![Blocked {
                why: Why::ScenariosNotRun,
                what: "the rules' scenarios".to_owned(),
                reason: why.clone(),
                times: 1,
            }];
            (RulesRound { elapsed_ms, ..RulesRound::not_run(why) }, Vec::new(), blocked)
        }
    }
}

/// The report's failures as findings: every failed scenario under each clause it is tagged with,
/// and every judge finding; a blocked scenario as blocked.
fn fold(report: &Report, seed: u64, secrets: &[&str]) -> (RulesRound, Vec<Finding>, Vec<Blocked>) {
    let mut round = RulesRound::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut findings = Vec::new();
    let mut blocked = Vec::new();
    for clause in &report.clauses {
        let Some(contract) = chataigne_contract::clauses::find(&clause.id) else { continue };
        for s in &clause.scenarios {
            if seen.insert((s.feature.clone(), s.line)) {
                round.scenarios += 1;
                round.exchanges += s.exchanges;
                match s.at(Level::Full) {
                    Status::Passed => round.passed += 1,
                    Status::Failed => round.failed += 1,
                    Status::Blocked => round.blocked += 1,
                    Status::Skipped | Status::NotRun => round.skipped += 1,
                }
            }
            match s.at(Level::Full) {
                Status::Failed => findings.push(of_scenario(contract.id, s, seed, secrets)),
                Status::Blocked => blocked.push(Blocked {
                    why: Why::ScenarioBlocked,
                    what: format!("{} ({}:{})", s.name, s.feature, s.line),
                    reason: report::mask(s.message.as_deref().map_or("blocked", first_part), secrets),
                    times: 1,
                }),
                _ => {}
            }
        }
        for detail in &clause.findings {
            findings.push(of_judge(
                contract.id,
                detail,
                clause.seed_findings.contains(detail),
                seed,
                secrets,
            ));
        }
    }
    round.cut_short = report.summary.interrupted.clone();
    (round, findings, blocked)
}

/// A message's first part: what was expected and what came, before the exchange it shows.
fn first_part(message: &str) -> &str {
    message.split("\nrequest as ").next().unwrap_or(message)
}

/// The reference choice a scenario's failure differs from, if it counts at the full level only.
fn choice_of(s: &ScenarioResult) -> Option<&'static str> {
    let named = s.ext_choices.first().or_else(|| s.ext_differences.first())?;
    let slug = named.split(':').next().unwrap_or(named);
    Some(chataigne_contract::clauses::CHOICES.iter().find(|(c, _)| *c == slug).map_or(EXT_RULE, |(c, _)| *c))
}

/// The choice of a finding of an ext rule whose reference choice the report does not name.
const EXT_RULE: &str = "ext-rule";

fn of_scenario(clause: &'static str, s: &ScenarioResult, seed: u64, secrets: &[&str]) -> Finding {
    // A seed failure counts at the seed level; a scenario that checks a reference choice as a
    // whole, or passed with a difference from one, at the full level only.
    let choice = if s.status == Status::Failed && s.ext_choices.is_empty() { None } else { choice_of(s) };
    let step = s.failed_step.as_deref().unwrap_or("a step");
    let said = match (s.status, s.message.as_deref()) {
        (Status::Failed, Some(m)) => first_part(m).to_owned(),
        _ => s.ext_differences.join("; "),
    };
    let detail = format!("scenario \"{}\" ({}:{}), {step}: {said}", s.name, s.feature, s.line);
    let ex = s.last_exchange.as_ref();
    let request = ex.map_or(Value::Null, |e| {
        serde_json::from_str(&report::mask(&e.request_body, secrets))
            .unwrap_or_else(|_| Value::String(report::mask(&e.request_body, secrets)))
    });
    Finding {
        clause,
        tool: ex
            .and_then(|e| e.tool.clone())
            .unwrap_or_else(|| ex.map_or_else(|| "scenario".to_owned(), |e| e.method.clone())),
        persona: ex.and_then(|e| e.persona.clone()).unwrap_or_else(|| PERSONA.to_owned()),
        arguments: request.pointer("/params/arguments").cloned().unwrap_or(Value::Null),
        detail: report::mask(&detail, secrets),
        mutation: None,
        choice,
        steps_before: Vec::new(),
        request,
        response: ex.map_or_else(|| "(no exchange)".to_owned(), |e| report::mask(&e.summary(), secrets)),
        request_id: ex
            .and_then(|e| e.request_id().map(str::to_owned))
            .or_else(|| s.request_ids.last().cloned()),
        reproduction: reproduction(&s.name),
        shrunk: false,
        seed,
        replay: None,
        calls: Vec::new(),
    }
}

fn of_judge(
    clause: &'static str,
    detail: &str,
    counts_at_seed: bool,
    seed: u64,
    secrets: &[&str],
) -> Finding {
    Finding {
        clause,
        tool: "judge".to_owned(),
        persona: PERSONA.to_owned(),
        arguments: Value::Null,
        detail: report::mask(&format!("{}: {detail}", source_of(detail)), secrets),
        mutation: None,
        choice: (!counts_at_seed).then_some(EXT_RULE),
        steps_before: Vec::new(),
        request: Value::Null,
        response: report::mask(first_part(detail), secrets),
        request_id: None,
        reproduction: "chataigne-conformance run --profile PROFILE --level full (the judge's finding)"
            .to_owned(),
        shrunk: false,
        seed,
        replay: None,
        calls: Vec::new(),
    }
}

/// Who found a finding the rules' run reports besides its scenarios.
fn source_of(detail: &str) -> &'static str {
    if detail.starts_with(crate::audit::FINDING) {
        "the run, before its first scenario and after its last"
    } else {
        "the judge, on an exchange of the scenarios"
    }
}

/// A difference the audit of untouched records found after the drawn cases (`crate::audit`),
/// with the read that shows the record now: (tool, arguments, request, curl line).
pub fn of_audit(
    clause: &'static str,
    detail: &str,
    (tool, arguments, request, reproduction): (&str, Value, Value, String),
    seed: u64,
    secrets: &[&str],
) -> Finding {
    Finding {
        tool: tool.to_owned(),
        arguments,
        request,
        detail: report::mask(
            &format!("the fuzzer's drawn cases: {}: {detail}", crate::audit::FINDING),
            secrets,
        ),
        response: report::mask(detail, secrets),
        reproduction,
        ..of_judge(clause, detail, true, seed, secrets)
    }
}

/// The command that runs the scenario again.
fn reproduction(name: &str) -> String {
    let pattern = format!("^{}$", regex_escape(name)).replace('\'', "'\\''");
    format!("chataigne-conformance run --profile PROFILE --level full --name '{pattern}'")
}

/// `text` as a regular expression that matches it literally.
fn regex_escape(text: &str) -> String {
    text.chars().fold(String::new(), |mut out, c| {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Finding as RunFinding, ReportHeader};

    fn scenario(name: &str, tags: &[&str], status: Status) -> ScenarioResult {
        ScenarioResult {
            feature: "features/pagination.feature".to_owned(),
            name: name.to_owned(),
            // Scenarios are told apart by file and line: each name its own length here.
            line: name.len(),
            status,
            skip_reason: None,
            failed_step: (status != Status::Passed).then(|| "Then the page holds 20 orders".to_owned()),
            message: (status != Status::Passed)
                .then(|| "expected: 20\ngot: 19\nrequest as \"owner\": …".to_owned()),
            ext_choices: tags.iter().filter_map(|t| t.strip_prefix("ext-")).map(str::to_owned).collect(),
            ext_differences: Vec::new(),
            request_ids: vec!["req_0123456789abcdef".to_owned()],
            exchanges: 3,
            not_applicable: false,
            cut_short: false,
            timing: None,
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            last_exchange: None,
        }
    }

    fn report(scenarios: &[ScenarioResult], findings: &[RunFinding]) -> Report {
        let header = ReportHeader {
            endpoint: "http://127.0.0.1:8080/mcp".to_owned(),
            features: "features".to_owned(),
            capabilities: Default::default(),
            level: Level::Full,
            require_all: false,
        };
        Report::build(scenarios, findings, &Default::default(), header, Vec::new())
    }

    #[test]
    fn each_failure_is_a_finding_under_its_clause_counted_at_its_own_level() {
        let mut differs = scenario("passes the seed, differs from a choice", &["PRE-3"], Status::Passed);
        differs.ext_differences = vec!["lifecycle-one-step: skipping forward was served".to_owned()];
        let scenarios = [
            scenario("a page of 20", &["PAG-4", "PAG-2"], Status::Failed),
            scenario("a whole walk of pages", &["PAG-4"], Status::Passed),
            scenario("a choice's own scenario", &["AUTH-8", "ext-check-order"], Status::Failed),
            differs,
            scenario("another data shape", &["PAG-8"], Status::Blocked),
        ];
        let ext = RunFinding {
            clause: "LIM-1".to_owned(),
            level: crate::judge::RuleLevel::Ext,
            detail: "an ext rule".to_owned(),
        };
        let (round, findings, blocked) = fold(&report(&scenarios, &[ext]), 7, &[]);
        let got: Vec<(&str, Option<&str>)> = findings.iter().map(|f| (f.clause, f.choice)).collect();
        // In the clauses' order; a scenario tagged with two clauses is a finding under each,
        // counted once.
        assert_eq!(
            got,
            [
                ("PAG-2", None),
                ("PAG-4", None),
                ("LIM-1", Some(EXT_RULE)),
                ("PRE-3", Some("lifecycle-one-step")),
                ("AUTH-8", Some("check-order")),
            ]
        );
        assert_eq!((round.scenarios, round.passed, round.failed, round.blocked), (5, 1, 3, 1));
        assert_eq!(blocked.len(), 1);
        assert_eq!(blocked[0].why, Why::ScenarioBlocked);
        // The detail says what was expected and what came, never the exchange's text.
        assert!(findings[0].detail.ends_with("expected: 20\ngot: 19"), "{}", findings[0].detail);
        assert!(findings[0].reproduction.contains("--name '^a page of 20$'"), "{}", findings[0].reproduction);
    }

    #[test]
    fn a_budget_of_calls_or_no_control_api_leaves_the_scenarios_out_and_says_why() {
        use super::super::budget::Budget;
        let time = Budget::Time(Duration::from_secs(30));
        assert_eq!(why_not(time, true, false), None);
        assert!(why_not(Budget::Calls(200), true, false).is_some_and(|w| w.contains("budget of calls")));
        assert!(why_not(time, false, false).is_some_and(|w| w.contains("control API")));
        assert_eq!(why_not(time, true, true), Some("--no-rules"));
    }

    #[test]
    fn a_reproduction_matches_the_scenario_name_literally() {
        assert_eq!(regex_escape("A limit (of 51) is refused."), "A limit \\(of 51\\) is refused\\.");
    }
}
