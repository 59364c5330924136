//! Batch 11 of the outside faults (`b11-…`), written from docs/CONTRACT.md, its French seed,
//! docs/DECISIONS.md (its first part), docs/CONTROL_API.md, the reference server's source and the
//! MCP specification alone, without reading the suite: a third on surfaces other than a
//! first-page tools/call, a third on edges, a third on wrong data in a right envelope. Names are
//! opaque (`b11-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here, on the
//! shapes of `common`. What it remembers between calls is its own (`B11`), every map keyed
//! (session, cursor, keyed slot, order, caller and arguments) and bounded.

use std::sync::LazyLock;

use super::common::*;
use super::*;

#[derive(Default)]
struct B11 {
    /// session IDs handed out by initialize (b11-12)
    sessions: HashMap<String, ()>,
    /// create_organization slots running now (b11-22)
    running: HashMap<Slot, Instant>,
    /// keyed slot → when its result was answered, before the store has it (b11-26)
    answered: HashMap<Slot, Instant>,
    /// (auth, tool, arguments) → when a read was answered, and its result (b11-11)
    cached: HashMap<(String, String, String), (Instant, Value)>,
    /// order → the status reads show instead of the store's (b11-14, b11-23)
    shown: HashMap<String, String>,
    /// order → (restaurant, status before its last move, when) (b11-17)
    moved: HashMap<String, (String, String, Instant)>,
    /// cursors that lead to an empty page → the auth they were issued to (b11-29)
    empty_cursors: HashMap<String, String>,
}

static STATE: LazyLock<Mutex<B11>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B11> {
    lock(&STATE)
}

impl Fault {
    /// A fault of this batch (`b11-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch11(self) -> bool {
        self.named_with("b11-")
    }
}

const CONTRACT_URI: &str = "chataigne://contract";
const RESTAURANT_URI: &str = "chataigne://restaurants/";
/// The revision served by the older list and transcript handlers (b11-13, b11-30).
const OLDER_REVISION: &str = "2025-06-18";
const BODY_MAX: usize = 1 << 20;
/// How long a read's answer is cached (b11-11).
const CACHE: Duration = Duration::from_secs(2);
/// How long after its answer a keyed result reaches the store (b11-26).
const WRITE_BEHIND: Duration = Duration::from_secs(1);
/// How long the status index keeps a moved order under its old status (b11-17).
const INDEX_LAG: Duration = Duration::from_secs(30);
const OLDER_DEFAULT: usize = 50;
/// The tool the second OAuth client's tools/list gains (b11-25).
const PARTNER_TOOL: &str = "sync_orders_to_provider";

/// Months a `from..=to` range touches (`YYYY-MM-DD`).
fn months_touched(from: &str, to: &str) -> Option<i64> {
    let ym = |d: &str| -> Option<i64> {
        Some(d.get(0..4)?.parse::<i64>().ok()? * 12 + d.get(5..7)?.parse::<i64>().ok()?)
    };
    Some(ym(to)? - ym(from)? + 1)
}

/// A few decomposed Latin letters composed (what the fingerprint's normalizer does, b11-15).
fn composed(text: &str) -> String {
    const TABLE: [(char, char, char); 16] = [
        ('e', '\u{301}', 'é'),
        ('e', '\u{300}', 'è'),
        ('e', '\u{302}', 'ê'),
        ('a', '\u{300}', 'à'),
        ('a', '\u{302}', 'â'),
        ('i', '\u{302}', 'î'),
        ('o', '\u{302}', 'ô'),
        ('u', '\u{300}', 'ù'),
        ('u', '\u{302}', 'û'),
        ('c', '\u{327}', 'ç'),
        ('E', '\u{301}', 'É'),
        ('E', '\u{300}', 'È'),
        ('A', '\u{300}', 'À'),
        ('C', '\u{327}', 'Ç'),
        ('e', '\u{308}', 'ë'),
        ('i', '\u{308}', 'ï'),
    ];
    let mut out = String::new();
    for c in text.chars() {
        if let Some(last) = out.chars().last()
            && let Some((_, _, z)) = TABLE.iter().find(|(b, m, _)| *b == last && *m == c)
        {
            out.pop();
            out.push(*z);
            continue;
        }
        out.push(c);
    }
    out
}

