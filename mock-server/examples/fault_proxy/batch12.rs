//! Batch 12 of the outside faults (`b12-…`), written from docs/CONTRACT.md, its French seed,
//! docs/DECISIONS.md (its first part), docs/CONTROL_API.md, docs/VARIANTS.md, the reference
//! server's source and the MCP specification alone, without reading the suite: a third on surfaces
//! other than a first-page tools/call, a third on edges, a third on wrong data in a right envelope.
//! Names are opaque (`b12-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here, on the
//! shapes of `common`. What it remembers between calls is its own (`B12`), every map keyed
//! (caller and arguments, order, cursor, OAuth client and key, restaurant) and bounded.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use chataigne_contract::time::{civil_from_days, days_from_civil, parse_date};

use super::common::*;
use super::*;

#[derive(Default)]
struct B12 {
    /// (auth, tool, arguments without the key) → (key, server ms, result) of keyed calls that
    /// ran (b12-02)
    ran: HashMap<(String, String, String), (String, i64, Value)>,
    /// order → the status reads show instead of the store's (b12-05, b12-14)
    shown: HashMap<String, String>,
    /// list_restaurants cursor → the name its walk compares with (b12-11)
    after_name: HashMap<String, String>,
    /// (OAuth client, tool, key) → (the user whose calls run, how many run) (b12-10)
    running: HashMap<(String, String, String), (String, u32)>,
    /// restaurant → (set_restaurant_status calls running, calls started) (b12-16)
    racing: HashMap<String, (u32, u64)>,
}

static STATE: LazyLock<Mutex<B12>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B12> {
    lock(&STATE)
}

impl Fault {
    /// A fault of this batch (`b12-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch12(self) -> bool {
        self.named_with("b12-")
    }
}

const CONTRACT_URI: &str = "chataigne://contract";
/// The revision served by the older handlers (b12-30).
const OLDER_REVISION: &str = "2025-06-18";
const BODY_MAX: usize = chataigne_contract::MAX_BODY_BYTES;
const NAME_MAX: usize = chataigne_contract::tools::NAME_MAX;
const KEY_MIN: usize = chataigne_contract::tools::IDEMPOTENCY_KEY_MIN;
const KEY_MAX: usize = chataigne_contract::tools::IDEMPOTENCY_KEY_MAX;
const MAX_DAYS: i64 = chataigne_contract::MAX_RANGE_DAYS;
const DAY_MS: i64 = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
/// The message page `get_conversation` gives without `message_limit` (b12-27).
const MESSAGE_DEFAULT: usize = chataigne_contract::MAX_MESSAGE_LIMIT;
/// The header that carries a set_restaurant_status call's place in a race from `before` to
/// `after` (b12-16); the server ignores it.
const RACE_HEADER: &str = "x-fault-b12-race";
/// What an instruction's insert returns (b12-26).
const INSTRUCTION_RETURNED: [&str; 3] = ["id", "text", "created_at"];
/// Metrics a sum over two ranges does not give (b12-06): an average and a median.
const NOT_ADDITIVE: [&str; 2] = ["average_order_cents", "median_first_response_s"];

/// A base64url decoder that ignores the unused bits of the last character (b12-03).
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A cursor as the lenient decoder reads it, written back canonically.
fn canonical_cursor(cursor: &str) -> Option<String> {
    let parts: Option<Vec<String>> =
        cursor.split('.').map(|p| LENIENT.decode(p).ok().map(|b| URL_SAFE_NO_PAD.encode(b))).collect();
    Some(parts?.join("."))
}

/// The last Sunday of a month, in days since 1970-01-01 (a Thursday).
fn last_sunday(y: i64, m: u32) -> i64 {
    let next = if m == 12 { days_from_civil(y + 1, 1, 1) } else { days_from_civil(y, m + 1, 1) };
    let last = next - 1;
    last - (last - 3).rem_euclid(7)
}

