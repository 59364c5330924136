//! A small JSON-RPC client over reqwest that keeps what rmcp hides: raw HTTP status codes,
//! headers and bodies, so scenarios can check the transport as well as the answer. The same
//! client speaks the stdio transport ([`crate::stdio`]); its exchanges then have no HTTP status
//! nor headers (`status: None`).
//!
//! Every call gives back an [`Exchange`] (never an `Err` for what the server answered): the
//! request as sent (token redacted) and the response, or why there was none.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::stdio::StdioConnection;
pub use crate::text::{compact, cut};

/// The protocol version the suite asks for by default (PROTO-1).
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Largest response body the suite reads: bigger than any conforming answer.
const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// How much of a body a failure message shows.
pub const SHOWN_BYTES: usize = 2048;

/// How a logged call's answer counts before a rate burst (`rules::earlier_answer`).
pub type Classify = fn(&Exchange) -> crate::rate_verdict::Earlier;

/// One persona's connection to the endpoint.
#[derive(Debug, Clone)]
pub struct McpClient {
    link: Link,
    /// The endpoint, or `stdio: <command>`.
    endpoint: String,
    /// A deployment's URLs (the endpoint first), each request to the next in turn; empty: the
    /// endpoint alone (`Profile::route`).
    route: Arc<[String]>,
    /// Requests sent over HTTP so far: which URL of `route` is next.
    sent: usize,
    token: Option<String>,
    pub persona: Option<String>,
    pub session_id: Option<String>,
    pub protocol_version: Option<String>,
    next_id: u64,
    timeout: Duration,
    /// Where its `tools/call`s are logged for the rate bursts (`schedule::CallLog`), and how an
    /// answer is read there (a rule of a layer above this one: `rules::earlier_answer`).
    log: Option<(Arc<crate::schedule::CallLog>, Classify)>,
}

/// How a client reaches the server.
#[derive(Debug, Clone)]
enum Link {
    Http(reqwest::Client),
    /// The persona's server process (its token is in the process's environment).
    Stdio(Arc<StdioConnection>),
    /// The process could not be started: every call says why.
    Broken(String),
}

/// Shorter values are ordinary words a fixed message may hold by chance ("open", "web").
const ECHO_MIN_BYTES: usize = 8;

/// The string values in `arguments` of [`ECHO_MIN_BYTES`] or more, at any depth, that are what
/// the caller chose: a value of an `enum` in the contract's input schemas (`rejected`,
/// `revenue_cents`, …) is the tool's vocabulary, which a fixed message may name without echoing
/// anything (ENV-6 looks for what was sent, not for words).
pub fn sent_strings(arguments: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s)
                if s.len() >= ECHO_MIN_BYTES && !out.contains(s) && !vocabulary().contains(s) =>
            {
                out.push(s.clone())
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(arguments, &mut out);
    out
}

/// Every `enum` member of every tool's input schema in the contract.
fn vocabulary() -> &'static std::collections::HashSet<String> {
    static WORDS: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        fn walk(v: &Value, out: &mut std::collections::HashSet<String>) {
            match v {
                Value::Object(map) => {
                    if let Some(Value::Array(members)) = map.get("enum") {
                        out.extend(members.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                    map.values().for_each(|i| walk(i, out));
                }
                Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
                _ => {}
            }
        }
        let mut out = std::collections::HashSet::new();
        for tool in chataigne_contract::ToolName::ALL {
            walk(&tool.input_schema(), &mut out);
        }
        out
    })
}

/// One round trip (an HTTP POST, or one message over stdio).
#[derive(Debug, Clone)]
pub struct Exchange {
    pub persona: Option<String>,
    /// The JSON-RPC method, or `raw` for a body sent as is.
    pub method: String,
    pub tool: Option<String>,
    pub url: String,
    /// Sent headers, with secrets already redacted.
    pub request_headers: Vec<(String, String)>,
    /// The body as sent, cut to a displayable size.
    pub request_body: String,
    pub request_bytes: usize,
    pub rpc_id: Option<u64>,
    pub outcome: Result<HttpResponse, String>,
    pub elapsed: Duration,
    /// Sent over the stdio transport: no HTTP status, no headers.
    pub stdio: bool,
    /// The string argument values of a tool call long enough to be told apart from ordinary
    /// words (IDs, keys, texts, queries): an error must echo none of them (ENV-6).
    pub sent_strings: Vec<String>,
}

