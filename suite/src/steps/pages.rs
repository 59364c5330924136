//! Pages and cursors: page sizes and `next_cursor` (PAG-1..3, PAG-8), walking every page and
//! comparing with the dataset (PAG-4, LIM-5: every item once, in one order either way; newest first
//! is the reference's), continuing, changing and reusing cursors (PAG-5..7).

use std::collections::{HashMap, HashSet};

use anyhow::anyhow;
use chataigne_contract::MAX_STRUCTURED_BYTES;
use chataigne_contract::envelope::{self, Parsed};
use cucumber::{then, when};
use serde_json::Value;

use crate::steps::params::{Channel, Count, Target};
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

/// PAG-6 with PAG-4's order: the pages listed so far in the scenario are the first `n` orders of
/// the restaurant, each once, in one order (newest or oldest first; the reference's is an ext
/// difference): a cursor continued with another limit picks up exactly where its page ended.
#[then(expr = "the pages so far hold the first {count} orders of {target}, each once, in one order")]
async fn first_orders(w: &mut ConformanceWorld, n: Count, target: Target) -> anyhow::Result<()> {
    let n = n.0;
    let restaurant = w.landmark(&target)?;
    let all = orders_newest_first(w, &restaurant, None);
    let stamps: HashMap<&str, &str> = all.iter().map(|(id, at)| (id.as_str(), at.as_str())).collect();
    let mut got: Vec<Stamped> = Vec::new();
    for ex in w.tool_calls().filter(|e| e.tool.as_deref() == Some("list_orders")) {
        let data = match ex.structured().map(envelope::parse) {
            Some(Ok(Parsed::Success { data, .. })) if !ex.is_error() => w.ctx().id_map.inbound(&data),
            _ => return Err(w.fail_about(Some(ex), "a page of orders", ex.summary())),
        };
        let orders = data.get("orders").and_then(Value::as_array).ok_or_else(|| w.blocked("/orders"))?;
        for order in orders {
            let id = order.get("id").and_then(Value::as_str).unwrap_or("(no id)");
            got.push((id.to_owned(), stamps.get(id).map(|at| (*at).to_owned()).unwrap_or_default()));
        }
    }
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    let distinct: HashSet<&str> = ids.iter().copied().collect();
    let theirs = ids.iter().all(|id| stamps.contains_key(id));
    let expected =
        format!("the first {n} orders of {restaurant}, each once, in one order (newest or oldest first)");
    if ids.len() != n
        || distinct.len() != n
        || !theirs
        || direction(&got).1.is_some()
        || !is_prefix(&got, &all)
    {
        return Err(w.fail(expected, format!("[{}]", ids.join(", "))));
    }
    let reference: Vec<&str> = all.iter().take(n).map(|(id, _)| id.as_str()).collect();
    if ids != reference {
        w.ext_difference(
            "newest-first",
            format!(
                "the first {n} orders are [{}], newest first they are [{}]",
                ids.join(", "),
                reference.join(", ")
            ),
        );
    }
    Ok(())
}

