//! Pages and cursors: page sizes and `next_cursor` (PAG-1..3, PAG-8), walking every page and
//! comparing with the dataset (PAG-4, LIM-5), continuing, changing and reusing cursors
//! (PAG-5..7).

use std::collections::{HashMap, HashSet};

use anyhow::anyhow;
use base64::Engine as _;
use chataigne_contract::MAX_STRUCTURED_BYTES;
use cucumber::{then, when};
use serde_json::Value;

use crate::steps::reads::{list_call, list_tool, with_filters};
use crate::world::{ConformanceWorld, ListCall, Walk, WalkPage};

/// The items of the last success under `key` (or its plural: "1 order").
fn page_items(w: &ConformanceWorld, key: &str) -> anyhow::Result<Vec<Value>> {
    let success = w.success()?;
    let data = &success.data;
    let plural = if key.ends_with('s') { key.to_owned() } else { format!("{key}s") };
    let pointer = if data.get(key).is_some() { format!("/{key}") } else { format!("/{plural}") };
    // Another shape than the contract's blocks the clause on ENV-7 rather than failing it.
    w.field(data, &pointer)?.as_array().cloned().ok_or_else(|| w.blocked(&pointer))
}

#[then(regex = r"^the page holds (\d+) (\w+)$")]
async fn holds(w: &mut ConformanceWorld, n: usize, key: String) -> anyhow::Result<()> {
    let items = page_items(w, &key)?;
    if items.len() == n {
        Ok(())
    } else {
        Err(w.fail(format!("{n} {key}"), format!("{} {key}", items.len())))
    }
}

/// The page is exactly positions `from..=to` (1-based) of the restaurant's orders, newest first.
#[then(
    regex = r#"^the page holds the orders of (the [a-z][a-z -]*?[a-z]|"[^"]+") from position (\d+) to (\d+), newest first$"#
)]
async fn holds_range(w: &mut ConformanceWorld, target: String, from: usize, to: usize) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let all = orders_newest_first(w, &restaurant, None);
    let expected = all.get(from.saturating_sub(1)..to.min(all.len())).unwrap_or_default();
    let got: Vec<String> = page_items(w, "orders")?
        .iter()
        .map(|o| o.get("id").and_then(Value::as_str).unwrap_or("(no id)").to_owned())
        .collect();
    if got == expected {
        Ok(())
    } else {
        Err(w.fail(
            format!("orders {from} to {to}: [{}]", expected.join(", ")),
            format!("[{}]", got.join(", ")),
        ))
    }
}

#[then(regex = r"^the page holds fewer than (\d+) (\w+)$")]
async fn holds_fewer(w: &mut ConformanceWorld, n: usize, key: String) -> anyhow::Result<()> {
    let items = page_items(w, &key)?;
    if items.len() < n && !items.is_empty() {
        Ok(())
    } else {
        Err(w.fail(format!("between 1 and {} {key}", n - 1), format!("{} {key}", items.len())))
    }
}

#[then("the page has a next cursor")]
async fn has_cursor(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    match w.success()?.meta.next_cursor {
        Some(c) if !c.is_empty() => Ok(()),
        _ => Err(w.fail("meta.next_cursor, since more items follow", "none")),
    }
}

#[then("the page has no next cursor")]
async fn no_cursor(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    match w.success()?.meta.next_cursor {
        None => Ok(()),
        Some(_) => Err(w.fail("no meta.next_cursor on the last page", "a next_cursor")),
    }
}

#[then("the page is marked truncated")]
async fn truncated(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    if w.success()?.meta.truncated { Ok(()) } else { Err(w.fail("meta.truncated: true", "false")) }
}

fn list(w: &ConformanceWorld) -> anyhow::Result<ListCall> {
    w.list.clone().ok_or_else(|| anyhow!("no list call yet to continue"))
}

fn cursor_of(w: &ConformanceWorld, list: &ListCall) -> anyhow::Result<String> {
    list.next_cursor
        .clone()
        .ok_or_else(|| w.fail("a next_cursor on the previous page, to continue from", "none"))
}

