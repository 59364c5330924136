//! The transport family: deterministic probes of the transport, the JSON-RPC envelope and the
//! HTTP edge (PROTO-1, PROTO-2, PROTO-5, AUTH-1, AUTH-2, LIM-7, ABS-1), each one or two
//! requests, judged by the very rules the suite's steps use (`crate::rules::transport`), never
//! more. Over stdio the probes the scenarios mark `@needs-http` are skipped.
//!
//! A probe is named (`id "7"`, `origin null`, …): the name is its replay case, and the
//! scenario a finding's `.feature` holds is made of the steps that state the same rule.

mod surfaces;

use chataigne_contract::PROTOCOL_VERSIONS;
use proptest::strategy::{Just, Strategy as _};
use serde_json::{Value, json};

use super::cases::Replay;
use super::engine::{Engine, rng};
use super::observed::Why;
use super::observed::{Observed, PERSONA};
use super::oracle::Fault;
use crate::client::{Exchange, McpClient, PROTOCOL_VERSION};
use crate::rules::catalogue;
use crate::rules::transport::{self as rules, MIRROR_CASES, Miss};

/// A version no MCP revision has.
const UNSUPPORTED: &str = "1999-01-01";
/// The ids a loose implementation gets wrong: 0 is falsy, "7" looks like a number; the others
/// are edges of the integers a JSON number carries exactly, and a string that is no number.
const IDS: [&str; 5] = ["0", "\"7\"", "-7", "9007199254740991", "\"fuzz-\u{e9}\""];
/// `protocol.feature`'s foreign origins: look-alikes of the local ones, and a sandboxed frame's.
const ORIGINS: [&str; 5] = [
    "https://attacker.example",
    "http://localhost.attacker.example",
    "http://127.0.0.1.attacker.example",
    "http://attacker-localhost",
    "null",
];
const FOREIGN_HOST: &str = "attacker.example";
/// The probes of a foreign Origin or Host on a tools/call inside an initialized session.
const ORIGIN_CALL: &str = "origin on tools/call ";
const HOST_CALL: &str = "host on tools/call ";
/// The tool and arguments those probes call (`protocol.feature`'s).
const CALLED: &str = "list_organizations";
/// `protocol.feature`'s method no server has (`the answer is the JSON-RPC error -32601`).
/// `protocol.feature`'s unknown methods: one of no kind, and known ones in another case (JSON-RPC
/// method names are case-sensitive).
const UNKNOWN_METHODS: [&str; 3] = ["orders/teleport", "Tools/List", "PING"];
/// A foreign origin on the endpoint's other verbs (PROTO-5: every incoming connection).
const VERB_ORIGIN: &str = "https://attacker.example";
/// A JSON-RPC batch: no message of the revisions served (the choice `no-batches`).
const BATCH: &str =
    r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]"#;
/// The probe of the server's own event stream (PROTO-1): a GET in a session.
const GET_STREAM: &str = "GET stream";
/// `protocol.feature`'s body that is not JSON: a request cut before its closing brace.
const NOT_JSON: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list""#;
/// LIM-7: 1 MiB is read, a byte more is refused with 413.
const MAX_BODY: usize = chataigne_contract::MAX_BODY_BYTES;
/// AUTH-1 for a token that was sent but never issued: challenged like a missing one.
const MADE_UP: &str = "made-up token";
const MADE_UP_TOKEN: &str = "not-a-token-CANARY";
/// A body probe sent chunked, without a Content-Length.
const BODY_CHUNKED: &str = " chunked";

/// One of the catalogue's rules on every tool of `tools/list` (`rules::catalogue`).
struct CatalogueRule {
    /// The probe is `catalogue NAME`.
    name: &'static str,
    clause: &'static str,
    /// The reference choice a miss is a difference from, when the scenario is an ext one.
    choice: Option<&'static str>,
    rule: fn(&Value) -> Option<String>,
    /// The steps that state it, after `When they list the tools`.
    steps: &'static [&'static str],
}

