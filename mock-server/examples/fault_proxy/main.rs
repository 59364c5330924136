//! An HTTP reverse proxy that breaks one rule of the contract in front of a healthy reference
//! server: the outside faults of `bench/outside-faults.sh` (docs/KILL_MATRIX.md, "Outside faults").
//!
//! `cargo run -p mock-server --example fault_proxy -- LISTEN UPSTREAM FAULT`, e.g.
//! `127.0.0.1:18181 127.0.0.1:18180 pag4-skip-first-on-next`; `fault_proxy --list` prints the
//! catalogue (name, clause, level, what) and `none` forwards everything unchanged.
//!
//! The catalogue was written from docs/CONTRACT.md alone, before reading the scenarios, so the
//! faults are bugs a real server could have rather than bugs the suite was written against
//! (unlike `--defect`). Each is a rewrite of requests or answers of `POST /mcp`, sometimes with
//! extra calls upstream (reading the state, walking pages, retrying as someone else) to act out
//! server logic the reference does not have. The proxy reads the published dataset
//! (`FAULT_DATASET`, default `fixtures/dataset.json`) to know personas (tokens are
//! `dev-token-<persona>`), memberships and who owns what; `FAULT_CONTROL_SECRET` lets one fault
//! read the server's clock through the control API.
//!
//! Here: the proxy, what it remembers and learns from answers, and the dispatch of the rewrites
//! by the contract area of the fault's clause to one module per area (`protocol`, `envelope`,
//! `pagination`, `limits`, `preconditions`, `idempotency`, `auth`, `absent`, `security`;
//! `catalogue` rewrites tools/list; `batch4` to `batch12` hold the fourth to twelfth batches,
//! `b4-` to `b12-` names, whatever their area; `common` holds the shapes batch 10 on shares). `faults` is the catalogue
//! of faults, `dataset` what the proxy reads of the published dataset, `wire` requests and
//! answers as the proxy sees them.

mod absent;
mod auth;
mod batch10;
mod batch11;
mod batch12;
mod batch4;
mod batch5;
mod batch6;
mod batch7;
mod batch8;
mod batch9;
mod catalogue;
mod common;
mod dataset;
mod envelope;
mod faults;
mod idempotency;
mod limits;
mod pagination;
mod preconditions;
mod protocol;
mod security;
mod wire;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use chataigne_contract::envelope::ErrorBody;
use chataigne_contract::{Category, ErrorCode, Kind, ToolName};
use rand::Rng;
use serde_json::{Map, Value, json};

use dataset::*;
use faults::*;
use wire::*;

// ---------------------------------------------------------------------------------------------
// What the proxy remembers between calls (for the stateful faults).

struct Issued {
    tool: String,
    filters: Map<String, Value>,
    limit: Option<Value>,
    auth: String,
}

struct Keyed {
    args: Map<String, Value>,
    raw_args: String,
    result: Value,
    request_id: String,
    server_ms: Option<u64>,
}

/// (auth, tool, idempotency key): where a keyed call's result is remembered.
type Slot = (String, String, String);

#[derive(Default)]
struct Memory {
    /// child → restaurant, restaurant → organization, learnt from answers
    owner: HashMap<String, String>,
    /// organizations created here → the auth of their creator
    org_creator: HashMap<String, String>,
    cursors: HashMap<String, Issued>,
    fake_cursors: HashSet<String>,
    prefetched: HashMap<Slot, Value>,
    keyed: HashMap<Slot, Keyed>,
    /// refused keyed calls: their arguments and the refusal
    refused: HashMap<Slot, (Map<String, Value>, Value)>,
    key_tool: HashMap<(String, String), String>,
    key_user: HashMap<(String, String, String), String>,
    windows: HashMap<(String, String), (Instant, u32)>,
    blocked: HashMap<String, Instant>,
    writes: Vec<(String, String, Instant, u64)>,
    seen_access: HashMap<(String, String), Instant>,
    serial: u64,
}

struct Proxy {
    fault: Fault,
    upstream: String,
    http: reqwest::Client,
    data: Dataset,
    memory: Mutex<Memory>,
    control_secret: Option<String>,
}

