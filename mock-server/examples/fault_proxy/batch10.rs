//! Batch 10 of the outside faults (`b10-…`), written from docs/CONTRACT.md, its French seed,
//! docs/DECISIONS.md, docs/CONTROL_API.md, the reference server's source and the MCP
//! specification alone, without reading the suite: a third on surfaces other than a first-page
//! tools/call, a third on edges, a third on wrong data in a right envelope. Names are opaque
//! (`b10-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here. The
//! shapes it shares with later batches are in `common`; what it remembers between calls is its
//! own (`B10`), every map keyed (cursor, slot, restaurant) and bounded.

use std::sync::LazyLock;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_contract::Role;

use super::common::*;
use super::*;

#[derive(Default)]
struct B10 {
    /// restaurants deleted by a create_restaurant of the same name → the restaurant that replaced them (b10-03)
    replaced: HashMap<String, String>,
    /// date-filtered list_orders cursor → the last order of the page that issued it (b10-06)
    last_of_page: HashMap<String, Value>,
    /// keyed slot → (server ms of the call that ran, its arguments, its result) (b10-24)
    first_run: HashMap<Slot, (i64, Map<String, Value>, Value)>,
}

static STATE: LazyLock<Mutex<B10>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B10> {
    lock(&STATE)
}

impl Fault {
    /// A fault of this batch (`b10-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch10(self) -> bool {
        self.named_with("b10-")
    }
}

/// The revision whose answers go through the older streaming writer (b10-04).
const OLDER_REVISION: &str = "2025-06-18";
const TEXT_MAX: usize = chataigne_contract::tools::MESSAGE_TEXT_MAX;
const KEY_MIN: usize = chataigne_contract::tools::IDEMPOTENCY_KEY_MIN;
const DAY_MS: i64 = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
/// The sweep that removes expired keys runs this long after they expire, at the latest (b10-24).
const SWEEP_MS: i64 = 3600 * 1000;
/// The tool an owner's tools/list gains (b10-25).
const EXTRA_TOOL: &str = "reset_staff_password";

fn role_of(name: &str) -> Option<Role> {
    match name {
        "viewer" => Some(Role::Viewer),
        "staff" => Some(Role::Staff),
        "manager" => Some(Role::Manager),
        "owner" => Some(Role::Owner),
        _ => None,
    }
}

fn date_filtered(call: &Call) -> bool {
    call.has_arg("created_from") || call.has_arg("created_to")
}

fn page_size(call: &Call) -> usize {
    call.arg("limit").and_then(|v| v.as_u64()).map_or(chataigne_contract::DEFAULT_LIMIT, |n| n as usize)
}

/// Whether the text of a request's arguments writes a character as a `\u` escape.
fn escapes(raw: &str) -> bool {
    raw.contains("\\u")
}

fn has_non_ascii(args: &Map<String, Value>) -> bool {
    args.values().any(|v| v.as_str().is_some_and(|s| !s.is_ascii()))
}

