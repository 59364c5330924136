//! The harness: one reference server per test on `127.0.0.1:0`, raw JSON-RPC over reqwest, and the
//! checks every tool result gets on its way back (output schema, envelope, request_id, sizes).

use std::collections::HashMap;
use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use chataigne_contract::dataset::{Dataset, Order};
use chataigne_contract::envelope::{self, Parsed};
use chataigne_contract::schema::Validator;
use chataigne_contract::{ErrorCode, MAX_STRUCTURED_BYTES, MAX_SUMMARY_BYTES, ToolName};
use futures::StreamExt;
use mock_server::{Config, Defect};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub const PROTOCOL_VERSION: &str = "2025-06-18";
pub const CONTROL_SECRET: &str = "secret";

/// The personas that hold a token for this server (other_audience is refused at the door).
pub const PERSONAS: [&str; 7] = ["owner", "manager", "staff", "viewer", "revoked", "outsider", "noscope"];

/// The published dataset, parsed once.
pub fn dataset() -> &'static Dataset {
    static DATASET: OnceLock<Dataset> = OnceLock::new();
    DATASET.get_or_init(|| Config::embedded().dataset)
}

/// A restaurant's orders in the documented order: `created_at` desc, then `id` desc (PAG-4).
pub fn orders_newest_first(restaurant_id: &str) -> Vec<&'static Order> {
    let mut orders: Vec<&Order> =
        dataset().orders.iter().filter(|o| o.restaurant_id == restaurant_id).collect();
    orders.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
    orders
}

/// A dataset order of `restaurant_id` in `status`.
pub fn order_in(restaurant_id: &str, status: &str) -> &'static Order {
    dataset()
        .orders
        .iter()
        .find(|o| o.restaurant_id == restaurant_id && o.status == status)
        .unwrap_or_else(|| panic!("the dataset has a {status} order in {restaurant_id}"))
}

/// Valid arguments for each tool on the busy restaurant (writes from the dataset's state).
pub fn valid_args(tool: ToolName) -> Value {
    use ToolName::*;
    let received = &order_in("rst_central", "received").id;
    let rid = "rst_central";
    match tool {
        ListOrganizations => json!({}),
        ListRestaurants => json!({}),
        GetRestaurant | ListOrders | ListConversations | ListInstructions => json!({ "restaurant_id": rid }),
        GetOrder => json!({ "restaurant_id": rid, "order_id": "ord_c0001" }),
        GetConversation => json!({ "restaurant_id": rid, "conversation_id": "cnv_c01" }),
        SearchTranscripts => json!({ "restaurant_id": rid, "query": "gluten-free" }),
        GetTranscript => json!({ "restaurant_id": rid, "transcript_id": "trs_c03" }),
        GetAnalytics => {
            json!({
                "restaurant_id": rid, "metrics": ["orders_count"], "from": "2026-11-01", "to": "2026-11-30",
            })
        }
        UpdateOrderStatus => {
            json!({
                "restaurant_id": rid, "order_id": received,
                "status": "accepted", "expected_status": "received",
            })
        }
        SetRestaurantStatus => json!({ "restaurant_id": rid, "status": "paused", "expected_status": "open" }),
        SendMessage => {
            json!({
                "restaurant_id": rid, "conversation_id": "cnv_c01",
                "text": "Hello", "idempotency_key": key("auth"),
            })
        }
        CreateInstruction => {
            json!({ "restaurant_id": rid, "text": "Be kind", "idempotency_key": key("auth") })
        }
        CreateOrganization => json!({ "name": "New Group", "idempotency_key": key("auth") }),
        CreateRestaurant => json!({
            "organization_id": "org_maison", "name": "Chataigne Gare",
            "timezone": "Europe/Paris", "idempotency_key": key("auth"),
        }),
    }
}

fn output_validator(tool: ToolName) -> &'static Validator {
    static VALIDATORS: OnceLock<HashMap<ToolName, Validator>> = OnceLock::new();
    &VALIDATORS.get_or_init(|| {
        ToolName::ALL
            .iter()
            .map(|t| (*t, Validator::new(&t.output_schema()).expect("output schemas compile")))
            .collect()
    })[&tool]
}