#[then(regex = r"^the page holds between (\d+) and (\d+) (\w+)$")]
async fn holds_between(w: &mut ConformanceWorld, low: usize, high: usize, key: String) -> anyhow::Result<()> {
    let items = page_items(w, &key)?;
    if (low..=high).contains(&items.len()) {
        Ok(())
    } else {
        Err(w.fail(format!("between {low} and {high} {key}"), format!("{} {key}", items.len())))
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

/// PAG-8's "100 messages maximum" read both ways the seed allows: refused as invalid (as
/// `the call fails with "MCP_INVALID_ARGUMENTS"` judges it), or answered with a page of at most
/// `n` items (and at least one: the list asked for has more). Refusing is the reference's choice
/// (`message-limit-refused`).
#[then(regex = r"^the call is refused as invalid, or the page holds between 1 and (\d+) (\w+)$")]
async fn refused_or_capped(w: &mut ConformanceWorld, n: usize, key: String) -> anyhow::Result<()> {
    let ex = w.last()?;
    if ex.is_error() || ex.rpc_error().is_some() || ex.structured().is_none() {
        return crate::steps::outcome::fails_with(w, "MCP_INVALID_ARGUMENTS".to_owned(), String::new()).await;
    }
    let items = page_items(w, &key)?;
    if !(1..=n).contains(&items.len()) {
        return Err(
            w.fail(format!("a refusal, or between 1 and {n} {key}"), format!("{} {key}", items.len()))
        );
    }
    w.ext_difference(
        "message-limit-refused",
        format!("answered with {} {key} instead of a refusal", items.len()),
    );
    Ok(())
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

/// LIM-5: `truncated` says a page was cut for its size; a page that holds what it was asked for
/// was not (the judge holds every page to it: `rules::records::truncated_in_full`).
#[then("the page is not marked truncated")]
async fn not_truncated(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    if w.success()?.meta.truncated { Err(w.fail("no meta.truncated: true", "true")) } else { Ok(()) }
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
    regex = r"^they list the next page, passing the cursor (flipped in its middle|flipped at its first character|truncated by one character|with one letter's case changed|with one character percent-encoded|with a blank on each side|with a newline after it|re-encoded in base64|re-encoded in another base64 alphabet or padding|as an empty string)$"
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

pub use crate::rules::cursors::tamper;

/// Every item of a list under `key`, its pages followed to the last (arguments in dataset IDs).
pub(super) async fn all_items(
    w: &mut ConformanceWorld,
    tool: &str,
    args: Value,
    key: &str,
) -> anyhow::Result<Vec<Value>> {
    let bound = w.dataset().orders.len() + w.dataset().messages.len() + 10;
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..bound {
        let mut page = args.clone();
        if let Some(c) = &cursor {
            page["cursor"] = Value::String(c.clone());
        }
        super::matrices::call_patiently(w, tool, page).await?;
        let success = w.success()?;
        let pointer = format!("/{key}");
        let got = w.field(&success.data, &pointer)?.as_array().cloned().ok_or_else(|| w.blocked(&pointer))?;
        items.extend(got);
        cursor = success.meta.next_cursor;
        if cursor.is_none() {
            return Ok(items);
        }
    }
    Err(w.fail("the walk to end", format!("still a next_cursor after {bound} pages")))
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
        super::matrices::call_patiently(w, &tool, page_args).await?;
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
    /// them): each must still come once and in its place in the walk's order, by this timestamp
    /// field.
    Added(&'static str),
}

/// Which way a list runs through its timestamps. The seed names no order (PAG-4): a walk passes
/// at the seed level either way, as long as it keeps one way across every page; newest first
/// (then `id` descending) is the reference's choice `newest-first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    NewestFirst,
    OldestFirst,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::NewestFirst => "newest first",
            Direction::OldestFirst => "oldest first",
        }
    }
}

/// One item of a walk: its ID and its timestamp.
type Stamped = (String, String);

/// The way `items` run, and the first item that goes against it (its index), if one does.
/// Timestamps are compared to the second: how a server orders items of the same second (fractions
/// it keeps, or its tie-break) is its own total order, which the exactly-once check tests at
/// every page boundary.
fn direction(items: &[Stamped]) -> (Option<Direction>, Option<usize>) {
    let mut way = None;
    for (i, pair) in items.windows(2).enumerate() {
        let step = match second(&pair[0].1).cmp(second(&pair[1].1)) {
            std::cmp::Ordering::Greater => Direction::NewestFirst,
            std::cmp::Ordering::Less => Direction::OldestFirst,
            std::cmp::Ordering::Equal => continue,
        };
        match way {
            None => way = Some(step),
            Some(w) if w != step => return (way, Some(i + 1)),
            Some(_) => {}
        }
    }
    (way, None)
}

/// Whether `items` are a prefix of one order of `all` the way they run: no item left out of them
/// comes before their last one. Ties with the last one may fall on either side of the cut.
fn is_prefix(items: &[Stamped], all: &[Stamped]) -> bool {
    let ids: HashSet<&str> = items.iter().map(|(id, _)| id.as_str()).collect();
    let Some((_, last)) = items.last() else { return all.is_empty() };
    let rest = all.iter().filter(|(id, _)| !ids.contains(id.as_str())).map(|(_, at)| second(at));
    let (newer, older) =
        rest.fold((false, false), |(n, o), at| (n || at > second(last), o || at < second(last)));
    match direction(items).0 {
        Some(Direction::NewestFirst) => !newer,
        Some(Direction::OldestFirst) => !older,
        // Every item of the same second: they are the newest or the oldest.
        None => !newer || !older,
    }
}

/// Every item of the walk with its timestamp and page (0-based), judged as `others` says: the
/// dataset's timestamp for items of `expected`, the item's own `field` for added ones.
fn stamped_walk(
    w: &ConformanceWorld,
    walk: &Walk,
    expected: &[Stamped],
    others: Others,
) -> anyhow::Result<Vec<(Stamped, usize)>> {
    let known: HashMap<&str, &str> = expected.iter().map(|(id, at)| (id.as_str(), at.as_str())).collect();
    let mut got = Vec::new();
    let mut index = 0;
    for (page, p) in walk.pages.iter().enumerate() {
        for item in &p.items {
            let id = item.get("id").and_then(Value::as_str).unwrap_or("(no id)");
            let at = match (known.get(id), others) {
                (Some(at), _) => (*at).to_owned(),
                (None, Others::Ignored) => {
                    index += 1;
                    continue;
                }
                (None, Others::Added(field)) => item
                    .get(field)
                    .and_then(Value::as_str)
                    .ok_or_else(|| w.blocked(&format!("/{}/{index}/{field}", walk.key)))?
                    .to_owned(),
                // Not expected at all: reported as such before any order is judged.
                (None, Others::Refused) => String::new(),
            };
            got.push(((id.to_owned(), at), page));
            index += 1;
        }
    }
    Ok(got)
}

/// PAG-4 on the walk: every item of `expected` (the dataset's, with their timestamps, in the
/// reference's order) exactly once, and items outside it as `others` says; in one order across
/// every page, newest or oldest first (seed). An order other than the reference's (`expected`'s,
/// and for additions newest first then `id` descending) is an ext difference (`newest-first`).
fn compare(w: &mut ConformanceWorld, what: &str, expected: &[Stamped], others: Others) -> anyhow::Result<()> {
    let walk = the_walk(w)?.clone();
    let got = stamped_walk(w, &walk, expected, others)?;
    let exchange_of = |page: usize| {
        let rid = walk.pages.get(page).map(|p| p.request_id.as_str());
        rid.and_then(|rid| w.history.iter().find(|e| e.request_id() == Some(rid)))
    };
    let want: HashSet<&str> = expected.iter().map(|(id, _)| id.as_str()).collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut first_wrong: Option<usize> = None;
    for ((id, _), page) in &got {
        let n = seen.entry(id.as_str()).or_default();
        *n += 1;
        if *n > 1 || !want.contains(id.as_str()) {
            first_wrong.get_or_insert(*page);
        }
    }
    let mut dups: Vec<&str> = seen.iter().filter(|(_, n)| **n > 1).map(|(id, _)| *id).collect();
    dups.sort_unstable();
    let missing: Vec<&str> =
        expected.iter().map(|(id, _)| id.as_str()).filter(|id| !seen.contains_key(id)).collect();
    let extra: Vec<&str> = got
        .iter()
        .map(|((id, _), _)| id.as_str())
        .filter(|id| !want.contains(id) && others == Others::Refused)
        .collect();
    let show = |ids: &[&str]| {
        let head: Vec<&str> = ids.iter().take(8).copied().collect();
        if ids.len() > 8 {
            format!("[{}, … {} in all]", head.join(", "), ids.len())
        } else {
            format!("[{}]", head.join(", "))
        }
    };
    if !dups.is_empty() || !missing.is_empty() || !extra.is_empty() {
        let page = first_wrong.unwrap_or(walk.pages.len().saturating_sub(1));
        return Err(w.fail_about(
            exchange_of(page),
            format!("{} {what}, each once", expected.len()),
            format!(
                "{} items over {} pages; duplicates {}; missing {}; not expected {}; first wrong item on page {}",
                got.len(),
                walk.pages.len(),
                show(&dups),
                show(&missing),
                show(&extra),
                page + 1,
            ),
        ));
    }
    let items: Vec<Stamped> = got.iter().map(|(item, _)| item.clone()).collect();
    let (way, broken) = direction(&items);
    if let (Some(at), Some(way)) = (broken, way) {
        let ((id, ts), (before_id, before_ts)) = (&items[at], &items[at - 1]);
        return Err(w.fail_about(
            exchange_of(got[at].1),
            format!("{what}: every item once, in one order the pages agree on (by timestamp, newest or oldest first)"),
            format!(
                "page {}: {id} ({ts}) comes after {before_id} ({before_ts}), but the walk ran {} until then",
                got[at].1 + 1,
                way.as_str()
            ),
        ));
    }
    // The reference's order: the dataset's items as `expected` lists them, additions in place.
    let ours: Vec<&str> = items.iter().map(|(id, _)| id.as_str()).filter(|id| want.contains(id)).collect();
    let reference: Vec<&str> = expected.iter().map(|(id, _)| id.as_str()).collect();
    let differs = if ours != reference {
        let at = ours.iter().zip(&reference).position(|(a, b)| a != b).unwrap_or(0);
        Some(format!(
            "the walk runs {}: position {} holds {} where newest first (then id descending) puts {}",
            way.unwrap_or(Direction::NewestFirst).as_str(),
            at + 1,
            ours.get(at).unwrap_or(&"nothing"),
            reference.get(at).unwrap_or(&"nothing"),
        ))
    } else {
        match others {
            Others::Added(field) => added_out_of_place(&walk, field)
                .map(|(page, problem)| format!("page {}: {problem}", page + 1)),
            _ => None,
        }
    };
    if let Some(what) = differs {
        w.ext_difference("newest-first", what);
    }
    Ok(())
}

/// The first item of the walk that breaks the reference's order (`field` desc, then `id` desc),
/// with its page (0-based). Timestamps are compared to the second, so a server keeping fractions
/// of seconds is not blamed for how it breaks ties inside a second.
fn added_out_of_place(walk: &Walk, field: &str) -> Option<(usize, String)> {
    let mut previous: Option<(String, String)> = None;
    for (page, p) in walk.pages.iter().enumerate() {
        for item in &p.items {
            let id = item.get("id").and_then(Value::as_str).unwrap_or("(no id)").to_owned();
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

/// The restaurant's orders (with `channel`, if given) and their `created_at`, in the reference's
/// order: newest first, then `id` descending.
fn orders_newest_first(w: &ConformanceWorld, restaurant: &str, channel: Option<&str>) -> Vec<Stamped> {
    let orders = w.dataset().orders_of(restaurant).filter(|o| channel.is_none_or(|c| o.channel == c));
    newest_first(orders.map(|o| (&o.id, &o.created_at)))
}

/// Items as (ID, timestamp), in the reference's order: newest first, then `id` descending.
fn newest_first<'a>(items: impl Iterator<Item = (&'a String, &'a String)>) -> Vec<Stamped> {
    let mut items: Vec<Stamped> = items.map(|(id, at)| (id.clone(), at.clone())).collect();
    items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    items
}

/// A time between two orders of `restaurant` (dataset IDs) near the middle, that no order was
/// created at: whether a window's bound is inclusive (the contract does not say) changes nothing.
fn middle_creation(w: &ConformanceWorld, restaurant: &str) -> anyhow::Result<String> {
    use chataigne_contract::time::{format_timestamp, parse_timestamp};
    let times: Vec<i64> =
        orders_newest_first(w, restaurant, None).iter().filter_map(|(_, at)| parse_timestamp(at)).collect();
    // From the middle on, the first gap of two seconds or more: its older side plus one second.
    times
        .windows(2)
        .skip(times.len() / 2)
        .find(|pair| pair[0] - pair[1] >= 2)
        .map(|pair| format_timestamp(pair[1] + 1))
        .ok_or_else(|| anyhow!("{restaurant} has no two orders two seconds apart"))
}

/// PAG-4 under a creation window: `bound` (`created_from` or `created_to`) at the middle order's
/// creation time, derived from the dataset.
#[when(
    regex = r"^they walk the busy restaurant's orders with limit (\d+) and (created_from|created_to) at the middle of their creation times$"
)]
async fn walk_window(w: &mut ConformanceWorld, limit: usize, bound: String) -> anyhow::Result<()> {
    let busy = w.dataset().landmarks.busy_restaurant.clone();
    let at = middle_creation(w, &busy)?;
    w.saved.insert("window".to_owned(), format!("{bound} {at}"));
    let filters = format!("limit {limit} and {bound} \"{at}\"");
    walk(w, "orders".to_owned(), "the busy restaurant".to_owned(), filters, String::new()).await
}

/// The dataset's orders within the window the walk named (bounds inclusive); orders a run adds
/// later are newer than any window's middle: held to their place under `created_from`.
#[then(
    "the walk yields exactly the orders within that window of the busy restaurant, each once, in one order"
)]
async fn walk_window_yields(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let window = w.saved.get("window").cloned().ok_or_else(|| anyhow!("no window walked"))?;
    let (bound, at) = window.split_once(' ').ok_or_else(|| anyhow!("a window is `bound time`"))?;
    let busy = w.dataset().landmarks.busy_restaurant.clone();
    let from = bound == "created_from";
    let secs = chataigne_contract::time::parse_timestamp(at).ok_or_else(|| anyhow!("not a time: {at}"))?;
    let stamp = |t: &String| chataigne_contract::time::parse_timestamp(t).unwrap_or(i64::MIN);
    let within = |t: &String| if from { stamp(t) >= secs } else { stamp(t) <= secs };
    let orders = w.dataset().orders_of(&busy).filter(|o| within(&o.created_at));
    let expected = newest_first(orders.map(|o| (&o.id, &o.created_at)));
    let others = if from { Others::Added("created_at") } else { Others::Refused };
    compare(w, &format!("orders of {busy} with {bound} {at}"), &expected, others)
}