/// A lock that outlives a panic of its last holder: the proxy's memory, or a batch's own state.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        for (_, name, clause, level, what) in CATALOGUE {
            println!("{name}\t{clause}\t{}\t{what}", if *level == Level::Seed { "seed" } else { "full" });
        }
        for (clause, why) in NOT_EXPRESSIBLE {
            eprintln!("not expressible through a proxy: {clause} ({why})");
        }
        return Ok(());
    }
    let [listen, upstream, name] = args.as_slice() else {
        eprintln!("usage: fault_proxy LISTEN UPSTREAM FAULT   |   fault_proxy --list");
        std::process::exit(2);
    };
    let Some(&(fault, ..)) = CATALOGUE.iter().find(|(_, n, ..)| *n == name.as_str()) else {
        eprintln!("fault_proxy: unknown fault {name} (see --list)");
        std::process::exit(2);
    };
    let dataset = std::env::var("FAULT_DATASET").unwrap_or_else(|_| "fixtures/dataset.json".into());
    let proxy = Arc::new(Proxy {
        fault,
        upstream: format!("http://{upstream}"),
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(std::io::Error::other)?,
        data: Dataset::load(&dataset),
        memory: Mutex::default(),
        control_secret: std::env::var("FAULT_CONTROL_SECRET").ok(),
    });
    let listener = tokio::net::TcpListener::bind(listen).await?;
    eprintln!("fault_proxy: {listen} → {upstream}, fault {fault:?}");
    let app = Router::new().fallback(handle).with_state(proxy);
    axum::serve(listener, app).await
}

async fn handle(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // No limit here: the server's own 1 MiB limit is what LIM-7 is about.
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let rpc = (parts.method == Method::POST)
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten()
        .filter(Value::is_object);
    let mut call = Call { method: parts.method, uri: parts.uri, headers: parts.headers, body, rpc };
    if let Some(answer) = proxy.before(&mut call).await {
        return answer.into_response();
    }
    let mut answer = proxy.forward(&call).await;
    proxy.learn(&call, &answer).await;
    proxy.after(&call, &mut answer).await;
    answer.into_response()
}

impl Proxy {
    async fn forward(&self, call: &Call) -> Answer {
        let path = call.uri.path_and_query().map_or("/", |p| p.as_str());
        let mut headers = call.headers.clone();
        headers.remove(header::CONTENT_LENGTH);
        let names: Vec<_> = headers.keys().filter(|n| hop_by_hop(n.as_str())).cloned().collect();
        for n in names {
            headers.remove(n);
        }
        let request = self
            .http
            .request(call.method.clone(), format!("{}{path}", self.upstream))
            .headers(headers)
            .body(call.body.clone());
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await.unwrap_or_default();
                Answer::new(status, headers, body)
            }
            Err(e) => Answer::plain(StatusCode::BAD_GATEWAY, &format!("fault_proxy: upstream: {e}")),
        }
    }

    /// Who owns `id` (a restaurant for children, an organization for restaurants).
    fn owner(&self, id: &str) -> Option<String> {
        if let Some(o) = lock(&self.memory).owner.get(id) {
            return Some(o.clone());
        }
        self.data.child_restaurant.get(id).or_else(|| self.data.restaurant_org.get(id)).cloned()
    }

    fn exists(&self, id: &str) -> bool {
        self.owner(id).is_some()
            || self.data.orgs.contains(id)
            || lock(&self.memory).org_creator.contains_key(id)
    }

    /// An auth header that has access to `org`: its dataset owner, or whoever created it here.
    fn auth_for_org(&self, org: &str) -> Option<String> {
        if let Some(a) = lock(&self.memory).org_creator.get(org) {
            return Some(a.clone());
        }
        self.data.owner_of_org(org).map(token_header)
    }

    async fn server_now_ms(&self) -> Option<u64> {
        let secret = self.control_secret.as_ref()?;
        let response = self
            .http
            .get(format!("{}/control/clock", self.upstream))
            .header("x-control-secret", secret)
            .send()
            .await
            .ok()?;
        response.json::<Value>().await.ok()?.get("now_ms")?.as_u64()
    }

    async fn current_status(&self, call: &Call) -> Option<String> {
        let tool = call.tool()?;
        let rst = call.arg("restaurant_id")?;
        let (read, args, key) = match tool {
            "update_order_status" => {
                ("get_order", json!({ "restaurant_id": rst, "order_id": call.arg("order_id")? }), "order")
            }
            "set_restaurant_status" => ("get_restaurant", json!({ "restaurant_id": rst }), "restaurant"),
            _ => return None,
        };
        let a = self.forward(&tool_call(call, read, args)).await;
        a.result()?.get("structuredContent")?.get("data")?.get(key)?.get("status")?.as_str().map(String::from)
    }

    /// Bookkeeping on every forwarded answer: owners, cursors issued, keyed results.
    async fn learn(&self, call: &Call, a: &Answer) {
        let Some(tool) = call.tool() else { return };
        if !a.is_success() {
            return;
        }
        let data = &a.result().map(|r| r["structuredContent"]["data"].clone()).unwrap_or_default();
        let server_ms = if self.fault == Fault::Idem6ForgottenAfter1h && is_keyed(tool) && !a.flag("replayed")
        {
            self.server_now_ms().await
        } else {
            None
        };
        let mut m = lock(&self.memory);
        learn_owners(data, &mut m.owner);
        if tool == "create_organization"
            && let Some(org) = data["organization"]["id"].as_str()
        {
            m.org_creator.insert(org.to_owned(), call.auth());
        }
        if let Some(cursor) = a.next_cursor() {
            let issued = Issued {
                tool: tool.to_owned(),
                filters: call.filters(),
                limit: call.page_limit(),
                auth: call.auth(),
            };
            m.cursors.insert(cursor, issued);
        }
        if let Some(r) = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id")) {
            m.seen_access.insert((call.auth(), r), Instant::now());
        }
        if is_keyed(tool)
            && !a.flag("replayed")
            && let Some(key) = call.arg_str("idempotency_key")
        {
            let keyed = Keyed {
                args: call.args(),
                raw_args: raw_arguments(&call.body),
                result: a.result().cloned().unwrap_or_default(),
                request_id: a.result().and_then(request_id).unwrap_or_default(),
                server_ms,
            };
            m.keyed.entry((call.auth(), tool.to_owned(), key)).or_insert(keyed);
        }
    }
}

