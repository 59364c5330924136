//! Arbitrary POST bodies to /mcp through the real router (gate + rmcp + handler + pipeline).
//!
//! The first byte picks the shape, so seeds stay readable text:
//! - `T<tool>\n<arguments>`: a well-formed `tools/call` around the rest (arguments as JSON if
//!   they parse, else as a string), to get past the gate and rmcp into the tools;
//! - `M<method>\n<params>`: a well-formed request of any method;
//! - anything else: the bytes after it, sent as they are.
//!
//! Checked: never a 5xx, an answer within 5 s, a JSON answer parses, and a `tools/call` answer is
//! a JSON-RPC error or the contract's envelope.

use serde_json::{Value, json};

use crate::harness;

/// One input of the `jsonrpc_http` target.
pub fn jsonrpc_http(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let body = match mode {
        b'T' | b'M' => {
            let text = String::from_utf8_lossy(rest);
            let (head, tail) = text.split_once('\n').unwrap_or((&*text, ""));
            let inner =
                serde_json::from_str::<Value>(tail).unwrap_or_else(|_| Value::String(tail.to_owned()));
            let message = if mode == b'T' {
                json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": head, "arguments": inner } })
            } else {
                json!({ "jsonrpc": "2.0", "id": 7, "method": head, "params": inner })
            };
            message.to_string().into_bytes()
        }
        _ => rest.to_vec(),
    };
    let h = harness();
    h.reset();
    // What the server will read the request as, to know which answers must be tool results.
    let request: Option<Value> = serde_json::from_slice(&body).ok();
    let answer = h.post("owner", body);
    let Some(message) = h.check_http(&answer) else { return };
    let tool = request
        .as_ref()
        .filter(|r| r.get("method") == Some(&json!("tools/call")) && r.get("id").is_some())
        .and_then(|r| r.pointer("/params/name"))
        .and_then(Value::as_str);
    if let Some(tool) = tool
        && answer.status == 200
    {
        h.check_tool_answer(tool, &message);
    }
}
