//! Cases derived from the contract's own tables rather than picked by hand: a rule that holds
//! "for every tool / filter / persona / transition" is checked for every one of them, so a new
//! filter, tool, persona or status added to `chataigne_contract` is covered with no new scenario.
//! This module only derives the rows (pure, unit-tested); `steps::matrices` runs them.
//!
//! - [`cursor_rows`]: every cursor-bearing tool × every argument a cursor is bound to (PAG-6);
//! - [`cursor_tool_rows`]: every ordered pair of cursor-bearing tools (PAG-6's tool binding);
//! - [`refused_transitions`]: every (from, to) order-status pair the lifecycle forbids (PRE-3);
//! - [`access_rows`]: every tool with a target × every persona × every restaurant, with the checks
//!   of AUTH-3/4/6 the persona fails there, from the personas' scopes and memberships;
//! - [`bound_rows`]: every member of every tool's input schema just past each of its bounds (and
//!   of the wrong type, missing, outside its enum or pattern), and for reads at each bound,
//!   filed under the clause of the bound (`crate::bounds`);
//! - [`forward_moves`]: every step forward of the order lifecycle (PRE-3);
//! - [`page_size_rows`], [`item_size_rows`]: every page and every record the dataset makes bigger
//!   than 128 KiB, under every filter and persona that reaches it (LIM-5, LIM-6).

use chataigne_contract::dataset::{Dataset, Persona};
use chataigne_contract::tools::{ORDER_LIFECYCLE, ORDER_STATUSES};
use chataigne_contract::{ErrorCode, MAX_STRUCTURED_BYTES, ToolName};
use serde_json::{Map, Value, json};

/// Arguments that size a page rather than select items: changing them keeps a cursor (PAG-6).
const PAGE_SIZES: [&str; 2] = ["limit", "message_limit"];

/// One row of PAG-6's matrix: `base` gives a first page (with a page size of 1 added), and
/// `changed` is the same call with `argument` changed, which the cursor must not serve.
#[derive(Debug, Clone, PartialEq)]
pub struct CursorRow {
    pub tool: ToolName,
    pub argument: String,
    pub base: Value,
    pub changed: Value,
}

/// The page-size argument of `tool`, if it has one.
pub fn page_size(tool: ToolName) -> Option<&'static str> {
    let schema = tool.input_schema();
    PAGE_SIZES.into_iter().find(|p| schema.pointer(&format!("/properties/{p}")).is_some())
}

/// Every argument of every tool that takes a `cursor`, except the page sizes and the cursor.
pub fn cursor_rows(dataset: &Dataset) -> Vec<CursorRow> {
    let mut rows = Vec::new();
    for &tool in ToolName::ALL {
        let schema = tool.input_schema();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { continue };
        if !properties.contains_key("cursor") {
            continue;
        }
        let required = chataigne_contract::schema::required(&schema);
        let mut base = Map::new();
        for name in &required {
            if let Some(value) = home_value(dataset, name) {
                base.insert((*name).to_owned(), value);
            }
        }
        for (name, property) in properties {
            if name == "cursor" || PAGE_SIZES.contains(&name.as_str()) {
                continue;
            }
            let mut row_base = base.clone();
            let first = row_base
                .get(name)
                .cloned()
                .or_else(|| home_value(dataset, name))
                .or_else(|| values(name, property).first().cloned());
            let Some(first) = first else { continue };
            row_base.insert(name.clone(), first.clone());
            let mut changed = row_base.clone();
            match other_value(dataset, name, property, &first) {
                Some(other) => {
                    changed.insert(name.clone(), other);
                }
                // An optional argument with no second value: leaving it out is a change too.
                None if !required.contains(&name.as_str()) => {
                    changed.remove(name);
                }
                None => continue,
            }
            rows.push(CursorRow {
                tool,
                argument: name.clone(),
                base: Value::Object(row_base),
                changed: Value::Object(changed),
            });
        }
    }
    rows
}

/// One row of PAG-6's tool binding: `from`'s first page (`from_args`, a page size of 1 added)
/// gives a cursor that `to`, called with its own `to_args` and that cursor, must refuse.
#[derive(Debug, Clone, PartialEq)]
pub struct CursorToolRow {
    pub from: ToolName,
    pub from_args: Value,
    pub to: ToolName,
    pub to_args: Value,
}

/// Every ordered pair of tools that take a `cursor`: from each tool of [`cursor_rows`] (whose
/// first page at size 1 gives a cursor on the dataset) to every other whose required arguments
/// the dataset fills, each called with its required arguments alone.
pub fn cursor_tool_rows(dataset: &Dataset) -> Vec<CursorToolRow> {
    // Only the required arguments on both sides: where two tools take the same ones, the
    // cursor's filters match and only its tool binding can refuse it.
    let mut sources: Vec<(ToolName, Value)> = Vec::new();
    for row in cursor_rows(dataset) {
        if !sources.iter().any(|(tool, _)| *tool == row.tool) {
            sources.push((row.tool, required_arguments(dataset, row.tool).unwrap_or(row.base)));
        }
    }
    let targets: Vec<(ToolName, Value)> = ToolName::ALL
        .iter()
        .filter(|tool| tool.input_schema().pointer("/properties/cursor").is_some())
        .filter_map(|&tool| required_arguments(dataset, tool).map(|args| (tool, args)))
        .collect();
    let mut rows = Vec::new();
    for (from, from_args) in &sources {
        for (to, to_args) in targets.iter().filter(|(to, _)| to != from) {
            rows.push(CursorToolRow {
                from: *from,
                from_args: from_args.clone(),
                to: *to,
                to_args: to_args.clone(),
            });
        }
    }
    rows
}

/// `tool`'s required arguments at their ordinary values; `None` when one has none.
fn required_arguments(dataset: &Dataset, tool: ToolName) -> Option<Value> {
    let schema = tool.input_schema();
    let mut args = Map::new();
    for name in chataigne_contract::schema::required(&schema) {
        args.insert(name.to_owned(), home_value(dataset, name)?);
    }
    Some(Value::Object(args))
}

/// The value an argument takes in ordinary calls: the busy restaurant and its records.
fn home_value(dataset: &Dataset, name: &str) -> Option<Value> {
    let l = &dataset.landmarks;
    Some(json!(match name {
        "restaurant_id" => l.busy_restaurant.as_str(),
        "organization_id" => l.home_organization.as_str(),
        "conversation_id" => l.long_conversation.as_str(),
        "query" => l.transcript_phrase.as_str(),
        _ => return None,
    }))
}

/// Another valid value of the argument, the persona "owner" still allowed to use it.
fn other_value(dataset: &Dataset, name: &str, property: &Value, first: &Value) -> Option<Value> {
    let l = &dataset.landmarks;
    match name {
        "restaurant_id" => return Some(json!(l.small_restaurant)),
        "conversation_id" => {
            let other = dataset
                .conversations
                .iter()
                .find(|c| c.restaurant_id == l.busy_restaurant && c.id != l.long_conversation)?;
            return Some(json!(other.id));
        }
        "query" => return Some(json!(format!("{} menu", l.transcript_phrase))),
        "organization_id" => return None,
        _ => {}
    }
    if is_timestamp(property) {
        return Some(json!(if name.ends_with("_to") {
            "2099-01-01T00:00:00Z"
        } else {
            "2001-01-01T00:00:00Z"
        }));
    }
    values(name, property).into_iter().find(|v| v != first)
}

/// A timestamp argument: the contract's schemas give them as a pattern with a time part.
fn is_timestamp(property: &Value) -> bool {
    property.get("pattern").and_then(Value::as_str).is_some_and(|p| p.contains("T[0-9]{2}:"))
}