#[then(expr = "the walk yields every order of {target} exactly once, in one order")]
async fn walk_orders(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let expected = orders_newest_first(w, &restaurant, None);
    compare(w, &format!("orders of {restaurant}"), &expected, Others::Refused)
}

#[then(
    expr = "every order of {target} that existed before the walk comes out of it exactly once, in one order"
)]
async fn walk_orders_existing(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let expected = orders_newest_first(w, &restaurant, None);
    compare(w, &format!("orders of {restaurant} that existed before the walk"), &expected, Others::Ignored)
}

#[then(expr = "the walk yields every order of {target} with channel {channel} exactly once, in one order")]
async fn walk_orders_channel(
    w: &mut ConformanceWorld,
    target: Target,
    channel: Channel,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let expected = orders_newest_first(w, &restaurant, Some(&channel));
    compare(w, &format!("{channel} orders of {restaurant}"), &expected, Others::Refused)
}

/// PAG-4 under a filter of two statuses (an array): the dataset's orders in either come once
/// each, in one order across the pages. Final statuses: no run moves an order out of them; one
/// a person, this run or an earlier one moved in is held to its place (`Others::Added`).
#[then(
    expr = "the walk yields every order of {target} in status {string} or {string} exactly once, in one order"
)]
async fn walk_orders_statuses(
    w: &mut ConformanceWorld,
    target: Target,
    first: String,
    second: String,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let orders = w.dataset().orders_of(&restaurant).filter(|o| o.status == first || o.status == second);
    let expected = newest_first(orders.map(|o| (&o.id, &o.created_at)));
    compare(
        w,
        &format!("{first} and {second} orders of {restaurant}"),
        &expected,
        Others::Added("created_at"),
    )
}

