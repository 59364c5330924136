//! Batch 6 of the outside faults (`b6-…`), written from docs/CONTRACT.md, its French seed,
//! docs/DECISIONS.md, docs/CONTROL_API.md and the MCP specification alone, without reading the
//! suite: a third on surfaces other than a first-page tools/call (GET of the stream, error
//! answers, the metadata document, resources, a revision's tools/list, continuation pages, HTTP
//! headers of error answers), a third on edges (a bound counted the wrong way, case, null, a
//! spelling, a number written as a string, milliseconds, a header value, a unit of size, a
//! retention that slides), a third on wrong data in a right envelope (a second effect, a filter
//! that lags, a move the lifecycle forbids, a membership or role mis-applied on one path, a rate
//! window shared too widely, totals over the wrong days).
//! Names are opaque (`b6-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here; what the
//! batch remembers between calls is its own (`B6`), bounded, beside the proxy's `Memory`.

use std::sync::LazyLock;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_contract::time::{format_date, format_timestamp, parse_date};
use chataigne_contract::tools::ORDER_LIFECYCLE;
use sha2::{Digest, Sha256};

use super::*;

#[derive(Default)]
struct B6 {
    /// keyed calls running now, by their slot (b6-03)
    inflight: HashSet<Slot>,
    dup_serial: u64,
    /// issued cursors, lowercased → as issued (b6-05)
    cursors_folded: HashMap<String, String>,
    /// order → (status before the write, status after, when) (b6-06)
    status_moves: HashMap<String, (String, String, Instant)>,
    /// keyed slot → the route (restaurant or organization) its key was first used for (b6-09)
    first_route: HashMap<Slot, String>,
    /// (auth, restaurant) read once through resources/read (b6-10)
    resource_snapshot: HashSet<(String, String)>,
    /// keyed slot → retention record (b6-11)
    retained: HashMap<Slot, Retained>,
    /// order → the status the proxy's own moves gave it (b6-12, b6-13, b6-17)
    virtual_status: HashMap<String, String>,
    /// (user, tool) → (window start in server ms, calls) (b6-15)
    user_windows: HashMap<(String, String), (i64, u32)>,
    /// message cursors handed out after a conversation's last page → (auth, restaurant, conversation) (b6-19)
    end_cursors: HashMap<String, (String, String, String)>,
    /// (record id, member, value as stored) → milliseconds the server shows (b6-20)
    millis: HashMap<(String, String, String), u32>,
    /// keyed slot → arguments of a call refused after its key was claimed (b6-21)
    claimed: HashMap<Slot, Map<String, Value>>,
    /// keyed slot whose call timed out → the key its retry runs under (b6-27)
    timed_out: HashMap<Slot, Option<String>>,
    retry_serial: u64,
}

struct Retained {
    first_ms: i64,
    last_ms: i64,
    args: Map<String, Value>,
    result: Value,
}

static STATE: LazyLock<Mutex<B6>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B6> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep a map bounded: past `n` entries it starts again (faults only need recent entries).
fn bound<K, V>(m: &mut HashMap<K, V>, n: usize) {
    if m.len() > n {
        m.clear();
    }
}

fn bound_set<K>(m: &mut HashSet<K>, n: usize) {
    if m.len() > n {
        m.clear();
    }
}

impl Fault {
    /// A fault of this batch (`b6-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch6(self) -> bool {
        CATALOGUE.iter().any(|(f, name, ..)| *f == self && name.starts_with("b6-"))
    }
}

const RESTAURANT_URI: &str = "chataigne://restaurants/";
const METADATA_MCP: &str = "/.well-known/oauth-protected-resource/mcp";
const DAY_MS: i64 = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
/// Metrics whose value over two disjoint ranges is the sum of the values over each (b6-02).
const ADDITIVE: [&str; 8] = [
    "orders_count",
    "revenue_cents",
    "completed_orders",
    "conversations_count",
    "messages_received",
    "messages_sent",
    "new_customers",
    "repeat_customers",
];

fn refusal(call: &Call, code: ErrorCode) -> Answer {
    Answer::rpc(call, "result", error_result(code, &new_request_id()))
}

