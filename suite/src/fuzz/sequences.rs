//! Stateful sequences, each a proptest property whose case is a whole sequence (shrinking
//! replays it): a walk through a list's pages then one tampered cursor (PAG-5); a keyed write,
//! its replay and the key reused with other arguments (IDEM-2, IDEM-3); an order moved with a
//! wrong then the right `expected_status`, read back after each (PRE-2). Writes run only when
//! the server's state is reset afterwards.

use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::strategy::Union;
use proptest::test_runner::TestRng;
use serde_json::{Value, json};

use super::oracle::{Fault, answered, error_code, succeeded};
use super::strategy::{self, Case};
use super::{Engine, Observed};
use crate::client::Exchange;

/// Pages read at most before the tamper: enough to reach a cursor of every list.
const MAX_PAGES: usize = 6;
/// Characters a cursor byte is replaced with (URL-safe base64 and the dot many servers use).
const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";

fn observed(clause: &'static str, detail: String, tool: &str, args: &Value, ex: &Exchange) -> Observed {
    Observed {
        fault: Fault { clause, detail },
        tool: tool.to_owned(),
        args: args.clone(),
        mutation: None,
        ex: ex.clone(),
    }
}

/// A call that did not come back well (PROTO-2) ends a sequence with that finding.
fn broken(tool: &str, args: &Value, ex: &Exchange) -> Option<Vec<Observed>> {
    let faults = answered(ex);
    (!faults.is_empty())
        .then(|| faults.into_iter().map(|f| observed(f.clause, f.detail, tool, args, ex)).collect())
}

#[derive(Debug, Clone)]
pub struct CursorCase {
    tool: String,
    args: Value,
    page: Index,
    position: Index,
    replacement: Index,
}

/// PAG-5: every page of a list, then one of its cursors with one character changed.
pub fn cursor(engine: &Engine<'_>, cases: u32, rng: TestRng) -> bool {
    let busy = engine.resolver.pools.first(super::ids::IdKind::Restaurant);
    // Lists with many items in the busy restaurant first (proptest shrinks towards them).
    let lists: Vec<(String, Value)> =
        ["list_orders", "list_conversations", "list_restaurants", "list_instructions"]
            .into_iter()
            .filter_map(|name| {
                let tool = engine.tool(name)?;
                tool.has_property("cursor").then_some(())?;
                let mut args = json!({});
                if tool.has_property("restaurant_id") {
                    args["restaurant_id"] = json!(busy.clone()?);
                }
                Some((name.to_owned(), args))
            })
            .collect();
    if lists.is_empty() {
        return false;
    }
    // Pages of 2 to 10 items: every list of the busy restaurant has several. Shrinking goes to
    // 10, fewer pages to walk again.
    let strategy = (select(lists), 0u64..9, any::<Index>(), any::<Index>(), any::<Index>())
        .prop_map(|((tool, mut args), n, page, position, replacement)| {
            args["limit"] = json!(10 - n);
            CursorCase { tool, args, page, position, replacement }
        })
        .boxed();
    engine.run_property(strategy, cases, rng, &|case| {
        let mut cursors = Vec::new();
        let mut args = case.args.clone();
        for _ in 0..MAX_PAGES {
            let Some(ex) = engine.caller.call(&case.tool, &args) else { return Vec::new() };
            if let Some(faults) = broken(&case.tool, &args, &ex) {
                return faults;
            }
            let next = ex.structured().and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str);
            let Some(next) = next.filter(|c| !c.is_empty()) else { break };
            cursors.push(next.to_owned());
            args["cursor"] = json!(next);
        }
        let Some(original) =
            cursors.get(case.page.index(cursors.len().max(1))).filter(|_| !cursors.is_empty())
        else {
            return Vec::new();
        };
        let mut bytes = original.clone().into_bytes();
        let at = case.position.index(bytes.len());
        let mut pick = case.replacement.index(ALPHABET.len());
        if ALPHABET[pick] == bytes[at] {
            pick = (pick + 1) % ALPHABET.len();
        }
        bytes[at] = ALPHABET[pick];
        let tampered = String::from_utf8_lossy(&bytes).into_owned();
        let mut args = case.args.clone();
        args["cursor"] = json!(tampered);
        let Some(ex) = engine.caller.call(&case.tool, &args) else { return Vec::new() };
        if let Some(faults) = broken(&case.tool, &args, &ex) {
            return faults;
        }
        match error_code(&ex) {
            Some("MCP_CURSOR_INVALID") => Vec::new(),
            _ => vec![observed(
                "PAG-5",
                format!(
                    "{}: a cursor with character {at} changed was not refused with MCP_CURSOR_INVALID ({})",
                    case.tool,
                    ex.summary()
                ),
                &case.tool,
                &args,
                &ex,
            )],
        }
    })
}

