//! The unreadable is never a pass: against servers of the test's own (a wiremock server that
//! behaves on the transport's probes, with tool answers the test scripts), a fuzz run whose calls
//! could not be judged says so — blocked with a reason, exit code 2 without a finding — and what a
//! server's answer shows (a refusal without its retry hint, an item of another tenant under an
//! allowed label, a page cut and not marked, a foreign Origin served on tools/call) is a finding.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};

use chataigne_contract::envelope::{self, ErrorBody};
use chataigne_contract::{ErrorCode, ToolName};
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::fake::{Fake, Reply};

/// The tools/call answers of the test: `(persona, tool, arguments)`; the persona is read from
/// the fake's tokens (`t-<persona>`).
type Tools = dyn Fn(&str, &str, &Value) -> Reply + Send + Sync;

/// A server that answers the fuzzer's transport probes as the contract says (Host and Origin
/// checked, tokens, body size, JSON-RPC shape, versions), and tools/call with `tools`.
struct Behaved {
    tools: Box<Tools>,
    /// PROTO-5 checked on `initialize` only: a foreign Origin is served on every other request.
    origin_on_initialize_only: bool,
    /// Sessions it opens at most: `initialize` fails with HTTP 503 once they are spent.
    sessions: Option<std::sync::atomic::AtomicU64>,
}

const MAX_BODY: usize = 1_048_576;
const VERSIONS: [&str; 2] = ["2025-06-18", "2025-11-25"];

fn rpc(id: &Value, result: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

fn rpc_error(status: u16, id: &Value, code: i64) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": "refused" } }))
}

fn local(value: &str) -> bool {
    let host = value.split("://").last().unwrap_or_default();
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    name == "127.0.0.1" || name == "localhost"
}

impl Respond for Behaved {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
        if header("host").is_some_and(|h| !local(h)) {
            return ResponseTemplate::new(403);
        }
        let body: Option<Value> = serde_json::from_slice(&request.body).ok();
        let method = body
            .as_ref()
            .and_then(|b| b.get("method"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let method = method.as_str();
        let foreign_origin = header("origin").is_some_and(|o| !local(o) || o == "null");
        if foreign_origin && (method == "initialize" || !self.origin_on_initialize_only) {
            return ResponseTemplate::new(403);
        }
        if request.body.len() > MAX_BODY {
            return ResponseTemplate::new(413);
        }
        let persona = header("authorization").and_then(|v| v.strip_prefix("Bearer t-"));
        let Some(persona) = persona.filter(|p| *p != "other_audience") else {
            let challenge = format!(
                "Bearer resource_metadata=\"http://{}/.well-known/oauth-protected-resource\"",
                header("host").unwrap_or_default()
            );
            return ResponseTemplate::new(401).insert_header("www-authenticate", challenge.as_str());
        };
        // No event stream and no session to end: GET and DELETE are 405, past the same gate.
        if request.method.as_str() != "POST" {
            return ResponseTemplate::new(405);
        }
        let Some(body) = body else { return rpc_error(400, &Value::Null, -32700) };
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        if body.get("jsonrpc") != Some(&json!("2.0")) {
            return rpc_error(400, &id, -32600);
        }
        if body.get("id").is_none() {
            return ResponseTemplate::new(202);
        }
        if header("mcp-protocol-version").is_some_and(|v| !VERSIONS.contains(&v)) {
            return ResponseTemplate::new(400);
        }
        let params = body.get("params").cloned().unwrap_or(Value::Null);
        match method {
            "initialize"
                if self
                    .sessions
                    .as_ref()
                    .is_some_and(|n| n.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_err()) =>
            {
                ResponseTemplate::new(503)
            }
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
                let version = if VERSIONS.contains(&asked) { asked } else { VERSIONS[0] };
                rpc(
                    &id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "behaved", "version": "0" },
                    }),
                )
            }
            "ping" => rpc(&id, json!({})),
            "tools/list" => {
                rpc(&id, json!({ "tools": ToolName::ALL.iter().map(|t| t.descriptor()).collect::<Vec<_>>() }))
            }
            "tools/call" if params.is_object() => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
                match (self.tools)(persona, name, params.get("arguments").unwrap_or(&Value::Null)) {
                    Reply::Result(result) => {
                        let mut t = rpc(&id, result.clone());
                        if let Some(rid) =
                            result.pointer("/structuredContent/meta/request_id").and_then(Value::as_str)
                        {
                            t = t.insert_header("x-request-id", rid);
                        }
                        t
                    }
                    Reply::Raw(status, content_type, text) => {
                        ResponseTemplate::new(status).set_body_raw(text.into_bytes(), content_type)
                    }
                    Reply::Hang(delay) => ResponseTemplate::new(200).set_delay(delay),
                }
            }
            "tools/call" => rpc_error(200, &id, -32602),
            _ => rpc_error(200, &id, -32601),
        }
    }
}

