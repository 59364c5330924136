//! Requests and answers as the proxy sees them, and the helpers that read and build tool
//! results.

use super::*;

pub(crate) const LISTS: [(&str, &str); 6] = [
    ("list_organizations", "organizations"),
    ("list_restaurants", "restaurants"),
    ("list_orders", "orders"),
    ("list_conversations", "conversations"),
    ("search_transcripts", "transcripts"),
    ("list_instructions", "instructions"),
];

pub(crate) fn list_key(tool: &str) -> Option<&'static str> {
    LISTS.iter().find(|(t, _)| *t == tool).map(|(_, k)| *k)
}

/// The list in a success's data: a list tool's items, or get_conversation's messages.
pub(crate) fn items_key(tool: &str) -> Option<&'static str> {
    list_key(tool).or((tool == "get_conversation").then_some("messages"))
}

pub(crate) fn kind(tool: &str) -> Option<Kind> {
    ToolName::parse(tool).map(ToolName::kind)
}

pub(crate) fn is_keyed(tool: &str) -> bool {
    kind(tool) == Some(Kind::KeyedWrite)
}

pub(crate) fn random_alnum(n: usize) -> String {
    rand::rng().sample_iter(&rand::distr::Alphanumeric).take(n).map(char::from).collect()
}

pub(crate) fn new_request_id() -> String {
    format!("req_{}", random_alnum(20))
}

#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// The JSON-RPC request, when the body is one object.
    pub(crate) rpc: Option<Value>,
}

impl Call {
    pub(crate) fn rpc_method(&self) -> Option<&str> {
        self.rpc.as_ref()?.get("method")?.as_str()
    }

    pub(crate) fn tool(&self) -> Option<&str> {
        if self.rpc_method() != Some("tools/call") {
            return None;
        }
        self.rpc.as_ref()?.get("params")?.get("name")?.as_str()
    }

    pub(crate) fn args(&self) -> Map<String, Value> {
        let args = self.rpc.as_ref().and_then(|r| r.get("params")).and_then(|p| p.get("arguments"));
        args.and_then(Value::as_object).cloned().unwrap_or_default()
    }

    pub(crate) fn arg(&self, key: &str) -> Option<Value> {
        self.args().get(key).cloned()
    }

    pub(crate) fn arg_str(&self, key: &str) -> Option<String> {
        self.arg(key).and_then(|v| v.as_str().map(String::from))
    }

    pub(crate) fn has_arg(&self, key: &str) -> bool {
        self.args().contains_key(key)
    }

    pub(crate) fn set_args(&mut self, f: impl FnOnce(&mut Map<String, Value>)) {
        let Some(rpc) = self.rpc.as_mut() else { return };
        let params = &mut rpc["params"];
        if !params["arguments"].is_object() {
            params["arguments"] = json!({});
        }
        if let Some(args) = params["arguments"].as_object_mut() {
            f(args);
        }
        self.body = Bytes::from(serde_json::to_vec(rpc).unwrap_or_default());
    }

    pub(crate) fn with_args(&self, f: impl FnOnce(&mut Map<String, Value>)) -> Call {
        let mut c = self.clone();
        c.set_args(f);
        c
    }

    pub(crate) fn auth(&self) -> String {
        self.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    }

    pub(crate) fn token(&self) -> String {
        let auth = self.auth();
        auth.strip_prefix("Bearer ").unwrap_or_default().to_owned()
    }

    pub(crate) fn set_auth(&mut self, auth: &str) {
        if let Ok(v) = HeaderValue::from_str(auth) {
            self.headers.insert(header::AUTHORIZATION, v);
        }
    }

    pub(crate) fn as_auth(&self, auth: &str) -> Call {
        let mut c = self.clone();
        c.set_auth(auth);
        c
    }

    pub(crate) fn rpc_id(&self) -> Value {
        self.rpc.as_ref().and_then(|r| r.get("id")).cloned().unwrap_or(Value::Null)
    }

    /// The arguments that choose a walk: everything but the cursor and the page size.
    pub(crate) fn filters(&self) -> Map<String, Value> {
        let mut args = self.args();
        for k in ["cursor", "limit", "message_limit"] {
            args.remove(k);
        }
        args
    }

    pub(crate) fn page_limit(&self) -> Option<Value> {
        self.arg("limit").or_else(|| self.arg("message_limit"))
    }
}

pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) json: Option<Value>,
    pub(crate) changed: bool,
}

