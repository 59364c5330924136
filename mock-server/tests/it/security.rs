//! Security of data (SEC-1, SEC-2): canaries never reach the log of the real binary; internal
//! errors leak nothing of their cause.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use chataigne_contract::ErrorCode;
use serde_json::{Value, json};

use crate::support::{expect_error, served_address, start};

/// Words that betray a leaked cause: paths, panics, SQL, dependencies.
const LEAKS: [&str; 12] =
    ["/", "\\", "panicked", "src/", ".rs", "unwrap", "select ", "sqlite", "stack", "thread", "tokio", "io("];

// SEC-2
#[tokio::test(flavor = "multi_thread")]
async fn internal_errors_leak_no_path_panic_or_sql() {
    let server = start().await;
    server.fault(json!({ "tool": "get_order", "error": "internal" })).await;
    server.fault(json!({ "tool": "list_orders", "error": "dependency" })).await;
    let check = async |tool: &str, args: Value, code: ErrorCode| {
        let reply = server.call("owner", tool, args).await;
        let error = expect_error(&reply, code);
        let message = error["message"].as_str().expect("a message").to_lowercase();
        let text = reply.text.to_lowercase().replace(reply.request_id().to_lowercase().as_str(), "");
        for leak in LEAKS {
            assert!(!message.contains(leak), "{code} message contains {leak:?}: {message}");
            assert!(!text.contains(leak), "{code} summary contains {leak:?}: {text}");
        }
    };
    let order = json!({ "restaurant_id": "rst_central", "order_id": "ord_c0001" });
    check("get_order", order, ErrorCode::InternalError).await;
    check("list_orders", json!({ "restaurant_id": "rst_central" }), ErrorCode::DependencyUnavailable).await;
}

fn temp_log() -> PathBuf {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("chataigne-it-{}-{nanos}.log", std::process::id()))
}

// SEC-1, IDEM-8: arguments, texts, queries, keys and tokens never reach the log.
#[tokio::test(flavor = "multi_thread")]
async fn canaries_sent_in_arguments_and_tokens_never_reach_the_log() {
    canaries_never_reach_the_log(None).await;
}

// SEC-1 at every level: with RUST_LOG=trace, rmcp would log whole messages (arguments, raw
// idempotency keys) and its warnings the `Host` it refused; only the server's own events pass.
#[tokio::test(flavor = "multi_thread")]
async fn canaries_never_reach_the_log_even_with_rust_log_trace() {
    canaries_never_reach_the_log(Some("trace")).await;
}

async fn canaries_never_reach_the_log(rust_log: Option<&str>) {
    let log = temp_log();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_chataigne-mock"));
    command
        .args(["--listen", "127.0.0.1:0", "--log-format", "json", "--log-file"])
        .arg(&log)
        .args(crate::support::defect_flags())
        .env_remove("RUST_LOG");
    if let Some(level) = rust_log {
        command.env("RUST_LOG", level);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let base = format!("http://{}", served_address(&log).await);
    let http = reqwest::Client::new();
    let post = async |token: &str, tool: &str, arguments: Value| {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        });
        let response = http
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", crate::support::PROTOCOL_VERSION)
            .header("authorization", format!("Bearer {token}"))
            .json(&body)
            .send()
            .await
            .expect("the binary answers");
        let status = response.status().as_u16();
        let request_id =
            response.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        (status, request_id.expect("x-request-id"))
    };
    let owner = crate::support::token("owner");
    let canaries = [
        "CANARYtext0a1b",
        "CANARYquery2c3d",
        "CANARYkey4e5f6g7h",
        "CANARYname8i9j",
        "CANARYtoken0k1l",
        "CANARYbadtext2m",
        "CANARYcursor3n",
        "CANARYinstr4o",
    ];
    let [text, query, idem, name, bad_token, bad_text, cursor, instruction] = canaries;
    let mut request_ids = Vec::new();
    let calls = [
        (
            owner.clone(),
            "send_message",
            json!({
                "restaurant_id": "rst_central", "conversation_id": "cnv_c01",
                "text": text, "idempotency_key": idem,
            }),
        ),
        (
            owner.clone(),
            "send_message",
            json!({
                "restaurant_id": "rst_central", "conversation_id": "cnv_c01",
                "text": bad_text, "idempotency_key": idem,
            }),
        ),
        (owner.clone(), "search_transcripts", json!({ "restaurant_id": "rst_central", "query": query })),
        (
            owner.clone(),
            "create_organization",
            json!({ "name": name, "idempotency_key": format!("{idem}-org") }),
        ),
        (
            owner.clone(),
            "create_instruction",
            json!({ "restaurant_id": "rst_central", "text": instruction, "idempotency_key": "short" }),
        ),
        (owner.clone(), "list_orders", json!({ "restaurant_id": "rst_central", "cursor": cursor })),
        (
            owner.clone(),
            "get_order",
            json!({ "restaurant_id": "rst_central", "order_id": "ord_CANARYorder5p" }),
        ),
    ];
    for (token, tool, arguments) in calls {
        let (status, request_id) = post(&token, tool, arguments).await;
        assert_eq!(status, 200, "{tool}");
        request_ids.push(request_id);
    }
    // Resources and prompts carry values too: a URI (a restaurant's read is a get_restaurant
    // call, logged by its request_id) and prompt arguments, well-formed or not.
    let rpc = async |method: &str, params: Value| {
        let body = json!({ "jsonrpc": "2.0", "id": 2, "method": method, "params": params });
        let response = http
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", crate::support::PROTOCOL_VERSION)
            .header("authorization", format!("Bearer {owner}"))
            .json(&body)
            .send()
            .await
            .expect("the binary answers");
        assert_eq!(response.status(), 200, "{method}");
        response.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    let read = rpc("resources/read", json!({ "uri": "chataigne://restaurants/rst_CANARYres6s" })).await;
    request_ids.push(read.expect("x-request-id"));
    rpc("resources/read", json!({ "uri": "test://CANARYuri7t" })).await;
    let good = json!({ "restaurant_id": "rst_CANARYprompt8u", "conversation_id": "cnv_CANARYconv9v" });
    rpc("prompts/get", json!({ "name": "answer_a_guest", "arguments": good })).await;
    let bad = json!({ "restaurant_id": "CANARYbadarg0w" });
    rpc("prompts/get", json!({ "name": "work_the_order_queue", "arguments": bad })).await;
    let (status, _) = post(&format!("dev-token-{bad_token}"), "get_restaurant", json!({})).await;
    assert_eq!(status, 401);
    // A refused Host is a value from the request too.
    let refused = http
        .post(format!("{base}/mcp"))
        .header("host", "canaryhost6r.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {owner}"))
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .expect("the binary answers");
    assert_eq!(refused.status(), 403);
    // Let the writer flush, then stop the binary.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = child.kill().await;
    let text = std::fs::read_to_string(&log).expect("the log file");
    let _ = std::fs::remove_file(&log);
    // The log is the one of these calls: each request_id has its line.
    for id in &request_ids {
        assert!(text.contains(id.as_str()), "the log records call {id}:\n{text}");
    }
    let lowered = text.to_lowercase();
    let more = ["CANARYorder5p", "dev-token-owner", "canaryhost6r", "CANARYres6s", "CANARYuri7t"];
    let more = more.iter().chain(&["CANARYprompt8u", "CANARYconv9v", "CANARYbadarg0w"]);
    for canary in canaries.iter().chain(more) {
        assert!(!lowered.contains(&canary.to_lowercase()), "the log contains {canary}:\n{text}");
    }
}