#[then(expr = "the walk yields every message of {target} exactly once, in one order")]
async fn walk_messages(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let conversation = w.landmark(&target)?;
    let messages = w.dataset().messages.iter().filter(|m| m.conversation_id == conversation);
    let expected = newest_first(messages.map(|m| (&m.id, &m.sent_at)));
    // Messages sent by earlier scenarios and runs (SEC-1, IDEM-2, LIM-2) or by people stay on a
    // server nothing resets: they must come once and in their place, whoever sent them.
    compare(w, &format!("messages of {conversation}"), &expected, Others::Added("sent_at"))
}

/// PAG-4 on the other lists of a restaurant: every conversation of the dataset once, in one
/// order of `created_at` the pages agree on (no tool creates conversations).
#[then(expr = "the walk yields every conversation of {target} exactly once, in one order")]
async fn walk_conversations(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let items = w.dataset().conversations.iter().filter(|c| c.restaurant_id == restaurant);
    let expected = newest_first(items.map(|c| (&c.id, &c.created_at)));
    compare(w, &format!("conversations of {restaurant}"), &expected, Others::Refused)
}

/// PAG-4 for instructions: the dataset's once, in one order of `created_at`; instructions that
/// scenarios and earlier runs created stay on a server nothing resets, each once and in its place.
#[then(expr = "the walk yields every instruction of {target} exactly once, in one order")]
async fn walk_instructions(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let items = w.dataset().instructions.iter().filter(|i| i.restaurant_id == restaurant);
    let expected = newest_first(items.map(|i| (&i.id, &i.created_at)));
    compare(w, &format!("instructions of {restaurant}"), &expected, Others::Added("created_at"))
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
    use super::{Direction, Stamped, direction, is_prefix, tamper};

    fn items(list: &[(&str, &str)]) -> Vec<Stamped> {
        list.iter().map(|(id, at)| ((*id).to_owned(), format!("2026-11-{at}Z"))).collect()
    }

    /// PAG-4 at the seed level: one way through the timestamps, either way, ties in any order.
    #[test]
    fn a_walk_runs_one_way_either_way() {
        let check = |list: &[(&str, &str)], expected: (Option<Direction>, Option<usize>)| {
            assert_eq!(direction(&items(list)), expected, "{list:?}");
        };
        use Direction::*;
        check(&[("c", "03T00:00:00"), ("b", "02T00:00:00"), ("a", "01T00:00:00")], (Some(NewestFirst), None));
        check(&[("a", "01T00:00:00"), ("b", "02T00:00:00"), ("c", "03T00:00:00")], (Some(OldestFirst), None));
        // Ties, in any order, and fractions of the same second.
        check(&[("a", "01T00:00:00"), ("c", "01T00:00:00"), ("b", "01T00:00:00.5")], (None, None));
        check(&[("b", "02T00:00:00"), ("a", "02T00:00:00"), ("c", "01T00:00:00")], (Some(NewestFirst), None));
        // Back the other way at a page boundary (or anywhere): the first item out of order.
        check(
            &[("c", "03T00:00:00"), ("a", "01T00:00:00"), ("b", "02T00:00:00")],
            (Some(NewestFirst), Some(2)),
        );
        check(
            &[("a", "01T00:00:00"), ("c", "03T00:00:00"), ("b", "02T00:00:00")],
            (Some(OldestFirst), Some(2)),
        );
    }

    /// PAG-6's continued cursor: the pages so far are the start of one order of the whole list.
    #[test]
    fn the_first_pages_are_a_prefix_of_one_order() {
        let all = items(&[
            ("d", "04T00:00:00"),
            ("c", "03T00:00:00"),
            ("b", "02T00:00:00"),
            ("b2", "02T00:00:00"),
            ("a", "01T00:00:00"),
        ]);
        let check = |list: &[(&str, &str)], expected: bool| {
            assert_eq!(is_prefix(&items(list), &all), expected, "{list:?}")
        };
        check(&[("d", "04T00:00:00"), ("c", "03T00:00:00")], true);
        check(&[("a", "01T00:00:00"), ("b", "02T00:00:00")], true);
        check(&[("a", "01T00:00:00"), ("b2", "02T00:00:00")], true);
        // An item skipped: `c` is newer than the last one given, so it should have come.
        check(&[("d", "04T00:00:00"), ("b", "02T00:00:00")], false);
        check(&[("b", "02T00:00:00"), ("c", "03T00:00:00")], false);
        check(&[("b", "02T00:00:00"), ("b2", "02T00:00:00")], false);
    }

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
        // The same bytes: "-_8" is URL-safe base64 of [251, 255]; standard writes it "+/8".
        check("-_8", "re-encoded in another base64 alphabet or padding", "-_8=");
        // A signed token's parts: the first that can be written otherwise is.
        check("YWJj.-_8", "re-encoded in another base64 alphabet or padding", "YWJj.-_8=");
        // Written alike in every form: the whole cursor encoded instead.
        check("YWJj", "re-encoded in another base64 alphabet or padding", "WVdKag==");
    }
}

