//! The runner against broken servers: connection-level problems end with exit code 2 and one
//! line; answer-level problems fail the clause they break, with a message that says why.

use std::time::Duration;

use chataigne_conformance::cli::Outcome;
use chataigne_conformance::report::{ClauseResult, Status};
use serde_json::{Value, json};

use crate::fake::{Fake, Reply, conforming, request_id, success};

/// Exit code 2 and a one-line reason containing `needle`.
fn check_config_error(outcome: &Outcome, needle: &str) {
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.as_deref().unwrap_or_default();
    assert!(reason.contains(needle), "reason {reason:?} lacks {needle:?}");
    assert!(!reason.contains('\n'), "not one line: {reason:?}");
}

fn clause<'a>(outcome: &'a Outcome, id: &str) -> &'a ClauseResult {
    let report = outcome.report.as_ref().unwrap_or_else(|| panic!("no report: {outcome:?}"));
    report.clauses.iter().find(|c| c.id == id).unwrap()
}

/// `id` failed, and the first failing scenario's message contains every needle.
fn check_failed(outcome: &Outcome, id: &str, needles: &[&str]) {
    assert_eq!(outcome.code, 1, "{outcome:?}");
    let c = clause(outcome, id);
    assert_eq!(c.status, Status::Failed, "{c:?}");
    let message = c
        .scenarios
        .iter()
        .find(|s| s.status == Status::Failed)
        .and_then(|s| s.message.clone())
        .unwrap_or_default();
    for needle in needles {
        assert!(message.contains(needle), "{id}: message lacks {needle:?}:\n{message}");
    }
    assert!(!message.contains("t-owner"), "a token leaked into the message:\n{message}");
}

#[test]
fn an_html_page_is_a_configuration_error() {
    let fake = Fake::start();
    fake.serve(|_, _| Reply::Raw(200, "text/html", "<html><body>Welcome</body></html>".into()));
    check_config_error(&fake.run(2000, &[]), "HTML page");
}

#[test]
fn a_server_error_on_initialize_is_a_configuration_error() {
    let fake = Fake::start();
    fake.serve(|_, _| Reply::Raw(500, "text/plain", "boom".into()));
    check_config_error(&fake.run(2000, &[]), "HTTP 500");
}

#[test]
fn a_refused_connection_is_a_configuration_error() {
    let fake = Fake::start();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = format!("http://127.0.0.1:{port}/mcp");
    check_config_error(&fake.run(2000, &["--endpoint", &endpoint]), "cannot reach");
}

#[test]
fn a_hanging_server_is_a_configuration_error() {
    let fake = Fake::start();
    fake.serve(|_, _| Reply::Hang(Duration::from_secs(5)));
    check_config_error(&fake.run(300, &[]), "no answer within 300 ms");
}

#[test]
fn every_token_refused_is_a_configuration_error() {
    let fake = Fake::start();
    fake.serve(|_, _| Reply::Raw(401, "application/json", "{}".into()));
    check_config_error(&fake.run(2000, &[]), "401");
}

#[test]
fn a_bad_profile_is_a_configuration_error() {
    let outcome = chataigne_conformance::cli::execute_args(
        ["chataigne-conformance", "--profile", "/nonexistent/profile.toml"],
        std::io::sink(),
    );
    check_config_error(&outcome, "cannot read profile");
}

#[test]
fn conforming_answers_pass() {
    let fake = Fake::start();
    fake.serve_tools(conforming);
    let outcome = fake.run(2000, &["--tags", "@ENV-1"]);
    assert_eq!(outcome.code, 0, "{outcome:?}");
    let c = clause(&outcome, "ENV-1");
    assert_eq!(c.status, Status::Passed);
    assert!(c.scenarios.iter().all(|s| s.request_ids.iter().any(|r| r.starts_with("req_fake"))), "{c:?}");
    assert_eq!(clause(&outcome, "PROTO-4").status, Status::NotRun);
    // The JSON report is written too.
    let report: Value = serde_json::from_str(&std::fs::read_to_string(fake.report_path()).unwrap()).unwrap();
    assert_eq!(report["summary"]["failed"], 0);
}

#[test]
fn a_server_error_on_a_tool_fails_the_clause() {
    let fake = Fake::start();
    fake.serve_tools(|_, _| Reply::Raw(500, "text/plain", "Internal Server Error".into()));
    let outcome = fake.run(2000, &["--tags", "@ENV-1"]);
    check_failed(
        &outcome,
        "ENV-1",
        &["HTTP 500", "clauses: ENV-1", "tools/call get_restaurant", "Bearer ***"],
    );
}