/// A stored result given back as a replay: `replayed: true`, a new request_id.
fn replay(call: &Call, result: &Value) -> Answer {
    let mut a = Answer::rpc(call, "result", result.clone());
    a.set_request_id(&new_request_id());
    if let Some(meta) = a.meta_mut() {
        meta.insert("replayed".into(), json!(true));
    }
    a
}

fn with_key(call: &Call, key: String) -> Call {
    call.with_args(|a| {
        a.insert("idempotency_key".into(), json!(key));
    })
}

fn key_head(key: &str) -> String {
    key.chars().take(230).collect()
}

fn short_hash(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect()
}

fn header_str(call: &Call, name: &str) -> Option<String> {
    call.headers.get(name).and_then(|v| v.to_str().ok()).map(String::from)
}

fn slot(call: &Call, t: &str) -> Option<Slot> {
    Some((call.auth(), t.to_owned(), call.arg_str("idempotency_key")?))
}

fn step(status: &str) -> Option<usize> {
    ORDER_LIFECYCLE.iter().position(|s| *s == status)
}

/// One step back, from the kitchen's steps only (preparing → accepted, ready → preparing) (b6-12).
fn one_step_back(from: &str, to: &str) -> bool {
    matches!((from, to), ("preparing", "accepted") | ("ready", "preparing"))
}

fn one_step_forward(from: &str, to: &str) -> bool {
    matches!((step(from), step(to)), (Some(a), Some(b)) if b == a + 1)
}

/// A value of the server's shape for a cursor: base64url payload, a dot, base64url MAC (b6-19).
fn cursor_like() -> String {
    let mut rng = rand::rng();
    let mut bytes = [0u8; 56];
    rng.fill(&mut bytes[..]);
    format!("{}.{}", URL_SAFE_NO_PAD.encode(&bytes[..24]), URL_SAFE_NO_PAD.encode(&bytes[24..]))
}

/// Sum two analytics value maps: additive metrics are added, the others keep `a`'s (b6-02).
fn add_values(a: &mut Value, b: &Value) {
    let (Some(a), Some(b)) = (a.as_object_mut(), b.as_object()) else { return };
    for (k, v) in b {
        if ADDITIVE.contains(&k.as_str())
            && let (Some(x), Some(y)) = (a.get(k).and_then(Value::as_u64), v.as_u64())
        {
            a.insert(k.clone(), json!(x + y));
        }
    }
}

/// A server-written timestamp with the milliseconds it was taken at (b6-20).
fn with_millis(ts: &str, ms: u32) -> String {
    match ts.strip_suffix('Z') {
        Some(head) if !head.contains('.') => format!("{head}.{ms:03}Z"),
        _ => ts.to_owned(),
    }
}

/// The member of a write's record that holds the instant the server wrote (b6-20).
fn written_member(tool: &str) -> Option<(&'static str, &'static str)> {
    match tool {
        "update_order_status" => Some(("order", "updated_at")),
        "send_message" => Some(("message", "sent_at")),
        "create_instruction" => Some(("instruction", "created_at")),
        "create_organization" => Some(("organization", "created_at")),
        "create_restaurant" => Some(("restaurant", "created_at")),
        _ => None,
    }
}

impl Proxy {
    fn persona_of(&self, call: &Call) -> Option<Persona> {
        self.data.persona(&call.token()).cloned()
    }

    async fn now_ms6(&self) -> i64 {
        match self.server_now_ms().await {
            Some(ms) => ms as i64,
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        }
    }

