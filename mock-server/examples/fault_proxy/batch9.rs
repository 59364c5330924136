//! Batch 9 of the outside faults (`b9-…`), written from docs/CONTRACT.md, its French seed,
//! docs/DECISIONS.md, docs/CONTROL_API.md, the reference server's source and the MCP
//! specification alone, without reading the suite: a third on surfaces other than a first-page
//! tools/call (initialize, prompts/get, pages reached through a cursor, another protocol revision's
//! errors and keys, a resource read past its deadline, the protected-resource metadata, a resource
//! template, an internal error's event stream), a third on edges (a default serialized as 0, a
//! forwarding header, a category's spelling, a 64-bit limit, a cursor's unsigned part, a bound
//! applied to one granularity, a body measured after parsing, a lifecycle's last step, a key
//! given as a number, an Authorization scheme, an empty scope list), a third on wrong data in a
//! right envelope (a category that depends on the tool, page-number cursors, a message cursor
//! that assumes the default page, rate windows per restaurant, a read cache per user, terminal
//! orders reopened, a replay's minted ID, a claim that outlives its result, a role taken from
//! another organization, a pause that rejects orders).
//! Names are opaque (`b9-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here; what the
//! batch remembers between calls is its own (`B9`), bounded, beside the proxy's `Memory`.

use std::sync::LazyLock;

use chataigne_contract::Role;
use chataigne_contract::time::{civil_from_days, days_from_civil, format_date, format_timestamp, parse_date};

use super::*;

#[derive(Default)]
struct B9 {
    /// cursor → the request_id of its walk's first page (b9-03)
    walk_ids: HashMap<String, String>,
    /// cursor → (page number it names, the real offset it continues at, exact) (b9-22)
    pages: HashMap<String, (usize, usize, bool)>,
    /// (auth, tool, restaurant) → (window start, calls) (b9-24)
    windows: HashMap<(String, String, String), (Instant, u32)>,
    /// (user, order) → (the order as that user last read it, when) (b9-25)
    order_cache: HashMap<(String, String), (Value, Instant)>,
    /// order → the status the proxy's reopening moves gave it (b9-26)
    reopened: HashMap<String, String>,
    /// keyed slot → server ms of the call that ran under it (b9-28)
    claimed_at: HashMap<Slot, i64>,
    /// restaurant → instant (server clock) its last pause rejected its received orders (b9-30)
    paused_at: HashMap<String, String>,
}

static STATE: LazyLock<Mutex<B9>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B9> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep a map bounded: past `n` entries it starts again (faults only need recent entries).
fn bound<K, V>(m: &mut HashMap<K, V>, n: usize) {
    if m.len() > n {
        m.clear();
    }
}

impl Fault {
    /// A fault of this batch (`b9-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch9(self) -> bool {
        CATALOGUE.iter().any(|(f, name, ..)| *f == self && name.starts_with("b9-"))
    }
}

const RESTAURANT_URI: &str = "chataigne://restaurants/";
const EXPORT_URI: &str = "chataigne://exports/";
const EXPORT_SUFFIX: &str = "/orders.csv";
const METADATA: &str = "/.well-known/oauth-protected-resource";
const MIB: usize = chataigne_contract::MAX_BODY_BYTES;
const KEY_MIN: usize = chataigne_contract::tools::IDEMPOTENCY_KEY_MIN;
const KEY_MAX: usize = chataigne_contract::tools::IDEMPOTENCY_KEY_MAX;
/// Marks a list_orders call whose status filter b9-30 widened.
const WIDENED: &str = "x-fault-b9-widened";
/// The revision without sessions (b9-06).
const STATELESS: &str = "2026-07-28";
/// The revision whose tool errors lose their structured content (b9-04).
const OLDEST_REVISION: &str = "2025-06-18";
/// How long a user's read of an order is cached (b9-25).
const ORDER_CACHE_TTL: Duration = Duration::from_secs(30);
/// A rate window (b9-24).
const WINDOW: Duration = Duration::from_secs(60);
/// How long a stored result is kept (b9-28), in ms of the server's clock.
const RETENTION_MS: i64 = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
/// The longest analytics range the week and month series are computed over (b9-15).
const MAX_SPLIT_DAYS: i64 = 3660;

fn refusal(call: &Call, code: ErrorCode) -> Answer {
    Answer::rpc(call, "result", error_result(code, &new_request_id()))
}

fn slot(call: &Call, t: &str) -> Option<Slot> {
    Some((call.auth(), t.to_owned(), call.arg_str("idempotency_key")?))
}

fn is_endpoint(call: &Call) -> bool {
    call.uri.path() == "/mcp"
}

fn header_str(call: &Call, name: &str) -> Option<String> {
    call.headers.get(name).and_then(|v| v.to_str().ok()).map(String::from)
}

fn revision(call: &Call) -> Option<String> {
    header_str(call, "mcp-protocol-version")
}

fn role_of(name: &str) -> Option<Role> {
    match name {
        "viewer" => Some(Role::Viewer),
        "staff" => Some(Role::Staff),
        "manager" => Some(Role::Manager),
        "owner" => Some(Role::Owner),
        _ => None,
    }
}

/// The timestamp a list's keyset walk is ordered by (b9-14).
fn key_field(tool: &str) -> &'static str {
    match tool {
        "search_transcripts" => "call_started_at",
        "get_conversation" => "sent_at",
        _ => "created_at",
    }
}

/// The page-size argument of a list and its largest value.
fn size_arg(tool: &str) -> (&'static str, usize) {
    if tool == "get_conversation" {
        ("message_limit", chataigne_contract::MAX_MESSAGE_LIMIT)
    } else {
        ("limit", chataigne_contract::MAX_LIMIT)
    }
}

fn one_step_forward(from: &str, to: &str) -> bool {
    let lifecycle = chataigne_contract::tools::ORDER_LIFECYCLE;
    let step = |s: &str| lifecycle.iter().position(|x| *x == s);
    matches!((step(from), step(to)), (Some(a), Some(b)) if b == a + 1)
}

