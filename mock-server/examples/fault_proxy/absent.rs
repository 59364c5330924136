//! The faults of ABS: what the server must not offer or acknowledge.

use super::*;

impl Proxy {
    /// Request-side rewrites of this area's faults (`Proxy::before`).
    pub(crate) async fn before_absent(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        match self.fault {
            Abs2CancelAcked
                if t == "update_order_status"
                    && matches!(call.arg_str("status").as_deref(), Some("cancelled" | "rejected")) =>
            {
                let args =
                    json!({ "restaurant_id": call.arg("restaurant_id")?, "order_id": call.arg("order_id")? });
                let read = self.forward(&tool_call(call, "get_order", args)).await;
                let mut order = read.result()?.get("structuredContent")?.get("data")?.get("order")?.clone();
                order["status"] = call.arg("status")?;
                let summary =
                    format!("Order {}: {}", order["id"].as_str().unwrap_or_default(), order["status"]);
                let result = success_result(json!({ "order": order }), fresh_meta(), &summary);
                return Some(Answer::rpc(call, "result", result));
            }
            _ => {}
        }
        None
    }
}
