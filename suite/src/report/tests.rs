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

fn header() -> ReportHeader {
    ReportHeader {
        endpoint: "http://127.0.0.1:8080/mcp".to_owned(),
        features: "features".to_owned(),
        capabilities: Default::default(),
        level: Level::Seed,
        require_all: false,
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
    assert_eq!(verdict(&[stdio.clone(), http], &[], Level::Seed, 1), (Status::Passed, None));
    assert_eq!(verdict(std::slice::from_ref(&stdio), &[], Level::Seed, 1).0, Status::Skipped);
    // The converse: an HTTP-only scenario skipped over stdio keeps its clause skipped.
    let mut http_only = scenario("over HTTP", &["ENV-2", "needs-http"], Status::Skipped);
    http_only.skip_reason = Some(crate::context::NEEDS_HTTP.to_owned());
    let both = [http_only, scenario("any", &["ENV-2"], Status::Passed)];
    assert_eq!(
        verdict(&both, &[], Level::Seed, 1),
        (Status::Skipped, Some(crate::context::NEEDS_HTTP.to_owned()))
    );
}

#[test]
fn a_check_that_does_not_apply_does_not_hold_back_its_clause_but_never_passes_it() {
    let mut sessions = scenario("sessions", &["PROTO-1"], Status::Skipped);
    sessions.skip_reason = Some("the server keeps no sessions".to_owned());
    sessions.not_applicable = true;
    let other = scenario("versions", &["PROTO-1"], Status::Passed);
    assert_eq!(verdict(&[sessions.clone(), other], &[], Level::Seed, 1), (Status::Passed, None));
    // Alone it proves nothing: skipped, with its reason.
    assert_eq!(
        verdict(std::slice::from_ref(&sessions), &[], Level::Seed, 1),
        (Status::Skipped, Some("the server keeps no sessions".to_owned()))
    );
    // Nor does it hide a failure beside it.
    let failed = scenario("ids", &["PROTO-1"], Status::Failed);
    assert_eq!(verdict(&[sessions, failed], &[], Level::Seed, 1).0, Status::Failed);
}

#[test]
fn verdicts_follow_the_rules() {
    let check = |scenarios: &[ScenarioResult], findings: &[Finding], expected: Status| {
        let report = Report::build(scenarios, findings, &Default::default(), header(), vec![]);
        assert_eq!(status_of(&report, "PAG-1"), expected, "{scenarios:?} {findings:?}");
    };
    let (p, f, s) = (Status::Passed, Status::Failed, Status::Skipped);
    check(&[], &[], Status::NotRun);
    check(&[scenario("a", &["PAG-1"], p)], &[], p);
    check(&[scenario("a", &["PAG-1"], p), scenario("b", &["PAG-1"], f)], &[], f);
    check(&[scenario("a", &["PAG-1"], p), scenario("b", &["PAG-1"], s)], &[], s);
    check(&[scenario("a", &["PAG-1"], s), scenario("b", &["PAG-1"], f)], &[], f);
    check(&[scenario("a", &["PAG-2"], f)], &[], Status::NotRun);
    let finding = Finding::seed("PAG-1", "x");
    check(&[scenario("a", &["PAG-1"], p)], std::slice::from_ref(&finding), f);
    check(&[], &[finding], f);
}

#[test]
fn exit_codes() {
    let check = |scenarios: &[ScenarioResult], require_all: bool, expected: u8| {
        let report = Report::build(scenarios, &[], &Default::default(), header(), vec![]);
        assert_eq!(report.exit_code(require_all), expected);
    };
    check(&[scenario("a", &["PAG-1"], Status::Passed)], false, 0);
    check(&[scenario("a", &["PAG-1"], Status::Passed)], true, 1);
    check(&[scenario("a", &["PAG-1"], Status::Failed)], false, 1);
    // Only skipped: nothing was judged, no verdict.
    check(&[scenario("a", &["PAG-1"], Status::Skipped)], false, 2);
    let all: Vec<ScenarioResult> = CLAUSES.iter().map(|c| scenario(c.id, &[c.id], Status::Passed)).collect();
    check(&all, true, 0);
    let report =
        Report::build(&all, &[], &Default::default(), header(), vec!["features/x.feature: bad".to_owned()]);
    assert_eq!(report.exit_code(false), 1);
}

fn clause<'a>(report: &'a Report, id: &str) -> &'a ClauseResult {
    report.clauses.iter().find(|c| c.id == id).unwrap()
}

fn all_passed() -> Vec<ScenarioResult> {
    CLAUSES.iter().map(|c| scenario(c.id, &[c.id], Status::Passed)).collect()
}