/// IDEM-2 and IDEM-3: a keyed write, the same call again, then the key with other arguments.
pub fn idempotency(engine: &Engine<'_>, cases: u32, rng: TestRng) -> bool {
    // The organization first: any user may create one, so the first call succeeds.
    let order = ["create_organization", "create_instruction", "send_message", "create_restaurant"];
    let mut keyed: Vec<&super::schema::Tool> =
        engine.tools.iter().filter(|t| t.has_property("idempotency_key")).collect();
    keyed.sort_by_key(|t| order.iter().position(|n| *n == t.name).unwrap_or(order.len()));
    if keyed.is_empty() {
        return false;
    }
    let arms: Vec<(u32, BoxedStrategy<(String, Case)>)> = keyed
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let name = t.name.clone();
            let weight = if i == 0 { 3 } else { 1 };
            (
                weight,
                strategy::valid(&t.schema, engine.resolver.clone())
                    .prop_map(move |c| (name.clone(), c))
                    .boxed(),
            )
        })
        .collect();
    let strategy = Union::new_weighted(arms).boxed();
    engine.run_property(strategy, cases, rng, &|(tool, case)| {
        let args = &case.args;
        let Some(first) = engine.caller.call(tool, args) else { return Vec::new() };
        if let Some(faults) = broken(tool, args, &first) {
            return faults;
        }
        if !succeeded(&first) {
            // A refused first call stores nothing: nothing to replay.
            return Vec::new();
        }
        let Some(again) = engine.caller.call(tool, args) else { return Vec::new() };
        if let Some(faults) = broken(tool, args, &again) {
            return faults;
        }
        let data = |ex: &Exchange| ex.structured().and_then(|s| s.get("data")).cloned();
        let replayed = again.structured().and_then(|s| s.pointer("/meta/replayed")).and_then(Value::as_bool);
        if !succeeded(&again) || replayed != Some(true) || data(&again) != data(&first) {
            let why = if !succeeded(&again) {
                format!("was not replayed ({})", again.summary())
            } else if replayed != Some(true) {
                format!("was answered with meta.replayed {replayed:?}, not true")
            } else {
                "was answered with other data than the first call's".to_owned()
            };
            return vec![observed("IDEM-2", format!("{tool}: the same key and arguments again {why}"), tool, args, &again)];
        }
        // Other arguments: one text member changed, the key kept.
        let mut other = args.clone();
        let Some(member) = ["text", "name"].into_iter().find(|m| other.get(*m).is_some_and(Value::is_string)) else {
            return Vec::new();
        };
        let changed = format!("{} (other)", other[member].as_str().unwrap_or_default());
        other[member] = json!(changed);
        let Some(third) = engine.caller.call(tool, &other) else { return Vec::new() };
        if let Some(faults) = broken(tool, &other, &third) {
            return faults;
        }
        if error_code(&third) == Some("MCP_IDEMPOTENCY_MISMATCH") {
            return Vec::new();
        }
        vec![observed(
            "IDEM-3",
            format!("{tool}: the key reused with another `{member}` was not refused with MCP_IDEMPOTENCY_MISMATCH ({})", third.summary()),
            tool,
            &other,
            &third,
        )]
    })
}

