//! Shapes the batches repeat, shared from batch 10 on (batches 4 to 9 keep their own copies):
//! which batch a fault is in, what a rewrite reads of an exchange, a request's params and whether
//! it is a notification, bounded per-key memory, refusals, replays and bodiless answers made by the
//! proxy, the request's headers and keyed slot, a keyed call's stored arguments and result, a
//! success's data, an order's status rewritten, a list walked page by page, and who the caller is.

use super::*;

impl Fault {
    /// Whether the fault's name starts with `prefix` (`b10-`, `b11-`, …): a batch's faults.
    pub(crate) fn named_with(self, prefix: &str) -> bool {
        CATALOGUE.iter().any(|(f, name, ..)| *f == self && name.starts_with(prefix))
    }
}

/// What a batch's rewrite reads of an exchange: the tool called and the JSON-RPC method (empty
/// when there is none) and, of the answer when there is one, its error code, whether it is a
/// success, and whether that success is a replay.
pub(crate) struct Exchange {
    pub(crate) tool: String,
    pub(crate) method: String,
    pub(crate) code: Option<ErrorCode>,
    pub(crate) success: bool,
    pub(crate) replayed: bool,
}

impl Exchange {
    pub(crate) fn of(call: &Call, answer: Option<&Answer>) -> Exchange {
        let success = answer.is_some_and(Answer::is_success);
        Exchange {
            tool: call.tool().unwrap_or_default().to_owned(),
            method: call.rpc_method().unwrap_or_default().to_owned(),
            code: answer.and_then(Answer::code),
            success,
            replayed: success && answer.is_some_and(|a| a.flag("replayed")),
        }
    }
}

/// The JSON-RPC params of a request.
pub(crate) fn params(call: &Call) -> Map<String, Value> {
    call.rpc.as_ref().and_then(|r| r.get("params")).and_then(Value::as_object).cloned().unwrap_or_default()
}

pub(crate) fn set_param(call: &mut Call, key: &str, value: Value) {
    let Some(rpc) = call.rpc.as_mut() else { return };
    if !rpc["params"].is_object() {
        rpc["params"] = json!({});
    }
    rpc["params"][key] = value;
    call.body = Bytes::from(serde_json::to_vec(rpc).unwrap_or_default());
}

pub(crate) fn is_notification(call: &Call) -> bool {
    call.rpc.as_ref().is_some_and(|r| r.get("id").is_none())
        && call.rpc_method().is_some_and(|m| m.starts_with("notifications/"))
}

pub(crate) fn no_body(status: StatusCode) -> Answer {
    Answer::new(status, HeaderMap::new(), Bytes::new())
}

/// Set an order's `status` (a read the proxy rewrites).
pub(crate) fn set_status(order: &mut Value, status: &str) {
    if order.is_object() {
        order["status"] = json!(status);
    }
}

/// Keep a map bounded: past `n` entries it starts again (faults only need recent entries, and
/// every entry is keyed by cursor, caller, key or order, so concurrent clients stay apart).
pub(crate) fn bound<K, V>(m: &mut HashMap<K, V>, n: usize) {
    if m.len() > n {
        m.clear();
    }
}

/// How many entries a batch's map keeps before it starts again.
pub(crate) const RECENT: usize = 10_000;

/// A tool error made by the proxy, with a fresh request_id.
pub(crate) fn refusal(call: &Call, code: ErrorCode) -> Answer {
    Answer::rpc(call, "result", error_result(code, &new_request_id()))
}

/// A stored result given back as a replay: `replayed: true`, a new request_id.
pub(crate) fn replay(call: &Call, result: &Value) -> Answer {
    let mut a = Answer::rpc(call, "result", result.clone());
    a.set_request_id(&new_request_id());
    if let Some(meta) = a.meta_mut() {
        meta.insert("replayed".into(), json!(true));
    }
    a
}

/// Where a keyed call's result is kept: (auth, tool, key).
pub(crate) fn slot(call: &Call, tool: &str) -> Option<Slot> {
    Some((call.auth(), tool.to_owned(), call.arg_str("idempotency_key")?))
}

/// Another key made from `key` (its first 240 characters and 8 random ones): what a server that
/// lost track of a key runs the call under, so that the reference runs it again.
pub(crate) fn derived_key(key: &str) -> String {
    let head: String = key.chars().take(240).collect();
    format!("{head}-{}", random_alnum(8))
}

pub(crate) fn header_str(call: &Call, name: &str) -> Option<String> {
    call.headers.get(name).and_then(|v| v.to_str().ok()).map(String::from)
}

/// The protocol revision the request names (`MCP-Protocol-Version`).
pub(crate) fn revision(call: &Call) -> Option<String> {
    header_str(call, "mcp-protocol-version")
}

pub(crate) fn is_endpoint(call: &Call) -> bool {
    call.uri.path() == "/mcp"
}

/// The step of an order status in the lifecycle (`None` for cancelled, rejected, unknown).
pub(crate) fn lifecycle_step(status: &str) -> Option<usize> {
    chataigne_contract::tools::ORDER_LIFECYCLE.iter().position(|s| *s == status)
}

/// A success's `data`, when the answer is one.
pub(crate) fn data_of(a: &Answer) -> Option<&Value> {
    a.result().filter(|r| is_success(r))?.get("structuredContent")?.get("data")
}

impl Proxy {
    /// The persona whose token the call carries.
    pub(crate) fn caller(&self, call: &Call) -> Option<Persona> {
        self.data.persona(&call.token()).cloned()
    }

    /// The arguments and the result of the keyed call remembered in `slot`, if any.
    pub(crate) fn stored(&self, slot: &Slot) -> Option<(Map<String, Value>, Value)> {
        let m = lock(&self.memory);
        let k = m.keyed.get(slot)?;
        Some((k.args.clone(), k.result.clone()))
    }

    /// The server's clock in ms (the control API's when it can be read, else this machine's).
    pub(crate) async fn clock_ms(&self) -> i64 {
        match self.server_now_ms().await {
            Some(ms) => ms as i64,
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        }
    }

    /// Walk the list `call` asks for from `cursor` (its first page when `None`), at most
    /// `pages` pages: the items seen, and whether the walk reached the list's end. `None` when a
    /// page is refused.
    pub(crate) async fn walk(
        &self,
        call: &Call,
        tool: &str,
        mut cursor: Option<String>,
        pages: usize,
    ) -> Option<(Vec<Value>, bool)> {
        let mut seen = Vec::new();
        for _ in 0..pages {
            let probe = call.with_args(|x| {
                match &cursor {
                    Some(c) => x.insert("cursor".into(), json!(c)),
                    None => x.remove("cursor"),
                };
            });
            let b = self.forward(&probe).await;
            seen.extend(b.items(tool)?.iter().cloned());
            cursor = b.next_cursor();
            if cursor.is_none() {
                return Some((seen, true));
            }
        }
        Some((seen, false))
    }

    /// `call` as the owner of `org` (who has access): what a server that skipped a check runs.
    pub(crate) fn as_owner_of(&self, call: &Call, org: &str) -> Option<Call> {
        Some(call.as_auth(&self.auth_for_org(org)?))
    }
}
