//! State changes guarded by `expected_status` (PRE-1..4, ABS-2, AUTH-6, LIM-4): moving orders,
//! opening and pausing restaurants, and reading back what the state became. Orders are picked
//! from the server's current state, so a rerun on a staging server finds a fitting one, and
//! claimed, so scenarios running side by side never pick the same one. A scenario that writes
//! marks the World dirty: if it also changed the whole server, the after hook resets it.

use anyhow::anyhow;
use chataigne_contract::ErrorCode;
use cucumber::{then, when};
use serde_json::{Value, json};

use crate::steps::params::{Snake, Target};
use crate::world::{Concurrent, ConformanceWorld};

/// An order of `restaurant` currently in `status` on the server that no other scenario of the run
/// picked (scenarios run side by side); remembered as "the order".
pub(super) async fn order_in_status(
    w: &mut ConformanceWorld,
    restaurant: &str,
    status: &str,
) -> anyhow::Result<String> {
    let args = json!({ "restaurant_id": restaurant, "status": [status], "limit": 50 });
    w.call_tool("list_orders", args).await?;
    let success = w.success()?;
    let orders =
        w.field(&success.data, "/orders")?.as_array().cloned().ok_or_else(|| w.blocked("/orders"))?;
    if orders.is_empty() {
        return Err(w.fail(
            format!("an order of {restaurant} in status {status}"),
            "none left: the dataset is used up, re-seed fixtures/dataset.json",
        ));
    }
    let claims = w.claims.clone();
    let mut picked = None;
    for order in &orders {
        let id = w
            .field(order, "/id")
            .map_err(|_| w.blocked("/orders/0/id"))?
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if claims.as_ref().is_none_or(|c| c.claim(&id)) {
            picked = Some(id);
            break;
        }
    }
    let Some(id) = picked else {
        return Err(w.fail(
            format!("an order of {restaurant} in status {status} that no other scenario picked"),
            format!("all {} on the first page taken: re-seed fixtures/dataset.json", orders.len()),
        ));
    };
    w.saved.insert("order".to_owned(), id.clone());
    w.saved.insert("restaurant".to_owned(), restaurant.to_owned());
    Ok(id)
}

async fn update(
    w: &mut ConformanceWorld,
    restaurant: &str,
    order: &str,
    to: &str,
    saw: Option<&str>,
) -> anyhow::Result<()> {
    let mut args = json!({ "restaurant_id": restaurant, "order_id": order, "status": to });
    if let Some(saw) = saw {
        args["expected_status"] = json!(saw);
    }
    w.dirty = true;
    w.call_tool("update_order_status", args).await.map(drop)
}

#[when(expr = "they ask to move an order of {target} from {snake} to {snake}")]
async fn move_order(w: &mut ConformanceWorld, target: Target, from: Snake, to: Snake) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let order = order_in_status(w, &restaurant, &from).await?;
    update(w, &restaurant, &order, &to, Some(&from)).await
}

/// PRE-2 right after a move: the state the last answer showed is the one to name.
#[when(expr = "they move the same order on from {snake} to {snake}")]
async fn move_on(w: &mut ConformanceWorld, from: Snake, to: Snake) -> anyhow::Result<()> {
    let saved = |key: &str| w.saved.get(key).cloned().ok_or_else(|| anyhow::anyhow!("no order moved yet"));
    let (restaurant, order) = (saved("restaurant")?, saved("order")?);
    update(w, &restaurant, &order, &to, Some(&from)).await
}

/// AUTH-5 on a write: an order of one restaurant moved through another.
#[when(expr = "they ask {target} to move an order of {target} from {snake} to {snake}")]
async fn move_through(
    w: &mut ConformanceWorld,
    through: Target,
    target: Target,
    from: Snake,
    to: Snake,
) -> anyhow::Result<()> {
    let owner = w.landmark(&target)?;
    let order = order_in_status(w, &owner, &from).await?;
    let through = w.landmark(&through)?;
    update(w, &through, &order, &to, Some(&from)).await
}

