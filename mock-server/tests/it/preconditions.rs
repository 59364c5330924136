//! Optimistic preconditions (PRE-1..4): `expected_status` required and compared, the order
//! lifecycle, and racing writers of which exactly one wins.

use chataigne_contract::ErrorCode;
use serde_json::{Value, json};

use crate::support::{Server, code_of, concurrently, expect_error, expect_ok, order_in, start};

fn update(order_id: &str, status: &str, expected: Option<&str>) -> Value {
    let mut args = json!({ "restaurant_id": "rst_central", "order_id": order_id, "status": status });
    if let Some(expected) = expected {
        args["expected_status"] = json!(expected);
    }
    args
}

fn set_status(status: &str, expected: Option<&str>) -> Value {
    let mut args = json!({ "restaurant_id": "rst_central", "status": status });
    if let Some(expected) = expected {
        args["expected_status"] = json!(expected);
    }
    args
}

async fn order(server: &Server, order_id: &str) -> Value {
    let reply = server
        .call("owner", "get_order", json!({ "restaurant_id": "rst_central", "order_id": order_id }))
        .await;
    expect_ok(&reply)["order"].clone()
}

async fn restaurant(server: &Server) -> Value {
    let reply = server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await;
    expect_ok(&reply)["restaurant"].clone()
}

// PRE-1
#[tokio::test(flavor = "multi_thread")]
async fn a_state_change_without_expected_status_is_invalid() {
    let server = start().await;
    let received = &order_in("rst_central", "received").id;
    let before = order(&server, received).await;
    let reply = server.call("staff", "update_order_status", update(received, "accepted", None)).await;
    expect_error(&reply, ErrorCode::InvalidArguments);
    let reply = server.call("manager", "set_restaurant_status", set_status("paused", None)).await;
    expect_error(&reply, ErrorCode::InvalidArguments);
    let reply =
        server.call("staff", "update_order_status", update(received, "accepted", Some("unknown"))).await;
    expect_error(&reply, ErrorCode::InvalidArguments);
    assert_eq!(order(&server, received).await, before);
    assert_eq!(restaurant(&server).await["status"], "open");
}

// PRE-2
#[tokio::test(flavor = "multi_thread")]
async fn a_stale_expected_status_is_a_mismatch_and_changes_nothing() {
    let server = start().await;
    let received = &order_in("rst_central", "received").id;
    let before = order(&server, received).await;
    for stale in ["accepted", "preparing", "completed", "cancelled"] {
        let reply =
            server.call("staff", "update_order_status", update(received, "accepted", Some(stale))).await;
        let error = expect_error(&reply, ErrorCode::ExpectedStateMismatch);
        assert_eq!(error["category"], "conflict");
        assert_eq!(error["retryable"], false);
    }
    assert_eq!(order(&server, received).await, before, "state and updated_at unchanged");
    let before = restaurant(&server).await;
    let reply = server.call("manager", "set_restaurant_status", set_status("paused", Some("paused"))).await;
    expect_error(&reply, ErrorCode::ExpectedStateMismatch);
    assert_eq!(restaurant(&server).await, before);
    // With the observed value, the same writes go through.
    let reply =
        server.call("staff", "update_order_status", update(received, "accepted", Some("received"))).await;
    let updated = expect_ok(&reply)["order"].clone();
    assert_eq!(updated["status"], "accepted");
    assert_eq!(order(&server, received).await, updated);
    let reply = server.call("manager", "set_restaurant_status", set_status("paused", Some("open"))).await;
    assert_eq!(expect_ok(&reply)["restaurant"]["status"], "paused");
    assert_eq!(restaurant(&server).await["status"], "paused");
    // The same state through the resources surface (its read is get_restaurant's call).
    let read = json!({ "jsonrpc": "2.0", "id": 7, "method": "resources/read",
        "params": { "uri": "chataigne://restaurants/rst_central" } });
    let answer = server.rpc("owner", &read).await;
    let text = answer.json["result"]["contents"][0]["text"].as_str().unwrap_or_default();
    let envelope: Value = serde_json::from_str(text).unwrap_or_default();
    assert_eq!(envelope["data"]["restaurant"]["status"], "paused", "{}", answer.text);
}

// PRE-3
#[tokio::test(flavor = "multi_thread")]
async fn the_lifecycle_moves_one_step_forward_only() {
    let server = start().await;
    let check = async |from: &str, to: &str, ok: bool| {
        let id = &order_in("rst_central", from).id;
        let before = order(&server, id).await;
        let reply = server.call("owner", "update_order_status", update(id, to, Some(from))).await;
        if ok {
            assert_eq!(expect_ok(&reply)["order"]["status"], to, "{from} → {to}");
            assert_eq!(order(&server, id).await["status"], to, "{from} → {to}");
            server.reset().await;
        } else {
            assert_eq!(
                code_of(&reply),
                Some(ErrorCode::OrderStatusPreconditionFailed),
                "{from} → {to}: {}",
                reply.body
            );
            assert_eq!(order(&server, id).await, before, "{from} → {to} changed nothing");
        }
    };
    check("received", "accepted", true).await;
    check("accepted", "preparing", true).await;
    check("preparing", "ready", true).await;
    check("ready", "completed", true).await;
    check("completed", "accepted", false).await;
    check("received", "preparing", false).await;
    check("received", "completed", false).await;
    check("ready", "preparing", false).await;
    check("accepted", "accepted", false).await;
    check("cancelled", "accepted", false).await;
    check("rejected", "accepted", false).await;
}

// PRE-4
#[tokio::test(flavor = "multi_thread")]
async fn racing_order_updates_from_one_observed_state_have_exactly_one_winner() {
    let server = start().await;
    // Every racer passes the precondition check before any effect: the store decides.
    server.fault(json!({ "tool": "update_order_status", "latency_ms": 300 })).await;
    let id = order_in("rst_central", "received").id.clone();
    let personas = ["owner", "manager", "staff"];
    let replies = concurrently(64, 64, |i| {
        let (server, id) = (&server, &id);
        async move {
            server
                .call(personas[i % 3], "update_order_status", update(id, "accepted", Some("received")))
                .await
        }
    })
    .await;
    let winners: Vec<_> = replies.iter().filter(|r| !r.is_error).collect();
    assert_eq!(winners.len(), 1, "exactly one winner");
    for reply in replies.iter().filter(|r| r.is_error) {
        let code = code_of(reply);
        assert!(
            matches!(code, Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)),
            "a loser gets a conflict code: {}",
            reply.body
        );
    }
    assert_eq!(order(&server, &id).await, expect_ok(winners[0])["order"], "the final state is the winner's");
}

// PRE-4
#[tokio::test(flavor = "multi_thread")]
async fn racing_restaurant_status_changes_have_exactly_one_winner() {
    let server = start().await;
    server.fault(json!({ "tool": "set_restaurant_status", "latency_ms": 300 })).await;
    let personas = ["owner", "manager"];
    let replies = concurrently(64, 64, |i| {
        let server = &server;
        async move {
            server.call(personas[i % 2], "set_restaurant_status", set_status("paused", Some("open"))).await
        }
    })
    .await;
    let winners: Vec<_> = replies.iter().filter(|r| !r.is_error).collect();
    assert_eq!(winners.len(), 1, "exactly one winner");
    for reply in replies.iter().filter(|r| r.is_error) {
        let code = code_of(reply);
        assert!(
            matches!(code, Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)),
            "{}",
            reply.body
        );
    }
    assert_eq!(restaurant(&server).await, expect_ok(winners[0])["restaurant"]);
}