/// The values an argument's schema enumerates (`enum`, or singletons of an array of an `enum`),
/// or a timestamp that keeps every item (far past for a lower bound, far future for an upper).
fn values(name: &str, property: &Value) -> Vec<Value> {
    if let Some(members) = property.get("enum").and_then(Value::as_array) {
        return members.clone();
    }
    if let Some(members) = property.pointer("/items/enum").and_then(Value::as_array) {
        return members.iter().map(|m| json!([m])).collect();
    }
    if is_timestamp(property) {
        return vec![json!(if name.ends_with("_to") {
            "2100-01-01T00:00:00Z"
        } else {
            "2000-01-01T00:00:00Z"
        })];
    }
    Vec::new()
}

/// Every (from, to) pair `update_order_status` must refuse: `to` is one of its published targets
/// and not a step forward of `from` in the lifecycle (a move to the same or an earlier state, or
/// any move out of a state the lifecycle ends in). Forward moves are left out: the seed allows
/// skipping forward, and a move that is allowed changes the dataset.
pub fn refused_transitions() -> Vec<(&'static str, String)> {
    let targets: Vec<String> = ToolName::UpdateOrderStatus
        .input_schema()
        .pointer("/properties/status/enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let step = |s: &str| ORDER_LIFECYCLE.iter().position(|l| *l == s);
    let last = ORDER_LIFECYCLE.len() - 1;
    let mut rows = Vec::new();
    for from in ORDER_STATUSES {
        for to in &targets {
            let allowed = match (step(from), step(to)) {
                (Some(f), Some(t)) => f < last && t > f,
                _ => false,
            };
            if !allowed {
                rows.push((from, to.clone()));
            }
        }
    }
    rows
}

/// Every step forward of the lifecycle, out of each state it does not end in: what
/// `update_order_status` must serve (a skip forward is a reading the seed leaves open).
pub fn forward_moves() -> Vec<(&'static str, &'static str)> {
    ORDER_LIFECYCLE.windows(2).map(|w| (w[0], w[1])).collect()
}

/// What one row of the bounds matrix must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Served: the value sits on the bound.
    Served,
    /// Refused for its arguments: a validation error (or JSON-RPC -32602).
    Refused,
}

/// One row of the bounds matrix: `tool` called as the owner on the busy restaurant with `args`,
/// valid but for `edge`.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundRow {
    pub tool: ToolName,
    /// The member the row changes.
    pub argument: String,
    pub edge: String,
    pub args: Value,
    pub expect: Expect,
    pub clause: &'static str,
    /// The reference choice the row checks, when the seed does not require it (a repeated
    /// item refused): a row that does not hold is an ext difference, not a failure.
    pub choice: Option<&'static str>,
}

/// How the key of a write served with its widest text ends (ENV-3, see [`bound_rows`]).
const WIDEST: &str = "-widest";

impl BoundRow {
    /// A write served with a free text at its maximum in three-byte characters, more bytes than
    /// ENV-3's summary may have: what a summary quoting the text, cut in characters, breaks.
    pub fn widest_text(&self) -> bool {
        self.expect == Expect::Served
            && self.args[self.argument.as_str()]
                .as_str()
                .is_some_and(|t| t.len() > chataigne_contract::MAX_SUMMARY_BYTES)
            && self.args["idempotency_key"].as_str().is_some_and(|k| k.ends_with(WIDEST))
    }
}