async fn next_page(
    w: &mut ConformanceWorld,
    list: ListCall,
    cursor: String,
    filters: &str,
) -> anyhow::Result<()> {
    let mut args = with_filters(w, list.args.clone(), filters)?;
    if let Some(obj) = args.as_object_mut() {
        obj.insert("cursor".into(), Value::String(cursor));
    }
    list_call(w, &list.tool, args, &list.key).await
}

#[when("they list the next page")]
async fn next(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let list = list(w)?;
    let cursor = cursor_of(w, &list)?;
    next_page(w, list, cursor, "").await
}

/// The same call with some arguments changed (`limit 7`, `channel "phone"`, …).
#[when(regex = r"^they list the next page with (.+)$")]
async fn next_with(w: &mut ConformanceWorld, filters: String) -> anyhow::Result<()> {
    let list = list(w)?;
    let cursor = cursor_of(w, &list)?;
    next_page(w, list, cursor, &filters).await
}

#[when(expr = "the persona {string} lists the next page")]
async fn next_as(w: &mut ConformanceWorld, persona: String) -> anyhow::Result<()> {
    let list = list(w)?;
    let cursor = cursor_of(w, &list)?;
    w.use_persona(&persona)?;
    next_page(w, list, cursor, "").await
}

#[when(
    regex = r"^they list the next page, passing the cursor (flipped in its middle|flipped at its first character|truncated by one character|re-encoded in base64|as an empty string)$"
)]
async fn next_tampered(w: &mut ConformanceWorld, how: String) -> anyhow::Result<()> {
    let list = list(w)?;
    let cursor = cursor_of(w, &list)?;
    let changed = tamper(&cursor, &how);
    if changed == cursor {
        return Err(anyhow!("tampering left the cursor unchanged"));
    }
    next_page(w, list, changed, "").await
}

/// Change `cursor` the way the step says; never returns it unchanged (but for an empty one).
pub fn tamper(cursor: &str, how: &str) -> String {
    let mut chars: Vec<char> = cursor.chars().collect();
    let flip = |c: char| match c {
        'z' => 'a',
        'Z' => 'A',
        '9' => '0',
        c if c.is_ascii_alphanumeric() => (c as u8 + 1) as char,
        _ => 'A',
    };
    match how {
        "flipped in its middle" if !chars.is_empty() => {
            let i = chars.len() / 2;
            chars[i] = flip(chars[i]);
            chars.into_iter().collect()
        }
        "flipped at its first character" if !chars.is_empty() => {
            chars[0] = flip(chars[0]);
            chars.into_iter().collect()
        }
        "truncated by one character" => {
            chars.pop();
            chars.into_iter().collect()
        }
        "re-encoded in base64" => base64::engine::general_purpose::STANDARD.encode(cursor),
        _ => String::new(),
    }
}

