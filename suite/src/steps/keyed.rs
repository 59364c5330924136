//! Idempotency-keyed writes (IDEM-1..8): creating instructions, sending messages, creating
//! organizations and restaurants with a key; replays; and counting effects afterwards. Texts and
//! keys carry the scenario's canary (`CANARY`), so runs never collide on a staging server.

use anyhow::anyhow;
use cucumber::{then, when};
use serde_json::{Value, json};

use crate::steps::params::{Count, Quoted, Target};
use crate::world::{Concurrent, ConformanceWorld};

fn instruction_args(w: &ConformanceWorld, target: &str, text: &str, key: &str) -> anyhow::Result<Value> {
    Ok(
        json!({ "restaurant_id": w.landmark(target)?, "text": w.expand(text), "idempotency_key": w.expand(key) }),
    )
}

#[when(expr = "they create the instruction {quoted} in {target} with the key {quoted}")]
async fn create_instruction(
    w: &mut ConformanceWorld,
    text: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let args = instruction_args(w, &target, &text, &key)?;
    w.dirty = true;
    w.call_tool("create_instruction", args).await.map(drop)
}

/// The same arguments, their keys written in another order (JSON equality, IDEM-2).
#[when(
    expr = "they create the instruction {quoted} in {target} with the key {quoted}, the arguments in another order"
)]
async fn create_instruction_reordered(
    w: &mut ConformanceWorld,
    text: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let args = w.ctx().id_map.outbound(&instruction_args(w, &target, &text, &key)?);
    // serde_json writes keys sorted; this text writes them reversed.
    let text = format!(
        r#"{{"text":{},"restaurant_id":{},"idempotency_key":{}}}"#,
        args["text"], args["restaurant_id"], args["idempotency_key"]
    );
    w.dirty = true;
    w.call_tool_text("create_instruction", &text).await.map(drop)
}

/// The same arguments, every non-ASCII character of the text written as a JSON `\u` escape: the
/// same JSON value (RFC 8259 §7), so the same call (IDEM-2 compares arguments, not bytes).
#[when(
    expr = "they create the instruction {quoted} in {target} with the key {quoted}, its text written with JSON escapes"
)]
async fn create_instruction_escaped(
    w: &mut ConformanceWorld,
    text: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let args = w.ctx().id_map.outbound(&instruction_args(w, &target, &text, &key)?);
    let escaped = args["text"].to_string().chars().fold(String::new(), |mut out, c| {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
        out
    });
    let text = format!(
        r#"{{"idempotency_key":{},"restaurant_id":{},"text":{escaped}}}"#,
        args["idempotency_key"], args["restaurant_id"]
    );
    w.dirty = true;
    w.call_tool_text("create_instruction", &text).await.map(drop)
}

#[when(expr = "they send the message {quoted} in {target} with the key {quoted}")]
async fn send_message(
    w: &mut ConformanceWorld,
    text: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let args = message_args(w, None, &target, &text, &key)?;
    w.dirty = true;
    w.call_tool("send_message", args).await.map(drop)
}

/// `send_message`'s arguments for the conversation `target`, addressed through its own restaurant
/// or through `through`.
pub(crate) fn message_args(
    w: &ConformanceWorld,
    through: Option<&str>,
    target: &str,
    text: &str,
    key: &str,
) -> anyhow::Result<Value> {
    let conversation = w.landmark(target)?;
    let restaurant = match through {
        Some(through) => w.landmark(through)?,
        None => w.restaurant_of(&conversation)?,
    };
    Ok(json!({
        "restaurant_id": restaurant,
        "conversation_id": conversation,
        "text": w.expand(text),
        "idempotency_key": w.expand(key),
    }))
}

/// AUTH-5: a message to a conversation addressed through a restaurant it does not belong to.
#[when(expr = "they send the message {quoted} through {target} in {target} with the key {quoted}")]
async fn send_message_through(
    w: &mut ConformanceWorld,
    text: Quoted,
    through: Target,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let args = message_args(w, Some(&through), &target, &text, &key)?;
    w.dirty = true;
    w.call_tool("send_message", args).await.map(drop)
}