fn learn_owners(v: &Value, owner: &mut HashMap<String, String>) {
    match v {
        Value::Object(o) => {
            if let Some(id) = o.get("id").and_then(Value::as_str) {
                let parent = if id.starts_with("rst_") { "organization_id" } else { "restaurant_id" };
                if let Some(p) = o.get(parent).and_then(Value::as_str) {
                    owner.insert(id.to_owned(), p.to_owned());
                }
            }
            o.values().for_each(|x| learn_owners(x, owner));
        }
        Value::Array(a) => a.iter().for_each(|x| learn_owners(x, owner)),
        _ => {}
    }
}

impl Proxy {
    /// Request-side rewrites; `Some` answers without asking the server (or after asking it
    /// something else). Each contract area's module holds its faults' rewrites.
    async fn before(&self, call: &mut Call) -> Option<Answer> {
        if self.fault.in_batch4() {
            return self.before_batch4(call).await;
        }
        if self.fault.in_batch5() {
            return self.before_batch5(call).await;
        }
        if self.fault.in_batch6() {
            return self.before_batch6(call).await;
        }
        if self.fault.in_batch7() {
            return self.before_batch7(call).await;
        }
        if self.fault.in_batch8() {
            return self.before_batch8(call).await;
        }
        if self.fault.in_batch9() {
            return self.before_batch9(call).await;
        }
        if self.fault.in_batch10() {
            return self.before_batch10(call).await;
        }
        if self.fault.in_batch11() {
            return self.before_batch11(call).await;
        }
        if self.fault.in_batch12() {
            return self.before_batch12(call).await;
        }
        match self.fault.area() {
            "PROTO" => self.before_protocol(call).await,
            "PAG" => self.before_pagination(call).await,
            "LIM" => self.before_limits(call).await,
            "PRE" => self.before_preconditions(call).await,
            "IDEM" => self.before_idempotency(call).await,
            "AUTH" => self.before_auth(call).await,
            "ABS" => self.before_absent(call).await,
            _ => None,
        }
    }

    /// Answer-side rewrites: each contract area's module holds its faults'; a tools/list answer
    /// is rewritten first (`catalogue`).
    async fn after(&self, call: &Call, a: &mut Answer) {
        let method = call.rpc_method().map(String::from);
        if method.as_deref() == Some("tools/list") {
            self.rewrite_tools_list(a);
        }
        if self.fault.in_batch4() {
            return self.after_batch4(call, a).await;
        }
        if self.fault.in_batch5() {
            return self.after_batch5(call, a).await;
        }
        if self.fault.in_batch6() {
            return self.after_batch6(call, a).await;
        }
        if self.fault.in_batch7() {
            return self.after_batch7(call, a).await;
        }
        if self.fault.in_batch8() {
            return self.after_batch8(call, a).await;
        }
        if self.fault.in_batch9() {
            return self.after_batch9(call, a).await;
        }
        if self.fault.in_batch10() {
            return self.after_batch10(call, a).await;
        }
        if self.fault.in_batch11() {
            return self.after_batch11(call, a).await;
        }
        if self.fault.in_batch12() {
            return self.after_batch12(call, a).await;
        }
        match self.fault.area() {
            "PROTO" => self.after_protocol(call, a).await,
            "ENV" => self.after_envelope(call, a).await,
            "PAG" => self.after_pagination(call, a).await,
            "LIM" => self.after_limits(call, a).await,
            "PRE" => self.after_preconditions(call, a).await,
            "IDEM" => self.after_idempotency(call, a).await,
            "AUTH" => self.after_auth(call, a).await,
            "SEC" => self.after_security(a).await,
            _ => {}
        }
    }
}