/// Every mutation `crate::bounds::targets` finds in every tool's input schema, applied to
/// arguments that are valid otherwise; and for read tools, each numeric, length and item-count
/// bound met exactly (a write on the bound would change the dataset). Left out: `message_limit`
/// over its maximum refused (PAG-8 lets a server clamp it), and a free string on its maximum length
/// when it has a pattern or is a cursor (no valid value of that length can be made).
pub fn bound_rows(dataset: &Dataset) -> Vec<BoundRow> {
    use crate::bounds::{Mutation, targets};
    let mut rows = Vec::new();
    for &tool in ToolName::ALL {
        let schema = tool.input_schema();
        let Some(base) = bound_base(dataset, tool) else { continue };
        let name = tool.as_str();
        // Rows of a choice of their own, or past the schema's bound in another unit.
        let mut extra: Vec<(String, String, Value, Expect, Option<&'static str>)> = Vec::new();
        for target in targets(&schema) {
            let field = target.field.as_str();
            let prop = schema.pointer(&format!("/properties/{field}")).cloned().unwrap_or(Value::Null);
            let clause = target.clause(name);
            let mut push = |edge: String, value: Option<Value>, expect: Expect| {
                let mut args = base.clone();
                if let Some(map) = args.as_object_mut() {
                    match value {
                        Some(v) => map.insert(field.to_owned(), v),
                        None => map.remove(field),
                    };
                }
                // The seed bounds counts, never repeats (LIM-1: "eight metrics maximum").
                let choice = match target.mutation {
                    Mutation::DuplicateItems if field == "metrics" => Some("analytics-distinct-metrics"),
                    Mutation::DuplicateItems => Some("distinct-filter-values"),
                    _ => None,
                };
                rows.push(BoundRow { tool, argument: field.to_owned(), edge, args, expect, clause, choice });
            };
            let read = !tool.kind().is_write();
            match target.mutation {
                Mutation::BelowMinimum(m) | Mutation::AboveMaximum(m) => {
                    let above = matches!(target.mutation, Mutation::AboveMaximum(_));
                    // PAG-8 lets a server clamp `message_limit` above its maximum.
                    if !(above && field == "message_limit") {
                        push(
                            target.describe(),
                            Some(json!(if above { m + 1 } else { m - 1 })),
                            Expect::Refused,
                        );
                    }
                    if read {
                        push(format!("`{field}` = {m}, on its bound"), Some(json!(m)), Expect::Served);
                    }
                    // Past the bound by 32-bit wraps (`crate::edges::integer_wrap_edges`): a
                    // server that casts before it checks takes them for values within.
                    let lo = prop.get("minimum").and_then(Value::as_i64).unwrap_or(m);
                    let hi = prop.get("maximum").and_then(Value::as_i64).unwrap_or(m);
                    let wraps = crate::edges::integer_wrap_edges(lo, hi).into_iter();
                    for e in wraps.filter(|e| e.above == above && !(above && field == "message_limit")) {
                        push(
                            format!("`{field}` = {}, {}", e.value, e.why),
                            Some(json!(e.value)),
                            Expect::Refused,
                        );
                    }
                }
                Mutation::TooLong(m) => {
                    push(target.describe(), Some(json!(filler(&prop, m as usize + 1))), Expect::Refused);
                    let free =
                        prop.get("pattern").is_none() && prop.get("enum").is_none() && field != "cursor";
                    if read && free {
                        let edge = format!("`{field}` of {m} characters, its maximum");
                        push(edge, Some(json!(filler(&prop, m as usize))), Expect::Served);
                    }
                    // The same bound counted in other units (`crate::edges::length_edges`): a
                    // write within it only for the key of the tool IDEM-1's scenarios create with.
                    if free {
                        let min = prop.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
                        let served_write = field == "idempotency_key" && tool == ToolName::CreateInstruction;
                        for e in crate::edges::length_edges(min, m as usize) {
                            // A write's text at its maximum in astral characters is served too:
                            // a server counting UTF-16 units refuses it (the choice CODE_POINTS).
                            let astral_text =
                                e.unit == crate::edges::Unit::Astral && field != "idempotency_key";
                            if e.within && !read && !served_write && !astral_text {
                                continue;
                            }
                            let expect = if e.within { Expect::Served } else { Expect::Refused };
                            extra.push((
                                field.to_owned(),
                                e.describe(field),
                                json!(e.value()),
                                expect,
                                e.choice,
                            ));
                        }
                        // A write's free text that can outgrow ENV-3's summary in bytes: served
                        // at its maximum in three-byte characters, so that a summary quoting it
                        // cut in characters, not bytes, is seen (the judge holds every summary to
                        // 4 KiB). One and the same character for every reading of "characters".
                        let widest = "€".repeat(m as usize);
                        if !read
                            && field != "idempotency_key"
                            && widest.len() > chataigne_contract::MAX_SUMMARY_BYTES
                        {
                            let edge = format!("`{field}` of {m} three-byte characters (€), its maximum");
                            extra.push((field.to_owned(), edge, json!(widest), Expect::Served, None));
                        }
                    }
                }
                Mutation::TooShort(m) => {
                    push(target.describe(), Some(json!(filler(&prop, m as usize - 1))), Expect::Refused);
                }
                Mutation::TooManyItems(m) | Mutation::TooFewItems(m) => {
                    let items = enum_items(&prop);
                    let n = if matches!(target.mutation, Mutation::TooManyItems(_)) {
                        m as usize + 1
                    } else {
                        m as usize - 1
                    };
                    // Distinct where the enum has enough members: the count alone breaks the bound.
                    let past: Vec<Value> = (0..n)
                        .map(|i| items.get(i % items.len().max(1)).cloned().unwrap_or(json!("x")))
                        .collect();
                    push(target.describe(), Some(Value::Array(past)), Expect::Refused);
                    if read
                        && matches!(target.mutation, Mutation::TooManyItems(_))
                        && items.len() >= m as usize
                    {
                        let edge = format!("`{field}` with {m} items, its maximum");
                        push(edge, Some(Value::Array(items[..m as usize].to_vec())), Expect::Served);
                    }
                }
                Mutation::DuplicateItems => {
                    let first = enum_items(&prop).first().cloned().unwrap_or(json!("x"));
                    push(target.describe(), Some(json!([first.clone(), first])), Expect::Refused);
                }
                Mutation::MissingRequired => {
                    push(target.describe(), None, Expect::Refused);
                    // `null` is no value either (a server reading it as "not given" runs the call
                    // without it), unless the schema allows it.
                    if !allows_null(&prop) {
                        push(format!("`{field}` as null"), Some(Value::Null), Expect::Refused);
                    }
                    // Nor is an empty string where the schema allows none (a reader that tests
                    // the value's truth runs the call without it).
                    let empty_allowed =
                        prop.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&json!("")))
                            || prop.get("minLength").and_then(Value::as_u64).is_none_or(|m| m == 0)
                                && prop.get("enum").is_none()
                                && prop.get("pattern").is_none();
                    if prop.get("type").and_then(Value::as_str) == Some("string") && !empty_allowed {
                        push(format!("`{field}` as an empty string"), Some(json!("")), Expect::Refused);
                    }
                }
                Mutation::WrongType => {
                    push(target.describe(), Some(wrong_type(&prop)), Expect::Refused);
                    // A second type, the other scalar a lenient reader turns into this one.
                    let (name, value) = other_wrong_type(&prop);
                    push(format!("`{field}` as {name}"), Some(value), Expect::Refused);
                    // `null` for an optional member is no value of its type either: a server that
                    // drops nulls before validating serves the call as if it were absent. (A
                    // required one has its `null` row above.)
                    let required = schema
                        .get("required")
                        .and_then(Value::as_array)
                        .is_some_and(|r| r.iter().any(|f| f == field));
                    if !required && !allows_null(&prop) {
                        push(format!("`{field}` as null"), Some(Value::Null), Expect::Refused);
                    }
                    // An integer with a fractional part is a number, not an integer: a server
                    // that truncates it serves it.
                    if prop.get("type").and_then(Value::as_str) == Some("integer") {
                        push(format!("`{field}` = 20.5, not an integer"), Some(json!(20.5)), Expect::Refused);
                    }
                }
                Mutation::OutsideEnum => {
                    // A word of the tool's other enums is the likeliest wrong value (`cancelled`
                    // as a target of the lifecycle), then one of no enum at all.
                    let own: Vec<Value> = prop
                        .get("enum")
                        .or_else(|| prop.pointer("/items/enum"))
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let array = prop.get("type").and_then(Value::as_str) == Some("array");
                    // And words written otherwise: its own first word and the first other word in
                    // another case, its own first word with a trailing space (a server that
                    // matches loosely), and every word in its other spelling (`canceled` for
                    // `cancelled`). A few rows an enum, not three a word: each is a round trip.
                    let others: Vec<Value> =
                        enum_words(&schema).into_iter().filter(|w| !own.contains(w)).collect();
                    let word = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
                    let (first_own, first_other) = (word(own.first()), word(others.first()));
                    let cased =
                        [&first_own, &first_other].into_iter().flatten().map(|w| w.to_ascii_uppercase());
                    let spaced = first_own.iter().map(|w| format!("{w} "));
                    let spelled =
                        others.iter().chain(&own).filter_map(Value::as_str).map(|w| w.replacen("ll", "l", 1));
                    let variants = cased.chain(spaced).chain(spelled);
                    let variants: Vec<Value> = variants
                        .map(Value::from)
                        .filter(|v| !own.contains(v) && !others.contains(v))
                        .collect();
                    for word in others.iter().cloned().chain(variants).chain([json!("UNKNOWN")]) {
                        let edge = format!("`{field}` = {word}, outside its enum");
                        push(edge, Some(if array { json!([word]) } else { word }), Expect::Refused);
                    }
                }
                Mutation::PatternBroken => {
                    push(target.describe(), Some(json!("not matching")), Expect::Refused)
                }
                Mutation::ExtraProperty => push(target.describe(), Some(json!("x")), Expect::Refused),
            }
            for (argument, edge, value, expect, choice) in extra.drain(..) {
                let mut args = base.clone();
                args[argument.as_str()] = value;
                // A write served with other arguments than the matrices' calls: a key of its own.
                if expect == Expect::Served
                    && argument != "idempotency_key"
                    && let Some(key) = args.get("idempotency_key").and_then(Value::as_str)
                {
                    // The widest text's key ends so (`BoundRow::widest_text`); other texts' not.
                    let widest = args[argument.as_str()].as_str().is_some_and(|t| t.starts_with('€'));
                    let suffix = if widest { WIDEST } else { "-within" };
                    args["idempotency_key"] = json!(format!("{key}-{argument}{suffix}"));
                }
                rows.push(BoundRow { tool, argument, edge, args, expect, clause, choice });
            }
        }
        if crate::edges::has_range(&schema) {
            // One LIM-1 row: the range of `e`, with `extra` set too, named after it.
            let range_row = |e: &crate::edges::RangeEdge, extra: Option<(&str, &Value)>| {
                let mut args = base.clone();
                args["from"] = json!(e.from);
                args["to"] = json!(e.to);
                let mut edge = format!("from {} to {}: {}", e.from, e.to, e.why);
                if let Some((name, value)) = extra {
                    args[name] = value.clone();
                    edge = format!("`{name}` {value}, {edge}");
                }
                let expect = if e.within { Expect::Served } else { Expect::Refused };
                BoundRow {
                    tool,
                    argument: RANGE.to_owned(),
                    edge,
                    args,
                    expect,
                    clause: "LIM-1",
                    choice: None,
                }
            };
            let edges = crate::edges::calendar_edges();
            rows.extend(edges.iter().map(|e| range_row(e, None)));
            // The bound whatever else the call asks: each member of each optional enum (a
            // granularity that groups the days by week or month) with the longest range within
            // the bound and the shortest past it.
            let required: Vec<&str> =
                schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let properties = schema["properties"].as_object().into_iter().flatten();
            for (name, prop) in properties.filter(|(n, _)| !required.contains(&n.as_str())) {
                for member in prop.get("enum").and_then(Value::as_array).into_iter().flatten() {
                    let straddling = crate::edges::month_straddling_edge();
                    let picked = edges.iter().take(2).chain(std::iter::once(&straddling));
                    rows.extend(picked.map(|e| range_row(e, Some((name.as_str(), member)))));
                }
            }
        }
    }
    rows
}

/// One row of IDEM-3's matrix: a keyed write called with `first`, then with the same key and
/// `changed`, which differs from it in `member` alone: the second is not the first call.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyReuseRow {
    pub tool: ToolName,
    pub member: String,
    pub first: Value,
    pub changed: Value,
}