fn csv_field(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text }
}

/// An event of a `text/event-stream` answer.
fn sse_event(v: &Value) -> String {
    format!("event: message\ndata: {}\n\n", serde_json::to_string(v).unwrap_or_default())
}

/// The structured log an error-reporting layer would forward to the client (b9-09).
fn leaked_log() -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "error", "logger": "chataigne::tools",
        "data": {
            "error": "thread 'tokio-runtime-worker' panicked at src/store/orders.rs:214:38: called `Result::unwrap()` on an `Err` value: Db(\"connection to postgres://chataigne:s3cret@db.internal:5432/chataigne refused\")",
            "backtrace": ["0: chataigne::store::orders::load at ./src/store/orders.rs:214:38",
                          "1: chataigne::tools::orders::get at ./src/tools/orders.rs:57:13"],
        },
    } })
}

impl Proxy {
    fn persona_of9(&self, call: &Call) -> Option<Persona> {
        self.data.persona(&call.token()).cloned()
    }

    /// The user behind a call: the persona's, else the auth header itself.
    fn user_of9(&self, call: &Call) -> String {
        self.persona_of9(call).map_or_else(|| call.auth(), |p| p.user)
    }

    async fn now_ms9(&self) -> i64 {
        match self.server_now_ms().await {
            Some(ms) => ms as i64,
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        }
    }

    /// Organizations created through the proxy by `user` (who owns them).
    fn created_by(&self, user: &str) -> Vec<String> {
        let created: Vec<(String, String)> =
            lock(&self.memory).org_creator.iter().map(|(o, a)| (o.clone(), a.clone())).collect();
        created
            .into_iter()
            .filter(|(_, auth)| {
                let token = auth.strip_prefix("Bearer ").unwrap_or_default();
                self.data.persona(token).is_some_and(|p| p.user == user)
            })
            .map(|(o, _)| o)
            .collect()
    }

    /// The caller's role on a restaurant as the dataset and the proxy's own creations give it
    /// (membership current or not: a probe as the caller tells that).
    fn role_on(&self, call: &Call, rst: &str) -> Option<Role> {
        let p = self.persona_of9(call)?;
        let org = self.owner(rst)?;
        if self.created_by(&p.user).contains(&org) {
            return Some(Role::Owner);
        }
        let m = self.data.membership(&p.user, &org)?;
        let covers = m.restaurants.as_ref().is_none_or(|r| r.iter().any(|x| x == rst));
        (!m.revoked && covers).then(|| role_of(&m.role)).flatten()
    }