/// The answer. Over stdio, `status` is `None`, `headers` and `content_type` are empty, and
/// `body` is the answering message's line.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: Option<u16>,
    pub headers: Vec<(String, String)>,
    pub content_type: String,
    /// The body as received; once `message` is parsed from it, only its first
    /// [`SHOWN_BYTES`] are kept (the message holds the rest), so a scenario's history does not
    /// hold every large answer twice.
    pub body: String,
    /// The body's size as received.
    pub body_bytes: usize,
    /// The JSON-RPC response that answers this request, from a JSON body or an SSE stream.
    pub message: Option<Value>,
    /// Why `message` is missing, when a message was expected.
    pub problem: Option<String>,
    /// The event stream's other messages (notifications, server requests) in the order they
    /// came, at most [`MAX_OTHER_MESSAGES`]: they reach the client as much as the answer does,
    /// so SEC-2 reads them too.
    pub others: Vec<Value>,
}

/// How many of an event stream's messages besides the answer an exchange keeps.
pub const MAX_OTHER_MESSAGES: usize = 32;

impl McpClient {
    pub fn new(
        http: reqwest::Client,
        endpoint: &str,
        token: Option<String>,
        persona: Option<String>,
        timeout: Duration,
    ) -> McpClient {
        McpClient {
            link: Link::Http(http),
            endpoint: endpoint.to_owned(),
            route: Arc::from([]),
            sent: 0,
            token,
            persona,
            session_id: None,
            protocol_version: None,
            next_id: 0,
            timeout,
            log: None,
        }
    }

    /// A client over the stdio transport: `conn` is the server process started with the
    /// persona's token, or why it could not be started.
    pub fn stdio(
        conn: Result<Arc<StdioConnection>, String>,
        label: &str,
        persona: Option<String>,
        timeout: Duration,
    ) -> McpClient {
        McpClient {
            link: match conn {
                Ok(conn) => Link::Stdio(conn),
                Err(e) => Link::Broken(e),
            },
            endpoint: label.to_owned(),
            route: Arc::from([]),
            sent: 0,
            token: None,
            persona,
            session_id: None,
            protocol_version: None,
            next_id: 0,
            timeout,
            log: None,
        }
    }

    /// Send the requests to `route`'s URLs in turn (a deployment's endpoint and replicas).
    pub fn with_route(mut self, route: Arc<[String]>) -> McpClient {
        if route.len() > 1 {
            self.route = route;
        }
        self
    }

    /// The route taken again from its start (the endpoint).
    pub fn restart_route(mut self) -> McpClient {
        self.sent = 0;
        self
    }

    /// The URL of the next request: the endpoint, or the next of the route's in turn.
    pub(crate) fn next_url(&mut self) -> String {
        if self.route.is_empty() {
            return self.endpoint.clone();
        }
        let url = self.route[self.sent % self.route.len()].clone();
        self.sent += 1;
        url
    }

    /// Log the client's `tools/call`s in `log`, each answer read by `classify`.
    pub fn with_log(mut self, log: Arc<crate::schedule::CallLog>, classify: Classify) -> McpClient {
        self.log = Some((log, classify));
        self
    }