/// Every keyed write of the contract, as the owner on the busy restaurant, with each member but
/// the key changed in turn to another value the owner may send: another restaurant of the
/// organization, another conversation of the restaurant, another organization of theirs, another
/// enum word or time zone, a text changed in its first character. A member no other value can be
/// found for is left out (the dataset has none).
pub fn key_reuse_rows(dataset: &Dataset) -> Vec<KeyReuseRow> {
    let mut rows = Vec::new();
    for &tool in ToolName::ALL {
        let schema = tool.input_schema();
        if schema.pointer("/properties/idempotency_key").is_none() {
            continue;
        }
        let Some(base) = bound_base(dataset, tool) else { continue };
        let Some(members) = base.as_object() else { continue };
        for (member, value) in members.iter().filter(|(m, _)| *m != "idempotency_key") {
            let prop = schema.pointer(&format!("/properties/{member}")).cloned().unwrap_or(Value::Null);
            let Some(other) = changed_value(dataset, member, value, &prop) else { continue };
            let mut first = base.clone();
            first["idempotency_key"] = json!(format!("idem3-{}-{member}-CANARY", tool.as_str()));
            let mut changed = first.clone();
            changed[member.as_str()] = other;
            rows.push(KeyReuseRow { tool, member: member.clone(), first, changed });
            if let Some((long, other)) = long_text_pair(member, value, &prop) {
                let mut first = base.clone();
                first["idempotency_key"] = json!(format!("idem3-{}-{member}-end-CANARY", tool.as_str()));
                first[member.as_str()] = json!(long);
                let mut changed = first.clone();
                changed[member.as_str()] = json!(other);
                rows.push(KeyReuseRow { tool, member: format!("{member} (at its end)"), first, changed });
            }
        }
    }
    rows
}

/// Room a literal's `CANARY` takes once the scenario's canary replaces it (`cnry` + 16 digits).
const CANARY_GROWTH: usize = 14;

/// A free text member as long as its schema allows, and the same text with its last character
/// changed: a server that compares a key's arguments by a prefix (a fingerprint of the first
/// hundred characters) replays one for the other. `None` for IDs, patterns and unbounded members.
fn long_text_pair(member: &str, value: &Value, prop: &Value) -> Option<(String, String)> {
    let text = value.as_str()?;
    if member.ends_with("_id") || prop.get("pattern").is_some() || prop.get("enum").is_some() {
        return None;
    }
    let max = prop.get("maxLength")?.as_u64()? as usize;
    let room = max.checked_sub(text.matches("CANARY").count() * CANARY_GROWTH)?;
    let used = text.chars().count() + 1;
    let long = format!("{text} {}", "a".repeat(room.checked_sub(used)?));
    let other = format!("{}b", &long[..long.len() - 1]);
    Some((long, other))
}

/// Another value of a keyed write's `member` (now `value`) the owner may send: the cursor rows'
/// [`other_value`] for IDs and enums, else another organization they own, another time zone, a
/// text changed in its first character.
fn changed_value(dataset: &Dataset, member: &str, value: &Value, prop: &Value) -> Option<Value> {
    let text = value.as_str()?;
    if member == "conversation_id" {
        let restaurant = dataset.conversations.iter().find(|c| c.id == text)?.restaurant_id.clone();
        let other = dataset.conversations.iter().find(|c| c.restaurant_id == restaurant && c.id != text)?;
        return Some(json!(other.id));
    }
    if let Some(other) = other_value(dataset, member, prop, value).filter(|o| o != value) {
        return Some(other);
    }
    Some(json!(match member {
        "organization_id" => {
            let owner = dataset.personas.iter().find(|p| p.persona == "owner")?;
            dataset
                .memberships
                .iter()
                .find(|m| {
                    m.user_id == owner.user_id
                        && !m.revoked
                        && m.role == chataigne_contract::tools::Role::Owner
                        && m.organization_id != text
                })?
                .organization_id
                .clone()
        }
        "timezone" => (if text == "UTC" { "Europe/Paris" } else { "UTC" }).to_owned(),
        _ if member.ends_with("_id") || prop.get("pattern").is_some() => return None,
        _ => {
            let mut chars = text.chars();
            let first = chars.next()?;
            format!("{}{}", if first == 'X' { 'Y' } else { 'X' }, chars.as_str())
        }
    }))
}

/// The argument name of LIM-1's calendar rows: the range, a rule no JSON Schema states.
pub const RANGE: &str = "from..=to";

/// One row of LIM-4's matrix: `tool`, slowed past the deadline of its kind, answers
/// `expect`: a read MCP_TOOL_TIMEOUT, a write MCP_OUTCOME_UNKNOWN, never a success.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadlineRow {
    pub tool: ToolName,
    /// The deadline's name in the control API (`read`, `analytics`, `write`).
    pub deadline: &'static str,
    /// Valid arguments for the owner on the busy restaurant, that reach the effect; `None` for
    /// `update_order_status`, whose order in `received` is found on the server.
    pub args: Option<Value>,
    pub expect: ErrorCode,
}

/// Every tool, each past the deadline its `Kind` gives it (LIM-4): not one picked read.
pub fn deadline_rows(dataset: &Dataset) -> Vec<DeadlineRow> {
    use chataigne_contract::Kind;
    let mut rows = Vec::new();
    for &tool in ToolName::ALL {
        let kind = tool.kind();
        let deadline = match kind {
            Kind::Read => "read",
            Kind::Analytics => "analytics",
            Kind::Write | Kind::KeyedWrite => "write",
        };
        let expect = if kind.is_write() { ErrorCode::OutcomeUnknown } else { ErrorCode::ToolTimeout };
        let mut args = bound_base(dataset, tool);
        if let Some(a) = args.as_mut().and_then(Value::as_object_mut) {
            // The state the record is in as expected, and a key of this matrix's own.
            if tool == ToolName::SetRestaurantStatus
                && let (Some(status), Some(expected)) =
                    (a.get("status").cloned(), a.get("expected_status").cloned())
            {
                a.insert("status".into(), expected);
                a.insert("expected_status".into(), status);
            }
            if a.contains_key("idempotency_key") {
                a.insert("idempotency_key".into(), json!(format!("deadline-{}", tool.as_str())));
            }
        }
        if tool == ToolName::UpdateOrderStatus {
            args = None;
        }
        rows.push(DeadlineRow { tool, deadline, args, expect });
    }
    rows
}

/// Valid arguments of `tool` for the owner on the busy restaurant, every optional member left out
/// but the page size (1: the smallest answer).
fn bound_base(dataset: &Dataset, tool: ToolName) -> Option<Value> {
    let owner = dataset.personas.iter().find(|p| p.persona == "owner")?;
    let home = dataset.restaurants.iter().find(|r| r.id == dataset.landmarks.busy_restaurant)?;
    match tool {
        ToolName::ListOrganizations => Some(json!({ "limit": 1 })),
        ToolName::CreateOrganization => {
            Some(json!({ "name": "Matrix CANARY", "idempotency_key": "matrix-owner-create_organization" }))
        }
        _ => access_args(dataset, tool, home, owner),
    }
}

/// Every enum member of every property of `schema` (items' enums included), each once.
fn enum_words(schema: &Value) -> Vec<Value> {
    let mut words = Vec::new();
    for prop in schema.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.values()) {
        let members = prop.get("enum").or_else(|| prop.pointer("/items/enum")).and_then(Value::as_array);
        for word in members.into_iter().flatten() {
            if !words.contains(word) {
                words.push(word.clone());
            }
        }
    }
    words
}