#[test]
fn a_failed_reference_choice_counts_at_the_full_level_only() {
    let mut scenarios = all_passed();
    scenarios.push(scenario("one step at a time", &["PRE-3", "ext-lifecycle-one-step"], Status::Failed));
    let report = Report::build(&scenarios, &[], &Default::default(), header(), vec![]);
    let pre3 = clause(&report, "PRE-3");
    assert_eq!((pre3.status, pre3.full_status), (Status::Passed, Status::Failed));
    assert_eq!(report.exit_code(true), 0, "{:?}", report.summary);
    assert_eq!(report.summary.ext_differences, vec!["PRE-3".to_owned()]);
    let full = Report::build(
        &scenarios,
        &[],
        &Default::default(),
        ReportHeader { level: Level::Full, ..header() },
        vec![],
    );
    assert_eq!(full.exit_code(false), 1);
    assert!(!full.summary.certified);
}

#[test]
fn a_difference_noticed_in_passing_fails_the_full_level_only() {
    let mut scenarios = all_passed();
    let mut s = scenario("foreign and absent alike", &["AUTH-4"], Status::Passed);
    s.ext_differences.push("identical-errors: data.error differs in occurred_at".to_owned());
    scenarios.push(s);
    let report = Report::build(&scenarios, &[], &Default::default(), header(), vec![]);
    let auth4 = clause(&report, "AUTH-4");
    assert_eq!((auth4.status, auth4.full_status), (Status::Passed, Status::Failed));
    assert!(auth4.full_reason.as_deref().is_some_and(|r| r.contains("identical-errors")), "{auth4:?}");
    assert_eq!(report.exit_code(false), 0);
}

#[test]
fn an_ext_clause_is_required_at_the_full_level_only() {
    let finding = Finding {
        clause: "ENV-7".to_owned(),
        level: crate::judge::RuleLevel::Ext,
        detail: "get_order: data.order missing".to_owned(),
    };
    let report =
        Report::build(&all_passed(), std::slice::from_ref(&finding), &Default::default(), header(), vec![]);
    assert_eq!(clause(&report, "ENV-7").status, Status::Failed);
    assert!(report.summary.certified);
    assert_eq!(report.summary.required, CLAUSES.iter().filter(|c| !c.ext).count());
    let full = Report::build(
        &all_passed(),
        &[finding],
        &Default::default(),
        ReportHeader { level: Level::Full, ..header() },
        vec![],
    );
    assert_eq!(full.exit_code(false), 1);
}

#[test]
fn a_blocked_clause_is_neither_passed_nor_failed_and_not_certified() {
    let mut scenarios = all_passed();
    let mut s = scenario("a stale view", &["PRE-2"], Status::Blocked);
    s.message =
        Some(format!("{}: the get_order answer has no `data.order.status`", crate::world::BLOCKED_BY_SHAPE));
    scenarios.push(s);
    let report = Report::build(&scenarios, &[], &Default::default(), header(), vec![]);
    let pre2 = clause(&report, "PRE-2");
    assert_eq!(pre2.status, Status::Blocked);
    assert!(pre2.reason.as_deref().is_some_and(|r| r.contains("data.order.status")), "{pre2:?}");
    assert_eq!((report.summary.failed, report.summary.blocked), (0, 1));
    assert_eq!(report.exit_code(false), 1);
    let text = verdict_lines(&report).join("\n");
    assert!(text.starts_with("NOT CERTIFIED at the seed level") && text.contains("PRE-2"), "{text}");
}

#[test]
fn every_choice_tag_is_a_known_choice() {
    for (file, text) in crate::features::EMBEDDED {
        for tag in text.split_whitespace().filter_map(|w| w.strip_prefix("@ext-")) {
            assert!(
                chataigne_contract::clauses::find_choice(tag).is_some(),
                "{file}: unknown choice @ext-{tag}"
            );
        }
    }
}

/// A small synthetic run: one clause of each status, an ext clause, a finding.
#[test]
fn markdown_summary() {
    let scenarios = [
        scenario("A list without a limit returns 20 items", &["PAG-1"], Status::Passed),
        scenario("A limit of 51 is refused", &["PAG-2"], Status::Passed),
        scenario("Walking every page with limit 7", &["PAG-3", "PAG-4"], Status::Failed),
        scenario("A cursor carries no authority | after revocation", &["PAG-7"], Status::Skipped),
        scenario("received to preparing is refused", &["PRE-3", "ext-lifecycle-one-step"], Status::Failed),
        scenario("received to completed is refused", &["PRE-3"], Status::Passed),
    ];
    let findings = [Finding {
        clause: "PROTO-4".to_owned(),
        level: crate::judge::RuleLevel::Seed,
        detail: "A scenario: list_orders (req_0123456789abcdef): /data fails `required`".to_owned(),
    }];
    let report = Report::build(&scenarios, &findings, &Default::default(), header(), vec![]);
    insta::assert_snapshot!(markdown(&report));
}

#[test]
fn require_all_is_part_of_the_certificate() {
    let scenarios = [scenario("a", &["PAG-1"], Status::Passed)];
    let report = Report::build(
        &scenarios,
        &[],
        &Default::default(),
        ReportHeader { require_all: true, ..header() },
        vec![],
    );
    assert!(!report.summary.certified, "not every required clause was checked");
    assert_eq!(report.exit_code(true), 1);
    assert!(verdict_lines(&report)[0].contains("--require-all"), "{:?}", verdict_lines(&report));
}