/// A fake that behaves on the transport and answers tools/call with `tools`.
fn behaved(tools: impl Fn(&str, &str, &Value) -> Reply + Send + Sync + 'static) -> Fake {
    let fake = Fake::start();
    fake.serve_every_verb_with(Behaved {
        tools: Box::new(tools),
        origin_on_initialize_only: false,
        sessions: None,
    });
    fake
}

/// A control API that offers nothing but a reset: with it the fuzzer calls write tools too.
struct Control;

impl Respond for Control {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if request.method.as_str() == "GET" {
            return ResponseTemplate::new(200).set_body_json(json!({ "capabilities": [] }));
        }
        ResponseTemplate::new(200).set_body_json(json!({}))
    }
}

/// The fake's profile with its control API (`/control`).
fn with_control(fake: &Fake) -> std::path::PathBuf {
    fake.serve_control(Control);
    let profile = fake.profile(2000);
    let control = fake.endpoint().replace("/mcp", "/control");
    let mut text = std::fs::read_to_string(&profile).unwrap();
    text += &format!("[control]\nurl = \"{control}\"\nsecret = \"s\"\n");
    std::fs::write(&profile, text).unwrap();
    profile
}

/// A console the test reads back.
#[derive(Clone, Default)]
struct Console(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Console {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a fuzz run came to: its exit code, its JSON report, its JUnit report, its console.
pub(crate) struct Run {
    pub(crate) code: u8,
    pub(crate) report: Value,
    junit: String,
    console: String,
}

/// A fuzz run (seed 3) against a fake server, with its JSON and JUnit reports and console.
pub(crate) fn fuzz(fake: &Fake, budget: &str) -> Run {
    fuzz_with(fake.profile(2000), budget)
}

fn fuzz_with(profile: std::path::PathBuf, budget: &str) -> Run {
    let (json_path, junit_path) = (profile.with_file_name("fuzz.json"), profile.with_file_name("fuzz.xml"));
    let console = Console::default();
    let outcome = chataigne_conformance::cli::execute_args(
        [
            "chataigne-conformance",
            "fuzz",
            "--profile",
            profile.to_str().unwrap(),
            "--seed",
            "3",
            "--budget",
            budget,
            "--report-json",
            json_path.to_str().unwrap(),
            "--junit",
            junit_path.to_str().unwrap(),
        ],
        console.clone(),
    );
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let report = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let junit = std::fs::read_to_string(&junit_path).unwrap();
    let console = String::from_utf8(console.0.lock().unwrap().clone()).unwrap();
    Run { code: outcome.code, report, junit, console }
}

fn findings<'a>(report: &'a Value, clause: &str) -> Vec<&'a Value> {
    report["findings"].as_array().unwrap().iter().filter(|f| f["clause"] == clause).collect()
}

/// The findings counted at the seed level (no ext clause, no reference choice).
fn counted(report: &Value) -> Vec<&Value> {
    let ext = |c: &Value| chataigne_contract::clauses::find(c.as_str().unwrap()).is_some_and(|c| c.ext);
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !ext(&f["clause"]) && f["choice"].is_null())
        .collect()
}

fn blocked<'a>(report: &'a Value, why: &str) -> Vec<&'a Value> {
    report["blocked"].as_array().map(|b| b.iter().filter(|b| b["why"] == why).collect()).unwrap_or_default()
}

/// A conforming "not found": what the test's servers answer to a call they do not script (no
/// finding of the single-call rules, no shrinking).
fn not_found() -> Reply {
    let body = ErrorBody::new(ErrorCode::ResourceNotFound, crate::fake::request_id());
    Reply::Result(json!({
        "content": [{ "type": "text", "text": "Not found." }],
        "structuredContent": envelope::error(&body),
        "isError": true,
    }))
}