/// Whether local midnight of `day` in Europe/Paris is summer time (UTC+2).
fn paris_summer(day: i64) -> bool {
    let (y, ..) = civil_from_days(day);
    last_sunday(y, 3) < day && day <= last_sunday(y, 10)
}

/// Days of `from..=to` counted between local midnights in Europe/Paris, floor of the seconds over
/// 86,400, plus one (b12-06).
fn paris_days(from: i64, to: i64) -> i64 {
    let midnight = |d: i64| d * 86_400 - if paris_summer(d) { 7_200 } else { 3_600 };
    (midnight(to) - midnight(from)).div_euclid(86_400) + 1
}

/// The arguments of a keyed call without its key, in one canonical text (b12-02).
fn without_key(call: &Call) -> String {
    let args: BTreeMap<String, Value> =
        call.args().into_iter().filter(|(k, _)| k != "idempotency_key").collect();
    serde_json::to_string(&args).unwrap_or_default()
}

/// A list's items sorted newest first, `id` breaking ties, as the reference lists them.
fn newest_first(items: &mut [Value]) {
    let key = |o: &Value| {
        (o["created_at"].as_str().unwrap_or("").to_owned(), o["id"].as_str().unwrap_or("").to_owned())
    };
    items.sort_by_key(|o| std::cmp::Reverse(key(o)));
}

/// Methods whose answer is the same for every caller (b12-04).
fn public_method(call: &Call) -> bool {
    match call.rpc_method() {
        Some("prompts/list" | "prompts/get" | "resources/list" | "resources/templates/list") => true,
        Some("resources/read") => params(call).get("uri") == Some(&json!(CONTRACT_URI)),
        _ => false,
    }
}

/// Replace every long string of a value (a padding) by an empty one (b12-28).
fn drop_padding(v: &mut Value) {
    walk_mut(v, &mut |_, x| {
        if x.as_str().is_some_and(|s| s.len() > 4096) {
            *x = json!("");
        }
    });
}

/// What an internal error's debug metadata says (b12-25).
fn debug_meta(tool: &str) -> Value {
    json!({ "io.chataigne/debug": {
        "error": "pool timed out while waiting for an open connection to postgres://chataigne:pg-Xr7-prod@db-1.internal:5432/chataigne",
        "statement": "SELECT * FROM orders WHERE restaurant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
        "at": format!("src/tools/{tool}.rs:131:18"),
    }})
}

/// The status a status-filtered list or a read shows for an order, after the overrides.
fn show_statuses(call: &Call, a: &mut Answer, t: &str, shown: &HashMap<String, String>) {
    if shown.is_empty() {
        return;
    }
    let filter = call.arg("status").and_then(|v| v.as_array().cloned());
    if let Some(items) = a.items_mut(t) {
        for o in items.iter_mut() {
            if let Some(s) = o["id"].as_str().and_then(|id| shown.get(id)) {
                set_status(o, s);
            }
        }
        if let Some(filter) = filter {
            items.retain(|o| filter.contains(&o["status"]));
        }
    } else if let Some(r) = a.result_mut() {
        let order = &mut r["structuredContent"]["data"]["order"];
        if let Some(s) = order["id"].as_str().and_then(|id| shown.get(id)).cloned() {
            set_status(order, &s);
        }
    }
}

/// Add the values of `b` to those of `a`, for the metrics a sum gives exactly (b12-06).
fn add_values(a: &mut Value, b: &Value) {
    for m in chataigne_contract::tools::METRICS.iter().filter(|m| !NOT_ADDITIVE.contains(m)) {
        if let (Some(x), Some(y)) = (a[m].as_u64(), b[m].as_u64()) {
            a[m] = json!(x + y);
        }
    }
}