/// The members of an array's item enum (the values an item may take), in order.
fn enum_items(prop: &Value) -> Vec<Value> {
    prop.pointer("/items/enum").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Whether the member's schema admits `null`.
fn allows_null(prop: &Value) -> bool {
    match prop.get("type") {
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        Some(t) => t == "null",
        None => true,
    }
}

fn first_type(prop: &Value) -> Option<&str> {
    match prop.get("type") {
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        Some(t) => t.as_str(),
        None => None,
    }
}

/// A value of another JSON type than the member's, the one a lenient reader most likely takes
/// for it: a number for a string has as many digits as the string's bounds allow, so a server
/// that reads it as its decimal text finds it valid (`12345678` for an 8..=255 key).
fn wrong_type(prop: &Value) -> Value {
    match first_type(prop) {
        Some("integer" | "number") => json!("7"),
        // One valid item on its own, not in a list: a reader that wraps a scalar (as a query
        // string parser does) serves it; a value outside the items' enum would be refused anyway.
        Some("array") => prop.pointer("/items/enum/0").cloned().unwrap_or_else(|| json!("x")),
        Some("boolean") => json!("true"),
        Some("object") => json!([]),
        _ => {
            let min = prop.get("minLength").and_then(Value::as_u64).unwrap_or(1).max(1);
            let max = prop.get("maxLength").and_then(Value::as_u64).unwrap_or(u64::MAX);
            // At most 18 digits: exact as a JSON number in every reader.
            let digits = min.min(max).min(18) as usize;
            let text: String = "123456789".chars().cycle().take(digits).collect();
            json!(text.parse::<u64>().unwrap_or(7))
        }
    }
}

/// A second value of another type (its name, the value): the other scalar (a boolean, or 1 for
/// a boolean), an object for an array, a string for an object.
fn other_wrong_type(prop: &Value) -> (&'static str, Value) {
    match first_type(prop) {
        Some("boolean") => ("the number 1", json!(1)),
        Some("array") => ("an object", json!({})),
        Some("object") => ("a string", json!("x")),
        _ => ("the boolean true", json!(true)),
    }
}

/// `len` characters for the member `prop`: an ID keeps the prefix its pattern starts with
/// (`^rst_…`), so only its length is wrong.
fn filler(prop: &Value, len: usize) -> String {
    let pattern = prop.get("pattern").and_then(Value::as_str).unwrap_or_default();
    let prefix = pattern
        .strip_prefix('^')
        .and_then(|p| p.find('_').map(|at| &p[..=at]))
        .filter(|p| p[..p.len() - 1].chars().all(|c| c.is_ascii_lowercase()))
        .unwrap_or_default();
    let mut s: String = prefix.chars().take(len).collect();
    while s.len() < len {
        s.push('a');
    }
    s
}

/// A check of AUTH-8's chain a persona can fail, in the reference's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Check {
    /// AUTH-3.
    Scope,
    /// AUTH-4 (and AUTH-7: a revoked membership is none).
    Membership,
    /// AUTH-6.
    Role,
}

impl Check {
    pub fn clause(self) -> &'static str {
        match self {
            Check::Scope => "AUTH-3",
            Check::Membership => "AUTH-4",
            Check::Role => "AUTH-6",
        }
    }

    pub fn code(self) -> ErrorCode {
        match self {
            Check::Scope => ErrorCode::ScopeRequired,
            Check::Membership | Check::Role => ErrorCode::ResourceForbidden,
        }
    }
}

/// One row of the access matrix: `persona` calls `tool` on `restaurant` with `args`; `fails`
/// lists the checks it fails there (empty: it is allowed).
#[derive(Debug, Clone, PartialEq)]
pub struct AccessRow {
    pub persona: String,
    pub tool: ToolName,
    pub restaurant: String,
    pub args: Value,
    pub fails: Vec<Check>,
}

/// Every tool with a minimum role × every persona with a token for this server × every restaurant
/// of the dataset, where the tool's arguments can be built (a record of that restaurant exists).
/// Tools that act on an organization take the restaurant's; memberships limited to some
/// restaurants are left out of those (the contract does not say what they grant on the
/// organization).
pub fn access_rows(dataset: &Dataset) -> Vec<AccessRow> {
    let mut rows = Vec::new();
    for persona in dataset.personas.iter().filter(|p| p.audience.is_none()) {
        for restaurant in &dataset.restaurants {
            for &tool in ToolName::ALL {
                let Some(min_role) = tool.min_role() else { continue };
                let on_organization = !has_argument(tool, "restaurant_id");
                if on_organization && !has_argument(tool, "organization_id") {
                    continue;
                }
                let Some(args) = access_args(dataset, tool, restaurant, persona) else { continue };
                let mut fails = Vec::new();
                if !persona.scopes.iter().any(|s| s == tool.scope()) {
                    fails.push(Check::Scope);
                }
                let membership = dataset.memberships.iter().find(|m| {
                    m.user_id == persona.user_id
                        && m.organization_id == restaurant.organization_id
                        && !m.revoked
                });
                match membership {
                    Some(m) if on_organization && m.restaurant_ids.is_some() => continue,
                    Some(m) if m.restaurant_ids.as_ref().is_some_and(|ids| !ids.contains(&restaurant.id)) => {
                        fails.push(Check::Membership)
                    }
                    Some(m) if m.role < min_role => fails.push(Check::Role),
                    Some(_) => {}
                    None => fails.push(Check::Membership),
                }
                // A refused write is sent as one that would take effect: a server that refuses it
                // and applies it all the same is then seen by the run's audit (`crate::audit`).
                let args = match effective_args(dataset, tool, restaurant) {
                    Some(effective) if !fails.is_empty() => effective,
                    _ => args,
                };
                rows.push(AccessRow {
                    persona: persona.persona.clone(),
                    tool,
                    restaurant: restaurant.id.clone(),
                    args,
                    fails,
                });
            }
        }
    }
    rows
}

/// Each restaurant's order that the access rows' refused moves name (its oldest received one),
/// claimed for the whole run (`runner`) so that no scenario moves it: every write of it is a
/// refusal, and the audit holds it to its first state.
pub fn refusal_witnesses(dataset: &Dataset) -> Vec<String> {
    dataset.restaurants.iter().filter_map(|r| witness_order(dataset, &r.id)).collect()
}

fn witness_order(dataset: &Dataset, restaurant: &str) -> Option<String> {
    // The oldest received order, and only where another is left for the scenarios that move
    // one (they pick from the newest first).
    let received: Vec<_> = dataset.orders_of(restaurant).filter(|o| o.status == "received").collect();
    if received.len() < 2 {
        return None;
    }
    received.into_iter().min_by_key(|o| (&o.created_at, &o.id)).map(|o| o.id.clone())
}

/// A state write of `restaurant` that would take effect if it were carried out: the witness
/// order's next step, the restaurant's other status.
fn effective_args(
    dataset: &Dataset,
    tool: ToolName,
    restaurant: &chataigne_contract::dataset::Restaurant,
) -> Option<Value> {
    let r = restaurant.id.as_str();
    match tool {
        ToolName::UpdateOrderStatus => {
            let order = witness_order(dataset, r)?;
            Some(
                json!({ "restaurant_id": r, "order_id": order, "status": "accepted", "expected_status": "received" }),
            )
        }
        ToolName::SetRestaurantStatus => {
            let other = if restaurant.status == "open" { "paused" } else { "open" };
            Some(json!({ "restaurant_id": r, "status": other, "expected_status": restaurant.status }))
        }
        _ => None,
    }
}

fn has_argument(tool: ToolName, name: &str) -> bool {
    tool.input_schema().pointer(&format!("/properties/{name}")).is_some()
}