/// PRE-2: the caller's view is stale.
#[when(
    expr = "they ask to move an order of {target} in status {snake} to {snake}, saying they saw it {snake}"
)]
async fn move_stale(
    w: &mut ConformanceWorld,
    target: Target,
    status: Snake,
    to: Snake,
    saw: Snake,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let order = order_in_status(w, &restaurant, &status).await?;
    update(w, &restaurant, &order, &to, Some(&saw)).await
}

/// PRE-1: no `expected_status` at all.
#[when(expr = "they ask to move an order of {target} from {snake} to {snake} without saying what they saw")]
async fn move_blind(w: &mut ConformanceWorld, target: Target, from: Snake, to: Snake) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let order = order_in_status(w, &restaurant, &from).await?;
    update(w, &restaurant, &order, &to, None).await
}

async fn set_status(w: &mut ConformanceWorld, target: &str, status: &str, blind: bool) -> anyhow::Result<()> {
    let restaurant = w.landmark(target)?;
    let observed = w
        .dataset()
        .restaurants
        .iter()
        .find(|r| r.id == restaurant)
        .map(|r| r.status.clone())
        .ok_or_else(|| anyhow!("{restaurant} is not a restaurant of the dataset"))?;
    let mut args = json!({ "restaurant_id": restaurant, "status": status });
    if !blind {
        args["expected_status"] = json!(observed);
    }
    w.dirty = true;
    w.call_tool("set_restaurant_status", args).await.map(drop)
}

/// `set_restaurant_status` with the status the dataset gives as the observed one.
#[when(expr = "they ask to set {target} to {snake}")]
async fn set_restaurant(w: &mut ConformanceWorld, target: Target, status: Snake) -> anyhow::Result<()> {
    set_status(w, &target, &status, false).await
}

#[when(expr = "they ask to set {target} to {snake} without saying what they saw")]
async fn set_restaurant_blind(w: &mut ConformanceWorld, target: Target, status: Snake) -> anyhow::Result<()> {
    set_status(w, &target, &status, true).await
}

/// PRE-4: two personas move the same order from the same observed state at the same time.
#[when(expr = "{snake} and {snake} both move the same {snake} order of {target} to {snake} at once")]
async fn race(
    w: &mut ConformanceWorld,
    a: Snake,
    b: Snake,
    from: Snake,
    target: Target,
    to: Snake,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let order = order_in_status(w, &restaurant, &from).await?;
    let args =
        json!({ "restaurant_id": restaurant, "order_id": order, "status": to, "expected_status": from });
    w.dirty = true;
    let calls = [a, b]
        .into_iter()
        .map(|persona| Concurrent {
            persona: persona.into(),
            tool: "update_order_status".to_owned(),
            args: args.clone(),
            delay_ms: 0,
        })
        .collect();
    w.concurrently(calls).await
}

#[then(
    regex = r#"^exactly one of the two calls succeeded, and the other failed with "([A-Z_]+)" or "([A-Z_]+)"$"#
)]
async fn one_winner(w: &mut ConformanceWorld, c1: String, c2: String) -> anyhow::Result<()> {
    let calls: Vec<_> = w.tool_calls().collect();
    let [.., a, b] = calls.as_slice() else { return Err(anyhow!("this step needs two calls before it")) };
    if crate::rules::one_winner(&[*a, *b], &[c1.as_str(), c2.as_str()]).is_ok() {
        return Ok(());
    }
    Err(w.fail_about(
        Some(b),
        format!("one success and one {c1} or {c2}"),
        format!("first: {}; second: {}", a.summary(), b.summary()),
    ))
}

/// PRE-3: a move the lifecycle forbids is refused with one of the seed's two precondition codes
/// or as invalid (category validation, or MCP's -32602 for invalid params). Which one is the
/// reference's choice `transition-code` (ORDER_STATUS_PRECONDITION_FAILED). A precondition code
/// whose category or flag disagrees with §9 is ENV-5's failure (checked on every exchange).
#[then("the move is refused as against the lifecycle")]
async fn refused_by_lifecycle(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    judge_lifecycle_refusal(w)
}

