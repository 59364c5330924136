//! stdio (PROTO-1, AUTH-1): the built binary with `--stdio`, newline-delimited JSON-RPC, the token
//! from `CHATAIGNE_TOKEN`; without a valid one every call is MCP_AUTHENTICATION_REQUIRED.

use std::process::Stdio;
use std::time::Duration;

use chataigne_contract::ToolName;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::support::{PROTOCOL_VERSION, defect_flags, token, verify_result};

struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Session {
    /// Starts the binary and completes the initialize handshake.
    async fn open(token: Option<&str>) -> Session {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_chataigne-mock"));
        command
            .arg("--stdio")
            .args(defect_flags())
            .env_remove("CHATAIGNE_TOKEN")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if let Some(token) = token {
            command.env("CHATAIGNE_TOKEN", token);
        }
        let mut child = command.spawn().expect("the binary starts");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut session = Session { child, stdin, lines };
        let init = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": { "name": "it", "version": "1" },
            },
        });
        let answer = session.request(init).await;
        assert_eq!(answer["result"]["protocolVersion"], PROTOCOL_VERSION, "{answer}");
        session.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
        session
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.stdin.write_all(line.as_bytes()).await.expect("write to stdin");
        self.stdin.flush().await.expect("flush stdin");
    }

    /// Sends a request and reads lines until its answer; every line must be JSON-RPC.
    async fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.send(message).await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .expect("an answer, not a hang")
                .expect("readable stdout")
                .expect("the binary is still running");
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout is JSON-RPC only: {e}: {line}"));
            assert_eq!(value["jsonrpc"], "2.0", "{line}");
            if value["id"] == id {
                return value;
            }
        }
    }

    /// A tools/call; the result is checked against the tool's output schema.
    async fn call(&mut self, id: u64, tool: ToolName, arguments: Value) -> Value {
        let message = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool.as_str(), "arguments": arguments },
        });
        let answer = self.request(message).await;
        verify_result(tool, &answer["result"]);
        answer["result"].clone()
    }

    async fn close(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}

// PROTO-1, AUTH-1: stdio with the token from the environment.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_serves_tools_with_the_token_from_the_environment() {
    let mut session = Session::open(Some(&token("owner"))).await;
    let result = session.call(2, ToolName::ListOrders, json!({ "restaurant_id": "rst_small" })).await;
    assert_eq!(result["isError"], false, "{result}");
    let ids: Vec<&str> = result["structuredContent"]["data"]["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert_eq!(ids, ["ord_s0001", "ord_s0002", "ord_s0003"]);
    let list = session.request(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" })).await;
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(17));
    // The same checks as over HTTP: a foreign restaurant is forbidden.
    let result = session.call(4, ToolName::GetRestaurant, json!({ "restaurant_id": "rst_rival" })).await;
    assert_eq!(result["structuredContent"]["data"]["error"]["code"], "MCP_RESOURCE_FORBIDDEN");
    session.close().await;
}

// AUTH-1, AUTH-2: no token, an unknown one, or one for another audience: every call is refused.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_without_a_valid_token_answers_authentication_required() {
    for token in [None, Some("dev-token-nobody".to_owned()), Some(token("other_audience"))] {
        let mut session = Session::open(token.as_deref()).await;
        for (id, tool) in [(2, ToolName::ListOrders), (3, ToolName::ListOrganizations)] {
            let arguments = if tool == ToolName::ListOrders {
                json!({ "restaurant_id": "rst_small" })
            } else {
                json!({})
            };
            let result = session.call(id, tool, arguments).await;
            let error = &result["structuredContent"]["data"]["error"];
            assert_eq!(error["code"], "MCP_AUTHENTICATION_REQUIRED", "{token:?}: {result}");
            assert_eq!(error["category"], "authentication");
            if token.is_none() && tool == ToolName::ListOrders {
                let request_id =
                    result["structuredContent"]["meta"]["request_id"].as_str().expect("request_id");
                let redacted: Value =
                    serde_json::from_str(&result.to_string().replace(request_id, "req_REDACTED0000000000"))
                        .expect("JSON");
                insta::assert_json_snapshot!("error_MCP_AUTHENTICATION_REQUIRED", redacted);
            }
        }
        session.close().await;
    }
}