impl Proxy {
    /// Request-side rewrites of batch 12 (`Proxy::before`).
    pub(crate) async fn before_batch12(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let x = Exchange::of(call, None);
        let (t, m) = (x.tool.as_str(), x.method.as_str());
        match self.fault {
            B1202Idem2 if is_keyed(t) => {
                let slot = slot(call, t)?;
                if self.stored(&slot).is_some() {
                    return None;
                }
                let (key, at, result) =
                    state().ran.get(&(call.auth(), t.to_owned(), without_key(call))).cloned()?;
                if key != slot.2 && self.clock_ms().await - at < DAY_MS {
                    // A double-send guard: the same effect asked again is answered with the first.
                    return Some(replay(call, &result));
                }
            }
            B1203Pag5 => {
                let cursor = call.arg_str("cursor")?;
                let canonical = canonical_cursor(&cursor)?;
                let known = |c: &str| lock(&self.memory).cursors.contains_key(c);
                if canonical != cursor && !known(&cursor) && known(&canonical) {
                    // The decoder ignores the last character's unused bits.
                    call.set_args(|a| {
                        a.insert("cursor".into(), json!(canonical));
                    });
                }
            }
            B1204Auth1 if is_endpoint(call) && call.auth().is_empty() && public_method(call) => {
                // Static content is served before the authentication middleware.
                let anyone =
                    self.data.personas.iter().find(|p| p.audience.is_none() && !p.scopes.is_empty())?;
                return Some(self.forward(&call.as_auth(&token_header(anyone))).await);
            }
            B1206Lim1 if t == "get_analytics" => return self.paris_range(call).await,
            B1209Proto3 if t == "list_orders" => {
                let status = call.arg("status").filter(Value::is_string)?;
                // A scalar is taken for a one-item array, as the query-string parser does.
                call.set_args(|a| {
                    a.insert("status".into(), json!([status]));
                });
            }
            B1210Idem5 if is_keyed(t) => {
                let (p, key) = (self.caller(call)?, call.arg_str("idempotency_key")?);
                let mut s = state();
                bound(&mut s.running, RECENT);
                let entry = s.running.entry((p.client, t.to_owned(), key)).or_insert((p.user.clone(), 0));
                if entry.1 > 0 && entry.0 != p.user {
                    // The in-progress marker is keyed by client, tool and key: the user is left out.
                    return Some(refusal(call, ErrorCode::OperationInProgress));
                }
                *entry = (p.user, entry.1 + 1);
            }
            B1212Lim7
                if matches!(t, "create_organization" | "create_restaurant")
                    && call.arg_str("name").is_some_and(|n| n.chars().count() == NAME_MAX) =>
            {
                // The maximum is checked with < instead of <=.
                return Some(refusal(call, ErrorCode::InvalidArguments));
            }
            B1213Proto5 if is_endpoint(call) && is_notification(call) => {
                // The Origin check runs for requests, which have an id, only.
                call.headers.remove(header::ORIGIN);
            }
            B1214Abs2 if t == "update_order_status" => {
                let oid = call.arg_str("order_id")?;
                state().shown.get(&oid).filter(|s| *s == "rejected")?;
                let read = json!({ "restaurant_id": call.arg("restaurant_id"), "order_id": oid });
                if !self.forward(&tool_call(call, "get_order", read)).await.is_success() {
                    return None;
                }
                // The order was rejected: it no longer moves.
                let code = match call.arg_str("expected_status").as_deref() {
                    Some("rejected") => ErrorCode::OrderStatusPreconditionFailed,
                    _ => ErrorCode::ExpectedStateMismatch,
                };
                return Some(refusal(call, code));
            }
            B1216Pre4 if t == "set_restaurant_status" => {
                let rst = call.arg_str("restaurant_id")?;
                let mark = {
                    let mut s = state();
                    bound(&mut s.racing, RECENT);
                    let entry = s.racing.entry(rst).or_default();
                    let mark = format!("{}:{}", entry.0, entry.1);
                    *entry = (entry.0 + 1, entry.1 + 1);
                    mark
                };
                if let Ok(v) = HeaderValue::from_str(&mark) {
                    call.headers.insert(RACE_HEADER, v);
                }
            }
            B1218Lim2 if is_keyed(t) => {
                // The claim and the commit each hit the rate limiter: the copy counts as the claim.
                let claim = call.with_args(|a| {
                    a.remove("idempotency_key");
                });
                self.forward(&claim).await;
            }
            B1221Idem1 if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let n = key.chars().count();
                if (KEY_MIN..=KEY_MAX).contains(&n) && key.trim().chars().count() < KEY_MIN {
                    // The key's length is checked after trimming, like every string's.
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            B1222Auth2 if is_endpoint(call) && matches!(call.method, Method::GET | Method::DELETE) => {
                let p = self.caller(call).filter(|p| p.audience.is_some())?;
                let sibling = self.data.sibling(&p, None)?.clone();
                // The audience is checked by the JSON-RPC handler, which GET and DELETE never reach.
                call.set_auth(&token_header(&sibling));
            }
            B1227Pag8 if t == "get_conversation" && !call.has_arg("message_limit") => {
                // The default page is the largest one.
                call.set_args(|a| {
                    a.insert("message_limit".into(), json!(MESSAGE_DEFAULT));
                });
            }
            B1228Lim7 if is_endpoint(call) && call.body.len() > BODY_MAX && m != "tools/call" => {
                let rpc = call.rpc.as_mut().filter(|r| r.get("id").is_some())?;
                // The body limit lives in the tools/call handler: this request is read whole.
                drop_padding(&mut rpc["params"]);
                call.body = Bytes::from(serde_json::to_vec(rpc).unwrap_or_default());
            }
            B1230Pre1
                if t == "update_order_status"
                    && revision(call).as_deref() == Some(OLDER_REVISION)
                    && !call.has_arg("expected_status") =>
            {
                // The older revision's schema has expected_status optional: the store's is used.
                let current = self.current_status(call).await?;
                call.set_args(|a| {
                    a.insert("expected_status".into(), json!(current));
                });
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 12 (`Proxy::after`).
    pub(crate) async fn after_batch12(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let x = Exchange::of(call, Some(a));
        let (t, m, code, success, replayed) =
            (x.tool.as_str(), x.method.as_str(), x.code, x.success, x.replayed);
        match self.fault {
            B1201Proto1
                if call.method == Method::GET
                    && is_endpoint(call)
                    && a.status == StatusCode::METHOD_NOT_ALLOWED =>
            {
                // Only POST /mcp is routed: any other method on it is an unknown route.
                let mut headers = HeaderMap::new();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
                let page = "<!DOCTYPE html><html><body><pre>Cannot GET /mcp</pre></body></html>";
                *a = Answer::new(StatusCode::NOT_FOUND, headers, Bytes::from(page));
            }
            B1202Idem2 if success && !replayed && is_keyed(t) => {
                let (Some(key), Some(result)) = (call.arg_str("idempotency_key"), a.result().cloned()) else {
                    return;
                };
                let now = self.clock_ms().await;
                let mut s = state();
                bound(&mut s.ran, RECENT);
                s.ran.entry((call.auth(), t.to_owned(), without_key(call))).or_insert((key, now, result));
            }
            B1205Pre2 if t == "update_order_status" => {
                let Some(oid) = call.arg_str("order_id") else { return };
                let mut s = state();
                bound(&mut s.shown, RECENT);
                if code == Some(ErrorCode::ExpectedStateMismatch) {
                    // The cache took the move before the store refused it, and keeps it.
                    if let Some(target) = call.arg_str("status") {
                        s.shown.insert(oid, target);
                    }
                } else if success && !replayed {
                    s.shown.remove(&oid);
                }
            }
            B1205Pre2 | B1214Abs2 if success && matches!(t, "get_order" | "list_orders") => {
                let shown = state().shown.clone();
                show_statuses(call, a, t, &shown);
            }
            B1207Env5 if code == Some(ErrorCode::ToolTimeout) => {
                // Timeouts are all filed as not retryable, like a write's.
                set_error(a, "retryable", json!(false));
            }
            B1208Auth5 if success && t == "list_conversations" && !call.has_arg("cursor") => {
                self.channel_index(call, a).await
            }
            B1210Idem5 if is_keyed(t) => {
                let (Some(p), Some(key)) = (self.caller(call), call.arg_str("idempotency_key")) else {
                    return;
                };
                let mut s = state();
                if let Some(entry) = s.running.get_mut(&(p.client, t.to_owned(), key)) {
                    entry.1 = entry.1.saturating_sub(1);
                }
            }
            B1211Pag4 if success && t == "list_restaurants" => {
                let after = call.arg_str("cursor").and_then(|c| state().after_name.get(&c).cloned());
                if let (Some(name), Some(items)) = (after.as_deref(), a.items_mut(t)) {
                    // The keyset compares names (the console's sort); the pages come newest first.
                    items.retain(|r| r["name"].as_str().is_some_and(|n| n < name));
                }
                let last =
                    a.items(t).and_then(|v| v.last()).and_then(|r| r["name"].as_str()).map(String::from);
                if let (Some(next), Some(name)) = (a.next_cursor(), last.or(after)) {
                    let mut s = state();
                    bound(&mut s.after_name, RECENT);
                    s.after_name.insert(next, name);
                }
            }
            B1214Abs2
                if success
                    && !replayed
                    && t == "update_order_status"
                    && call.arg_str("status").as_deref() == Some("accepted") =>
            {
                self.closed_shop(call, a).await
            }
            B1215Env2 if is_endpoint(call) => {
                if let Some(v) = call.headers.get("x-request-id").cloned() {
                    // The tracing middleware keeps the caller's request ID for the response.
                    a.headers.insert("x-request-id", v);
                }
            }
            B1216Pre4 if t == "set_restaurant_status" => self.race_lost(call, a, code).await,
            B1217Idem3 if is_keyed(t) && code == Some(ErrorCode::IdempotencyMismatch) => {
                let Some(key) = call.arg_str("idempotency_key") else { return };
                // The fingerprint is compared when the result is stored, after the effect.
                let run = call.with_args(|x| {
                    x.insert("idempotency_key".into(), json!(derived_key(&key)));
                });
                self.forward(&run).await;
            }
            B1219Env1 if success && kind(t) == Some(Kind::Write) => {
                if let Some(meta) = a.meta_mut() {
                    // `replayed` is set by the idempotency layer, which unkeyed writes skip.
                    meta.remove("replayed");
                }
            }
            B1220Pag3 if success && t == "list_instructions" => {
                if let Some(meta) = a.meta_mut() {
                    // The instructions query has a LIMIT and no look-ahead row.
                    meta.remove("next_cursor");
                }
            }
            B1223Pre1
                if success
                    && !replayed
                    && t == "set_restaurant_status"
                    && call.arg_str("status").as_deref() == Some("paused") =>
            {
                self.pause_all(call).await
            }
            B1224Proto4 if success && t == "get_analytics" => {
                let Some(data) = a.result_mut().map(|r| &mut r["structuredContent"]["data"]) else { return };
                if !matches!(data["granularity"].as_str(), Some("week" | "month")) {
                    return;
                }
                for b in data["series"].as_array_mut().into_iter().flatten() {
                    if let Some(d) = b["period_start"].as_str().map(String::from) {
                        // Buckets longer than a day are rendered by the timestamp formatter.
                        b["period_start"] = json!(format!("{d}T00:00:00Z"));
                    }
                }
            }
            B1225Sec2 if code == Some(ErrorCode::InternalError) => {
                if let Some(r) = a.result_mut() {
                    // The developer console's debug metadata rides in the result's _meta.
                    r["_meta"] = debug_meta(t);
                }
            }
            B1226Env7 if success && t == "create_instruction" => {
                if let Some(i) =
                    a.result_mut().and_then(|r| r["structuredContent"]["data"]["instruction"].as_object_mut())
                {
                    // The answer is the insert's RETURNING list.
                    i.retain(|k, _| INSTRUCTION_RETURNED.contains(&k.as_str()));
                }
            }
            B1226Env7 if m == "tools/list" => {
                let Some(tools) = a.result_mut().and_then(|r| r["tools"].as_array_mut()) else { return };
                for tool in tools.iter_mut().filter(|x| x["name"] == json!("create_instruction")) {
                    let s = &mut tool["outputSchema"]["oneOf"][0]["properties"]["data"]["properties"]["instruction"];
                    if let Some(props) = s["properties"].as_object_mut() {
                        props.retain(|k, _| INSTRUCTION_RETURNED.contains(&k.as_str()));
                        s["required"] = json!(INSTRUCTION_RETURNED);
                    }
                }
            }
            B1229Auth8 if t == "update_order_status" && code == Some(ErrorCode::ResourceForbidden) => {
                let (Some(p), Some(rst)) = (self.caller(call), call.arg_str("restaurant_id")) else { return };
                let Some(org) = self.owner(&rst) else { return };
                if self.data.membership(&p.user, &org).is_some() {
                    return;
                }
                // The store's update runs before the tenant check, which only shapes the answer.
                if let Some(as_owner) = self.as_owner_of(call, &org) {
                    self.forward(&as_owner).await;
                }
            }
            _ => {}
        }
    }

    /// b12-06: the range is measured between local midnights in Europe/Paris: a 367-day range from
    /// winter time to summer time counts 366 and is served.
    async fn paris_range(&self, call: &Call) -> Option<Answer> {
        let (from, to) = (parse_date(&call.arg_str("from")?)?, parse_date(&call.arg_str("to")?)?);
        if to - from < MAX_DAYS || paris_days(from, to) > MAX_DAYS {
            return None;
        }
        let day = |d: i64| chataigne_contract::time::format_date(d);
        let head = call.with_args(|a| {
            a.insert("to".into(), json!(day(to - 1)));
        });
        let tail = call.with_args(|a| {
            a.insert("from".into(), json!(day(to)));
        });
        let mut b = self.forward(&head).await;
        let last = self.forward(&tail).await;
        let (Some(more), true) = (data_of(&last).cloned(), b.is_success()) else {
            return Some(answer_as(call, b));
        };
        let data = &mut b.result_mut()?["structuredContent"]["data"];
        data["to"] = json!(day(to));
        add_values(&mut data["totals"], &more["totals"]);
        let series = data["series"].as_array_mut()?;
        for bucket in more["series"].as_array().into_iter().flatten() {
            match series.last_mut().filter(|s| s["period_start"] == bucket["period_start"]) {
                Some(s) => add_values(&mut s["values"], &bucket["values"]),
                None => series.push(bucket.clone()),
            }
        }
        if let Some(text) = b.text_mut() {
            let t = text.as_str().unwrap_or_default().replace(&format!("{MAX_DAYS} days"), "367 days");
            *text = json!(t);
        }
        Some(answer_as(call, b))
    }

    /// b12-08: a first page filtered by channel reads the channel index, which spans restaurants.
    async fn channel_index(&self, call: &Call, a: &mut Answer) {
        let (Some(rst), Some(channel)) = (call.arg_str("restaurant_id"), call.arg_str("channel")) else {
            return;
        };
        let page = call
            .arg("limit")
            .and_then(|v| v.as_u64())
            .map_or(chataigne_contract::DEFAULT_LIMIT, |n| n as usize);
        let mut restaurants: Vec<(&String, &String)> = self.data.restaurant_org.iter().collect();
        restaurants.sort();
        let mut extra = Vec::new();
        for (other, org) in restaurants.into_iter().filter(|(r, _)| **r != rst) {
            let Some(as_owner) = self.as_owner_of(call, org) else { continue };
            let mut args = json!({ "restaurant_id": other, "channel": channel, "limit": 50 });
            if let Some(s) = call.arg("status") {
                args["status"] = s;
            }
            let b = self.forward(&tool_call(&as_owner, "list_conversations", args)).await;
            extra.extend(b.items("list_conversations").cloned().unwrap_or_default());
        }
        if extra.is_empty() {
            return;
        }
        if let Some(items) = a.items_mut("list_conversations") {
            items.extend(extra);
            newest_first(items);
            items.truncate(page);
        }
    }

    /// b12-14: an order accepted while its restaurant is paused is rejected instead.
    async fn closed_shop(&self, call: &Call, a: &mut Answer) {
        let (Some(rst), Some(oid)) = (call.arg_str("restaurant_id"), call.arg_str("order_id")) else {
            return;
        };
        let b = self.forward(&tool_call(call, "get_restaurant", json!({ "restaurant_id": rst }))).await;
        if data_of(&b).and_then(|d| d["restaurant"]["status"].as_str()) != Some("paused") {
            return;
        }
        {
            let mut s = state();
            bound(&mut s.shown, RECENT);
            s.shown.insert(oid.clone(), "rejected".into());
        }
        if let Some(r) = a.result_mut() {
            set_status(&mut r["structuredContent"]["data"]["order"], "rejected");
            r["content"] = json!([{ "type": "text", "text": format!("Order {oid} is now rejected (the restaurant is paused)") }]);
        }
    }

    /// b12-16: set_restaurant_status takes no compare-and-set: the loser of a race on one
    /// restaurant is told it succeeded when the status is already its target.
    async fn race_lost(&self, call: &Call, a: &mut Answer, code: Option<ErrorCode>) {
        let Some(rst) = call.arg_str("restaurant_id") else { return };
        let mark = header_str(call, RACE_HEADER).unwrap_or_default();
        let (running_at_start, started_at) = mark.split_once(':').unwrap_or(("0", "0"));
        let (running_at_start, started_at) =
            (running_at_start.parse::<u32>().unwrap_or(0), started_at.parse::<u64>().unwrap_or(0));
        let raced = {
            let mut s = state();
            let entry = s.racing.entry(rst.clone()).or_default();
            entry.0 = entry.0.saturating_sub(1);
            running_at_start > 0 || entry.1 > started_at + 1
        };
        let conflict =
            matches!(code, Some(ErrorCode::OrderStatusPreconditionFailed | ErrorCode::ExpectedStateMismatch));
        if !raced || !conflict {
            return;
        }
        let b = self.forward(&tool_call(call, "get_restaurant", json!({ "restaurant_id": rst }))).await;
        let Some(restaurant) = data_of(&b).map(|d| d["restaurant"].clone()) else { return };
        if restaurant["status"].as_str() != call.arg_str("status").as_deref() {
            return;
        }
        let summary =
            format!("Restaurant {rst} is now {}", restaurant["status"].as_str().unwrap_or_default());
        *a = Answer::rpc(
            call,
            "result",
            success_result(json!({ "restaurant": restaurant }), fresh_meta(), &summary),
        );
    }

    /// b12-23: pausing a restaurant pauses every open restaurant of its organization.
    async fn pause_all(&self, call: &Call) {
        let Some(rst) = call.arg_str("restaurant_id") else { return };
        let Some(org) = self.owner(&rst) else { return };
        let Some(as_owner) = self.as_owner_of(call, &org) else { return };
        let list = tool_call(
            &as_owner,
            "list_restaurants",
            json!({ "organization_id": org, "status": "open", "limit": 50 }),
        );
        let Some((open, _)) = self.walk(&list, "list_restaurants", None, 4).await else { return };
        for r in open.iter().filter_map(|r| r["id"].as_str()).filter(|r| *r != rst) {
            let args = json!({ "restaurant_id": r, "status": "paused", "expected_status": "open" });
            self.forward(&tool_call(&as_owner, "set_restaurant_status", args)).await;
        }
    }
}
