//! The faults of PROTO: the protocol (versions, JSON-RPC errors, published schemas, Origin and Host).

use super::*;

impl Proxy {
    /// Request-side rewrites of this area's faults (`Proxy::before`).
    pub(crate) async fn before_protocol(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let method = call.rpc_method().map(String::from);
        match self.fault {
            Proto1OldProtocolOnly => {
                if method.as_deref() == Some("server/discover") {
                    return Some(Answer::rpc(
                        call,
                        "error",
                        json!({ "code": -32601, "message": "Method not found" }),
                    ));
                }
                // The old version it negotiates is then sent back: the transport still works.
                if call.headers.get("mcp-protocol-version").is_some_and(|v| v == "2025-03-26") {
                    call.headers.insert("mcp-protocol-version", HeaderValue::from_static("2025-06-18"));
                }
            }
            Proto1NoDiscover if method.as_deref() == Some("server/discover") => {
                return Some(Answer::rpc(
                    call,
                    "error",
                    json!({ "code": -32601, "message": "Method not found" }),
                ));
            }
            Proto5OriginStripped => {
                call.headers.remove(header::ORIGIN);
            }
            Proto5OriginPrefix => {
                let origin =
                    call.headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).unwrap_or_default();
                let host = origin.split_once("://").map_or("", |(_, h)| h);
                if ["localhost", "127.0.0.1"].iter().any(|p| host.starts_with(p)) {
                    call.headers.insert(header::ORIGIN, HeaderValue::from_static("http://localhost"));
                }
            }
            Proto5HostRewritten => {
                let host = self.upstream.trim_start_matches("http://").to_owned();
                if let Ok(v) = HeaderValue::from_str(&host) {
                    call.headers.insert(header::HOST, v);
                }
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_protocol(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let method = call.rpc_method().map(String::from);
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let success = a.is_success();
        match self.fault {
            Proto1OldProtocolOnly if method.as_deref() == Some("initialize") => {
                if let Some(r) = a.result_mut() {
                    r["protocolVersion"] = json!("2025-03-26");
                }
            }
            Proto2UnknownToolResult
                if method.as_deref() == Some("tools/call")
                    && a.rpc_error_code() == Some(-32602)
                    && ToolName::parse(t).is_none() =>
            {
                let result =
                    json!({ "content": [{ "type": "text", "text": "Unknown tool" }], "isError": true });
                *a = Answer::rpc(call, "result", result);
            }
            Proto2ParseError500 if a.rpc_error_code() == Some(-32700) => {
                a.status = StatusCode::INTERNAL_SERVER_ERROR
            }
            Proto2UnknownMethodEmpty if a.rpc_error_code() == Some(-32601) => {
                *a = Answer::rpc(call, "result", json!({}));
            }
            Proto4CreatedAtEpoch if success => {
                if let Some(r) = a.result_mut() {
                    walk_mut(&mut r["structuredContent"]["data"], &mut |k, v| {
                        if k == "created_at"
                            && let Some(secs) = v.as_str().and_then(chataigne_contract::time::parse_timestamp)
                        {
                            *v = json!(secs);
                        }
                    });
                }
            }
            Proto4NullNextCursor if success && a.next_cursor().is_none() => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("next_cursor".into(), Value::Null);
                }
            }
            _ => {}
        }
    }
}
