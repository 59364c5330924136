//! The bodies of the cargo-fuzz targets (fuzz/, nightly and libFuzzer, outside the workspace),
//! here in the workspace so that a stable test replays every saved input of
//! fuzz/regressions/<target>/ in CI (`tests.rs`); and what the targets share: the reference
//! server's real axum router, built once and driven on a current-thread runtime, and the checks
//! every answer gets. docs/RELIABILITY.md, "Fuzzing".

mod cursor_decode;
mod jsonrpc_http;
mod runner_parse;
mod tool_args;

pub use cursor_decode::cursor_decode;
pub use jsonrpc_http::jsonrpc_http;
pub use runner_parse::runner_parse;
pub use tool_args::tool_args;

/// A target's body: one input, checked; a failed check panics, as libFuzzer expects.
pub type TargetBody = fn(&[u8]);

/// Every target by its cargo-fuzz name (fuzz/Cargo.toml's `[[bin]]`s, fuzz/fuzz_targets/).
pub const TARGETS: &[(&str, TargetBody)] = &[
    ("jsonrpc_http", jsonrpc_http),
    ("tool_args", tool_args),
    ("cursor_decode", cursor_decode),
    ("runner_parse", runner_parse),
];

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use chataigne_contract::ToolName;
use chataigne_contract::envelope::{self, Parsed};
use chataigne_contract::schema::Validator;
use http::Request;
use http_body_util::BodyExt;
use mock_server::{App, Config};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// The personas holding a development token for this server.
pub const PERSONAS: [&str; 7] = ["owner", "manager", "staff", "viewer", "revoked", "outsider", "noscope"];

/// Fixed, so that cursors written into the seed corpus stay valid from one run to the next.
pub const SECRET: &str = "fuzz-secret";

/// Longer than any healthy answer by far; a slower one is a hang.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

pub struct Harness {
    pub rt: tokio::runtime::Runtime,
    pub app: Arc<App>,
    router: axum::Router,
    outputs: HashMap<ToolName, Validator>,
}

/// A raw HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

pub fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let config = Config { secret: Some(SECRET.to_owned()), ..Config::embedded() };
        let app = Arc::new(App::new(config).expect("the reference server starts"));
        // The router spawns nothing at build time, but rmcp's service expects a runtime context.
        let router =
            rt.block_on(async { mock_server::router::router(app.clone(), CancellationToken::new()) });
        let outputs = ToolName::ALL
            .iter()
            .map(|t| (*t, Validator::new(&t.output_schema()).expect("output schemas compile")))
            .collect();
        Harness { rt, app, router, outputs }
    })
}

impl Harness {
    /// Back to the dataset's state, rate windows and keys cleared: an input's outcome must not
    /// depend on the inputs run before it, or crashes would not reproduce (and rate limits would
    /// answer everything after the first thousand runs).
    pub fn reset(&self) {
        self.rt.block_on(self.app.reset()).expect("in memory, a reset always succeeds");
    }

    /// POST `body` to /mcp with the headers a real client sends, as `persona`.
    pub fn post(&self, persona: &str, body: Vec<u8>) -> Answer {
        let request = Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("authorization", format!("Bearer {}{persona}", mock_server::DEV_TOKEN_PREFIX))
            .body(Body::from(body))
            .expect("a request");
        let router = self.router.clone();
        self.rt.block_on(async move {
            let answer = async {
                let response = router.oneshot(request).await.unwrap_or_else(|e| match e {});
                let status = response.status().as_u16();
                let content_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let body =
                    response.into_body().collect().await.expect("the body streams").to_bytes().to_vec();
                Answer { status, content_type, body }
            };
            // Catches waits (a lock never released, a stream never closed); a busy loop is caught
            // by libFuzzer's -timeout instead.
            tokio::time::timeout(ANSWER_WITHIN, answer)
                .await
                .unwrap_or_else(|_| panic!("no answer within 5 s"))
        })
    }

    /// `tools/call` of `tool` (any name) with `arguments` (any value).
    pub fn call(&self, persona: &str, tool: &str, arguments: &Value) -> Answer {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        });
        self.post(persona, body.to_string().into_bytes())
    }

    /// Never a 5xx, and a JSON answer is JSON; returns that JSON.
    pub fn check_http(&self, answer: &Answer) -> Option<Value> {
        let text = String::from_utf8_lossy(&answer.body);
        assert!(answer.status < 500, "HTTP {}: {text}", answer.status);
        if !answer.content_type.starts_with("application/json") {
            return None;
        }
        Some(
            serde_json::from_slice(&answer.body)
                .unwrap_or_else(|e| panic!("a JSON answer is not JSON ({e}): {text}")),
        )
    }

    /// A `tools/call` answer is a JSON-RPC error, or a result whose `structuredContent` is the
    /// contract's envelope: on the tool's output schema (known tools), `isError` exactly when it is
    /// an error, and the code's fixed category and retryable flag.
    pub fn check_tool_answer(&self, tool: &str, message: &Value) {
        if let Some(error) = message.get("error") {
            assert!(
                error.get("code").is_some_and(Value::is_i64),
                "a JSON-RPC error without an integer code: {message}"
            );
            return;
        }
        let result = message.get("result").unwrap_or_else(|| panic!("neither result nor error: {message}"));
        let structured = result
            .get("structuredContent")
            .filter(|s| s.is_object())
            .unwrap_or_else(|| panic!("a tool result without structuredContent: {message}"));
        let parsed =
            envelope::parse(structured).unwrap_or_else(|e| panic!("not the envelope ({e}): {message}"));
        let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
        assert_eq!(
            is_error,
            matches!(parsed, Parsed::Error(_)),
            "isError disagrees with the envelope: {message}"
        );
        if let Parsed::Error(body) = &parsed {
            // The reference server answers with the codes of §9 only.
            let code = body.code.known().unwrap_or_else(|| panic!("a code outside §9: {message}"));
            assert_eq!(body.category, code.category(), "{message}");
            assert_eq!(body.retryable, code.retryable(), "{message}");
            // The code's fixed message, plus argument paths for MCP_INVALID_ARGUMENTS (ENV-6).
            let fixed = code.default_message();
            assert!(
                body.message == fixed || body.message.starts_with(&format!("{fixed}: ")),
                "a message other than the code's: {message}"
            );
        }
        if let Some(tool) = ToolName::parse(tool) {
            let validator = &self.outputs[&tool];
            assert!(
                validator.is_valid(structured),
                "{tool}: off its output schema: {:?}\n{structured}",
                validator.failures(structured)
            );
        }
    }

    /// `tools/call` then every check; returns the answer's JSON-RPC message, if any.
    pub fn call_checked(&self, persona: &str, tool: &str, arguments: &Value) -> Option<Value> {
        let answer = self.call(persona, tool, arguments);
        let message = self.check_http(&answer)?;
        if answer.status == 200 {
            self.check_tool_answer(tool, &message);
        }
        Some(message)
    }
}

#[cfg(test)]
mod tests;
