//! Batch 4 of the outside faults (`b4-…`), written from docs/CONTRACT.md and the MCP specification
//! alone: a third on surfaces other than a first-page tools/call (resources/read, ping,
//! notifications, the protected-resource metadata, continuation pages, replays, error answers), a
//! third on edges (UTF-8 bytes against characters, chunked bodies, calendar years and midnight, a
//! bound off by one, a deadline or a check that one tool misses), a third on wrong data in a right
//! envelope (a page's content, a stale read, a replay of another call, a wrong version or status,
//! a filter dropped on later pages, a count off by one).
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here; what the
//! batch remembers between calls is its own (`B4`), beside the proxy's `Memory`.

use std::sync::LazyLock;

use super::*;

/// A cursor the proxy made up for a page it built itself (the server would not know it).
#[derive(Clone)]
struct Minted {
    tool: String,
    filters: Map<String, Value>,
    auth: String,
    /// The last item of the page that carried it: the next page starts after it.
    last_id: String,
}

#[derive(Default)]
struct B4 {
    /// cursor → (ID, timestamp) of the last item of the page that carried it
    page_end: HashMap<String, (String, Value)>,
    minted: HashMap<String, Minted>,
    /// restaurant → (its status before the last set_restaurant_status, when)
    restaurant_writes: HashMap<String, (String, Instant)>,
    /// (auth, tool) → the data of the latest keyed call that ran
    latest: HashMap<(String, String), Value>,
    /// (conversation, message, when) of the messages sent through the proxy
    sent: Vec<(String, String, Instant)>,
    /// keyed calls that ran: (auth, tool, key) → the server's day then
    first_day: HashMap<Slot, i64>,
    /// a protocol version initialize echoed → the one the server chose
    echoed: HashMap<String, String>,
    /// orders as answers last showed them
    orders: HashMap<String, Value>,
}

static STATE: LazyLock<Mutex<B4>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B4> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

impl Fault {
    /// A fault of this batch (`b4-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch4(self) -> bool {
        CATALOGUE.iter().any(|(f, name, ..)| *f == self && name.starts_with("b4-"))
    }
}

const RESTAURANT_URI: &str = "chataigne://restaurants/";
const MIB: usize = 1 << 20;

fn refusal(call: &Call, code: ErrorCode) -> Answer {
    Answer::rpc(call, "result", error_result(code, &new_request_id()))
}

/// The timestamp a list is walked by (orders, conversations, instructions… `created_at`;
/// transcripts `call_started_at`; messages `sent_at`).
fn timestamp(item: &Value) -> Value {
    ["created_at", "call_started_at", "sent_at"]
        .iter()
        .find_map(|k| item.get(*k))
        .cloned()
        .unwrap_or_default()
}

fn persona_of_auth<'a>(data: &'a Dataset, auth: &str) -> Option<&'a Persona> {
    data.persona(auth.strip_prefix("Bearer ").unwrap_or_default())
}

fn resource_uri(call: &Call) -> Option<String> {
    if call.rpc_method() != Some("resources/read") {
        return None;
    }
    call.rpc.as_ref()?.get("params")?.get("uri")?.as_str().map(String::from)
}

/// Strings trimmed and lowercased, everywhere in a value.
fn normalized(v: &Value) -> Value {
    match v {
        Value::String(s) => json!(s.trim().to_lowercase()),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), normalized(x))).collect()),
        other => other.clone(),
    }
}

/// `from` + one calendar year (29 February + 1 year is 28 February), in days.
fn plus_one_year(days: i64) -> i64 {
    let (y, m, d) = chataigne_contract::time::civil_from_days(days);
    let mut d2 = d;
    while chataigne_contract::time::parse_date(&format!("{:04}-{m:02}-{d2:02}", y + 1)).is_none() && d2 > 28 {
        d2 -= 1;
    }
    chataigne_contract::time::days_from_civil(y + 1, m, d2)
}

fn summary_of(tool: &str, n: usize) -> String {
    format!("{n} {}", items_key(tool).unwrap_or("items"))
}