/// Arguments that pass every check but access: real records of `restaurant`. Writes are shaped so
/// that a persona who *is* allowed changes nothing: an order move expects a state the order is not
/// in (or, when it is, asks a backward move), a restaurant status expects the other status.
fn access_args(
    dataset: &Dataset,
    tool: ToolName,
    restaurant: &chataigne_contract::dataset::Restaurant,
    persona: &Persona,
) -> Option<Value> {
    use ToolName::*;
    let r = restaurant.id.as_str();
    let order = || dataset.orders_of(r).next().map(|o| o.id.clone());
    let conversation = || dataset.conversations.iter().find(|c| c.restaurant_id == r).map(|c| c.id.clone());
    let transcript = || {
        dataset
            .transcripts
            .iter()
            .filter(|t| t.restaurant_id == r)
            .min_by_key(|t| t.text.len())
            .map(|t| t.id.clone())
    };
    let key = format!("matrix-{}-{}-{r}", persona.persona, tool.as_str());
    Some(match tool {
        GetRestaurant => json!({ "restaurant_id": r }),
        ListOrders | ListConversations | ListInstructions => json!({ "restaurant_id": r, "limit": 1 }),
        GetOrder => json!({ "restaurant_id": r, "order_id": order()? }),
        GetConversation => {
            json!({ "restaurant_id": r, "conversation_id": conversation()?, "message_limit": 1 })
        }
        SearchTranscripts => {
            json!({ "restaurant_id": r, "query": dataset.landmarks.transcript_phrase, "limit": 1 })
        }
        GetTranscript => json!({ "restaurant_id": r, "transcript_id": transcript()? }),
        GetAnalytics => {
            json!({ "restaurant_id": r, "metrics": ["orders_count"], "from": "2026-01-01", "to": "2026-01-31" })
        }
        UpdateOrderStatus => {
            json!({ "restaurant_id": r, "order_id": order()?, "status": "accepted", "expected_status": "completed" })
        }
        SetRestaurantStatus => {
            let other = if restaurant.status == "open" { "paused" } else { "open" };
            json!({ "restaurant_id": r, "status": restaurant.status, "expected_status": other })
        }
        SendMessage => {
            json!({ "restaurant_id": r, "conversation_id": conversation()?, "text": "Matrix CANARY", "idempotency_key": key })
        }
        CreateInstruction => json!({ "restaurant_id": r, "text": "Matrix CANARY", "idempotency_key": key }),
        CreateRestaurant => {
            json!({ "organization_id": restaurant.organization_id, "name": "Matrix CANARY", "timezone": "Europe/Paris", "idempotency_key": key })
        }
        ListRestaurants => json!({ "organization_id": restaurant.organization_id, "limit": 1 }),
        ListOrganizations | CreateOrganization => return None,
    })
}

/// One row of the size matrices: `persona` calls `tool` with `args`, an answer the dataset makes
/// bigger than 128 KiB. For a page, `ids` are the dataset's records it lists (its walk must give
/// each once) and `key` the array under `data` that holds them; for a single record, both empty.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeRow {
    pub persona: String,
    pub tool: ToolName,
    pub restaurant: String,
    /// The filter in a few words (`no filter`, `channel = "catering"`).
    pub filter: String,
    pub args: Value,
    pub ids: Vec<String>,
    pub key: String,
    /// For a record: the bytes of its string values alone, which any rendering of it whole
    /// carries (over 128 KiB, no success can hold it whole).
    pub content_bytes: usize,
}

/// The dataset's records `tool` reads in `restaurant`, as JSON (their size is the estimate of an
/// answer's). `None`: a tool whose records the dataset does not hold whole (analytics, search
/// snippets), or that holds no record of a restaurant.
fn records_of(dataset: &Dataset, tool: ToolName, restaurant: &str) -> Option<Vec<Value>> {
    use ToolName::*;
    fn json<T: serde::Serialize>(records: impl Iterator<Item = T>) -> Vec<Value> {
        records.filter_map(|r| serde_json::to_value(r).ok()).collect()
    }
    let r = restaurant;
    Some(match tool {
        ListOrders | GetOrder => json(dataset.orders_of(r)),
        ListConversations => json(dataset.conversations.iter().filter(|c| c.restaurant_id == r)),
        ListInstructions => json(dataset.instructions.iter().filter(|i| i.restaurant_id == r)),
        GetTranscript => json(dataset.transcripts.iter().filter(|t| t.restaurant_id == r)),
        _ => return None,
    })
}

/// A record's size as JSON.
fn size(record: &Value) -> usize {
    record.to_string().len()
}

/// The bytes of a record's string values, whatever JSON carries them.
fn content(record: &Value) -> usize {
    match record {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(content).sum(),
        Value::Object(o) => o.values().map(content).sum(),
        _ => 0,
    }
}

/// The array under `data` a list tool's answer holds its items in (its published data shape).
pub fn list_key(tool: ToolName) -> Option<String> {
    let shape = tool.data_shape();
    let properties = shape.get("properties")?.as_object()?;
    properties.iter().find(|(_, p)| p.get("type") == Some(&json!("array"))).map(|(k, _)| k.clone())
}

/// The (persona, restaurant) pairs the access tables let call `tool`.
fn reaching(dataset: &Dataset, tool: ToolName) -> Vec<(String, String)> {
    access_rows(dataset)
        .into_iter()
        .filter(|r| r.tool == tool && r.fails.is_empty())
        .map(|r| (r.persona, r.restaurant))
        .collect()
}

/// LIM-5 for every list tool × every filter value its schema enumerates (and none) × every persona
/// and restaurant the tables allow, where even the smallest records of the dataset would make a
/// page of the largest `limit` bigger than 128 KiB (a lower bound: the server's own rendering
/// may differ, so the step judges the answer's real size).
pub fn page_size_rows(dataset: &Dataset) -> Vec<SizeRow> {
    let mut rows = Vec::new();
    for &tool in ToolName::ALL {
        let schema = tool.input_schema();
        let (Some(key), Some(largest)) =
            (list_key(tool), schema.pointer("/properties/limit/maximum").and_then(Value::as_u64))
        else {
            continue;
        };
        let mut filters: Vec<(String, Option<(String, Value)>)> = vec![("no filter".to_owned(), None)];
        for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
            if is_timestamp(property) {
                continue;
            }
            for value in values(name, property) {
                filters.push((format!("{name} = {value}"), Some((name.clone(), value))));
            }
        }
        for (persona, restaurant) in reaching(dataset, tool) {
            let Some(records) = records_of(dataset, tool, &restaurant) else { continue };
            for (filter, selection) in &filters {
                let kept: Vec<&Value> = records
                    .iter()
                    .filter(|r| match selection {
                        None => true,
                        Some((name, Value::Array(any))) => any.contains(&r[name.as_str()]),
                        Some((name, value)) => &r[name.as_str()] == value,
                    })
                    .collect();
                let mut sizes: Vec<usize> = kept.iter().map(|r| size(r)).collect();
                sizes.sort_unstable();
                let smallest_page: usize = sizes.iter().take(largest as usize).sum();
                if smallest_page <= MAX_STRUCTURED_BYTES {
                    continue;
                }
                let mut args = json!({ "restaurant_id": restaurant, "limit": largest });
                if let Some((name, value)) = selection {
                    args[name.as_str()] = value.clone();
                }
                rows.push(SizeRow {
                    persona: persona.clone(),
                    tool,
                    restaurant: restaurant.clone(),
                    filter: filter.clone(),
                    args,
                    ids: kept.iter().filter_map(|r| r["id"].as_str().map(str::to_owned)).collect(),
                    key: key.clone(),
                    content_bytes: 0,
                });
            }
        }
    }
    rows
}

