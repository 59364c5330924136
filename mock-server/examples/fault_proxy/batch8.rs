//! Batch 8 of the outside faults (`b8-…`), written from docs/CONTRACT.md, its French seed,
//! docs/DECISIONS.md, docs/CONTROL_API.md, the reference server's source and the MCP
//! specification alone, without reading the suite: a third on surfaces other than a first-page
//! tools/call (a JSON array body, GET and DELETE on the endpoint, the protected-resource metadata,
//! a timeout's answer, error answers' headers, a page reached through a cursor, a resource read,
//! an internal error's HTTP answer, a revision's standard headers), a third on edges (a method
//! name's case, null for an optional argument, a page one item too long, a cursor with blanks
//! around it, a message_limit of 0, a range of 0 days, line endings counted once, a key cut to its
//! column, a marker that outlives its call, a look-ahead that wants a full page), a third on
//! wrong data in a right envelope (a wrong retryable flag, a page sorted by status, a truncated flag set on every page,
//! a precondition read from a lagging replica, two racers both refused, a replay that repeats part
//! of its effect, a scope skipped on one tool, a role raised on one tool, a fingerprint of a text's
//! head, a refusal cached past a restored membership).
//! Names are opaque (`b8-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here; what the
//! batch remembers between calls is its own (`B8`), bounded, beside the proxy's `Memory`.

use std::sync::LazyLock;

use super::*;

#[derive(Default)]
struct B8 {
    /// keyed slot → (arguments, when the call that ran under it answered) (b8-19)
    markers: HashMap<Slot, (Map<String, Value>, Instant)>,
    /// keyed slot → the arguments of the call that ran under it (b8-29)
    fingerprints: HashMap<Slot, Map<String, Value>>,
    /// (user, organization) → memberships added again by replays (b8-26)
    extra_memberships: HashMap<(String, String), usize>,
    /// order → (status before its last move, when) (b8-24)
    order_moves: HashMap<String, (String, Instant)>,
    /// order → (ticket, arrival) of update_order_status calls (b8-25)
    arrivals: HashMap<String, Vec<(u64, Instant)>>,
    tickets: u64,
    /// (auth, restaurant or organization) → when access was last refused (b8-30)
    refusals: HashMap<(String, String), Instant>,
}

static STATE: LazyLock<Mutex<B8>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B8> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep a map bounded: past `n` entries it starts again (faults only need recent entries).
fn bound<K, V>(m: &mut HashMap<K, V>, n: usize) {
    if m.len() > n {
        m.clear();
    }
}

impl Fault {
    /// A fault of this batch (`b8-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch8(self) -> bool {
        CATALOGUE.iter().any(|(f, name, ..)| *f == self && name.starts_with("b8-"))
    }
}

const RESTAURANT_URI: &str = "chataigne://restaurants/";
const METADATA: &str = "/.well-known/oauth-protected-resource";
/// IDEM-1's upper bound, in characters: the key column's width (b8-18).
const MAX_KEY_CHARS: usize = 255;
/// The text bound of send_message and create_instruction, in characters (b8-17).
const TEXT_MAX: usize = chataigne_contract::tools::MESSAGE_TEXT_MAX;
/// How long the in-progress marker outlives the call (b8-19).
const MARKER_LINGER: Duration = Duration::from_secs(5);
/// How far the replica the precondition is read from lags (b8-24).
const REPLICA_LAG: Duration = Duration::from_secs(30);
/// How long two moves of one order wait for each other's row lock (b8-25).
const LOCK_WAIT: Duration = Duration::from_millis(300);
/// How long a refusal of access is cached (b8-30).
const REFUSAL_TTL: Duration = Duration::from_secs(60);
/// How many characters of a text the arguments' fingerprint keeps (b8-29).
const FINGERPRINT_CHARS: usize = 100;

fn refusal(call: &Call, code: ErrorCode) -> Answer {
    Answer::rpc(call, "result", error_result(code, &new_request_id()))
}

fn slot(call: &Call, t: &str) -> Option<Slot> {
    Some((call.auth(), t.to_owned(), call.arg_str("idempotency_key")?))
}

fn is_endpoint(call: &Call) -> bool {
    call.uri.path() == "/mcp"
}

