//! Batch 5 of the outside faults (`b5-…`), written from docs/CONTRACT.md, its French seed and the
//! MCP specification alone, without reading the suite: a third on surfaces other than a
//! first-page tools/call (the 401 challenge, sessions, ping, prompts, resources and their
//! templates, replays, error answers, tools/list pages), a third on edges (grapheme clusters and
//! UTF-8 bytes against characters, a bound off by one, a daylight-saving day, media-type
//! parameters, ids past 2^53, re-encoded cursors, a check or a rate one tool gets wrong), a third
//! on wrong data in a right envelope (a page's order, a stale list, an effect behind a refusal,
//! a replay of the wrong result, a duplicated item, a wrong scope, a reused request_id).
//! Names are opaque (`b5-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here; what the
//! batch remembers between calls is its own (`B5`), bounded, beside the proxy's `Memory`.

use std::collections::VecDeque;
use std::sync::LazyLock;

use chataigne_contract::tools::ORDER_LIFECYCLE;
use sha2::{Digest, Sha256};

use super::*;

#[derive(Default)]
struct B5 {
    /// Session IDs handed out on initialize, oldest first (b5-04).
    sessions: HashSet<String>,
    session_order: VecDeque<String>,
    /// keyed call → (server ms of its first run, its arguments, its result) (b5-11)
    first_run: HashMap<Slot, (i64, Map<String, Value>, Value)>,
    /// (client, user) → (window start in server ms, calls) for get_analytics (b5-14)
    analytics_windows: HashMap<String, (i64, u32)>,
    /// order → (its status before the last update, when) (b5-09)
    order_writes: HashMap<String, (String, Instant)>,
    /// cursor of a page cut for size → the last item of that page (b5-21)
    cut_pages: HashMap<String, Value>,
    /// error code → the one request_id its refusals carry (b5-30)
    fixed_ids: HashMap<String, String>,
    replays: u64,
}

static STATE: LazyLock<Mutex<B5>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B5> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep a map bounded: past `n` entries it starts again (faults only need recent entries).
fn bound<K, V>(m: &mut HashMap<K, V>, n: usize) {
    if m.len() > n {
        m.clear();
    }
}

/// Organizations of the published dataset: id → (name, created_at) (b5-06).
static ORGS: LazyLock<HashMap<String, (String, String)>> = LazyLock::new(|| {
    let path = std::env::var("FAULT_DATASET").unwrap_or_else(|_| "fixtures/dataset.json".into());
    let d: Value =
        std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    d["organizations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let s = |k: &str| o[k].as_str().map(String::from);
            Some((s("id")?, (s("name")?, s("created_at")?)))
        })
        .collect()
});

impl Fault {
    /// A fault of this batch (`b5-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch5(self) -> bool {
        CATALOGUE.iter().any(|(f, name, ..)| *f == self && name.starts_with("b5-"))
    }
}

const ORDER_URI: &str = "chataigne://orders/";
const TOOLS_PAGE_2: &str = "dG9vbHM6cGFnZToy";
const TWO_POW_53: u64 = 1 << 53;

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

/// Grapheme clusters as a home-made counter sees them: combining marks, variation selectors,
/// skin tones and tags extend the previous character, ZWJ joins the next one, and regional
/// indicators pair into one flag (b5-02).
fn graphemes(s: &str) -> usize {
    let (mut n, mut join_next, mut open_flag) = (0usize, false, false);
    for c in s.chars() {
        let cp = c as u32;
        let extend = matches!(cp, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF
            | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F | 0x1F3FB..=0x1F3FF | 0xE0020..=0xE007F | 0x200D);
        if n > 0 && join_next {
            join_next = false;
            open_flag = false;
            continue;
        }
        if n > 0 && extend {
            join_next = cp == 0x200D;
            continue;
        }
        let flag = (0x1F1E6..=0x1F1FF).contains(&cp);
        if flag && open_flag {
            open_flag = false;
            continue;
        }
        n += 1;
        open_flag = flag;
    }
    n
}

