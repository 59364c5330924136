//! The faults of PRE: preconditions (expected_status, transitions, races).

use super::*;

impl Proxy {
    /// Request-side rewrites of this area's faults (`Proxy::before`).
    pub(crate) async fn before_preconditions(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        match self.fault {
            Pre1ExpectedOptional | Pre2Ignored
                if matches!(t, "update_order_status" | "set_restaurant_status")
                    && (self.fault == Pre2Ignored) == call.has_arg("expected_status") =>
            {
                if let Some(current) = self.current_status(call).await {
                    call.set_args(|a| {
                        a.insert("expected_status".into(), json!(current));
                    });
                }
            }
            Pre4LastWriterWins | Pre4LoserInternal if t == "update_order_status" => {
                let mut m = lock(&self.memory);
                m.serial += 1;
                let entry = (
                    call.arg_str("order_id").unwrap_or_default(),
                    call.arg_str("expected_status").unwrap_or_default(),
                    Instant::now(),
                    m.serial,
                );
                m.writes.retain(|w| w.2.elapsed() < Duration::from_secs(10));
                m.writes.push(entry);
                let serial = m.serial;
                drop(m);
                // The serial rides along in a header the server ignores, so `after` knows which
                // write this was.
                call.headers.insert("x-fault-serial", HeaderValue::from(serial));
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_preconditions(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let code = a.code();
        match self.fault {
            Pre1MissingAsConflict
                if code == Some(ErrorCode::InvalidArguments)
                    && matches!(t, "update_order_status" | "set_restaurant_status")
                    && !call.has_arg("expected_status") =>
            {
                a.recode(ErrorCode::ExpectedStateMismatch);
            }
            Pre2RefusedButApplied
                if matches!(
                    code,
                    Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)
                ) =>
            {
                if let Some(current) = self.current_status(call).await {
                    let forced = call.with_args(|x| {
                        x.insert("expected_status".into(), json!(current));
                    });
                    let _ = self.forward(&forced).await;
                }
            }
            Pre3ForbiddenAcked | Pre3AsMismatch
                if code == Some(ErrorCode::OrderStatusPreconditionFailed) && t == "update_order_status" =>
            {
                let current = self.current_status(call).await;
                if current.is_some() && current == call.arg_str("expected_status") {
                    if self.fault == Pre3AsMismatch {
                        a.recode(ErrorCode::ExpectedStateMismatch);
                    } else if let Some(ok) = self.acknowledge(call).await {
                        *a = ok;
                    }
                }
            }
            Pre4LastWriterWins | Pre4LoserInternal
                if t == "update_order_status"
                    && matches!(
                        code,
                        Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)
                    )
                    && self.raced(call) =>
            {
                if self.fault == Pre4LoserInternal {
                    a.recode(ErrorCode::InternalError);
                } else if let Some(ok) = self.acknowledge(call).await {
                    *a = ok;
                }
            }
            _ => {}
        }
    }

    /// Was `call` (an update_order_status refused as a conflict) one side of a race: another
    /// write of the same order from the same observed state, a moment ago?
    pub(crate) fn raced(&self, call: &Call) -> bool {
        let serial: u64 = call
            .headers
            .get("x-fault-serial")
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let order = call.arg_str("order_id").unwrap_or_default();
        let expected = call.arg_str("expected_status").unwrap_or_default();
        lock(&self.memory).writes.iter().any(|w| {
            w.0 == order && w.1 == expected && w.3 != serial && w.2.elapsed() < Duration::from_secs(3)
        })
    }

    /// A success for an update_order_status the server refused: the order as read, with the
    /// status asked for (nothing changed).
    pub(crate) async fn acknowledge(&self, call: &Call) -> Option<Answer> {
        let args = json!({ "restaurant_id": call.arg("restaurant_id")?, "order_id": call.arg("order_id")? });
        let read = self.forward(&tool_call(call, "get_order", args)).await;
        let mut order = read.result()?.get("structuredContent")?.get("data")?.get("order")?.clone();
        order["status"] = call.arg("status")?;
        let summary = format!("Order {}: {}", order["id"].as_str().unwrap_or_default(), order["status"]);
        Some(Answer::rpc(call, "result", success_result(json!({ "order": order }), fresh_meta(), &summary)))
    }
}