/// Every page of a list, following `next_cursor` until it is absent; optionally with a new
/// order arriving (control API) after each page, to prove the cursor is a keyset (PAG-4).
#[when(
    regex = r#"^they walk all the (orders|conversations|instructions|messages) of (the [a-z][a-z -]*?[a-z]|"[^"]+")(?: with (.+?))?(, while a new order arrives after each of the first three pages)?$"#
)]
async fn walk(
    w: &mut ConformanceWorld,
    noun: String,
    target: String,
    filters: String,
    inserting: String,
) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let inserting = !inserting.is_empty();
    if inserting && noun != "orders" {
        return Err(anyhow!("only orders can arrive during a walk"));
    }
    let (tool, args, key) = list_tool(w, &noun, &id)?;
    let args = with_filters(w, args, &filters)?;
    let bound = w.dataset().orders.len() + w.dataset().messages.len() + 10;
    let mut walk = Walk { key: key.clone(), pages: Vec::new() };
    let mut cursor: Option<String> = None;
    loop {
        let mut page_args = args.clone();
        if let (Some(c), Some(obj)) = (&cursor, page_args.as_object_mut()) {
            obj.insert("cursor".into(), Value::String(c.clone()));
        }
        w.call_tool(&tool, page_args).await?;
        let n = walk.pages.len() + 1;
        let success = w.success().map_err(|e| anyhow!("page {n} of the walk failed\n{e}"))?;
        let pointer = format!("/{key}");
        let items =
            w.field(&success.data, &pointer)?.as_array().cloned().ok_or_else(|| w.blocked(&pointer))?;
        let ex = w.last()?;
        walk.pages.push(WalkPage {
            items,
            next_cursor: success.meta.next_cursor.clone(),
            truncated: success.meta.truncated,
            structured_bytes: ex.structured().map(|s| s.to_string().len()).unwrap_or(0),
            request_id: success.meta.request_id.clone(),
        });
        cursor = success.meta.next_cursor;
        if cursor.is_none() {
            break;
        }
        // Three arrivals shift every later page of an offset cursor: enough to show it, and each
        // costs a round trip to the control API in the run's serial phase.
        if inserting && walk.pages.len() <= 3 {
            w.dirty = true;
            let restaurant = w.ctx().id_map.to_server(&id);
            w.control()?.new_order(&restaurant).await?;
        }
        if walk.pages.len() > bound {
            return Err(w.fail("the walk to end", format!("still a next_cursor after {bound} pages")));
        }
    }
    w.list = Some(ListCall { tool, args, key, next_cursor: None });
    w.walk = Some(walk);
    Ok(())
}

fn the_walk(w: &ConformanceWorld) -> anyhow::Result<&Walk> {
    w.walk.as_ref().ok_or_else(|| anyhow!("no walk yet: add `When they walk all the … of …`"))
}

