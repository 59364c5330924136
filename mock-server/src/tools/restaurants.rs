//! Restaurants: listing what the caller can access, one restaurant, opening or pausing it
//! (with `expected_status`), and creating one in an organization the caller owns.

use chataigne_contract::ErrorCode;
use chataigne_contract::dataset::Restaurant;
use serde_json::json;

use super::{Call, Output, in_order, page_output, start, take_page, to_json};
use crate::error::ToolError;
use crate::state::store::{Change, Planned};

pub fn list(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let user = call.principal.user_id.as_str();
    let (org, status) = (call.str("organization_id"), call.str("status"));
    let from = start(call)?;
    let items = in_order(call, Some(&data.restaurants), &from)
        .filter(|(_, r)| org.is_none_or(|o| r.organization_id == o))
        .filter(|(_, r)| status.is_none_or(|s| r.status == s))
        .filter(|(_, r)| call.app.defects.role_for_restaurant(&data, user, &r.id).is_some())
        .filter(|(_, r)| !call.app.defects.deleted(&r.id))
        .map(|(k, r)| (k.clone(), to_json(r)));
    let page = take_page(call, items, super::limit(call))?;
    Ok(page_output(call, "restaurants", page, "restaurants"))
}

pub fn get(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let r = data.restaurant(call.restaurant_id()?).ok_or(ErrorCode::ResourceForbidden)?;
    if call.app.defects.deleted(&r.id) {
        return Err(ErrorCode::ResourceForbidden.into());
    }
    super::single(call, "restaurant", to_json(r), format!("Restaurant {} ({}), {}", r.id, r.name, r.status))
}

pub fn check_status(call: &Call) -> Result<(), ToolError> {
    let data = call.app.store.read();
    let r = data.restaurant(call.restaurant_id()?).ok_or(ErrorCode::ResourceForbidden)?;
    let expected = call.str("expected_status");
    if Some(r.status.as_str()) != expected
        && !call.app.defects.ignores_expected_status()
        && !expected.is_some_and(|e| call.app.defects.waives_expected_status(e, &r.status, None))
    {
        return Err(ErrorCode::ExpectedStateMismatch.into());
    }
    Ok(())
}

pub async fn set_status(call: &Call) -> Result<Output, ToolError> {
    let (expected, status) = (call.req("expected_status")?, call.req("status")?);
    let rid = call.restaurant_id()?;
    super::commit(call, |data| {
        let r = data.restaurant(rid).ok_or(ErrorCode::ResourceForbidden)?;
        // Compare-and-set: another operator may have changed it since the check (PRE-4).
        if r.status != expected
            && !call.app.defects.no_compare_and_set()
            && !call.app.defects.waives_expected_status(expected, &r.status, None)
        {
            return Err(ErrorCode::OrderStatusPreconditionFailed.into());
        }
        let r = Restaurant { status: status.to_owned(), ..r.clone() };
        let change = Change::RestaurantStatus { restaurant_id: r.id.clone(), status: r.status.clone() };
        let summary = format!("Restaurant {} is now {}", r.id, r.status);
        Ok(Planned { change, output: Output::new(json!({ "restaurant": r }), summary) })
    })
    .await
}

pub async fn create(call: &Call) -> Result<Output, ToolError> {
    let r = Restaurant {
        id: super::new_id("rst"),
        organization_id: call.req("organization_id")?.to_owned(),
        name: call.req("name")?.to_owned(),
        status: "open".into(),
        timezone: call.req("timezone")?.to_owned(),
        created_at: call.app.clock.now_timestamp(),
    };
    super::commit(call, |data| {
        call.app.defects.replace_namesakes(data, &r.organization_id, &r.name);
        let output = Output::new(json!({ "restaurant": r }), format!("Created restaurant {}", r.id));
        Ok(Planned { change: Change::Restaurant { restaurant: r.clone() }, output })
    })
    .await
}