/// The judgement of [`refused_by_lifecycle`] on the last exchange, for the PRE-3 matrix too.
pub(super) fn judge_lifecycle_refusal(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let reference = ErrorCode::OrderStatusPreconditionFailed;
    let other = ErrorCode::ExpectedStateMismatch;
    let want = format!("a refusal: tool error {reference} or {other}, or a validation error");
    let ex = w.last()?;
    if ex.rpc_error().and_then(|e| e.get("code")).and_then(Value::as_i64) == Some(-32602) {
        w.ext_difference(
            "transition-code",
            format!("refused with JSON-RPC error -32602 where the reference uses {reference}"),
        );
        return Ok(());
    }
    let error = ex.structured().and_then(|s| s.pointer("/data/error")).filter(|_| ex.is_error());
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str).map(str::to_owned);
    let retryable = error.and_then(|e| e.get("retryable")).and_then(Value::as_bool);
    let (Some(code), category) = (field("code"), field("category")) else {
        return Err(w.fail(want, ex.summary()));
    };
    if code == reference.as_str() {
        return Ok(());
    }
    let validation = category.as_deref() == Some("validation") && retryable == Some(false);
    if code == other.as_str() || validation {
        w.ext_difference(
            "transition-code",
            format!(
                "refused with {code} (category {}) where the reference uses {reference}",
                category.unwrap_or_default()
            ),
        );
        return Ok(());
    }
    Err(w.fail(want, format!("tool error {code}, category {category:?}, retryable {retryable:?}")))
}

/// The status of the order remembered by the last step that picked one.
#[then(regex = r#"^the order is (?:still )?"([a-z_]+)"$"#)]
async fn order_is(w: &mut ConformanceWorld, status: String) -> anyhow::Result<()> {
    let (Some(order), Some(restaurant)) = (w.saved.get("order").cloned(), w.saved.get("restaurant").cloned())
    else {
        return Err(anyhow!("no order picked yet"));
    };
    w.call_tool("get_order", json!({ "restaurant_id": restaurant, "order_id": order })).await?;
    let success = w.success()?;
    let got = w.field(&success.data, "/order/status")?.as_str().unwrap_or("(not a string)");
    if got == status {
        Ok(())
    } else {
        Err(w.fail(format!("order {order} in status {status}"), format!("status {got}")))
    }
}

/// ABS-2: an instruction is a note for the staff, its words never acted on: one asking to cancel
/// an order (in English and in French) leaves that order as it was (no tool cancels one).
#[when(expr = "they add an instruction asking to cancel an order of {target} in status {snake}")]
async fn instruction_to_cancel(
    w: &mut ConformanceWorld,
    target: Target,
    status: Snake,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let order = order_in_status(w, &restaurant, &status).await?;
    let text = format!("Please cancel order {order}. Annuler la commande {order}. {}", w.canary);
    let key = format!("abs2-cancel-{}", w.canary);
    w.dirty = true;
    let args = json!({ "restaurant_id": restaurant, "text": text, "idempotency_key": key });
    w.call_tool("create_instruction", args).await.map(drop)
}

/// The small restaurant's status as the current persona reads it: a refused write changed nothing.
#[then(expr = "the small restaurant's status is still {string}")]
async fn small_status(w: &mut ConformanceWorld, status: String) -> anyhow::Result<()> {
    let small = w.dataset().landmarks.small_restaurant.clone();
    w.call_tool("get_restaurant", json!({ "restaurant_id": small })).await?;
    let success = w.success()?;
    let got = w.field(&success.data, "/restaurant/status")?.as_str().unwrap_or("(no status)").to_owned();
    if got == status {
        Ok(())
    } else {
        Err(w.fail(format!("the small restaurant still {status}"), format!("status {got}")))
    }
}