    pub fn is_stdio(&self) -> bool {
        !matches!(self.link, Link::Http(_))
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `initialize` then `notifications/initialized`; keeps the session id and version.
    /// The returned exchange is the `initialize` one.
    pub async fn initialize(&mut self) -> Exchange {
        self.initialize_with(PROTOCOL_VERSION, &[]).await
    }

    pub async fn initialize_with(&mut self, version: &str, extra: &[(String, String)]) -> Exchange {
        self.session_id = None;
        self.protocol_version = None;
        let params = json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "chataigne-conformance", "version": env!("CARGO_PKG_VERSION") },
        });
        let ex = self.request_with("initialize", params, extra).await;
        if let Ok(resp) = &ex.outcome
            && let Some(result) = resp.message.as_ref().and_then(|m| m.get("result"))
        {
            self.session_id = resp.header("mcp-session-id").map(str::to_owned);
            self.protocol_version = result.get("protocolVersion").and_then(Value::as_str).map(str::to_owned);
            // A notification has no answer to wait for; its status is not part of any clause.
            let _ = self.notify("notifications/initialized", json!({})).await;
        }
        ex
    }

    pub fn is_initialized(&self) -> bool {
        self.protocol_version.is_some()
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Exchange {
        self.request_with(method, params, &[]).await
    }

    pub async fn request_with(
        &mut self,
        method: &str,
        params: Value,
        extra: &[(String, String)],
    ) -> Exchange {
        let id = self.take_id();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let tool = (method == "tools/call").then(|| params_tool(&body)).flatten();
        let mut ex = self.post(method, serde_json::to_vec(&body).unwrap_or_default(), Some(id), extra).await;
        ex.tool = tool;
        ex
    }

    pub async fn notify(&mut self, method: &str, params: Value) -> Exchange {
        let body = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        self.post(method, serde_json::to_vec(&body).unwrap_or_default(), None, &[]).await
    }

    pub async fn call_tool(&mut self, tool: &str, arguments: Value) -> Exchange {
        let sent = sent_strings(&arguments);
        let mut ex = self.request("tools/call", json!({ "name": tool, "arguments": arguments })).await;
        ex.sent_strings = sent;
        ex
    }

    /// A body sent as is (bad JSON, invalid objects, oversized bodies). `rpc_id` is the id the
    /// answer should carry, if any.
    pub async fn post_raw(
        &mut self,
        body: Vec<u8>,
        rpc_id: Option<u64>,
        extra: &[(String, String)],
    ) -> Exchange {
        self.post("raw", body, rpc_id, extra).await
    }

    /// A body sent chunked, with no Content-Length (LIM-7: a server learns its size only by
    /// reading it). Over stdio there is no framing to vary: sent as any raw body.
    pub async fn post_raw_chunked(&mut self, body: Vec<u8>, rpc_id: Option<u64>) -> Exchange {
        self.post_framed("raw", body, rpc_id, &[], true).await
    }

    /// A request of the stateless revision 2026-07-28: no session, the version and the client's
    /// capabilities in `params._meta`, and the headers that mirror the body (`MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name` for a named target) — each replaced or removed (empty value) by
    /// `overrides`, to see the server notice.
    pub async fn request_2026(
        &mut self,
        method: &str,
        mut params: Value,
        overrides: &[(&str, &str)],
    ) -> Exchange {
        const VERSION: &str = "2026-07-28";
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let mut headers =
            vec![("mcp-protocol-version", VERSION.to_owned()), ("mcp-method", method.to_owned())];
        // What `Mcp-Name` mirrors: a tool's or prompt's name, a resource's URI.
        let named = if method.starts_with("resources/") { "uri" } else { "name" };
        if let Some(name) = params.get(named).and_then(Value::as_str) {
            headers.push(("mcp-name", name.to_owned()));
        }
        for (name, value) in overrides {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            if !value.is_empty() {
                headers.push((name, (*value).to_owned()));
            }
        }
        let extra: Vec<(String, String)> = headers.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
        let id = self.take_id();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let mut ex = self.post(method, serde_json::to_vec(&body).unwrap_or_default(), Some(id), &extra).await;
        ex.tool = (method == "tools/call").then(|| params_tool(&body)).flatten();
        ex
    }

    /// `n` copies on the same session, for calls side by side: each draws its request ids from
    /// a range of its own (a session's ids must not repeat; over stdio they come from the process
    /// already), and this client's next ids come after every copy's.
    pub fn fork(&mut self, n: usize) -> Vec<McpClient> {
        const RANGE: u64 = 1 << 20;
        let copies =
            (1..=n as u64).map(|k| McpClient { next_id: self.next_id + k * RANGE, ..self.clone() }).collect();
        self.next_id += (n as u64 + 1) * RANGE;
        copies
    }

    /// The next JSON-RPC id, for raw bodies that want an answer.
    pub fn take_id(&mut self) -> u64 {
        // Sessions of a persona share its process over stdio: ids must not collide there.
        if let Link::Stdio(conn) = &self.link {
            return conn.next_id();
        }
        self.next_id += 1;
        self.next_id
    }

    async fn post(
        &mut self,
        method: &str,
        body: Vec<u8>,
        rpc_id: Option<u64>,
        extra: &[(String, String)],
    ) -> Exchange {
        self.post_framed(method, body, rpc_id, extra, false).await
    }

    async fn post_framed(
        &mut self,
        method: &str,
        body: Vec<u8>,
        rpc_id: Option<u64>,
        extra: &[(String, String)],
        chunked: bool,
    ) -> Exchange {
        let changed = if self.log.is_some() { changed_records(method, &body) } else { Vec::new() };
        if let Some((log, _)) = &self.log {
            for (id, _) in &changed {
                log.touch(id);
            }
        }
        let logged =
            self.log.as_ref().filter(|_| self.persona.is_some()).map(|_| called_tools(method, &body));
        let sent = Instant::now();
        let ex = self.send(method, body, rpc_id, extra, chunked).await;
        if let Some((log, _)) = &self.log {
            // A batch's answers are not told apart here: its writes' effects are unknown.
            let outcome =
                if changed.len() == 1 { write_outcome(&ex) } else { crate::schedule::WriteOutcome::Unknown };
            for (id, target) in changed.into_iter().filter_map(|(id, t)| Some((id, t?))) {
                let answered = Instant::now();
                log.wrote(crate::schedule::WriteSeen { id, target, sent, answered, outcome });
            }
        }
        if let (Some((log, classify)), Some(persona), Some(tools)) = (&self.log, &self.persona, logged) {
            // Another token in the headers: the call may count against another pair, or none.
            let other_token = extra.iter().any(|(n, _)| n.eq_ignore_ascii_case("authorization"));
            let answer = if other_token || tools.len() != 1 {
                crate::rate_verdict::Earlier::Unknown
            } else {
                classify(&ex)
            };
            for tool in tools {
                let call = crate::schedule::Logged { sent, answered: Instant::now(), answer };
                log.record(persona, &tool, call);
            }
        }
        ex
    }

    async fn send(
        &mut self,
        method: &str,
        body: Vec<u8>,
        rpc_id: Option<u64>,
        extra: &[(String, String)],
        chunked: bool,
    ) -> Exchange {
        let http = match &self.link {
            Link::Http(http) => http.clone(),
            Link::Stdio(_) | Link::Broken(_) => return self.send_stdio(method, body, rpc_id).await,
        };
        let (headers, shown) = self.headers("application/json, text/event-stream", extra);
        let request_bytes = body.len();
        let request_body = cut(&String::from_utf8_lossy(&body), SHOWN_BYTES);
        let started = Instant::now();
        let url = self.next_url();
        let request = http.post(&url).headers(headers);
        let send = if chunked {
            // A stream of unknown length: reqwest sends it chunked, with no Content-Length.
            let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
                body.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
            request.body(reqwest::Body::wrap_stream(futures::stream::iter(pieces))).send()
        } else {
            request.body(body).send()
        };
        // No answer in time is no answer; an answer begun but not finished in time is one the
        // server broke (an event never ended): read as such, with what came.
        let deadline = tokio::time::Instant::now() + self.timeout;
        let outcome = match tokio::time::timeout_at(deadline, send).await {
            Ok(Ok(resp)) => read_response_by(resp, rpc_id, Some(deadline)).await,
            Ok(Err(e)) => Err(describe_reqwest(&e)),
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        };
        Exchange {
            persona: self.persona.clone(),
            method: method.to_owned(),
            tool: None,
            url,
            request_headers: shown,
            request_body,
            request_bytes,
            rpc_id,
            outcome,
            elapsed: started.elapsed(),
            stdio: false,
            sent_strings: Vec::new(),
        }
    }

    /// The headers of a request to the endpoint, and how a report shows them (token redacted).
    fn headers(&self, accept: &str, extra: &[(String, String)]) -> (HeaderMap, Vec<(String, String)>) {
        let mut headers = HeaderMap::new();
        let mut shown = Vec::new();
        let mut put = |name: &str, value: &str, shown_value: &str| {
            if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
                headers.insert(n, v);
                shown.push((name.to_owned(), shown_value.to_owned()));
            }
        };
        put("content-type", "application/json", "application/json");
        put("accept", accept, accept);
        if let Some(token) = &self.token {
            put("authorization", &format!("Bearer {token}"), "Bearer ***");
        }
        if let Some(session) = &self.session_id {
            put("mcp-session-id", session, session);
        }
        if let Some(version) = &self.protocol_version {
            put("mcp-protocol-version", version, version);
        }
        for (name, value) in extra {
            let secret = name.eq_ignore_ascii_case("authorization");
            put(name, value, if secret { "***" } else { value });
        }
        (headers, shown)
    }

    /// A GET (the server's own event stream) or DELETE (the end of the session) on the endpoint,
    /// with the session's headers. Status and headers are kept; an event stream that opens is
    /// dropped at once (it may stay open for as long as the session lives), any other body read.
    pub async fn send_http(&mut self, method: reqwest::Method) -> Exchange {
        self.send_http_with(method, &[]).await
    }

    /// [`Self::send_http`] with `extra` headers (an `Origin`, say).
    pub async fn send_http_with(&mut self, method: reqwest::Method, extra: &[(String, String)]) -> Exchange {
        let label = method.as_str().to_owned();
        let Link::Http(http) = &self.link else {
            return Exchange::without_answer(self, &label, "Streamable HTTP only");
        };
        let http = http.clone();
        let (headers, shown) = self.headers("text/event-stream", extra);
        let started = Instant::now();
        let url = self.next_url();
        let send = http.request(method, &url).headers(headers).send();
        let outcome = match tokio::time::timeout(self.timeout, async {
            let resp = send.await.map_err(|e| describe_reqwest(&e))?;
            let event_stream = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
            if event_stream {
                let mut answer = read_head(&resp);
                answer.problem = Some("an event stream, not read".to_owned());
                Ok(answer)
            } else {
                read_response(resp, None).await
            }
        })
        .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        };
        let mut ex = Exchange::without_answer(self, &label, "");
        ex.url = url;
        ex.request_headers = shown;
        ex.outcome = outcome;
        ex.elapsed = started.elapsed();
        ex
    }

    /// A plain GET of a document at `url` (the protected resource metadata), no token sent: the
    /// answer's body read as the other answers' are (bounded), a JSON one parsed as `message`.
    /// The caller checks that `url` is on the endpoint's origin first.
    pub async fn get_document(&mut self, url: &str) -> Exchange {
        let Link::Http(http) = &self.link else {
            return Exchange::without_answer(self, "GET", "Streamable HTTP only");
        };
        let started = Instant::now();
        let send = http.get(url).header("accept", "application/json").send();
        let outcome = match tokio::time::timeout(self.timeout, async {
            read_response(send.await.map_err(|e| describe_reqwest(&e))?, None).await
        })
        .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        };
        let mut ex = Exchange::without_answer(self, "GET", "");
        ex.url = url.to_owned();
        ex.outcome = outcome;
        ex.elapsed = started.elapsed();
        ex
    }

    /// One line to the server process; the answer is the line carrying the request's id.
    async fn send_stdio(&mut self, method: &str, body: Vec<u8>, rpc_id: Option<u64>) -> Exchange {
        let request_bytes = body.len();
        let request_body = cut(&String::from_utf8_lossy(&body), SHOWN_BYTES);
        let started = Instant::now();
        // A raw body without an id still wants its answer (a parse error has a null id);
        // a notification has none.
        let answer = rpc_id.is_some() || method == "raw";
        let outcome = match &self.link {
            Link::Stdio(conn) => conn.send(&body, rpc_id, answer, self.timeout).await,
            Link::Broken(e) => Err(e.clone()),
            Link::Http(_) => Err("not a stdio client".to_owned()),
        };
        let outcome = outcome.map(|message| HttpResponse {
            status: None,
            headers: Vec::new(),
            content_type: String::new(),
            body_bytes: message.as_ref().map_or(0, |m| m.to_string().len()),
            body: message.as_ref().map(|m| compact(m, SHOWN_BYTES)).unwrap_or_default(),
            problem: None,
            message,
            others: Vec::new(),
        });
        Exchange {
            persona: self.persona.clone(),
            method: method.to_owned(),
            tool: None,
            url: self.endpoint.clone(),
            request_headers: Vec::new(),
            request_body,
            request_bytes,
            rpc_id,
            outcome,
            elapsed: started.elapsed(),
            stdio: true,
            sent_strings: Vec::new(),
        }
    }
}

