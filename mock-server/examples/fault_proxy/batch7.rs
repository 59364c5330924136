//! Batch 7 of the outside faults (`b7-…`), written from docs/CONTRACT.md, its French seed,
//! docs/DECISIONS.md, docs/CONTROL_API.md, the reference server's source and the MCP
//! specification alone, without reading the suite: a third on surfaces other than a first-page
//! tools/call (logging, prompts, resources, the metadata document, message pages reached through a
//! cursor, replays, error answers, a response posted by the client, a list that reads
//! memberships), a third on edges (an id of 0, a fractional limit, an Origin's host suffix, a
//! request_id one character short, a percent-encoded cursor, a retention in the wrong unit, a
//! key's Unicode normalization, an audience suffix, a retry delay rounded down, a body limit
//! checked with >=), a third on wrong data in a right envelope (a foreign restaurant's analytics,
//! a stale status in a list, a role mis-applied on one tool, a failure stored as a result, a wrong
//! category, keys folded to lower case, another tool's cursor, a tool that voids orders,
//! duplicated search hits, a wrong retryable flag).
//! Names are opaque (`b7-NN-<clause>`): the catalogue's description says what each does.
//!
//! One hook in `Proxy::before` and `Proxy::after` hands every fault of this batch here; what the
//! batch remembers between calls is its own (`B7`), bounded, beside the proxy's `Memory`.

use std::sync::LazyLock;

use super::*;

#[derive(Default)]
struct B7 {
    /// restaurant → (status before the last set_restaurant_status, when) (b7-06)
    restaurant_moves: HashMap<String, (String, Instant)>,
    /// keyed slot → (server ms of the stored call, the key it runs under now) (b7-11)
    expiry: HashMap<Slot, (i64, Option<String>)>,
    generation: u64,
    /// keyed slot → (arguments, the failure stored as its result) (b7-12)
    failures: HashMap<Slot, (Map<String, Value>, Value)>,
    /// (auth, tool, key lowercased) → the key as first sent (b7-18)
    folded_keys: HashMap<Slot, String>,
}

static STATE: LazyLock<Mutex<B7>> = LazyLock::new(Mutex::default);

fn state() -> std::sync::MutexGuard<'static, B7> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep a map bounded: past `n` entries it starts again (faults only need recent entries).
fn bound<K, V>(m: &mut HashMap<K, V>, n: usize) {
    if m.len() > n {
        m.clear();
    }
}

impl Fault {
    /// A fault of this batch (`b7-` names): `Proxy::before` and `Proxy::after` hand it here.
    pub(crate) fn in_batch7(self) -> bool {
        CATALOGUE.iter().any(|(f, name, ..)| *f == self && name.starts_with("b7-"))
    }
}

const RESTAURANT_URI: &str = "chataigne://restaurants/";
const METADATA: &str = "/.well-known/oauth-protected-resource";
/// 24 h written as milliseconds where seconds were meant (b7-11).
const RETENTION_AS_MS: i64 = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64;
const MIB: usize = chataigne_contract::MAX_BODY_BYTES;
/// IDEM-1's upper bound, in characters.
const MAX_KEY_CHARS: usize = 255;