    /// Request-side rewrites of batch 9 (`Proxy::before`).
    pub(crate) async fn before_batch9(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        match self.fault {
            B906Idem2 if is_keyed(t) && revision(call).as_deref() == Some(STATELESS) => {
                let key = call.arg_str("idempotency_key")?;
                if (KEY_MIN..=KEY_MAX).contains(&key.chars().count()) {
                    // The key's slot includes the session, and a stateless request has a new one.
                    let scoped = format!("s{}", random_alnum(31));
                    call.set_args(|a| {
                        a.insert("idempotency_key".into(), json!(scoped));
                    });
                }
            }
            B911Proto5 => {
                let forwarded = header_str(call, "x-forwarded-host")?;
                let host = forwarded.split(',').next().unwrap_or_default().trim().to_owned();
                // The Host check reads the forwarding header when there is one.
                if let Ok(v) = HeaderValue::from_str(&host) {
                    call.headers.insert(header::HOST, v);
                }
            }
            B913Pag2 if list_key(t).is_some() => {
                let n = call.arg("limit")?.as_u64()?;
                if n > u64::from(u32::MAX) {
                    // Read as a 64-bit integer, then cast to the page size's 32 bits.
                    call.set_args(|a| {
                        a.insert("limit".into(), json!(n as u32));
                    });
                }
            }
            B914Pag5 if items_key(t).is_some() => return self.position_unsigned(call, t).await,
            B916Lim7 if call.method == Method::POST && is_endpoint(call) && call.body.len() > MIB => {
                let rpc = call.rpc.as_ref()?;
                let compact = serde_json::to_vec(rpc).ok()?;
                if compact.len() <= MIB {
                    // The limit is checked on the message as parsed, re-serialized.
                    call.body = Bytes::from(compact);
                }
            }
            B917Pre3 if t == "update_order_status" => {
                if call.arg_str("status").as_deref() != Some("completed")
                    || call.arg_str("expected_status").as_deref() != Some("ready")
                {
                    return None;
                }
                let rst = call.arg_str("restaurant_id")?;
                let current = self.current_status(call).await?;
                if current == "ready" && self.role_on(call, &rst).is_some_and(|r| r >= Role::Staff) {
                    // The lifecycle's steps are walked with one window too few: ready has none.
                    return Some(refusal(call, ErrorCode::OrderStatusPreconditionFailed));
                }
            }
            B918Idem1 if is_keyed(t) => {
                let key = call.arg("idempotency_key")?;
                if key.is_number() {
                    // The key is read with a lenient string conversion.
                    call.set_args(|a| {
                        a.insert("idempotency_key".into(), json!(key.to_string()));
                    });
                }
            }
            B919Auth1 if is_endpoint(call) => {
                let auth = call.auth();
                let scheme = auth.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
                if !auth.is_empty() && scheme != "bearer" {
                    // The header parser refuses other schemes before the bearer check runs.
                    let mut headers = HeaderMap::new();
                    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    let body = json!({ "error": "invalid_request",
                        "error_description": "the Authorization header must use the Bearer scheme" });
                    let mut a = Answer::new(
                        StatusCode::BAD_REQUEST,
                        headers,
                        Bytes::from(serde_json::to_vec(&body).unwrap_or_default()),
                    );
                    a.set_header_id(&new_request_id());
                    return Some(a);
                }
            }
            B922Pag4 if list_key(t).is_some() => return self.page_number_cursor(call, t).await,
            B924Lim2 if kind(t).is_some() => {
                let rst = call.arg_str("restaurant_id").unwrap_or_default();
                let mut s = state();
                bound(&mut s.windows, 10_000);
                let w = s.windows.entry((call.auth(), t.to_owned(), rst)).or_insert((Instant::now(), 0));
                if w.0.elapsed() >= WINDOW {
                    *w = (Instant::now(), 0);
                }
                w.1 += 1;
            }
            B926Pre3 if t == "update_order_status" => return self.reopening_move(call).await,
            B928Idem6 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let at = state().claimed_at.get(&slot).copied()?;
                if self.now_ms9().await - at >= RETENTION_MS {
                    // The stored result expired; its claim did not, and reads as still running.
                    return Some(refusal(call, ErrorCode::OperationInProgress));
                }
            }
            B930Abs2 if t == "update_order_status" => return self.rejected_by_pause(call).await,
            B930Abs2 if t == "list_orders" => paused_filter(call),
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 9 (`Proxy::after`).
    pub(crate) async fn after_batch9(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let m = method.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        let replayed = success && a.flag("replayed");
        match self.fault {
            B901Proto1 if m == "initialize" => {
                let asked = call.rpc.as_ref().and_then(|r| r["params"]["protocolVersion"].as_str());
                let given = a.result().and_then(|r| r["protocolVersion"].as_str());
                if let (Some(asked), Some(given)) = (asked, given)
                    && asked != given
                {
                    // A version the server does not serve is refused instead of negotiated.
                    let error = json!({ "code": -32602, "message": "Unsupported protocol version",
                        "data": { "supported": chataigne_contract::PROTOCOL_VERSIONS, "requested": asked } });
                    *a = Answer::rpc(call, "error", error);
                }
            }
            B902Proto2 if m == "prompts/get" => {
                let error = a.json.as_ref().and_then(|j| j.get("error"));
                if error.and_then(|e| e["message"].as_str()) != Some("unknown prompt") {
                    return;
                }
                self.default_prompt(call, a).await;
            }
            B903Env2 if success && items_key(t).is_some() => {
                let Some(rid) = a.result().and_then(request_id) else { return };
                let walk = call.arg_str("cursor").and_then(|c| state().walk_ids.get(&c).cloned());
                if let Some(w) = &walk {
                    // The walk's request_id travels with its cursor and is answered again.
                    a.set_request_id(w);
                }
                if let Some(next) = a.next_cursor() {
                    let mut s = state();
                    bound(&mut s.walk_ids, 10_000);
                    s.walk_ids.insert(next, walk.unwrap_or(rid));
                }
            }
            B904Env4 if code.is_some() && revision(call).as_deref() == Some(OLDEST_REVISION) => {
                if let Some(r) = a.result_mut().and_then(Value::as_object_mut) {
                    // Structured output is sent for revisions after 2025-06-18 only.
                    r.remove("structuredContent");
                }
            }
            B905Lim4 if m == "resources/read" => {
                let timed_out = a.json.as_ref().and_then(|j| j["error"]["data"]["error"]["code"].as_str())
                    == Some(ErrorCode::ToolTimeout.as_str());
                if timed_out {
                    self.resource_read_waits(call, a).await;
                }
            }
            B907Auth1 if call.method == Method::GET && call.uri.path().starts_with(METADATA) => {
                if let Some(j) = a.json.as_mut()
                    && let Some(servers) = j["authorization_servers"].as_array_mut()
                {
                    for s in servers.iter_mut() {
                        if let Some(issuer) = s.as_str() {
                            // The authorization endpoint is named where the issuer belongs.
                            *s = json!(format!("{}/oauth/authorize", issuer.trim_end_matches('/')));
                        }
                    }
                    a.changed = true;
                }
            }
            B908Abs1 if m == "resources/templates/list" => {
                if let Some(list) = a.result_mut().and_then(|r| r["resourceTemplates"].as_array_mut()) {
                    list.push(json!({
                        "uriTemplate": format!("{EXPORT_URI}{{restaurant_id}}{EXPORT_SUFFIX}"),
                        "name": "orders-export", "title": "A restaurant's orders (CSV)",
                        "description": "Every order of a restaurant, one line each, for spreadsheets",
                        "mimeType": "text/csv",
                    }));
                }
            }
            B908Abs1 if m == "resources/read" && a.status == StatusCode::OK => {
                self.orders_export(call, a).await
            }
            B909Sec2 if code == Some(ErrorCode::InternalError) => {
                let accepts_stream =
                    header_str(call, "accept").is_some_and(|v| v.contains("text/event-stream"));
                let Some(answer) = a.json.clone().filter(|_| accepts_stream) else { return };
                // The error-reporting layer also forwards the error's log record to the client.
                let body = format!("{}{}", sse_event(&leaked_log()), sse_event(&answer));
                let mut headers = a.headers.clone();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                headers.remove(header::CONTENT_LENGTH);
                *a = Answer::new(StatusCode::OK, headers, Bytes::from(body));
            }
            B910Proto4 if code.is_some() && kind(t).is_some() => {
                if let Some(e) = a.error_mut()
                    && !e.contains_key("retry_after_ms")
                {
                    // A field with a default, serialized whatever its value.
                    e.insert("retry_after_ms".into(), json!(0));
                }
            }
            B912Env5 if code == Some(ErrorCode::RateLimited) => {
                set_error(a, "category", json!("rate_limited"));
            }
            B915Lim1 if t == "get_analytics" && code == Some(ErrorCode::InvalidArguments) => {
                self.long_range_served(call, a).await
            }
            B920Auth3 if code == Some(ErrorCode::ScopeRequired) => {
                let Some(p) = self.persona_of9(call).filter(|p| p.scopes.is_empty()) else { return };
                let Some(scope) = ToolName::parse(t).map(ToolName::scope) else { return };
                // An empty scope list is read like a token without a scope claim: no restriction.
                let Some(sibling) = self.data.sibling(&p, Some(scope)) else { return };
                let b = self.forward(&call.as_auth(&token_header(sibling))).await;
                if b.code() != Some(ErrorCode::ScopeRequired) {
                    *a = answer_as(call, b);
                }
            }
            B921Env5 if code == Some(ErrorCode::ResourceNotFound) && kind(t).is_some_and(Kind::is_write) => {
                // The write path raises its own "unknown ID" error, filed as a validation error.
                set_error(a, "category", json!("validation"));
            }
            B922Pag4 if success && list_key(t).is_some() => {
                let Some(next) = a.next_cursor() else { return };
                let len = a.items(t).map_or(0, Vec::len);
                let truncated = a.flag("truncated");
                let mut s = state();
                let (page, offset, exact) =
                    call.arg_str("cursor").and_then(|c| s.pages.get(&c).copied()).unwrap_or((0, 0, false));
                bound(&mut s.pages, 10_000);
                s.pages.insert(next, (page + 1, offset + len, exact || truncated));
            }
            B923Pag8 if success && t == "get_conversation" => {
                self.message_cursor_after_default(call, a).await
            }
            B924Lim2 if code == Some(ErrorCode::RateLimited) => self.window_per_restaurant(call, a, t).await,
            B925Pre2 if success && t == "update_order_status" => {
                let Some(order) = call.arg_str("order_id") else { return };
                let key = (self.user_of9(call), order);
                // The write invalidates its writer's cached read, and nobody else's.
                state().order_cache.remove(&key);
            }
            B925Pre2 if success && t == "get_order" => self.cached_order(call, a),
            B926Pre3 if success && matches!(t, "get_order" | "list_orders") => {
                let v = state().reopened.clone();
                show_statuses(call, a, t, |o| o["id"].as_str().and_then(|id| v.get(id)).cloned());
            }
            B927Idem2 if replayed && is_keyed(t) => {
                if let Some(r) = a.result_mut() {
                    let data = &mut r["structuredContent"]["data"];
                    for (key, prefix) in [
                        ("organization", "org"),
                        ("restaurant", "rst"),
                        ("message", "msg"),
                        ("instruction", "ins"),
                    ] {
                        if data[key].is_object() {
                            // The stored result is rendered again, minting its record's ID anew.
                            data[key]["id"] = json!(format!("{prefix}_{}", random_alnum(20)));
                        }
                    }
                }
            }
            B928Idem6 if success && !replayed && is_keyed(t) => {
                let Some(slot) = slot(call, t) else { return };
                let now = self.now_ms9().await;
                let mut s = state();
                bound(&mut s.claimed_at, 10_000);
                s.claimed_at.entry(slot).or_insert(now);
            }
            B929Auth6 if code == Some(ErrorCode::ResourceForbidden) => self.highest_role(call, a, t).await,
            B930Abs2 if success && t == "set_restaurant_status" => {
                if call.arg_str("status").as_deref() != Some("paused")
                    || call.arg_str("expected_status").as_deref() != Some("open")
                {
                    return;
                }
                let Some(rst) = call.arg_str("restaurant_id") else { return };
                let at = format_timestamp(self.now_ms9().await.div_euclid(1000));
                let mut s = state();
                bound(&mut s.paused_at, 10_000);
                s.paused_at.insert(rst, at);
            }
            B930Abs2 if success && matches!(t, "get_order" | "list_orders") => {
                let paused = state().paused_at.clone();
                let asked = match call.headers.contains_key(WIDENED) {
                    // The filter as the caller sent it, before `paused_filter` widened it.
                    true => call.with_args(|x| {
                        if let Some(f) = x.get_mut("status").and_then(Value::as_array_mut) {
                            f.pop();
                        }
                    }),
                    false => call.clone(),
                };
                show_statuses(&asked, a, t, |o| rejected_by(&paused, o).then(|| "rejected".to_owned()));
            }
            _ => {}
        }
    }

    /// b9-02: an unknown prompt falls back to the first prompt the server lists.
    async fn default_prompt(&self, call: &Call, a: &mut Answer) {
        let mut list = call.clone();
        let rpc =
            json!({ "jsonrpc": "2.0", "id": format!("fault-{}", random_alnum(8)), "method": "prompts/list" });
        list.body = Bytes::from(serde_json::to_vec(&rpc).unwrap_or_default());
        list.rpc = Some(rpc);
        let listed = self.forward(&list).await;
        let Some(first) = listed.result().and_then(|r| r["prompts"][0]["name"].as_str()).map(String::from)
        else {
            return;
        };
        let mut get = call.clone();
        let Some(rpc) = get.rpc.as_mut() else { return };
        rpc["params"]["name"] = json!(first);
        get.body = Bytes::from(serde_json::to_vec(rpc).unwrap_or_default());
        if get.headers.contains_key("mcp-name")
            && let Ok(v) = HeaderValue::from_str(&first)
        {
            get.headers.insert("mcp-name", v);
        }
        let b = self.forward(&get).await;
        *a = answer_as(call, b);
    }

    /// b9-05: a restaurant's resource is read outside the tool's deadline: the read waits for the
    /// store and answers the restaurant.
    async fn resource_read_waits(&self, call: &Call, a: &mut Answer) {
        let Some(uri) = call.rpc.as_ref().and_then(|r| r["params"]["uri"].as_str()).map(String::from) else {
            return;
        };
        let Some(rst) = uri.strip_prefix(RESTAURANT_URI).map(String::from) else { return };
        let Some(org) = self.owner(&rst) else { return };
        // As long as the slow read takes (what the control API injected), when it can be known.
        if let Some(wait) = self.injected_latency("get_restaurant").await {
            tokio::time::sleep(wait).await;
        }
        let mut cursor: Option<String> = None;
        for _ in 0..20 {
            let mut args = json!({ "organization_id": org, "limit": 50 });
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let b = self.forward(&tool_call(call, "list_restaurants", args)).await;
            if let Some(r) =
                b.items("list_restaurants").and_then(|v| v.iter().find(|r| r["id"] == rst.as_str()))
            {
                let envelope = json!({ "data": { "restaurant": r }, "meta": fresh_meta() });
                let contents =
                    json!([{ "uri": uri, "mimeType": "application/json", "text": envelope.to_string() }]);
                *a = Answer::rpc(call, "result", json!({ "contents": contents }));
                return;
            }
            cursor = b.next_cursor();
            if cursor.is_none() {
                return;
            }
        }
    }

    /// What the control API injected on `tool` beyond its read deadline, if it can be read.
    async fn injected_latency(&self, tool: &str) -> Option<Duration> {
        let secret = self.control_secret.as_ref()?;
        let get = |path: &str| {
            self.http
                .get(format!("{}/control/{path}", self.upstream))
                .header("x-control-secret", secret)
                .send()
        };
        let faults: Value = get("faults").await.ok()?.json().await.ok()?;
        let deadlines: Value = get("deadlines").await.ok()?.json().await.ok()?;
        let latency =
            faults["faults"].as_array()?.iter().find(|f| f["tool"] == tool)?["latency_ms"].as_u64()?;
        let deadline = deadlines["read_ms"].as_u64().unwrap_or(0);
        Some(Duration::from_millis(latency.saturating_sub(deadline).min(30_000)))
    }

    /// b9-08: the export template's read: every order of the restaurant, as CSV.
    async fn orders_export(&self, call: &Call, a: &mut Answer) {
        let Some(uri) = call.rpc.as_ref().and_then(|r| r["params"]["uri"].as_str()).map(String::from) else {
            return;
        };
        let Some(rst) = uri.strip_prefix(EXPORT_URI).and_then(|r| r.strip_suffix(EXPORT_SUFFIX)) else {
            return;
        };
        let columns = ["id", "status", "channel", "customer_name", "total_cents", "currency", "created_at"];
        let mut lines = vec![columns.join(",")];
        let mut cursor: Option<String> = None;
        for page in 0..50 {
            let mut args = json!({ "restaurant_id": rst, "limit": 50 });
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let b = self.forward(&tool_call(call, "list_orders", args)).await;
            let Some(orders) = b.items("list_orders") else {
                if page == 0 {
                    let error =
                        json!({ "code": -32002, "message": "resource not found", "data": { "uri": uri } });
                    *a = Answer::rpc(call, "error", error);
                }
                return;
            };
            for o in orders {
                lines.push(columns.iter().map(|c| csv_field(&o[*c])).collect::<Vec<_>>().join(","));
            }
            cursor = b.next_cursor();
            if cursor.is_none() {
                break;
            }
        }
        let contents = json!([{ "uri": uri, "mimeType": "text/csv", "text": lines.join("\n") + "\n" }]);
        *a = Answer::rpc(call, "result", json!({ "contents": contents }));
    }

    /// The call's page that starts at `offset` items into its walk (same filters), asked with
    /// `size` items: a real cursor positioned there is found by walking. `Err` holds the answer
    /// to give when the walk cannot be followed (a refusal); `Ok(None)` means the list ended.
    async fn cursor_at(&self, call: &Call, t: &str, offset: usize) -> Result<Option<String>, Answer> {
        let (arg, max) = size_arg(t);
        let (mut pos, mut cursor) = (0usize, None::<String>);
        while pos < offset {
            let step = (offset - pos).min(max);
            let probe = call.with_args(|x| {
                x.insert(arg.into(), json!(step));
                match &cursor {
                    Some(c) => x.insert("cursor".into(), json!(c)),
                    None => x.remove("cursor"),
                };
            });
            let b = self.forward(&probe).await;
            let Some(n) = b.items(t).map(Vec::len) else { return Err(answer_as(call, b)) };
            if n == 0 {
                return Ok(None);
            }
            pos += n;
            cursor = b.next_cursor();
            if cursor.is_none() {
                return Ok(None);
            }
        }
        Ok(cursor)
    }

    /// A page at a real cursor (or the list's end) with the caller's size, as `call`'s answer.
    async fn page_at(&self, call: &Call, t: &str, cursor: Option<String>, ended: bool) -> Answer {
        if ended {
            let Some(key) = items_key(t) else { return refusal(call, ErrorCode::CursorInvalid) };
            let mut data = Map::new();
            data.insert(key.into(), json!([]));
            let result = success_result(Value::Object(data), fresh_meta(), &format!("0 {key}"));
            return Answer::rpc(call, "result", result);
        }
        let probe = call.with_args(|x| {
            match &cursor {
                Some(c) => x.insert("cursor".into(), json!(c)),
                None => x.remove("cursor"),
            };
        });
        answer_as(call, self.forward(&probe).await)
    }

    /// b9-14: the cursor's MAC covers its binding, not its position: a cursor whose position was
    /// re-encoded (its tag and binding kept) is served from that position.
    async fn position_unsigned(&self, call: &Call, t: &str) -> Option<Answer> {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let cursor = call.arg_str("cursor")?;
        let decode = |c: &str| -> Option<(Value, String)> {
            let (body, tag) = c.split_once('.')?;
            let payload: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()?;
            Some((payload, tag.to_owned()))
        };
        let (forged, tag) = decode(&cursor)?;
        let issued: Vec<String> = lock(&self.memory).cursors.keys().cloned().collect();
        if issued.contains(&cursor) {
            return None;
        }
        let original = issued.into_iter().find(|c| {
            decode(c).is_some_and(|(p, g)| g == tag && p["b"] == forged["b"] && p["v"] == forged["v"])
        })?;
        let (ts, id) = (forged["ts"].as_str()?.to_owned(), forged["id"].as_str()?.to_owned());
        // The original cursor with these arguments must pass: the binding is the call's.
        let check = self
            .forward(&call.with_args(|x| {
                x.insert("cursor".into(), json!(original));
            }))
            .await;
        if !check.is_success() {
            return None;
        }
        // Where the forged position falls in the walk: after every item at or above it.
        let (arg, max) = size_arg(t);
        let field = key_field(t);
        let (mut offset, mut next) = (0usize, None::<String>);
        for _ in 0..100 {
            let probe = call.with_args(|x| {
                x.insert(arg.into(), json!(max));
                match &next {
                    Some(c) => x.insert("cursor".into(), json!(c)),
                    None => x.remove("cursor"),
                };
            });
            let b = self.forward(&probe).await;
            let items = b.items(t)?;
            let above = items
                .iter()
                .take_while(|o| {
                    let key = (o[field].as_str().unwrap_or_default(), o["id"].as_str().unwrap_or_default());
                    key >= (ts.as_str(), id.as_str())
                })
                .count();
            offset += above;
            next = b.next_cursor();
            if above < items.len() || next.is_none() {
                break;
            }
        }
        Some(match self.cursor_at(call, t, offset).await {
            Err(refused) => refused,
            Ok(c) => self.page_at(call, t, c.clone(), c.is_none() && offset > 0).await,
        })
    }

    /// b9-22: cursors hold a page number; a page starts at page × the limit it is asked with.
    async fn page_number_cursor(&self, call: &Call, t: &str) -> Option<Answer> {
        let cursor = call.arg_str("cursor")?;
        let (page, offset, exact) = state().pages.get(&cursor).copied()?;
        let limit = call
            .arg("limit")
            .and_then(|v| v.as_u64())
            .map_or(chataigne_contract::DEFAULT_LIMIT, |n| n as usize);
        let start = page * limit;
        if exact || start == offset || !(1..=chataigne_contract::MAX_LIMIT).contains(&limit) {
            return None;
        }
        let b = match self.cursor_at(call, t, start).await {
            Err(refused) => return Some(refused),
            Ok(c) => self.page_at(call, t, c.clone(), c.is_none()).await,
        };
        if let Some(next) = b.next_cursor() {
            let len = b.items(t).map_or(0, Vec::len);
            let mut s = state();
            bound(&mut s.pages, 10_000);
            s.pages.insert(next, (page + 1, start + len, b.flag("truncated")));
        }
        Some(b)
    }

    /// b9-23: the next message page's cursor is made for a default page of 50, whatever
    /// message_limit was.
    async fn message_cursor_after_default(&self, call: &Call, a: &mut Answer) {
        let default = chataigne_contract::DEFAULT_MESSAGE_LIMIT as u64;
        let Some(asked) = call.arg("message_limit").and_then(|v| v.as_u64()) else { return };
        if asked == default || a.next_cursor().is_none() {
            return;
        }
        let probe = call.with_args(|x| {
            x.insert("message_limit".into(), json!(default));
        });
        let b = self.forward(&probe).await;
        if !b.is_success() {
            return;
        }
        let next = b.next_cursor();
        if let Some(meta) = a.meta_mut() {
            match next {
                Some(c) => meta.insert("next_cursor".into(), json!(c)),
                None => meta.remove("next_cursor"),
            };
        }
    }

    /// b9-24: rate windows per (client, user, tool, restaurant): a call refused for the pair's
    /// window is served while its restaurant's own window has room (through the pair's other OAuth
    /// client, which the reference counts apart).
    async fn window_per_restaurant(&self, call: &Call, a: &mut Answer, t: &str) {
        let Some(limit) = kind(t).map(Kind::rate_per_minute) else { return };
        let rst = call.arg_str("restaurant_id").unwrap_or_default();
        let used = state().windows.get(&(call.auth(), t.to_owned(), rst)).map_or(0, |w| w.1);
        if used > limit {
            return;
        }
        let Some(p) = self.persona_of9(call) else { return };
        let Some(scope) = ToolName::parse(t).map(ToolName::scope) else { return };
        let others: Vec<Persona> = self
            .data
            .personas
            .iter()
            .filter(|o| o.user == p.user && o.client != p.client && o.audience.is_none())
            .filter(|o| o.scopes.iter().any(|s| s == scope))
            .cloned()
            .collect();
        for other in others {
            let b = self.forward(&call.as_auth(&token_header(&other))).await;
            if b.code() != Some(ErrorCode::RateLimited) {
                *a = answer_as(call, b);
                return;
            }
        }
    }

    /// b9-25: get_order answers are cached 30 s per user.
    fn cached_order(&self, call: &Call, a: &mut Answer) {
        let Some(order) = call.arg_str("order_id") else { return };
        let key = (self.user_of9(call), order);
        let mut s = state();
        s.order_cache.retain(|_, (_, at)| at.elapsed() < ORDER_CACHE_TTL);
        match s.order_cache.get(&key).map(|(o, _)| o.clone()) {
            Some(cached) => {
                let fresh =
                    a.result().map(|r| r["structuredContent"]["data"]["order"].clone()).unwrap_or_default();
                if fresh == cached {
                    return;
                }
                if let Some(r) = a.result_mut() {
                    r["structuredContent"]["data"]["order"] = cached.clone();
                }
                if let (Some(new), Some(old), Some(text)) =
                    (fresh["status"].as_str(), cached["status"].as_str(), a.text_mut())
                    && let Some(t) = text.as_str()
                {
                    *text = json!(t.replace(&format!(": {new},"), &format!(": {old},")));
                }
            }
            None => {
                bound(&mut s.order_cache, 10_000);
                let fresh =
                    a.result().map(|r| r["structuredContent"]["data"]["order"].clone()).unwrap_or_default();
                s.order_cache.insert(key, (fresh, Instant::now()));
            }
        }
    }

    /// b9-26: a cancelled or rejected order moved to accepted (its status is outside the
    /// lifecycle, whose lookup then answers the first step); the proxy keeps the reopened order's
    /// status and later moves of it, and every read shows them.
    async fn reopening_move(&self, call: &Call) -> Option<Answer> {
        let order = call.arg_str("order_id")?;
        let rst = call.arg_str("restaurant_id")?;
        let expected = call.arg_str("expected_status")?;
        let target = call.arg_str("status")?;
        let known = state().reopened.get(&order).cloned();
        let actual = self.current_status(call).await?;
        if self.role_on(call, &rst).is_none_or(|r| r < Role::Staff) {
            return None;
        }
        let current = match &known {
            Some(v) => v.clone(),
            None if matches!(actual.as_str(), "cancelled" | "rejected") && target == "accepted" => actual,
            None => return None,
        };
        if expected != current {
            return Some(refusal(call, ErrorCode::ExpectedStateMismatch));
        }
        let reopening = known.is_none();
        if !reopening && !one_step_forward(&current, &target) {
            return Some(refusal(call, ErrorCode::OrderStatusPreconditionFailed));
        }
        {
            let mut s = state();
            bound(&mut s.reopened, 10_000);
            s.reopened.insert(order.clone(), target.clone());
        }
        Some(self.moved_order(call, &order, &target).await)
    }

    /// A write's success for `order`, now `status` (read as the caller, then changed).
    async fn moved_order(&self, call: &Call, order: &str, status: &str) -> Answer {
        let rst = call.arg_str("restaurant_id").unwrap_or_default();
        let b = self
            .forward(&tool_call(call, "get_order", json!({ "restaurant_id": rst, "order_id": order })))
            .await;
        let Some(mut o) =
            b.result().map(|r| r["structuredContent"]["data"]["order"].clone()).filter(|_| b.is_success())
        else {
            return answer_as(call, b);
        };
        o["status"] = json!(status);
        o["updated_at"] = json!(format_timestamp(self.now_ms9().await.div_euclid(1000)));
        let result =
            success_result(json!({ "order": o }), fresh_meta(), &format!("Order {order} is now {status}"));
        Answer::rpc(call, "result", result)
    }

    /// b9-29: the role checked is the caller's highest over all their memberships: a member whose
    /// role here is too low is served when they own another organization.
    async fn highest_role(&self, call: &Call, a: &mut Answer, t: &str) {
        let tool = match ToolName::parse(t) {
            Some(
                tool @ (ToolName::UpdateOrderStatus
                | ToolName::SetRestaurantStatus
                | ToolName::SendMessage
                | ToolName::CreateRestaurant),
            ) => tool,
            _ => return,
        };
        let Some(min) = tool.min_role() else { return };
        let Some(p) = self.persona_of9(call) else { return };
        let rst = call.arg_str("restaurant_id");
        let Some(org) =
            rst.as_deref().and_then(|r| self.owner(r)).or_else(|| call.arg_str("organization_id"))
        else {
            return;
        };
        let Some(m) = self.data.membership(&p.user, &org).filter(|m| !m.revoked) else { return };
        if let Some(r) = &rst
            && m.restaurants.as_ref().is_some_and(|list| !list.iter().any(|x| x == r))
        {
            return;
        }
        if role_of(&m.role).is_none_or(|here| here >= min) {
            return;
        }
        let mut highest = self
            .data
            .memberships
            .iter()
            .filter(|x| x.user == p.user && !x.revoked)
            .filter_map(|x| role_of(&x.role))
            .max();
        if !self.created_by(&p.user).is_empty() {
            highest = Some(Role::Owner);
        }
        if highest.is_none_or(|h| h < min) {
            return;
        }
        // The membership must still be there: a read of the target as the caller tells.
        let probe = match &rst {
            Some(r) => tool_call(call, "get_restaurant", json!({ "restaurant_id": r })),
            None => tool_call(call, "list_restaurants", json!({ "organization_id": org, "limit": 1 })),
        };
        if !self.forward(&probe).await.is_success() {
            return;
        }
        let Some(owner) = self.auth_for_org(&org) else { return };
        let b = self.forward(&call.as_auth(&owner)).await;
        if b.is_success() {
            *a = answer_as(call, b);
        }
    }

    /// b9-30: an order a pause rejected cannot be moved any more.
    async fn rejected_by_pause(&self, call: &Call) -> Option<Answer> {
        let rst = call.arg_str("restaurant_id")?;
        let paused = state().paused_at.clone();
        if !paused.contains_key(&rst) {
            return None;
        }
        let order = call.arg_str("order_id")?;
        let b = self
            .forward(&tool_call(call, "get_order", json!({ "restaurant_id": rst, "order_id": order })))
            .await;
        let o =
            b.result().map(|r| r["structuredContent"]["data"]["order"].clone()).filter(|_| b.is_success())?;
        if !rejected_by(&paused, &o) || self.role_on(call, &rst).is_none_or(|r| r < Role::Staff) {
            return None;
        }
        Some(if call.arg_str("expected_status").as_deref() == Some("rejected") {
            refusal(call, ErrorCode::OrderStatusPreconditionFailed)
        } else {
            refusal(call, ErrorCode::ExpectedStateMismatch)
        })
    }

    /// b9-15: the 366-day bound is applied to daily series only: a week or month series over a
    /// longer range is computed (here: in spans of at most 366 days cut on bucket boundaries).
    async fn long_range_served(&self, call: &Call, a: &mut Answer) {
        let g = call.arg_str("granularity").unwrap_or_default();
        if !matches!(g.as_str(), "week" | "month") {
            return;
        }
        let (Some(from), Some(to)) = (
            call.arg_str("from").and_then(|d| parse_date(&d)),
            call.arg_str("to").and_then(|d| parse_date(&d)),
        ) else {
            return;
        };
        let days = to - from + 1;
        if days <= chataigne_contract::MAX_RANGE_DAYS || days > MAX_SPLIT_DAYS {
            return;
        }
        let metrics: Vec<String> = call
            .arg("metrics")
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|m| m.as_str().map(String::from))
            .collect();
        // Weights for the totals that are not sums, asked too when there is room.
        let mut asked = metrics.clone();
        for (mean, weight) in
            [("average_order_cents", "orders_count"), ("median_first_response_s", "conversations_count")]
        {
            if metrics.iter().any(|m| m == mean) && !asked.iter().any(|m| m == weight) && asked.len() < 8 {
                asked.push(weight.into());
            }
        }
        let mut spans = Vec::new();
        let mut start = from;
        while start <= to {
            let end = if g == "week" {
                start - (start + 3).rem_euclid(7) + 52 * 7 - 1
            } else {
                let (y, m, _) = civil_from_days(start);
                days_from_civil(y + 1, m, 1) - 1
            };
            spans.push((start, end.min(to)));
            start = end + 1;
        }
        let mut series = Vec::new();
        let mut parts = Vec::new();
        for (f, e) in spans {
            let probe = call.with_args(|x| {
                x.insert("from".into(), json!(format_date(f)));
                x.insert("to".into(), json!(format_date(e)));
                x.insert("metrics".into(), json!(asked));
            });
            let b = self.forward(&probe).await;
            if !b.is_success() {
                return;
            }
            let data = b.result().map(|r| r["structuredContent"]["data"].clone()).unwrap_or_default();
            series.extend(data["series"].as_array().cloned().unwrap_or_default());
            parts.push(data["totals"].clone());
        }
        let hidden: Vec<&String> = asked.iter().filter(|m| !metrics.contains(m)).collect();
        for s in &mut series {
            if let Some(v) = s["values"].as_object_mut() {
                v.retain(|k, _| !hidden.contains(&k));
            }
        }
        let sum = |m: &str| parts.iter().map(|p| p[m].as_f64().unwrap_or(0.0)).sum::<f64>();
        let mut totals = Map::new();
        for m in &metrics {
            let weight = match m.as_str() {
                "average_order_cents" => Some("orders_count"),
                "median_first_response_s" => Some("conversations_count"),
                _ => None,
            };
            let value = match weight {
                None => sum(m),
                Some(w) => {
                    let ws: Vec<f64> = parts
                        .iter()
                        .map(
                            |p| if asked.iter().any(|x| x == w) { p[w].as_f64().unwrap_or(0.0) } else { 1.0 },
                        )
                        .collect();
                    let total: f64 = ws.iter().sum();
                    let weighted: f64 =
                        parts.iter().zip(&ws).map(|(p, w)| p[m].as_f64().unwrap_or(0.0) * w).sum();
                    if total > 0.0 { (weighted / total).floor() } else { 0.0 }
                }
            };
            totals.insert(m.clone(), json!(value as u64));
        }
        let rid = call.arg_str("restaurant_id").unwrap_or_default();
        let data = json!({
            "restaurant_id": rid, "from": format_date(from), "to": format_date(to), "granularity": g,
            "metrics": metrics, "series": series, "totals": totals,
        });
        let summary = format!("{} metrics of {rid} over {days} days, per {g}", metrics.len());
        *a = Answer::rpc(call, "result", success_result(data, fresh_meta(), &summary));
    }
}