/// LIM-6 for every tool that returns one record × every record of the dataset bigger than
/// 128 KiB × every persona the tables let read it.
pub fn item_size_rows(dataset: &Dataset) -> Vec<SizeRow> {
    let mut rows = Vec::new();
    for &tool in ToolName::ALL {
        if list_key(tool).is_some() || tool.kind().is_write() {
            continue;
        }
        let schema = tool.input_schema();
        let required = chataigne_contract::schema::required(&schema);
        let Some(id_arg) = required.iter().find(|n| n.ends_with("_id") && **n != "restaurant_id") else {
            continue;
        };
        for (persona, restaurant) in reaching(dataset, tool) {
            let Some(records) = records_of(dataset, tool, &restaurant) else { continue };
            for record in records.iter().filter(|r| size(r) > MAX_STRUCTURED_BYTES) {
                let Some(id) = record["id"].as_str() else { continue };
                rows.push(SizeRow {
                    persona: persona.clone(),
                    tool,
                    restaurant: restaurant.clone(),
                    filter: format!("{id_arg} = {id}"),
                    args: json!({ "restaurant_id": restaurant, *id_arg: id }),
                    ids: Vec::new(),
                    key: String::new(),
                    content_bytes: content(record),
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_size_rows_are_the_pages_and_records_over_128_kib_for_every_filter_and_persona() {
        let d = chataigne_contract::dataset::generate();
        let large = d.landmarks.large_orders_restaurant.clone();
        let pages = page_size_rows(&d);
        let shown: Vec<String> = pages
            .iter()
            .map(|r| format!("{} {} {} {}", r.persona, r.tool.as_str(), r.restaurant, r.filter))
            .collect();
        // The large restaurant's 50 orders unfiltered, and through each filter that keeps over
        // 128 KiB of them (most are completed).
        assert!(shown.contains(&format!("owner list_orders {large} no filter")), "{shown:#?}");
        assert!(shown.contains(&format!("owner list_orders {large} status = [\"completed\"]")), "{shown:#?}");
        assert!(!shown.iter().any(|s| s.contains("status = [\"received\"]")), "{shown:#?}");
        assert!(pages.iter().all(|r| r.key == "orders" && r.args["limit"] == 50), "{shown:#?}");
        assert!(pages.iter().filter(|r| r.filter == "no filter").all(|r| r.ids.len() == 50));
        // Every persona the tables let list the large restaurant's orders, not the owner alone.
        let personas: BTreeSet<&str> = pages.iter().map(|r| r.persona.as_str()).collect();
        assert!(personas.len() > 1, "{personas:?}");
        let items = item_size_rows(&d);
        let huge = d.landmarks.huge_transcript.clone();
        assert!(!items.is_empty());
        assert!(
            items.iter().all(|r| r.tool == ToolName::GetTranscript && r.args["transcript_id"] == huge),
            "{items:#?}"
        );
    }

    fn dataset() -> Dataset {
        chataigne_contract::dataset::generate()
    }

    #[test]
    fn every_ordered_pair_of_tools_that_page_is_a_row_and_each_call_is_valid() {
        use chataigne_contract::schema::Validator;
        let d = dataset();
        let rows = cursor_tool_rows(&d);
        let paging: Vec<ToolName> = ToolName::ALL
            .iter()
            .copied()
            .filter(|t| t.input_schema().pointer("/properties/cursor").is_some())
            .collect();
        let sources: BTreeSet<&str> = cursor_rows(&d).iter().map(|r| r.tool.as_str()).collect();
        // Every source to every other paging tool: none left out, none to itself.
        assert_eq!(rows.len(), sources.len() * (paging.len() - 1), "{rows:#?}");
        assert!(rows.iter().all(|r| r.from != r.to));
        for row in &rows {
            for (tool, args) in [(row.from, &row.from_args), (row.to, &row.to_args)] {
                let validator = Validator::new(&tool.input_schema()).unwrap();
                assert!(validator.is_valid(args), "{}: {args}", tool.as_str());
            }
        }
        assert!(paging.len() >= 4, "{paging:?}");
        // Two tools that take the same arguments: the cursor's filters match, so only its tool
        // binding can refuse it (`cursor-tool-unbound`).
        assert!(rows.iter().any(|r| r.from_args == r.to_args), "{rows:#?}");
    }

    #[test]
    fn every_bound_row_breaks_its_tools_schema_or_meets_it_as_it_says() {
        use chataigne_contract::schema::Validator;
        let rows = bound_rows(&dataset());
        for &tool in ToolName::ALL {
            let validator = Validator::new(&tool.input_schema()).unwrap();
            let base = bound_base(&dataset(), tool).expect("valid arguments for every tool");
            assert!(validator.is_valid(&base), "{}: base {base}", tool.as_str());
            let mine: Vec<&BoundRow> = rows.iter().filter(|r| r.tool == tool).collect();
            // At least the extra member and each required member: no tool is left out.
            assert!(mine.len() > chataigne_contract::schema::required(&tool.input_schema()).len());
            for row in mine {
                // LIM-1's range is a rule no JSON Schema states: judged by day arithmetic.
                let valid = if row.argument == RANGE {
                    assert!(validator.is_valid(&row.args), "{}", row.edge);
                    edges_range_ok(&row.args)
                } else {
                    validator.is_valid(&row.args)
                };
                assert_eq!(
                    valid,
                    row.expect == Expect::Served,
                    "{} with {}: {}",
                    tool.as_str(),
                    row.edge,
                    row.args
                );
                // A write on a bound changes data: only IDEM-1's key, on the tool its scenarios
                // create with, and a text that could outgrow ENV-3's summary (with a key of its
                // own, into the busy restaurant the other writes use).
                // And a text at its maximum in astral characters (`length-code-points`), with a
                // key of its own too.
                let keyed = row.argument == "idempotency_key" && tool == ToolName::CreateInstruction;
                let within = row.args["idempotency_key"].as_str().is_some_and(|k| k.ends_with("-within"));
                assert!(
                    !(tool.kind().is_write() && row.expect == Expect::Served)
                        || keyed
                        || row.widest_text()
                        || within,
                    "a write on a bound changes data: {}",
                    row.edge
                );
            }
        }
    }

    #[test]
    fn the_bounds_matrix_files_rows_under_each_bounds_own_clause() {
        let rows = bound_rows(&dataset());
        let find = |tool: ToolName, edge: &str| {
            rows.iter().find(|r| r.tool == tool && r.edge.contains(edge)).map(|r| (r.clause, r.expect))
        };
        assert_eq!(
            find(ToolName::ListOrders, "`limit` above its maximum 50"),
            Some(("PAG-2", Expect::Refused))
        );
        assert_eq!(find(ToolName::ListOrders, "`limit` = 50"), Some(("PAG-2", Expect::Served)));
        assert_eq!(find(ToolName::GetConversation, "`message_limit` = 100"), Some(("PAG-8", Expect::Served)));
        assert_eq!(find(ToolName::GetConversation, "`message_limit` above"), None, "PAG-8 allows a clamp");
        assert_eq!(find(ToolName::GetAnalytics, "`metrics` with 8 items"), Some(("LIM-1", Expect::Served)));
        assert_eq!(
            find(ToolName::SendMessage, "`idempotency_key` shorter"),
            Some(("IDEM-1", Expect::Refused))
        );
        assert_eq!(
            find(ToolName::SetRestaurantStatus, "`expected_status` missing"),
            Some(("PRE-1", Expect::Refused))
        );
        assert_eq!(find(ToolName::SearchTranscripts, "`query` longer"), Some(("LIM-7", Expect::Refused)));
        let clauses: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.clause).collect();
        let want = ["ABS-2", "IDEM-1", "LIM-1", "LIM-7", "PAG-2", "PAG-8", "PRE-1", "PROTO-3"];
        assert_eq!(clauses.into_iter().collect::<Vec<_>>(), want);
    }

    fn edges_range_ok(args: &Value) -> bool {
        let day = |m: &str| chataigne_contract::time::parse_date(args[m].as_str().unwrap()).unwrap();
        let (from, to) = (day("from"), day("to"));
        to >= from && to - from < chataigne_contract::MAX_RANGE_DAYS
    }

    #[test]
    fn the_bounds_matrix_holds_the_edges_in_every_unit_and_across_the_calendar() {
        let rows = bound_rows(&dataset());
        let find = |tool: ToolName, edge: &str| {
            rows.iter().find(|r| r.tool == tool && r.edge == edge).map(|r| (r.clause, r.expect, r.choice))
        };
        let key = "`idempotency_key` of 255 two-byte characters (é), within its bound";
        assert_eq!(find(ToolName::CreateInstruction, key), Some(("IDEM-1", Expect::Served, None)));
        assert_eq!(find(ToolName::SendMessage, key), None, "one keyed write on the bound");
        let short = "`idempotency_key` of 7 two-byte characters (é), outside its bound";
        assert_eq!(find(ToolName::SendMessage, short), Some(("IDEM-1", Expect::Refused, None)));
        let astral = "`query` of 200 astral characters (😀, two UTF-16 units), within its bound";
        assert_eq!(
            find(ToolName::SearchTranscripts, astral),
            Some(("LIM-7", Expect::Served, Some(crate::edges::CODE_POINTS)))
        );
        let leap = "from 2027-03-01 to 2028-03-01: a day longer, through 29 February (367 days)";
        assert_eq!(find(ToolName::GetAnalytics, leap), Some(("LIM-1", Expect::Refused, None)));
        let year = "from 2028-01-01 to 2028-12-31: a whole leap year (366 days)";
        assert_eq!(find(ToolName::GetAnalytics, year), Some(("LIM-1", Expect::Served, None)));
        // The same bound under every granularity the schema offers.
        for g in ["day", "week", "month"] {
            let past = format!(
                "`granularity` \"{g}\", from 2028-01-01 to 2029-01-01: a leap year and a day (367 days)"
            );
            assert_eq!(find(ToolName::GetAnalytics, &past), Some(("LIM-1", Expect::Refused, None)), "{g}");
        }
    }

    #[test]
    fn every_tool_has_a_deadline_row_with_valid_arguments_and_its_kinds_code() {
        use chataigne_contract::schema::Validator;
        let d = dataset();
        let rows = deadline_rows(&d);
        assert_eq!(rows.len(), ToolName::ALL.len());
        for row in &rows {
            let want =
                if row.tool.kind().is_write() { ErrorCode::OutcomeUnknown } else { ErrorCode::ToolTimeout };
            assert_eq!(row.expect, want, "{}", row.tool.as_str());
            match &row.args {
                Some(args) => {
                    let v = Validator::new(&row.tool.input_schema()).unwrap();
                    assert!(v.is_valid(args), "{}: {args}", row.tool.as_str());
                }
                None => assert_eq!(row.tool, ToolName::UpdateOrderStatus),
            }
        }
        let analytics = rows.iter().find(|r| r.tool == ToolName::GetAnalytics).unwrap();
        assert_eq!(analytics.deadline, "analytics");
        // set_restaurant_status expects the state the dataset holds, so it reaches the effect.
        let set = rows.iter().find(|r| r.tool == ToolName::SetRestaurantStatus).unwrap();
        let home = d.restaurants.iter().find(|r| r.id == d.landmarks.busy_restaurant).unwrap();
        assert_eq!(set.args.as_ref().unwrap()["expected_status"], json!(home.status));
    }

    #[test]
    fn the_forward_moves_are_the_lifecycles_steps() {
        let moves = forward_moves();
        assert_eq!(moves.len(), ORDER_LIFECYCLE.len() - 1);
        let refused = refused_transitions();
        for (from, to) in moves {
            assert!(
                !refused.iter().any(|(f, t)| *f == from && t == to),
                "{from} → {to} both allowed and refused"
            );
        }
    }

    #[test]
    fn every_argument_a_cursor_is_bound_to_has_a_row() {
        let rows = cursor_rows(&dataset());
        let names: Vec<String> = rows.iter().map(|r| format!("{}.{}", r.tool.as_str(), r.argument)).collect();
        for expected in [
            "list_restaurants.organization_id",
            "list_restaurants.status",
            "list_orders.restaurant_id",
            "list_orders.status",
            "list_orders.channel",
            "list_orders.created_from",
            "list_orders.created_to",
            "list_conversations.restaurant_id",
            "list_conversations.status",
            "list_conversations.channel",
            "get_conversation.restaurant_id",
            "get_conversation.conversation_id",
            "search_transcripts.restaurant_id",
            "search_transcripts.query",
            "list_instructions.restaurant_id",
        ] {
            assert!(names.contains(&expected.to_owned()), "{expected} missing from {names:?}");
        }
        assert_eq!(names.len(), 15, "{names:?}");
        for row in &rows {
            assert_ne!(row.base, row.changed, "{}.{}", row.tool.as_str(), row.argument);
            assert!(row.tool.input_schema()["properties"]["cursor"].is_object());
        }
    }

    /// Each free text of a keyed write is also reused at its longest, changed in its last
    /// character only, within its bound once the canary replaces `CANARY`.
    #[test]
    fn each_keyed_text_is_reused_changed_at_its_end_too() {
        let rows = key_reuse_rows(&chataigne_contract::dataset::generate());
        let ends: Vec<&KeyReuseRow> = rows.iter().filter(|r| r.member.ends_with("(at its end)")).collect();
        assert!(ends.iter().any(|r| r.tool == ToolName::SendMessage), "{:?}", rows.len());
        for row in ends {
            let member = row.member.trim_end_matches(" (at its end)");
            let (a, b) = (row.first[member].as_str().unwrap(), row.changed[member].as_str().unwrap());
            let max = row.tool.input_schema()["properties"][member]["maxLength"].as_u64().unwrap() as usize;
            let grown = a.chars().count() + a.matches("CANARY").count() * CANARY_GROWTH;
            assert!(grown <= max && a.chars().count() > 100, "{member}: {grown} of {max}");
            assert_eq!(a.chars().count(), b.chars().count());
            assert_eq!(
                a.chars().rev().skip(1).collect::<String>(),
                b.chars().rev().skip(1).collect::<String>()
            );
        }
    }

    #[test]
    fn refused_transitions_are_every_backward_same_and_terminal_move() {
        let rows = refused_transitions();
        let has = |f: &str, t: &str| rows.iter().any(|(a, b)| *a == f && b == t);
        assert!(has("accepted", "accepted") && has("ready", "accepted") && has("completed", "ready"));
        assert!(has("cancelled", "accepted") && has("rejected", "completed"));
        assert!(
            !has("received", "accepted") && !has("accepted", "preparing") && !has("received", "completed")
        );
        // 7 states × 4 targets, less the 10 forward moves out of the 4 non-final lifecycle states.
        assert_eq!(rows.len(), 7 * 4 - 10);
    }

    #[test]
    fn access_rows_follow_the_personas_tables() {
        let d = dataset();
        let rows = access_rows(&d);
        let row = |p: &str, t: ToolName, r: &str| {
            rows.iter().find(|x| x.persona == p && x.tool == t && x.restaurant == r).map(|x| x.fails.clone())
        };
        let (central, small, rival) =
            (&d.landmarks.busy_restaurant, &d.landmarks.small_restaurant, &d.landmarks.foreign_restaurant);
        assert_eq!(row("owner", ToolName::CreateRestaurant, central), Some(vec![]));
        assert_eq!(row("manager", ToolName::CreateRestaurant, central), Some(vec![Check::Role]));
        assert_eq!(row("viewer", ToolName::SendMessage, central), Some(vec![Check::Role]));
        assert_eq!(row("staff", ToolName::SendMessage, central), Some(vec![]));
        assert_eq!(row("staff", ToolName::GetOrder, small), Some(vec![Check::Membership]));
        assert_eq!(
            row("staff", ToolName::ListRestaurants, central),
            None,
            "limited membership on an organization"
        );
        assert_eq!(row("outsider", ToolName::GetOrder, central), Some(vec![Check::Membership]));
        assert_eq!(row("outsider", ToolName::UpdateOrderStatus, rival), Some(vec![]));
        assert_eq!(row("revoked", ToolName::ListOrders, central), Some(vec![Check::Membership]));
        assert_eq!(row("noscope", ToolName::GetRestaurant, central), Some(vec![Check::Scope]));
        assert_eq!(
            row("noscope", ToolName::GetRestaurant, rival),
            Some(vec![Check::Scope, Check::Membership])
        );
        assert!(rows.iter().all(|r| r.persona != "other_audience"));
        // Every tool with a role is in the matrix, for every persona with a token of this server.
        let targeted =
            |t: &&ToolName| has_argument(**t, "restaurant_id") || has_argument(**t, "organization_id");
        for &tool in ToolName::ALL.iter().filter(|t| t.min_role().is_some()).filter(targeted) {
            assert!(rows.iter().any(|r| r.tool == tool), "{}", tool.as_str());
        }
    }
}
