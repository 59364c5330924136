//! A fake MCP server on wiremock, scripted per test: it initializes, publishes the contract's
//! tool list, and answers each JSON-RPC message with what the test's handler says.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chataigne_conformance::cli::{Outcome, execute_args};
use chataigne_contract::ToolName;
use chataigne_contract::dataset::Dataset;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// What the fake answers to one message.
pub enum Reply {
    /// A JSON-RPC result; `x-request-id` is set from `structuredContent.meta.request_id`.
    Result(Value),
    /// Any HTTP answer.
    Raw(u16, &'static str, String),
    /// An answer that comes too late.
    Hang(Duration),
}

/// `(bearer token, method, params)`.
type Handler = dyn Fn(Option<&str>, &str, &Value) -> Reply + Send + Sync;

struct Responder(Box<Handler>);

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let method = body.get("method").and_then(Value::as_str).unwrap_or_default();
        if body.get("id").is_none() {
            return ResponseTemplate::new(202);
        }
        let token = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match (self.0)(token, method, body.get("params").unwrap_or(&Value::Null)) {
            Reply::Result(result) => {
                let mut t = ResponseTemplate::new(200);
                if let Some(rid) =
                    result.pointer("/structuredContent/meta/request_id").and_then(Value::as_str)
                {
                    t = t.insert_header("x-request-id", rid);
                }
                t.set_body_json(json!({ "jsonrpc": "2.0", "id": body["id"], "result": result }))
            }
            Reply::Raw(status, content_type, text) => {
                ResponseTemplate::new(status).set_body_raw(text.into_bytes(), content_type)
            }
            Reply::Hang(delay) => ResponseTemplate::new(200).set_delay(delay),
        }
    }
}

