//! Stateful properties across sessions, clients and users, and on the dataset's largest records:
//! the tools that can exceed 128 KiB called on the record that makes the biggest answer (LIM-5,
//! LIM-6, PAG-8); a cursor of the owner's carried to another persona (PAG-6); writes only: five
//! identical keyed calls at once (IDEM-4), five moves of one order from one observed status at
//! once (PRE-4), and a key reused by another OAuth client of the same user and by another user
//! (IDEM-5). Each is judged by the rule the suite's step for it uses (`crate::rules`).

use proptest::prelude::*;
use proptest::test_runner::TestRng;
use serde::Serialize;
use serde_json::{Value, json};

use super::cases::{AccessCase, Group, Replay};
pub use super::cases::{
    AuthorityCase, BurstCase, CarryCase, ExpiryCase, FaultCase, Injected, LargestCase, RaceCase, ScopeCase,
};
use super::engine::Engine;
use super::ids::IdKind;
use super::observed::Why;
use super::observed::{Call, Observed};
use super::oracle::{answered, cut_unmarked, error_code, succeeded};
use super::sequences::{Trail, status_of};
use super::strategy::Pick;
use crate::client::Exchange;
use crate::rules;

/// Identical or racing calls sent at once: the features' IDEM-4 burst sends five.
pub const AT_ONCE: usize = 5;
/// The latency the control API adds to a racing tool, when it can: every racer is then past
/// its checks before the first one's effect, so a race is met on every run, not by luck.
pub const RACE_LATENCY_MS: u64 = 300;
/// Pages of a read-back at most.
const MAX_PAGES: usize = 20;

/// The calls on the largest records: `list_orders` of the restaurant whose page of 50 is the
/// biggest (by the dataset's orders' sizes), `get_transcript` of the longest transcript,
/// `get_conversation` of the conversation with most messages (no `message_limit`), each in a
/// restaurant of the fuzzing persona, the dataset's IDs mapped to the server's.
pub fn largest_cases(engine: &Engine<'_>) -> Vec<LargestCase> {
    let ctx = engine.caller.ctx;
    let d = &ctx.dataset;
    let pools = &engine.resolver.pools;
    let server = |id: &str| ctx.id_map.to_server(id);
    let mine = |restaurant: &str| !pools.foreign.contains(&server(restaurant));
    let mut out = Vec::new();
    let mut push = |tool: &str, args: Value| {
        if let Some(t) = engine.tool(tool) {
            let args: serde_json::Map<String, Value> = args
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| t.has_property(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            out.push(LargestCase { tool: tool.to_owned(), args: Value::Object(args) });
        }
    };
    // A page of at most 50: the mean order's size times the orders a page holds.
    let page = d
        .restaurants
        .iter()
        .filter(|r| mine(&r.id))
        .filter_map(|r| {
            let sizes: Vec<usize> = d.orders_of(&r.id).map(bytes).collect();
            let n = sizes.len();
            (n > 0).then(|| (sizes.iter().sum::<usize>() * n.min(50) / n, r))
        })
        .max_by_key(|(bytes, r)| (*bytes, std::cmp::Reverse(r.id.clone())));
    if let Some((_, r)) = page {
        push("list_orders", json!({ "restaurant_id": server(&r.id), "limit": 50 }));
    }
    // The same pages through every filter that keeps them over 128 KiB (`matrices::page_size_rows`,
    // as the suite's matrix derives them), as the fuzzing persona.
    for row in crate::matrices::page_size_rows(d) {
        if row.persona == engine.caller.persona && row.filter != "no filter" && mine(&row.restaurant) {
            push(row.tool.as_str(), ctx.id_map.outbound(&row.args));
        }
    }
    let transcript = d
        .transcripts
        .iter()
        .filter(|t| mine(&t.restaurant_id))
        .max_by_key(|t| (t.text.len(), std::cmp::Reverse(t.id.clone())));
    if let Some(t) = transcript {
        push(
            "get_transcript",
            json!({ "restaurant_id": server(&t.restaurant_id), "transcript_id": server(&t.id) }),
        );
    }
    let conversation = d.conversations.iter().filter(|c| mine(&c.restaurant_id)).max_by_key(|c| {
        (d.messages.iter().filter(|m| m.conversation_id == c.id).count(), std::cmp::Reverse(c.id.clone()))
    });
    if let Some(c) = conversation {
        push(
            "get_conversation",
            json!({ "restaurant_id": server(&c.restaurant_id), "conversation_id": server(&c.id) }),
        );
    }
    out
}

/// A dataset record's size, as JSON.
fn bytes<T: Serialize>(record: &T) -> usize {
    serde_json::to_string(record).map_or(0, |s| s.len())
}

/// LIM-5, LIM-6 (and PAG-8 and every rule of a single call): each largest record's call once; a
/// list page over 128 KiB must be cut and marked truncated (`the page is marked truncated`), a
/// single item over it refused (`the call fails with "MCP_OUTPUT_TOO_LARGE"`: a success over it
/// is the failure; another refusal is left to the other rules).
pub fn largest(engine: &Engine<'_>, rng: TestRng, fixed: Option<LargestCase>) -> bool {
    let rows = match fixed {
        Some(case) => vec![case],
        None => largest_cases(engine),
    };
    let replay = |case: &LargestCase| Replay::Largest(case.clone());
    let ctx = engine.caller.ctx;
    let landmarks = &ctx.dataset.landmarks;
    let large = ctx.id_map.to_server(&landmarks.large_orders_restaurant);
    let huge = ctx.id_map.to_server(&landmarks.huge_transcript);
    engine.run_rows(rows, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let Some(ex) = trail.call(&case.tool, &case.args) else { return Vec::new() };
        let arg = |k: &str| case.args.get(k).and_then(Value::as_str);
        // The dataset's landmarks are over 128 KiB by design: the steps' rules hold whatever
        // size the answer has (a page cut but not marked, a transcript cut and returned).
        // A filtered page keeps a part of the large restaurant's orders: held to LIM-5's cut,
        // not to the whole walk.
        let filtered =
            case.args.as_object().is_some_and(|a| a.keys().any(|k| k != "restaurant_id" && k != "limit"));
        let rule = if case.tool == "list_orders" && arg("restaurant_id") == Some(large.as_str()) && !filtered
        {
            if let Some(d) = rules::unmarked_cut(&ex) {
                Some(("LIM-5", d))
            } else if let Some((detail, args, page)) =
                walk_missed(engine, &mut trail, &case.tool, &case.args, &ex, &large)
            {
                // The page the walk found wrong, after the pages before it.
                let mut out = vec![trail.observed("LIM-5", detail, &case.tool, &args, &page)];
                out.extend(trail.checked(&case.tool, &case.args, &ex).unwrap_or_default());
                return out;
            } else {
                None
            }
        } else if case.tool.starts_with("list_") {
            rules::untruncated_page(&ex)
                .or_else(|| rules::page_refused_too_large(&ex))
                .or_else(|| cut_unmarked(&case.args, &ex))
                .map(|d| ("LIM-5", d))
        } else if case.tool == "get_transcript" && arg("transcript_id") == Some(huge.as_str()) {
            rules::not_refused_too_large(&ex).map(|d| ("LIM-6", d))
        } else if case.tool == "get_transcript" {
            rules::oversized_item(&ex).map(|d| ("LIM-6", d))
        } else {
            None
        };
        let mut out: Vec<Observed> = rule
            .map(|(clause, detail)| {
                trail.observed(clause, format!("{}: {detail}", case.tool), &case.tool, &case.args, &ex)
            })
            .into_iter()
            .collect();
        out.extend(trail.checked(&case.tool, &case.args, &ex).unwrap_or_default());
        out
    })
}

