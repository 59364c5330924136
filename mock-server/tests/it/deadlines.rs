//! Deadlines (LIM-4): a read past its deadline times out; a write past its deadline has an unknown
//! outcome, which a read settles and a retry with the same key replays. Deadlines are shortened and
//! latency injected through the control API; no duration is asserted.

use std::time::Duration;

use chataigne_contract::ErrorCode;
use serde_json::{Value, json};

use crate::support::{Reply, Server, code_of, dataset, expect_error, expect_ok, key, order_in, start};

/// Deadlines short enough to pass in a test, long enough for a call without injected latency.
const DEADLINE_MS: u64 = 300;
/// Injected latency, well past [`DEADLINE_MS`].
const LATE_MS: u64 = 1000;

async fn short_deadlines(server: &Server) {
    server.control("/deadlines", json!({ "read_ms": DEADLINE_MS, "write_ms": DEADLINE_MS })).await;
}

/// Calls until the answer is not MCP_OPERATION_IN_PROGRESS (the first call may still run).
async fn settled(server: &Server, persona: &str, tool: &str, args: Value) -> Reply {
    for _ in 0..100 {
        let reply = server.call(persona, tool, args.clone()).await;
        if code_of(&reply) != Some(ErrorCode::OperationInProgress) {
            return reply;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{tool} still in progress after 100 tries");
}

// LIM-4
#[tokio::test(flavor = "multi_thread")]
async fn a_read_past_its_deadline_is_a_tool_timeout() {
    let server = start().await;
    short_deadlines(&server).await;
    server.fault(json!({ "tool": "get_order", "latency_ms": LATE_MS })).await;
    let args = json!({ "restaurant_id": "rst_central", "order_id": "ord_c0001" });
    let reply = server.call("owner", "get_order", args.clone()).await;
    let error = expect_error(&reply, ErrorCode::ToolTimeout);
    assert_eq!(error["category"], "timeout");
    assert_eq!(error["retryable"], true);
    // Other reads are not slowed; once the latency is gone the same read answers.
    expect_ok(&server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await);
    server.fault(json!({ "tool": "get_order" })).await;
    expect_ok(&server.call("owner", "get_order", args).await);
}

// LIM-4: analytics has its own, longer deadline.
#[tokio::test(flavor = "multi_thread")]
async fn analytics_is_held_to_its_own_deadline() {
    let server = start().await;
    short_deadlines(&server).await;
    server.fault(json!({ "tool": "get_analytics", "latency_ms": DEADLINE_MS + 200 })).await;
    let args = json!({
        "restaurant_id": "rst_central", "metrics": ["orders_count"], "from": "2026-11-01", "to": "2026-11-30",
    });
    expect_ok(&server.call("viewer", "get_analytics", args.clone()).await);
    server.control("/deadlines", json!({ "analytics_ms": DEADLINE_MS })).await;
    expect_error(&server.call("viewer", "get_analytics", args).await, ErrorCode::ToolTimeout);
}

// LIM-4
#[tokio::test(flavor = "multi_thread")]
async fn a_write_past_its_deadline_has_an_unknown_outcome_that_a_read_and_a_retry_settle() {
    let server = start().await;
    short_deadlines(&server).await;
    server.fault(json!({ "tool": "send_message", "latency_ms": LATE_MS })).await;
    let text = "Late but safe";
    let args = json!({
        "restaurant_id": "rst_central", "conversation_id": "cnv_c02",
        "text": text, "idempotency_key": key("late"),
    });
    let reply = server.call("staff", "send_message", args.clone()).await;
    let error = expect_error(&reply, ErrorCode::OutcomeUnknown);
    assert_eq!(error["category"], "timeout");
    assert_eq!(error["retryable"], false);
    // The effect finishes on its own; a read tells.
    let mut found = Vec::new();
    for _ in 0..100 {
        let conversation =
            json!({ "restaurant_id": "rst_central", "conversation_id": "cnv_c02", "message_limit": 100 });
        let reply = server.call("staff", "get_conversation", conversation).await;
        found = reply.items("messages").iter().filter(|m| m["text"] == text).cloned().collect();
        if !found.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(found.len(), 1, "the message exists exactly once");
    // A retry with the same key is safe: it replays that very message.
    let retry = settled(&server, "staff", "send_message", args).await;
    assert_eq!(retry.meta()["replayed"], true, "{}", retry.body);
    assert_eq!(expect_ok(&retry)["message"], found[0]);
    let before = dataset().messages.iter().filter(|m| m.conversation_id == "cnv_c02").count() as u64;
    assert_eq!(server.message_count("rst_central", "cnv_c02").await, before + 1);
}

// LIM-4: the effect applied, the answer late: the state shows it.
#[tokio::test(flavor = "multi_thread")]
async fn a_state_change_answered_late_is_outcome_unknown_and_applied() {
    let server = start().await;
    short_deadlines(&server).await;
    server.fault(json!({ "tool": "update_order_status", "delay_after_effect_ms": LATE_MS })).await;
    let id = &order_in("rst_central", "received").id;
    let args = json!({
        "restaurant_id": "rst_central", "order_id": id, "status": "accepted", "expected_status": "received",
    });
    expect_error(&server.call("staff", "update_order_status", args.clone()).await, ErrorCode::OutcomeUnknown);
    let read = json!({ "restaurant_id": "rst_central", "order_id": id });
    assert_eq!(expect_ok(&server.call("staff", "get_order", read).await)["order"]["status"], "accepted");
    // Retrying blindly is refused: the observed state is stale.
    let retry = server.call("staff", "update_order_status", args).await;
    expect_error(&retry, ErrorCode::ExpectedStateMismatch);
}
