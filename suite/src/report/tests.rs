use super::*;

fn scenario(name: &str, tags: &[&str], status: Status) -> ScenarioResult {
    ScenarioResult {
        feature: "features/pagination.feature".to_owned(),
        name: name.to_owned(),
        line: 10,
        status,
        skip_reason: (status == Status::Skipped).then(|| "needs control API".to_owned()),
        failed_step: (status == Status::Failed).then(|| "Then the page holds 20 orders".to_owned()),
        message: (status == Status::Failed).then(|| "expected: 20 orders\ngot: 19 orders".to_owned()),
        request_ids: vec!["req_0123456789abcdef".to_owned()],
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
    }
}

fn header() -> ReportHeader {
    ReportHeader {
        endpoint: "http://127.0.0.1:8080/mcp".to_owned(),
        features: "features".to_owned(),
        capabilities: Default::default(),
    }
}

fn status_of(report: &Report, id: &str) -> Status {
    report.clauses.iter().find(|c| c.id == id).map(|c| c.status).unwrap()
}

#[test]
fn a_stdio_only_scenario_does_not_hold_back_a_clause_checked_over_http() {
    let mut stdio = scenario("over stdio", &["AUTH-1", "needs-stdio"], Status::Skipped);
    stdio.skip_reason = Some(crate::context::NEEDS_STDIO.to_owned());
    let http = scenario("over HTTP", &["AUTH-1"], Status::Passed);
    assert_eq!(verdict(&[stdio.clone(), http], &[]), (Status::Passed, None));
    assert_eq!(verdict(std::slice::from_ref(&stdio), &[]).0, Status::Skipped);
    // The converse: an HTTP-only scenario skipped over stdio keeps its clause skipped.
    let mut http_only = scenario("over HTTP", &["ENV-2", "needs-http"], Status::Skipped);
    http_only.skip_reason = Some(crate::context::NEEDS_HTTP.to_owned());
    let both = [http_only, scenario("any", &["ENV-2"], Status::Passed)];
    assert_eq!(verdict(&both, &[]), (Status::Skipped, Some(crate::context::NEEDS_HTTP.to_owned())));
}

#[test]
fn verdicts_follow_the_rules() {
    let check = |scenarios: &[ScenarioResult], findings: &[Finding], expected: Status| {
        let report = Report::build(scenarios, findings, header(), vec![]);
        assert_eq!(status_of(&report, "PAG-1"), expected, "{scenarios:?} {findings:?}");
    };
    let (p, f, s) = (Status::Passed, Status::Failed, Status::Skipped);
    check(&[], &[], Status::NotRun);
    check(&[scenario("a", &["PAG-1"], p)], &[], p);
    check(&[scenario("a", &["PAG-1"], p), scenario("b", &["PAG-1"], f)], &[], f);
    check(&[scenario("a", &["PAG-1"], p), scenario("b", &["PAG-1"], s)], &[], s);
    check(&[scenario("a", &["PAG-1"], s), scenario("b", &["PAG-1"], f)], &[], f);
    check(&[scenario("a", &["PAG-2"], f)], &[], Status::NotRun);
    let finding = Finding { clause: "PAG-1".to_owned(), detail: "x".to_owned() };
    check(&[scenario("a", &["PAG-1"], p)], std::slice::from_ref(&finding), f);
    check(&[], &[finding], f);
}

#[test]
fn exit_codes() {
    let check = |scenarios: &[ScenarioResult], require_all: bool, expected: u8| {
        let report = Report::build(scenarios, &[], header(), vec![]);
        assert_eq!(report.exit_code(require_all), expected);
    };
    check(&[scenario("a", &["PAG-1"], Status::Passed)], false, 0);
    check(&[scenario("a", &["PAG-1"], Status::Passed)], true, 1);
    check(&[scenario("a", &["PAG-1"], Status::Failed)], false, 1);
    check(&[scenario("a", &["PAG-1"], Status::Skipped)], false, 0);
    let all: Vec<ScenarioResult> = CLAUSES.iter().map(|c| scenario(c.id, &[c.id], Status::Passed)).collect();
    check(&all, true, 0);
    let report = Report::build(&all, &[], header(), vec!["features/x.feature: bad".to_owned()]);
    assert_eq!(report.exit_code(false), 1);
}

/// A small synthetic run: one clause of each status, an ext clause, a finding.
#[test]
fn markdown_summary() {
    let scenarios = [
        scenario("A list without a limit returns 20 items", &["PAG-1"], Status::Passed),
        scenario("A limit of 51 is refused", &["PAG-2"], Status::Passed),
        scenario("Walking every page with limit 7", &["PAG-3", "PAG-4"], Status::Failed),
        scenario("A cursor carries no authority | after revocation", &["PAG-7"], Status::Skipped),
    ];
    let findings = [Finding {
        clause: "PROTO-4".to_owned(),
        detail: "A scenario: list_orders (req_0123456789abcdef): /data fails `required`".to_owned(),
    }];
    let report = Report::build(&scenarios, &findings, header(), vec![]);
    insta::assert_snapshot!(markdown(&report));
}