/// `the walk yields every order of … exactly once` from a first page `first` of `list_orders`
/// of `restaurant`: the pages that follow (at most [`MAX_PAGES`]), each held to LIM-5's cut
/// (`oracle::cut_unmarked`), and the dataset's orders of the restaurant the walk did not yield.
/// `Some`: what was wrong, with the arguments and the page that showed it (the first page for
/// orders missed). `None`: every one yielded; a walk that did not end (at the cap, or a page not
/// served) is blocked, never passed.
pub(super) fn walk_missed(
    engine: &Engine<'_>,
    trail: &mut Trail<'_, '_>,
    tool: &str,
    args: &Value,
    first: &Exchange,
    restaurant: &str,
) -> Option<(String, Value, Exchange)> {
    let ctx = engine.caller.ctx;
    let dataset_id = ctx.id_map.to_dataset(restaurant);
    let expected: Vec<String> =
        ctx.dataset.orders_of(&dataset_id).map(|o| ctx.id_map.to_server(&o.id)).collect();
    let mut walked = std::collections::HashSet::new();
    let mut page = first.clone();
    let mut page_args = args.clone();
    let what = format!("walk of {tool}");
    for _ in 0..MAX_PAGES {
        if !succeeded(&page) {
            let reason = format!("a page of the walk was not served ({})", page.summary());
            engine.block(Why::WalkFailed, &what, reason);
            return None;
        }
        if let Some(detail) = cut_unmarked(&page_args, &page) {
            return Some((format!("{tool}: {detail}"), page_args, page));
        }
        let items = page
            .structured()
            .and_then(|s| s.get("data"))
            .and_then(Value::as_object)
            .and_then(|d| d.values().find_map(Value::as_array))
            .cloned()
            .unwrap_or_default();
        walked.extend(items.iter().filter_map(|i| i.get("id")?.as_str().map(str::to_owned)));
        let next = page.structured().and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str);
        let Some(next) = next.filter(|c| !c.is_empty()) else {
            let missed = rules::missed(&walked, &expected);
            return (!missed.is_empty()).then(|| {
                let detail = format!(
                    "{tool}: a walk of every page missed {} of the {} orders the dataset has ({})",
                    missed.len(),
                    expected.len(),
                    missed.iter().take(3).copied().collect::<Vec<_>>().join(", ")
                );
                (detail, args.clone(), first.clone())
            });
        };
        page_args = args.clone();
        page_args["cursor"] = json!(next);
        page = trail.call(tool, &page_args)?;
    }
    let reason = format!("the walk stopped at the fuzzer's cap of {MAX_PAGES} pages, before its last page");
    engine.block(Why::WalkCapped, &what, reason);
    None
}

/// The cursors of the owner's carried to every other persona: each list of the busy restaurant
/// with a cursor (the owner's allowed row of the access tables, one item a page so the first has
/// a cursor; `list_orders` with 5 as in the features) to every persona of the profile that has a
/// row for it, allowed or refused (another client of the same user first).
pub fn carry_cases(engine: &Engine<'_>) -> Vec<CarryCase> {
    let Some(busy) = engine.resolver.pools.first(IdKind::Restaurant) else { return Vec::new() };
    let owner = &engine.caller.persona;
    let d = &engine.caller.ctx.dataset;
    let user = |p: &str| d.persona(p).map(|p| p.user_id.clone());
    let on_busy =
        |c: &AccessCase| c.arguments.get("restaurant_id").and_then(Value::as_str) == Some(busy.as_str());
    let mut out = Vec::new();
    let mut tools: Vec<String> = Vec::new();
    for row in engine.access_rows(Group::Allowed).into_iter().filter(|c| &c.persona == owner && on_busy(c)) {
        let Some(t) = engine.tool(&row.tool).filter(|t| t.has_property("cursor") && !t.writes) else {
            continue;
        };
        let Some(size) = ["limit", "message_limit"].into_iter().find(|m| t.has_property(m)) else { continue };
        if tools.contains(&row.tool) {
            continue;
        }
        tools.push(row.tool.clone());
        let mut args = row.arguments.clone();
        args[size] = json!(if row.tool == "list_orders" { 5 } else { 1 });
        let mut personas: Vec<String> = engine
            .access
            .iter()
            .filter(|c| c.tool == row.tool && &c.persona != owner && on_busy(c))
            .map(|c| c.persona.clone())
            .collect();
        personas.sort_by_key(|p| (user(p) != user(owner), p.clone()));
        personas.dedup();
        out.extend(personas.into_iter().map(|persona| CarryCase {
            tool: row.tool.clone(),
            args: args.clone(),
            persona,
        }));
    }
    out
}