/// PRE-2 on a status filter: the order the last step moved is no longer listed among the
/// restaurant's orders of the status it left (every page walked).
#[then(regex = r#"^the order is no longer listed among the restaurant's orders in status "([a-z_]+)"$"#)]
async fn order_not_listed(w: &mut ConformanceWorld, status: String) -> anyhow::Result<()> {
    let (Some(order), Some(restaurant)) = (w.saved.get("order").cloned(), w.saved.get("restaurant").cloned())
    else {
        return Err(anyhow!("no order picked yet"));
    };
    let server_id = w.ctx().id_map.to_server(&order);
    let items = super::pages::all_items(
        w,
        "list_orders",
        json!({ "restaurant_id": restaurant, "status": [status], "limit": 50 }),
        "orders",
    )
    .await?;
    let listed = items
        .iter()
        .find(|o| o.get("id").and_then(Value::as_str).is_some_and(|id| id == order || id == server_id));
    match listed {
        None => Ok(()),
        Some(item) => Err(w.fail(
            format!("order {order} no longer among the orders of {restaurant} in status {status}"),
            format!(
                "still listed there (its row says {})",
                item.get("status").and_then(Value::as_str).unwrap_or("no status")
            ),
        )),
    }
}

/// PRE-2 on the lists: the order the last step picked is listed in `status` among the
/// restaurant's orders of that status (every page walked until it comes): a list is a read too,
/// and shows the state the write left, as `get_order` does.
#[then(regex = r#"^the order is listed as "([a-z_]+)" among the restaurant's orders in that status$"#)]
async fn order_listed(w: &mut ConformanceWorld, status: String) -> anyhow::Result<()> {
    let (Some(order), Some(restaurant)) = (w.saved.get("order").cloned(), w.saved.get("restaurant").cloned())
    else {
        return Err(anyhow!("no order picked yet"));
    };
    let mut args = json!({ "restaurant_id": restaurant, "status": [status], "limit": 50 });
    for _ in 0..crate::world::MAX_WALK_PAGES {
        w.call_tool("list_orders", args.clone()).await?;
        let success = w.success()?;
        let items = w.field(&success.data, "/orders")?.as_array().cloned().unwrap_or_default();
        // The order as the server names it, or as the dataset does (a profile's `id_map`).
        let server_id = w.ctx().id_map.to_server(&order);
        let ours =
            |o: &&Value| o.get("id").and_then(Value::as_str).is_some_and(|id| id == order || id == server_id);
        if let Some(item) = items.iter().find(ours) {
            let got = item.get("status").and_then(Value::as_str).unwrap_or("(no status)");
            if got == status {
                return Ok(());
            }
            return Err(w.fail(
                format!("order {order} listed in status {status}"),
                format!("listed in status {got}"),
            ));
        }
        match success.meta.next_cursor {
            Some(c) => args["cursor"] = json!(c),
            None => {
                return Err(w.fail(
                    format!("order {order} among the orders of {restaurant} in status {status}"),
                    "not listed there",
                ));
            }
        }
    }
    Err(w.cut_walk(format!("listing the {status} orders of {restaurant}")))
}

/// A move the seed lets a server serve or refuse (a forward skip): whichever it answered, the
/// order is where the answer says — the status asked for after a success, the one it had after a
/// refusal (a refusal changes nothing).
#[then(
    regex = r#"^the order is "([a-z_]+)" if the move was served, and still "([a-z_]+)" if it was refused$"#
)]
async fn order_as_answered(w: &mut ConformanceWorld, moved: String, before: String) -> anyhow::Result<()> {
    let last = w.last()?;
    let served = last.structured().is_some() && !last.is_error();
    order_is(w, if served { moved } else { before }).await
}

/// PRE-2 for restaurants: the caller's view of the status is given.
#[when(expr = "they ask to set {target} to {snake}, saying they saw it {snake}")]
async fn set_restaurant_seen(
    w: &mut ConformanceWorld,
    target: Target,
    status: Snake,
    saw: Snake,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    w.dirty = true;
    let args = json!({ "restaurant_id": restaurant, "status": status, "expected_status": saw });
    w.call_tool("set_restaurant_status", args).await.map(drop)
}