const CATALOGUE_RULES: [CatalogueRule; 3] = [
    CatalogueRule {
        name: "described",
        clause: "PROTO-3",
        choice: None,
        rule: catalogue::undescribed,
        steps: &["Then every tool has a description, an input schema and an output schema"],
    },
    CatalogueRule {
        name: "closed",
        clause: "PROTO-3",
        choice: Some("closed-schemas"),
        rule: catalogue::not_closed,
        steps: &[
            "Then every input schema is a closed JSON Schema 2020-12 object",
            "And every read tool is annotated read-only",
            "And every write tool is annotated neither read-only nor destructive",
            "And every idempotency-keyed write tool is annotated idempotent",
        ],
    },
    CatalogueRule {
        name: "bounded",
        clause: "LIM-7",
        choice: None,
        rule: catalogue::unbounded_strings,
        steps: &["Then every string argument of every tool declares a maxLength"],
    },
];

fn catalogue_rule(probe: &str) -> Option<&'static CatalogueRule> {
    CATALOGUE_RULES.iter().find(|r| probe.strip_prefix("catalogue ") == Some(r.name))
}

/// The probes this server is probed with, in order.
pub fn probes(engine: &Engine<'_>) -> Vec<String> {
    let http = engine.caller.ctx.stdio.is_none();
    let mut out = Vec::new();
    // PROTO-2 ids and PROTO-1 notifications: over HTTP (the stdio connection pairs answers with
    // requests by its own numeric ids).
    if http {
        out.extend(IDS.iter().map(|id| format!("id {id}")));
        out.push("notification".to_owned());
    }
    out.push(format!("version {UNSUPPORTED}"));
    // The contract's versions that have an initialize (2026-07-28 has none: server/discover).
    out.extend(PROTOCOL_VERSIONS.iter().filter(|v| **v != "2026-07-28").map(|v| format!("version {v}")));
    out.push("catalogue".to_owned());
    out.extend(CATALOGUE_RULES.iter().map(|r| format!("catalogue {}", r.name)));
    out.extend(UNKNOWN_METHODS.iter().map(|m| format!("method {m}")));
    if !http {
        return out;
    }
    out.push(GET_STREAM.to_owned());
    out.extend(["GET", "DELETE"].map(|verb| format!("{verb} origin {VERB_ORIGIN}")));
    out.push("batch".to_owned());
    out.push(format!("version header {UNSUPPORTED}"));
    out.push("discover".to_owned());
    out.push("mirror served".to_owned());
    out.extend(MIRROR_CASES.iter().map(|(case, _)| format!("mirror {case}")));
    out.extend(ORIGINS.iter().map(|o| format!("origin {o}")));
    out.push(format!("host {FOREIGN_HOST}"));
    // PROTO-5 past the handshake: a check on `initialize` only lets a page that learned a
    // session call every tool.
    out.extend(ORIGINS.iter().map(|o| format!("{ORIGIN_CALL}{o}")));
    out.push(format!("{HOST_CALL}{FOREIGN_HOST}"));
    out.push("no token".to_owned());
    // AUTH-1 on the endpoint's other verbs: the token is checked on every HTTP request.
    out.extend(["GET", "DELETE"].map(|verb| format!("{verb} no token")));
    out.push(MADE_UP.to_owned());
    if engine.caller.can_call_as("other_audience") {
        out.push("other audience".to_owned());
    }
    // LIM-7 on both framings (`crate::edges::BODY_EDGES`): a server that checks only the
    // Content-Length serves a chunked body of any size.
    // (The whitespace-padded edge is the feature's only: a probe's name carries size and framing.)
    out.extend(crate::edges::BODY_EDGES.iter().filter(|e| !e.whitespace).map(|e| {
        let framing = if e.chunked { BODY_CHUNKED } else { "" };
        format!("body {}{framing}", e.bytes)
    }));
    out.extend(["jsonrpc missing", "jsonrpc 1.0", "params missing", "extra member"].map(str::to_owned));
    out.push("not json".to_owned());
    out
}

/// Run every probe of the transport once (or the one `fixed` names, of either family, for a
/// replay); returns whether one failed.
pub fn run(engine: &Engine<'_>, fixed: Option<&str>) -> bool {
    let mut names = probes(engine);
    if fixed.is_some() {
        names.extend(surfaces::probes(engine, engine.caller.ctx.stdio.is_none()));
    }
    run_named(engine, names, 2 << 32, fixed)
}