/// PAG-6 (users and clients) and the access checks on a continuation: a cursor is bound to who
/// got it, and a page reached through one is held to the tables like the first. `persona` lists
/// the first page alone, the owner lists it and gets a cursor, `persona` sends that cursor. A
/// persona the tables allow must be refused with MCP_CURSOR_INVALID (`the persona "…" lists the
/// next page` then `the call fails with "MCP_CURSOR_INVALID"`); one they refuse must be refused,
/// and a page served to it is a finding under the first check it fails (AUTH-8's order: AUTH-3
/// for a token without the scope, even of the same user and client).
pub fn carried_cursor(engine: &Engine<'_>, rng: TestRng, fixed: Option<CarryCase>) -> bool {
    let rows = match fixed {
        Some(case) => vec![case],
        None => carry_cases(engine),
    };
    let replay = |case: &CarryCase| Replay::Carried(case.clone());
    engine.run_rows(rows, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let restaurant = case.args.get("restaurant_id");
        let refused_by = engine
            .access
            .iter()
            .find(|c| c.persona == case.persona && c.tool == case.tool && c.arguments.get("restaurant_id") == restaurant)
            .and_then(|c| c.refused_by.first().cloned());
        let Some(alone) = trail.call_as(&case.persona, &case.tool, &case.args) else { return Vec::new() };
        // Refused its own first page (whatever the tables say; they judge that call): any
        // refusal of the next is consistent.
        let served_alone = succeeded(&alone);
        let Some(first) = trail.call(&case.tool, &case.args) else { return Vec::new() };
        // Every rule of a single call on the owner's page, the cursor's rule judged still (a
        // difference of the ext level, such as a missing header, must not hide it).
        let out = trail.checked(&case.tool, &case.args, &first).unwrap_or_default();
        let cursor = first.structured().and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str);
        let Some(cursor) = cursor.filter(|c| !c.is_empty()).map(str::to_owned) else { return out };
        let mut reused = case.args.clone();
        reused["cursor"] = json!(cursor);
        let Some(ex) = trail.call_as(&case.persona, &case.tool, &reused) else { return out };
        if !answered(&ex).is_empty() {
            return out;
        }
        let owner = &engine.caller.persona;
        let (clause, detail) = match refused_by.as_deref().map(super::access::clause) {
            Some(clause) if !ex.is_error() => (
                clause,
                format!(
                    "{}: a page reached through {owner}'s cursor was served to {}, whom the access tables refuse ({clause}) ({})",
                    case.tool,
                    case.persona,
                    ex.summary()
                ),
            ),
            Some(_) => return out,
            None if error_code(&ex) == Some("MCP_CURSOR_INVALID") || (!served_alone && ex.is_error()) => return out,
            None => {
                let d = &engine.caller.ctx.dataset;
                let same_user = d.persona(owner).map(|p| &p.user_id) == d.persona(&case.persona).map(|p| &p.user_id);
                let who = if same_user { "the same user through another OAuth client" } else { "another user" };
                let detail = format!(
                    "{}: a cursor of {owner}'s reused by {} ({who}) was not refused with MCP_CURSOR_INVALID ({})",
                    case.tool,
                    case.persona,
                    ex.summary()
                );
                ("PAG-6", detail)
            }
        };
        let mut found = vec![trail.observed_as(&case.persona, clause, detail, &case.tool, &reused, &ex)];
        found.extend(out);
        found
    })
}

/// Whether the control API can slow a tool (`faults`): races are then met deterministically.
fn can_slow(engine: &Engine<'_>) -> bool {
    let ctx = engine.caller.ctx;
    ctx.control.is_some() && ctx.capabilities.control_features.iter().any(|f| f == "faults")
}

/// `calls` at once, `tool` slowed by the control API while they run when it can be. Each call
/// joins the trail.
fn at_once(
    trail: &mut Trail<'_, '_>,
    tool: &str,
    calls: &[(String, String, Value)],
    slow: bool,
) -> Option<Vec<Exchange>> {
    let engine = trail.engine;
    let control = engine.caller.ctx.control.as_ref().filter(|_| slow);
    if let Some(control) = control {
        let fault = json!({ "tool": tool, "latency_ms": RACE_LATENCY_MS });
        engine.caller.runtime.block_on(control.add_fault(fault)).ok()?;
    }
    let answers = engine.caller.call_at_once(calls);
    if let Some(control) = control {
        // Without it every later call of the tool would be slow (a failed clear: the reset
        // after the run clears it).
        let _ = engine.caller.runtime.block_on(control.clear_faults());
    }
    let answers = answers?;
    for ((persona, tool, args), ex) in calls.iter().zip(&answers) {
        trail.steps.push(Call {
            persona: persona.clone(),
            tool: tool.clone(),
            args: args.clone(),
            ex: Some(ex.clone()),
        });
    }
    Some(answers)
}

/// How many instructions of `restaurant` have `text`, every page read (`None`: unreadable).
fn count_instructions(trail: &mut Trail<'_, '_>, restaurant: &str, text: &str) -> Option<usize> {
    let mut args = json!({ "restaurant_id": restaurant, "limit": 50 });
    let mut count = 0;
    for _ in 0..MAX_PAGES {
        let ex = trail.call("list_instructions", &args)?;
        let data = ex.structured().filter(|_| succeeded(&ex))?.get("data")?;
        count += rules::count_with(data, "instructions", "text", text)?;
        match ex.structured().and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str) {
            Some(c) if !c.is_empty() => args["cursor"] = json!(c),
            _ => return Some(count),
        }
    }
    None
}

/// A failure on one call of a trail whose every other call comes before it.
fn observed_at(
    trail: &Trail<'_, '_>,
    index: usize,
    clause: &'static str,
    detail: String,
) -> Option<Observed> {
    let call = trail.steps.get(index)?;
    let ex = call.ex.as_ref()?;
    let mut o = trail.observed_as(&call.persona, clause, detail, &call.tool, &call.args, ex);
    o.before = trail.steps.iter().enumerate().filter(|(i, _)| *i != index).map(|(_, c)| c.clone()).collect();
    Some(o)
}

fn instruction(restaurant: &str, text: &str, key: &str) -> Value {
    json!({ "restaurant_id": restaurant, "text": text, "idempotency_key": key })
}