#[when(regex = r#"^they create the organization "([^"]*)" with the key "([^"]*)"$"#)]
async fn create_organization(w: &mut ConformanceWorld, name: String, key: String) -> anyhow::Result<()> {
    let args = json!({ "name": w.expand(&name), "idempotency_key": w.expand(&key) });
    w.dirty = true;
    w.call_tool("create_organization", args).await.map(drop)
}

/// IDEM-2 on the stateless revision: the call sent over 2026-07-28 with the client of
/// `the server serves protocol version 2026-07-28`, no session. A key is the pair's and the
/// tool's, whatever request carries it: a retry is replayed there too.
#[when(regex = r#"^they create the organization "([^"]*)" with the key "([^"]*)" over 2026-07-28$"#)]
async fn create_organization_2026(w: &mut ConformanceWorld, name: String, key: String) -> anyhow::Result<()> {
    let args = json!({ "name": w.expand(&name), "idempotency_key": w.expand(&key) });
    w.dirty = true;
    let sent = w.ctx().id_map.outbound(&args);
    let client = w.own_session.as_mut().ok_or_else(|| anyhow::anyhow!("no 2026-07-28 client yet"))?;
    let ex = client
        .request_2026("tools/call", json!({ "name": "create_organization", "arguments": sent }), &[])
        .await;
    w.record(ex);
    let persona = w.persona()?.to_owned();
    w.compare_with_reference(&persona, "create_organization", &args).await;
    Ok(())
}

#[when(expr = "they create the restaurant {quoted} in {target} with the key {quoted}")]
async fn create_restaurant(
    w: &mut ConformanceWorld,
    name: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let args = json!({
        "organization_id": w.landmark(&target)?,
        "name": w.expand(&name),
        "timezone": "Europe/Paris",
        "idempotency_key": w.expand(&key),
    });
    w.dirty = true;
    w.call_tool("create_restaurant", args).await.map(drop)
}

/// Valid arguments of a keyed tool, without the key.
fn keyed_args(w: &ConformanceWorld, tool: &str) -> anyhow::Result<Value> {
    let l = &w.dataset().landmarks;
    let text = format!("Key check {}", w.canary);
    Ok(match tool {
        "send_message" => {
            json!({ "restaurant_id": l.busy_restaurant, "conversation_id": l.long_conversation, "text": text })
        }
        "create_instruction" => json!({ "restaurant_id": l.busy_restaurant, "text": text }),
        "create_organization" => json!({ "name": text }),
        "create_restaurant" => {
            json!({ "organization_id": l.home_organization, "name": text, "timezone": "Europe/Paris" })
        }
        other => return Err(anyhow!("{other} is not an idempotency-keyed tool")),
    })
}

/// A key of exactly `len` characters, unique to the scenario (the canary's random tail first).
fn key_of(w: &ConformanceWorld, len: usize) -> String {
    let tail: String = w.canary.chars().rev().collect();
    tail.chars().cycle().take(len).collect()
}

#[when(regex = r#"^they call "([a-z_]+)" with a key of (\d+) characters$"#)]
async fn keyed_len(w: &mut ConformanceWorld, tool: String, len: usize) -> anyhow::Result<()> {
    let mut args = keyed_args(w, &tool)?;
    args["idempotency_key"] = json!(key_of(w, len));
    w.dirty = true;
    w.call_tool(&tool, args).await.map(drop)
}

/// IDEM-1 counts characters, blanks among them: a key of `len` characters whose first or last
/// is a space (a reader that trims every string measures one fewer).
#[when(regex = r#"^they call "([a-z_]+)" with a key of (\d+) characters, a space (first|last)$"#)]
async fn keyed_len_blank(
    w: &mut ConformanceWorld,
    tool: String,
    len: usize,
    side: String,
) -> anyhow::Result<()> {
    let mut args = keyed_args(w, &tool)?;
    let body = key_of(w, len.saturating_sub(1));
    let key = if side == "first" { format!(" {body}") } else { format!("{body} ") };
    args["idempotency_key"] = json!(key);
    w.dirty = true;
    w.call_tool(&tool, args).await.map(drop)
}