/// Europe/Paris's offset from UTC at `t` (seconds): summer time from the last Sunday of March to
/// the last Sunday of October, both at 01:00 UTC (b5-11).
fn paris_offset(t: i64) -> i64 {
    use chataigne_contract::time::{civil_from_days, days_from_civil};
    let (y, ..) = civil_from_days(t.div_euclid(86_400));
    let last_sunday = |m: u32| {
        let last = days_from_civil(y, m + 1, 1) - 1;
        last - (last + 4).rem_euclid(7)
    };
    let (start, end) = (last_sunday(3) * 86_400 + 3600, last_sunday(10) * 86_400 + 3600);
    if (start..end).contains(&t) { 7200 } else { 3600 }
}

/// The same wall-clock time the next day in Europe/Paris, in UTC seconds: 23 h after `t` across
/// the spring change, 25 h across the autumn one.
fn paris_next_day(t: i64) -> i64 {
    let target = t + paris_offset(t) + 86_400;
    [3600, 7200].iter().map(|o| target - o).find(|u| u + paris_offset(*u) == target).unwrap_or(target - 3600)
}

/// A key past 255 characters, as a store that accepts it keeps it (b5-02).
fn digest_key(key: &str) -> String {
    let hex: String = Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("gk~{}", &hex[..40])
}

/// A cursor as its standard-base64 or padded spellings decode: the server's own form (b5-26).
fn canonical_cursor(cursor: &str) -> String {
    cursor
        .split('.')
        .map(|part| part.trim_end_matches('=').replace('+', "-").replace('/', "_"))
        .collect::<Vec<_>>()
        .join(".")
}

/// The read scope a family's write is mistaken for (b5-24).
fn read_scope_of(scope: &str) -> &'static str {
    match scope {
        "orders:write" => "orders:read",
        "restaurants:write" => "restaurants:read",
        "messages:write" => "conversations:read",
        "instructions:write" => "instructions:read",
        _ => "organizations:read",
    }
}

fn lifecycle_step(status: &str) -> Option<usize> {
    ORDER_LIFECYCLE.iter().position(|s| *s == status)
}

/// The arguments without those that only route the call (b5-27).
fn payload(args: &Map<String, Value>) -> Map<String, Value> {
    let mut p = args.clone();
    for k in ["restaurant_id", "conversation_id", "organization_id"] {
        p.remove(k);
    }
    p
}

fn with_key(call: &Call, key: String) -> Call {
    call.with_args(|a| {
        a.insert("idempotency_key".into(), json!(key));
    })
}

fn key_head(key: &str) -> String {
    key.chars().take(230).collect()
}

fn header_str(call: &Call, name: &str) -> Option<String> {
    call.headers.get(name).and_then(|v| v.to_str().ok()).map(String::from)
}

impl Proxy {
    fn pair_of(&self, call: &Call) -> Option<String> {
        self.data.persona(&call.token()).map(|p| format!("{}/{}", p.client, p.user))
    }

    async fn now_ms(&self) -> i64 {
        match self.server_now_ms().await {
            Some(ms) => ms as i64,
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        }
    }