/// IDEM-4: five identical keyed calls at once act once: every answer a success or
/// MCP_OPERATION_IN_PROGRESS (`every call succeeded or was told the operation is in progress`)
/// and one instruction with the text (`… has exactly 1 instruction "…"`). Judged only when one
/// call at least succeeded (a persona refused the tool is the access tables' business).
pub fn burst(engine: &Engine<'_>, cases: u32, rng: TestRng, fixed: Option<BurstCase>) -> bool {
    let Some(busy) = engine.resolver.pools.first(IdKind::Restaurant) else { return false };
    let keyed = engine.tool("create_instruction").is_some_and(|t| t.has_property("idempotency_key"));
    if !keyed || engine.tool("list_instructions").is_none() {
        return false;
    }
    let slowed = can_slow(engine);
    let strategy = any::<u32>()
        .prop_map(move |tag| BurstCase {
            restaurant: busy.clone(),
            text: format!("fuzz burst {tag:08x}"),
            key: format!("fuzz-burst-{tag:08x}"),
            calls: AT_ONCE,
            slowed,
        })
        .boxed();
    let strategy = fixed.map_or(strategy, |case| Just(case).boxed());
    let replay = |case: &BurstCase| Replay::Burst(case.clone());
    engine.run_property(strategy, cases, 0, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let args = instruction(&case.restaurant, &case.text, &case.key);
        let owner = engine.caller.persona.clone();
        let calls: Vec<_> = (0..case.calls).map(|_| (owner.clone(), "create_instruction".to_owned(), args.clone())).collect();
        let Some(answers) = at_once(&mut trail, "create_instruction", &calls, case.slowed) else { return Vec::new() };
        let mut out: Vec<Observed> = Vec::new();
        for ex in &answers {
            out.extend(trail.checked("create_instruction", &args, ex).unwrap_or_default());
        }
        if !answers.iter().any(succeeded) {
            return out;
        }
        let mut found = Vec::new();
        if let Some(i) = answers.iter().position(|ex| !rules::success_or_in_progress(ex)) {
            let detail = format!(
                "create_instruction: of {} identical keyed calls at once, one was neither a success nor MCP_OPERATION_IN_PROGRESS ({})",
                case.calls,
                answers[i].summary()
            );
            found.extend(observed_at(&trail, i, "IDEM-4", detail));
        } else if let Some(i) = answers.iter().position(|ex| error_code(ex).is_some() && !rules::asks_to_retry_later(ex)) {
            // `the error asks to retry after a delay`.
            let detail = format!(
                "create_instruction: MCP_OPERATION_IN_PROGRESS without a retry_after_ms > 0 ({})",
                answers[i].summary()
            );
            found.extend(observed_at(&trail, i, "IDEM-4", detail));
        } else if case.slowed && case.calls > 1 && answers.iter().all(succeeded) {
            // Slowed, every duplicate arrives while the first still runs: `the call fails with
            // "MCP_OPERATION_IN_PROGRESS"` for them, not a wait for the first and its replay.
            let detail = format!(
                "create_instruction: {} identical keyed calls at once, the first slowed by {RACE_LATENCY_MS} ms, all succeeded: no duplicate was told the operation is in progress",
                case.calls
            );
            found.extend(observed_at(&trail, case.calls - 1, "IDEM-4", detail));
        } else {
            let count = count_instructions(&mut trail, &case.restaurant, &case.text);
            if let Some(n) = count.filter(|n| *n != 1) {
                let detail = format!(
                    "create_instruction: {} identical keyed calls at once acted {n} times (one instruction with the text wanted; answers: {})",
                    case.calls,
                    answers.iter().map(|ex| ex.summary()).collect::<Vec<_>>().join("; ")
                );
                let last = trail.steps.len() - 1;
                found.extend(observed_at(&trail, last, "IDEM-4", detail));
            }
        }
        found.extend(out);
        found
    })
}

/// The codes a losing racer may get (PRE-4's scenarios).
pub const PRECONDITION_CODES: [&str; 2] = ["MCP_EXPECTED_STATE_MISMATCH", "ORDER_STATUS_PRECONDITION_FAILED"];

/// PRE-4: five moves of one order to its next status, all with the status read before as
/// `expected_status`, at once: exactly one succeeds and the others are refused with
/// MCP_EXPECTED_STATE_MISMATCH or ORDER_STATUS_PRECONDITION_FAILED (`exactly one of the two
/// calls succeeded, and the other failed with …`), and the order has the new status. Judged
/// only when one move at least succeeded.
pub fn race(engine: &Engine<'_>, cases: u32, rng: TestRng, fixed: Option<RaceCase>) -> bool {
    if engine.tool("update_order_status").is_none() || engine.tool("get_order").is_none() {
        return false;
    }
    let orders = engine.resolver.pools.received.clone();
    if orders.is_empty() {
        return false;
    }
    let slowed = can_slow(engine);
    let strategy = Pick::any().prop_map(move |order| RaceCase { order, calls: AT_ONCE, slowed }).boxed();
    let strategy = fixed.map_or(strategy, |case| Just(case).boxed());
    let replay = |case: &RaceCase| Replay::Race(case.clone());
    let lifecycle = chataigne_contract::tools::ORDER_LIFECYCLE;
    engine.run_property(strategy, cases, 0, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let (restaurant, order) = &orders[case.order.index(orders.len())];
        let read = json!({ "restaurant_id": restaurant, "order_id": order });
        let Some(before) = trail.call("get_order", &read) else { return Vec::new() };
        // Every rule of a single call on the read, the race judged still.
        let mut out = trail.checked("get_order", &read, &before).unwrap_or_default();
        let Some(current) = status_of(&before) else { return out };
        let Some(step) = lifecycle.iter().position(|s| *s == current).filter(|i| i + 1 < lifecycle.len()) else {
            return out;
        };
        let next = lifecycle[step + 1];
        let write = json!({ "restaurant_id": restaurant, "order_id": order, "status": next, "expected_status": current });
        let owner = engine.caller.persona.clone();
        let calls: Vec<_> =
            (0..case.calls).map(|_| (owner.clone(), "update_order_status".to_owned(), write.clone())).collect();
        let Some(answers) = at_once(&mut trail, "update_order_status", &calls, case.slowed) else { return out };
        for ex in &answers {
            out.extend(trail.checked("update_order_status", &write, ex).unwrap_or_default());
        }
        if !answers.iter().any(succeeded) {
            return out;
        }
        let refs: Vec<&Exchange> = answers.iter().collect();
        let mut found = Vec::new();
        match rules::one_winner(&refs, &PRECONDITION_CODES) {
            Err(why) => {
                // The second success (or the first refusal of another code) is the failing call.
                let first = answers.iter().position(succeeded).unwrap_or(0);
                let at = (0..answers.len())
                    .find(|i| *i != first && !error_code(&answers[*i]).is_some_and(|c| PRECONDITION_CODES.contains(&c)))
                    .unwrap_or(first);
                let detail = format!(
                    "update_order_status: {} moves of a {current} order to {next} at once, each with expected_status {current}, not one winner and the others refused with {} or {}: {why}",
                    case.calls, PRECONDITION_CODES[0], PRECONDITION_CODES[1]
                );
                found.extend(observed_at(&trail, 1 + at, "PRE-4", detail));
            }
            Ok(_) => {
                let Some(after) = trail.call("get_order", &read) else { return out };
                if status_of(&after).as_deref() != Some(next) {
                    let detail =
                        format!("after a race of moves to {next} with one winner, get_order shows {:?}", status_of(&after));
                    let last = trail.steps.len() - 1;
                    found.extend(observed_at(&trail, last, "PRE-4", detail));
                }
            }
        }
        found.extend(out);
        found
    })
}