#[when(regex = r#"^they call "([a-z_]+)" without a key$"#)]
async fn keyed_none(w: &mut ConformanceWorld, tool: String) -> anyhow::Result<()> {
    let args = keyed_args(w, &tool)?;
    w.dirty = true;
    w.call_tool(&tool, args).await.map(drop)
}

/// IDEM-4: `n` identical calls at once, each through its own session of the same persona.
#[when(
    expr = "{count} identical calls create the instruction {quoted} in {target} with the key {quoted} at once"
)]
async fn identical_at_once(
    w: &mut ConformanceWorld,
    n: Count,
    text: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let n = n.0;
    let args = instruction_args(w, &target, &text, &key)?;
    let persona = w.persona()?.to_owned();
    w.dirty = true;
    let calls = (0..n)
        .map(|_| Concurrent {
            persona: persona.clone(),
            tool: "create_instruction".to_owned(),
            args: args.clone(),
            delay_ms: 0,
        })
        .collect();
    w.concurrently(calls).await
}

/// IDEM-5 while the first call runs: the same key and arguments from two personas (another user,
/// or another OAuth client) at once, each through its own session; [`PAIRS`] such pairs at once,
/// each with a key of its own, so that at least one pair overlaps on the server however fast it
/// answers. An in-progress marker scoped more widely than the key refuses one of a pair.
#[when(
    expr = "{snake} and {snake} create the instruction {quoted} in {target} with the key {quoted} at once"
)]
async fn two_personas_at_once(
    w: &mut ConformanceWorld,
    a: super::params::Snake,
    b: super::params::Snake,
    text: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    const PAIRS: usize = 4;
    let (a, b) = (String::from(a), String::from(b));
    w.dirty = true;
    let mut calls = Vec::new();
    for i in 0..PAIRS {
        let args = instruction_args(w, &target, &format!("{} {i}", &*text), &format!("{}-{i}", &*key))?;
        for persona in [&a, &b] {
            calls.push(Concurrent {
                persona: persona.clone(),
                tool: "create_instruction".to_owned(),
                args: args.clone(),
                delay_ms: 0,
            });
        }
    }
    w.concurrently(calls).await
}

/// Every call of the last calls at once succeeded, and none is a replay.
#[then("every call succeeded, and none is a replay")]
async fn all_ran(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let n = w.last_concurrent;
    let calls: Vec<_> = w.tool_calls().collect();
    let at_once = &calls[calls.len().saturating_sub(n)..];
    let ran = |ex: &&crate::client::Exchange| {
        !ex.is_error()
            && ex.structured().and_then(|s| s.pointer("/meta/replayed")).and_then(Value::as_bool)
                != Some(true)
            && ex.structured().and_then(|s| s.get("data")).is_some()
    };
    let Some(bad) = at_once.iter().find(|ex| !ran(ex)) else { return Ok(()) };
    let got = bad.summary();
    Err(w.fail_about(Some(bad), format!("{n} successes, none a replay"), got))
}

/// IDEM-4 for a record of no restaurant: identical organization creations at once (a claim that
/// locks a restaurant's row has nothing to lock here).
#[when(expr = "{count} identical calls create the organization {quoted} with the key {quoted} at once")]
async fn identical_organizations_at_once(
    w: &mut ConformanceWorld,
    n: Count,
    name: Quoted,
    key: Quoted,
) -> anyhow::Result<()> {
    let args = json!({ "name": w.expand(&name), "idempotency_key": w.expand(&key) });
    let persona = w.persona()?.to_owned();
    w.dirty = true;
    let calls = (0..n.0)
        .map(|_| Concurrent {
            persona: persona.clone(),
            tool: "create_organization".to_owned(),
            args: args.clone(),
            delay_ms: 0,
        })
        .collect();
    w.concurrently(calls).await
}

