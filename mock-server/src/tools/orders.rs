//! Orders: keyset listing with filters (created_at desc, then id desc: the reference's order), one
//! order, and the status lifecycle received → accepted → preparing → ready → completed, one step
//! at a time (PRE-3).

use chataigne_contract::tools::ORDER_LIFECYCLE;
use chataigne_contract::{ErrorCode, time};
use serde_json::{Value, json};

use super::{Call, Output, in_order, page_output, start, take_page, to_json};
use crate::error::ToolError;
use crate::state::store::{Change, OrderRef, Planned};

pub fn validate(args: &Value) -> Result<(), ToolError> {
    let ts = |name| args.get(name).and_then(Value::as_str).map(time::parse_timestamp);
    match (ts("created_from"), ts("created_to")) {
        (Some(None), _) | (_, Some(None)) => {
            Err(ToolError::invalid("/created_from or /created_to is not a real instant"))
        }
        (Some(Some(from)), Some(Some(to))) if to < from => {
            Err(ToolError::invalid("/created_to is before /created_from"))
        }
        _ => Ok(()),
    }
}

pub fn list(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let rid = call.restaurant_id()?;
    let statuses: Option<Vec<&str>> = call
        .args
        .get("status")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect());
    let channel = call.app.defects.channel_filter(call.str("channel"));
    let (from_ts, to_ts) = (call.str("created_from"), call.str("created_to"));
    let from = call.app.defects.window_page_start(from_ts.is_some() || to_ts.is_some(), start(call)?);
    let per_status = (call.app.defects)
        .per_status_page(call.args.get("limit").is_some(), statuses.as_ref().map_or(0, Vec::len));
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let items = in_order(call, data.orders.get(rid), &from)
        .filter(|(_, o)| statuses.as_ref().is_none_or(|s| s.contains(&&*o.status)))
        .filter(|(_, o)| channel.is_none_or(|c| *o.channel == *c))
        // Fixed-width UTC timestamps compare as strings; the key holds `created_at`.
        .filter(|(k, _)| from_ts.is_none_or(|f| k.0.as_str() >= f))
        .filter(|(k, _)| to_ts.is_none_or(|t| k.0.as_str() <= t))
        // `default-per-status` only: each status's own default page.
        .filter(|(_, o)| {
            per_status.is_none_or(|(per, _)| {
                let n = seen.entry(o.status.to_string()).or_default();
                *n += 1;
                *n <= per
            })
        })
        .map(|(key, row)| (key.clone(), to_json(&OrderRef { restaurant_id: rid, key, row })));
    let limit = per_status.map_or_else(|| super::limit(call), |(_, all)| all);
    let page = take_page(call, items, limit)?;
    Ok(page_output(call, "orders", page, &format!("orders of {rid}")))
}

pub fn get(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let o = call
        .app
        .defects
        .order(&data, call.restaurant_id()?, call.req("order_id")?)
        .ok_or(ErrorCode::ResourceNotFound)?;
    let summary = format!("Order {}: {}, {} cents", o.id(), o.row.status, o.row.total_cents);
    let order = call.app.defects.order_read(o.id(), to_json(&o));
    Ok(call.app.variants.order_output(super::single(call, "order", order, summary)?))
}

/// One step forward; any forward move with the `lifecycle-skip-forward` variant.
fn allowed(from: &str, to: &str, skip_forward: bool) -> bool {
    let step = |s| ORDER_LIFECYCLE.iter().position(|x| *x == s);
    match (step(from), step(to)) {
        (Some(a), Some(b)) if skip_forward => b > a,
        (Some(a), Some(b)) => b == a + 1,
        _ => false,
    }
}

pub fn check_transition(call: &Call) -> Result<(), ToolError> {
    let data = call.app.store.read();
    let o = (call.app.defects)
        .order(&data, call.restaurant_id()?, call.req("order_id")?)
        .ok_or(ErrorCode::ResourceNotFound)?;
    let (expected, target) = (call.req("expected_status")?, call.req("status")?);
    let defects = &call.app.defects;
    if *o.row.status != *expected
        && !defects.ignores_expected_status()
        && !defects.waives_expected_status(expected, &o.row.status, Some(target))
    {
        return Err(ErrorCode::ExpectedStateMismatch.into());
    }
    if !allowed(&o.row.status, target, call.app.variants.skips_forward())
        && !defects.ignores_lifecycle(&o.row.status)
        && !defects.moves_to_current(&o.row.status, Some(target))
    {
        return Err(call.app.variants.forbidden_transition());
    }
    Ok(())
}

pub async fn update_status(call: &Call) -> Result<Output, ToolError> {
    let (expected, target) = (call.req("expected_status")?, call.req("status")?);
    let now = call.app.clock.now_timestamp();
    let defects = &call.app.defects;
    let (rid, oid) = (call.restaurant_id()?, call.req("order_id")?);
    let moved = super::commit(call, |data| {
        let owner = defects.order_owner(data, rid, oid).ok_or(ErrorCode::ResourceNotFound)?;
        let o = data.order(&owner, oid).ok_or(ErrorCode::ResourceNotFound)?;
        // Compare-and-set: the check passed, but another operator may have won since (PRE-4).
        if *o.row.status != *expected
            && !defects.no_compare_and_set()
            && !defects.waives_expected_status(expected, &o.row.status, Some(target))
        {
            return Err(ErrorCode::OrderStatusPreconditionFailed.into());
        }
        defects.order_updated(oid, &o.row.status);
        let mut order = to_json(&o);
        order["status"] = target.into();
        order["updated_at"] = now.as_str().into();
        let out = Output::new(json!({ "order": order }), format!("Order {oid} is now {target}"));
        let change = Change::OrderStatus {
            restaurant_id: owner,
            order_id: oid.to_owned(),
            status: target.to_owned(),
            updated_at: now.clone(),
        };
        Ok(Planned { change, output: call.app.variants.order_output(out) })
    })
    .await?;
    // `accept-takes-next` only: another received order accepted as well.
    let next = defects.next_received(&call.app.store.read(), rid, oid, target);
    if let Some(next) = next {
        let change = Change::OrderStatus {
            restaurant_id: rid.to_owned(),
            order_id: next,
            status: target.to_owned(),
            updated_at: now.clone(),
        };
        let planned = |_: &super::Data| {
            Ok::<_, ToolError>(Planned { change: change.clone(), output: Output::new(Value::Null, "") })
        };
        let _ = call.app.store.commit(None, planned).await;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    #[test]
    fn lifecycle_is_one_step_forward() {
        let check = |from, to, ok| assert_eq!(super::allowed(from, to, false), ok, "{from} → {to}");
        check("received", "accepted", true);
        check("accepted", "preparing", true);
        check("ready", "completed", true);
        check("received", "preparing", false);
        check("completed", "accepted", false);
        check("cancelled", "accepted", false);
        check("accepted", "accepted", false);
    }

    #[test]
    fn variants_lifecycle_skip_forward_allows_any_forward_move() {
        let check = |from, to, ok| assert_eq!(super::allowed(from, to, true), ok, "{from} → {to}");
        check("received", "accepted", true);
        check("received", "preparing", true);
        check("received", "completed", true);
        check("accepted", "completed", true);
        check("completed", "accepted", false);
        check("preparing", "received", false);
        check("accepted", "accepted", false);
        check("cancelled", "accepted", false);
        check("rejected", "completed", false);
    }
}
