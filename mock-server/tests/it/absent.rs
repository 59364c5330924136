//! Deliberately absent operations (ABS-1, ABS-2): no tool for them, and no way around through the
//! tools that exist.

use chataigne_contract::ErrorCode;
use serde_json::json;

use crate::support::{expect_error, expect_ok, order_in, start};

// ABS-1
#[tokio::test(flavor = "multi_thread")]
async fn no_tool_is_named_after_an_absent_operation() {
    let server = start().await;
    let forbidden = [
        "cancel",
        "refund",
        "delete",
        "remove",
        "export",
        "payment",
        "capture",
        "campaign",
        "credential",
        "secret",
        "sync",
        "onboard",
        "admin",
        "reject",
    ];
    let tools = server.tools_list("owner").await;
    assert_eq!(tools.len(), 17);
    for tool in &tools {
        let text = format!("{} {}", tool["name"], tool["title"]).to_lowercase();
        for word in forbidden {
            assert!(!text.contains(word), "{text} names `{word}`");
        }
    }
    // Calling one anyway is an unknown tool.
    for name in ["cancel_order", "refund_order", "delete_restaurant", "export_orders", "capture_payment"] {
        let reply = server.call("owner", name, json!({ "restaurant_id": "rst_central" })).await;
        assert_eq!(reply.rpc_error(), Some(-32602), "{name}");
    }
}

// ABS-2
#[tokio::test(flavor = "multi_thread")]
async fn update_order_status_refuses_cancelled_and_rejected() {
    let server = start().await;
    let check = async |from: &str, target: &str| {
        let id = &order_in("rst_central", from).id;
        let args = json!({
            "restaurant_id": "rst_central", "order_id": id, "status": target, "expected_status": from,
        });
        expect_error(&server.call("owner", "update_order_status", args).await, ErrorCode::InvalidArguments);
        let read = json!({ "restaurant_id": "rst_central", "order_id": id });
        assert_eq!(
            expect_ok(&server.call("owner", "get_order", read).await)["order"]["status"],
            from,
            "{from}"
        );
    };
    for target in ["cancelled", "rejected", "CANCELLED", "refunded", "deleted", "received"] {
        check("received", target).await;
        check("accepted", target).await;
    }
    let paused = json!({ "restaurant_id": "rst_central", "status": "closed", "expected_status": "open" });
    expect_error(&server.call("owner", "set_restaurant_status", paused).await, ErrorCode::InvalidArguments);
    let schema = chataigne_contract::ToolName::UpdateOrderStatus.input_schema();
    let targets = &schema["properties"]["status"]["enum"];
    assert_eq!(targets, &json!(["accepted", "preparing", "ready", "completed"]), "the published targets");
}