/// The personas a key is reused by: another OAuth client of the owner's user, and another user,
/// each allowed by the access tables to create instructions in the busy restaurant.
pub fn scope_personas(engine: &Engine<'_>) -> Vec<String> {
    let Some(busy) = engine.resolver.pools.first(IdKind::Restaurant) else { return Vec::new() };
    let owner = &engine.caller.persona;
    let d = &engine.caller.ctx.dataset;
    let user = |p: &str| d.persona(p).map(|p| p.user_id.clone());
    let mut allowed: Vec<String> = engine
        .access_rows(Group::Allowed)
        .into_iter()
        .filter(|c| {
            c.tool == "create_instruction"
                && &c.persona != owner
                && c.arguments.get("restaurant_id").and_then(Value::as_str) == Some(busy.as_str())
        })
        .map(|c| c.persona)
        .collect();
    allowed.sort();
    allowed.dedup();
    let same = allowed.iter().find(|p| user(p) == user(owner)).cloned();
    let other = allowed.iter().find(|p| user(p) != user(owner)).cloned();
    same.into_iter().chain(other).collect()
}

/// IDEM-5: a key is scoped by OAuth client and user. The owner creates an instruction with a
/// key; `persona` makes the same call with the same key: a success that is not a replay (`the
/// call succeeds`, `the answer is not a replay`) and a second instruction (`… has exactly 2
/// instructions "…"`). A refusal for another reason than the key is not judged here.
pub fn key_scope(engine: &Engine<'_>, cases: u32, rng: TestRng, fixed: Option<ScopeCase>) -> bool {
    let Some(busy) = engine.resolver.pools.first(IdKind::Restaurant) else { return false };
    let keyed = engine.tool("create_instruction").is_some_and(|t| t.has_property("idempotency_key"));
    // Over stdio each persona has its own process: a key of one is unseen by the others.
    if !keyed || engine.tool("list_instructions").is_none() || engine.caller.ctx.stdio.is_some() {
        return false;
    }
    let rows = match fixed {
        Some(case) => vec![Just(case).boxed()],
        None => scope_personas(engine)
            .into_iter()
            .map(|p| (p, None))
            .chain(
                engine
                    .tool("create_organization")
                    .filter(|t| t.has_property("idempotency_key") && t.has_property("name"))
                    .map(|t| (engine.caller.persona.clone(), Some(t.name.clone()))),
            )
            .enumerate()
            .map(|(i, (persona, tool))| {
                let busy = busy.clone();
                // Each persona its own key and text: the same draw for both would meet the
                // first one's instructions.
                any::<u32>()
                    .prop_map(move |tag| ScopeCase {
                        restaurant: busy.clone(),
                        text: format!("fuzz scope {tag:08x} {i}"),
                        key: format!("fuzz-scope-{tag:08x}-{i}"),
                        persona: persona.clone(),
                        tool: tool.clone(),
                    })
                    .boxed()
            })
            .collect(),
    };
    let replay = |case: &ScopeCase| Replay::KeyScope(case.clone());
    let mut failed = false;
    for strategy in rows {
        if engine.caller.spent() {
            break;
        }
        failed |= engine.run_property(strategy, cases, 0, rng.clone(), &replay, &|case| {
            let mut trail = Trail::new(engine);
            let args = instruction(&case.restaurant, &case.text, &case.key);
            let Some(first) = trail.call("create_instruction", &args) else { return Vec::new() };
            // Every rule of a single call on the first call, the key's rule judged still.
            let out = trail.checked("create_instruction", &args, &first).unwrap_or_default();
            if !succeeded(&first) {
                return out;
            }
            if let Some(tool) = &case.tool {
                // `The same key for another tool is another key`: a success, not a replay.
                let other = json!({ "name": case.text, "idempotency_key": case.key });
                let Some(second) = trail.call(tool, &other) else { return out };
                let keyed_refusal = matches!(error_code(&second), Some("MCP_IDEMPOTENCY_MISMATCH" | "MCP_OPERATION_IN_PROGRESS"));
                if rules::is_replay(&second) || keyed_refusal {
                    let detail = format!(
                        "{tool}: a key of create_instruction reused on another tool was answered as the same key ({})",
                        second.summary()
                    );
                    let mut found = vec![trail.observed("IDEM-5", detail, tool, &other, &second)];
                    found.extend(out);
                    return found;
                }
                let mut out = out;
                out.extend(trail.checked(tool, &other, &second).unwrap_or_default());
                return out;
            }
            let Some(second) = trail.call_as(&case.persona, "create_instruction", &args) else { return out };
            let owner = &engine.caller.persona;
            let d = &engine.caller.ctx.dataset;
            let same_user = d.persona(owner).map(|p| &p.user_id) == d.persona(&case.persona).map(|p| &p.user_id);
            let who = if same_user { "another OAuth client of the same user" } else { "another user" };
            let keyed_refusal = matches!(error_code(&second), Some("MCP_IDEMPOTENCY_MISMATCH" | "MCP_OPERATION_IN_PROGRESS"));
            if rules::is_replay(&second) || keyed_refusal {
                let detail = format!(
                    "create_instruction: {owner}'s key reused by {} ({who}) was answered as the same key ({}), not as a new call",
                    case.persona,
                    second.summary()
                );
                let mut found = vec![trail.observed_as(&case.persona, "IDEM-5", detail, "create_instruction", &args, &second)];
                found.extend(out);
                return found;
            }
            if !succeeded(&second) {
                return out;
            }
            let Some(n) = count_instructions(&mut trail, &case.restaurant, &case.text) else { return out };
            if n != 2 {
                let detail = format!(
                    "create_instruction: the same call and key by {owner} then by {} ({who}), both answered as new, made {n} instruction(s), not 2",
                    case.persona
                );
                let last = trail.steps.len() - 1;
                return observed_at(&trail, last, "IDEM-5", detail).into_iter().chain(out).collect();
            }
            out
        });
    }
    failed
}