/// The tools a request body calls (`tools/call`, alone or in a batch), for the call log.
fn called_tools(method: &str, body: &[u8]) -> Vec<String> {
    if method != "tools/call" && method != "raw" {
        return Vec::new();
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return Vec::new() };
    let one = |m: &Value| (m.get("method") == Some(&json!("tools/call"))).then(|| params_tool(m)).flatten();
    match &value {
        Value::Array(batch) => batch.iter().filter_map(one).collect(),
        single => one(single).into_iter().collect(),
    }
}

/// The existing records the `tools/call`s of a body would change (`ToolName::changes`): what
/// the run's audit of untouched records leaves out, refused or not. With each, for a write of a
/// record's status, the status asked for (`Some(None)`: a status write that names none).
#[allow(clippy::type_complexity)]
fn changed_records(method: &str, body: &[u8]) -> Vec<(String, Option<Option<String>>)> {
    if method != "tools/call" && method != "raw" {
        return Vec::new();
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return Vec::new() };
    let one = |m: &Value| {
        let tool = chataigne_contract::ToolName::parse(m.pointer("/params/name")?.as_str()?)?;
        let args = m.pointer("/params/arguments")?;
        let id = args.get(tool.changes()?)?.as_str()?;
        let status_write = matches!(
            tool,
            chataigne_contract::ToolName::UpdateOrderStatus
                | chataigne_contract::ToolName::SetRestaurantStatus
        );
        let target = status_write.then(|| args.get("status").and_then(Value::as_str).map(str::to_owned));
        Some((id.to_owned(), target))
    };
    match &value {
        Value::Array(batch) => batch.iter().filter_map(one).collect(),
        single => one(single).into_iter().collect(),
    }
}