/// A refusal for the rate; `edit` changes its error.
fn rate_limited(edit: impl Fn(&mut Value)) -> Reply {
    let rid = crate::fake::request_id();
    let mut error = json!({ "code": "MCP_RATE_LIMITED", "category": "rate_limit", "retryable": true,
        "message": "Too many calls", "request_id": rid, "retry_after_ms": 20 });
    edit(&mut error);
    Reply::Result(json!({
        "isError": true,
        "content": [{ "type": "text", "text": "Too many calls" }],
        "structuredContent": { "data": { "error": error }, "meta": { "request_id": rid } },
    }))
}

#[test]
fn fuzz_against_a_server_that_rate_limits_every_call_is_no_verdict() {
    let fake = behaved(|_, _, _| rate_limited(|_| ()));
    let run = fuzz(&fake, "120calls");
    assert_eq!(counted(&run.report), Vec::<&Value>::new(), "{:#}", run.report);
    assert!(!blocked(&run.report, "rate_limited").is_empty(), "{:#}", run.report);
    assert!(run.report["unjudged_calls"].as_u64().unwrap() > 0, "{:#}", run.report);
    assert_eq!(run.code, 2, "{}", run.console);
    assert!(run.console.contains("NOT A PASS"), "{}", run.console);
    assert!(run.junit.contains("<error type=\"RateLimited\""), "{}", run.junit);
}

#[test]
fn fuzz_files_a_rate_limit_refusal_that_breaks_lim_2() {
    // Not retryable: the contract's refusal for the rate is.
    let fake = behaved(|_, _, _| rate_limited(|e| e["retryable"] = json!(false)));
    let run = fuzz(&fake, "120calls");
    assert!(!findings(&run.report, "LIM-2").is_empty(), "{:#}", run.report);
    assert_eq!(run.code, 1, "{}", run.console);
}

#[test]
fn an_item_of_another_tenant_is_auth_5_whatever_the_server_labels_it() {
    // list_orders serves the foreign restaurant's orders, each relabelled with the restaurant
    // asked for: the labels all agree, the IDs do not.
    let fake = behaved(|_, tool, args| {
        let d = crate::fake::dataset();
        if tool != "list_orders" {
            return not_found();
        }
        let asked = args.get("restaurant_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let orders: Vec<Value> = d
            .orders_of(&d.landmarks.foreign_restaurant)
            .take(5)
            .map(|o| {
                let mut o = serde_json::to_value(o).unwrap();
                o["restaurant_id"] = json!(asked);
                o
            })
            .collect();
        crate::fake::success(json!({ "orders": orders }))
    });
    let run = fuzz(&fake, "300calls");
    let auth5: Vec<&Value> =
        findings(&run.report, "AUTH-5").into_iter().filter(|f| f["tool"] == "list_orders").collect();
    assert!(!auth5.is_empty(), "{:#}", run.report);
    assert_eq!(run.code, 1);
}

/// The orders of the dataset's large restaurant, `limit` a page from `cursor` (`"p<n>"`): pages
/// marked truncated, the last one without a cursor, unless `endless`.
fn large_pages(args: &Value, endless: bool) -> Reply {
    let d = crate::fake::dataset();
    let orders: Vec<Value> =
        d.orders_of(&d.landmarks.large_orders_restaurant).map(|o| serde_json::to_value(o).unwrap()).collect();
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(20) as usize;
    let at = args
        .get("cursor")
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix('p')?.parse().ok())
        .unwrap_or(0);
    let page: Vec<Value> = orders.iter().cycle().skip(at % orders.len()).take(limit).cloned().collect();
    let next = at + page.len();
    let mut meta = json!({ "request_id": crate::fake::request_id(), "truncated": true, "replayed": false });
    if endless || next < orders.len() {
        meta["next_cursor"] = json!(format!("p{next}"));
    }
    Reply::Result(json!({
        "content": [{ "type": "text", "text": "Orders." }],
        "structuredContent": { "data": { "orders": page }, "meta": meta },
        "isError": false,
    }))
}

fn is_large(args: &Value) -> bool {
    let d = crate::fake::dataset();
    args.get("restaurant_id").and_then(Value::as_str) == Some(d.landmarks.large_orders_restaurant.as_str())
}

#[test]
fn a_cursor_walk_cut_by_the_page_cap_is_blocked_not_passed() {
    // The large restaurant's walk never ends: every page has a next cursor.
    let fake = behaved(|_, tool, args| match tool {
        "list_orders" if is_large(args) => large_pages(args, true),
        _ => not_found(),
    });
    let run = fuzz(&fake, "600calls");
    assert!(!blocked(&run.report, "walk_capped").is_empty(), "{:#}", run.report);
    assert_ne!(run.code, 0, "{}", run.console);
}