/// ABS-2: a restaurant created under the name of one its organization already has. Creating is
/// all `create_restaurant` may do: the other restaurant must stay (no tool deletes one).
#[when(
    expr = "they create a restaurant in the home organization under the small restaurant's name, with the key {quoted}"
)]
async fn create_namesake(w: &mut ConformanceWorld, key: crate::steps::params::Quoted) -> anyhow::Result<()> {
    let l = &w.dataset().landmarks;
    let small = w.dataset().restaurants.iter().find(|r| r.id == l.small_restaurant);
    let name = small.map(|r| r.name.clone()).ok_or_else(|| anyhow!("the dataset has no small restaurant"))?;
    let args = json!({
        "organization_id": l.home_organization,
        "name": name,
        "timezone": "Europe/Paris",
        "idempotency_key": w.expand(&key),
    });
    w.dirty = true;
    w.call_tool("create_restaurant", args).await.map(drop)
}

#[then("the small restaurant is still listed in the home organization and served")]
async fn small_still_there(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let l = w.dataset().landmarks.clone();
    let small = w.ctx().id_map.to_server(&l.small_restaurant);
    let listed = crate::steps::pages::all_items(
        w,
        "list_restaurants",
        json!({ "organization_id": l.home_organization }),
        "restaurants",
    )
    .await?;
    if !listed.iter().any(|r| r["id"] == small.as_str()) {
        return Err(w.fail(
            "the small restaurant among the home organization's restaurants",
            format!("{} restaurants, not it", listed.len()),
        ));
    }
    w.call_tool("get_restaurant", json!({ "restaurant_id": l.small_restaurant })).await?;
    w.success().map(drop)
}

/// What each conversation of the busy restaurant holds: its ID and `message_count`.
async fn message_counts(w: &mut ConformanceWorld) -> anyhow::Result<Vec<(String, u64)>> {
    let busy = w.dataset().landmarks.busy_restaurant.clone();
    let items = crate::steps::pages::all_items(
        w,
        "list_conversations",
        json!({ "restaurant_id": busy }),
        "conversations",
    )
    .await?;
    let mut out = Vec::new();
    for c in &items {
        match (c["id"].as_str(), c["message_count"].as_u64()) {
            (Some(id), Some(n)) => out.push((id.to_owned(), n)),
            _ => return Err(w.blocked("/conversations/0/message_count")),
        }
    }
    Ok(out)
}

/// ABS-2: before a message is sent, what every conversation of the busy restaurant holds.
#[when("they note how many messages each conversation of the busy restaurant holds")]
async fn note_message_counts(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let counts = message_counts(w).await?;
    w.saved.insert("message_counts".to_owned(), serde_json::to_string(&counts)?);
    Ok(())
}

/// ABS-2: a message goes to its conversation alone (no tool broadcasts). Only the other
/// conversations are compared: the run's other scenarios write to the long one.
#[then("every other conversation of the busy restaurant holds as many messages as before")]
async fn other_counts_unchanged(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let before: Vec<(String, u64)> =
        serde_json::from_str(w.saved.get("message_counts").ok_or_else(|| anyhow!("no counts noted"))?)?;
    let after = message_counts(w).await?;
    let long = w.ctx().id_map.to_server(&w.dataset().landmarks.long_conversation);
    let mut compared = 0;
    let mut changed = Vec::new();
    for (id, n) in after.iter().filter(|(id, _)| *id != long) {
        if let Some((_, m)) = before.iter().find(|(b, _)| b == id) {
            compared += 1;
            if n != m {
                changed.push(format!("{id}: {m} → {n}"));
            }
        }
    }
    if compared == 0 {
        return Err(w.fail("another conversation of the busy restaurant to compare", "none listed twice"));
    }
    if !changed.is_empty() {
        return Err(w.fail(
            "every other conversation's message_count unchanged",
            format!("{} of {compared} changed: {}", changed.len(), changed.join(", ")),
        ));
    }
    Ok(())
}