/// One list of the small-limit walks: (tool, arguments in dataset IDs, the data member holding
/// its items).
fn short_lists(w: &ConformanceWorld) -> Vec<(&'static str, Value, &'static str)> {
    let l = &w.dataset().landmarks;
    vec![
        ("list_organizations", serde_json::json!({}), "organizations"),
        ("list_restaurants", serde_json::json!({ "organization_id": l.home_organization }), "restaurants"),
        ("list_orders", serde_json::json!({ "restaurant_id": l.small_restaurant }), "orders"),
        ("list_instructions", serde_json::json!({ "restaurant_id": l.busy_restaurant }), "instructions"),
    ]
}

/// What a walk refused for its rate says (not judged: no evidence, no finding).
const RATE_LIMITED: &str = "rate limited";
/// What a walk stopped at its cap says: its items are judged as the list's first ones.
const CAPPED: &str = "capped";
/// Items a small-limit walk reads at most: enough pages to show a cursor that skips or is
/// missing, and a bounded cost however long a list the run's own writes made.
const SHORT_WALK_ITEMS: usize = 6;

/// A walk to make: tool, arguments (server IDs), the data member of its items, the limit.
type Walked = (&'static str, Value, &'static str, u64);

/// Every walk of `jobs` side by side, each on a copy of `client`'s session.
async fn walk_all(
    client: &mut crate::client::McpClient,
    jobs: Vec<Walked>,
) -> Vec<(Vec<String>, Vec<crate::client::Exchange>, Result<(), String>)> {
    let copies = client.fork(jobs.len());
    let walks = jobs.into_iter().zip(copies).map(|((tool, args, key, limit), c)| {
        // The whole lists are walked to their end; the small-limit walks to their cap.
        let cap = if limit == chataigne_contract::MAX_LIMIT as u64 { usize::MAX } else { SHORT_WALK_ITEMS };
        walk_ids(c, tool, args, key, limit, cap)
    });
    futures::future::join_all(walks).await
}