/// A fresh idempotency key, unique within the test process.
pub fn key(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{label}-key-{:06}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A raw HTTP answer.
#[derive(Debug)]
pub struct Http {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    /// The body as JSON, `Null` when it is not JSON.
    pub json: Value,
}

impl Http {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A `tools/call` answer, already checked by [`verify`].
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    /// `structuredContent`, `Null` when the answer is a JSON-RPC error.
    pub structured: Value,
    pub is_error: bool,
    /// The text content block.
    pub text: String,
}

impl Reply {
    pub fn meta(&self) -> &Value {
        &self.structured["meta"]
    }

    pub fn request_id(&self) -> &str {
        self.meta()["request_id"].as_str().expect("every envelope has meta.request_id")
    }

    pub fn next_cursor(&self) -> Option<String> {
        self.meta().get("next_cursor").and_then(Value::as_str).map(str::to_owned)
    }

    /// The `items` of a list answer, by their key (`orders`, `messages`, ...).
    pub fn items(&self, key: &str) -> &Vec<Value> {
        expect_ok(self)[key].as_array().unwrap_or_else(|| panic!("data.{key} is an array: {}", self.body))
    }

    pub fn ids(&self, key: &str) -> Vec<String> {
        self.items(key).iter().map(|i| i["id"].as_str().expect("items have an id").to_owned()).collect()
    }

    /// The JSON-RPC error code, when the answer is not a tool result.
    pub fn rpc_error(&self) -> Option<i64> {
        self.body.pointer("/error/code").and_then(Value::as_i64)
    }
}

/// Asserts a successful tool result; returns its `data`.
#[track_caller]
pub fn expect_ok(reply: &Reply) -> &Value {
    assert!(reply.body.get("result").is_some() && !reply.is_error, "expected a success, got {}", reply.body);
    &reply.structured["data"]
}

/// Asserts a tool error with `code`; returns `data.error`.
#[track_caller]
pub fn expect_error(reply: &Reply, code: ErrorCode) -> &Value {
    assert!(reply.is_error, "expected {code}, got {}", reply.body);
    let error = &reply.structured["data"]["error"];
    assert_eq!(error["code"], code.as_str(), "expected {code}, got {}", reply.body);
    error
}

/// The error code of a tool result, `None` for a success.
pub fn code_of(reply: &Reply) -> Option<ErrorCode> {
    reply.is_error.then(|| {
        ErrorCode::parse(reply.structured["data"]["error"]["code"].as_str().unwrap_or_default())
            .expect("a contract error code")
    })
}

/// The checks every tool result gets, so PROTO-4, ENV-1..5 hold on every call a test makes.
/// `published`: the server's own output schemas when its variants change them (docs/VARIANTS.md).
#[track_caller]
fn verify(tool: &str, reply: &Reply, published: Option<&HashMap<ToolName, Validator>>) {
    assert_eq!(reply.status, 200, "tools/call answers HTTP 200: {}", reply.body);
    let Some(result) = reply.body.get("result") else {
        assert!(reply.body.get("error").is_some(), "neither result nor error: {}", reply.body);
        return;
    };
    let tool = ToolName::parse(tool).unwrap_or_else(|| panic!("a result for unknown tool {tool}"));
    verify_result_with(tool, result, published.map_or_else(|| output_validator(tool), |p| &p[&tool]));
    // ENV-2: the request_id format, and the same ID in the `x-request-id` header.
    let request_id = reply.request_id();
    assert!(envelope::is_request_id(request_id), "request_id {request_id}");
    let structured = &reply.structured;
    let header = reply.headers.get("x-request-id").and_then(|v| v.to_str().ok());
    assert_eq!(header, Some(request_id), "x-request-id equals meta.request_id");
    // ENV-1 / ENV-3: one short text block; the structured output at most 128 KiB.
    let content = result["content"].as_array().expect("content is an array");
    assert_eq!(content.len(), 1, "one text block: {result}");
    assert_eq!(content[0]["type"], "text");
    assert!(
        !reply.text.is_empty() && reply.text.len() <= MAX_SUMMARY_BYTES,
        "summary of {} bytes",
        reply.text.len()
    );
    let size = serde_json::to_string(structured).expect("JSON").len();
    assert!(size <= MAX_STRUCTURED_BYTES, "{tool}: structuredContent of {size} bytes");
}

/// The checks of a tool result that hold on every transport: PROTO-4 (the output schema), ENV-1
/// and ENV-4 (the envelope, `isError`) and ENV-5 (the code table).
#[track_caller]
pub fn verify_result(tool: ToolName, result: &Value) {
    verify_result_with(tool, result, output_validator(tool));
}

#[track_caller]
fn verify_result_with(tool: ToolName, result: &Value, validator: &Validator) {
    let structured = &result["structuredContent"];
    assert!(structured.is_object(), "{tool}: no structuredContent: {result}");
    assert!(
        validator.is_valid(structured),
        "{tool}: structuredContent off its output schema: {:?}\n{structured}",
        validator.failures(structured)
    );
    let parsed = envelope::parse(structured).unwrap_or_else(|e| panic!("{tool}: {e}: {structured}"));
    assert_eq!(result["isError"].as_bool().unwrap_or(false), matches!(parsed, Parsed::Error(_)), "{result}");
    if let Parsed::Error(body) = &parsed {
        let code = body.code.known().unwrap_or_else(|| panic!("{tool}: a code outside §9: {}", body.code));
        assert_eq!(body.category, code.category(), "{code}");
        assert_eq!(body.retryable, code.retryable(), "{code}");
    }
}

/// A reference server on a free loopback port, stopped when dropped.
pub struct Server {
    pub base: String,
    http: reqwest::Client,
    next_id: AtomicU64,
    stop: Option<oneshot::Sender<()>>,
    /// The output schemas this server publishes, when its variants patch the contract's.
    published: Option<HashMap<ToolName, Validator>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A server with `Config::for_tests`.
pub async fn start() -> Server {
    start_with(|_| {}).await
}

/// Defect modes to switch on in every server these tests start, from `IT_DEFECTS` (comma
/// separated names, see `chataigne-mock defects`): a way to check that the tests catch each one,
/// e.g. `IT_DEFECTS=cursor-unsigned cargo nextest run -p mock-server` must fail.
pub fn defects_under_test() -> Vec<String> {
    std::env::var("IT_DEFECTS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `--defect NAME` flags for the binary, from `IT_DEFECTS`.
pub fn defect_flags() -> Vec<String> {
    defects_under_test().into_iter().flat_map(|name| ["--defect".to_owned(), name]).collect()
}

/// A server with `Config::for_tests`, tweaked.
pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> Server {
    let mut config = Config::for_tests(CONTROL_SECRET);
    config.defects = defects_under_test()
        .iter()
        .map(|name| Defect::parse(name).unwrap_or_else(|| panic!("IT_DEFECTS: unknown defect {name}")))
        .collect();
    // IT_REDIS=redis://… runs the same tests on the Redis backend, one namespace per server.
    if let Ok(url) = std::env::var("IT_REDIS") {
        static NAMESPACE: AtomicU64 = AtomicU64::new(0);
        config.redis_url = Some(url);
        config.redis_namespace =
            format!("it-{}-{}", std::process::id(), NAMESPACE.fetch_add(1, Ordering::Relaxed));
    }
    tweak(&mut config);
    let published = (!config.variants.is_empty()).then(|| {
        let variants = mock_server::dev::variants::Variants::new(&config.variants);
        ToolName::ALL
            .iter()
            .map(|t| (*t, Validator::new(&variants.output_schema(*t)).expect("output schemas compile")))
            .collect()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
    let addr = listener.local_addr().expect("a local address");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        mock_server::run(listener, config, shutdown).await.expect("the server runs");
    });
    Server {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
        next_id: AtomicU64::new(1),
        stop: Some(stop),
        published,
    }
}

impl Server {
    /// A client for a server a test started itself (`base`: `http://addr`); stopping it is the
    /// test's business.
    pub fn attach(base: &str) -> Server {
        Server {
            base: base.to_owned(),
            http: reqwest::Client::new(),
            next_id: AtomicU64::new(1),
            stop: None,
            published: None,
        }
    }
}

pub fn token(persona: &str) -> String {
    format!("{}{persona}", mock_server::DEV_TOKEN_PREFIX)
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POST /mcp with the usual MCP headers, and `extra` ones (which may replace them).
    pub async fn post_mcp(&self, extra: &[(&str, &str)], body: impl Into<reqwest::Body>) -> Http {
        let mut headers = HeaderMap::new();
        let defaults = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", PROTOCOL_VERSION),
        ];
        for (name, value) in defaults.iter().chain(extra) {
            let name = HeaderName::from_bytes(name.as_bytes()).expect("a header name");
            headers.insert(name, HeaderValue::from_str(value).expect("a header value"));
        }
        let request = self.http.post(self.url("/mcp")).headers(headers).body(body);
        read(request.send().await.expect("the server answers")).await
    }

    /// One JSON-RPC message as `persona`.
    pub async fn rpc(&self, persona: &str, message: &Value) -> Http {
        let auth = format!("Bearer {}", token(persona));
        self.post_mcp(&[("authorization", &auth)], message.to_string()).await
    }

    /// `tools/call` with arguments given as JSON text (to control key order).
    pub async fn call_text(&self, persona: &str, tool: &str, arguments: &str) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let name = Value::from(tool);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{name},"arguments":{arguments}}}}}"#
        );
        let auth = format!("Bearer {}", token(persona));
        let http = self.post_mcp(&[("authorization", &auth)], body).await;
        assert_eq!(http.json["id"], id, "the answer carries the request's id: {}", http.text);
        let result = http.json.get("result");
        let reply = Reply {
            status: http.status,
            structured: result.and_then(|r| r.get("structuredContent")).cloned().unwrap_or(Value::Null),
            is_error: result.and_then(|r| r["isError"].as_bool()).unwrap_or(false),
            text: result
                .and_then(|r| r.pointer("/content/0/text"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            headers: http.headers,
            body: http.json,
        };
        verify(tool, &reply, self.published.as_ref());
        reply
    }

    /// `tools/call` as `persona`; the answer is checked against the contract on the way.
    pub async fn call(&self, persona: &str, tool: &str, args: Value) -> Reply {
        self.call_text(persona, tool, &args.to_string()).await
    }

    /// The `tools/list` entries.
    pub async fn tools_list(&self, persona: &str) -> Vec<Value> {
        let http = self.rpc(persona, &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).await;
        assert_eq!(http.status, 200, "{}", http.text);
        http.json["result"]["tools"].as_array().unwrap_or_else(|| panic!("tools: {}", http.text)).clone()
    }

    /// POST to the control API; returns the status and the JSON body (`Null` if none).
    pub async fn control(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(self.url(&format!("/control{path}")))
            .header("x-control-secret", CONTROL_SECRET)
            .json(&body)
            .send()
            .await
            .expect("the control API answers");
        let http = read(response).await;
        assert!(http.status < 300, "control {path}: {} {}", http.status, http.text);
        (http.status, http.json)
    }

    pub async fn reset(&self) {
        self.control("/reset", json!({})).await;
    }

    pub async fn advance(&self, seconds: i64) {
        self.control("/clock/advance", json!({ "seconds": seconds })).await;
    }

    pub async fn fault(&self, fault: Value) {
        self.control("/faults", fault).await;
    }

    pub async fn revoke(&self, user_id: &str, organization_id: &str) {
        let body = json!({ "user_id": user_id, "organization_id": organization_id });
        self.control("/memberships/revoke", body).await;
    }

    pub async fn get(&self, path: &str, extra: &[(&str, &str)]) -> Http {
        let mut request = self.http.get(self.url(path));
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        read(request.send().await.expect("the server answers")).await
    }

    /// Every page of a list, following `next_cursor` with the same arguments.
    pub async fn walk(&self, persona: &str, tool: &str, args: Value, key: &str) -> Vec<Reply> {
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut page_args = args.clone();
            if let Some(c) = &cursor {
                page_args["cursor"] = c.clone().into();
            }
            let page = self.call(persona, tool, page_args).await;
            expect_ok(&page);
            assert!(page.items(key).len() <= 200, "a page is bounded");
            cursor = page.next_cursor();
            pages.push(page);
            if cursor.is_none() {
                return pages;
            }
            assert!(pages.len() < 1000, "the walk ends");
        }
    }

    /// How many messages a conversation holds now.
    pub async fn message_count(&self, restaurant_id: &str, conversation_id: &str) -> u64 {
        let args =
            json!({ "restaurant_id": restaurant_id, "conversation_id": conversation_id, "message_limit": 1 });
        let reply = self.call("owner", "get_conversation", args).await;
        expect_ok(&reply)["conversation"]["message_count"].as_u64().expect("message_count")
    }
}