/// The walks PAG-7 needs: a persona of another user than the fuzzing one (whose calls must go
/// on), allowed to list the busy restaurant's records through a membership the control API can
/// revoke (`memberships`), on every list of it with a cursor (its allowed rows' arguments, one
/// item a page; `list_orders` with 5, as in the features).
pub fn authority_cases(engine: &Engine<'_>) -> Vec<AuthorityCase> {
    let ctx = engine.caller.ctx;
    let memberships =
        ctx.control.is_some() && ctx.capabilities.control_features.iter().any(|f| f == "memberships");
    let (Some(busy), true) = (engine.resolver.pools.first(IdKind::Restaurant), memberships) else {
        return Vec::new();
    };
    let d = &ctx.dataset;
    let Some(busy_org) =
        d.restaurants.iter().find(|r| ctx.id_map.to_server(&r.id) == busy).map(|r| &r.organization_id)
    else {
        return Vec::new();
    };
    let Some(owner_user) = d.persona(&engine.caller.persona).map(|p| p.user_id.clone()) else {
        return Vec::new();
    };
    let mut rows: Vec<AccessCase> = engine
        .access_rows(Group::Allowed)
        .into_iter()
        .filter(|c| c.arguments.get("restaurant_id").and_then(Value::as_str) == Some(busy.as_str()))
        .collect();
    rows.sort_by(|a, b| (&a.persona, &a.tool).cmp(&(&b.persona, &b.tool)));
    let revocable = |persona: &str| {
        let user = d.persona(persona).map(|p| p.user_id.clone())?;
        let member =
            d.memberships.iter().any(|m| m.user_id == user && &m.organization_id == busy_org && !m.revoked);
        (user != owner_user && member).then_some(user)
    };
    let Some((persona, user)) = rows.iter().find_map(|r| Some((r.persona.clone(), revocable(&r.persona)?)))
    else {
        return Vec::new();
    };
    let mut out: Vec<AuthorityCase> = Vec::new();
    for row in rows.into_iter().filter(|r| r.persona == persona) {
        let Some(t) = engine.tool(&row.tool).filter(|t| t.has_property("cursor") && !t.writes) else {
            continue;
        };
        let Some(size) = ["limit", "message_limit"].into_iter().find(|m| t.has_property(m)) else { continue };
        if out.iter().any(|c| c.tool == row.tool) {
            continue;
        }
        let mut args = row.arguments.clone();
        args[size] = json!(if row.tool == "list_orders" { 5 } else { 1 });
        out.push(AuthorityCase {
            persona: persona.clone(),
            tool: row.tool.clone(),
            args,
            user: ctx.id_map.to_server(&user),
            organization: ctx.id_map.to_server(busy_org),
        });
    }
    out
}

/// PAG-7: a cursor carries no authority. `persona` lists a first page; its membership is
/// revoked (control API); its next page must not be served (`the call fails with
/// "MCP_RESOURCE_FORBIDDEN"`: a success is the failure, a refusal of another code is left to the
/// other rules). The membership is restored after.
pub fn authority(engine: &Engine<'_>, rng: TestRng, fixed: Option<AuthorityCase>) -> bool {
    let cases = match fixed {
        Some(case) => vec![case],
        None => authority_cases(engine),
    };
    let Some(control) = engine.caller.ctx.control.as_ref() else { return false };
    let replay = |case: &AuthorityCase| Replay::Authority(case.clone());
    engine.run_rows(cases, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let Some(first) = trail.call_as(&case.persona, &case.tool, &case.args) else { return Vec::new() };
        let cursor = first.structured().and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str);
        let Some(cursor) = cursor.filter(|c| !c.is_empty() && succeeded(&first)).map(str::to_owned) else {
            return Vec::new();
        };
        let runtime = engine.caller.runtime;
        if runtime.block_on(control.revoke_membership(&case.user, &case.organization)).is_err() {
            return Vec::new();
        }
        let mut next = case.args.clone();
        next["cursor"] = json!(cursor);
        let ex = trail.call_as(&case.persona, &case.tool, &next);
        // The persona's membership back, whatever came of it: the other properties need it.
        let _ = runtime.block_on(control.restore_membership(&case.user, &case.organization));
        let Some(ex) = ex else { return Vec::new() };
        let forbidden = chataigne_contract::ErrorCode::ResourceForbidden.as_str();
        let detail = if succeeded(&ex) {
            format!(
                "{}: the next page of {}'s walk was served after their membership was revoked ({})",
                case.tool,
                case.persona,
                ex.summary()
            )
        } else if ex.is_error() && error_code(&ex).is_some_and(|c| c != forbidden) {
            // `the call fails with "MCP_RESOURCE_FORBIDDEN"`: the access ended, not the cursor.
            format!(
                "{}: the next page of {}'s walk after their membership was revoked was refused with {}, not {forbidden}",
                case.tool,
                case.persona,
                error_code(&ex).unwrap_or_default()
            )
        } else {
            return Vec::new();
        };
        vec![trail.observed_as(&case.persona, "PAG-7", detail, &case.tool, &next, &ex)]
    })
}

/// The control API's deadlines and the kind each is the contract's deadline of.
const DEADLINES: [(&str, chataigne_contract::tools::Kind); 3] = [
    ("read", chataigne_contract::tools::Kind::Read),
    ("analytics", chataigne_contract::tools::Kind::Analytics),
    ("write", chataigne_contract::tools::Kind::Write),
];