/// The IDs of every page of `tool(args)` at `limit`, each page's exchange, and whether every page
/// was read.
async fn walk_ids(
    mut client: crate::client::McpClient,
    tool: &'static str,
    args: Value,
    key: &'static str,
    limit: u64,
    cap: usize,
) -> (Vec<String>, Vec<crate::client::Exchange>, Result<(), String>) {
    let (mut ids, mut exchanges) = (Vec::new(), Vec::new());
    let mut cursor: Option<String> = None;
    for _ in 0..200 {
        if ids.len() >= cap {
            return (ids, exchanges, Err(CAPPED.to_owned()));
        }
        let mut page = args.clone();
        page["limit"] = serde_json::json!(limit);
        if let Some(c) = &cursor {
            page["cursor"] = serde_json::json!(c);
        }
        let ex = client.call_tool(tool, page).await;
        let parsed = ex.structured().filter(|_| !ex.is_error()).cloned();
        // A window an earlier run filled (the scenarios wait for it; a walk of many pages side by
        // side does not): the walk tells nothing, and is not judged.
        let limited = crate::rules::rate_wait_ms(&ex).is_some();
        exchanges.push(ex);
        let Some(s) = parsed else {
            let why =
                if limited { RATE_LIMITED.to_owned() } else { format!("a page of {tool} was not a success") };
            return (ids, exchanges, Err(why));
        };
        let items = s.pointer(&format!("/data/{key}")).and_then(Value::as_array).cloned().unwrap_or_default();
        ids.extend(items.iter().filter_map(|i| i.get("id").and_then(Value::as_str)).map(str::to_owned));
        cursor = s
            .pointer("/meta/next_cursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        if cursor.is_none() {
            return (ids, exchanges, Ok(()));
        }
    }
    (ids, exchanges, Err(format!("{tool} still had a next_cursor after 200 pages")))
}