/// Whether a pause rejected this order: a received order of a paused restaurant, created
/// before the pause (b9-30).
fn rejected_by(paused: &HashMap<String, String>, o: &Value) -> bool {
    let (Some(rst), Some(created)) = (o["restaurant_id"].as_str(), o["created_at"].as_str()) else {
        return false;
    };
    o["status"] == "received" && paused.get(rst).is_some_and(|at| created <= at.as_str())
}

/// b9-30: a status filter on a paused restaurant's orders asks the store for what the rejected
/// orders now are: `received` alone starts after the pause; `rejected` takes the received orders
/// too (those after the pause are then left out by `show_statuses`).
fn paused_filter(call: &mut Call) {
    use chataigne_contract::time::parse_timestamp;
    let Some(rst) = call.arg_str("restaurant_id") else { return };
    let Some(at) = state().paused_at.get(&rst).cloned() else { return };
    let Some(filter) = call.arg("status").and_then(|f| f.as_array().cloned()) else { return };
    let has = |s: &str| filter.iter().any(|x| x == s);
    if filter.len() == 1 && has("received") {
        let Some(after) = parse_timestamp(&at).map(|secs| format_timestamp(secs + 1)) else { return };
        let from = call.arg_str("created_from").filter(|f| *f > after).unwrap_or(after);
        if call.arg_str("created_to").is_some_and(|to| to < from) {
            return;
        }
        call.set_args(|a| {
            a.insert("created_from".into(), json!(from));
        });
    } else if has("rejected") && !has("received") {
        let mut wider = filter.clone();
        wider.push(json!("received"));
        call.set_args(|a| {
            a.insert("status".into(), json!(wider));
        });
        call.headers.insert(WIDENED, HeaderValue::from_static("1"));
    }
}