impl Answer {
    pub(crate) fn new(status: StatusCode, headers: HeaderMap, body: Bytes) -> Answer {
        let is_json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains("json"));
        let json = if is_json { serde_json::from_slice(&body).ok() } else { None };
        Answer { status, headers, body, json, changed: false }
    }

    pub(crate) fn plain(status: StatusCode, text: &str) -> Answer {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        Answer::new(status, headers, Bytes::from(text.to_owned()))
    }

    /// A JSON-RPC answer to `call` made by the proxy.
    pub(crate) fn rpc(call: &Call, member: &str, value: Value) -> Answer {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut a = Answer::new(StatusCode::OK, headers, Bytes::new());
        a.json = Some(json!({ "jsonrpc": "2.0", "id": call.rpc_id(), member: value }));
        a.changed = true;
        if let Some(rid) = a.result().and_then(request_id) {
            a.set_header_id(&rid);
        }
        a
    }

    pub(crate) fn result(&self) -> Option<&Value> {
        self.json.as_ref()?.get("result")
    }

    pub(crate) fn result_mut(&mut self) -> Option<&mut Value> {
        self.changed = true;
        self.json.as_mut()?.get_mut("result")
    }

    pub(crate) fn rpc_error_code(&self) -> Option<i64> {
        self.json.as_ref()?.get("error")?.get("code")?.as_i64()
    }

    pub(crate) fn code(&self) -> Option<ErrorCode> {
        self.result().and_then(error_code)
    }

    pub(crate) fn is_success(&self) -> bool {
        self.result().is_some_and(is_success)
    }

    pub(crate) fn items(&self, tool: &str) -> Option<&Vec<Value>> {
        self.result()?.get("structuredContent")?.get("data")?.get(items_key(tool)?)?.as_array()
    }

    pub(crate) fn items_mut(&mut self, tool: &str) -> Option<&mut Vec<Value>> {
        let key = items_key(tool)?;
        self.result_mut()?.get_mut("structuredContent")?.get_mut("data")?.get_mut(key)?.as_array_mut()
    }

    pub(crate) fn meta_mut(&mut self) -> Option<&mut Map<String, Value>> {
        self.result_mut()?.get_mut("structuredContent")?.get_mut("meta")?.as_object_mut()
    }

    pub(crate) fn next_cursor(&self) -> Option<String> {
        let meta = self.result()?.get("structuredContent")?.get("meta")?;
        meta.get("next_cursor")?.as_str().map(String::from)
    }

    pub(crate) fn flag(&self, name: &str) -> bool {
        let meta = self.result().and_then(|r| r.get("structuredContent")).and_then(|s| s.get("meta"));
        meta.and_then(|m| m.get(name)).and_then(Value::as_bool).unwrap_or(false)
    }

    pub(crate) fn error_mut(&mut self) -> Option<&mut Map<String, Value>> {
        let r = self.result_mut()?;
        r.get_mut("structuredContent")?.get_mut("data")?.get_mut("error")?.as_object_mut()
    }

    pub(crate) fn set_header_id(&mut self, rid: &str) {
        if let Ok(v) = HeaderValue::from_str(rid) {
            self.headers.insert("x-request-id", v);
        }
    }

    /// Give the answer another request_id everywhere it appears (envelope, text, header).
    pub(crate) fn set_request_id(&mut self, rid: &str) {
        let old = self.result().and_then(request_id);
        if let Some(result) = self.result_mut() {
            let sc = &mut result["structuredContent"];
            if sc["meta"].is_object() {
                sc["meta"]["request_id"] = json!(rid);
            }
            if sc["data"]["error"].is_object() {
                sc["data"]["error"]["request_id"] = json!(rid);
            }
            if let (Some(old), Some(blocks)) = (old, result["content"].as_array_mut()) {
                for b in blocks {
                    if let Some(t) = b["text"].as_str() {
                        b["text"] = json!(t.replace(&old, rid));
                    }
                }
            }
        }
        self.set_header_id(rid);
    }

    /// Turn an error into another code, with that code's category, retryable flag and message.
    pub(crate) fn recode(&mut self, code: ErrorCode) {
        let rid = self.result().and_then(request_id).unwrap_or_else(new_request_id);
        if let Some(result) = self.result_mut() {
            *result = error_result(code, &rid);
        }
    }

    pub(crate) fn text_mut(&mut self) -> Option<&mut Value> {
        self.result_mut()?.get_mut("content")?.get_mut(0)?.get_mut("text")
    }

    pub(crate) fn into_response(self) -> Response {
        let body = match (&self.json, self.changed) {
            (Some(v), true) => Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
            _ => self.body,
        };
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = self.status;
        for (name, value) in &self.headers {
            if !hop_by_hop(name.as_str()) && name != header::CONTENT_LENGTH {
                response.headers_mut().append(name, value.clone());
            }
        }
        response
    }
}