    /// Request-side rewrites of batch 6 (`Proxy::before`).
    pub(crate) async fn before_batch6(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        match self.fault {
            B602Lim1 if t == "get_analytics" => return self.range_one_day_long(call).await,
            B603Idem4 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let mut s = state();
                if s.inflight.contains(&slot) {
                    // The in-progress marker is looked up before it is written: a duplicate
                    // that arrives meanwhile runs as a call of its own.
                    s.dup_serial += 1;
                    let renamed = format!("{}~dup{}", key_head(&slot.2), s.dup_serial);
                    drop(s);
                    *call = with_key(call, renamed);
                } else {
                    bound_set(&mut s.inflight, 10_000);
                    s.inflight.insert(slot);
                }
            }
            B604Auth1 if call.method == Method::GET && call.uri.path() == METADATA_MCP => {
                return Some(Answer::plain(StatusCode::NOT_FOUND, "Not Found"));
            }
            B605Pag5 => {
                let cursor = call.arg_str("cursor")?;
                if lock(&self.memory).cursors.contains_key(&cursor) {
                    return None;
                }
                let known = state().cursors_folded.get(&cursor.to_lowercase()).cloned();
                if let Some(issued) = known {
                    // The cursor table's collation ignores case.
                    call.set_args(|a| {
                        a.insert("cursor".into(), json!(issued));
                    });
                }
            }
            B608Pre1
                if matches!(t, "update_order_status" | "set_restaurant_status")
                    && call.arg("expected_status") == Some(Value::Null) =>
            {
                // `null` deserializes as "no precondition": the current state is taken.
                let current = self.current_status(call).await?;
                call.set_args(|a| {
                    a.insert("expected_status".into(), json!(current));
                });
            }
            B609Idem3 if is_keyed(t) => {
                let route = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id"))?;
                let slot = slot(call, t)?;
                let first = {
                    let mut s = state();
                    bound(&mut s.first_route, 10_000);
                    s.first_route.entry(slot.clone()).or_insert_with(|| route.clone()).clone()
                };
                if first != route {
                    // The key's slot includes the restaurant (or organization) it was sent for.
                    *call = with_key(call, format!("{}~r{}", key_head(&slot.2), short_hash(&route)));
                }
            }
            B611Idem6 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let now = self.now_ms6().await;
                let mut s = state();
                let r = s.retained.get_mut(&slot)?;
                if now >= r.first_ms + DAY_MS && now < r.last_ms + DAY_MS && r.args == call.args() {
                    // Each replay renewed the record's time to live.
                    r.last_ms = now;
                    let result = r.result.clone();
                    return Some(replay(call, &result));
                }
            }
            B612Pre3 | B617Abs2 if t == "update_order_status" => return self.virtual_move(call).await,
            B613Abs1 if t == "cancel_order" => return self.legacy_cancel(call).await,
            B613Abs1 if t == "update_order_status" => return self.virtual_move(call).await,
            B614Proto5 if header_str(call, "origin").is_some_and(|o| o.trim() == "null") => {
                // An opaque origin is taken for no origin at all.
                call.headers.remove(header::ORIGIN);
            }
            B615Lim3 if kind(t).is_some() => {
                let p = self.persona_of(call)?;
                let limit = if kind(t).is_some_and(Kind::is_write) { 500 } else { 1000 };
                let now = self.now_ms6().await;
                let wait = {
                    let mut s = state();
                    bound(&mut s.user_windows, 10_000);
                    let w = s.user_windows.entry((p.user.clone(), t.to_owned())).or_insert((now, 0));
                    if now < w.0 || now - w.0 >= 60_000 {
                        *w = (now, 0);
                    }
                    w.1 += 1;
                    (w.1 > limit).then(|| (w.0 + 60_000 - now).max(1))
                };
                if let Some(ms) = wait {
                    let mut a = refusal(call, ErrorCode::RateLimited);
                    set_error(&mut a, "retry_after_ms", json!(ms));
                    return Some(a);
                }
            }
            B616Pag1 if list_key(t).is_some() && call.has_arg("cursor") && !call.has_arg("limit") => {
                // The continuation reads its page size from the cursor decoder's default: the maximum.
                call.set_args(|a| {
                    a.insert("limit".into(), json!(chataigne_contract::MAX_LIMIT));
                });
            }
            B619Pag3 if t == "get_conversation" => {
                let cursor = call.arg_str("cursor")?;
                let end = state().end_cursors.get(&cursor).cloned()?;
                let (auth, rst, cnv) = end;
                if auth != call.auth()
                    || call.arg_str("restaurant_id") != Some(rst)
                    || call.arg_str("conversation_id") != Some(cnv)
                {
                    return None;
                }
                let probe = call.with_args(|a| {
                    a.remove("cursor");
                    a.insert("message_limit".into(), json!(1));
                });
                let mut a = answer_as(call, self.forward(&probe).await);
                if a.is_success() {
                    if let Some(items) = a.items_mut("get_conversation") {
                        items.clear();
                    }
                    if let Some(meta) = a.meta_mut() {
                        meta.remove("next_cursor");
                    }
                    if let Some(text) = a.text_mut() {
                        *text = json!("0 messages");
                    }
                }
                return Some(a);
            }
            B621Idem7 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let claimed = state().claimed.get(&slot).cloned()?;
                if claimed != call.args() {
                    return Some(refusal(call, ErrorCode::IdempotencyMismatch));
                }
            }
            B623Proto3 if kind(t).is_some() => {
                let numeric = |v: &Value| v.as_str().and_then(|s| s.trim().parse::<u64>().ok());
                let fix: Vec<(String, u64)> = ["limit", "message_limit"]
                    .iter()
                    .filter_map(|k| Some((k.to_string(), numeric(&call.arg(k)?)?)))
                    .collect();
                if !fix.is_empty() {
                    // Integers are read with a lenient parser that takes "20" for 20.
                    call.set_args(|a| {
                        for (k, n) in fix {
                            a.insert(k, json!(n));
                        }
                    });
                }
            }
            B626Proto1 if call.uri.path() == "/mcp" => {
                let v = header_str(call, "mcp-protocol-version")?;
                if !chataigne_contract::PROTOCOL_VERSIONS.contains(&v.trim()) {
                    // An unknown revision is served as the latest stable one.
                    call.headers.insert("mcp-protocol-version", HeaderValue::from_static("2025-11-25"));
                }
            }
            B627Lim4 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let renamed = {
                    let mut s = state();
                    s.retry_serial += 1;
                    let n = s.retry_serial;
                    match s.timed_out.get_mut(&slot)? {
                        Some(k) => k.clone(),
                        entry @ None => {
                            // The timeout released the key: the retry runs as a new call.
                            let k = format!("{}~t{n}", key_head(&slot.2));
                            *entry = Some(k.clone());
                            k
                        }
                    }
                };
                *call = with_key(call, renamed);
            }
            B629Lim7
                if call.method == Method::POST
                    && call.uri.path() == "/mcp"
                    && call.body.len() > 1_000_000 =>
            {
                return Some(Answer::plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "Payload Too Large: the limit is 1 MB",
                ));
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 6 (`Proxy::after`).
    pub(crate) async fn after_batch6(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let m = method.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        let replayed = success && a.flag("replayed");
        match self.fault {
            B601Proto1
                if call.method == Method::GET
                    && call.uri.path() == "/mcp"
                    && !matches!(a.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) =>
            {
                // A health document on GET /mcp, for the load balancer's probe.
                let mut headers = HeaderMap::new();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                let body = json!({ "name": "chataigne", "status": "ok", "transport": "streamable-http" });
                *a = Answer::new(StatusCode::OK, headers, Bytes::from(body.to_string()));
            }
            B603Idem4 if is_keyed(t) => {
                if let Some(slot) = slot(call, t) {
                    state().inflight.remove(&slot);
                }
            }
            B605Pag5 => {
                if let Some(next) = a.next_cursor() {
                    let mut s = state();
                    bound(&mut s.cursors_folded, 10_000);
                    s.cursors_folded.insert(next.to_lowercase(), next);
                }
            }
            B606Pre2 => self.status_index_lags(call, a, t),
            B607Proto2 if a.status == StatusCode::OK && a.rpc_error_code() == Some(-32601) => {
                if let Some(j) = a.json.as_mut() {
                    // The dispatcher's "method not found" is built before the id is read.
                    j["id"] = Value::Null;
                    a.changed = true;
                }
            }
            B610Auth7 if m == "resources/read" => self.resource_snapshot(call, a).await,
            B611Idem6 if success && is_keyed(t) => {
                let Some(slot) = slot(call, t) else { return };
                let now = self.now_ms6().await;
                let mut s = state();
                if replayed {
                    if let Some(r) = s.retained.get_mut(&slot) {
                        r.last_ms = now;
                    }
                } else {
                    bound(&mut s.retained, 10_000);
                    let result = a.result().cloned().unwrap_or_default();
                    s.retained
                        .insert(slot, Retained { first_ms: now, last_ms: now, args: call.args(), result });
                }
            }
            B612Pre3 | B613Abs1 | B617Abs2 if success && matches!(t, "get_order" | "list_orders") => {
                self.show_virtual_status(call, a, t)
            }
            B613Abs1 if m == "tools/list" && a.result().is_some() => {
                if header_str(call, "mcp-protocol-version").as_deref() == Some("2025-06-18")
                    && let Some(tools) = a.result_mut().and_then(|r| r["tools"].as_array_mut())
                {
                    tools.push(cancel_tool());
                }
            }
            B618Auth4
                if code == Some(ErrorCode::ResourceForbidden) && kind(t).is_some_and(|k| !k.is_write()) =>
            {
                self.limited_membership_reads(call, a).await
            }
            B619Pag3 if success && t == "get_conversation" && a.next_cursor().is_none() => {
                let (Some(rst), Some(cnv)) = (call.arg_str("restaurant_id"), call.arg_str("conversation_id"))
                else {
                    return;
                };
                if a.items(t).is_none_or(Vec::is_empty) {
                    return;
                }
                let cursor = cursor_like();
                {
                    let mut s = state();
                    bound(&mut s.end_cursors, 10_000);
                    s.end_cursors.insert(cursor.clone(), (call.auth(), rst, cnv));
                }
                if let Some(meta) = a.meta_mut() {
                    meta.insert("next_cursor".into(), json!(cursor));
                }
            }
            B620Proto4 if success => self.server_millis(a, t, replayed),
            B621Idem7 if is_keyed(t) => {
                let Some(slot) = slot(call, t) else { return };
                let mut s = state();
                if success {
                    s.claimed.remove(&slot);
                } else if matches!(code, Some(ErrorCode::ResourceForbidden | ErrorCode::ResourceNotFound)) {
                    // The key was claimed with the call's fingerprint before the handler's checks
                    // refused it, and the claim is never released.
                    bound(&mut s.claimed, 10_000);
                    s.claimed.entry(slot).or_insert_with(|| call.args());
                }
            }
            B622Env1 if success && call.has_arg("cursor") => {
                if let Some(r) = a.result_mut() {
                    r["content"] = json!([]);
                }
            }
            B624Auth6 if t == "create_restaurant" && code == Some(ErrorCode::ResourceForbidden) => {
                self.manager_creates_restaurant(call, a).await
            }
            B625Sec2 => {
                let internal = code == Some(ErrorCode::InternalError)
                    || a.json.as_ref().is_some_and(|j| j["error"]["message"] == json!("MCP_INTERNAL_ERROR"));
                if internal {
                    a.headers.insert(
                        "x-error-detail",
                        HeaderValue::from_static(
                            "PoolTimedOut: connection to postgres://chataigne@db.internal:5432/chataigne timed out \
                             (at /srv/chataigne/src/store/orders.rs:212:17)",
                        ),
                    );
                }
            }
            B627Lim4 if is_keyed(t) && code == Some(ErrorCode::OutcomeUnknown) => {
                if let Some(slot) = slot(call, t) {
                    let mut s = state();
                    bound(&mut s.timed_out, 10_000);
                    s.timed_out.entry(slot).or_insert(None);
                }
            }
            B628Env6 if code == Some(ErrorCode::IdempotencyMismatch) => {
                if let Some(key) = call.arg_str("idempotency_key") {
                    let key: String = key.chars().take(120).collect();
                    append_message(
                        a,
                        &format!(" (idempotency_key \"{key}\" was first used with other arguments)"),
                    );
                }
            }
            B630Lim1 if success && t == "get_analytics" => self.totals_without_last_day(call, a).await,
            _ => {}
        }
    }

    /// b6-02: the range is measured as `to − from`, so 367 days (inclusive) pass, and are
    /// computed: the first day and the other 366 are added up here.
    async fn range_one_day_long(&self, call: &Call) -> Option<Answer> {
        let from = parse_date(&call.arg_str("from")?)?;
        let to = parse_date(&call.arg_str("to")?)?;
        if to - from != chataigne_contract::MAX_RANGE_DAYS {
            return None;
        }
        let rest = self
            .forward(&call.with_args(|a| {
                a.insert("from".into(), json!(format_date(from + 1)));
            }))
            .await;
        let first = self
            .forward(&call.with_args(|a| {
                a.insert("to".into(), json!(format_date(from)));
            }))
            .await;
        if !rest.is_success() || !first.is_success() {
            return Some(answer_as(call, rest));
        }
        let head = first.result()?["structuredContent"]["data"].clone();
        let mut a = answer_as(call, rest);
        let r = a.result_mut()?;
        let data = &mut r["structuredContent"]["data"];
        data["from"] = json!(format_date(from));
        let mut series: Vec<Value> = head["series"].as_array().cloned().unwrap_or_default();
        for b in data["series"].as_array().cloned().unwrap_or_default() {
            match series.last_mut() {
                Some(last) if last["period_start"] == b["period_start"] => {
                    add_values(&mut last["values"], &b["values"])
                }
                _ => series.push(b),
            }
        }
        data["series"] = json!(series);
        add_values(&mut data["totals"], &head["totals"]);
        if let Some(text) = r["content"][0]["text"].as_str() {
            r["content"][0]["text"] = json!(text.replace("over 366 days", "over 367 days"));
        }
        Some(a)
    }

    /// b6-06: the status filter reads a secondary index refreshed every 30 s: an order moved
    /// since is missing under its new status (and its row, when shown, is current).
    fn status_index_lags(&self, call: &Call, a: &mut Answer, t: &str) {
        if !a.is_success() {
            return;
        }
        if t == "update_order_status" {
            let (Some(id), Some(old), Some(new)) =
                (call.arg_str("order_id"), call.arg_str("expected_status"), call.arg_str("status"))
            else {
                return;
            };
            let mut s = state();
            s.status_moves.retain(|_, (.., at)| at.elapsed() < Duration::from_secs(30));
            bound(&mut s.status_moves, 10_000);
            let old = s.status_moves.get(&id).map_or(old, |(o, ..)| o.clone());
            s.status_moves.insert(id, (old, new, Instant::now()));
            return;
        }
        if t != "list_orders" {
            return;
        }
        let Some(filter) = call.arg("status").and_then(|s| s.as_array().cloned()) else { return };
        let moved: HashMap<String, String> = state()
            .status_moves
            .iter()
            .filter(|(_, (.., at))| at.elapsed() < Duration::from_secs(30))
            .map(|(id, (old, ..))| (id.clone(), old.clone()))
            .collect();
        if moved.is_empty() {
            return;
        }
        if let Some(items) = a.items_mut(t) {
            items.retain(|o| {
                o["id"].as_str().and_then(|id| moved.get(id)).is_none_or(|old| filter.contains(&json!(old)))
            });
        }
    }

    /// b6-10: resources/read checks membership against a per-token snapshot taken at its first
    /// read of the restaurant, never refreshed.
    async fn resource_snapshot(&self, call: &Call, a: &mut Answer) {
        let Some(uri) = call.rpc.as_ref().and_then(|r| r["params"]["uri"].as_str()).map(String::from) else {
            return;
        };
        let Some(rst) = uri.strip_prefix(RESTAURANT_URI).filter(|r| !r.is_empty()).map(String::from) else {
            return;
        };
        let key = (call.auth(), rst.clone());
        if a.result().is_some() {
            let mut s = state();
            bound_set(&mut s.resource_snapshot, 10_000);
            s.resource_snapshot.insert(key);
            return;
        }
        if !matches!(a.rpc_error_code(), Some(-32002 | -32602)) || !state().resource_snapshot.contains(&key) {
            return;
        }
        let Some(owner) = self.owner(&rst).and_then(|org| self.auth_for_org(&org)) else { return };
        let b = self.forward(&call.as_auth(&owner)).await;
        if b.result().is_some() {
            *a = answer_as(call, b);
        }
    }

    /// b6-12, b6-13, b6-17: moves the reference never makes (one step back; a cancellation),
    /// kept as the order's status in the proxy and shown by every read.
    async fn virtual_move(&self, call: &Call) -> Option<Answer> {
        let order = call.arg_str("order_id")?;
        let expected = call.arg_str("expected_status")?;
        let target = call.arg_str("status")?;
        let known = state().virtual_status.get(&order).cloned();
        let current = match &known {
            Some(v) => v.clone(),
            None => self.current_status(call).await?,
        };
        let cancel = self.fault == Fault::B617Abs2 && target == "canceled";
        let back = self.fault == Fault::B612Pre3 && one_step_back(&current, &target);
        if known.is_none() && !cancel && !back {
            return None;
        }
        if expected != current {
            return Some(refusal(call, ErrorCode::ExpectedStateMismatch));
        }
        let terminal = matches!(current.as_str(), "completed" | "cancelled" | "rejected");
        let new = if cancel && !terminal {
            "cancelled".to_owned()
        } else if back || (!terminal && one_step_forward(&current, &target)) {
            target.clone()
        } else {
            return Some(refusal(call, ErrorCode::OrderStatusPreconditionFailed));
        };
        let actual = self.current_status(call).await?;
        {
            let mut s = state();
            bound(&mut s.virtual_status, 10_000);
            if new == actual {
                s.virtual_status.remove(&order);
            } else {
                s.virtual_status.insert(order.clone(), new.clone());
            }
        }
        Some(self.order_answer(call, &order, &new).await)
    }

    /// b6-13: the 2025-06-18 catalogue's `cancel_order`, which cancels for real.
    async fn legacy_cancel(&self, call: &Call) -> Option<Answer> {
        let order = call.arg_str("order_id")?;
        let rst = call.arg_str("restaurant_id")?;
        let probe = tool_call(call, "get_order", json!({ "restaurant_id": rst, "order_id": order }));
        let b = self.forward(&probe).await;
        if !b.is_success() {
            return Some(answer_as(call, b));
        }
        let current = state().virtual_status.get(&order).cloned().or_else(|| {
            b.result()
                .and_then(|r| r["structuredContent"]["data"]["order"]["status"].as_str())
                .map(String::from)
        })?;
        if matches!(current.as_str(), "completed" | "cancelled" | "rejected") {
            return Some(refusal(call, ErrorCode::OrderStatusPreconditionFailed));
        }
        {
            let mut s = state();
            bound(&mut s.virtual_status, 10_000);
            s.virtual_status.insert(order.clone(), "cancelled".into());
        }
        Some(self.order_answer(call, &order, "cancelled").await)
    }

    /// A write's success for `order`, now `status` (read as the caller, then changed).
    async fn order_answer(&self, call: &Call, order: &str, status: &str) -> Answer {
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
        o["updated_at"] = json!(format_timestamp(self.now_ms6().await.div_euclid(1000)));
        let result =
            success_result(json!({ "order": o }), fresh_meta(), &format!("Order {order} is now {status}"));
        Answer::rpc(call, "result", result)
    }

    /// Reads show the status the proxy's moves gave an order; a status filter follows it.
    fn show_virtual_status(&self, call: &Call, a: &mut Answer, t: &str) {
        let v = state().virtual_status.clone();
        if v.is_empty() {
            return;
        }
        let fix = |o: &mut Value| {
            if let Some(s) = o["id"].as_str().and_then(|id| v.get(id)) {
                o["status"] = json!(s);
            }
        };
        if t == "get_order" {
            if let Some(r) = a.result_mut() {
                fix(&mut r["structuredContent"]["data"]["order"]);
            }
        } else if let Some(items) = a.items_mut(t) {
            items.iter_mut().for_each(fix);
            if let Some(filter) = call.arg("status").and_then(|f| f.as_array().cloned()) {
                items.retain(|o| {
                    o["id"].as_str().and_then(|id| v.get(id)).is_none_or(|s| filter.contains(&json!(s)))
                });
            }
        }
    }

    /// b6-18: a membership limited to some restaurants is applied to writes only: reads of the
    /// organization's other restaurants are served.
    async fn limited_membership_reads(&self, call: &Call, a: &mut Answer) {
        let Some(p) = self.persona_of(call) else { return };
        let Some(rst) = call.arg_str("restaurant_id") else { return };
        let Some(org) = self.owner(&rst) else { return };
        let limited = self
            .data
            .membership(&p.user, &org)
            .is_some_and(|m| !m.revoked && m.restaurants.as_ref().is_some_and(|r| !r.contains(&rst)));
        if !limited {
            return;
        }
        let Some(owner) = self.auth_for_org(&org) else { return };
        let b = self.forward(&call.as_auth(&owner)).await;
        if b.is_success() {
            *a = answer_as(call, b);
        }
    }

    /// b6-20: instants the server writes itself carry milliseconds, in the write's answer and
    /// in every later answer that shows the record.
    fn server_millis(&self, a: &mut Answer, t: &str, replayed: bool) {
        if !replayed && let Some((record, member)) = written_member(t) {
            let r = a.result().map(|r| r["structuredContent"]["data"][record].clone()).unwrap_or_default();
            if let (Some(id), Some(at)) = (r["id"].as_str(), r[member].as_str()) {
                let ms = 1
                    + (u32::from_be_bytes(Sha256::digest(id.as_bytes())[..4].try_into().unwrap_or([0; 4]))
                        % 999);
                let mut s = state();
                bound(&mut s.millis, 10_000);
                s.millis.insert((id.to_owned(), member.to_owned(), at.to_owned()), ms);
            }
        }
        let millis = state().millis.clone();
        if millis.is_empty() {
            return;
        }
        let Some(r) = a.result_mut() else { return };
        fn walk(v: &mut Value, millis: &HashMap<(String, String, String), u32>) {
            match v {
                Value::Object(o) => {
                    if let Some(id) = o.get("id").and_then(Value::as_str).map(String::from) {
                        for member in ["updated_at", "sent_at", "created_at"] {
                            let Some(at) = o.get(member).and_then(Value::as_str).map(String::from) else {
                                continue;
                            };
                            if let Some(ms) = millis.get(&(id.clone(), member.to_owned(), at.clone())) {
                                o.insert(member.into(), json!(with_millis(&at, *ms)));
                            }
                        }
                    }
                    o.values_mut().for_each(|x| walk(x, millis));
                }
                Value::Array(a) => a.iter_mut().for_each(|x| walk(x, millis)),
                _ => {}
            }
        }
        walk(&mut r["structuredContent"]["data"], &millis);
    }

    /// b6-24: create_restaurant asks for manager, not owner: a manager's refused call is run
    /// with the organization's owner's rights.
    async fn manager_creates_restaurant(&self, call: &Call, a: &mut Answer) {
        let Some(p) = self.persona_of(call) else { return };
        let Some(org) = call.arg_str("organization_id") else { return };
        let manager = self.data.membership(&p.user, &org).is_some_and(|m| !m.revoked && m.role == "manager");
        if !manager {
            return;
        }
        let Some(owner) = self.auth_for_org(&org) else { return };
        let b = self.forward(&call.as_auth(&owner)).await;
        if b.is_success() {
            *a = answer_as(call, b);
        }
    }

    /// b6-30: the totals are summed over `from..to` (the last day left out) while the series
    /// covers `from..=to`; a one-day range totals nothing.
    async fn totals_without_last_day(&self, call: &Call, a: &mut Answer) {
        let (Some(from), Some(to)) = (
            call.arg_str("from").and_then(|d| parse_date(&d)),
            call.arg_str("to").and_then(|d| parse_date(&d)),
        ) else {
            return;
        };
        let totals = if to > from {
            let b = self
                .forward(&call.with_args(|x| {
                    x.insert("to".into(), json!(format_date(to - 1)));
                }))
                .await;
            if !b.is_success() {
                return;
            }
            b.result().map(|r| r["structuredContent"]["data"]["totals"].clone()).unwrap_or_default()
        } else {
            let mut zero =
                a.result().map(|r| r["structuredContent"]["data"]["totals"].clone()).unwrap_or_default();
            if let Some(o) = zero.as_object_mut() {
                o.values_mut().for_each(|v| *v = json!(0));
            }
            zero
        };
        if let Some(r) = a.result_mut() {
            r["structuredContent"]["data"]["totals"] = totals;
        }
    }
}

/// b6-13: the tool the 2025-06-18 catalogue still lists.
fn cancel_tool() -> Value {
    let mut d = ToolName::GetOrder.descriptor();
    d["name"] = json!("cancel_order");
    d["title"] = json!("cancel order");
    d["description"] = json!(
        "Cancel an order that is not completed yet (kept for clients of protocol revision 2025-06-18)."
    );
    d["annotations"] = json!({ "readOnlyHint": false, "destructiveHint": true, "openWorldHint": false });
    d["outputSchema"] = ToolName::UpdateOrderStatus.output_schema();
    d
}