#[test]
fn a_hanging_tool_fails_the_clause() {
    let fake = Fake::start();
    fake.serve_tools(|_, _| Reply::Hang(Duration::from_secs(3)));
    let outcome = fake.run(300, &["--tags", "@ENV-1"]);
    check_failed(&outcome, "ENV-1", &["no answer within 300 ms"]);
}

#[test]
fn a_wrong_envelope_fails_the_clause() {
    let fake = Fake::start();
    fake.serve_tools(|_, _| {
        Reply::Result(json!({
            "content": [{ "type": "text", "text": "done" }],
            "structuredContent": { "result": { "id": "rst_central" }, "request_id": request_id() },
        }))
    });
    let outcome = fake.run(2000, &["--tags", "@ENV-1"]);
    check_failed(&outcome, "ENV-1", &["malformed envelope", "structuredContent has no `data`"]);
    // Every output is also checked against the published schema, whatever the scenario.
    let proto4 = clause(&outcome, "PROTO-4");
    assert_eq!(proto4.status, Status::Failed, "{proto4:?}");
    assert!(proto4.findings.iter().any(|f| f.contains("get_restaurant")), "{proto4:?}");
}

#[test]
fn a_missing_request_id_fails_the_clause() {
    let fake = Fake::start();
    fake.serve_tools(|tool, args| match conforming(tool, args) {
        Reply::Result(mut r) => {
            if let Some(meta) = r.pointer_mut("/structuredContent/meta").and_then(Value::as_object_mut) {
                meta.remove("request_id");
            }
            Reply::Result(r)
        }
        // ENV-2's error case: an error envelope without request_id.
        _ => success(json!({})),
    });
    let outcome = fake.run(2000, &["--tags", "@ENV-2"]);
    check_failed(&outcome, "ENV-2", &["meta.request_id on every tool result", "request_id: (none)"]);
}

#[test]
fn scenarios_needing_the_control_api_are_skipped_with_the_reason() {
    let fake = Fake::start();
    fake.serve_tools(conforming);
    let outcome = fake.run(2000, &["--tags", "@PAG-7"]);
    // Skipped only: nothing was judged, so no verdict (exit 2), the reason still reported.
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let c = clause(&outcome, "PAG-7");
    assert_eq!(c.status, Status::Skipped);
    assert_eq!(c.reason.as_deref(), Some("needs control API"));
    assert_eq!(c.scenarios[0].skip_reason.as_deref(), Some("needs control API"));
    // Nothing judged is still no verdict (2), --require-all or not.
    assert_eq!(fake.run(2000, &["--tags", "@PAG-7", "--require-all"]).code, 2);
}

#[test]
fn scenarios_needing_stdio_are_skipped_over_http() {
    let fake = Fake::start();
    fake.serve_tools(conforming);
    let outcome = fake.run(2000, &["--tags", "@needs-stdio"]);
    assert_eq!(outcome.code, 2, "nothing judged: {outcome:?}");
    let c = clause(&outcome, "AUTH-1");
    assert_eq!(c.status, Status::Skipped, "{c:?}");
    assert_eq!(c.scenarios.len(), 1, "{c:?}");
    assert_eq!(c.scenarios[0].skip_reason.as_deref(), Some("needs stdio transport"));
}