pub struct Fake {
    runtime: tokio::runtime::Runtime,
    server: MockServer,
    dir: PathBuf,
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

impl Fake {
    pub fn start() -> Fake {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let server = runtime.block_on(MockServer::start());
        let dir = std::env::temp_dir().join(format!(
            "chataigne-it-{}-{}",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Fake { runtime, server, dir }
    }

    /// Answer every POST /mcp with `handler(method, params)`.
    pub fn serve(&self, handler: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) {
        self.serve_as(move |_, method, params| handler(method, params));
    }

    /// Answer every POST /mcp with `handler(bearer token, method, params)`.
    pub fn serve_as(&self, handler: impl Fn(Option<&str>, &str, &Value) -> Reply + Send + Sync + 'static) {
        let mock = Mock::given(method("POST")).and(path("/mcp")).respond_with(Responder(Box::new(handler)));
        self.runtime.block_on(mock.mount(&self.server));
        self.no_event_stream();
    }

    /// A well-behaved MCP session whose tools/call answers come from `tool(name, arguments)`.
    pub fn serve_tools(&self, tool: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) {
        self.serve_tools_as(move |_, name, args| tool(name, args));
    }

    /// The same, `tool(bearer token, name, arguments)`: answers that depend on who calls.
    pub fn serve_tools_as(&self, tool: impl Fn(Option<&str>, &str, &Value) -> Reply + Send + Sync + 'static) {
        self.serve_as(move |token, method, params| match method {
            "initialize" => Reply::Result(json!({
                "protocolVersion": "2025-06-18",
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "fake", "version": "0" },
            })),
            "tools/list" => Reply::Result(
                json!({ "tools": ToolName::ALL.iter().map(|t| t.descriptor()).collect::<Vec<_>>() }),
            ),
            "tools/call" => tool(
                token,
                params.get("name").and_then(Value::as_str).unwrap_or_default(),
                params.get("arguments").unwrap_or(&Value::Null),
            ),
            _ => Reply::Raw(
                200,
                "application/json",
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32601, "message": "no"}}).to_string(),
            ),
        });
    }

    /// Answer every request of /mcp, whatever its verb, with `responder` (one that gates GET and
    /// DELETE as it gates POST: Origin, then token).
    pub fn serve_every_verb_with(&self, responder: impl Respond + 'static) {
        let mock = Mock::given(path("/mcp")).respond_with(responder);
        self.runtime.block_on(mock.mount(&self.server));
    }

    /// No event stream of its own: a GET of the endpoint is 405, as Streamable HTTP allows.
    fn no_event_stream(&self) {
        let get = Mock::given(method("GET")).and(path("/mcp")).respond_with(ResponseTemplate::new(405));
        self.runtime.block_on(get.mount(&self.server));
    }

    /// Answer every request under /control with `responder`.
    pub fn serve_control(&self, responder: impl Respond + 'static) {
        let mock = Mock::given(wiremock::matchers::path_regex("^/control")).respond_with(responder);
        self.runtime.block_on(mock.mount(&self.server));
    }

    pub fn endpoint(&self) -> String {
        format!("{}/mcp", self.server.uri())
    }

    /// A profile for the fake: a token per persona, the given timeout.
    pub fn profile(&self, timeout_ms: u64) -> PathBuf {
        let tokens: String =
            dataset().personas.iter().map(|p| format!("{} = \"t-{}\"\n", p.persona, p.persona)).collect();
        let text =
            format!("endpoint = \"{}\"\ntimeout_ms = {timeout_ms}\n[tokens]\n{tokens}", self.endpoint());
        let path = self.dir.join("profile.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn report_path(&self) -> PathBuf {
        self.dir.join("clauses.json")
    }

    /// Run the suite on this fake's features and profile, plus `args`.
    pub fn run(&self, timeout_ms: u64, args: &[&str]) -> Outcome {
        let profile = self.profile(timeout_ms);
        let features = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../features");
        let report = self.report_path();
        let mut argv: Vec<String> = vec![
            "chataigne-conformance".into(),
            "--profile".into(),
            profile.display().to_string(),
            "--report-json".into(),
            report.display().to_string(),
            "--color".into(),
            "never".into(),
        ];
        if !args.contains(&"--features") {
            argv.extend(["--features".into(), features.display().to_string()]);
        }
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        execute_args(argv, io::sink())
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The suite on `profile` with this checkout's features, plus `args`.
pub fn run_profile(profile: &std::path::Path, args: &[&str]) -> Outcome {
    let features = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../features");
    let mut argv: Vec<String> = vec![
        "chataigne-conformance".into(),
        "--profile".into(),
        profile.display().to_string(),
        "--features".into(),
        features.display().to_string(),
        "--color".into(),
        "never".into(),
    ];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    execute_args(argv, io::sink())
}

pub fn dataset() -> Dataset {
    chataigne_conformance::context::load_dataset(None).unwrap()
}

static REQUEST_IDS: AtomicU64 = AtomicU64::new(0);

pub fn request_id() -> String {
    format!("req_fake{:016}", REQUEST_IDS.fetch_add(1, Ordering::Relaxed))
}

/// A conforming success of `data`.
pub fn success(data: Value) -> Reply {
    Reply::Result(json!({
        "content": [{ "type": "text", "text": "Here is what you asked for." }],
        "structuredContent": { "data": data, "meta": { "request_id": request_id(), "truncated": false, "replayed": false } },
        "isError": false,
    }))
}

/// Conforming answers for get_restaurant and list_orders, from the dataset.
pub fn conforming(tool: &str, args: &Value) -> Reply {
    let d = dataset();
    let restaurant = args.get("restaurant_id").and_then(Value::as_str).unwrap_or_default();
    match tool {
        "get_restaurant" => match d.restaurants.iter().find(|r| r.id == restaurant) {
            Some(r) => success(json!({ "restaurant": r })),
            None => Reply::Raw(500, "text/plain", "not scripted".into()),
        },
        "list_orders" => {
            let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(20) as usize;
            // An offset for a cursor: enough for a fake (no order arrives during its walks).
            let skip = args.get("cursor").and_then(Value::as_str).and_then(|c| c.strip_prefix("after-"));
            let skip = skip.and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
            let all: Vec<_> = d.orders_of(restaurant).collect();
            let orders: Vec<_> = all.iter().skip(skip).take(limit).collect();
            let mut reply = json!({
                "content": [{ "type": "text", "text": "Here is what you asked for." }],
                "structuredContent": { "data": { "orders": orders },
                                       "meta": { "request_id": request_id(), "truncated": false, "replayed": false } },
                "isError": false,
            });
            if skip + limit < all.len() {
                reply["structuredContent"]["meta"]["next_cursor"] = json!(format!("after-{}", skip + limit));
            }
            Reply::Result(reply)
        }
        _ => Reply::Raw(500, "text/plain", "not scripted".into()),
    }
}