async fn read(response: reqwest::Response) -> Http {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("a readable body");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Http { status, headers, text, json }
}

/// Runs `n` jobs, `parallel` at a time; results in completion order.
pub async fn concurrently<T, F: Future<Output = T>>(
    n: usize,
    parallel: usize,
    job: impl FnMut(usize) -> F,
) -> Vec<T> {
    futures::stream::iter(0..n).map(job).buffer_unordered(parallel).collect().await
}

/// The tool result with its request_ids replaced (and a rate limit's `retry_after_ms`, which
/// follows the clock), for a snapshot.
pub fn redacted(reply: &Reply) -> Value {
    let text = reply.body["result"].to_string().replace(reply.request_id(), "req_REDACTED0000000000");
    let mut result: Value = serde_json::from_str(&text).expect("JSON");
    if code_of(reply) == Some(ErrorCode::RateLimited)
        && let Some(ms) = result.pointer_mut("/structuredContent/data/error/retry_after_ms")
    {
        *ms = json!("[ms]");
    }
    result
}

/// The address the binary logged it serves, once it has.
pub async fn served_address(log: &std::path::Path) -> String {
    for _ in 0..200 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<Value>(line) else { continue };
            if let Some(address) = event["address"].as_str() {
                return address.to_owned();
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the server never logged its address: {}", std::fs::read_to_string(log).unwrap_or_default());
}