#[test]
fn features_that_do_not_parse_are_a_configuration_error() {
    let fake = Fake::start();
    fake.serve_tools(conforming);
    let dir = std::env::temp_dir().join(format!("chataigne-bad-features-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("broken.feature"), "Feature: broken\n  Scenario without a colon\n    Given\n")
        .unwrap();
    let outcome = fake.run(2000, &["--features", dir.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    check_config_error(&outcome, "do not parse");
}

/// A server that stops answering after preflight: the run ends at its deadline, not after
/// scenarios × steps × timeout, with exit code 2, the reason, and the reports written.
#[test]
fn a_server_that_stops_answering_ends_at_the_run_deadline() {
    let fake = Fake::start();
    fake.serve_tools(|_, _| Reply::Hang(Duration::from_secs(5)));
    let started = std::time::Instant::now();
    let html = fake.report_path().with_file_name("report.html");
    let outcome = fake.run(500, &["--deadline", "2", "--html", html.to_str().unwrap()]);
    let took = started.elapsed();
    check_config_error(&outcome, "deadline of 2 s passed");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("class=\"verdict stopped\"") && page.contains("deadline passed"), "{page}");
    // Calls in flight when it passes finish within their own timeout; nothing new starts.
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(fake.report_path()).unwrap()).unwrap();
    let skipped = report["clauses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["reason"].as_str().is_some_and(|r| r.contains("deadline passed")))
        .count();
    // Some clauses never started (how many depends on how many scenarios run at once), and
    // every clause that did not run says why: the deadline, or a capability the run lacks.
    assert!(skipped > 0, "the clauses not run say why: {skipped}");
    for c in report["clauses"].as_array().unwrap() {
        if matches!(c["status"].as_str(), Some("skipped" | "not_run")) {
            let reason = c["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("deadline passed") || reason.starts_with("needs"), "{c}");
        }
    }
    assert_eq!(report["summary"]["certified"], json!(false), "{}", report["summary"]);
    assert!(report["summary"]["interrupted"].as_str().is_some_and(|r| r.contains("deadline")));
}

/// A run that cannot start still writes well-formed reports (CI steps read them), each with the
/// reason.
#[test]
fn a_run_that_cannot_start_writes_reports_that_say_why() {
    let fake = Fake::start();
    fake.serve(|_, _| Reply::Raw(500, "text/plain", "boom".into()));
    let dir = fake.report_path().with_file_name("reports");
    let junit = dir.join("junit.xml");
    let cucumber = dir.join("cucumber.json");
    let markdown = dir.join("summary.md");
    let html = dir.join("report.html");
    let args = [
        "--junit",
        junit.to_str().unwrap(),
        "--cucumber-json",
        cucumber.to_str().unwrap(),
        "--markdown",
        markdown.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ];
    check_config_error(&fake.run(2000, &args), "HTTP 500");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.starts_with("<?xml") && xml.contains("<error message=\"") && xml.contains("HTTP 500"),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase").count(), 1, "{xml}");
    let cucumber: Value = serde_json::from_str(&std::fs::read_to_string(&cucumber).unwrap()).unwrap();
    assert_eq!(cucumber, json!([]));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(fake.report_path()).unwrap()).unwrap();
    assert!(report["error"].as_str().is_some_and(|e| e.contains("HTTP 500")), "{report}");
    assert!(std::fs::read_to_string(&markdown).unwrap().contains("could not start"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"), "{page}");
    assert!(page.contains("The run could not start") && page.contains("HTTP 500"), "{page}");
}

/// The JUnit report of a failure reads as a failure of the server: no panic wording, no source
/// paths of the suite.
#[test]
fn junit_failures_name_no_panics_and_no_suite_sources() {
    let fake = Fake::start();
    fake.serve_tools(|_, _| Reply::Raw(500, "text/plain", "boom".into()));
    let junit = fake.report_path().with_file_name("junit.xml");
    let outcome = fake.run(2000, &["--tags", "@ENV-1", "--junit", junit.to_str().unwrap()]);
    assert_eq!(outcome.code, 1, "{outcome:?}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<failure"), "{xml}");
    assert!(!xml.to_lowercase().contains("panicked"), "{xml}");
    assert!(!xml.contains("src/steps/"), "{xml}");
    assert!(xml.contains("HTTP 500"), "{xml}");
    // Each clause's verdict and evidence, as properties (issue 37).
    assert!(xml.contains("<property name=\"ENV-1\" value=\"failed ("), "{xml}");
    assert!(xml.contains("<property name=\"PAG-1\" value=\"not run (0 exchanges judged)\"/>"), "{xml}");
}

/// A server that is not a Chataigne server (here: the tools of MCP's own example server) gets a
/// short verdict at once, not hundreds of failed scenarios; `--run-anyway` runs them all the same.
#[test]
fn a_server_without_the_contract_tools_gets_a_short_verdict() {
    let fake = Fake::start();
    fake.serve(|method, _| match method {
        "initialize" => Reply::Result(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "everything", "version": "0" },
        })),
        "tools/list" => Reply::Result(json!({ "tools": [
            { "name": "echo", "inputSchema": { "type": "object" } },
            { "name": "add", "inputSchema": { "type": "object" } },
        ] })),
        _ => Reply::Raw(500, "text/plain", "no".into()),
    });
    let junit = fake.report_path().with_file_name("junit.xml");
    let cucumber = fake.report_path().with_file_name("cucumber.json");
    let html = fake.report_path().with_file_name("report.html");
    let started = std::time::Instant::now();
    let outcome = fake.run(
        2000,
        &[
            "--junit",
            junit.to_str().unwrap(),
            "--cucumber-json",
            cucumber.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(outcome.code, 1, "{outcome:?}");
    let proto3 = clause(&outcome, "PROTO-3");
    assert_eq!(proto3.status, Status::Failed);
    assert!(
        proto3
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("not a Chataigne server") && r.contains("list_orders"))
    );
    assert_eq!(clause(&outcome, "PAG-1").status, Status::NotRun);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<failure") && xml.contains("not a Chataigne server"), "{xml}");
    // No scenario ran: the cucumber JSON report is an empty list, still JSON.
    let cucumber: Value = serde_json::from_str(&std::fs::read_to_string(&cucumber).unwrap()).unwrap();
    assert_eq!(cucumber, json!([]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("not a Chataigne server")
            && page.contains("<tr class=\"failed\" id=\"clause-PROTO-3\">")
    );

    let anyway = fake.run(2000, &["--run-anyway", "--tags", "@PROTO-2"]);
    let proto2 = clause(&anyway, "PROTO-2");
    assert!(proto2.scenarios.len() > 1, "the scenarios ran: {proto2:?}");
}

/// A server that answered, but not in a way an MCP client can read, gets a verdict on the clause
/// it breaks (exit code 1, reports written), not "could not start".
fn check_protocol_verdict(outcome: &Outcome, id: &str, needle: &str) {
    assert_eq!(outcome.code, 1, "{outcome:?}");
    let c = clause(outcome, id);
    assert_eq!(c.status, Status::Failed, "{c:?}");
    let evidence = c.findings.join("\n");
    assert!(evidence.contains(needle), "{id}: evidence lacks {needle:?}:\n{evidence}");
    // The exchange is the evidence: what was sent and what came back.
    assert!(evidence.contains("initialize"), "{evidence}");
    assert!(!evidence.contains("t-owner"), "a token leaked:\n{evidence}");
    let others = &outcome.report.as_ref().unwrap().clauses;
    assert!(others.iter().filter(|c| c.id != id).all(|c| c.status == Status::NotRun), "{others:?}");
}

#[test]
fn an_initialize_answered_for_another_id_is_a_proto2_verdict() {
    let fake = Fake::start();
    fake.serve(|_, _| {
        let answer = json!({ "jsonrpc": "2.0", "id": 999, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": { "name": "x", "version": "0" } } });
        Reply::Raw(200, "application/json", answer.to_string())
    });
    let outcome = fake.run(2000, &[]);
    check_protocol_verdict(&outcome, "PROTO-2", "id 999");
    assert!(fake.report_path().exists(), "no JSON report written");
}

#[test]
fn a_json_answer_labelled_as_text_is_a_proto1_verdict() {
    let fake = Fake::start();
    fake.serve(|_, _| {
        let answer = json!({ "jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": { "name": "x", "version": "0" } } });
        Reply::Raw(200, "text/plain", answer.to_string())
    });
    check_protocol_verdict(&fake.run(2000, &[]), "PROTO-1", "text/plain");
}

/// An event stream whose event never ends (no blank line) and stays open: a verdict once the
/// timeout passes, not a hang and not "could not start". wiremock cannot hold a stream open, so
/// this server is a socket that writes the start of an answer and then waits.
#[test]
fn an_event_stream_that_never_ends_its_event_is_a_proto1_verdict() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 8192];
            let _ = stream.read(&mut buf);
            let data = json!({ "jsonrpc": "2.0", "id": 1, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": { "name": "x", "version": "0" } } });
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let event = format!("event: message\ndata: {data}\n");
            let _ = write!(stream, "{head}{:x}\r\n{event}\r\n", event.len());
            let _ = stream.flush();
            held.push(stream);
        }
    });
    let fake = Fake::start();
    let outcome = fake.run(700, &["--endpoint", &endpoint]);
    check_protocol_verdict(&outcome, "PROTO-1", "no event answering this request ended");
}

/// Issue 37: a filter that matches nothing, or an empty features folder, once printed CERTIFIED
/// with "0 checked" and exit 0. Nothing judged is no verdict: exit 2, naming what left nothing.
#[test]
fn a_run_that_judged_nothing_is_not_certified() {
    let fake = Fake::start();
    fake.serve_tools(conforming);
    let typo = fake.run(2000, &["--tags", "@PAG-99"]);
    assert_eq!(typo.code, 2, "{typo:?}");
    let report = typo.report.as_ref().expect("a report");
    assert!(!report.summary.certified);
    assert_eq!(report.summary.judged, 0);
    assert!(report.summary.nothing_judged.as_deref().unwrap_or_default().contains("--tags"));

    let empty = std::env::temp_dir().join(format!("chataigne-no-features-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let outcome = fake.run(2000, &["--features", empty.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&empty);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let summary = &outcome.report.as_ref().expect("a report").summary;
    assert!(summary.nothing_judged.as_deref().unwrap_or_default().contains(empty.to_str().unwrap()));
}