fn folded(args: &Map<String, Value>) -> Map<String, Value> {
    args.iter()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.clone(), |s| json!(composed(s)))))
        .collect()
}

fn partner_tool() -> Value {
    json!({
        "name": PARTNER_TOOL,
        "title": "Synchronize orders to a delivery provider",
        "description": "Push a restaurant's orders and menu availability to the partner delivery platform and pull its order updates back.",
        "inputSchema": { "type": "object", "additionalProperties": false, "required": ["restaurant_id", "provider"],
            "properties": { "restaurant_id": { "type": "string" }, "provider": { "type": "string" } } },
        "annotations": { "readOnlyHint": false, "destructiveHint": false },
    })
}

/// Every `ord_…` word of a text.
fn order_ids(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("ord_") && w.len() > 4)
        .map(String::from)
        .collect()
}

impl Proxy {
    /// Request-side rewrites of batch 11 (`Proxy::before`).
    pub(crate) async fn before_batch11(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let x = Exchange::of(call, None);
        let (t, m) = (x.tool.as_str(), x.method.as_str());
        match self.fault {
            B1101Proto2 if m == "resources/read" => {
                let uri = params(call).get("uri").and_then(Value::as_str).map(String::from)?;
                if uri != CONTRACT_URI && !uri.starts_with(RESTAURANT_URI) {
                    // A URI no handler knows falls through to the first resource listed.
                    set_param(call, "uri", json!(CONTRACT_URI));
                }
            }
            B1103Idem1 if is_keyed(t) && call.arg_str("idempotency_key").as_deref() == Some("") => {
                // An empty key is falsy: one is made up, as for a missing key.
                call.set_args(|a| {
                    a.insert("idempotency_key".into(), json!(random_alnum(32)));
                });
            }
            B1104Auth1 if is_endpoint(call) && is_notification(call) && call.auth().is_empty() => {
                // Notifications are accepted before the authentication middleware.
                return Some(no_body(StatusCode::ACCEPTED));
            }
            B1109Lim1 if t == "get_analytics" && call.arg_str("granularity").as_deref() == Some("month") => {
                let (from, to) = (call.arg_str("from")?, call.arg_str("to")?);
                if months_touched(&from, &to)? > 12 {
                    // The monthly series is bounded at 12 buckets.
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            B1111Env2 if kind(t) == Some(Kind::Read) && t.starts_with("get_") => {
                let key =
                    (call.auth(), t.to_owned(), serde_json::to_string(&call.args()).unwrap_or_default());
                let hit =
                    state().cached.get(&key).filter(|(at, _)| at.elapsed() < CACHE).map(|(_, r)| r.clone());
                if let Some(result) = hit {
                    // The cache keeps the whole answer, its request_id included.
                    return Some(Answer::rpc(call, "result", result));
                }
            }
            B1112Proto1 if is_endpoint(call) => {
                let sid = header_str(call, "mcp-session-id")?;
                let known = state().sessions.contains_key(&sid);
                if !known {
                    return Some(no_body(StatusCode::NOT_FOUND));
                }
                if call.method == Method::DELETE {
                    state().sessions.remove(&sid);
                    return Some(no_body(StatusCode::NO_CONTENT));
                }
                call.headers.remove("mcp-session-id");
            }
            B1113Pag1
                if list_key(t).is_some()
                    && revision(call).as_deref() == Some(OLDER_REVISION)
                    && !call.has_arg("limit")
                    && !call.has_arg("cursor") =>
            {
                // The older revision's handler has its own default page.
                call.set_args(|a| {
                    a.insert("limit".into(), json!(OLDER_DEFAULT));
                });
            }
            B1114Abs2 | B1123Pre3 if t == "update_order_status" => {
                let oid = call.arg_str("order_id")?;
                let shown = state().shown.get(&oid).cloned();
                if self.fault == B1114Abs2 && shown.as_deref() == Some("cancelled") {
                    return Some(refusal(call, ErrorCode::OrderStatusPreconditionFailed));
                }
                if self.fault == B1123Pre3
                    && call.arg_str("status").as_deref() == Some("accepted")
                    && call.arg_str("expected_status").as_deref() == Some("completed")
                    && self.current_status(call).await.as_deref() == Some("completed")
                {
                    // A completed order is reopened.
                    let read = json!({ "restaurant_id": call.arg("restaurant_id"), "order_id": oid });
                    let b = self.forward(&tool_call(call, "get_order", read)).await;
                    let mut order = data_of(&b)?["order"].clone();
                    set_status(&mut order, "accepted");
                    let mut s = state();
                    bound(&mut s.shown, RECENT);
                    s.shown.insert(oid.clone(), "accepted".into());
                    let result = success_result(
                        json!({ "order": order }),
                        fresh_meta(),
                        &format!("Order {oid} is now accepted"),
                    );
                    return Some(Answer::rpc(call, "result", result));
                }
            }
            B1115Idem3 if is_keyed(t) => {
                let (args, result) = self.stored(&slot(call, t)?)?;
                if args != call.args() && folded(&args) == folded(&call.args()) {
                    // The fingerprint hashes the arguments after composing accents.
                    return Some(replay(call, &result));
                }
            }
            B1116Lim7 if is_endpoint(call) && call.body.len() > BODY_MAX && is_notification(call) => {
                // Notifications are acknowledged before the body limit is applied.
                return Some(no_body(StatusCode::ACCEPTED));
            }
            B1121Auth4 => {
                for k in ["restaurant_id", "organization_id"] {
                    let Some(v) = call.arg_str(k) else { continue };
                    let lower = v.to_ascii_lowercase();
                    if lower != v && !self.exists(&v) && self.exists(&lower) {
                        // IDs are looked up through a case-insensitive collation.
                        call.set_args(|a| {
                            a.insert(k.into(), json!(lower));
                        });
                    }
                }
            }
            B1122Idem4 if t == "create_organization" => {
                let slot = slot(call, t)?;
                let key = derived_key(&slot.2);
                let already = {
                    let mut s = state();
                    bound(&mut s.running, RECENT);
                    s.running.insert(slot, Instant::now()).is_some()
                };
                if already {
                    // The in-progress claim locks a restaurant row: an organization has none.
                    call.set_args(|a| {
                        a.insert("idempotency_key".into(), json!(key));
                    });
                }
            }
            B1126Idem2 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let early = state().answered.get(&slot).is_some_and(|at| at.elapsed() < WRITE_BEHIND);
                if early {
                    // The result reaches the store after the answer: a retry meanwhile runs again.
                    let key = derived_key(&slot.2);
                    call.set_args(|a| {
                        a.insert("idempotency_key".into(), json!(key));
                    });
                }
            }
            B1129Pag3 => {
                let cursor = call.arg_str("cursor")?;
                let auth = state().empty_cursors.get(&cursor).cloned()?;
                let key = list_key(t)?;
                if auth == call.auth() {
                    let result = success_result(json!({ key: [] }), fresh_meta(), "No more items.");
                    return Some(Answer::rpc(call, "result", result));
                }
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 11 (`Proxy::after`).
    pub(crate) async fn after_batch11(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let x = Exchange::of(call, Some(a));
        let (t, m, code, success, replayed) =
            (x.tool.as_str(), x.method.as_str(), x.code, x.success, x.replayed);
        match self.fault {
            B1102Pag4
                if success && t == "list_orders" && call.has_arg("cursor") && !call.has_arg("status") =>
            {
                if let Some(items) = a.items_mut(t) {
                    // The continuation query carries the kitchen view's "active orders" default.
                    items.retain(|o| !matches!(o["status"].as_str(), Some("cancelled" | "rejected")));
                }
            }
            B1105Lim5 if success && a.flag("truncated") && list_key(t).is_some() => {
                let Some(items) = a.items_mut(t) else { return };
                if items.len() < 3 {
                    return;
                }
                let size = |v: &Value| serde_json::to_vec(v).map_or(0, |b| b.len());
                let n = items.len() - 1;
                if let Some(i) = (0..n).max_by_key(|i| size(&items[*i])) {
                    // The cut drops the largest items to fit, not the tail.
                    items.remove(i);
                }
            }
            B1106Proto2 if call.rpc_id() == json!("") => {
                if let Some(j) = a.json.as_mut()
                    && j.get("id").is_some()
                {
                    // The id is taken as absent when it is falsy.
                    j["id"] = Value::Null;
                    a.changed = true;
                }
            }
            B1107Env4 if code == Some(ErrorCode::CursorInvalid) => {
                // The cursor's refusal is built with a request_id of its own.
                set_error(a, "request_id", json!(new_request_id()));
            }
            B1108Pre1
                if success
                    && !replayed
                    && t == "update_order_status"
                    && call.arg_str("status").as_deref() == Some("accepted") =>
            {
                self.accept_next(call).await
            }
            B1110Auth5 if m == "prompts/get" => self.quote_guest(call, a).await,
            B1111Env2 if success && kind(t) == Some(Kind::Read) && t.starts_with("get_") => {
                let key =
                    (call.auth(), t.to_owned(), serde_json::to_string(&call.args()).unwrap_or_default());
                if let Some(result) = a.result().cloned() {
                    let mut s = state();
                    bound(&mut s.cached, RECENT);
                    s.cached.insert(key, (Instant::now(), result));
                }
            }
            B1112Proto1 if m == "initialize" && a.result().is_some() => {
                let sid = format!("chataigne {}", hex(32));
                if let Ok(v) = HeaderValue::from_str(&sid) {
                    a.headers.insert("mcp-session-id", v);
                    let mut s = state();
                    bound(&mut s.sessions, RECENT);
                    s.sessions.insert(sid, ());
                }
            }
            B1114Abs2 | B1123Pre3 if success && matches!(t, "get_order" | "list_orders") => {
                let shown = state().shown.clone();
                if shown.is_empty() {
                    return;
                }
                if let Some(items) = a.items_mut(t) {
                    for o in items.iter_mut() {
                        if let Some(s) = o["id"].as_str().and_then(|id| shown.get(id)) {
                            set_status(o, s);
                        }
                    }
                } else if let Some(r) = a.result_mut() {
                    let order = &mut r["structuredContent"]["data"]["order"];
                    if let Some(s) = order["id"].as_str().and_then(|id| shown.get(id)).cloned() {
                        set_status(order, &s);
                    }
                }
            }
            B1114Abs2 if success && !replayed && t == "create_instruction" => {
                let (Some(text), Some(rst)) = (call.arg_str("text"), call.arg_str("restaurant_id")) else {
                    return;
                };
                let lower = text.to_lowercase();
                if !(lower.contains("cancel") || lower.contains("annul")) {
                    return;
                }
                // The kitchen assistant acts on the instructions it is given.
                let mut s = state();
                bound(&mut s.shown, RECENT);
                for oid in order_ids(&text) {
                    if self.data.child_restaurant.get(&oid) == Some(&rst) {
                        s.shown.insert(oid, "cancelled".into());
                    }
                }
            }
            B1117Pre2 if success && !replayed && t == "update_order_status" => {
                let (Some(oid), Some(rst), Some(old)) = (
                    call.arg_str("order_id"),
                    call.arg_str("restaurant_id"),
                    call.arg_str("expected_status"),
                ) else {
                    return;
                };
                let mut s = state();
                bound(&mut s.moved, RECENT);
                s.moved.insert(oid, (rst, old, Instant::now()));
            }
            B1117Pre2 if success && t == "list_orders" => self.stale_index(call, a).await,
            B1118Env1 if success && list_key(t).is_some() && a.items(t).is_some_and(Vec::is_empty) => {
                if let Some(r) = a.result_mut() {
                    // Nothing to summarize, no text.
                    r["content"] = json!([]);
                }
            }
            B1119Sec2 if is_keyed(t) && code == Some(ErrorCode::InternalError) => append_message(
                a,
                " (idempotency store: redis://chataigne:Xr7-store-pass@idem-cache-1.internal:6379/2 refused SET NX; \
                 at src/state/idempotency.rs:142)",
            ),
            B1120Auth8 if t == "set_restaurant_status" && code == Some(ErrorCode::ScopeRequired) => {
                let Some(p) = self.caller(call) else { return };
                let Some(sibling) = self.data.sibling(&p, Some("restaurants:write")).cloned() else { return };
                // The change is applied, then the scope is checked for the answer.
                self.forward(&call.as_auth(&token_header(&sibling))).await;
            }
            B1122Idem4 if t == "create_organization" => {
                if let Some(slot) = slot(call, t) {
                    state().running.remove(&slot);
                }
            }
            B1124Proto4 => {
                let Some(e) = a.error_mut() else { return };
                if let Some(ms) = e.get("retry_after_ms").and_then(Value::as_u64) {
                    // The delay is computed in float milliseconds and sent as computed.
                    e.insert("retry_after_ms".into(), json!(ms as f64 - 0.5));
                }
            }
            B1125Abs1 if m == "tools/list" => {
                let Some(p) = self.caller(call) else { return };
                let first = self.data.personas.first().map(|x| x.client.clone()).unwrap_or_default();
                if p.client != first
                    && let Some(tools) = a.result_mut().and_then(|r| r["tools"].as_array_mut())
                {
                    // The partner client's feature flag adds the provider synchronization.
                    tools.push(partner_tool());
                }
            }
            B1126Idem2 if success && !replayed && is_keyed(t) => {
                if let Some(slot) = slot(call, t) {
                    let mut s = state();
                    bound(&mut s.answered, RECENT);
                    s.answered.entry(slot).or_insert_with(Instant::now);
                }
            }
            B1127Sec2 if code == Some(ErrorCode::InternalError) && self.injected_panic(t).await => {
                append_message(
                    a,
                    &format!(
                        " (thread 'tokio-runtime-worker' panicked at src/tools/{t}.rs:88:14: called \
                         `Option::unwrap()` on a `None` value)"
                    ),
                )
            }
            B1128Env3 if code == Some(ErrorCode::InvalidArguments) => {
                let Some(d) = ToolName::parse(t).map(ToolName::descriptor) else { return };
                let dump = serde_json::to_string_pretty(&d).unwrap_or_default();
                if let Some(text) = a.text_mut() {
                    // The validator's report carries the tool's whole descriptor.
                    let head = text.as_str().unwrap_or_default().to_owned();
                    *text = json!(format!("{head}\nThe tool expects:\n{dump}"));
                }
            }
            B1129Pag3
                if success
                    && list_key(t).is_some()
                    && call.has_arg("channel")
                    && a.next_cursor().is_none()
                    && a.items(t).is_some_and(|v| !v.is_empty()) =>
            {
                // has_more is computed on the rows before the channel filter.
                let cursor = URL_SAFE_NO_PAD_ENGINE.encode(random_alnum(30));
                if let Some(meta) = a.meta_mut() {
                    meta.insert("next_cursor".into(), json!(cursor));
                }
                let mut s = state();
                bound(&mut s.empty_cursors, RECENT);
                s.empty_cursors.insert(cursor, call.auth());
            }
            B1130Lim6
                if t == "get_transcript"
                    && code == Some(ErrorCode::OutputTooLarge)
                    && revision(call).as_deref() == Some(OLDER_REVISION) =>
            {
                let (Some(tid), Some(rst)) = (call.arg_str("transcript_id"), call.arg_str("restaurant_id"))
                else {
                    return;
                };
                let Some(tr) = self.data.transcripts.get(&tid).filter(|x| x["restaurant_id"] == json!(rst))
                else {
                    return;
                };
                // The older revision's handler never measures its output.
                let result =
                    success_result(json!({ "transcript": tr }), fresh_meta(), &format!("Transcript {tid}"));
                *a = Answer::rpc(call, "result", result);
            }
            _ => {}
        }
    }

    /// b11-08: accepting an order also accepts the next received order of the restaurant.
    async fn accept_next(&self, call: &Call) {
        let (Some(rst), Some(oid)) = (call.arg_str("restaurant_id"), call.arg_str("order_id")) else {
            return;
        };
        let list = tool_call(
            call,
            "list_orders",
            json!({ "restaurant_id": rst, "status": ["received"], "limit": 2 }),
        );
        let b = self.forward(&list).await;
        let Some(next) = b
            .items("list_orders")
            .and_then(|v| v.iter().filter_map(|o| o["id"].as_str()).find(|id| *id != oid).map(String::from))
        else {
            return;
        };
        let args = json!({ "restaurant_id": rst, "order_id": next, "status": "accepted", "expected_status": "received" });
        self.forward(&tool_call(call, "update_order_status", args)).await;
    }

    /// b11-10: answer_a_guest quotes the conversation's latest message, read by ID alone.
    async fn quote_guest(&self, call: &Call, a: &mut Answer) {
        let p = params(call);
        if p.get("name").and_then(Value::as_str) != Some("answer_a_guest") || a.result().is_none() {
            return;
        }
        let Some(cnv) = p.get("arguments").and_then(|x| x["conversation_id"].as_str()).map(String::from)
        else {
            return;
        };
        let Some(rst) = self.data.child_restaurant.get(&cnv).cloned() else { return };
        let Some(org) = self.owner(&rst) else { return };
        let Some(as_owner) = self.as_owner_of(call, &org) else { return };
        let read = json!({ "restaurant_id": rst, "conversation_id": cnv, "message_limit": 1 });
        let b = self.forward(&tool_call(&as_owner, "get_conversation", read)).await;
        let Some(text) = data_of(&b).and_then(|d| d["messages"][0]["text"].as_str()).map(String::from) else {
            return;
        };
        if let Some(t) = a
            .result_mut()
            .and_then(|r| r["messages"][0]["content"]["text"].as_str().map(String::from))
            .map(|t| format!("{t}\nThe guest's latest message: \"{text}\""))
            && let Some(r) = a.result_mut()
        {
            r["messages"][0]["content"]["text"] = json!(t);
        }
    }

    /// b11-17: a status-filtered list still holds orders moved off that status in the last 30 s.
    async fn stale_index(&self, call: &Call, a: &mut Answer) {
        let Some(filter) = call.arg("status").and_then(|v| v.as_array().cloned()) else { return };
        let Some(rst) = call.arg_str("restaurant_id") else { return };
        let moved: Vec<String> = state()
            .moved
            .iter()
            .filter(|(_, (r, old, at))| *r == rst && at.elapsed() < INDEX_LAG && filter.contains(&json!(old)))
            .map(|(id, _)| id.clone())
            .collect();
        for oid in moved {
            if a.items("list_orders").is_some_and(|v| v.iter().any(|o| o["id"] == json!(oid))) {
                continue;
            }
            let read = json!({ "restaurant_id": rst, "order_id": oid });
            let b = self.forward(&tool_call(call, "get_order", read)).await;
            let Some(mut order) = data_of(&b).map(|d| d["order"].clone()) else { continue };
            if filter.contains(&order["status"]) {
                continue;
            }
            let Some(items) = a.items_mut("list_orders") else { return };
            if let Some(keys) =
                items.first().and_then(Value::as_object).map(|o| o.keys().cloned().collect::<Vec<_>>())
                && let Some(o) = order.as_object_mut()
            {
                o.retain(|k, _| keys.contains(k));
            }
            let key = |o: &Value| {
                (o["created_at"].as_str().unwrap_or("").to_owned(), o["id"].as_str().unwrap_or("").to_owned())
            };
            let at = items.iter().position(|x| key(x) < key(&order)).unwrap_or(items.len());
            items.insert(at, order);
        }
    }

    /// Whether the control API says `tool`'s injected fault is a panic (b11-27).
    async fn injected_panic(&self, tool: &str) -> bool {
        let Some(secret) = self.control_secret.as_ref() else { return false };
        let Ok(r) = self
            .http
            .get(format!("{}/control/faults", self.upstream))
            .header("x-control-secret", secret)
            .send()
            .await
        else {
            return false;
        };
        let faults = r.json::<Value>().await.unwrap_or_default();
        faults["faults"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x["tool"] == json!(tool) && x["error"] == json!("panic")))
    }
}

use base64::engine::general_purpose::URL_SAFE_NO_PAD as URL_SAFE_NO_PAD_ENGINE;