/// Which items of the walk, outside `expected`, the comparison leaves out.
#[derive(Clone, Copy, PartialEq)]
enum Others {
    /// None: every other item is a failure.
    Refused,
    /// Items created during the walk.
    Ignored,
    /// Items added before the walk, by earlier runs or by people (a server nothing resets keeps
    /// them): each must still come once and in its place in the documented order, newest first
    /// by this timestamp field, then `id`.
    Added(&'static str),
}

/// Compare the walk's IDs with `expected`, in order; point at the page where they part. Items
/// not in `expected` are judged as `others` says.
fn compare(w: &ConformanceWorld, what: &str, expected: &[String], others: Others) -> anyhow::Result<()> {
    let walk = the_walk(w)?;
    let known: HashSet<&str> = expected.iter().map(String::as_str).collect();
    let got: Vec<String> = walk
        .items()
        .filter(|i| {
            let id = i.get("id").and_then(Value::as_str).unwrap_or_default();
            others == Others::Refused || known.contains(id)
        })
        .map(|i| i.get("id").and_then(Value::as_str).unwrap_or("(no id)").to_owned())
        .collect();
    if got == expected {
        return match others {
            Others::Added(field) => match added_out_of_place(walk, field) {
                None => Ok(()),
                Some((page, problem)) => {
                    let rid = walk.pages.get(page).map(|p| p.request_id.as_str());
                    let ex = rid.and_then(|rid| w.history.iter().find(|e| e.request_id() == Some(rid)));
                    Err(w.fail_about(
                        ex,
                        format!("every item once, newest first ({field} desc, id desc), additions included"),
                        format!("page {}: {problem}", page + 1),
                    ))
                }
            },
            _ => Ok(()),
        };
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for id in &got {
        *counts.entry(id).or_default() += 1;
    }
    let mut dups: Vec<&str> = counts.iter().filter(|(_, n)| **n > 1).map(|(id, _)| *id).collect();
    dups.sort_unstable();
    let got_set: HashSet<&str> = got.iter().map(String::as_str).collect();
    let want_set: HashSet<&str> = expected.iter().map(String::as_str).collect();
    let missing: Vec<&str> = expected.iter().map(String::as_str).filter(|id| !got_set.contains(id)).collect();
    let extra: Vec<&str> = got.iter().map(String::as_str).filter(|id| !want_set.contains(id)).collect();
    let at = got.iter().zip(expected).position(|(a, b)| a != b).unwrap_or(got.len().min(expected.len()));
    // The page holding position `at`, to show its exchange.
    let mut seen = 0;
    let page = walk.pages.iter().position(|p| {
        seen += p.items.len();
        seen > at
    });
    let rid = page.and_then(|p| walk.pages.get(p)).map(|p| p.request_id.as_str());
    let ex = rid.and_then(|rid| w.history.iter().find(|e| e.request_id() == Some(rid)));
    let show = |ids: &[&str]| {
        let head: Vec<&str> = ids.iter().take(8).copied().collect();
        if ids.len() > 8 {
            format!("[{}, … {} in all]", head.join(", "), ids.len())
        } else {
            format!("[{}]", head.join(", "))
        }
    };
    let got_text = format!(
        "{} items over {} pages; duplicates {}; missing {}; not expected {}; first difference at position {} (page {}): {} where {} was expected",
        got.len(),
        walk.pages.len(),
        show(&dups),
        show(&missing),
        show(&extra),
        at + 1,
        page.map_or(0, |p| p + 1),
        got.get(at).map_or("nothing", String::as_str),
        expected.get(at).map_or("nothing", String::as_str),
    );
    Err(w.fail_about(ex, format!("{} {what}, each once, in order", expected.len()), got_text))
}

/// The first item of the walk that repeats an earlier one or breaks the order (`field` desc,
/// then `id` desc), with its page (0-based). Timestamps are compared to the second, so a server
/// keeping fractions of seconds is not blamed for how it breaks ties inside a second.
fn added_out_of_place(walk: &Walk, field: &str) -> Option<(usize, String)> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut previous: Option<(String, String)> = None;
    for (page, p) in walk.pages.iter().enumerate() {
        for item in &p.items {
            let id = item.get("id").and_then(Value::as_str).unwrap_or("(no id)").to_owned();
            if !seen.insert(id.clone()) {
                return Some((page, format!("{id} comes out twice")));
            }
            let at = item.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
            if let Some((before_at, before_id)) = &previous {
                let (a, b) = (second(before_at), second(&at));
                let same_second_form = a == b && before_at.len() == 20 && at.len() == 20;
                if a < b || (same_second_form && before_id < &id) {
                    return Some((
                        page,
                        format!("{id} ({field} {at}) comes after {before_id} ({field} {before_at})"),
                    ));
                }
            }
            previous = Some((at, id));
        }
    }
    None
}

/// `YYYY-MM-DDTHH:MM:SS` of a timestamp (fractions and zone left out).
fn second(timestamp: &str) -> &str {
    timestamp.get(..19).unwrap_or(timestamp)
}

fn orders_newest_first(w: &ConformanceWorld, restaurant: &str, channel: Option<&str>) -> Vec<String> {
    let mut orders: Vec<_> =
        w.dataset().orders_of(restaurant).filter(|o| channel.is_none_or(|c| o.channel == c)).collect();
    orders.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    orders.into_iter().map(|o| o.id.clone()).collect()
}

#[then(
    regex = r#"^the walk yields every order of (the [a-z][a-z -]*?[a-z]|"[^"]+") exactly once, newest first$"#
)]
async fn walk_orders(w: &mut ConformanceWorld, target: String) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let expected = orders_newest_first(w, &restaurant, None);
    compare(w, &format!("orders of {restaurant} (created_at desc, id desc)"), &expected, Others::Refused)
}

#[then(
    regex = r#"^every order of (the [a-z][a-z -]*?[a-z]|"[^"]+") that existed before the walk comes out of it exactly once, newest first$"#
)]
async fn walk_orders_existing(w: &mut ConformanceWorld, target: String) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let expected = orders_newest_first(w, &restaurant, None);
    compare(w, &format!("orders of {restaurant} that existed before the walk"), &expected, Others::Ignored)
}