impl Proxy {
    /// Request-side rewrites of batch 4 (`Proxy::before`).
    pub(crate) async fn before_batch4(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        match self.fault {
            B4Proto1VersionEcho => {
                let asked =
                    call.headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok())?.to_owned();
                let served = state().echoed.get(&asked).cloned()?;
                if let Ok(v) = HeaderValue::from_str(&served) {
                    call.headers.insert("mcp-protocol-version", v);
                }
            }
            B4Lim7ChunkedUnlimited => return self.chunked_body(call),
            B4Idem1KeyUtf8Bytes if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let (chars, bytes) = (key.chars().count(), key.len());
                if (8..=255).contains(&chars) && bytes > 255 {
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
                if chars < 8 && (8..=255).contains(&bytes) {
                    // Long enough in bytes: the server downstream of the check sees a valid key.
                    let padded = format!("{key}{}", "~".repeat(8 - chars));
                    call.set_args(|a| {
                        a.insert("idempotency_key".into(), json!(padded));
                    });
                }
            }
            B4Lim1CalendarYear if t == "get_analytics" => {
                let from = call.arg_str("from").as_deref().and_then(chataigne_contract::time::parse_date)?;
                let to = call.arg_str("to").as_deref().and_then(chataigne_contract::time::parse_date)?;
                if to >= from && to - from < 366 && to >= plus_one_year(from) {
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            B4Pag8Limit100Refused
                if t == "get_conversation"
                    && call.arg("message_limit").and_then(|l| l.as_f64()) == Some(100.0) =>
            {
                return Some(refusal(call, ErrorCode::InvalidArguments));
            }
            B4Lim4AnalyticsReadDeadline if t == "get_analytics" => {
                let (read_ms, analytics_ms) = self.deadlines().await;
                if read_ms < analytics_ms {
                    let forwarded =
                        tokio::time::timeout(Duration::from_millis(read_ms), self.forward(call)).await;
                    return Some(forwarded.unwrap_or_else(|_| refusal(call, ErrorCode::ToolTimeout)));
                }
            }
            B4Pag2SearchLimitClamped if t == "search_transcripts" => {
                let limit = call.arg("limit").and_then(|l| l.as_f64())?;
                if limit > 50.0 {
                    call.set_args(|a| {
                        a.insert("limit".into(), json!(50));
                    });
                } else if limit < 1.0 {
                    call.set_args(|a| {
                        a.remove("limit");
                    });
                }
            }
            B4Lim2Write500thRefused if kind(t).is_some_and(Kind::is_write) => {
                return self.count(call, t, 499);
            }
            B4Idem6ForgottenAtMidnight if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let first = state().first_day.get(&(call.auth(), t.to_owned(), key.clone())).copied()?;
                let today = self.server_now_ms().await? as i64 / 86_400_000;
                if today != first {
                    // Yesterday's partition is gone: the key is new again today.
                    let head: String = key.chars().take(240).collect();
                    call.set_args(|a| {
                        a.insert("idempotency_key".into(), json!(format!("{head}~d{today}")));
                    });
                }
            }
            B4Idem5SharedAcrossUsers if is_keyed(t) => {
                // The store's slot is (client, tool, key): another user's stored result is found.
                let key = call.arg_str("idempotency_key")?;
                let p = self.data.persona(&call.token())?.clone();
                let other = lock(&self.memory).keyed.keys().find_map(|(auth, tool, k)| {
                    let q = persona_of_auth(&self.data, auth)?;
                    (tool == t && *k == key && q.client == p.client && q.user != p.user).then(|| auth.clone())
                });
                if let Some(auth) = other {
                    call.set_auth(&auth);
                }
            }
            B4Pag1SentinelRow if list_key(t).is_some() => {
                let limit = match call.arg("limit") {
                    None => 20,
                    Some(l) => l.as_u64().filter(|l| (2..=50).contains(l))?,
                };
                call.set_args(|a| {
                    a.insert("limit".into(), json!(limit - 1));
                });
            }
            B4Pag4FiltersDroppedLater if t == "list_orders" && call.has_arg("cursor") => {
                return self.unfiltered_page(call).await;
            }
            B4Pag7MessageCursorAuthority if t == "get_conversation" => {
                let cursor = call.arg_str("cursor")?;
                let minted = state().minted.get(&cursor).cloned()?;
                if minted.tool != t || minted.filters != call.filters() || minted.auth != call.auth() {
                    return Some(refusal(call, ErrorCode::CursorInvalid));
                }
                return self.messages_as_owner(call, &minted.last_id).await;
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 4 (`Proxy::after`), then where the answer's page ends.
    pub(crate) async fn after_batch4(&self, call: &Call, a: &mut Answer) {
        self.rewrite_batch4(call, a).await;
        // Where every page ends, for the faults that continue a walk themselves.
        let t = call.tool().unwrap_or_default();
        if a.is_success()
            && items_key(t).is_some()
            && let Some(cursor) = a.next_cursor()
            && let Some(last) = a.items(t).and_then(|i| i.last())
        {
            let end = (last["id"].as_str().unwrap_or_default().to_owned(), timestamp(last));
            state().page_end.insert(cursor, end);
        }
    }

    async fn rewrite_batch4(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let code = a.code();
        let success = a.is_success();
        let replayed = success && a.flag("replayed");
        match self.fault {
            B4Auth4ResourceForeignOracle => {
                let Some(uri) = resource_uri(call) else { return };
                let Some(id) = uri.strip_prefix(RESTAURANT_URI) else { return };
                let not_found = matches!(a.rpc_error_code(), Some(-32002 | -32602));
                if not_found && id.starts_with("rst_") && self.exists(id) {
                    let rid = new_request_id();
                    let body = error_result(ErrorCode::ResourceForbidden, &rid)["structuredContent"]["data"]
                        ["error"]
                        .clone();
                    if let Some(j) = a.json.as_mut() {
                        j["error"] = json!({ "code": -32603, "message": ErrorCode::ResourceForbidden.as_str(),
                            "data": { "uri": uri, "error": body } });
                        a.changed = true;
                    }
                }
            }
            B4Auth3CursorPageUnscoped if code == Some(ErrorCode::ScopeRequired) => {
                let Some(cursor) = call.arg_str("cursor") else { return };
                let issuer = lock(&self.memory).cursors.get(&cursor).map(|i| i.auth.clone());
                let Some(issuer) = issuer.filter(|i| *i != call.auth()) else { return };
                let same = match (persona_of_auth(&self.data, &issuer), self.data.persona(&call.token())) {
                    (Some(x), Some(y)) => x.user == y.user && x.client == y.client,
                    _ => false,
                };
                if same {
                    // The page is served under the authority the first page was checked with.
                    let b = self.forward(&call.as_auth(&issuer)).await;
                    if b.is_success() {
                        *a = b;
                    }
                }
            }
            B4Proto1PingStatus if method.as_deref() == Some("ping") && a.result() == Some(&json!({})) => {
                if let Some(r) = a.result_mut() {
                    *r = json!({ "status": "ok" });
                }
            }
            B4Proto1NotificationAnswered if a.status == StatusCode::ACCEPTED => {
                let notification =
                    call.rpc.as_ref().is_some_and(|r| r.get("method").is_some() && r.get("id").is_none());
                if notification {
                    let rid = a.headers.get("x-request-id").cloned();
                    *a = Answer::rpc(call, "result", json!({}));
                    if let Some(rid) = rid {
                        a.headers.insert("x-request-id", rid);
                    }
                }
            }
            B4Auth1MetadataNoAuthServer
                if call.uri.path().starts_with("/.well-known/oauth-protected-resource") =>
            {
                if let Some(doc) = a.json.as_mut().and_then(Value::as_object_mut) {
                    doc.insert("authorization_servers".into(), json!([]));
                    a.changed = true;
                }
            }
            B4Pag7MessageCursorAuthority
                if t == "get_conversation" && code == Some(ErrorCode::ResourceForbidden) =>
            {
                let Some(cursor) = call.arg_str("cursor") else { return };
                let end = state().page_end.get(&cursor).map(|e| e.0.clone());
                if let Some(last) = end
                    && let Some(b) = self.messages_as_owner(call, &last).await
                {
                    *a = b;
                }
            }
            B4Env4ValidationIdDiffers if code == Some(ErrorCode::InvalidArguments) => {
                set_error(a, "request_id", json!(new_request_id()));
            }
            B4Env1ReplayMetaPartial if replayed => {
                if let Some(meta) = a.meta_mut() {
                    meta.remove("truncated");
                }
            }
            B4Pre2ResourceReadStale => {
                if t == "set_restaurant_status" && success {
                    let (Some(rst), Some(old)) =
                        (call.arg_str("restaurant_id"), call.arg_str("expected_status"))
                    else {
                        return;
                    };
                    state().restaurant_writes.insert(rst, (old, Instant::now()));
                    return;
                }
                let Some(uri) = resource_uri(call) else { return };
                let Some(id) = uri.strip_prefix(RESTAURANT_URI) else { return };
                let cached = state().restaurant_writes.get(id).cloned();
                let Some((old, _)) = cached.filter(|(_, at)| at.elapsed() < Duration::from_secs(30)) else {
                    return;
                };
                let Some(text) = a.result().and_then(|r| r["contents"][0]["text"].as_str()).map(String::from)
                else {
                    return;
                };
                let Ok(mut envelope) = serde_json::from_str::<Value>(&text) else { return };
                if envelope["data"]["restaurant"].is_object() {
                    envelope["data"]["restaurant"]["status"] = json!(old);
                    if let Some(r) = a.result_mut() {
                        r["contents"][0]["text"] = json!(envelope.to_string());
                    }
                }
            }
            B4Env5MismatchValidation if code == Some(ErrorCode::IdempotencyMismatch) => {
                set_error(a, "category", json!(Category::Validation.as_str()));
            }
            B4Env3SummaryCutChars if success && matches!(t, "send_message" | "create_instruction") => {
                let quoted = call.arg_str("text").unwrap_or_default();
                if let Some(text) = a.text_mut() {
                    let summary = format!("{}: \"{quoted}\"", text.as_str().unwrap_or_default());
                    *text = json!(summary.chars().take(4096).collect::<String>());
                }
            }
            B4Auth6StaffSetsStatus
                if t == "set_restaurant_status" && code == Some(ErrorCode::ResourceForbidden) =>
            {
                self.staff_sets_status(call, a).await;
            }
            B4Idem6ForgottenAtMidnight if success && is_keyed(t) && !replayed => {
                let Some(key) = call.arg_str("idempotency_key") else { return };
                // The key as the client sent it: the one `before` may have renamed for today.
                let key = match key.rsplit_once("~d") {
                    Some((k, day)) if !day.is_empty() && day.bytes().all(|b| b.is_ascii_digit()) => {
                        k.to_owned()
                    }
                    _ => key,
                };
                if let Some(ms) = self.server_now_ms().await {
                    state()
                        .first_day
                        .entry((call.auth(), t.to_owned(), key))
                        .or_insert(ms as i64 / 86_400_000);
                }
            }
            B4Pag4TieSkippedAtBoundary if success && t == "list_orders" => {
                self.skip_ties(call, a).await;
            }
            B4Idem2ReplayLatestResult if success && is_keyed(t) => {
                let slot = (call.auth(), t.to_owned());
                let data = a.result().map(|r| r["structuredContent"]["data"].clone()).unwrap_or_default();
                if !replayed {
                    state().latest.insert(slot, data);
                } else if let Some(latest) = state().latest.get(&slot).cloned()
                    && let Some(r) = a.result_mut()
                {
                    r["structuredContent"]["data"] = latest;
                }
            }
            B4Pre2WriteReturnsOldRow if success => self.old_row(call, a, t),
            B4Idem2SentMessageUnseen if success => self.lagging_replica(call, a, t, replayed).await,
            B4Proto1VersionEcho if method.as_deref() == Some("initialize") => {
                let asked =
                    call.rpc.as_ref().and_then(|r| r["params"]["protocolVersion"].as_str()).map(String::from);
                let served = a.result().and_then(|r| r["protocolVersion"].as_str()).map(String::from);
                if let (Some(asked), Some(served)) = (asked, served)
                    && asked != served
                    && chataigne_contract::time::parse_date(&asked).is_some()
                {
                    state().echoed.insert(asked.clone(), served);
                    if let Some(r) = a.result_mut() {
                        r["protocolVersion"] = json!(asked);
                    }
                }
            }
            B4Idem3NormalizedArgs if code == Some(ErrorCode::IdempotencyMismatch) => {
                let key = call.arg_str("idempotency_key").unwrap_or_default();
                let stored =
                    lock(&self.memory).keyed.get(&(call.auth(), t.to_owned(), key)).map(|k| k.args.clone());
                if let Some(args) = stored
                    && normalized(&Value::Object(args.clone())) == normalized(&Value::Object(call.args()))
                {
                    let b = self.forward(&call.with_args(|x| *x = args)).await;
                    *a = b;
                }
            }
            B4Proto4AnalyticsStringCents if success && t == "get_analytics" => {
                if let Some(r) = a.result_mut() {
                    walk_mut(&mut r["structuredContent"]["data"], &mut |k, v| {
                        if k.ends_with("_cents") && v.is_number() {
                            *v = json!(v.to_string());
                        }
                    });
                }
            }
            _ => {}
        }
    }

    async fn deadlines(&self) -> (u64, u64) {
        let fallback = (Kind::Read.deadline_ms(), Kind::Analytics.deadline_ms());
        let Some(secret) = &self.control_secret else { return fallback };
        let url = format!("{}/control/deadlines", self.upstream);
        let Ok(r) = self.http.get(url).header("x-control-secret", secret).send().await else {
            return fallback;
        };
        let Ok(d) = r.json::<Value>().await else { return fallback };
        (d["read_ms"].as_u64().unwrap_or(fallback.0), d["analytics_ms"].as_u64().unwrap_or(fallback.1))
    }

    /// b4-lim7-chunked-unlimited: the size limit is checked on Content-Length only, so a chunked
    /// body over 1 MiB is read whole and answered as the JSON-RPC layer would.
    fn chunked_body(&self, call: &Call) -> Option<Answer> {
        let chunked = call
            .headers
            .get(header::TRANSFER_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        if call.method != Method::POST
            || call.uri.path() != "/mcp"
            || !chunked
            || call.headers.contains_key(header::CONTENT_LENGTH)
            || call.body.len() <= MIB
            // Origin and the token are checked before the body is read: those refusals stand.
            || call.headers.contains_key(header::ORIGIN)
            || self.data.persona(&call.token()).is_none_or(|p| p.audience.is_some())
        {
            return None;
        }
        let mut a = match &call.rpc {
            None => Answer::rpc(call, "error", json!({ "code": -32700, "message": "Parse error" })),
            Some(r) if r.get("method").and_then(Value::as_str) == Some("tools/call") => {
                refusal(call, ErrorCode::InvalidArguments)
            }
            Some(_) => Answer::rpc(call, "error", json!({ "code": -32602, "message": "Invalid params" })),
        };
        if a.result().is_none() {
            a.status = StatusCode::BAD_REQUEST;
        }
        Some(a)
    }

    /// b4-auth6-staff-sets-status: a staff member who may read the restaurant gets past the
    /// role check, as if the tool needed staff.
    async fn staff_sets_status(&self, call: &Call, a: &mut Answer) {
        let Some(p) = self.data.persona(&call.token()).cloned() else { return };
        let Some(rst) = call.arg_str("restaurant_id") else { return };
        let Some(org) = self.owner(&rst) else { return };
        let staff = self.data.membership(&p.user, &org).is_some_and(|m| m.role == "staff" && !m.revoked);
        if !staff {
            return;
        }
        // Membership and reach are still checked (now, not from the dataset): only the role is not.
        let probe = self.forward(&tool_call(call, "get_restaurant", json!({ "restaurant_id": rst }))).await;
        let Some(owner) = self.data.owner_of_org(&org).map(token_header) else { return };
        if probe.is_success() {
            let b = self.forward(&call.as_auth(&owner)).await;
            if b.is_success() {
                *a = b;
            }
        }
    }

    /// The page `call` gives once its first `n` items are skipped (a call of size `n` through the
    /// `size` member, then the page after its cursor): `None` when upstream refused a step,
    /// `Some(None)` when nothing follows those `n`.
    async fn page_after(&self, call: &Call, size: &str, n: usize) -> Option<Option<Answer>> {
        let skip = call.with_args(|x| {
            x.insert(size.into(), json!(n));
        });
        let s = self.forward(&skip).await;
        if !s.is_success() {
            return None;
        }
        let Some(after) = s.next_cursor() else { return Some(None) };
        let b = self
            .forward(&call.with_args(|x| {
                x.insert("cursor".into(), json!(after));
            }))
            .await;
        b.is_success().then_some(Some(b))
    }

    /// b4-pag4-tie-skipped-at-boundary: the next page starts strictly after the last item's
    /// created_at, so the orders tied with it are lost.
    async fn skip_ties(&self, call: &Call, a: &mut Answer) {
        let Some(cursor) = call.arg_str("cursor") else { return };
        let Some((_, ts)) = state().page_end.get(&cursor).cloned() else { return };
        let tied = a.items("list_orders").map_or(0, |i| i.iter().take_while(|x| timestamp(x) == ts).count());
        if tied == 0 {
            return;
        }
        match self.page_after(call, "limit", tied).await {
            None => {}
            Some(None) => end_page(a, "list_orders"),
            Some(Some(b)) => *a = b,
        }
    }

    /// b4-pre2-write-returns-old-row: the order the write answers is the row read before it.
    fn old_row(&self, call: &Call, a: &mut Answer, t: &str) {
        let mut s = state();
        if matches!(t, "get_order" | "list_orders") {
            let orders = match t {
                "get_order" => a.result().map(|r| vec![r["structuredContent"]["data"]["order"].clone()]),
                _ => a.items(t).cloned(),
            };
            for o in orders.unwrap_or_default() {
                if let Some(id) = o["id"].as_str() {
                    s.orders.insert(id.to_owned(), o.clone());
                }
            }
            return;
        }
        if t != "update_order_status" {
            return;
        }
        let Some(new) = a.result().map(|r| r["structuredContent"]["data"]["order"].clone()) else { return };
        let Some(id) = new["id"].as_str().map(String::from) else { return };
        let expected = call.arg("expected_status").unwrap_or_default();
        let old = match s.orders.get(&id) {
            Some(o) if o["status"] == expected => o.clone(),
            _ => {
                let mut o = new.clone();
                o["status"] = expected;
                o
            }
        };
        s.orders.insert(id, new);
        drop(s);
        if let Some(r) = a.result_mut() {
            r["structuredContent"]["data"]["order"] = old;
        }
    }

    /// b4-idem2-sent-message-unseen: get_conversation reads a replica that lags 30 s behind
    /// send_message.
    async fn lagging_replica(&self, call: &Call, a: &mut Answer, t: &str, replayed: bool) {
        if t == "send_message" && !replayed {
            let message = a.result().and_then(|r| r["structuredContent"]["data"]["message"]["id"].as_str());
            if let (Some(cnv), Some(msg)) = (call.arg_str("conversation_id"), message.map(String::from)) {
                state().sent.push((cnv, msg, Instant::now()));
            }
            return;
        }
        if t != "get_conversation" || call.has_arg("cursor") {
            return;
        }
        let cnv = call.arg_str("conversation_id").unwrap_or_default();
        let recent: HashSet<String> = {
            let mut s = state();
            s.sent.retain(|(_, _, at)| at.elapsed() < Duration::from_secs(30));
            s.sent.iter().filter(|(c, ..)| *c == cnv).map(|(_, m, _)| m.clone()).collect()
        };
        if recent.is_empty() {
            return;
        }
        let head = a.items(t).map_or(0, |i| {
            i.iter().take_while(|m| m["id"].as_str().is_some_and(|id| recent.contains(id))).count()
        });
        if head > 0 {
            // The page as the replica has it: the same size, starting after the unseen ones.
            match self.page_after(call, "message_limit", head).await {
                None => return,
                Some(None) => end_page(a, t),
                Some(Some(b)) => {
                    let (items, next) = (b.items(t).cloned().unwrap_or_default(), b.next_cursor());
                    if let Some(i) = a.items_mut(t) {
                        *i = items;
                    }
                    if let Some(meta) = a.meta_mut() {
                        match next {
                            Some(c) => meta.insert("next_cursor".into(), json!(c)),
                            None => meta.remove("next_cursor"),
                        };
                    }
                }
            }
        }
        let newest = a.items(t).and_then(|i| i.first()).map(|m| m["sent_at"].clone());
        if let Some(r) = a.result_mut() {
            let c = &mut r["structuredContent"]["data"]["conversation"];
            if let Some(n) = c["message_count"].as_u64() {
                c["message_count"] = json!(n.saturating_sub(recent.len() as u64));
            }
            if let Some(newest) = newest {
                c["last_message_at"] = newest;
            }
        }
    }

    /// Walk `tool` with `filters` as `base`'s caller, in the largest pages, and return the first
    /// page's data and the `n` items after the item `last_id` (and whether more follow); `Err`
    /// with the server's answer when a page is refused.
    async fn walk_after(
        &self,
        base: &Call,
        tool: &str,
        filters: &Map<String, Value>,
        last_id: &str,
        n: usize,
    ) -> Result<(Value, Vec<Value>, bool), Answer> {
        let (page_arg, page_max) =
            if tool == "get_conversation" { ("message_limit", 100) } else { ("limit", 50) };
        let mut cursor: Option<String> = None;
        let mut found = false;
        let mut out = Vec::new();
        let mut first: Option<Value> = None;
        loop {
            let mut args = filters.clone();
            args.insert(page_arg.into(), json!(page_max));
            if let Some(c) = &cursor {
                args.insert("cursor".into(), json!(c));
            }
            let a = self.forward(&tool_call(base, tool, Value::Object(args))).await;
            if !a.is_success() {
                return Err(answer_as(base, a));
            }
            let data = a.result().map(|r| r["structuredContent"]["data"].clone()).unwrap_or_default();
            let head = first.get_or_insert(data).clone();
            for item in a.items(tool).cloned().unwrap_or_default() {
                if found {
                    if out.len() == n {
                        return Ok((head, out, true));
                    }
                    out.push(item);
                } else if item["id"].as_str() == Some(last_id) {
                    found = true;
                }
            }
            cursor = a.next_cursor();
            if cursor.is_none() {
                return Ok((head, out, false));
            }
        }
    }

    /// A page the proxy builds: `items` under the tool's key (and the rest of `data`), with a
    /// cursor it mints when more follow.
    fn built_page(&self, call: &Call, tool: &str, mut data: Value, items: Vec<Value>, more: bool) -> Answer {
        let key = items_key(tool).unwrap_or("items");
        let n = items.len();
        let mut meta = fresh_meta();
        if more && let Some(last) = items.last() {
            let cursor = format!("{}{}", random_alnum(43), "b4");
            let minted = Minted {
                tool: tool.to_owned(),
                filters: call.filters(),
                auth: call.auth(),
                last_id: last["id"].as_str().unwrap_or_default().to_owned(),
            };
            let mut s = state();
            s.page_end.insert(cursor.clone(), (minted.last_id.clone(), timestamp(last)));
            s.minted.insert(cursor.clone(), minted);
            meta.insert("next_cursor".into(), json!(cursor));
        }
        if !data.is_object() {
            data = json!({});
        }
        data[key] = Value::Array(items);
        Answer::rpc(call, "result", success_result(data, meta, &summary_of(tool, n)))
    }

    /// b4-pag4-filters-dropped-later: a list_orders page reached through a cursor is the next
    /// page of the restaurant's unfiltered walk.
    async fn unfiltered_page(&self, call: &Call) -> Option<Answer> {
        let cursor = call.arg_str("cursor")?;
        let filters = call.filters();
        if filters.keys().all(|k| k == "restaurant_id") {
            return None;
        }
        let minted = state().minted.get(&cursor).cloned();
        let last_id = match minted {
            Some(m) => {
                if m.tool != "list_orders" || m.filters != filters || m.auth != call.auth() {
                    return Some(refusal(call, ErrorCode::CursorInvalid));
                }
                m.last_id
            }
            None => {
                // The server's own cursor: it checks it (tampering, filters, client, access).
                let checked = self.forward(call).await;
                let end = state().page_end.get(&cursor).map(|e| e.0.clone());
                match end {
                    Some(id) if checked.is_success() => id,
                    _ => return Some(checked),
                }
            }
        };
        let limit = call.arg("limit").and_then(|l| l.as_u64()).unwrap_or(20) as usize;
        let restaurant: Map<String, Value> = filters
            .iter()
            .filter(|(k, _)| *k == "restaurant_id")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match self.walk_after(call, "list_orders", &restaurant, &last_id, limit).await {
            Ok((_, items, more)) => Some(self.built_page(call, "list_orders", json!({}), items, more)),
            Err(a) => Some(a),
        }
    }

    /// b4-pag7-message-cursor-authority: the message page after `last_id`, read as the
    /// organization's owner: the cursor carries the access its first page was granted.
    async fn messages_as_owner(&self, call: &Call, last_id: &str) -> Option<Answer> {
        let rst = call.arg_str("restaurant_id")?;
        let owner = self.auth_for_org(&self.owner(&rst)?)?;
        let filters = call.filters();
        let n = call.arg("message_limit").and_then(|l| l.as_u64()).unwrap_or(50) as usize;
        let base = call.as_auth(&owner);
        let (mut data, items, more) =
            self.walk_after(&base, "get_conversation", &filters, last_id, n).await.ok()?;
        if let Some(d) = data.as_object_mut() {
            d.remove("messages");
        }
        Some(self.built_page(call, "get_conversation", data, items, more))
    }
}

/// An answer made the last page: no items, no `next_cursor`.
fn end_page(a: &mut Answer, tool: &str) {
    if let Some(items) = a.items_mut(tool) {
        items.clear();
    }
    if let Some(meta) = a.meta_mut() {
        meta.remove("next_cursor");
    }
}