/// What an answer to one write says of its effect (`schedule::WriteOutcome`).
fn write_outcome(ex: &Exchange) -> crate::schedule::WriteOutcome {
    use crate::schedule::WriteOutcome::{Done, Refused, Unknown};
    if let Some(err) = ex.rpc_error() {
        // Parse error, invalid request, unknown method, invalid params: nothing ran.
        let code = err.get("code").and_then(Value::as_i64).unwrap_or_default();
        return if matches!(code, -32700 | -32600 | -32601 | -32602) {
            Refused { conflict: false }
        } else {
            Unknown
        };
    }
    if ex.result().is_some() {
        if !ex.is_error() {
            return Done;
        }
        let category =
            ex.structured().and_then(|s| s.pointer("/data/error/category")).and_then(Value::as_str);
        return match category {
            Some("conflict") => Refused { conflict: true },
            Some("validation" | "authentication" | "authorization" | "not_found" | "rate_limit") => {
                Refused { conflict: false }
            }
            _ => Unknown,
        };
    }
    // Refused by the transport before any JSON-RPC answer (no token, a foreign Origin, a body too
    // large, a media type refused): nothing ran.
    match ex.status() {
        Some(400 | 401 | 403 | 404 | 405 | 406 | 413 | 415) => Refused { conflict: false },
        _ => Unknown,
    }
}