#[then(
    regex = r#"^the walk yields every order of (the [a-z][a-z -]*?[a-z]|"[^"]+") with channel "([a-z]+)" exactly once, newest first$"#
)]
async fn walk_orders_channel(
    w: &mut ConformanceWorld,
    target: String,
    channel: String,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let expected = orders_newest_first(w, &restaurant, Some(&channel));
    compare(
        w,
        &format!("{channel} orders of {restaurant} (created_at desc, id desc)"),
        &expected,
        Others::Refused,
    )
}

#[then(
    regex = r#"^the walk yields every message of (the [a-z][a-z -]*?[a-z]|"[^"]+") exactly once, newest first$"#
)]
async fn walk_messages(w: &mut ConformanceWorld, target: String) -> anyhow::Result<()> {
    let conversation = w.landmark(&target)?;
    let mut messages: Vec<_> =
        w.dataset().messages.iter().filter(|m| m.conversation_id == conversation).collect();
    messages.sort_by(|a, b| b.sent_at.cmp(&a.sent_at).then_with(|| b.id.cmp(&a.id)));
    let expected: Vec<String> = messages.into_iter().map(|m| m.id.clone()).collect();
    // Messages sent by earlier scenarios and runs (SEC-1, IDEM-2, LIM-2) or by people stay on a
    // server nothing resets: they must come once and in their place, whoever sent them.
    compare(w, &format!("messages of {conversation} (newest first)"), &expected, Others::Added("sent_at"))
}

#[then("every page of the walk but the last has a next cursor")]
async fn walk_cursors(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let walk = the_walk(w)?;
    // The walk stops at the first page without a cursor; a last page holding nothing means the
    // previous page offered a cursor although no item followed.
    match walk.pages.last() {
        Some(last) if last.items.is_empty() && walk.pages.len() > 1 => Err(w.fail(
            "no next_cursor on the page holding the last item",
            format!("page {} offered one, and the next page was empty", walk.pages.len() - 1),
        )),
        Some(_) => Ok(()),
        None => Err(w.fail("at least one page", "none")),
    }
}

#[then(regex = r"^every page of the walk holds at most (\d+) (\w+)$")]
async fn walk_page_sizes(w: &mut ConformanceWorld, n: usize, key: String) -> anyhow::Result<()> {
    let walk = the_walk(w)?;
    match walk.pages.iter().position(|p| p.items.len() > n) {
        None => Ok(()),
        Some(i) => Err(w.fail(
            format!("at most {n} {key} per page"),
            format!("page {} holds {}", i + 1, walk.pages[i].items.len()),
        )),
    }
}

#[then("the first page of the walk is marked truncated")]
async fn walk_truncated(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let walk = the_walk(w)?;
    match walk.pages.first() {
        Some(p) if p.truncated && p.next_cursor.is_some() => Ok(()),
        Some(p) => Err(w.fail(
            "meta.truncated: true and a next_cursor on the first page",
            format!("truncated {}, next_cursor {}", p.truncated, p.next_cursor.is_some()),
        )),
        None => Err(w.fail("at least one page", "none")),
    }
}

#[then("every page of the walk is within the contract's size")]
async fn walk_sizes(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let walk = the_walk(w)?;
    match walk.pages.iter().position(|p| p.structured_bytes > MAX_STRUCTURED_BYTES) {
        None => Ok(()),
        Some(i) => Err(w.fail(
            format!("structured output ≤ {MAX_STRUCTURED_BYTES} bytes per page"),
            format!("page {} is {} bytes", i + 1, walk.pages[i].structured_bytes),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::tamper;

    #[test]
    fn tampering_always_changes_the_cursor() {
        let check =
            |cursor: &str, how: &str, expected: &str| assert_eq!(tamper(cursor, how), expected, "{how}");
        check("abcz", "flipped in its middle", "abdz");
        check("z9", "flipped at its first character", "a9");
        check("ab-", "flipped in its middle", "ac-");
        check("a-b", "flipped in its middle", "aAb");
        check("abc", "truncated by one character", "ab");
        check("abc", "re-encoded in base64", "YWJj");
        check("abc", "as an empty string", "");
    }
}