/// The faults this server's control API can inject: every tool past the deadline of its kind
/// and within it while the other kinds' are short (`matrices::deadline_rows`, LIM-4; the writes
/// with writes only, each with a key of the run's own), and `get_order` of an order of the busy
/// restaurant failing inside (SEC-2, as data_security.feature does).
pub fn fault_cases(engine: &Engine<'_>) -> Vec<FaultCase> {
    let ctx = engine.caller.ctx;
    let has = |f: &str| ctx.control.is_some() && ctx.capabilities.control_features.iter().any(|c| c == f);
    if !has("faults") {
        return Vec::new();
    }
    let mut rows = Vec::new();
    if has("deadlines") {
        for row in crate::matrices::deadline_rows(&ctx.dataset) {
            let (Some(args), Some(t)) = (row.args, engine.tool(row.tool.as_str())) else { continue };
            let tool = row.tool.as_str();
            let mut args = ctx.id_map.outbound(&args);
            let keyed = |args: &mut Value, tag: &str| {
                if args.get("idempotency_key").is_some() {
                    args["idempotency_key"] = json!(format!("fuzz-{tag}-{tool}-{:08x}", engine.seed));
                }
            };
            keyed(&mut args, "past");
            // A text or name of its own, so its effects can be counted after a retry.
            for member in ["text", "name"] {
                if args.get(member).is_some_and(Value::is_string) {
                    args[member] = json!(format!("fuzz past deadline {tool} {:08x}", engine.seed));
                }
            }
            let past = if t.writes { Injected::Outcome } else { Injected::Timeout };
            let deadline = Some(row.deadline.to_owned());
            rows.push(FaultCase {
                tool: tool.to_owned(),
                args: args.clone(),
                injected: past,
                deadline: deadline.clone(),
            });
            keyed(&mut args, "within");
            rows.push(FaultCase { tool: tool.to_owned(), args, injected: Injected::Within, deadline });
        }
    }
    if let (Some((restaurant, order)), true) =
        (engine.resolver.pools.received.first().cloned(), engine.tool("get_order").is_some())
    {
        let args = json!({ "restaurant_id": restaurant, "order_id": order });
        rows.extend([Injected::Internal, Injected::Dependency].map(|injected| FaultCase {
            tool: "get_order".to_owned(),
            args: args.clone(),
            injected,
            deadline: None,
        }));
    }
    rows
}

/// LIM-4 and SEC-2 on a read: past its deadline it fails with MCP_TOOL_TIMEOUT (`the call
/// fails with "MCP_TOOL_TIMEOUT"`); failing inside, with MCP_INTERNAL_ERROR or
/// MCP_DEPENDENCY_UNAVAILABLE revealing none of `rules::INTERNAL_MARKERS` (`the error reveals
/// none of these:`). The deadline and the faults are put back after each call.
pub fn faults(engine: &Engine<'_>, rng: TestRng, fixed: Option<FaultCase>) -> bool {
    let rows = match fixed {
        Some(case) => vec![case],
        None => fault_cases(engine),
    };
    let Some(control) = engine.caller.ctx.control.as_ref() else { return false };
    let runtime = engine.caller.runtime;
    let replay = |case: &FaultCase| Replay::Fault(case.clone());
    engine.run_rows(rows, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let ms = |name: &str| json!({ format!("{name}_ms"): 100 });
        let own = case.deadline();
        let others: serde_json::Map<String, Value> = DEADLINES
            .iter()
            .filter(|(name, _)| *name != own)
            .map(|(name, _)| (format!("{name}_ms"), json!(100)))
            .collect();
        let set = match case.injected {
            Injected::Outcome => runtime.block_on(control.set_deadlines(ms(own))).and_then(|()| {
                runtime.block_on(control.add_fault(json!({ "tool": case.tool, "delay_after_effect_ms": 500 })))
            }),
            Injected::Timeout => runtime.block_on(control.set_deadlines(ms(own))).and_then(|()| {
                runtime.block_on(control.add_fault(json!({ "tool": case.tool, "latency_ms": 500 })))
            }),
            Injected::Within => runtime.block_on(control.set_deadlines(Value::Object(others))).and_then(|()| {
                runtime.block_on(control.add_fault(json!({ "tool": case.tool, "latency_ms": 200 })))
            }),
            Injected::Internal => {
                runtime.block_on(control.add_fault(json!({ "tool": case.tool, "error": "internal" })))
            }
            Injected::Dependency => {
                runtime.block_on(control.add_fault(json!({ "tool": case.tool, "error": "dependency" })))
            }
        };
        let ex = if set.is_ok() { trail.call(&case.tool, &case.args) } else { None };
        // Put back whatever was set, whatever came of it: the other properties need the
        // server as it was.
        let _ = runtime.block_on(control.clear_faults());
        if matches!(case.injected, Injected::Timeout | Injected::Outcome | Injected::Within) {
            let defaults: serde_json::Map<String, Value> =
                DEADLINES.iter().map(|(name, kind)| (format!("{name}_ms"), json!(kind.deadline_ms()))).collect();
            let _ = runtime.block_on(control.set_deadlines(Value::Object(defaults)));
        }
        let Some(ex) = ex else { return Vec::new() };
        let out = trail.checked(&case.tool, &case.args, &ex).unwrap_or_default();
        let finding = match case.injected {
            // A refusal before the tool ran (access, arguments) is the other rules' to judge.
            Injected::Timeout => (succeeded(&ex) || error_code(&ex) == Some("MCP_OUTCOME_UNKNOWN")).then(|| {
                let detail = format!(
                    "{}: a read slowed past its 100 ms ({own}) deadline was not refused with MCP_TOOL_TIMEOUT ({})",
                    case.tool,
                    ex.summary()
                );
                ("LIM-4", detail)
            }),
            Injected::Within => {
                matches!(error_code(&ex), Some("MCP_TOOL_TIMEOUT" | "MCP_OUTCOME_UNKNOWN")).then(|| {
                    let detail = format!(
                        "{}: slowed by 200 ms, within its own ({own}) deadline, while the other kinds' were 100 ms, it was refused as past a deadline ({})",
                        case.tool,
                        ex.summary()
                    );
                    ("LIM-4", detail)
                })
            }
            Injected::Outcome => (succeeded(&ex) || error_code(&ex) == Some("MCP_TOOL_TIMEOUT")).then(|| {
                let detail = format!(
                    "{}: a write whose answer came past its 100 ms deadline was not refused with MCP_OUTCOME_UNKNOWN ({})",
                    case.tool,
                    ex.summary()
                );
                ("LIM-4", detail)
            }),
            Injected::Internal | Injected::Dependency => {
                let hits = rules::leaks(&ex, rules::INTERNAL_MARKERS);
                (ex.is_error() && !hits.is_empty()).then(|| {
                    let detail = format!(
                        "{}: an injected {:?} failure was answered with an error that shows {} ({})",
                        case.tool,
                        case.injected,
                        hits.join(", "),
                        ex.summary()
                    );
                    ("SEC-2", detail)
                })
            }
        };
        let finding = finding.or_else(|| match case.injected {
            Injected::Outcome => retried_once(engine, &mut trail, case, &ex),
            _ => None,
        });
        let Some((clause, detail)) = finding else { return out };
        let mut found = vec![trail.observed(clause, detail, &case.tool, &case.args, &ex)];
        found.extend(out);
        found
    })
}