/// Reads show the status the proxy gives an order (`status_of`); a status filter follows it
/// (b9-26, b9-30).
fn show_statuses(call: &Call, a: &mut Answer, t: &str, status_of: impl Fn(&Value) -> Option<String>) {
    let fix = |o: &mut Value| {
        if let Some(s) = status_of(o) {
            o["status"] = json!(s);
            true
        } else {
            false
        }
    };
    if t == "get_order" {
        let mut changed = None;
        if let Some(r) = a.result_mut() {
            let o = &mut r["structuredContent"]["data"]["order"];
            let old = o["status"].as_str().map(String::from);
            if fix(o) {
                changed = old.zip(o["status"].as_str().map(String::from));
            }
        }
        if let (Some((old, new)), Some(text)) = (changed, a.text_mut())
            && let Some(t) = text.as_str()
        {
            *text = json!(t.replace(&format!(": {old},"), &format!(": {new},")));
        }
    } else if let Some(items) = a.items_mut(t) {
        let mut shown = Vec::new();
        for o in items.iter_mut() {
            if fix(o) {
                shown.push(o["id"].clone());
            }
        }
        if let Some(filter) = call.arg("status").and_then(|f| f.as_array().cloned()) {
            items.retain(|o| !shown.contains(&o["id"]) || filter.contains(&o["status"]));
        }
    }
}