/// IDEM-4: the second call comes while the first one is still running.
#[when(
    expr = "they create the instruction {quoted} in {target} with the key {quoted} twice, the second call {count} ms after the first"
)]
async fn twice_overlapping(
    w: &mut ConformanceWorld,
    text: Quoted,
    target: Target,
    key: Quoted,
    after: Count,
) -> anyhow::Result<()> {
    let args = instruction_args(w, &target, &text, &key)?;
    let persona = w.persona()?.to_owned();
    w.dirty = true;
    let call = |delay_ms| Concurrent {
        persona: persona.clone(),
        tool: "create_instruction".to_owned(),
        args: args.clone(),
        delay_ms,
    };
    w.concurrently(vec![call(0), call(u64::try_from(after.0)?)]).await
}

#[then("every call succeeded or was told the operation is in progress")]
async fn success_or_in_progress(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    for ex in w.tool_calls().filter(|e| e.tool.as_deref() != Some("list_instructions")) {
        if !crate::rules::success_or_in_progress(ex) {
            return Err(w.fail_about(Some(ex), "a success or MCP_OPERATION_IN_PROGRESS", ex.summary()));
        }
    }
    Ok(())
}

#[then("the answer is a replay")]
async fn replayed(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    if w.success()?.meta.replayed { Ok(()) } else { Err(w.fail("meta.replayed: true", "false")) }
}

#[then("the answer is not a replay")]
async fn not_replayed(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    if w.success()?.meta.replayed { Err(w.fail("meta.replayed: false (a new call)", "true")) } else { Ok(()) }
}

/// IDEM-2: the replay gives back the stored result (same created IDs).
#[then("the data is the same as the first call's")]
async fn same_data(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let last = w.success()?.data;
    // The scenario's first call of the same tool (a step before it may have read something).
    let tool = w.last()?.tool.clone();
    let first = w
        .tool_calls()
        .find(|e| e.tool == tool)
        .and_then(|e| e.structured())
        .and_then(|s| s.get("data"))
        .map(|d| w.ctx().id_map.inbound(d))
        .ok_or_else(|| anyhow!("no first call"))?;
    if first == last {
        Ok(())
    } else {
        Err(w.fail(
            format!("data {}", crate::client::compact(&first, 600)),
            crate::client::compact(&last, 600),
        ))
    }
}

#[then("the error asks to retry after a delay")]
async fn retry_after(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let body = w.tool_error()?;
    if crate::rules::asks_to_retry_later(w.last()?) {
        Ok(())
    } else {
        Err(w.fail("retry_after_ms > 0", format!("{:?}", body.retry_after_ms)))
    }
}

/// The `field` of every item of the list under `key` in a success's `data`. An answer the suite
/// cannot read (no array under `key`, an item without a string `field`) blocks the check on
/// ENV-7: counted as no item, "exactly 0" would pass on anything.
fn strings_of<'a>(
    w: &ConformanceWorld,
    data: &'a Value,
    key: &str,
    field: &str,
) -> anyhow::Result<Vec<&'a str>> {
    let pointer = format!("/{key}");
    let items = w.field(data, &pointer)?.as_array().ok_or_else(|| w.blocked(&pointer))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| w.blocked(&format!("{pointer}/{i}/{field}")))
        })
        .collect()
}

/// Count the instructions of a restaurant, or the messages of a conversation, with this text.
#[then(expr = "{target} has exactly {count} instruction(s)/message(s) {quoted}")]
async fn count_effects(
    w: &mut ConformanceWorld,
    target: Target,
    n: Count,
    text: Quoted,
) -> anyhow::Result<()> {
    let n = n.0;
    let id = w.landmark(&target)?;
    let text = w.expand(&text);
    let (tool, mut args, key) = match id.split('_').next() {
        Some("rst") => ("list_instructions", json!({ "restaurant_id": id, "limit": 50 }), "instructions"),
        Some("cnv") => (
            "get_conversation",
            json!({ "restaurant_id": w.restaurant_of(&id)?, "conversation_id": id, "message_limit": 100 }),
            "messages",
        ),
        _ => return Err(anyhow!("{id} has neither instructions nor messages")),
    };
    let mut count = 0;
    let mut complete = false;
    for _ in 0..crate::world::MAX_WALK_PAGES {
        w.call_tool(tool, args.clone()).await?;
        let success = w.success()?;
        count += strings_of(w, &success.data, key, "text")?.into_iter().filter(|t| *t == text).count();
        match success.meta.next_cursor {
            Some(c) => args["cursor"] = json!(c),
            None => {
                complete = true;
                break;
            }
        }
    }
    if !complete {
        return Err(w.cut_walk(format!("counting the {key} of {id}")));
    }
    if count == n { Ok(()) } else { Err(w.fail(format!("{n} {key} with the text {text:?}"), count)) }
}