fn params_tool(body: &Value) -> Option<String> {
    body.pointer("/params/name").and_then(Value::as_str).map(str::to_owned)
}

/// reqwest's Display hides the cause ("error sending request"); the chain says "connection refused".
pub fn describe_reqwest(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    if e.is_timeout() { format!("timed out: {text}") } else { text }
}

/// Status and headers of an answer whose body is left unread.
fn read_head(resp: &reqwest::Response) -> HttpResponse {
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    HttpResponse {
        status: Some(resp.status().as_u16()),
        headers,
        content_type,
        body: String::new(),
        body_bytes: 0,
        message: None,
        problem: None,
        others: Vec::new(),
    }
}

/// An HTTP answer as the runner reads it: status, headers, body, and the JSON-RPC message
/// answering `rpc_id` (from JSON or SSE) or why there is none. Public for the fuzz targets.
pub async fn read_response(resp: reqwest::Response, rpc_id: Option<u64>) -> Result<HttpResponse, String> {
    read_response_by(resp, rpc_id, None).await
}

/// [`read_response`], with the body's end awaited until `deadline` at most: a body still
/// coming then is read as far as it came, and says so (`problem`).
async fn read_response_by(
    mut resp: reqwest::Response,
    rpc_id: Option<u64>,
    deadline: Option<tokio::time::Instant>,
) -> Result<HttpResponse, String> {
    let HttpResponse { status, headers, content_type, .. } = read_head(&resp);
    let sse = content_type.starts_with("text/event-stream");
    let mut bytes = Vec::new();
    let mut unfinished = false;
    // Read chunk by chunk: an SSE stream may stay open after the answer, so stop once it came.
    loop {
        let next = match deadline {
            Some(at) => match tokio::time::timeout_at(at, resp.chunk()).await {
                Ok(next) => next,
                Err(_) => {
                    unfinished = true;
                    break;
                }
            },
            None => resp.chunk().await,
        };
        let Some(chunk) = next.map_err(|e| describe_reqwest(&e))? else { break };
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_RESPONSE_BYTES {
            return Err(format!("the response body exceeds {MAX_RESPONSE_BYTES} bytes"));
        }
        // Only an event ended by its blank line counts: one still open may yet grow.
        if sse {
            let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
            let ended = text.rfind("\n\n").map_or("", |end| &text[..end + 2]);
            if find_sse_message(ended, rpc_id).is_some() {
                break;
            }
        }
    }
    let body = String::from_utf8_lossy(&bytes).into_owned();
    let (message, problem) = if unfinished {
        let what = if sse { "no event answering this request ended" } else { "the body did not end" };
        (None, Some(format!("{what} before the timeout ({} bytes came)", bytes.len())))
    } else if sse {
        match find_sse_message(&body, rpc_id) {
            Some(m) => (Some(m), None),
            None => (
                None,
                Some(
                    "the event stream holds no JSON-RPC answer to this request (an event not ended by a blank line is never dispatched)"
                        .to_owned(),
                ),
            ),
        }
    } else if content_type.starts_with("application/json") {
        match serde_json::from_str::<Value>(&body) {
            Ok(v) if v.get("jsonrpc").is_some() && !answers(&v, rpc_id) => {
                (None, Some(format!("the JSON-RPC answer is for another request (id {})", v["id"])))
            }
            Ok(v) if v.get("jsonrpc").is_some() => (Some(v), None),
            Ok(_) => (None, Some("the JSON body is not a JSON-RPC message".to_owned())),
            Err(e) => (None, Some(format!("the body is not valid JSON ({e})"))),
        }
    } else if body.is_empty() {
        (None, Some("empty body".to_owned()))
    } else {
        let ct = if content_type.is_empty() { "no content type" } else { &content_type };
        (None, Some(format!("the body is {ct}, not JSON-RPC")))
    };
    let others = if sse {
        let not_answers = sse_messages(&body).into_iter().filter(|v| v.get("method").is_some());
        not_answers.take(MAX_OTHER_MESSAGES).collect()
    } else {
        Vec::new()
    };
    let body_bytes = body.len();
    let body = if message.is_some() { cut(&body, SHOWN_BYTES) } else { body };
    Ok(HttpResponse { status, headers, content_type, body, body_bytes, message, problem, others })
}

/// The `data:` payload of the SSE event answering `rpc_id` (or the first response if no id).
pub fn find_sse_message(stream: &str, rpc_id: Option<u64>) -> Option<Value> {
    sse_messages(stream).into_iter().find(|value| {
        let is_answer = value.get("result").is_some() || value.get("error").is_some();
        is_answer && answers(value, rpc_id)
    })
}