#[derive(Debug, Clone)]
pub struct PreCase {
    order: Index,
    wrong: Index,
}

/// PRE-2: an order moved with a wrong `expected_status` is refused and unchanged; with the
/// right one it moves, and get_order shows it.
pub fn precondition(engine: &Engine<'_>, cases: u32, rng: TestRng) -> bool {
    if engine.tool("update_order_status").is_none() || engine.tool("get_order").is_none() {
        return false;
    }
    let orders = engine.resolver.pools.received.clone();
    if orders.is_empty() {
        return false;
    }
    let strategy =
        (any::<Index>(), any::<Index>()).prop_map(|(order, wrong)| PreCase { order, wrong }).boxed();
    let lifecycle = chataigne_contract::tools::ORDER_LIFECYCLE;
    engine.run_property(strategy, cases, rng, &|case| {
        let (restaurant, order) = &orders[case.order.index(orders.len())];
        let read = json!({ "restaurant_id": restaurant, "order_id": order });
        let status_of = |ex: &Exchange| {
            ex.structured().and_then(|s| s.pointer("/data/order/status")).and_then(Value::as_str).map(str::to_owned)
        };
        let Some(before) = engine.caller.call("get_order", &read) else { return Vec::new() };
        if let Some(faults) = broken("get_order", &read, &before) {
            return faults;
        }
        let Some(current) = status_of(&before) else { return Vec::new() };
        let Some(step) = lifecycle.iter().position(|s| *s == current).filter(|i| i + 1 < lifecycle.len()) else {
            // A final status: nothing to move.
            return Vec::new();
        };
        let next = lifecycle[step + 1];
        let others: Vec<&str> =
            chataigne_contract::tools::ORDER_STATUSES.iter().copied().filter(|s| *s != current).collect();
        let wrong = others[case.wrong.index(others.len())];
        let mut write = read.clone();
        write["status"] = json!(next);
        write["expected_status"] = json!(wrong);
        let Some(refused) = engine.caller.call("update_order_status", &write) else { return Vec::new() };
        if let Some(faults) = broken("update_order_status", &write, &refused) {
            return faults;
        }
        let conflict = refused.structured().and_then(|s| s.pointer("/data/error/category")).and_then(Value::as_str)
            == Some("conflict");
        if !conflict {
            let detail = format!(
                "update_order_status with expected_status {wrong} on a {current} order was not refused with a conflict ({})",
                refused.summary()
            );
            return vec![observed("PRE-2", detail, "update_order_status", &write, &refused)];
        }
        let Some(after) = engine.caller.call("get_order", &read) else { return Vec::new() };
        if status_of(&after).as_deref() != Some(current.as_str()) {
            let detail = format!("a refused update_order_status changed the order: {current} before, {:?} after", status_of(&after));
            return vec![observed("PRE-2", detail, "update_order_status", &write, &refused)];
        }
        write["expected_status"] = json!(current);
        let Some(moved) = engine.caller.call("update_order_status", &write) else { return Vec::new() };
        if let Some(faults) = broken("update_order_status", &write, &moved) {
            return faults;
        }
        if !succeeded(&moved) {
            let detail = format!(
                "update_order_status {current} → {next} with the right expected_status was refused ({})",
                moved.summary()
            );
            return vec![observed("PRE-2", detail, "update_order_status", &write, &moved)];
        }
        let Some(shown) = engine.caller.call("get_order", &read) else { return Vec::new() };
        if status_of(&shown).as_deref() != Some(next) {
            let detail = format!("after update_order_status to {next}, get_order shows {:?}", status_of(&shown));
            return vec![observed("PRE-2", detail, "get_order", &read, &shown)];
        }
        Vec::new()
    })
}