/// The surfaces' probes (`surfaces`), once each: later in the plan than the transport's, as
/// each walks every list, resource and prompt of a persona.
pub fn run_surfaces(engine: &Engine<'_>) -> bool {
    let names = surfaces::probes(engine, engine.caller.ctx.stdio.is_none());
    run_named(engine, names, 6 << 32, None)
}

fn run_named(engine: &Engine<'_>, names: Vec<String>, key: u64, fixed: Option<&str>) -> bool {
    let mut failed = false;
    for (i, name) in names.into_iter().enumerate() {
        if fixed.is_some_and(|f| f != name) {
            continue;
        }
        if engine.caller.spent() {
            break;
        }
        let replay = |p: &String| Replay::Transport { probe: p.clone() };
        let rng = rng(engine.seed, 0, key + i as u64);
        failed |= engine.run_property(Just(name).boxed(), 1, 0, rng, &replay, &|p| probe(engine, p));
    }
    failed
}

/// One request, counted against the budget, unless the budget is spent (then `None`, and the
/// probe judges nothing: what it did not see is not proven).
fn try_send<F: std::future::Future<Output = Exchange>>(engine: &Engine<'_>, f: F) -> Option<Exchange> {
    (!engine.caller.spent()).then(|| send(engine, f))
}

/// One request, counted against the budget.
fn send<F: std::future::Future<Output = Exchange>>(engine: &Engine<'_>, f: F) -> Exchange {
    engine.caller.meter.borrow_mut().calls += 1;
    let ex = engine.caller.runtime.block_on(f);
    if engine.caller.trace {
        eprintln!("(transport) {} -> {}", ex.method, ex.summary());
    }
    ex
}

/// A session of the owner (one request) for the probe `name`: `None` when it cannot be had,
/// and the probe is then blocked (nothing to judge is never a pass).
fn session(engine: &Engine<'_>, name: &str) -> Option<McpClient> {
    let Some(mut client) = engine.caller.ctx.client(PERSONA) else {
        engine.block(
            Why::NoSession,
            &format!("probe {name}"),
            format!("the profile has no token for `{PERSONA}`"),
        );
        return None;
    };
    let ex = send(engine, client.initialize());
    if !client.is_initialized() {
        let reason = format!("initialize as `{PERSONA}` failed ({})", ex.summary());
        engine.block(Why::NoSession, &format!("probe {name}"), reason);
        return None;
    }
    Some(client)
}

fn owner_client(engine: &Engine<'_>) -> Option<McpClient> {
    engine.caller.ctx.client(PERSONA)
}

/// The body of a valid read, with `id` (JSON) and the envelope's members changed by `edit`.
pub fn read_body(id: &Value, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "list_organizations", "arguments": {} },
    });
    if let Some(o) = body.as_object_mut() {
        edit(o);
    }
    body
}

/// The raw body of an envelope probe.
pub fn envelope_body(name: &str) -> Option<Value> {
    let id = json!(41);
    Some(match name {
        "jsonrpc missing" => read_body(&id, |o| drop(o.remove("jsonrpc"))),
        "jsonrpc 1.0" => read_body(&id, |o| drop(o.insert("jsonrpc".to_owned(), json!("1.0")))),
        "params missing" => read_body(&id, |o| drop(o.remove("params"))),
        "extra member" => read_body(&id, |o| drop(o.insert("chataigne_extra".to_owned(), json!(true)))),
        _ => return None,
    })
}

/// What a probe's answer broke.
struct Judged {
    clause: &'static str,
    /// The reference choice a difference is filed under (counted at the full level only).
    choice: Option<&'static str>,
    tool: String,
    ex: Exchange,
    miss: Option<Miss>,
}