#[then(regex = r#"^they are a member of exactly (\d+) organizations? named "([^"]*)"$"#)]
async fn count_organizations(w: &mut ConformanceWorld, n: usize, name: String) -> anyhow::Result<()> {
    let name = w.expand(&name);
    let mut args = json!({ "limit": 50 });
    let mut count = 0;
    let mut complete = false;
    for _ in 0..crate::world::MAX_WALK_PAGES {
        w.call_tool("list_organizations", args.clone()).await?;
        let success = w.success()?;
        count +=
            strings_of(w, &success.data, "organizations", "name")?.into_iter().filter(|n| *n == name).count();
        match success.meta.next_cursor {
            Some(c) => args["cursor"] = json!(c),
            None => {
                complete = true;
                break;
            }
        }
    }
    if !complete {
        return Err(w.cut_walk("counting the organizations"));
    }
    if count == n { Ok(()) } else { Err(w.fail(format!("{n} organizations named {name:?}"), count)) }
}

/// IDEM-3 on every member of every keyed write (`matrices::key_reuse_rows`): each write made,
/// then made again with its key and one member changed, pair after pair.
#[when("they reuse each keyed write's key with one argument changed at a time")]
async fn reuse_keys(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows = crate::matrices::key_reuse_rows(w.dataset());
    if rows.is_empty() {
        return Err(w.fail("keyed writes whose key can be reused", "none derived from the contract"));
    }
    w.dirty = true;
    for row in &rows {
        w.call_tool(row.tool.as_str(), row.first.clone()).await?;
        w.call_tool(row.tool.as_str(), row.changed.clone()).await?;
    }
    Ok(())
}

/// Each pair of the step before: the first call served (a replay of an earlier run's counts),
/// the second not served at all — refused (MCP_IDEMPOTENCY_MISMATCH, or an access refusal of the
/// changed ID), never replayed nor run as a new call.
#[then("each reuse was refused, neither replayed nor run anew")]
async fn reuses_refused(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows = crate::matrices::key_reuse_rows(w.dataset());
    let calls: Vec<usize> =
        w.history.iter().enumerate().filter(|(_, e)| e.tool.is_some()).map(|(i, _)| i).collect();
    if calls.len() < 2 * rows.len() {
        return Err(anyhow!("this step needs the reuses made before it"));
    }
    let pairs = calls[calls.len() - 2 * rows.len()..].chunks(2);
    let mut misses = Vec::new();
    let mut first_miss = None;
    for (row, pair) in rows.iter().zip(pairs) {
        let (first, second) = (&w.history[pair[0]], &w.history[pair[1]]);
        let tool = row.tool.as_str();
        let what = if !crate::rules::is_success(first) {
            Some(format!("{tool}: the first call was not served ({})", first.summary()))
        } else if crate::rules::is_success(second) {
            let how = if crate::rules::is_replay(second) { "replayed" } else { "run as a new call" };
            Some(format!(
                "{tool}: the key reused with another `{}` was {how} ({})",
                row.member,
                second.summary()
            ))
        } else {
            None
        };
        if let Some(what) = what {
            first_miss.get_or_insert(pair[1]);
            misses.push(what);
        }
    }
    if misses.is_empty() {
        return Ok(());
    }
    let got = misses.iter().map(|m| format!("\n  - {m}")).collect::<String>();
    Err(w.fail_about(
        w.history.get(first_miss.unwrap_or(0)),
        "every reuse of a key with another argument refused",
        got,
    ))
}