/// What is wrong with a small-limit walk (`ids`, `ended`: it reached a page without a cursor) of
/// a list whose whole walks gave `was` before and `is` after, newest first. Records others
/// created meanwhile may show anywhere among the first (they are in `is`); the others are the
/// start of `was`, in its order, every one once, and a walk that ended holds all of it. Stopping early,
/// after the list's first items, on a full page, is PAG-3's (the cursor was due); any other
/// difference PAG-4's.
fn short_walk_problem(
    ids: &[String],
    was: &[String],
    is: &[String],
    limit: u64,
    ended: bool,
) -> Option<(&'static str, String)> {
    let seen: HashSet<&String> = ids.iter().collect();
    let repeated = ids.len() - seen.len();
    let invented: Vec<&String> = ids.iter().filter(|id| !is.contains(id) && !was.contains(id)).collect();
    // Created meanwhile (in `is`, not in `was`): newest first with ties broken by ID, such a
    // record may sort among the first ones of the same second, so it is set aside wherever it is.
    let rest: Vec<String> = ids.iter().filter(|id| was.contains(id)).cloned().collect();
    let prefix = rest.len() <= was.len() && rest[..] == was[..rest.len()];
    let short = ended && rest.len() < was.len();
    if repeated == 0 && invented.is_empty() && prefix && !short {
        return None;
    }
    let clause = if repeated == 0 && invented.is_empty() && prefix && (ids.len() as u64).is_multiple_of(limit)
    {
        "PAG-3"
    } else {
        "PAG-4"
    };
    let missed: Vec<&str> = was.iter().filter(|id| !seen.contains(id)).take(3).map(String::as_str).collect();
    let what = format!(
        "{} items walked{}, the list's first {} not in its order or cut short (first missed: {}), {} not in the list, {repeated} repeated",
        ids.len(),
        if ended { " to the end" } else { "" },
        rest.len().min(was.len()),
        missed.join(", "),
        invented.len()
    );
    Some((clause, what))
}