fn probe(engine: &Engine<'_>, name: &str) -> Vec<Observed> {
    let judged = judge(engine, name);
    let observed = |j: &Judged, fault: Fault, choice| Observed {
        mutation: Some(name.to_owned()),
        raw: true,
        choice,
        ..Observed::new(fault, &j.ex.persona.clone().unwrap_or_default(), &j.tool, &json!({}), &j.ex)
    };
    let mut out = Vec::new();
    for j in &judged {
        // The probe's own rule, then every rule of the judge's table: a probe's answer is an
        // answer like any other (an unknown method's refusal carries the request's id too).
        if let Some(miss) = &j.miss {
            let detail = format!("{name}: expected {}; got {}", miss.expected, miss.got);
            out.push(observed(j, Fault::new(j.clause, detail), j.choice));
        }
        let token = j.ex.persona.as_deref().and_then(|p| engine.caller.token_of(p));
        for fault in super::oracle::every_rule(engine.caller.ctx, &j.ex, token) {
            let choice = fault.choice;
            out.push(observed(j, fault, choice));
        }
    }
    out
}

fn judged(clause: &'static str, tool: &str, ex: Exchange, rule: rules::Rule) -> Vec<Judged> {
    vec![Judged { clause, choice: None, tool: tool.to_owned(), ex, miss: rule.err() }]
}

/// A rule whose reading is a reference choice: a miss is a finding, a difference a finding
/// under the choice.
fn judged_choice(
    clause: &'static str,
    choice: &'static str,
    tool: &str,
    ex: Exchange,
    rule: rules::Rule<Option<String>>,
) -> Vec<Judged> {
    let (choice, miss) = match rule {
        Ok(None) => (None, None),
        Ok(Some(difference)) => (
            Some(choice),
            Some(Miss { expected: format!("the reference's choice `{choice}`"), got: difference }),
        ),
        Err(miss) => (None, Some(miss)),
    };
    vec![Judged { clause, choice, tool: tool.to_owned(), ex, miss }]
}