    /// Request-side rewrites of batch 5 (`Proxy::before`).
    pub(crate) async fn before_batch5(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        match self.fault {
            B504Proto1 if call.uri.path() == "/mcp" => {
                let sid = header_str(call, "mcp-session-id")?;
                if !state().sessions.contains(&sid) {
                    return Some(Answer::plain(StatusCode::NOT_FOUND, "Not Found: no such session"));
                }
                call.headers.remove("mcp-session-id");
                if call.method == Method::DELETE && call.headers.contains_key(header::AUTHORIZATION) {
                    // The session is said to be ended, and is kept all the same.
                    return Some(Answer::new(StatusCode::NO_CONTENT, HeaderMap::new(), Bytes::new()));
                }
            }
            B507Auth2 if call.rpc.is_some() && method.as_deref() != Some("tools/call") => {
                // The audience is checked by the tools/call handler only.
                let p = self.data.persona(&call.token())?.clone();
                if p.audience.is_some() {
                    let sibling = self.data.sibling(&p, None)?.clone();
                    call.set_auth(&token_header(&sibling));
                }
            }
            B502Idem1 if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let (points, clusters) = (key.chars().count(), graphemes(&key));
                if points > 255 && (8..=255).contains(&clusters) {
                    let kept = digest_key(&key);
                    *call = with_key(call, kept);
                } else if (8..=255).contains(&points) && clusters < 8 {
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            B505Lim1
                if t == "get_analytics"
                    && call.arg("metrics").and_then(|m| m.as_array().map(Vec::len)) == Some(8) =>
            {
                return Some(refusal(call, ErrorCode::InvalidArguments));
            }
            B511Idem6 if is_keyed(t) => return self.paris_retention(call, t).await,
            B514Lim2 if t == "get_analytics" => {
                let pair = self.pair_of(call)?;
                let now = self.now_ms().await;
                let wait = {
                    let mut s = state();
                    bound(&mut s.analytics_windows, 10_000);
                    let w = s.analytics_windows.entry(pair).or_insert((now, 0));
                    if now < w.0 || now - w.0 >= 60_000 {
                        *w = (now, 0);
                    }
                    w.1 += 1;
                    (w.1 > 500).then(|| (w.0 + 60_000 - now).max(1))
                };
                if let Some(ms) = wait {
                    let mut a = refusal(call, ErrorCode::RateLimited);
                    set_error(&mut a, "retry_after_ms", json!(ms));
                    return Some(a);
                }
            }
            B517Pre1 if t == "set_restaurant_status" && !call.has_arg("expected_status") => {
                let current = self.current_status(call).await?;
                call.set_args(|a| {
                    a.insert("expected_status".into(), json!(current));
                });
            }
            B520Proto1 if call.method == Method::POST && call.uri.path() == "/mcp" => {
                let ct = header_str(call, "content-type").unwrap_or_default();
                if ct.contains(';') {
                    return Some(Answer::plain(
                        StatusCode::UNSUPPORTED_MEDIA_TYPE,
                        "Unsupported Media Type: Content-Type must be application/json",
                    ));
                }
            }
            B526Pag5 => {
                let cursor = call.arg_str("cursor")?;
                let canonical = canonical_cursor(&cursor);
                if canonical != cursor && lock(&self.memory).cursors.contains_key(&canonical) {
                    call.set_args(|a| {
                        a.insert("cursor".into(), json!(canonical));
                    });
                }
            }
            B529Lim7 if t == "search_transcripts" => {
                let q = call.arg_str("query")?;
                if q.chars().count() <= 200 && q.len() > 200 {
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 5 (`Proxy::after`).
    pub(crate) async fn after_batch5(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let m = method.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        let replayed = success && a.flag("replayed");
        match self.fault {
            B501Auth1
                if a.status == StatusCode::UNAUTHORIZED
                    && call.headers.contains_key(header::AUTHORIZATION) =>
            {
                let challenge = "Bearer error=\"invalid_token\", error_description=\"The access token is invalid or expired\"";
                a.headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
            }
            B503Pag4 if success && t == "list_conversations" => {
                let key = |c: &Value| {
                    (
                        c["last_message_at"].as_str().unwrap_or_default().to_owned(),
                        c["id"].as_str().unwrap_or_default().to_owned(),
                    )
                };
                if let Some(items) = a.items_mut(t) {
                    items.sort_by_key(|c| std::cmp::Reverse(key(c)));
                }
            }
            B504Proto1 if m == "initialize" && a.result().is_some() => {
                let sid = random_alnum(32);
                {
                    let mut s = state();
                    s.sessions.insert(sid.clone());
                    s.session_order.push_back(sid.clone());
                    while s.session_order.len() > 4096 {
                        if let Some(old) = s.session_order.pop_front() {
                            s.sessions.remove(&old);
                        }
                    }
                }
                if let Ok(v) = HeaderValue::from_str(&sid) {
                    a.headers.insert("mcp-session-id", v);
                }
            }
            B506Auth7 if success && t == "list_organizations" && !call.has_arg("cursor") => {
                self.token_memberships(call, a);
            }
            B508Pag8 if success && t == "get_conversation" => self.one_past_100(call, a).await,
            B509Pre2 => {
                if success && t == "update_order_status" {
                    let (Some(id), Some(old)) = (call.arg_str("order_id"), call.arg_str("expected_status"))
                    else {
                        return;
                    };
                    let mut s = state();
                    s.order_writes.retain(|_, (_, at)| at.elapsed() < Duration::from_secs(30));
                    bound(&mut s.order_writes, 10_000);
                    s.order_writes.insert(id, (old, Instant::now()));
                } else if success && t == "list_orders" {
                    let stale: HashMap<String, String> = {
                        let s = state();
                        s.order_writes
                            .iter()
                            .filter(|(_, (_, at))| at.elapsed() < Duration::from_secs(30))
                            .map(|(id, (old, _))| (id.clone(), old.clone()))
                            .collect()
                    };
                    if stale.is_empty() {
                        return;
                    }
                    if let Some(items) = a.items_mut(t) {
                        for o in items.iter_mut() {
                            if let Some(old) = o["id"].as_str().and_then(|id| stale.get(id)) {
                                o["status"] = json!(old);
                            }
                        }
                    }
                }
            }
            B510Proto2 if m == "ping" && a.result().is_some() => {
                let id = call.rpc_id();
                if id.is_number()
                    && let Some(j) = a.json.as_mut()
                {
                    j["id"] = json!(id.to_string());
                    a.changed = true;
                }
            }
            B511Idem6 if success && is_keyed(t) && !replayed => {
                // Only a run under the key the client sent starts its day (a renamed one does not).
                let Some(key) = call.arg_str("idempotency_key") else { return };
                if key
                    .rsplit_once("~e")
                    .is_some_and(|(_, d)| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                {
                    return;
                }
                let now = self.now_ms().await;
                let result = a.result().cloned().unwrap_or_default();
                let mut s = state();
                bound(&mut s.first_run, 10_000);
                s.first_run.insert((call.auth(), t.to_owned(), key), (now, call.args(), result));
            }
            B512Auth8 if t == "send_message" && code == Some(ErrorCode::ResourceForbidden) => {
                self.sent_before_role_check(call).await;
            }
            B513Auth4 if m == "prompts/get" && a.result().is_some() => {
                self.prompt_names_restaurant(call, a).await
            }
            B515Pre3
                if t == "update_order_status" && code == Some(ErrorCode::OrderStatusPreconditionFailed) =>
            {
                let (Some(expected), Some(target)) =
                    (call.arg_str("expected_status"), call.arg_str("status"))
                else {
                    return;
                };
                if let (Some(from), Some(to)) = (lifecycle_step(&expected), lifecycle_step(&target))
                    && to > from + 1
                {
                    // The move is applied one step at a time and fails at the second step.
                    let first = ORDER_LIFECYCLE[from + 1];
                    let _ = self
                        .forward(&call.with_args(|x| {
                            x.insert("status".into(), json!(first));
                        }))
                        .await;
                }
            }
            B516Auth3 if is_keyed(t) && code == Some(ErrorCode::ScopeRequired) => {
                if let Some(stored) = self.sibling_stored_result(call, t) {
                    *a = replay(call, &stored);
                }
            }
            B518Idem2 if replayed && is_keyed(t) => {
                let Some(key) = call.arg_str("idempotency_key") else { return };
                let n = {
                    let mut s = state();
                    s.replays += 1;
                    s.replays
                };
                // The handler runs the effect again, then answers from the store.
                let _ = self.forward(&with_key(call, format!("{}~re{n}", key_head(&key)))).await;
            }
            B519Sec2 if m == "resources/read" && a.rpc_error_code() == Some(-32603) => {
                let internal = a
                    .json
                    .as_ref()
                    .is_some_and(|j| j["error"]["data"]["error"]["code"] == json!("MCP_INTERNAL_ERROR"));
                if internal && let Some(j) = a.json.as_mut() {
                    j["error"]["message"] = json!(
                        "MCP_INTERNAL_ERROR: called `Result::unwrap()` on an `Err` value: PoolTimedOut(\"connection to \
                         postgres://chataigne@db.internal:5432/chataigne timed out\") at \
                         /srv/chataigne/src/store/restaurants.rs:88:41"
                    );
                    a.changed = true;
                }
            }
            B521Lim5 if success && list_key(t).is_some() => self.cut_page_repeats_last(call, a, t).await,
            B522Env4 if code == Some(ErrorCode::RateLimited) => remove_error(a, "request_id"),
            B523Proto2 => {
                let id = call.rpc_id();
                let Some(n) = id.as_u64().or_else(|| id.as_i64().map(i64::unsigned_abs)) else { return };
                if n > TWO_POW_53
                    && let Some(j) = a.json.as_mut().filter(|j| j.get("id").is_some())
                {
                    // The id went through a double on its way back.
                    let rounded = id.as_f64().unwrap_or_default();
                    j["id"] = if id.as_i64().is_some_and(|i| i < 0) {
                        json!(rounded as i64)
                    } else {
                        json!(rounded as u64)
                    };
                    a.changed = true;
                }
            }
            B524Auth3 if code == Some(ErrorCode::ScopeRequired) && kind(t).is_some_and(Kind::is_write) => {
                if let Some(scope) = ToolName::parse(t).map(ToolName::scope) {
                    set_error(a, "required_scope", json!(read_scope_of(scope)));
                }
            }
            B525Abs1 if m == "tools/list" && a.result().is_some() => {
                let cursor = call.rpc.as_ref().and_then(|r| r["params"]["cursor"].as_str()).map(String::from);
                if let Some(r) = a.result_mut() {
                    match cursor.as_deref() {
                        Some(TOOLS_PAGE_2) => *r = json!({ "tools": [export_tool()] }),
                        None => r["nextCursor"] = json!(TOOLS_PAGE_2),
                        Some(_) => {}
                    }
                }
            }
            B527Idem3 if is_keyed(t) && code == Some(ErrorCode::IdempotencyMismatch) => {
                let Some(key) = call.arg_str("idempotency_key") else { return };
                let stored = lock(&self.memory)
                    .keyed
                    .get(&(call.auth(), t.to_owned(), key))
                    .map(|k| (k.args.clone(), k.result.clone()));
                if let Some((args, result)) = stored
                    && payload(&args) == payload(&call.args())
                {
                    *a = replay(call, &result);
                }
            }
            B528Auth5 => {
                if m == "resources/templates/list" && a.result().is_some() {
                    if let Some(list) = a.result_mut().and_then(|r| r["resourceTemplates"].as_array_mut()) {
                        list.push(json!({
                            "uriTemplate": format!("{ORDER_URI}{{order_id}}"), "name": "order", "title": "An order",
                            "description": "An order, as get_order answers it (its envelope: data.order and meta.request_id)",
                            "mimeType": "application/json",
                        }));
                    }
                } else if m == "resources/read" && a.status != StatusCode::UNAUTHORIZED {
                    self.order_resource(call, a).await;
                }
            }
            B530Env2 if code.is_some() => {
                let Some(c) = code.filter(|c| {
                    matches!(
                        c,
                        ErrorCode::InvalidArguments
                            | ErrorCode::ResourceForbidden
                            | ErrorCode::ResourceNotFound
                            | ErrorCode::ScopeRequired
                            | ErrorCode::CursorInvalid
                    )
                }) else {
                    return;
                };
                let id =
                    state().fixed_ids.entry(c.as_str().to_owned()).or_insert_with(new_request_id).clone();
                a.set_request_id(&id);
            }
            _ => {}
        }
    }

    /// b5-11: retention ends at the same wall-clock time the next day in Europe/Paris, not after
    /// 24 h: a key is forgotten an hour early across the spring change and kept an hour longer
    /// across the autumn one.
    async fn paris_retention(&self, call: &mut Call, t: &str) -> Option<Answer> {
        let key = call.arg_str("idempotency_key")?;
        let slot = (call.auth(), t.to_owned(), key.clone());
        let (first, args, result) = state().first_run.get(&slot).cloned()?;
        let now = self.now_ms().await;
        let day_end = paris_next_day(first.div_euclid(1000)) * 1000;
        let day = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
        if now >= day_end && now < first + day {
            *call = with_key(call, format!("{}~e{first}", key_head(&key)));
        } else if now >= first + day && now < day_end && args == call.args() {
            return Some(replay(call, &result));
        }
        None
    }

    /// b5-06: the unscoped organization list reads memberships from the token, as issued: one
    /// revoked since is still listed, with its role.
    fn token_memberships(&self, call: &Call, a: &mut Answer) {
        let Some(p) = self.data.persona(&call.token()).cloned() else { return };
        let listed: HashSet<String> = a
            .items("list_organizations")
            .map(|i| i.iter().filter_map(|o| o["id"].as_str().map(String::from)).collect())
            .unwrap_or_default();
        let missing: Vec<Value> = self
            .data
            .memberships
            .iter()
            .filter(|m| m.user == p.user && !m.revoked && !listed.contains(&m.org))
            .filter_map(|m| {
                let (name, created_at) = ORGS.get(&m.org)?;
                Some(json!({ "id": m.org, "name": name, "role": m.role, "created_at": created_at }))
            })
            .collect();
        if missing.is_empty() {
            return;
        }
        if let Some(items) = a.items_mut("list_organizations") {
            items.extend(missing);
            let key = |o: &Value| {
                (
                    o["created_at"].as_str().unwrap_or_default().to_owned(),
                    o["id"].as_str().unwrap_or_default().to_owned(),
                )
            };
            items.sort_by_key(|o| std::cmp::Reverse(key(o)));
        }
    }

    /// b5-08: message_limit 100 takes the look-ahead message too: 101 messages.
    async fn one_past_100(&self, call: &Call, a: &mut Answer) {
        let t = "get_conversation";
        if call.arg("message_limit").and_then(|l| l.as_f64()) != Some(100.0)
            || a.items(t).map(Vec::len) != Some(100)
        {
            return;
        }
        let Some(next) = a.next_cursor() else { return };
        let b = self
            .forward(&call.with_args(|x| {
                x.insert("cursor".into(), json!(next));
                x.insert("message_limit".into(), json!(1));
            }))
            .await;
        let Some(extra) = b.items(t).and_then(|i| i.first()).cloned().filter(|_| b.is_success()) else {
            return;
        };
        let after = b.next_cursor();
        if let Some(items) = a.items_mut(t) {
            items.push(extra);
        }
        if let Some(meta) = a.meta_mut() {
            match after {
                Some(c) => meta.insert("next_cursor".into(), json!(c)),
                None => meta.remove("next_cursor"),
            };
        }
    }

    /// b5-12: send_message checks the role after sending: a viewer is refused, and the message
    /// is sent all the same.
    async fn sent_before_role_check(&self, call: &Call) {
        let Some(p) = self.data.persona(&call.token()).cloned() else { return };
        let Some(rst) = call.arg_str("restaurant_id") else { return };
        let Some(org) = self.owner(&rst) else { return };
        let viewer = self.data.membership(&p.user, &org).is_some_and(|m| m.role == "viewer" && !m.revoked);
        let Some(key) = call.arg_str("idempotency_key") else { return };
        if !viewer {
            return;
        }
        let Some(owner) = self.auth_for_org(&org) else { return };
        let sent = with_key(call, format!("{}~v", key_head(&key)));
        let _ = self.forward(&sent.as_auth(&owner)).await;
    }

    /// b5-13: prompts name the restaurant, looked up without a membership check: a foreign
    /// restaurant's name is shown, an absent one is refused.
    async fn prompt_names_restaurant(&self, call: &Call, a: &mut Answer) {
        let args = call.rpc.as_ref().map(|r| r["params"]["arguments"].clone()).unwrap_or_default();
        let Some(rst) = args["restaurant_id"].as_str().map(String::from) else { return };
        let name = match self.owner(&rst).and_then(|org| self.auth_for_org(&org)) {
            Some(owner) => {
                let r = self
                    .forward(
                        &tool_call(call, "get_restaurant", json!({ "restaurant_id": rst })).as_auth(&owner),
                    )
                    .await;
                r.result()
                    .and_then(|x| x["structuredContent"]["data"]["restaurant"]["name"].as_str())
                    .map(String::from)
            }
            None => None,
        };
        let Some(name) = name else {
            *a = Answer::rpc(
                call,
                "error",
                json!({ "code": -32602, "message": "unknown restaurant", "data": { "argument": "restaurant_id" } }),
            );
            return;
        };
        let Some(r) = a.result_mut() else { return };
        if let Some(messages) = r["messages"].as_array_mut() {
            for msg in messages {
                if let Some(text) = msg["content"]["text"].as_str() {
                    let named =
                        text.replacen(&format!("restaurant {rst}"), &format!("restaurant {name} ({rst})"), 1);
                    msg["content"]["text"] = json!(named);
                }
            }
        }
    }

    /// b5-16: a keyed call's stored result, found for another token of the same user and client.
    fn sibling_stored_result(&self, call: &Call, t: &str) -> Option<Value> {
        let key = call.arg_str("idempotency_key")?;
        let p = self.data.persona(&call.token())?.clone();
        let args = call.args();
        let m = lock(&self.memory);
        m.keyed.iter().find_map(|((auth, tool, k), stored)| {
            let q = self.data.persona(auth.strip_prefix("Bearer ").unwrap_or_default())?;
            (tool == t
                && *k == key
                && *auth != call.auth()
                && q.user == p.user
                && q.client == p.client
                && stored.args == args)
                .then(|| stored.result.clone())
        })
    }

    /// b5-21: the cursor of a page cut for size continues at its last item, not after it: the
    /// next page starts with that item again (then drops one at its end to keep its size).
    async fn cut_page_repeats_last(&self, call: &Call, a: &mut Answer, t: &str) {
        let repeated = call.arg_str("cursor").and_then(|c| state().cut_pages.get(&c).cloned());
        if let Some(last) = repeated {
            let n = a.items(t).map_or(0, Vec::len);
            let mut done = false;
            if a.flag("truncated") && n >= 2 {
                let b = self
                    .forward(&call.with_args(|x| {
                        x.insert("limit".into(), json!(n - 1));
                    }))
                    .await;
                if b.is_success()
                    && let Some(items) = b.items(t).cloned()
                {
                    let next = b.next_cursor();
                    if let Some(i) = a.items_mut(t) {
                        *i = std::iter::once(last.clone()).chain(items).collect();
                    }
                    if let Some(meta) = a.meta_mut() {
                        match next {
                            Some(c) => meta.insert("next_cursor".into(), json!(c)),
                            None => meta.remove("next_cursor"),
                        };
                    }
                    done = true;
                }
            }
            if !done && let Some(i) = a.items_mut(t) {
                i.insert(0, last);
            }
        }
        if a.flag("truncated")
            && let (Some(next), Some(last)) = (a.next_cursor(), a.items(t).and_then(|i| i.last()).cloned())
        {
            let mut s = state();
            bound(&mut s.cut_pages, 10_000);
            s.cut_pages.insert(next, last);
        }
    }

    /// b5-28: the order template reads any order by its ID, whoever asks (the restaurant is
    /// looked up from the order, with the organization's access).
    async fn order_resource(&self, call: &Call, a: &mut Answer) {
        let Some(uri) = call.rpc.as_ref().and_then(|r| r["params"]["uri"].as_str()).map(String::from) else {
            return;
        };
        let Some(order) = uri.strip_prefix(ORDER_URI).filter(|o| !o.is_empty()) else { return };
        let Some(rst) = self.owner(order) else { return };
        let Some(owner) = self.owner(&rst).and_then(|org| self.auth_for_org(&org)) else { return };
        let args = json!({ "restaurant_id": rst, "order_id": order });
        let b = self.forward(&tool_call(call, "get_order", args).as_auth(&owner)).await;
        if !b.is_success() {
            return;
        }
        let Some(mut envelope) = b.result().map(|r| r["structuredContent"].clone()) else { return };
        envelope["meta"]["request_id"] = json!(new_request_id());
        let contents = json!({ "contents": [{ "uri": uri, "mimeType": "application/json", "text": envelope.to_string() }] });
        let headers = a.headers.clone();
        *a = Answer::rpc(call, "result", contents);
        for (k, v) in &headers {
            if k == "x-request-id" {
                a.headers.insert(k, v.clone());
            }
        }
    }
}

/// b5-25: the tool tools/list's second page offers (a bulk export under a plain name).
fn export_tool() -> Value {
    let mut d = ToolName::ListOrders.descriptor();
    let rid = d["inputSchema"]["properties"]["restaurant_id"].clone();
    d["name"] = json!("export_orders");
    d["title"] = json!("export orders");
    d["description"] =
        json!("Export every order of a restaurant at once (all pages, all statuses), for accounting.");
    d["inputSchema"] = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": { "restaurant_id": rid, "format": { "type": "string", "enum": ["json", "csv"] } },
        "required": ["restaurant_id"],
        "additionalProperties": false,
    });
    d
}