/// Every event's `data:` payload that is JSON, in order (the SSE framing of the transport:
/// events end with a blank line; an event's data lines join with newlines). An event the stream
/// ends in before its blank line is never dispatched (the WHATWG event-stream parsing: "If the
/// file ends in the middle of an event, before the final empty line, the incomplete event is not
/// dispatched"): a browser's or an SDK's `EventSource` would never see it.
pub fn sse_messages(stream: &str) -> Vec<Value> {
    let stream = stream.replace("\r\n", "\n");
    let mut events: Vec<&str> = stream.split("\n\n").collect();
    // What follows the last blank line is unterminated (empty for a well-ended stream).
    events.pop();
    events
        .into_iter()
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|l| l.strip_prefix(' ').unwrap_or(l))
                .collect();
            if data.is_empty() { None } else { serde_json::from_str::<Value>(&data.join("\n")).ok() }
        })
        .collect()
}

/// Whether `message` answers the request `rpc_id` (a null id answers anything: parse errors).
fn answers(message: &Value, rpc_id: Option<u64>) -> bool {
    match rpc_id {
        Some(id) => message.get("id").and_then(Value::as_u64) == Some(id) || message["id"].is_null(),
        None => true,
    }
}

impl HttpResponse {
    /// Drop the answer's content, keeping status, headers and what a report shows: for
    /// scenarios whose answers would otherwise pile up in memory.
    pub fn forget(&mut self, why: &str) {
        if let Some(m) = self.message.take() {
            self.body = compact(&m, SHOWN_BYTES);
        }
        self.others = Vec::new();
        self.problem = Some(why.to_owned());
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Exchanges built by hand for the unit tests of the rules that judge them (`invariants`,
/// `rules`, `rules::transport`).
#[cfg(test)]
impl Exchange {
    /// A `list_orders` call as "owner" over HTTP, answered 200 with `message` as its JSON body.
    pub(crate) fn answered_for_test(message: Option<Value>) -> Exchange {
        Exchange {
            persona: Some("owner".into()),
            method: "tools/call".into(),
            tool: Some("list_orders".into()),
            url: "http://127.0.0.1:1/mcp".into(),
            request_headers: Vec::new(),
            request_body: String::new(),
            request_bytes: 0,
            rpc_id: Some(1),
            outcome: Ok(HttpResponse {
                status: Some(200),
                headers: Vec::new(),
                content_type: "application/json".into(),
                body: String::new(),
                body_bytes: 0,
                message,
                problem: None,
                others: Vec::new(),
            }),
            elapsed: Duration::ZERO,
            stdio: false,
            sent_strings: Vec::new(),
        }
    }

    /// The answer of an exchange built with [`Exchange::answered_for_test`], to change.
    pub(crate) fn response_mut_for_test(&mut self) -> &mut HttpResponse {
        self.outcome.as_mut().expect("an exchange built for a test has an answer")
    }
}

impl Exchange {
    /// An exchange of `client` with nothing sent yet: `why` is its outcome until one is set.
    fn without_answer(client: &McpClient, method: &str, why: &str) -> Exchange {
        Exchange {
            persona: client.persona.clone(),
            method: method.to_owned(),
            tool: None,
            url: client.endpoint.clone(),
            request_headers: Vec::new(),
            request_body: String::new(),
            request_bytes: 0,
            rpc_id: None,
            outcome: Err(why.to_owned()),
            elapsed: Duration::ZERO,
            stdio: !matches!(client.link, Link::Http(_)),
            sent_strings: Vec::new(),
        }
    }

    pub fn response(&self) -> Option<&HttpResponse> {
        self.outcome.as_ref().ok()
    }

    /// The HTTP status; `None` without an answer, and over stdio.
    pub fn status(&self) -> Option<u16> {
        self.response().and_then(|r| r.status)
    }

    pub fn message(&self) -> Option<&Value> {
        self.response().and_then(|r| r.message.as_ref())
    }

    /// The JSON-RPC `result`.
    pub fn result(&self) -> Option<&Value> {
        self.message().and_then(|m| m.get("result"))
    }

    /// The JSON-RPC `error`.
    pub fn rpc_error(&self) -> Option<&Value> {
        self.message().and_then(|m| m.get("error"))
    }

    pub fn structured(&self) -> Option<&Value> {
        self.result().and_then(|r| r.get("structuredContent"))
    }

    pub fn is_error(&self) -> bool {
        self.result().and_then(|r| r.get("isError")).and_then(Value::as_bool) == Some(true)
    }

    /// The text content blocks of a tool result.
    pub fn texts(&self) -> Vec<&str> {
        self.result()
            .and_then(|r| r.get("content"))
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The UTF-8 bytes of the text summary (ENV-3).
    pub fn text_bytes(&self) -> usize {
        self.texts().iter().map(|t| t.len()).sum()
    }

    /// The serialized bytes of the structured output (ENV-3).
    pub fn structured_bytes(&self) -> usize {
        self.structured().map(|s| s.to_string().len()).unwrap_or(0)
    }

    /// The request_id of the answer: `meta.request_id`, else the `x-request-id` header.
    pub fn request_id(&self) -> Option<&str> {
        self.structured()
            .and_then(|s| s.pointer("/meta/request_id"))
            .and_then(Value::as_str)
            .or_else(|| self.response().and_then(|r| r.header("x-request-id")))
    }

    /// A one-line account of the answer, for "got: …".
    pub fn summary(&self) -> String {
        let resp = match &self.outcome {
            Ok(r) => r,
            Err(e) => return format!("no answer ({e})"),
        };
        let via = match resp.status {
            Some(status) => format!("HTTP {status}"),
            None => "stdio".to_owned(),
        };
        if let Some(err) = self.rpc_error() {
            return format!("{via}, JSON-RPC error {}", compact(err, 200));
        }
        if let Some(s) = self.structured() {
            if let Some(code) = s.pointer("/data/error/code").and_then(Value::as_str) {
                return format!("{via}, tool error {code}");
            }
            return format!("{via}, success");
        }
        if self.result().is_some() {
            return format!("{via}, a result without structuredContent");
        }
        match &resp.problem {
            Some(p) => format!("{via}, {p}"),
            None if resp.message.is_none() && self.stdio => format!("{via}, no answer awaited"),
            None => via,
        }
    }

    /// The request and the response as a failure message shows them: secrets redacted,
    /// bodies cut to about 2 KiB.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let who = self.persona.as_deref().map(|p| format!(" as \"{p}\"")).unwrap_or_default();
        let what = match &self.tool {
            Some(tool) => format!("tools/call {tool}"),
            None => self.method.clone(),
        };
        let verb = if self.stdio { "over" } else { "POST" };
        let _ = writeln!(out, "request{who}: {verb} {} ({what}, {} bytes)", self.url, self.request_bytes);
        for (k, v) in &self.request_headers {
            let _ = writeln!(out, "  {k}: {v}");
        }
        let _ = writeln!(out, "  {}", self.request_body);
        match &self.outcome {
            Err(e) => {
                let _ = writeln!(out, "response: none after {} ms ({e})", self.elapsed.as_millis());
            }
            Ok(r) => {
                match r.status {
                    Some(status) => {
                        let _ = writeln!(out, "response: HTTP {status} in {} ms", self.elapsed.as_millis());
                    }
                    None => {
                        let _ = writeln!(out, "response: in {} ms", self.elapsed.as_millis());
                    }
                }
                for name in ["content-type", "x-request-id", "mcp-session-id", "www-authenticate"] {
                    if let Some(v) = r.header(name) {
                        let _ = writeln!(out, "  {name}: {v}");
                    }
                }
                let body = match &r.message {
                    Some(m) => compact(m, SHOWN_BYTES),
                    None => cut(&r.body, SHOWN_BYTES),
                };
                let _ = writeln!(out, "  {body}");
            }
        }
        let _ = write!(out, "request_id: {}", self.request_id().unwrap_or("(none)"));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_vocabulary_is_not_an_echo_but_what_the_caller_chose_is() {
        let sent = sent_strings(&json!({
            "restaurant_id": "rst_central",
            "status": "rejected",
            "metrics": ["revenue_cents", "orders_count"],
            "text": "Bonjour CANARY-1234",
            "idempotency_key": "key-12345678",
            "granularity": "day",
        }));
        let mut sent = sent;
        sent.sort();
        assert_eq!(sent, ["Bonjour CANARY-1234", "key-12345678", "rst_central"]);
    }

    #[test]
    fn sse_answer_is_found_by_id() {
        let stream = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                      id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n\
                      data: {\"jsonrpc\":\"2.0\",\"id\":4,\r\ndata: \"result\":{\"ok\":true}}\r\n\r\n";
        assert_eq!(find_sse_message(stream, Some(3)).unwrap()["id"], 3);
        assert_eq!(find_sse_message(stream, Some(4)).unwrap()["result"]["ok"], true);
        assert!(find_sse_message(stream, Some(5)).is_none());
    }

    #[test]
    fn an_sse_event_the_stream_ends_in_before_its_blank_line_is_not_dispatched() {
        let unended = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n";
        assert!(find_sse_message(unended, Some(3)).is_none());
        assert!(find_sse_message(&format!("{unended}\n"), Some(3)).is_some());
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("abc", 5), "abc");
        assert_eq!(cut("éé", 3), "é… (2 more bytes)");
    }
}