/// `req_` then 15 random bytes in base64url (b10-26).
fn base64url_request_id() -> String {
    let bytes: [u8; 15] = rand::rng().random();
    format!("req_{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// A series as a CSV table (b10-07): one line per bucket, its scalar members as columns.
fn series_csv(data: &Value) -> String {
    let rows = data["series"].as_array().cloned().unwrap_or_default();
    let columns: Vec<String> =
        rows.first().and_then(Value::as_object).map(|o| o.keys().cloned().collect()).unwrap_or_default();
    let mut lines = vec![columns.join(",")];
    for r in &rows {
        lines.push(
            columns
                .iter()
                .map(|c| r[c].to_string().trim_matches('"').to_owned())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    lines.join("\n")
}

/// The keyset query a list page runs from a cursor's position (b10-22).
fn keyset_sql(call: &Call, cursor: &str) -> String {
    let payload = cursor
        .split('.')
        .next()
        .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or_default();
    let ts = payload["ts"].as_str().unwrap_or("1970-01-01T00:00:00Z");
    let id = payload["id"].as_str().unwrap_or("?");
    let rst = call.arg_str("restaurant_id").unwrap_or_default();
    format!(
        " [query: SELECT * FROM orders WHERE restaurant_id = '{rst}' AND (created_at, id) < ('{ts}', '{id}') \
         ORDER BY created_at DESC, id DESC LIMIT {}]",
        page_size(call) + 1
    )
}

fn extra_tool() -> Value {
    json!({
        "name": EXTRA_TOOL,
        "title": "Reset a staff member's password",
        "description": "Reset the console password of a member of an organization you own and return a temporary one.",
        "inputSchema": { "type": "object", "additionalProperties": false, "required": ["organization_id", "user_id"],
            "properties": { "organization_id": { "type": "string" }, "user_id": { "type": "string" } } },
        "annotations": { "readOnlyHint": false, "destructiveHint": true },
    })
}

impl Proxy {
    /// Request-side rewrites of batch 10 (`Proxy::before`).
    pub(crate) async fn before_batch10(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let x = Exchange::of(call, None);
        let t = x.tool.as_str();
        match self.fault {
            B1002Pag2 if list_key(t).is_some() && call.arg("limit").and_then(|v| v.as_u64()) == Some(50) => {
                // The maximum is checked with < instead of <=.
                return Some(refusal(call, ErrorCode::InvalidArguments));
            }
            B1003Abs2 if kind(t).is_some() => {
                let rst = call.arg_str("restaurant_id")?;
                if state().replaced.contains_key(&rst) {
                    // The restaurant was deleted when another took its name.
                    return Some(refusal(call, ErrorCode::ResourceForbidden));
                }
            }
            B1005Lim7 if matches!(t, "send_message" | "create_instruction") => {
                let text = call.arg_str("text")?;
                if text.encode_utf16().count() > TEXT_MAX && text.chars().count() <= TEXT_MAX {
                    // The length is the UTF-16 string's, as the runtime counts it.
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            B1006Pag4 if t == "list_orders" && date_filtered(call) => {
                return self.page_repeats_last(call).await;
            }
            B1008Auth1 if is_endpoint(call) => {
                let auth = call.auth();
                let scheme = auth.split_whitespace().next().unwrap_or_default().to_owned();
                if scheme.eq_ignore_ascii_case("bearer") && scheme != "Bearer" {
                    // The parser looks for "Bearer " exactly: anything else is no token at all.
                    call.headers.remove(header::AUTHORIZATION);
                }
            }
            B1010Pag6 if t == "get_conversation" => {
                let cursor = call.arg_str("cursor")?;
                let issued = {
                    let m = lock(&self.memory);
                    let i = m.cursors.get(&cursor)?;
                    (i.tool.clone(), i.auth.clone(), i.filters.clone())
                };
                let (tool, auth, filters) = issued;
                let same_restaurant = filters.get("restaurant_id") == call.arg("restaurant_id").as_ref();
                if tool == t && auth == call.auth() && same_restaurant {
                    // The cursor names the restaurant and a position: the conversation is its own.
                    let first = filters.get("conversation_id").cloned()?;
                    call.set_args(|a| {
                        a.insert("conversation_id".into(), first);
                    });
                }
            }
            B1012Idem3 if t == "create_restaurant" => {
                let (args, result) = self.stored(&slot(call, t)?)?;
                let without = |mut a: Map<String, Value>| {
                    a.remove("timezone");
                    a
                };
                if args.get("timezone") != call.arg("timezone").as_ref()
                    && without(args) == without(call.args())
                {
                    // The fingerprint covers the organization, the name and the key only.
                    return Some(replay(call, &result));
                }
            }
            B1014Lim1 if t == "get_analytics" => {
                let (from, to) = (call.arg_str("from")?, call.arg_str("to")?);
                if from == to && chataigne_contract::time::parse_date(&from).is_some() {
                    // The range is checked as to > from: a one-day range reads as empty.
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            B1015Pag1 if t == "list_orders" && !call.has_arg("limit") => {
                let n = call.arg("status").and_then(|s| s.as_array().map(Vec::len)).unwrap_or(0);
                if n >= 2 {
                    // The default page size is applied to each status's query, then merged.
                    let size = (chataigne_contract::DEFAULT_LIMIT * n).min(chataigne_contract::MAX_LIMIT);
                    call.set_args(|a| {
                        a.insert("limit".into(), json!(size));
                    });
                }
            }
            B1017Idem1 if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                if key.chars().count() == KEY_MIN {
                    // The minimum is checked with > instead of >=.
                    return Some(refusal(call, ErrorCode::InvalidArguments));
                }
            }
            B1018Pre3 if t == "update_order_status" => return self.steps_walked(call).await,
            B1020Proto5 if header_str(call, "sec-fetch-site").as_deref() == Some("same-origin") => {
                // A browser's own word that the request is same-origin is taken instead of Origin.
                call.headers.remove(header::ORIGIN);
            }
            B1024Idem6 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let (at, args, result) = state().first_run.get(&slot).cloned()?;
                let age = self.clock_ms().await - at;
                if age >= DAY_MS + SWEEP_MS {
                    state().first_run.remove(&slot);
                } else if age >= DAY_MS && args == call.args() {
                    // Expired, but the sweep has not removed it yet: read as a live key.
                    return Some(replay(call, &result));
                }
            }
            B1027Proto3 if kind(t) == Some(Kind::Read) => {
                let schema = ToolName::parse(t)?.input_schema();
                let known = schema["properties"].as_object()?;
                if call.args().keys().any(|k| !known.contains_key(k)) {
                    // Read arguments are deserialized into a struct that ignores unknown fields.
                    call.set_args(|a| a.retain(|k, _| known.contains_key(k)));
                }
            }
            B1028Idem2 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let (args, raw) = {
                    let m = lock(&self.memory);
                    let k = m.keyed.get(&slot)?;
                    (k.args.clone(), k.raw_args.clone())
                };
                let now = raw_arguments(&call.body);
                if args == call.args() && has_non_ascii(&args) && escapes(&raw) != escapes(&now) {
                    // The fingerprint hashes the arguments' text as received.
                    return Some(refusal(call, ErrorCode::IdempotencyMismatch));
                }
            }
            B1029Pre1 if matches!(t, "update_order_status" | "set_restaurant_status") => {
                if call.arg_str("expected_status").as_deref() != Some("") {
                    return None;
                }
                // An empty expected_status is falsy: the precondition is skipped.
                let current = self.current_status(call).await?;
                call.set_args(|a| {
                    a.insert("expected_status".into(), json!(current));
                });
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 10 (`Proxy::after`).
    pub(crate) async fn after_batch10(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let x = Exchange::of(call, Some(a));
        let (t, m, code, success, replayed) =
            (x.tool.as_str(), x.method.as_str(), x.code, x.success, x.replayed);
        match self.fault {
            B1001Proto2 => {
                let id = call.rpc_id();
                let Some(n) = id
                    .as_str()
                    .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok())
                else {
                    return;
                };
                if let Some(j) = a.json.as_mut()
                    && j.get("error").is_some()
                {
                    // The error path rebuilds the id from its parsed value.
                    j["id"] = json!(n);
                    a.changed = true;
                }
            }
            B1004Proto1 if m == "tools/call" && revision(call).as_deref() == Some(OLDER_REVISION) => {
                let Some(answer) = a.json.clone() else { return };
                // The older revision's writer streams the answer and never writes the event's end.
                let body =
                    format!("event: message\ndata: {}\n", serde_json::to_string(&answer).unwrap_or_default());
                let mut headers = a.headers.clone();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                headers.remove(header::CONTENT_LENGTH);
                *a = Answer::new(a.status, headers, Bytes::from(body));
            }
            B1003Abs2 if success && !replayed && t == "create_restaurant" => {
                self.same_name_replaced(call, a).await
            }
            B1003Abs2 if success && t == "list_restaurants" => {
                let replaced = state().replaced.clone();
                if let Some(items) = a.items_mut(t) {
                    items.retain(|r| r["id"].as_str().is_none_or(|id| !replaced.contains_key(id)));
                }
            }
            B1006Pag4 if success && t == "list_orders" && date_filtered(call) => {
                let (Some(next), Some(last)) = (a.next_cursor(), a.items(t).and_then(|v| v.last().cloned()))
                else {
                    return;
                };
                let mut s = state();
                bound(&mut s.last_of_page, RECENT);
                s.last_of_page.insert(next, last);
            }
            B1007Env1 if success && t == "get_analytics" => {
                let Some(data) = data_of(a).cloned() else { return };
                if let Some(blocks) = a.result_mut().and_then(|r| r["content"].as_array_mut()) {
                    // The series is rendered as a table for people, after the summary.
                    blocks.push(json!({ "type": "text", "text": series_csv(&data) }));
                }
            }
            B1009Pre2 if t == "update_order_status" => {
                if !matches!(
                    code,
                    Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)
                ) {
                    return;
                }
                let (Some(target), Some(oid)) = (call.arg_str("status"), call.arg_str("order_id")) else {
                    return;
                };
                if self.current_status(call).await.as_deref() != Some(target.as_str()) {
                    return;
                }
                // The store's update is "set status = target where status in (expected, target)".
                let read = json!({ "restaurant_id": call.arg("restaurant_id"), "order_id": oid });
                let b = self.forward(&tool_call(call, "get_order", read)).await;
                let Some(order) = data_of(&b).map(|d| d["order"].clone()) else { return };
                let result = success_result(
                    json!({ "order": order }),
                    fresh_meta(),
                    &format!("Order {oid} is now {target}"),
                );
                *a = Answer::rpc(call, "result", result);
            }
            B1011Env5 if code == Some(ErrorCode::ResourceNotFound) => {
                let child =
                    ["order_id", "conversation_id", "transcript_id"].iter().find_map(|k| call.arg_str(k));
                let (Some(child), Some(rst)) = (child, call.arg_str("restaurant_id")) else { return };
                let Some(home) = self.data.child_restaurant.get(&child).and_then(|r| self.owner(r)) else {
                    return;
                };
                if self.owner(&rst).is_some_and(|org| org != home) {
                    // The tenant check's refusal is filed with the authorization errors.
                    set_error(a, "category", json!("authorization"));
                }
            }
            B1013Env5 if code == Some(ErrorCode::OutputTooLarge) => {
                set_error(a, "category", json!("internal"))
            }
            B1016Auth4 if t == "set_restaurant_status" && code == Some(ErrorCode::ResourceForbidden) => {
                self.precondition_before_membership(call, a).await
            }
            B1019Auth7 if t == "search_transcripts" && code == Some(ErrorCode::ResourceForbidden) => {
                let (Some(p), Some(rst)) = (self.caller(call), call.arg_str("restaurant_id")) else { return };
                let Some(org) = self.owner(&rst) else { return };
                if !self.data.membership(&p.user, &org).is_some_and(|m| m.revoked) {
                    return;
                }
                // The search index keeps its own copy of memberships, revocations left out.
                let Some(as_owner) = self.as_owner_of(call, &org) else { return };
                let b = self.forward(&as_owner).await;
                if b.is_success() {
                    *a = answer_as(call, b);
                }
            }
            B1021Auth4
                if kind(t).is_some_and(Kind::is_write) && code == Some(ErrorCode::ResourceForbidden) =>
            {
                self.limited_membership_writes(call, a, t).await
            }
            B1022Sec2 if code == Some(ErrorCode::InternalError) && items_key(t).is_some() => {
                let Some(cursor) = call.arg_str("cursor") else { return };
                // The continuation's error carries the query it ran.
                append_message(a, &keyset_sql(call, &cursor));
            }
            B1023Lim5 if success && a.flag("truncated") && list_key(t).is_some() => {
                self.cut_at_end(call, a, t).await
            }
            B1024Idem6 if success && !replayed && is_keyed(t) => {
                let (Some(slot), Some(result)) = (slot(call, t), a.result().cloned()) else { return };
                let now = self.clock_ms().await;
                let mut s = state();
                bound(&mut s.first_run, RECENT);
                s.first_run.entry(slot).or_insert((now, call.args(), result));
            }
            B1025Abs1 if m == "tools/list" => {
                let Some(p) = self.caller(call) else { return };
                let owns =
                    self.data.memberships.iter().any(|x| x.user == p.user && x.role == "owner" && !x.revoked);
                if owns && let Some(tools) = a.result_mut().and_then(|r| r["tools"].as_array_mut()) {
                    // The admin tools are listed for owners only.
                    tools.push(extra_tool());
                }
            }
            B1026Env2 if a.result().and_then(request_id).is_some() => {
                a.set_request_id(&base64url_request_id())
            }
            B1030Abs2 if success && !replayed && t == "send_message" => self.broadcast(call).await,
            _ => {}
        }
    }

    /// b10-06: a page reached through a date-filtered cursor starts with the previous page's last
    /// order (the keyset compares with >=): one order fewer is new on each page.
    async fn page_repeats_last(&self, call: &Call) -> Option<Answer> {
        let cursor = call.arg_str("cursor")?;
        let last = state().last_of_page.get(&cursor).cloned()?;
        let size = page_size(call);
        if size < 2 {
            return None;
        }
        let probe = call.with_args(|a| {
            a.insert("limit".into(), json!(size - 1));
        });
        let mut b = self.forward(&probe).await;
        let items = b.items_mut("list_orders")?;
        items.insert(0, last);
        let tail = items.last().cloned();
        if let (Some(next), Some(tail)) = (b.next_cursor(), tail) {
            let mut s = state();
            bound(&mut s.last_of_page, RECENT);
            s.last_of_page.insert(next, tail);
        }
        Some(answer_as(call, b))
    }

    /// b10-18: a move several steps forward is applied one step at a time.
    async fn steps_walked(&self, call: &Call) -> Option<Answer> {
        let (from, to) = (call.arg_str("expected_status")?, call.arg_str("status")?);
        let (a, b) = (lifecycle_step(&from)?, lifecycle_step(&to)?);
        if b <= a + 1 || self.current_status(call).await.as_deref() != Some(from.as_str()) {
            return None;
        }
        let lifecycle = chataigne_contract::tools::ORDER_LIFECYCLE;
        let mut last = None;
        for s in a + 1..=b {
            let step = call.with_args(|x| {
                x.insert("expected_status".into(), json!(lifecycle[s - 1]));
                x.insert("status".into(), json!(lifecycle[s]));
            });
            let answer = self.forward(&step).await;
            let ok = answer.is_success();
            last = Some(answer_as(call, answer));
            if !ok {
                break;
            }
        }
        last
    }

    /// b10-03: a restaurant created with the name of one its organization has replaces it.
    async fn same_name_replaced(&self, call: &Call, a: &Answer) {
        let (Some(org), Some(name)) = (call.arg_str("organization_id"), call.arg_str("name")) else { return };
        let Some(new) = data_of(a).and_then(|d| d["restaurant"]["id"].as_str()).map(String::from) else {
            return;
        };
        let list = tool_call(call, "list_restaurants", json!({ "organization_id": org, "limit": 50 }));
        let Some((restaurants, _)) = self.walk(&list, "list_restaurants", None, 10).await else { return };
        let mut s = state();
        bound(&mut s.replaced, RECENT);
        for r in restaurants {
            let same = r["name"].as_str().is_some_and(|n| n.trim().eq_ignore_ascii_case(name.trim()));
            if let Some(id) = r["id"].as_str().filter(|id| same && *id != new) {
                s.replaced.insert(id.to_owned(), new.clone());
            }
        }
    }

    /// b10-16: on a restaurant the caller has no membership in, expected_status is compared
    /// before the refusal.
    async fn precondition_before_membership(&self, call: &Call, a: &mut Answer) {
        let (Some(rst), Some(expected)) = (call.arg_str("restaurant_id"), call.arg_str("expected_status"))
        else {
            return;
        };
        let Some(org) = self.owner(&rst) else { return };
        let member = self.caller(call).and_then(|p| self.data.membership(&p.user, &org).cloned());
        if member.is_some_and(|m| !m.revoked) {
            return;
        }
        let Some(as_owner) = self.as_owner_of(call, &org) else { return };
        let b = self.forward(&tool_call(&as_owner, "get_restaurant", json!({ "restaurant_id": rst }))).await;
        let Some(status) = data_of(&b).and_then(|d| d["restaurant"]["status"].as_str()).map(String::from)
        else {
            return;
        };
        if status != expected {
            a.recode(ErrorCode::ExpectedStateMismatch);
        }
    }

    /// b10-21: a membership limited to some restaurants, its role high enough, writes anywhere in
    /// its organization.
    async fn limited_membership_writes(&self, call: &Call, a: &mut Answer, t: &str) {
        let (Some(p), Some(rst)) = (self.caller(call), call.arg_str("restaurant_id")) else { return };
        let Some(org) = self.owner(&rst) else { return };
        let Some(m) = self.data.membership(&p.user, &org).cloned() else { return };
        let Some(limited) = m.restaurants.as_ref().filter(|_| !m.revoked) else { return };
        let need = ToolName::parse(t).and_then(ToolName::min_role);
        if limited.contains(&rst) || role_of(&m.role) < need {
            return;
        }
        let Some(as_owner) = self.as_owner_of(call, &org) else { return };
        let b = self.forward(&as_owner).await;
        if b.is_success() {
            *a = answer_as(call, b);
        }
    }

    /// b10-23: a cut page loses its next_cursor when the uncut page would have ended the list.
    async fn cut_at_end(&self, call: &Call, a: &mut Answer, t: &str) {
        let Some(next) = a.next_cursor() else { return };
        let room = page_size(call).saturating_sub(a.items(t).map_or(0, Vec::len));
        let Some((rest, ended)) = self.walk(call, t, Some(next), 4).await else { return };
        if ended && rest.len() <= room {
            // has_more was computed on the uncut page: it was the last.
            if let Some(meta) = a.meta_mut() {
                meta.remove("next_cursor");
            }
        }
    }

    /// b10-30: the message is also sent to the restaurant's other open conversations.
    async fn broadcast(&self, call: &Call) {
        let (Some(rst), Some(cnv), Some(key)) =
            (call.arg_str("restaurant_id"), call.arg_str("conversation_id"), call.arg_str("idempotency_key"))
        else {
            return;
        };
        let list = tool_call(
            call,
            "list_conversations",
            json!({ "restaurant_id": rst, "status": "open", "limit": 50 }),
        );
        let Some((open, _)) = self.walk(&list, "list_conversations", None, 2).await else { return };
        let head: String = key.chars().take(180).collect();
        for c in open.iter().filter_map(|c| c["id"].as_str()).filter(|c| *c != cnv) {
            let copy = call.with_args(|x| {
                x.insert("conversation_id".into(), json!(c));
                x.insert("idempotency_key".into(), json!(format!("{head}-{c}")));
            });
            self.forward(&copy).await;
        }
    }
}
