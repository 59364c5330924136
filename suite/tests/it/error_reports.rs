//! SEC-1 and IDEM-8 over error reports, against the reference server in-process with the run's
//! capture endpoint as its Sentry DSN: the events the server's real `sentry` client sends are
//! what the endpoint parses and the scenarios search.

use std::collections::BTreeSet;

use chataigne_conformance::profile::Profile;
use chataigne_conformance::report::{ClauseResult, Report, Status};

fn run(defects: &[mock_server::Defect], tags: &str, tweak: impl FnOnce(&mut Profile)) -> Report {
    use chataigne_conformance::runner::{CucumberOpts, Outputs};
    let (_server, mut profile) = chataigne_conformance::embedded::start(defects, &[]).unwrap();
    profile.level = chataigne_conformance::report::Level::Full;
    tweak(&mut profile);
    let opts = <CucumberOpts<cucumber::cli::Empty> as clap::Parser>::try_parse_from([
        "it", "--color", "never", "--tags", tags,
    ])
    .unwrap();
    let outputs = Outputs { console: std::io::sink(), junit: None, cucumber_json: None };
    let features = chataigne_conformance::features::FeatureSource::Embedded;
    chataigne_conformance::cli::run_profile(profile, Default::default(), features, opts, outputs).unwrap()
}

fn clause<'a>(report: &'a Report, id: &str) -> &'a ClauseResult {
    report.clauses.iter().find(|c| c.id == id).unwrap()
}

/// The error-report scenarios of a clause (tagged @needs-error-reports).
fn over_reports(clause: &ClauseResult) -> Vec<(&str, Status)> {
    clause
        .scenarios
        .iter()
        .filter(|s| s.tags.iter().any(|t| t == "needs-error-reports"))
        .map(|s| (s.name.as_str(), s.status))
        .collect()
}

#[test]
fn the_reference_server_passes_sec1_and_idem8_over_its_error_reports() {
    let mut capture = None;
    let report = run(&[], "@SEC-1 or @IDEM-8", |p| capture = p.capture.clone());
    for id in ["SEC-1", "IDEM-8"] {
        let c = clause(&report, id);
        assert_eq!(c.full_status, Status::Passed, "{id}: {:?}", c.full_reason);
        let scenarios = over_reports(c);
        assert_eq!(scenarios.len(), 1, "{id}: one scenario over error reports");
        assert!(scenarios.iter().all(|(_, s)| *s == Status::Passed), "{scenarios:?}");
    }
    // One event per injected internal error (4 in SEC-1's scenario, 1 in IDEM-8's), each tagged
    // with its own request_id, and nothing else reported.
    let (received, dropped) = capture.expect("an embedded run receives error reports").since(0);
    assert!(!dropped);
    let events: Vec<&serde_json::Value> = received.iter().flat_map(|r| &r.events).collect();
    let ids: BTreeSet<&str> = received.iter().flat_map(|r| r.request_ids()).collect();
    assert_eq!(events.len(), 5, "{received:#?}");
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert!(events.iter().all(|e| e["tags"]["code"] == "MCP_INTERNAL_ERROR"), "{events:#?}");
}

#[test]
fn a_server_whose_reports_carry_the_arguments_fails_sec1() {
    let report = run(&[mock_server::Defect::ReportLeaksArguments], "@SEC-1", |_| {});
    let c = clause(&report, "SEC-1");
    assert_eq!(c.status, Status::Failed, "caught at the seed level");
    let scenarios = over_reports(c);
    assert_eq!(scenarios.len(), 1);
    assert_eq!(scenarios[0].1, Status::Failed);
    let failed = c.scenarios.iter().find(|s| s.status == Status::Failed).unwrap();
    let message = failed.message.as_deref().unwrap_or_default();
    assert!(message.contains("of an error report"), "{message}");
    // The log scenarios still pass: only the error reports leak.
    assert!(c.scenarios.iter().filter(|s| s.status == Status::Passed).count() >= 2, "{:#?}", c.scenarios);
}

#[test]
fn without_error_reports_the_scenarios_are_skipped_with_the_reason() {
    let report = run(&[], "@SEC-1 or @IDEM-8", |p| {
        p.error_reports = None;
        p.capture = None;
    });
    for id in ["SEC-1", "IDEM-8"] {
        let c = clause(&report, id);
        assert_eq!(c.status, Status::Skipped, "{id}");
        assert_eq!(c.reason.as_deref(), Some("needs error reports (profile: error_reports)"), "{id}");
        assert!(over_reports(c).iter().all(|(_, s)| *s == Status::Skipped));
    }
}