#[test]
fn a_page_cut_short_and_not_marked_truncated_is_lim_5() {
    // Every other restaurant's page holds 3 orders, fewer than its limit, with a next cursor and
    // `truncated: false`; the large restaurant's pages are right (its walk ends, nothing missed).
    let fake = behaved(|_, tool, args| {
        if tool != "list_orders" {
            return not_found();
        }
        if is_large(args) {
            return large_pages(args, false);
        }
        let d = crate::fake::dataset();
        let restaurant = args.get("restaurant_id").and_then(Value::as_str).unwrap_or_default();
        let orders: Vec<Value> =
            d.orders_of(restaurant).take(3).map(|o| serde_json::to_value(o).unwrap()).collect();
        Reply::Result(json!({
            "content": [{ "type": "text", "text": "Orders." }],
            "structuredContent": { "data": { "orders": orders }, "meta": { "request_id": crate::fake::request_id(),
                "truncated": false, "replayed": false, "next_cursor": "more" } },
            "isError": false,
        }))
    });
    let run = fuzz(&fake, "300calls");
    assert!(!findings(&run.report, "LIM-5").is_empty(), "{:#}", run.report);
    assert_eq!(run.code, 1, "{}", run.console);
}

#[test]
fn a_foreign_origin_served_on_tools_call_is_proto_5() {
    // Origin checked on initialize only: a page that learned a session calls every tool.
    let fake = Fake::start();
    fake.serve_every_verb_with(Behaved {
        tools: Box::new(|_, _, _| not_found()),
        origin_on_initialize_only: true,
        sessions: None,
    });
    let run = fuzz(&fake, "120calls");
    let on_call: Vec<&Value> = findings(&run.report, "PROTO-5")
        .into_iter()
        .filter(|f| f["tool"] == "list_organizations" && f["request"]["method"] == "tools/call")
        .collect();
    assert!(!on_call.is_empty(), "{:#}", run.report);
    assert_eq!(run.code, 1, "{}", run.console);
}

#[test]
fn a_probe_without_a_session_is_blocked_not_passed() {
    // The fuzzer's own session, then no other: every probe that needs one cannot run.
    let fake = Fake::start();
    let sessions = Some(std::sync::atomic::AtomicU64::new(2));
    fake.serve_every_verb_with(Behaved {
        tools: Box::new(|_, _, _| not_found()),
        origin_on_initialize_only: false,
        sessions,
    });
    let run = fuzz(&fake, "120calls");
    let probes: Vec<&Value> = blocked(&run.report, "no_session")
        .into_iter()
        .filter(|b| b["what"].as_str().unwrap().starts_with("probe "))
        .collect();
    assert!(!probes.is_empty(), "{:#}", run.report);
    assert_ne!(run.code, 0, "{}", run.console);
}

#[test]
fn a_keyed_sequence_whose_first_call_never_succeeds_is_blocked() {
    // Every write refused: the idempotency sequence never gets past its first call.
    let fake = behaved(|_, _, _| not_found());
    let run = fuzz_with(with_control(&fake), "200calls");
    let idem: Vec<&Value> = blocked(&run.report, "first_call_failed")
        .into_iter()
        .filter(|b| b["what"].as_str().unwrap().starts_with("idempotency of "))
        .collect();
    assert!(!idem.is_empty(), "{:#}", run.report);
    assert_ne!(run.code, 0, "{}", run.console);
}

#[test]
fn a_rate_burst_answered_with_a_server_error_is_lim_2() {
    // Other personas' calls are served until the burst: past 40 calls of one pair, HTTP 500.
    let tally: Mutex<std::collections::HashMap<(String, String), u64>> = Mutex::default();
    let fake = behaved(move |persona, tool, args| {
        let mut tally = tally.lock().unwrap();
        let n = tally.entry((persona.to_owned(), tool.to_owned())).or_insert(0);
        *n += 1;
        if persona != "owner" && *n > 40 {
            return Reply::Raw(500, "text/plain", "overloaded".to_owned());
        }
        match tool {
            "get_restaurant" | "list_orders" => crate::fake::conforming(tool, args),
            _ => not_found(),
        }
    });
    let run = fuzz_with(with_control(&fake), "1000calls");
    let burst: Vec<&Value> =
        findings(&run.report, "LIM-2").into_iter().filter(|f| f["replay"]["kind"] == "rates").collect();
    assert!(!burst.is_empty(), "{:#}", run.report);
    assert_eq!(run.code, 1, "{}", run.console);
}