pub(crate) fn hop_by_hop(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "connection" | "keep-alive" | "transfer-encoding" | "te" | "trailer" | "upgrade" | "proxy-connection"
    )
}

pub(crate) fn request_id(result: &Value) -> Option<String> {
    let meta = result.get("structuredContent")?.get("meta")?;
    meta.get("request_id")?.as_str().map(String::from)
}

pub(crate) fn error_code(result: &Value) -> Option<ErrorCode> {
    let code = result.get("structuredContent")?.get("data")?.get("error")?.get("code")?;
    ErrorCode::parse(code.as_str()?)
}

pub(crate) fn is_success(result: &Value) -> bool {
    result.get("isError") != Some(&json!(true))
        && result
            .get("structuredContent")
            .and_then(|s| s.get("data"))
            .is_some_and(|d| d.get("error").is_none())
}

/// A tool result for `code`, built the way the reference builds one.
pub(crate) fn error_result(code: ErrorCode, rid: &str) -> Value {
    let mut body = ErrorBody::new(code, rid);
    if matches!(code, ErrorCode::RateLimited | ErrorCode::OperationInProgress) {
        body.retry_after_ms = Some(1000);
    }
    let text = format!("{}: {} (request_id {rid})", code.as_str(), body.message);
    json!({ "content": [{ "type": "text", "text": text }], "structuredContent": chataigne_contract::envelope::error(&body), "isError": true })
}

pub(crate) fn success_result(data: Value, meta: Map<String, Value>, summary: &str) -> Value {
    json!({
        "content": [{ "type": "text", "text": summary }],
        "structuredContent": { "data": data, "meta": meta },
        "isError": false,
    })
}

pub(crate) fn fresh_meta() -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("request_id".into(), json!(new_request_id()));
    meta.insert("truncated".into(), json!(false));
    meta.insert("replayed".into(), json!(false));
    meta
}

/// The text of `params.arguments` as sent (key order kept, unlike a parsed map).
pub(crate) fn raw_arguments(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Outer<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_slice::<Outer>(body)
        .ok()
        .and_then(|o| o.params)
        .and_then(|p| p.arguments)
        .map(|r| r.get().to_owned())
        .unwrap_or_default()
}

/// A tools/call of `tool` with `args`, sent with `call`'s headers.
pub(crate) fn tool_call(call: &Call, tool: &str, args: Value) -> Call {
    let mut c = call.clone();
    let rpc = json!({ "jsonrpc": "2.0", "id": format!("fault-{}", random_alnum(8)), "method": "tools/call",
        "params": { "name": tool, "arguments": args } });
    c.body = Bytes::from(serde_json::to_vec(&rpc).unwrap_or_default());
    c.rpc = Some(rpc);
    c
}

/// An answer made upstream for another JSON-RPC id, given back as the answer to `call`.
pub(crate) fn answer_as(call: &Call, mut a: Answer) -> Answer {
    if let Some(j) = a.json.as_mut() {
        j["id"] = call.rpc_id();
        a.changed = true;
    }
    a
}

pub(crate) fn walk_mut(v: &mut Value, f: &mut impl FnMut(&str, &mut Value)) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                f(k, x);
                walk_mut(x, f);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| walk_mut(x, f)),
        _ => {}
    }
}

pub(crate) const STRING_ARG_CAP: usize = 200;

pub(crate) fn set_error(a: &mut Answer, field: &str, value: Value) {
    if let Some(e) = a.error_mut() {
        e.insert(field.into(), value);
    }
}

pub(crate) fn remove_error(a: &mut Answer, field: &str) {
    if let Some(e) = a.error_mut() {
        e.remove(field);
    }
}

pub(crate) fn append_message(a: &mut Answer, tail: &str) {
    if let Some(e) = a.error_mut() {
        let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
        let message = format!("{message}{tail}");
        e.insert("message".into(), json!(message));
    }
}

pub(crate) fn hex(n: usize) -> String {
    let mut rng = rand::rng();
    (0..n).map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0')).collect()
}