/// PAG-3 and PAG-4 on every list at its smallest limits: walked one and two items at a time, a
/// list yields what one page of it at the largest limit holds, read just before and just after
/// (records another scenario creates meanwhile may show or not; none may be missed, repeated or
/// made up). A walk that stops early on a full page without a cursor is PAG-3's; any other
/// difference PAG-4's.
#[then("every list walked one and two items at a time yields the whole list")]
async fn short_walks(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let lists = short_lists(w);
    let outbound = |v: &Value| w.ctx().id_map.outbound(v);
    let jobs: Vec<Walked> = lists
        .iter()
        .flat_map(|(tool, args, key)| [1, 2].map(|limit| (*tool, outbound(args), *key, limit)))
        .collect();
    // Whole: every page at the largest limit (a list others add to may outgrow one page).
    let largest = chataigne_contract::MAX_LIMIT as u64;
    let whole: Vec<Walked> =
        lists.iter().map(|(tool, args, key)| (*tool, outbound(args), *key, largest)).collect();
    let client = w.client().await?;
    // The whole lists first, then the walks side by side, then the whole lists again.
    let before = walk_all(client, whole.clone()).await;
    let walks = walk_all(client, jobs).await;
    let after = walk_all(client, whole).await;
    // Each walk is evidence for PAG-3 and PAG-4, and a difference a finding under the one it
    // breaks (the judge's tally), with the request_id of its last page.
    for (n, (tool, _, _)) in lists.iter().enumerate() {
        let (was, _, read_before) = &before[n];
        let (is, _, read_after) = &after[n];
        for (k, limit) in [1u64, 2].into_iter().enumerate() {
            let (ids, exchanges, outcome) = &walks[2 * n + k];
            // The whole list unread is no list to hold the walk to: not a pass.
            let outcome = &read_before.clone().and(read_after.clone()).and(outcome.clone());
            for ex in exchanges {
                w.record(ex.clone());
            }
            let rid = exchanges.last().and_then(|e| e.request_id()).unwrap_or("no request_id").to_owned();
            let problem = match outcome {
                Err(e) if e == RATE_LIMITED => continue,
                Err(e) if e != CAPPED => Some(("PAG-4", e.clone())),
                _ => short_walk_problem(ids, was, is, limit, outcome.is_ok()),
            };
            let level = crate::judge::RuleLevel::Seed;
            match problem {
                None => {
                    w.tally.note("PAG-3", level, None);
                    w.tally.note("PAG-4", level, None);
                }
                Some((clause, what)) => w.tally.note(
                    clause,
                    level,
                    Some(format!("{tool} walked at limit {limit}, last page {rid}: {what}")),
                ),
            }
        }
    }
    Ok(())
}