fn slot(call: &Call, t: &str) -> Option<Slot> {
    Some((call.auth(), t.to_owned(), call.arg_str("idempotency_key")?))
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

/// The host of an Origin (`scheme://host[:port]`), lowercased.
fn origin_host(origin: &str) -> String {
    let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
    let host = rest.split('/').next().unwrap_or_default();
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    host.to_ascii_lowercase()
}

/// `%XX` sequences decoded (b7-05); anything malformed is kept as written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// Canonical composition of the Latin vowels with a grave, acute, circumflex or diaeresis (the
/// part of NFC a French key needs) (b7-17).
fn compose(base: char, mark: char) -> Option<char> {
    let table: [(char, [char; 4]); 10] = [
        ('a', ['à', 'á', 'â', 'ä']),
        ('e', ['è', 'é', 'ê', 'ë']),
        ('i', ['ì', 'í', 'î', 'ï']),
        ('o', ['ò', 'ó', 'ô', 'ö']),
        ('u', ['ù', 'ú', 'û', 'ü']),
        ('A', ['À', 'Á', 'Â', 'Ä']),
        ('E', ['È', 'É', 'Ê', 'Ë']),
        ('I', ['Ì', 'Í', 'Î', 'Ï']),
        ('O', ['Ò', 'Ó', 'Ô', 'Ö']),
        ('U', ['Ù', 'Ú', 'Û', 'Ü']),
    ];
    let m = match mark {
        '\u{300}' => 0,
        '\u{301}' => 1,
        '\u{302}' => 2,
        '\u{308}' => 3,
        _ => return None,
    };
    table.iter().find(|(b, _)| *b == base).map(|(_, c)| c[m])
}

fn nfc(s: &str) -> String {
    let mut out: Vec<char> = Vec::with_capacity(s.len());
    for c in s.chars() {
        if let Some(last) = out.last_mut()
            && let Some(composed) = compose(*last, c)
        {
            *last = composed;
            continue;
        }
        out.push(c);
    }
    out.into_iter().collect()
}

/// b7-27: a cancellation offered under another verb.
fn void_tool() -> Value {
    let mut d = ToolName::UpdateOrderStatus.descriptor();
    d["name"] = json!("void_order");
    d["title"] = json!("void order");
    d["description"] = json!(
        "Void an order that is not completed yet: the order is closed as cancelled and the customer is \
         refunded."
    );
    d["annotations"] = json!({ "readOnlyHint": false, "destructiveHint": true, "openWorldHint": false });
    d
}

impl Proxy {
    fn persona_of7(&self, call: &Call) -> Option<Persona> {
        self.data.persona(&call.token()).cloned()
    }

    async fn now_ms7(&self) -> i64 {
        match self.server_now_ms().await {
            Some(ms) => ms as i64,
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        }
    }

    /// Request-side rewrites of batch 7 (`Proxy::before`).
    pub(crate) async fn before_batch7(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let m = method.as_deref().unwrap_or_default();
        match self.fault {
            B701Proto1 if m == "logging/setLevel" => {
                // The logging capability is advertised by the SDK's defaults; no handler is routed.
                let error = json!({ "code": -32601, "message": "Method not found: logging/setLevel" });
                return Some(Answer::rpc(call, "error", error));
            }
            B702Proto2 if method.is_some() && call.rpc_id() == json!(0) => {
                // `if (!message.id)`: an id of 0 is taken for a notification.
                return Some(Answer::new(StatusCode::ACCEPTED, HeaderMap::new(), Bytes::new()));
            }
            B705Pag5 => {
                let cursor = call.arg_str("cursor")?;
                let decoded = percent_decode(&cursor);
                if decoded != cursor {
                    // Cursors are percent-decoded first, as if they had come in a query string.
                    call.set_args(|a| {
                        a.insert("cursor".into(), json!(decoded));
                    });
                }
            }
            B708Proto3 if kind(t).is_some() => {
                let fractional =
                    |v: &Value| v.as_f64().filter(|f| !v.is_u64() && !v.is_i64() && f.fract() != 0.0);
                let fix: Vec<(String, i64)> = ["limit", "message_limit"]
                    .iter()
                    .filter_map(|k| Some((k.to_string(), fractional(&call.arg(k)?)?.trunc() as i64)))
                    .collect();
                if !fix.is_empty() {
                    // Integers are read with `as i64` from a float: 20.5 is 20.
                    call.set_args(|a| {
                        for (k, n) in fix {
                            a.insert(k, json!(n));
                        }
                    });
                }
            }
            B710Pag8 if t == "get_conversation" && call.has_arg("cursor") => {
                return self.messages_uncapped(call).await;
            }
            B711Idem6 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let now = self.now_ms7().await;
                let key = {
                    let mut s = state();
                    s.generation += 1;
                    let n = s.generation;
                    let e = s.expiry.get_mut(&slot)?;
                    if now - e.0 >= RETENTION_AS_MS {
                        // The record's time to live was written in milliseconds: it is gone.
                        *e = (now, Some(format!("{}~g{n}", key_head(&slot.2))));
                    }
                    e.1.clone()
                };
                if let Some(k) = key {
                    *call = with_key(call, k);
                }
            }
            B712Idem7 if is_keyed(t) => {
                let slot = slot(call, t)?;
                let stored = state().failures.get(&slot).cloned()?;
                if stored.0 == call.args() {
                    let mut a = Answer::rpc(call, "result", stored.1);
                    a.set_request_id(&new_request_id());
                    return Some(a);
                }
            }
            B714Proto5 => {
                let host = origin_host(&header_str(call, "origin")?);
                if host != "localhost" && host.ends_with("localhost") {
                    // The allow-list is matched with ends_with("localhost").
                    call.headers.remove(header::ORIGIN);
                }
            }
            B717Idem1 if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let composed = nfc(&key);
                if composed != key && key.chars().count() > MAX_KEY_CHARS {
                    // The key is normalized (NFC) before its length is checked, and stored so.
                    *call = with_key(call, composed);
                }
            }
            B718Idem3 if is_keyed(t) => {
                let (auth, tool, key) = slot(call, t)?;
                let first = {
                    let mut s = state();
                    bound(&mut s.folded_keys, 10_000);
                    s.folded_keys
                        .entry((auth, tool, key.to_lowercase()))
                        .or_insert_with(|| key.clone())
                        .clone()
                };
                if first != key {
                    // The key column has a case-insensitive collation.
                    *call = with_key(call, first);
                }
            }
            B720Auth2 => {
                let p = self.persona_of7(call)?;
                if p.audience.as_deref().is_some_and(|a| a.ends_with("/mcp")) {
                    // The audience is checked with ends_with("/mcp").
                    let sibling = self.data.sibling(&p, None)?;
                    let auth = token_header(sibling);
                    call.set_auth(&auth);
                }
            }
            B721Pag6 if list_key(t).is_some() => {
                let cursor = call.arg_str("cursor")?;
                let issued_for = lock(&self.memory).cursors.get(&cursor).map(|i| i.tool.clone())?;
                if issued_for != t {
                    // The cursor's tool is never compared; its position means nothing here: the
                    // list starts again.
                    call.set_args(|a| {
                        a.remove("cursor");
                    });
                }
            }
            B725Proto1
                if call.method == Method::POST
                    && method.is_none()
                    && call
                        .rpc
                        .as_ref()
                        .is_some_and(|r| r.get("result").is_some() || r.get("error").is_some()) =>
            {
                let error = json!({ "code": -32600, "message": "Invalid Request: expected a method" });
                return Some(Answer::rpc(call, "error", error));
            }
            B729Lim7
                if call.method == Method::POST && call.uri.path() == "/mcp" && call.body.len() == MIB =>
            {
                return Some(Answer::plain(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large"));
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of batch 7 (`Proxy::after`).
    pub(crate) async fn after_batch7(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let method = call.rpc_method().map(String::from);
        let m = method.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        let replayed = success && a.flag("replayed");
        match self.fault {
            B703Auth4 if t == "get_analytics" && code == Some(ErrorCode::ResourceForbidden) => {
                // The analytics query reads the reporting table by restaurant, with no membership
                // check: any restaurant that exists is served.
                let Some(owner) = call.arg_str("restaurant_id").and_then(|r| self.owner(&r)) else { return };
                let Some(auth) = self.auth_for_org(&owner) else { return };
                let b = self.forward(&call.as_auth(&auth)).await;
                if b.is_success() {
                    *a = answer_as(call, b);
                }
            }
            B704Auth3 if m == "resources/read" && a.result().is_none() => {
                let Some(uri) = call.rpc.as_ref().and_then(|r| r["params"]["uri"].as_str()) else { return };
                if !uri.starts_with(RESTAURANT_URI) {
                    return;
                }
                let Some(p) = self.persona_of7(call) else { return };
                if p.scopes.iter().any(|s| s == "restaurants:read") {
                    return;
                }
                // The resource handler checks membership, not the token's scopes.
                let Some(sibling) = self.data.sibling(&p, Some("restaurants:read")) else { return };
                let b = self.forward(&call.as_auth(&token_header(sibling))).await;
                if b.result().is_some() {
                    *a = answer_as(call, b);
                }
            }
            B706Pre2 => self.restaurant_list_lags(call, a, t),
            B707Proto2 if m == "prompts/get" && a.rpc_error_code() == Some(-32602) => {
                if let Some(j) = a.json.as_mut() {
                    // The prompt lookup's None is unwrapped into the framework's internal error.
                    j["error"] = json!({ "code": -32603, "message": "internal error" });
                    a.changed = true;
                }
            }
            B709Auth6 if t == "create_instruction" && code == Some(ErrorCode::ResourceForbidden) => {
                let Some(p) = self.persona_of7(call) else { return };
                let Some(rst) = call.arg_str("restaurant_id") else { return };
                let Some(org) = self.owner(&rst) else { return };
                let staff = self.data.membership(&p.user, &org).is_some_and(|ms| {
                    !ms.revoked
                        && ms.role == "staff"
                        && ms.restaurants.as_ref().is_none_or(|r| r.contains(&rst))
                });
                if !staff {
                    return;
                }
                let Some(owner) = self.auth_for_org(&org) else { return };
                let b = self.forward(&call.as_auth(&owner)).await;
                if b.is_success() {
                    *a = answer_as(call, b);
                }
            }
            B711Idem6 if success && !replayed && is_keyed(t) => {
                let Some(slot) = slot(call, t) else { return };
                let now = self.now_ms7().await;
                let mut s = state();
                bound(&mut s.expiry, 10_000);
                s.expiry.entry(slot).or_insert((now, None));
            }
            B712Idem7 if is_keyed(t) && code == Some(ErrorCode::DependencyUnavailable) => {
                let Some(slot) = slot(call, t) else { return };
                let Some(result) = a.result().cloned() else { return };
                let mut s = state();
                bound(&mut s.failures, 10_000);
                // The key's record is written with whatever the handler returned.
                s.failures.entry(slot).or_insert((call.args(), result));
            }
            B713Auth1 if call.method == Method::GET && call.uri.path().starts_with(METADATA) => {
                if let Some(j) = a.json.as_mut()
                    && let Some(r) = j["resource"].as_str().filter(|r| !r.ends_with('/')).map(String::from)
                {
                    // The resource is built as base URL + "/mcp/".
                    j["resource"] = json!(format!("{r}/"));
                    a.changed = true;
                }
            }
            B715Env5 if code == Some(ErrorCode::CursorInvalid) => {
                set_error(a, "category", json!("not_found"));
            }
            B716Env1 if replayed => {
                if let Some(r) = a.result_mut() {
                    // The stored record keeps structuredContent only.
                    r["content"] = json!([]);
                }
            }
            B719Env4 if code.is_some() => {
                if let Some(e) = a.error_mut()
                    && e.get("retryable") == Some(&json!(false))
                {
                    // `skip_serializing_if = "is_false"` on retryable.
                    e.remove("retryable");
                }
            }
            B722Env6 if code == Some(ErrorCode::CursorInvalid) => {
                let head: String = call.arg_str("cursor").unwrap_or_default().chars().take(12).collect();
                append_message(a, &format!(" (cursor {head}…)"));
                let message = a.error_mut().and_then(|e| e.get("message").cloned());
                if let (Some(text), Some(Value::String(msg))) = (a.text_mut(), message) {
                    *text = json!(format!("MCP_CURSOR_INVALID: {msg}"));
                }
            }
            B723Lim2 if code == Some(ErrorCode::RateLimited) => {
                if let Some(e) = a.error_mut()
                    && let Some(ms) = e.get("retry_after_ms").and_then(Value::as_u64)
                {
                    // The delay is kept in whole seconds, rounded down, then written in ms.
                    e.insert("retry_after_ms".into(), json!(ms / 1000 * 1000));
                }
            }
            B724Pag4 if success && t == "search_transcripts" => self.hit_per_occurrence(call, a),
            B726Env2 if code.is_some() => {
                let rid = format!("req_{}", random_alnum(15));
                a.set_request_id(&rid);
            }
            B727Abs1 if m == "tools/list" && a.result().is_some() => {
                if let Some(tools) = a.result_mut().and_then(|r| r["tools"].as_array_mut()) {
                    tools.push(void_tool());
                }
            }
            B728Auth7 if success && t == "list_restaurants" && !call.has_arg("organization_id") => {
                self.revoked_restaurants_listed(call, a).await
            }
            B730Idem4 if code == Some(ErrorCode::OperationInProgress) => {
                set_error(a, "retryable", json!(false));
            }
            _ => {}
        }
    }

    /// b7-06: list_restaurants reads a cache the status write does not invalidate: for 30 s it
    /// shows a restaurant's status before its last set_restaurant_status (get_restaurant is fresh).
    fn restaurant_list_lags(&self, call: &Call, a: &mut Answer, t: &str) {
        if !a.is_success() {
            return;
        }
        if t == "set_restaurant_status" {
            let (Some(id), Some(old)) = (call.arg_str("restaurant_id"), call.arg_str("expected_status"))
            else {
                return;
            };
            let mut s = state();
            s.restaurant_moves.retain(|_, (_, at)| at.elapsed() < Duration::from_secs(30));
            bound(&mut s.restaurant_moves, 10_000);
            let old = s.restaurant_moves.get(&id).map_or(old, |(o, _)| o.clone());
            s.restaurant_moves.insert(id, (old, Instant::now()));
            return;
        }
        if t != "list_restaurants" {
            return;
        }
        let moved: HashMap<String, String> = state()
            .restaurant_moves
            .iter()
            .filter(|(_, (_, at))| at.elapsed() < Duration::from_secs(30))
            .map(|(id, (old, _))| (id.clone(), old.clone()))
            .collect();
        if moved.is_empty() {
            return;
        }
        let status = call.arg_str("status");
        if let Some(items) = a.items_mut(t) {
            for r in items.iter_mut() {
                if let Some(old) = r["id"].as_str().and_then(|id| moved.get(id)) {
                    r["status"] = json!(old);
                }
            }
            if let Some(f) = status {
                items.retain(|r| r["status"] == json!(f));
            }
        }
    }

    /// b7-10: a page of messages reached through a cursor returns every message left (the cap
    /// is applied to the first page only).
    async fn messages_uncapped(&self, call: &Call) -> Option<Answer> {
        let first = self.forward(call).await;
        if !first.is_success() {
            return Some(answer_as(call, first));
        }
        let mut messages = first.items("get_conversation").cloned().unwrap_or_default();
        let mut cursor = first.next_cursor();
        let mut n = 0;
        while let Some(c) = cursor.take() {
            n += 1;
            if n > 50 {
                break;
            }
            let next = self
                .forward(&call.with_args(|a| {
                    a.insert("cursor".into(), json!(c));
                    a.insert("message_limit".into(), json!(100));
                }))
                .await;
            if !next.is_success() {
                break;
            }
            messages.extend(next.items("get_conversation").cloned().unwrap_or_default());
            cursor = next.next_cursor();
        }
        let count = messages.len();
        let mut a = answer_as(call, first);
        if let Some(items) = a.items_mut("get_conversation") {
            *items = messages;
        }
        if let Some(meta) = a.meta_mut() {
            meta.remove("next_cursor");
        }
        if let Some(text) = a.text_mut() {
            *text = json!(format!("{count} messages"));
        }
        Some(a)
    }

    /// b7-24: the page of transcripts is cut first, then joined to the query's occurrences (one
    /// row per occurrence, for its snippet): a transcript that holds it twice is listed twice.
    fn hit_per_occurrence(&self, call: &Call, a: &mut Answer) {
        let Some(query) = call.arg_str("query").map(|q| q.to_lowercase()).filter(|q| !q.is_empty()) else {
            return;
        };
        let occurrences = |id: &str| {
            self.data
                .transcripts
                .get(id)
                .and_then(|t| t["text"].as_str())
                .map_or(1, |text| text.to_lowercase().matches(&query).count())
        };
        let Some(items) = a.items_mut("search_transcripts") else { return };
        let mut out = Vec::with_capacity(items.len());
        for item in items.drain(..) {
            let n = item["id"].as_str().map_or(1, occurrences).clamp(1, 3);
            for _ in 0..n {
                out.push(item.clone());
            }
        }
        *items = out;
    }

    /// b7-28: list_restaurants without organization_id reads the user's memberships without
    /// their revocation flag: a revoked organization's restaurants are listed.
    async fn revoked_restaurants_listed(&self, call: &Call, a: &mut Answer) {
        let Some(p) = self.persona_of7(call) else { return };
        let revoked: Vec<String> = self
            .data
            .memberships
            .iter()
            .filter(|ms| ms.user == p.user && ms.revoked)
            .map(|ms| ms.org.clone())
            .collect();
        let mut extra = Vec::new();
        for org in revoked {
            let Some(owner) = self.auth_for_org(&org) else { continue };
            let probe = tool_call(call, "list_restaurants", json!({ "organization_id": org }));
            let b = self.forward(&probe.as_auth(&owner)).await;
            extra.extend(b.items("list_restaurants").cloned().unwrap_or_default());
        }
        if extra.is_empty() {
            return;
        }
        if let Some(items) = a.items_mut("list_restaurants") {
            for r in extra {
                if !items.iter().any(|x| x["id"] == r["id"]) {
                    items.push(r);
                }
            }
        }
    }
}