fn judge(engine: &Engine<'_>, name: &str) -> Vec<Judged> {
    if let Some(judged) = surfaces::judge(engine, name) {
        return judged;
    }
    let ctx = engine.caller.ctx;
    let restaurant = ctx.id_map.to_server(&ctx.dataset.landmarks.busy_restaurant);
    if let Some(id) = name.strip_prefix("id ") {
        let Ok(id) = serde_json::from_str::<Value>(id) else { return Vec::new() };
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let body = read_body(&id, |_| ());
        let ex = send(engine, client.post_raw(body.to_string().into_bytes(), None, &[]));
        return judged("PROTO-2", "list_organizations", ex.clone(), rules::carries_id(&ex, &id));
    }
    if name == "notification" {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let (method, params) = rules::unanswerable_notification();
        let ex = send(engine, client.notify(method, params));
        return judged("PROTO-1", method, ex.clone(), rules::accepted(&ex));
    }
    if let Some(v) = name.strip_prefix("version header ") {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let header = [("MCP-Protocol-Version".to_owned(), v.to_owned())];
        let ex = send(engine, client.request_with("tools/list", json!({}), &header));
        return judged("PROTO-1", "tools/list", ex.clone(), rules::refused_with_status(&ex, 400));
    }
    if let Some(v) = name.strip_prefix("version ") {
        let Some(mut client) = owner_client(engine) else { return Vec::new() };
        let ex = send(engine, client.initialize_with(v, &[]));
        if v == UNSUPPORTED {
            return judged("PROTO-1", "initialize", ex.clone(), rules::offers_other_version(&ex, v));
        }
        // `@ext-protocol-versions`: agreeing on each of the contract's versions is a reference
        // choice (the seed asks for one the contract serves).
        let rule = rules::agrees_on_version(&ex, v);
        let miss = rule.err();
        let choice = miss.is_some().then_some("protocol-versions");
        return vec![Judged { clause: "PROTO-1", choice, tool: "initialize".to_owned(), ex, miss }];
    }
    if name == "catalogue" {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let ex = send(engine, client.request("tools/list", json!({})));
        let listed: Vec<&str> =
            ctx.published.tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect();
        return judged("ABS-1", "tools/list", ex, rules::exactly_the_contract_tools(&listed));
    }
    if let Some(&CatalogueRule { clause, choice, rule, .. }) = catalogue_rule(name) {
        // Judged on the whole catalogue the preflight listed (every page): the request is the
        // one a reproduction sends.
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let ex = send(engine, client.request("tools/list", json!({})));
        let problems = catalogue::problems(&ctx.published.tools, rule);
        let miss = (!problems.is_empty())
            .then(|| Miss { expected: format!("catalogue {name}"), got: problems.join("; ") });
        let choice = miss.as_ref().and(choice);
        return vec![Judged { clause, choice, tool: "tools/list".to_owned(), ex, miss }];
    }
    if name == GET_STREAM {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let ex = send(engine, client.send_http(reqwest::Method::GET));
        return judged("PROTO-1", "GET /mcp", ex.clone(), rules::stream_or_405(&ex));
    }
    if let Some((verb, origin)) = verb_origin(name) {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let method = if verb == "GET" { reqwest::Method::GET } else { reqwest::Method::DELETE };
        let ex = send(engine, client.send_http_with(method, &[("Origin".to_owned(), origin.to_owned())]));
        return judged("PROTO-5", &format!("{verb} /mcp"), ex.clone(), rules::status_is(&ex, 403));
    }
    if name == "batch" {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let ex = send(engine, client.post_raw(BATCH.as_bytes().to_vec(), None, &[]));
        let rule = rules::batch_refused(&ex);
        return judged_choice("PROTO-2", "no-batches", "(a batch)", ex, rule);
    }
    if let Some(method) = name.strip_prefix("method ") {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let ex = send(engine, client.request(method, json!({})));
        return judged("PROTO-2", method, ex.clone(), rules::rpc_error(&ex, -32601));
    }
    if name == "not json" {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let ex = send(engine, client.post_raw(NOT_JSON.as_bytes().to_vec(), None, &[]));
        let rule = rules::refused_with_rpc_code(&ex, -32700);
        return judged_choice("PROTO-2", "jsonrpc-error-codes", "(not JSON)", ex, rule);
    }
    if name == "discover" {
        // `@ext-stateless-revision`: serving 2026-07-28 is a reference choice.
        let Some(mut client) = owner_client(engine) else { return Vec::new() };
        let ex = send(engine, client.request_2026("server/discover", json!({}), &[]));
        let miss = ex.result().is_none().then(|| Miss {
            expected: "server/discover served (protocol version 2026-07-28)".to_owned(),
            got: ex.summary(),
        });
        let choice = miss.is_some().then_some("stateless-revision");
        return vec![Judged { clause: "PROTO-1", choice, tool: "server/discover".to_owned(), ex, miss }];
    }
    if let Some(case) = name.strip_prefix("mirror ") {
        let Some(mut client) = owner_client(engine) else { return Vec::new() };
        let discover = send(engine, client.request_2026("server/discover", json!({}), &[]));
        if discover.result().is_none() {
            // The revision is the server's to serve: nothing to judge.
            return Vec::new();
        }
        let params = json!({ "name": "get_restaurant", "arguments": { "restaurant_id": restaurant } });
        if case == "served" {
            let ex = send(engine, client.request_2026("tools/call", params, &[]));
            let miss = ex.result().is_none().then(|| Miss {
                expected: "a 2026-07-28 tools/call whose headers mirror its body, served".to_owned(),
                got: ex.summary(),
            });
            return vec![Judged {
                clause: "PROTO-1",
                choice: None,
                tool: "get_restaurant".to_owned(),
                ex,
                miss,
            }];
        }
        let Some(change) = rules::mirror_override(case) else { return Vec::new() };
        let ex = send(engine, client.request_2026("tools/call", params, &[change]));
        return judged("PROTO-1", "get_restaurant", ex.clone(), rules::refused_with_status(&ex, 400));
    }
    if let Some((header, value)) = on_call(name) {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let params = json!({ "name": CALLED, "arguments": {} });
        let headers = [(header.to_owned(), value.to_owned())];
        let ex = send(engine, client.request_with("tools/call", params, &headers));
        if header == "Origin" {
            return judged("PROTO-5", CALLED, ex.clone(), rules::status_is(&ex, 403));
        }
        let rule = rules::refused_4xx_host(&ex);
        return judged_choice("PROTO-5", "host-validation", CALLED, ex, rule);
    }
    if let Some(origin) = name.strip_prefix("origin ") {
        let Some(mut client) = owner_client(engine) else { return Vec::new() };
        let header = [("Origin".to_owned(), origin.to_owned())];
        let ex = send(engine, client.initialize_with(PROTOCOL_VERSION, &header));
        return judged("PROTO-5", "initialize", ex.clone(), rules::status_is(&ex, 403));
    }
    if let Some(host) = name.strip_prefix("host ") {
        let Some(mut client) = owner_client(engine) else { return Vec::new() };
        let header = [("Host".to_owned(), host.to_owned())];
        let ex = send(engine, client.initialize_with(PROTOCOL_VERSION, &header));
        let rule = rules::refused_4xx_host(&ex);
        return judged_choice("PROTO-5", "host-validation", "initialize", ex, rule);
    }
    if let Some(verb) = name.strip_suffix(" no token").filter(|v| matches!(*v, "GET" | "DELETE")) {
        let mut client = ctx.anonymous_client(None, None);
        let method = if verb == "GET" { reqwest::Method::GET } else { reqwest::Method::DELETE };
        let ex = send(engine, client.send_http(method));
        let rule = rules::challenge_on_origin(&ex, &ctx.endpoint).map(drop);
        return judged("AUTH-1", &format!("{verb} /mcp"), ex.clone(), rule);
    }
    if name == "no token" {
        let mut client = ctx.anonymous_client(None, None);
        let ex = send(engine, client.initialize());
        let rule = rules::challenge_on_origin(&ex, &ctx.endpoint).map(drop);
        return judged("AUTH-1", "initialize", ex.clone(), rule);
    }
    if name == MADE_UP {
        let mut client =
            ctx.anonymous_client(Some(MADE_UP_TOKEN.to_owned()), Some("(a made-up token)".to_owned()));
        let ex = send(engine, client.initialize());
        let rule = rules::challenge_on_origin(&ex, &ctx.endpoint).map(drop);
        return judged("AUTH-1", "initialize", ex.clone(), rule);
    }
    if name == "other audience" {
        let Some(mut client) = ctx.client("other_audience") else { return Vec::new() };
        let ex = send(engine, client.initialize());
        return judged("AUTH-2", "initialize", ex.clone(), rules::bearer_challenge(&ex).map(drop));
    }
    if let Some((size, chunked)) = body_probe(name) {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let id = client.take_id();
        let Ok(bytes) = rules::sized_tools_call(id, &restaurant, size) else { return Vec::new() };
        let mut ex = if chunked {
            send(engine, client.post_raw_chunked(bytes, Some(id)))
        } else {
            send(engine, client.post_raw(bytes, Some(id), &[]))
        };
        ex.tool = Some("search_transcripts".to_owned());
        let rule = if size > MAX_BODY {
            rules::status_is(&ex, 413)
        } else {
            rules::status_is_not(&ex, 413).and_then(|()| rules::no_server_error(&ex))
        };
        return judged("LIM-7", "search_transcripts", ex, rule);
    }
    if let Some(body) = envelope_body(name) {
        let Some(mut client) = session(engine, name) else { return Vec::new() };
        let ex = send(engine, client.post_raw(body.to_string().into_bytes(), None, &[]));
        return match name {
            "jsonrpc missing" | "jsonrpc 1.0" => {
                let rule = rules::refused_with_rpc_code(&ex, -32600);
                judged_choice("PROTO-2", "jsonrpc-error-codes", "tools/call", ex, rule)
            }
            // Not served, and no server error: the code is not judged (the TypeScript SDK
            // answers -32603 where JSON-RPC names -32602, docs/DECISIONS.md).
            "params missing" => judged("PROTO-2", "tools/call", ex.clone(), rules::not_served(&ex)),
            // Answered or refused, but no server error: the TypeScript SDK refuses a member
            // JSON-RPC does not define with 400 (docs/DECISIONS.md).
            _ => judged("PROTO-2", "tools/call", ex.clone(), rules::no_server_error(&ex)),
        };
    }
    Vec::new()
}