/// Where each keyed write's effect is listed, and the member that tells it (`oracle::READ_BACK`).
const EFFECTS: &[(&str, &str, &str)] = &[
    ("create_instruction", "instructions", "text"),
    ("send_message", "messages", "text"),
    ("create_organization", "organizations", "name"),
    ("create_restaurant", "restaurants", "name"),
];

/// LIM-4 ("a retry with the same idempotency key is safe"): a keyed write answered
/// MCP_OUTCOME_UNKNOWN, retried with its key once its held answer is over, has one effect in all.
/// More than one is a second effect; fewer is not judged (a server may list it on a later page).
fn retried_once(
    engine: &Engine<'_>,
    trail: &mut Trail<'_, '_>,
    case: &FaultCase,
    first: &Exchange,
) -> Option<(&'static str, String)> {
    if error_code(first) != Some("MCP_OUTCOME_UNKNOWN") || case.args.get("idempotency_key").is_none() {
        return None;
    }
    let (_, key, field) = EFFECTS.iter().find(|(t, _, _)| *t == case.tool)?;
    let text = case.args.get(*field)?.as_str()?.to_owned();
    // The held answer (500 ms after the effect) is over: the first call has finished.
    std::thread::sleep(std::time::Duration::from_millis(550));
    let retry = trail.call(&case.tool, &case.args)?;
    let (read, args) = super::sequences::read_back(engine, &case.tool, &case.args)?;
    let listed = trail.call(read, &args)?;
    let data = listed.structured()?.get("data")?;
    let n = rules::count_with(data, key, field, &text)?;
    (n > 1).then(|| {
        (
            "LIM-4",
            format!(
                "{}: answered MCP_OUTCOME_UNKNOWN, then retried with the same key ({}): {n} effects, not one",
                case.tool,
                retry.summary()
            ),
        )
    })
}

/// Seconds before the key's last minute, then past its 24 hours (features/idempotency.feature).
const BEFORE_EXPIRY_S: u64 = 23 * 3600 + 3540;
const PAST_EXPIRY_S: u64 = 61;

/// IDEM-6: a key is remembered for 24 hours, then forgotten. The owner creates an instruction
/// with a key; 23 h 59 min later on the server's clock (control API) the same call is a replay
/// (`the answer is a replay`); 61 s later it is a new call (`the answer is not a replay`) and
/// the restaurant has two instructions with the text. The clock stays advanced (the run's reset
/// brings it back); run once, last of the properties that need the control API.
pub fn expiry(engine: &Engine<'_>, rng: TestRng, fixed: Option<ExpiryCase>) -> bool {
    let ctx = engine.caller.ctx;
    let clock =
        ctx.control.as_ref().filter(|_| ctx.capabilities.control_features.iter().any(|f| f == "clock"));
    let Some(control) = clock else { return false };
    let Some(busy) = engine.resolver.pools.first(IdKind::Restaurant) else { return false };
    let keyed = engine.tool("create_instruction").is_some_and(|t| t.has_property("idempotency_key"));
    if !keyed || engine.tool("list_instructions").is_none() {
        return false;
    }
    let strategy = any::<u32>()
        .prop_map(move |tag| ExpiryCase {
            restaurant: busy.clone(),
            text: format!("fuzz expiry {tag:08x}"),
            key: format!("fuzz-expiry-{tag:08x}"),
        })
        .boxed();
    let strategy = fixed.map_or(strategy, |case| Just(case).boxed());
    let replay = |case: &ExpiryCase| Replay::Expiry(case.clone());
    let runtime = engine.caller.runtime;
    engine.run_property(strategy, 1, 0, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let args = instruction(&case.restaurant, &case.text, &case.key);
        let Some(first) = trail.call("create_instruction", &args) else { return Vec::new() };
        let mut out = trail.checked("create_instruction", &args, &first).unwrap_or_default();
        if !succeeded(&first) || runtime.block_on(control.advance_clock(BEFORE_EXPIRY_S)).is_err() {
            return out;
        }
        // The differential oracle's reference follows the clock (IDEM-6 on both).
        engine.caller.ctx.oracle.advance_clock(BEFORE_EXPIRY_S);
        let Some(before) = trail.call("create_instruction", &args) else { return out };
        out.extend(trail.checked("create_instruction", &args, &before).unwrap_or_default());
        if !succeeded(&before) {
            return out;
        }
        if !rules::is_replay(&before) {
            let detail = format!(
                "create_instruction: the same call and key 23 h 59 min later was not a replay ({})",
                before.summary()
            );
            let mut found = vec![trail.observed("IDEM-6", detail, "create_instruction", &args, &before)];
            found.extend(out);
            return found;
        }
        if runtime.block_on(control.advance_clock(PAST_EXPIRY_S)).is_err() {
            return out;
        }
        engine.caller.ctx.oracle.advance_clock(PAST_EXPIRY_S);
        let Some(after) = trail.call("create_instruction", &args) else { return out };
        out.extend(trail.checked("create_instruction", &args, &after).unwrap_or_default());
        if !succeeded(&after) {
            return out;
        }
        if rules::is_replay(&after) {
            let detail = format!(
                "create_instruction: the same call and key 24 h 1 min later was still a replay: the key was not forgotten ({})",
                after.summary()
            );
            let at = trail.steps.len() - 1;
            let mut found: Vec<Observed> = observed_at(&trail, at, "IDEM-6", detail).into_iter().collect();
            found.extend(out);
            return found;
        }
        match count_instructions(&mut trail, &case.restaurant, &case.text) {
            Some(n) if n != 2 => {
                let detail = format!(
                    "create_instruction: a key forgotten after 24 h and the call made again, answered as new, left {n} instruction(s), not 2"
                );
                let at = trail.steps.len() - 1;
                observed_at(&trail, at, "IDEM-6", detail).into_iter().chain(out).collect()
            }
            _ => out,
        }
    })
}