fn head(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The arguments without `text` (b8-29).
fn without_text(args: &Map<String, Value>) -> Map<String, Value> {
    let mut a = args.clone();
    a.remove("text");
    a
}

/// An HTML debug page for an internal error, as a web framework's development mode renders one
/// (b8-09).
fn debug_page() -> String {
    "<!DOCTYPE html><html><head><title>500 Internal Server Error</title></head><body>\
     <h1>Internal Server Error</h1>\
     <pre>thread 'tokio-runtime-worker' panicked at src/store/orders.rs:214:38:\n\
     called `Result::unwrap()` on an `Err` value: Error { kind: Db, cause: \
     \"connection to postgres://chataigne:s3cret@db.internal:5432/chataigne refused\" }\n\
     stack backtrace:\n   0: chataigne::store::orders::load\n             at ./src/store/orders.rs:214:38\n\
     </pre></body></html>"
        .to_owned()
}

impl Proxy {
    fn persona_of8(&self, call: &Call) -> Option<Persona> {
        self.data.persona(&call.token()).cloned()
    }

    /// The user behind a call: the persona's, else the auth header itself.
    fn user_of8(&self, call: &Call) -> String {
        self.persona_of8(call).map_or_else(|| call.auth(), |p| p.user)
    }

    /// Request-side rewrites of batch 8 (`Proxy::before`).
    pub(crate) async fn before_batch8(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let m = method.as_deref().unwrap_or_default();
        match self.fault {
            B801Proto2 if call.method == Method::POST && is_endpoint(call) && call.rpc.is_none() => {
                return self.batch_answered(call).await;
            }
            B802Proto5 if matches!(call.method, Method::GET | Method::DELETE) && is_endpoint(call) => {
                // The Origin check lives in the POST handler: the stream and the session's end
                // are routed beside it.
                call.headers.remove(header::ORIGIN);
            }
            B808Proto1
                if matches!(m, "prompts/get" | "resources/read") && call.headers.contains_key("mcp-name") =>
            {
                // Mcp-Name is compared with the body on tools/call only: for the other named
                // methods the body's name is taken, whatever the header says.
                let params = call.rpc.as_ref().map(|r| r["params"].clone()).unwrap_or_default();
                let name = params["name"].as_str().or(params["uri"].as_str()).map(String::from)?;
                if let Ok(v) = HeaderValue::from_str(&name) {
                    call.headers.insert("mcp-name", v);
                }
            }
            B811Proto2 if method.is_some() && m.chars().any(|c| c.is_ascii_uppercase()) => {
                // The router lower-cases method names before it looks them up.
                let lowered = m.to_ascii_lowercase();
                if let Some(rpc) = call.rpc.as_mut() {
                    rpc["method"] = json!(lowered);
                    call.body = Bytes::from(serde_json::to_vec(rpc).unwrap_or_default());
                }
            }
            B812Proto3 if kind(t).is_some() && call.args().values().any(Value::is_null) => {
                // `arg ?? undefined`: an argument given null is taken as not given.
                call.set_args(|a| a.retain(|_, v| !v.is_null()));
            }
            B813Pag1 if list_key(t).is_some() && !call.has_arg("limit") => {
                // The default page size is the look-ahead query's `LIMIT 21`, returned whole.
                call.set_args(|a| {
                    a.insert("limit".into(), json!(chataigne_contract::DEFAULT_LIMIT + 1));
                });
            }
            B814Pag5 => {
                let cursor = call.arg_str("cursor")?;
                let trimmed = cursor.trim().to_owned();
                if trimmed != cursor {
                    // String arguments are trimmed on the way in, cursors included.
                    call.set_args(|a| {
                        a.insert("cursor".into(), json!(trimmed));
                    });
                }
            }
            B815Pag8 if t == "get_conversation" && call.arg("message_limit") == Some(json!(0)) => {
                // `message_limit || 50`: 0 is falsy, so it means the default.
                call.set_args(|a| {
                    a.remove("message_limit");
                });
            }
            B817Lim7 if matches!(t, "send_message" | "create_instruction") => {
                let text = call.arg_str("text")?;
                let normalized = text.replace("\r\n", "\n");
                if normalized != text
                    && text.chars().count() > TEXT_MAX
                    && normalized.chars().count() <= TEXT_MAX
                {
                    // Line endings are normalized before the length check (and stored so).
                    call.set_args(|a| {
                        a.insert("text".into(), json!(normalized));
                    });
                }
            }
            B818Idem1 if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                if key.chars().count() > MAX_KEY_CHARS {
                    // A VARCHAR(255) column that cuts instead of refusing.
                    call.set_args(|a| {
                        a.insert("idempotency_key".into(), json!(head(&key, MAX_KEY_CHARS)));
                    });
                }
            }
            B819Idem4 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let lingering = {
                    let s = state();
                    s.markers
                        .get(&slot)
                        .is_some_and(|(args, at)| *args == call.args() && at.elapsed() < MARKER_LINGER)
                };
                if lingering {
                    // The in-progress marker is deleted by a job that runs 5 s after the call.
                    return Some(refusal(call, ErrorCode::OperationInProgress));
                }
            }
            B824Pre2 if t == "update_order_status" => {
                let order = call.arg_str("order_id")?;
                let expected = call.arg_str("expected_status")?;
                let before = {
                    let mut s = state();
                    s.order_moves.retain(|_, (_, at)| at.elapsed() < REPLICA_LAG);
                    s.order_moves.get(&order).map(|(old, _)| old.clone())
                };
                if let Some(old) = before
                    && old != expected
                {
                    // The precondition is read from a replica that still shows the old status.
                    return Some(refusal(call, ErrorCode::ExpectedStateMismatch));
                }
            }
            B825Pre4 if t == "update_order_status" => {
                let order = call.arg_str("order_id")?;
                let ticket = {
                    let mut s = state();
                    s.tickets += 1;
                    let n = s.tickets;
                    bound(&mut s.arrivals, 10_000);
                    let list = s.arrivals.entry(order.clone()).or_default();
                    list.retain(|(_, at)| at.elapsed() < Duration::from_secs(5));
                    list.push((n, Instant::now()));
                    n
                };
                tokio::time::sleep(LOCK_WAIT).await;
                let contended = {
                    let s = state();
                    let list = s.arrivals.get(&order).cloned().unwrap_or_default();
                    let mine = list.iter().find(|(n, _)| *n == ticket).map(|(_, at)| *at);
                    mine.is_some_and(|mine| {
                        list.iter().any(|(n, at)| {
                            *n != ticket
                                && at.saturating_duration_since(mine).max(mine.saturating_duration_since(*at))
                                    < LOCK_WAIT
                        })
                    })
                };
                if contended {
                    // Each move locks the order's row, then its history's: two moves of one order
                    // deadlock, and the database aborts both.
                    return Some(refusal(call, ErrorCode::OrderStatusPreconditionFailed));
                }
            }
            B828Auth6 if t == "update_order_status" => {
                let p = self.persona_of8(call)?;
                let rst = call.arg_str("restaurant_id")?;
                let org = self.owner(&rst)?;
                let staff =
                    self.data.membership(&p.user, &org).is_some_and(|ms| !ms.revoked && ms.role == "staff");
                if staff {
                    // The tool's role row says manager, not staff.
                    return Some(refusal(call, ErrorCode::ResourceForbidden));
                }
            }
            B829Idem3 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let first = state().fingerprints.get(&slot).cloned()?;
                let args = call.args();
                let (a, b) = (
                    first.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                );
                if a != b
                    && head(&a, FINGERPRINT_CHARS) == head(&b, FINGERPRINT_CHARS)
                    && without_text(&first) == without_text(&args)
                {
                    // The fingerprint hashes the text's first 100 characters (its preview).
                    call.set_args(|x| {
                        x.insert("text".into(), json!(a));
                    });
                }
            }
            B830Auth7 if kind(t).is_some() => {
                let target = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id"))?;
                let cached = {
                    let mut s = state();
                    s.refusals.retain(|_, at| at.elapsed() < REFUSAL_TTL);
                    s.refusals.contains_key(&(call.auth(), target))
                };
                if cached {
                    // Access decisions are cached 60 s, refusals included.
                    return Some(refusal(call, ErrorCode::ResourceForbidden));
                }
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 8 (`Proxy::after`).
    pub(crate) async fn after_batch8(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let m = method.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        let replayed = success && a.flag("replayed");
        match self.fault {
            B803Auth1
                if matches!(call.method, Method::GET | Method::DELETE)
                    && is_endpoint(call)
                    && a.status == StatusCode::UNAUTHORIZED =>
            {
                // The challenge is added by the POST handler; GET and DELETE answer a bare 401.
                a.headers.remove(header::WWW_AUTHENTICATE);
            }
            B804Env4 if code == Some(ErrorCode::ToolTimeout) => {
                // The framework's request timeout answers before the tool's own deadline handler.
                let error = json!({ "code": -32001, "message": "Request timed out" });
                *a = Answer::rpc(call, "error", error);
            }
            B805Env2 if kind(t).is_some() && code.is_some() => {
                // The header is set by the success path's response builder only.
                a.headers.remove("x-request-id");
            }
            B806Pag7 if code == Some(ErrorCode::ResourceForbidden) && call.has_arg("cursor") => {
                let Some(key) = list_key(t) else { return };
                // The next page's query joins the current memberships: no rows, no error.
                let mut data = Map::new();
                data.insert(key.into(), json!([]));
                let result = success_result(Value::Object(data), fresh_meta(), &format!("0 {key}"));
                let rid = request_id(&result).unwrap_or_default();
                *a = Answer::rpc(call, "result", result);
                a.set_header_id(&rid);
            }
            B807Auth4
                if m == "resources/read" && a.json.as_ref().is_some_and(|j| j.get("error").is_some()) =>
            {
                let uri = call.rpc.as_ref().and_then(|r| r["params"]["uri"].as_str()).unwrap_or_default();
                if uri.starts_with(RESTAURANT_URI) {
                    // The resource handler turns any refusal of the tool into no contents.
                    *a = Answer::rpc(call, "result", json!({ "contents": [] }));
                }
            }
            B809Sec2 if code == Some(ErrorCode::InternalError) => {
                let mut headers = HeaderMap::new();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
                *a = Answer::new(StatusCode::INTERNAL_SERVER_ERROR, headers, Bytes::from(debug_page()));
            }
            B810Auth1 if call.method == Method::GET && call.uri.path().starts_with(METADATA) => {
                if let Some(j) = a.json.as_mut()
                    && let Some(scopes) = j["scopes_supported"].as_array_mut()
                {
                    // A static list written when the server had read tools only.
                    scopes.retain(|s| s.as_str().is_some_and(|s| s.ends_with(":read")));
                    a.changed = true;
                }
            }
            B816Lim1 if t == "get_analytics" && code == Some(ErrorCode::InvalidArguments) => {
                self.empty_range_served(call, a).await;
            }
            B819Idem4 if success && !replayed && is_keyed(t) => {
                let Some(slot) = slot(call, t) else { return };
                let mut s = state();
                bound(&mut s.markers, 10_000);
                s.markers.insert(slot, (call.args(), Instant::now()));
            }
            B820Pag3 if success && items_key(t).is_some() => {
                self.cursor_if_full_page_follows(call, a, t).await
            }
            B821Env5 if code == Some(ErrorCode::OrderStatusPreconditionFailed) => {
                set_error(a, "retryable", json!(true));
            }
            B822Pag4 if success && t == "list_orders" => {
                let statuses: Vec<Value> =
                    call.arg("status").and_then(|v| v.as_array().cloned()).unwrap_or_default();
                if statuses.len() < 2 {
                    return;
                }
                let rank = |o: &Value| statuses.iter().position(|s| *s == o["status"]).unwrap_or(usize::MAX);
                if let Some(items) = a.items_mut(t) {
                    // The page is grouped by status for display (ORDER BY status, created_at DESC
                    // applied to the rows fetched).
                    items.sort_by_key(rank);
                }
            }
            B823Lim5 if success && items_key(t).is_some() && a.next_cursor().is_some() => {
                if let Some(meta) = a.meta_mut() {
                    // `truncated` is set from "more follow", not from "cut for size".
                    meta.insert("truncated".into(), json!(true));
                }
            }
            B824Pre2 if success && t == "update_order_status" => {
                let (Some(order), Some(old)) = (call.arg_str("order_id"), call.arg_str("expected_status"))
                else {
                    return;
                };
                let mut s = state();
                bound(&mut s.order_moves, 10_000);
                s.order_moves.insert(order, (old, Instant::now()));
            }
            B826Idem2 => self.membership_added_again(call, a, t, replayed),
            B827Auth3 if t == "create_organization" && code == Some(ErrorCode::ScopeRequired) => {
                // "Any user may create an organization" was read as "no scope needed".
                let Some(p) = self.persona_of8(call) else { return };
                let Some(sibling) = self.data.sibling(&p, Some("organizations:write")) else { return };
                let b = self.forward(&call.as_auth(&token_header(sibling))).await;
                if b.is_success() {
                    *a = answer_as(call, b);
                }
            }
            B829Idem3 if success && !replayed && is_keyed(t) => {
                let Some(slot) = slot(call, t) else { return };
                let mut s = state();
                bound(&mut s.fingerprints, 10_000);
                s.fingerprints.entry(slot).or_insert_with(|| call.args());
            }
            B830Auth7 if code == Some(ErrorCode::ResourceForbidden) => {
                let Some(target) = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id"))
                else {
                    return;
                };
                let mut s = state();
                bound(&mut s.refusals, 10_000);
                s.refusals.entry((call.auth(), target)).or_insert_with(Instant::now);
            }
            _ => {}
        }
    }

    /// b8-01: a JSON array body is taken for a JSON-RPC batch: each member is served and the
    /// answers come back as one array with HTTP 200.
    async fn batch_answered(&self, call: &Call) -> Option<Answer> {
        let Ok(Value::Array(members)) = serde_json::from_slice::<Value>(&call.body) else { return None };
        if members.is_empty() || !members.iter().all(Value::is_object) {
            return None;
        }
        let mut answers = Vec::new();
        for member in members.into_iter().take(16) {
            let mut one = call.clone();
            one.body = Bytes::from(serde_json::to_vec(&member).unwrap_or_default());
            one.rpc = Some(member);
            let b = self.forward(&one).await;
            if let Some(j) = b.json {
                answers.push(j);
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut a = Answer::new(StatusCode::OK, headers, Bytes::new());
        a.json = Some(Value::Array(answers));
        a.changed = true;
        Some(a)
    }

    /// b8-20: `has_more` is computed as "a full page follows" (the look-ahead query asks for the
    /// next page and compares its length with the page size): a last page shorter than a full one
    /// is never reached.
    async fn cursor_if_full_page_follows(&self, call: &Call, a: &mut Answer, t: &str) {
        let Some(cursor) = a.next_cursor() else { return };
        let default = if t == "get_conversation" {
            chataigne_contract::DEFAULT_MESSAGE_LIMIT
        } else {
            chataigne_contract::DEFAULT_LIMIT
        };
        let size = call.page_limit().and_then(|v| v.as_u64()).map_or(default, |n| n as usize);
        let next = self
            .forward(&call.with_args(|x| {
                x.insert("cursor".into(), json!(cursor));
            }))
            .await;
        let Some(following) = next.items(t).map(Vec::len) else { return };
        if following < size
            && let Some(meta) = a.meta_mut()
        {
            meta.remove("next_cursor");
        }
    }

    /// b8-16: the range is checked as `days >= 0` with days = to − from: a `to` one day before
    /// `from` is a range of 0 days, served empty.
    async fn empty_range_served(&self, call: &Call, a: &mut Answer) {
        use chataigne_contract::time::parse_date;
        let (Some(from), Some(to)) = (call.arg_str("from"), call.arg_str("to")) else { return };
        let (Some(f), Some(d)) = (parse_date(&from), parse_date(&to)) else { return };
        if d != f - 1 {
            return;
        }
        // Everything else is checked as usual: the same call over one day must be served.
        let probe = call.with_args(|x| {
            x.insert("to".into(), json!(from));
        });
        let b = self.forward(&probe).await;
        if !b.is_success() {
            return;
        }
        let mut b = answer_as(call, b);
        if let Some(r) = b.result_mut() {
            let data = &mut r["structuredContent"]["data"];
            data["to"] = json!(to);
            data["series"] = json!([]);
            if let Some(totals) = data["totals"].as_object_mut() {
                for v in totals.values_mut() {
                    *v = json!(0);
                }
            }
            let n = data["metrics"].as_array().map_or(0, Vec::len);
            let g = data["granularity"].as_str().unwrap_or("day").to_owned();
            let rid = data["restaurant_id"].as_str().unwrap_or_default().to_owned();
            r["content"] =
                json!([{ "type": "text", "text": format!("{n} metrics of {rid} over 0 days, per {g}") }]);
        }
        *a = b;
    }

    /// b8-26: a replay of create_organization skips the organization's insert but not its
    /// creator's membership: the organization is listed once more per replay.
    fn membership_added_again(&self, call: &Call, a: &mut Answer, t: &str, replayed: bool) {
        if replayed && t == "create_organization" {
            let Some(org) =
                a.result().and_then(|r| r["structuredContent"]["data"]["organization"]["id"].as_str())
            else {
                return;
            };
            let key = (self.user_of8(call), org.to_owned());
            let mut s = state();
            bound(&mut s.extra_memberships, 10_000);
            *s.extra_memberships.entry(key).or_default() += 1;
            return;
        }
        if t != "list_organizations" || !a.is_success() {
            return;
        }
        let user = self.user_of8(call);
        let extra: HashMap<String, usize> = state()
            .extra_memberships
            .iter()
            .filter(|((u, _), _)| *u == user)
            .map(|((_, o), n)| (o.clone(), *n))
            .collect();
        if extra.is_empty() {
            return;
        }
        if let Some(items) = a.items_mut(t) {
            let mut out = Vec::with_capacity(items.len());
            for item in items.drain(..) {
                let n = item["id"].as_str().and_then(|id| extra.get(id)).copied().unwrap_or(0).min(8);
                for _ in 0..n {
                    out.push(item.clone());
                }
                out.push(item);
            }
            *items = out;
        }
    }
}