/// A body probe's size, and whether it is sent chunked.
fn body_probe(name: &str) -> Option<(usize, bool)> {
    let rest = name.strip_prefix("body ")?;
    let (size, chunked) = match rest.strip_suffix(BODY_CHUNKED) {
        Some(size) => (size, true),
        None => (rest, false),
    };
    Some((size.parse().ok()?, chunked))
}

/// A probe on a tools/call: the header it sends and its value.
fn on_call(name: &str) -> Option<(&'static str, &str)> {
    if let Some(origin) = name.strip_prefix(ORIGIN_CALL) {
        return Some(("Origin", origin));
    }
    name.strip_prefix(HOST_CALL).map(|host| ("Host", host))
}

/// The steps of the scenario that states a probe's rule (after `Given the persona`, which the
/// probe's persona decides), for a finding's `.feature`.
pub fn scenario(name: &str) -> Vec<String> {
    if let Some(steps) = surfaces::scenario(name) {
        return steps;
    }
    let given = |p: &str| format!("    Given the persona \"{p}\"");
    let owner = given(PERSONA);
    let s = |t: &str| format!("    {t}");
    if let Some(id) = name.strip_prefix("id ") {
        return vec![
            owner,
            s("# The fuzzer sent a tools/call of list_organizations with this id; the step sends ping."),
            s(&format!("When they send the JSON-RPC request \"ping\" with the id {id}")),
            s(&format!("Then the answer carries the id {id}, with its type")),
        ];
    }
    if name == "notification" {
        return vec![
            owner,
            s("When they send a notification the server has no answer for"),
            s("Then the server accepts it with HTTP 202 and no body"),
        ];
    }
    if let Some(v) = name.strip_prefix("version header ") {
        return vec![
            owner,
            s(&format!(
                "When they send the JSON-RPC request \"tools/list\" with the header \"MCP-Protocol-Version\" set to \"{v}\""
            )),
            s("Then the request is refused with HTTP 400 and not served"),
        ];
    }
    if let Some(v) = name.strip_prefix("version ") {
        if v == UNSUPPORTED {
            return vec![
                owner,
                s(&format!("When they initialize a session of their own with protocol version \"{v}\"")),
                s(&format!("Then the server offers another protocol version it serves, not \"{v}\"")),
            ];
        }
        return vec![
            owner,
            s(&format!("When they initialize with protocol version \"{v}\"")),
            s(&format!("Then the server agrees on protocol version \"{v}\"")),
        ];
    }
    if name == "catalogue" {
        return vec![
            owner,
            s("When they list the tools"),
            s("Then the tools are exactly the tools of the contract"),
        ];
    }
    if let Some(rule) = catalogue_rule(name) {
        let mut out = vec![owner, s("When they list the tools")];
        out.extend(rule.steps.iter().map(|t| s(t)));
        return out;
    }
    if name == GET_STREAM {
        return vec![
            owner,
            s("When they open the server's event stream with GET in a session of their own"),
            s("Then the server opens an event stream or answers 405 Method Not Allowed"),
        ];
    }
    if let Some((verb, origin)) = verb_origin(name) {
        return vec![
            owner,
            s(&format!(
                "When they send {verb} to the endpoint in a session of their own with the header \"Origin\" set to \"{origin}\""
            )),
            s("Then the HTTP status is 403"),
        ];
    }
    if name == "batch" {
        return vec![
            owner,
            s("When they post the raw body:"),
            s("  \"\"\""),
            s(&format!("  {BATCH}")),
            s("  \"\"\""),
            s("Then the batch is answered below HTTP 500, refused with a 4xx by the reference's choice"),
        ];
    }
    if let Some(method) = name.strip_prefix("method ") {
        return vec![
            owner,
            s(&format!("When they send the JSON-RPC request \"{method}\"")),
            s("Then the answer is the JSON-RPC error -32601"),
        ];
    }
    if name == "not json" {
        return vec![
            owner,
            s("When they post the raw body:"),
            s("  \"\"\""),
            s(&format!("  {NOT_JSON}")),
            s("  \"\"\""),
            s(
                "Then the request is refused with a 4xx status, the JSON-RPC error -32700 by the reference's choice",
            ),
        ];
    }
    if name == "discover" {
        return vec![
            owner,
            s(
                "When an MCP client library connects with their token using protocol version \"2026-07-28\" and lists the tools",
            ),
            s("Then the library session uses protocol version \"2026-07-28\""),
            s("And the library lists the tools of the contract"),
        ];
    }
    if let Some(case) = name.strip_prefix("mirror ") {
        let mut out = vec![owner, s("Given the server serves protocol version 2026-07-28")];
        if case != "served" {
            out.push(s(&format!("When they send a 2026-07-28 tools/call request with {case}")));
            out.push(s("Then the request is refused with HTTP 400 and not served"));
        }
        return out;
    }
    if let Some((header, value)) = on_call(name) {
        let then = if header == "Origin" {
            "Then the HTTP status is 403"
        } else {
            "Then the request is refused with a 4xx status, 403 by the reference's choice"
        };
        return vec![
            owner,
            s(&format!(
                "When they call \"{CALLED}\" in their session with the header \"{header}\" set to \"{value}\""
            )),
            s(then),
        ];
    }
    if let Some(origin) = name.strip_prefix("origin ") {
        return vec![
            owner,
            s(&format!("When they initialize with the header \"Origin\" set to \"{origin}\"")),
            s("Then the HTTP status is 403"),
        ];
    }
    if let Some(host) = name.strip_prefix("host ") {
        return vec![
            owner,
            s(&format!("When they initialize with the header \"Host\" set to \"{host}\"")),
            s("Then the request is refused with a 4xx status, 403 by the reference's choice"),
        ];
    }
    if name.strip_suffix(" no token").is_some_and(|v| matches!(v, "GET" | "DELETE")) {
        return vec![
            owner,
            s("When they start a session and send each of its requests again without a token"),
            s("Then each of them is HTTP 401 with a bearer challenge naming the resource metadata"),
        ];
    }
    if name == "no token" {
        return vec![
            s("When someone without a token initializes"),
            s("Then the answer is HTTP 401 with a bearer challenge naming the resource metadata"),
        ];
    }
    if name == MADE_UP {
        return vec![
            s(&format!("When someone with the token \"{MADE_UP_TOKEN}\" initializes")),
            s("Then the answer is HTTP 401 with a bearer challenge naming the resource metadata"),
        ];
    }
    if name == "other audience" {
        return vec![
            given("other_audience"),
            s("When they initialize"),
            s("Then the answer is HTTP 401 with a bearer challenge naming the resource metadata"),
        ];
    }
    if let Some((size, chunked)) = body_probe(name) {
        if chunked {
            return vec![
                owner,
                s(
                    "Then every request body on and past 1 MiB is read or refused with 413, with a Content-Length or chunked without one",
                ),
            ];
        }
        let mut out =
            vec![owner, s(&format!("When they send a tools/call request whose body is {size} bytes long"))];
        if size > MAX_BODY {
            out.push(s("Then the HTTP status is 413"));
        } else {
            out.push(s("Then the HTTP status is not 413"));
            out.push(s("And the server answered without a server error"));
        }
        return out;
    }
    if let Some(body) = envelope_body(name) {
        let mut out = vec![
            owner,
            s("When they post the raw body:"),
            s("  \"\"\""),
            s(&format!("  {body}")),
            s("  \"\"\""),
        ];
        match name {
            "jsonrpc missing" | "jsonrpc 1.0" => out.push(s(
                "Then the request is refused with a 4xx status, the JSON-RPC error -32600 by the reference's choice",
            )),
            _ => {
                if name == "params missing" {
                    out.push(s("# No step states this oracle (no JSON-RPC result, no 5xx): replay the transcript."));
                }
                out.push(s("Then the server answered without a server error"));
            }
        }
        return out;
    }
    vec![owner, s("# An unknown probe: replay the transcript.")]
}

/// The verb and origin of a probe `GET origin …` or `DELETE origin …`.
fn verb_origin(name: &str) -> Option<(&str, &str)> {
    let (verb, origin) = name.split_once(" origin ")?;
    matches!(verb, "GET" | "DELETE").then_some((verb, origin))
}
