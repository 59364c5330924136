//! The runner's reading of a server's answer: arbitrary bodies under a chosen content type and
//! status through `client::read_response` (JSON or SSE → the JSON-RPC message, or why not), then
//! everything a step or a failure message reads from it: the accessors, `summary`, `describe`,
//! `envelope::parse` of `structuredContent`, `find_sse_message` and `cut`. Checked: no panic, and
//! an SSE body whose answer `find_sse_message` finds yields that message.
//!
//! Input: byte 0 picks the content type, byte 1 the JSON-RPC id awaited (0: none), byte 2 the
//! HTTP status; the rest is the body.

use std::sync::OnceLock;
use std::time::Duration;

use chataigne_conformance::client::{self, Exchange, find_sse_message};
use chataigne_contract::envelope;

const CONTENT_TYPES: [&str; 8] = [
    "application/json",
    "text/event-stream",
    "application/json; charset=utf-8",
    "Text/Event-Stream; charset=utf-8",
    "text/html",
    "",
    "application/jsonx",
    "text/plain",
];
const STATUSES: [u16; 8] = [200, 202, 400, 401, 403, 413, 500, 503];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime"))
}

/// One input of the `runner_parse` target.
pub fn runner_parse(data: &[u8]) {
    let [ct, id, status, body @ ..] = data else { return };
    let content_type = CONTENT_TYPES[*ct as usize % CONTENT_TYPES.len()];
    let rpc_id = (*id != 0).then(|| u64::from(*id - 1));
    let status = STATUSES[*status as usize % STATUSES.len()];

    let mut builder = http::Response::builder().status(status).header("x-request-id", "req_0123456789abcdef");
    if !content_type.is_empty() {
        builder = builder.header("content-type", content_type);
    }
    let response = reqwest::Response::from(builder.body(body.to_vec()).expect("a response"));
    let outcome = runtime().block_on(client::read_response(response, rpc_id));
    let text = String::from_utf8_lossy(body);
    if let Ok(read) = &outcome
        && content_type.to_ascii_lowercase().starts_with("text/event-stream")
    {
        assert_eq!(read.message, find_sse_message(&text, rpc_id), "the stream's answer is the message");
    }
    let exchange = Exchange {
        persona: Some("owner".into()),
        method: "tools/call".into(),
        tool: Some("list_orders".into()),
        url: "http://localhost/mcp".into(),
        request_headers: vec![("authorization".into(), "Bearer ***".into())],
        request_body: String::new(),
        request_bytes: 0,
        rpc_id,
        outcome,
        elapsed: Duration::ZERO,
        stdio: false,
        sent_strings: vec!["rst_central".into()],
    };
    let _ = (exchange.status(), exchange.result(), exchange.rpc_error(), exchange.is_error());
    let _ = (exchange.texts(), exchange.request_id(), exchange.summary(), exchange.describe());
    if let Some(structured) = exchange.structured() {
        let _ = envelope::parse(structured);
    }
    let _ = client::cut(&text, *ct as usize * 7);
}
