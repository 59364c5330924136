//! Stateful sequences, each a proptest property whose case is a whole sequence (shrinking
//! replays it): a walk through a list's pages then one tampered cursor (PAG-5); a keyed write,
//! its replay and the key reused with other arguments (IDEM-2, IDEM-3); an order moved with a
//! wrong then the right `expected_status`, read back after each (PRE-2). Writes run only when
//! the server's state is reset afterwards.

use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;
use proptest::test_runner::TestRng;
use serde_json::{Value, json};

use super::cases::Replay;
pub use super::cases::{BindingCase, CursorCase, PreCase, UnknownCase};
use super::engine::Engine;
use super::observed::Why;
use super::observed::{Call, Observed};
use super::oracle::{self, Fault, answered, error_code, succeeded};
use super::strategy::{self, Case, Pick};
use crate::client::Exchange;

/// Pages read at most in one walk: the busy restaurant's orders in pages of 8 or more.
const MAX_PAGES: usize = 20;
/// Shrinking steps of a sequence at most: each replays the whole sequence.
const SHRINK_ITERS: u32 = 12;
/// The statuses no tool may reach (ABS-2).
const ABSENT: [&str; 2] = ["cancelled", "rejected"];
/// Characters a cursor byte is replaced with (URL-safe base64 and the dot many servers use).
const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";

/// The calls of one sequence so far, so a finding shows the steps that led to it.
pub(super) struct Trail<'e, 'a> {
    pub engine: &'e Engine<'a>,
    pub steps: Vec<Call>,
    /// Who `call` and `observed` call as: the fuzzer's persona unless the sequence names another.
    persona: String,
    /// The sequence's side of the differential oracle (`crate::oracle`), as a scenario's.
    shadow: crate::oracle::Shadow,
    /// Differences from the reference found on the sequence's calls, until a check takes them.
    differences: std::cell::RefCell<Vec<Observed>>,
}

impl<'e, 'a> Trail<'e, 'a> {
    pub fn new(engine: &'e Engine<'a>) -> Self {
        Trail::as_persona(engine, &engine.caller.persona)
    }

    /// A trail whose calls are `persona`'s (the same sequence under every persona).
    pub fn as_persona(engine: &'e Engine<'a>, persona: &str) -> Self {
        Trail {
            engine,
            steps: Vec::new(),
            persona: persona.to_owned(),
            shadow: crate::oracle::Shadow::default(),
            differences: std::cell::RefCell::new(Vec::new()),
        }
    }

    pub fn call(&mut self, tool: &str, args: &Value) -> Option<Exchange> {
        let persona = self.persona.clone();
        self.call_as(&persona, tool, args)
    }

    /// A call as `persona` (its own session).
    pub fn call_as(&mut self, persona: &str, tool: &str, args: &Value) -> Option<Exchange> {
        let ex = self.engine.caller.call_as(persona, tool, args);
        self.steps.push(Call {
            persona: persona.to_owned(),
            tool: tool.to_owned(),
            args: args.clone(),
            ex: ex.clone(),
        });
        if let Some(ex) = &ex {
            self.compare_with_reference(persona, tool, args, ex);
        }
        ex
    }

    /// The differential oracle on a call of the sequence (the same comparison as a scenario's,
    /// `crate::oracle`): a difference is kept until the next check, with the calls before it.
    fn compare_with_reference(&mut self, persona: &str, tool: &str, args: &Value, ex: &Exchange) {
        let caller = &self.engine.caller;
        let ctx = caller.ctx;
        if !ctx.oracle.wants(tool) {
            return;
        }
        if !self.shadow.needs_answer(tool) {
            self.shadow.observe(persona, tool, args, ex, |id| ctx.id_map.to_dataset(id));
            return;
        }
        let dataset_args = ctx.id_map.inbound(args);
        let answer = crate::oracle::Answer::of(ex, |v| ctx.id_map.inbound(v));
        let rid = ex.request_id();
        let notes = caller.runtime.block_on(ctx.oracle.after(
            &mut self.shadow,
            persona,
            tool,
            &dataset_args,
            &answer,
            rid,
        ));
        for note in notes {
            if let Some(detail) = note.difference {
                let found = self.observed_as(persona, note.clause, detail, tool, args, ex);
                self.differences.borrow_mut().push(found);
            }
        }
    }

    /// The differences from the reference found so far, taken.
    pub fn differences(&self) -> Vec<Observed> {
        std::mem::take(&mut *self.differences.borrow_mut())
    }

    /// A failure of the call of `tool` with `args`, after the steps before it.
    pub fn observed(
        &self,
        clause: &'static str,
        detail: String,
        tool: &str,
        args: &Value,
        ex: &Exchange,
    ) -> Observed {
        let persona = self.persona.clone();
        self.observed_as(&persona, clause, detail, tool, args, ex)
    }

    /// A failure of `persona`'s call of `tool` with `args`, after the steps before it.
    pub fn observed_as(
        &self,
        persona: &str,
        clause: &'static str,
        detail: String,
        tool: &str,
        args: &Value,
        ex: &Exchange,
    ) -> Observed {
        let at = self
            .steps
            .iter()
            .rposition(|c| c.persona == persona && c.tool == tool && &c.args == args)
            .unwrap_or(self.steps.len());
        Observed {
            before: self.steps[..at].to_vec(),
            ..Observed::new(Fault::new(clause, detail), persona, tool, args, ex)
        }
    }

    /// Every rule of a single call (`oracle::judge`, the arguments valid), on a call of a
    /// sequence: a sequence also reaches answers the argument fuzz does not (a real cursor, a
    /// replay, a mismatch).
    pub fn checked(&self, tool: &str, args: &Value, ex: &Exchange) -> Option<Vec<Observed>> {
        let engine = self.engine;
        let faults = match engine.tool(tool) {
            Some(t) => {
                let case = Case { args: args.clone(), target: None };
                let token = engine.caller.token_of(&self.persona);
                let mut faults = oracle::judge(engine.caller.ctx, t, &case, ex, token);
                faults.extend(oracle::access(&engine.resolver.pools, tool, args, ex));
                faults
            }
            None => answered(ex),
        };
        let mut found: Vec<Observed> =
            faults.into_iter().map(|f| self.observed(f.clause, f.detail, tool, args, ex)).collect();
        found.extend(self.differences());
        (!found.is_empty()).then_some(found)
    }
}

/// PAG-5: every page of a list, then one of its cursors with one character changed.
pub fn cursor(engine: &Engine<'_>, cases: u32, rng: TestRng, fixed: Option<CursorCase>) -> bool {
    let busy = engine.resolver.pools.first(super::ids::IdKind::Restaurant);
    // Lists with over 20 items in the busy restaurant (proptest shrinks towards the first);
    // the others only when neither is published.
    let lists: Vec<(String, Value)> = ["list_orders", "list_conversations"]
        .into_iter()
        .filter(|name| engine.tool(name).is_some())
        .chain(["list_restaurants", "list_instructions", "list_organizations"])
        .take(2)
        // And the messages of the long conversation, paged the same way (PAG-3, PAG-8).
        .chain(["get_conversation"])
        .filter_map(|name| {
            let tool = engine.tool(name)?;
            tool.has_property("cursor").then_some(())?;
            let mut args = json!({});
            if tool.has_property("restaurant_id") {
                args["restaurant_id"] = json!(busy.clone()?);
            }
            if tool.has_property("conversation_id") {
                let ctx = engine.caller.ctx;
                args["conversation_id"] =
                    json!(ctx.id_map.to_server(&ctx.dataset.landmarks.long_conversation));
            }
            Some((name.to_owned(), args))
        })
        .collect();
    if lists.is_empty() {
        return false;
    }
    // Who may walk each list (the same walk under every persona; shrinking goes to the owner).
    let walkers: Vec<Vec<String>> =
        lists.iter().map(|(tool, args)| allowed_personas(engine, tool, args.get("restaurant_id"))).collect();
    let owner = engine.caller.persona.clone();
    // Pages of 4 to 20 items, so a list of over 20 has several; shrinking goes to 20, fewer
    // pages to walk again.
    // Half the walks without `limit`: pages of the default size, 20 (PAG-1).
    let indexed: Vec<(usize, (String, Value))> = lists.into_iter().enumerate().collect();
    let strategy =
        (select(indexed), any::<bool>(), 0u64..17, Pick::any(), Pick::any(), Pick::any(), Pick::any())
            .prop_map(move |((i, (tool, mut args)), default, n, page, position, replacement, who)| {
                if !default {
                    let size = if tool == "get_conversation" { "message_limit" } else { "limit" };
                    args[size] = json!(20 - n);
                }
                let persona = Some(walkers[i][who.index(walkers[i].len())].clone()).filter(|p| *p != owner);
                CursorCase { tool, args, page, position, replacement, persona }
            })
            .boxed();
    let strategy = fixed.map_or(strategy, |case| Just(case).boxed());
    let replay = |case: &CursorCase| Replay::Cursor(case.clone());
    engine.run_property(strategy, cases, SHRINK_ITERS, rng, &replay, &|case| {
        let mut trail = match &case.persona {
            Some(persona) => Trail::as_persona(engine, persona),
            None => Trail::new(engine),
        };
        let mut cursors = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut walked = std::collections::HashSet::new();
        // Every item in the order the walk gave them.
        let mut sequence: Vec<String> = Vec::new();
        let mut first_page = 0;
        let mut ended: Option<crate::client::Exchange> = None;
        let mut args = case.args.clone();
        for page in 0..MAX_PAGES {
            let Some(ex) = trail.call(&case.tool, &args) else { return Vec::new() };
            if let Some(faults) = trail.checked(&case.tool, &args, &ex) {
                return faults;
            }
            let items = ex
                .structured()
                .and_then(|s| s.get("data"))
                .and_then(Value::as_object)
                .and_then(|d| d.values().find_map(Value::as_array))
                .cloned()
                .unwrap_or_default();
            if page > 0 && items.is_empty() {
                let detail = format!("{}: the previous page's next_cursor led to an empty page", case.tool);
                return vec![trail.observed("PAG-3", detail, &case.tool, &args, &ex)];
            }
            for item in &items {
                let id = item.get("id").map_or_else(|| item.to_string(), Value::to_string);
                sequence.push(id.clone());
                if !seen.insert(id.clone()) {
                    let detail = format!("{}: item {id} came on two pages of one walk", case.tool);
                    return vec![trail.observed("PAG-4", detail, &case.tool, &args, &ex)];
                }
            }
            if page == 0 {
                first_page = items.len();
            }
            walked.extend(items.iter().filter_map(|i| i.get("id")?.as_str().map(str::to_owned)));
            let next = ex.structured().and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str);
            let Some(next) = next.filter(|c| !c.is_empty()) else {
                ended = Some(ex);
                break;
            };
            cursors.push(next.to_owned());
            args["cursor"] = json!(next);
        }
        // `the walk yields every order of … exactly once`: a whole walk of a restaurant's orders,
        // no filter, holds every order the dataset gives it (the fuzzer creates none).
        // The same for the messages of a conversation (PAG-8's pages): every message the dataset
        // gives it (the fuzzer's own messages come on top).
        let unfiltered = case.args.as_object().is_some_and(|a| {
            a.keys().all(|k| ["restaurant_id", "limit", "conversation_id", "message_limit"].contains(&k.as_str()))
        });
        let ctx = engine.caller.ctx;
        let expected: Option<(Vec<String>, &str)> = match case.tool.as_str() {
            "list_orders" => case.args.get("restaurant_id").and_then(Value::as_str).map(|restaurant| {
                let restaurant = ctx.id_map.to_dataset(restaurant);
                let orders = ctx.dataset.orders_of(&restaurant).map(|o| ctx.id_map.to_server(&o.id));
                (orders.collect(), "orders")
            }),
            "get_conversation" => case.args.get("conversation_id").and_then(Value::as_str).map(|c| {
                let c = ctx.id_map.to_dataset(c);
                let messages = ctx.dataset.messages.iter().filter(|m| m.conversation_id == c);
                (messages.map(|m| ctx.id_map.to_server(&m.id)).collect(), "messages")
            }),
            _ => None,
        };
        if let (Some(last), true, Some((expected, what))) = (&ended, unfiltered, expected) {
            let missed = crate::rules::missed(&walked, &expected);
            if !missed.is_empty() {
                let clause = if what == "messages" { "PAG-8" } else { "PAG-4" };
                let detail = format!(
                    "{}: a walk of every page missed {} of the {} {what} the dataset has ({})",
                    case.tool,
                    missed.len(),
                    expected.len(),
                    missed.iter().take(3).copied().collect::<Vec<_>>().join(", ")
                );
                return vec![trail.observed(clause, detail, &case.tool, &args, last)];
            }
        }
        if cursors.is_empty() {
            return Vec::new();
        }
        // `A cursor continues with another limit when the filters are the same` (PAG-6): the
        // first page's cursor with the page size changed by two, within the schema.
        if let Some(tool) = engine.tool(&case.tool) {
            let limit = case.args.get("limit").and_then(Value::as_i64).unwrap_or(chataigne_contract::DEFAULT_LIMIT as i64);
            let mut other = case.args.clone();
            other["cursor"] = json!(cursors[0]);
            other["limit"] = json!(if limit > 2 { limit - 2 } else { limit + 2 });
            if tool.accepts(&other) {
                trail.steps.truncate(1);
                let Some(ex) = trail.call(&case.tool, &other) else { return Vec::new() };
                if error_code(&ex) == Some("MCP_CURSOR_INVALID") {
                    let detail = format!(
                        "{}: a cursor sent with another limit and the same filters was refused with MCP_CURSOR_INVALID, not continued",
                        case.tool
                    );
                    return vec![trail.observed("PAG-6", detail, &case.tool, &other, &ex)];
                }
                if let Some(faults) = trail.checked(&case.tool, &other, &ex) {
                    return faults;
                }
                // PAG-4: it continues where the first page ended, with the walk's next items (a
                // cursor holding a page number, page × limit, skips or repeats some).
                // (Orders only: no tool creates one, so nothing moves the walk's order meanwhile.)
                let first = first_page;
                let items: Vec<String> = ex
                    .structured()
                    .and_then(|s| s.get("data"))
                    .and_then(Value::as_object)
                    .and_then(|d| d.values().find_map(Value::as_array))
                    .into_iter()
                    .flatten()
                    .map(|item| item.get("id").map_or_else(|| item.to_string(), Value::to_string))
                    .collect();
                let want: Vec<&String> = sequence.iter().skip(first).take(items.len()).collect();
                let orders = case.tool == "list_orders";
                if orders && succeeded(&ex) && !items.is_empty() && items.iter().collect::<Vec<_>>() != want {
                    let detail = format!(
                        "{}: the first page's cursor sent with limit {} continued with [{}], not the walk's next items [{}]",
                        case.tool,
                        other["limit"],
                        items.join(", "),
                        want.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                    );
                    return vec![trail.observed("PAG-4", detail, &case.tool, &other, &ex)];
                }
            }
        }
        let chosen = case.page.index(cursors.len());
        let original = &cursors[chosen];
        // The reproduction needs the pages up to the one that gave this cursor, no more.
        trail.steps.truncate(chosen + 1);
        let mut bytes = original.clone().into_bytes();
        let at = case.position.index(bytes.len());
        let mut pick = case.replacement.index(ALPHABET.len());
        if ALPHABET[pick] == bytes[at] {
            pick = (pick + 1) % ALPHABET.len();
        }
        bytes[at] = ALPHABET[pick];
        let tampered = String::from_utf8_lossy(&bytes).into_owned();
        // The drawn change, then the feature's other changes of the same cursor
        // (`rules::cursors::TAMPERINGS`), each after the pages up to that cursor's.
        let mut changes = vec![(tampered, format!("a cursor with character {at} changed"))];
        for how in crate::rules::cursors::TAMPERINGS {
            let changed = crate::rules::cursors::tamper(original, how);
            if changed != *original {
                changes.push((changed, format!("a cursor {how}")));
            }
        }
        for (changed, what) in changes {
            trail.steps.truncate(chosen + 1);
            let mut args = case.args.clone();
            args["cursor"] = json!(changed);
            let Some(ex) = trail.call(&case.tool, &args) else { return Vec::new() };
            // PAG-5 first: it is what this call is for; then every rule of a single call.
            let found = match error_code(&ex) {
                Some("MCP_CURSOR_INVALID") => trail.checked(&case.tool, &args, &ex).unwrap_or_default(),
                _ if answered(&ex).is_empty() => vec![trail.observed(
                    "PAG-5",
                    format!(
                        "{}: {what} was not refused with MCP_CURSOR_INVALID ({})",
                        case.tool,
                        ex.summary()
                    ),
                    &case.tool,
                    &args,
                    &ex,
                )],
                _ => trail.checked(&case.tool, &args, &ex).unwrap_or_default(),
            };
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    })
}

/// Who may call `tool` on `restaurant`: the fuzzer's persona first, then every persona whose row
/// of the access tables allows it (`matrices::access_rows`), so a sequence runs under every
/// persona and shrinks towards the first.
pub(super) fn allowed_personas(engine: &Engine<'_>, tool: &str, restaurant: Option<&Value>) -> Vec<String> {
    let mut personas = vec![engine.caller.persona.clone()];
    for row in engine.access.iter().filter(|r| {
        r.group == super::access::Group::Allowed
            && r.tool == tool
            && r.arguments.get("restaurant_id") == restaurant
    }) {
        if !personas.contains(&row.persona) {
            personas.push(row.persona.clone());
        }
    }
    personas
}

/// IDEM-2 and IDEM-3: a keyed write, the same call again, then the key with other arguments.
pub fn idempotency(
    engine: &Engine<'_>,
    cases: u32,
    rng: TestRng,
    fixed: Option<(String, Case, Option<String>)>,
) -> bool {
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
    // The writer: the owner or any persona the tables let make that write there (the same
    // sequence under every persona; shrinking goes to the owner).
    // Keyed by tool and the restaurant's JSON text (a `Value` is not `Ord`). Only in the fuzzer's
    // own restaurants: its oracles judge access from its persona's side (a tenant foreign to it
    // may be another persona's own), and writes without a restaurant stay its persona's.
    let mut writers: std::collections::BTreeMap<(String, String), Vec<String>> = Default::default();
    let own =
        |restaurant: &Value| restaurant.as_str().is_some_and(|r| !engine.resolver.pools.foreign.contains(r));
    for t in &keyed {
        for row in engine.access.iter().filter(|r| r.tool == t.name) {
            let Some(restaurant) = row.arguments.get("restaurant_id").filter(|r| own(r)) else { continue };
            let restaurant = Some(restaurant);
            writers
                .entry((t.name.clone(), restaurant.map(Value::to_string).unwrap_or_default()))
                .or_insert_with(|| allowed_personas(engine, &t.name, restaurant));
        }
    }
    let owner = engine.caller.persona.clone();
    let strategy = (Union::new_weighted(arms), Pick::any())
        .prop_map(move |((tool, case), who)| {
            let key =
                (tool.clone(), case.args.get("restaurant_id").map(Value::to_string).unwrap_or_default());
            let persona = writers.get(&key).map(|p| p[who.index(p.len())].clone()).filter(|p| *p != owner);
            (tool, case, persona)
        })
        .boxed();
    let strategy = fixed.map_or(strategy, |case| Just(case).boxed());
    let replay = |(tool, case, persona): &(String, Case, Option<String>)| Replay::Idempotency {
        tool: tool.clone(),
        case: case.clone(),
        persona: persona.clone(),
    };
    engine.run_property(strategy, cases, SHRINK_ITERS, rng, &replay, &|(tool, case, persona)| {
        let mut trail = match persona {
            Some(persona) => Trail::as_persona(engine, persona),
            None => Trail::new(engine),
        };
        let args = &case.args;
        let Some(first) = trail.call(tool, args) else { return Vec::new() };
        if let Some(faults) = trail.checked(tool, args, &first) {
            return faults;
        }
        let what = format!("idempotency of {tool}");
        if !succeeded(&first) {
            // A refused first call stores nothing: nothing to replay. Arguments of another tenant
            // are refused by rule (the draw's miss); any other refusal blocks the property,
            // unless another of its cases gets past its first call.
            if !oracle::names_foreign(&engine.resolver.pools, args) {
                let reason = format!("the first keyed call was not served ({})", first.summary());
                engine.caller.unjudged.block_unless_judged(Why::FirstCallFailed, &what, reason);
            }
            return Vec::new();
        }
        engine.caller.unjudged.judged(&what);
        // Another write of the tool under another key first: the replay must still be this
        // call's answer, not the tool's latest.
        if let Some(sibling) = sibling_args(args) {
            let Some(ex) = trail.call(tool, &sibling) else { return Vec::new() };
            if let Some(faults) = trail.checked(tool, &sibling, &ex) {
                return faults;
            }
        }
        let Some(again) = trail.call(tool, args) else { return Vec::new() };
        if let Some(faults) = trail.checked(tool, args, &again) {
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
            return vec![trail.observed("IDEM-2", format!("{tool}: the same key and arguments again {why}"), tool, args, &again)];
        }
        if again.request_id().is_some() && again.request_id() == first.request_id() {
            let detail = format!("{tool}: the replay carries the first call's request_id (each call gets its own)");
            return vec![trail.observed("ENV-2", detail, tool, args, &again)];
        }
        // The created records read back where they are listed: the differential oracle holds
        // the read to what the writes made (a record missing from a whole list, a stale one).
        if let Some((read, read_args)) = read_back(engine, tool, args) {
            let Some(ex) = trail.call(read, &read_args) else { return Vec::new() };
            if let Some(faults) = trail.checked(read, &read_args, &ex) {
                return faults;
            }
        }
        // Other arguments: one text member changed, the key kept.
        let Some((member, other)) = text_changed(args) else { return Vec::new() };
        let Some(third) = trail.call(tool, &other) else { return Vec::new() };
        if let Some(faults) = trail.checked(tool, &other, &third) {
            return faults;
        }
        if error_code(&third) == Some("MCP_IDEMPOTENCY_MISMATCH") {
            return Vec::new();
        }
        vec![trail.observed(
            "IDEM-3",
            format!("{tool}: the key reused with another `{member}` was not refused with MCP_IDEMPOTENCY_MISMATCH ({})", third.summary()),
            tool,
            &other,
            &third,
        )]
    })
}

/// `args` with its text member (`text` or `name`) changed in its first character, its length
/// kept (a value drawn on its maximum length must stay within it): the member and the arguments.
fn text_changed(args: &Value) -> Option<(&'static str, Value)> {
    let member = ["text", "name"].into_iter().find(|m| args.get(*m).is_some_and(Value::is_string))?;
    let mut other = args.clone();
    other[member] = json!(first_changed(args[member].as_str().unwrap_or_default()));
    Some((member, other))
}

fn first_changed(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => format!("{}{}", if first == 'x' { 'y' } else { 'x' }, chars.as_str()),
        None => "(other)".to_owned(),
    }
}

/// Another write of the same tool: its text and its key each changed in their first character.
fn sibling_args(args: &Value) -> Option<Value> {
    let (_, mut other) = text_changed(args)?;
    let key = other.get("idempotency_key")?.as_str()?.to_owned();
    other["idempotency_key"] = json!(first_changed(&key));
    Some(other)
}

/// The read that lists what `tool` created (`oracle::READ_BACK`), with the write's scope IDs and
/// its page size at the contract's maximum, when the server publishes it.
pub(super) fn read_back<'t>(engine: &'t Engine<'_>, tool: &str, args: &Value) -> Option<(&'t str, Value)> {
    let read = crate::oracle::READ_BACK.iter().find(|(w, _)| *w == tool).map(|(_, r)| *r)?;
    let t = engine.tool(read)?;
    let props = t.schema.get("properties")?.as_object()?;
    let required = |name: &str| {
        t.schema.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|v| v == name))
    };
    let mut out = serde_json::Map::new();
    for name in props.keys() {
        match (name.as_str(), args.get(name)) {
            (n, Some(id)) if n.ends_with("_id") => drop(out.insert(name.clone(), id.clone())),
            (n, None) if n.ends_with("_id") && required(n) => return None,
            ("limit", _) => drop(out.insert(name.clone(), json!(chataigne_contract::MAX_LIMIT))),
            ("message_limit", _) => {
                drop(out.insert(name.clone(), json!(chataigne_contract::MAX_MESSAGE_LIMIT)))
            }
            _ => {}
        }
    }
    Some((t.name.as_str(), Value::Object(out)))
}

/// ABS-2, PRE-3, PRE-2: an order cancelled or rejected is refused (ABS-2); an order in a final
/// status (completed, cancelled, rejected) moved back into the lifecycle is refused; an order
/// moved with a wrong `expected_status` is refused and
/// unchanged; with the right one it moves, and get_order shows it. (A forward skip is not
/// judged: the seed allows it, the `lifecycle-skip-forward` variant.)
pub fn precondition(engine: &Engine<'_>, cases: u32, rng: TestRng, fixed: Option<PreCase>) -> bool {
    if engine.tool("update_order_status").is_none() || engine.tool("get_order").is_none() {
        return false;
    }
    let orders = engine.resolver.pools.received.clone();
    if orders.is_empty() {
        return false;
    }
    let terminal = engine.resolver.pools.terminal.clone();
    let strategy = (Pick::any(), Pick::any(), Pick::any(), Pick::any(), Pick::any())
        .prop_map(|(order, wrong, terminal, target, who)| PreCase { order, wrong, terminal, target, who })
        .boxed();
    let strategy = fixed.map_or(strategy, |case| Just(case).boxed());
    let replay = |case: &PreCase| Replay::Precondition(case.clone());
    let lifecycle = chataigne_contract::tools::ORDER_LIFECYCLE;
    engine.run_property(strategy, cases, SHRINK_ITERS, rng, &replay, &|case| {
        let (restaurant, order) = &orders[case.order.index(orders.len())];
        // The same moves under every persona the tables let move the order.
        let movers = allowed_personas(engine, "update_order_status", Some(&json!(restaurant)));
        let mut trail = Trail::as_persona(engine, &movers[case.who.index(movers.len())]);
        let read = json!({ "restaurant_id": restaurant, "order_id": order });
        let Some(before) = trail.call("get_order", &read) else { return Vec::new() };
        if let Some(faults) = trail.checked("get_order", &read, &before) {
            return faults;
        }
        let Some(current) = status_of(&before) else { return Vec::new() };
        let Some(step) = lifecycle.iter().position(|s| *s == current).filter(|i| i + 1 < lifecycle.len()) else {
            // A final status: nothing to move.
            return Vec::new();
        };
        // ABS-2: cancelling or rejecting is no tool's effect, even with the right expected_status;
        // both are tried (a server may let one through and not the other).
        let first = case.wrong.index(2);
        for absent in [ABSENT[first], ABSENT[1 - first]] {
            let write =
                json!({ "restaurant_id": restaurant, "order_id": order, "status": absent, "expected_status": current });
            let Some(ex) = trail.call("update_order_status", &write) else { return Vec::new() };
            if succeeded(&ex) {
                let detail = format!("update_order_status moved a {current} order to {absent}");
                return vec![trail.observed("ABS-2", detail, "update_order_status", &write, &ex)];
            }
            if let Some(faults) = trail.checked("update_order_status", &write, &ex) {
                return faults;
            }
        }
        // PRE-3: an order of each final status (completed, cancelled, rejected) moved back, with
        // the status the dataset gives it as expected_status (a server whose order is elsewhere
        // refuses the move: no finding).
        let mut tried: Vec<&str> = Vec::new();
        let from = if terminal.is_empty() { 0 } else { case.terminal.index(terminal.len()) };
        for k in 0..terminal.len() {
            let (restaurant, order, current) = &terminal[(from + k) % terminal.len()];
            if tried.contains(&current.as_str()) {
                continue;
            }
            tried.push(current);
            // Each move back is judged alone: its reproduction needs none of the calls before.
            trail.steps.clear();
            // Another status than its own: staying put is not a move back.
            let targets: Vec<&str> = lifecycle[1..].iter().copied().filter(|s| s != current).collect();
            let back = targets[case.target.index(targets.len())];
            let write =
                json!({ "restaurant_id": restaurant, "order_id": order, "status": back, "expected_status": current });
            let Some(ex) = trail.call("update_order_status", &write) else { return Vec::new() };
            if let Some(faults) = trail.checked("update_order_status", &write, &ex) {
                return faults;
            }
            if succeeded(&ex) {
                let detail = format!("update_order_status moved a {current} order back to {back}");
                return vec![trail.observed("PRE-3", detail, "update_order_status", &write, &ex)];
            }
        }
        trail.steps.clear();
        let next = lifecycle[step + 1];
        let others: Vec<&str> =
            chataigne_contract::tools::ORDER_STATUSES.iter().copied().filter(|s| *s != current).collect();
        let wrong = others[case.wrong.index(others.len())];
        let mut write = read.clone();
        write["status"] = json!(next);
        write["expected_status"] = json!(wrong);
        let Some(refused) = trail.call("update_order_status", &write) else { return Vec::new() };
        if let Some(faults) = trail.checked("update_order_status", &write, &refused) {
            return faults;
        }
        let precondition = matches!(
            error_code(&refused),
            Some("MCP_EXPECTED_STATE_MISMATCH" | "ORDER_STATUS_PRECONDITION_FAILED")
        );
        if !precondition {
            let detail = format!(
                "update_order_status with expected_status {wrong} on a {current} order was not refused with MCP_EXPECTED_STATE_MISMATCH or ORDER_STATUS_PRECONDITION_FAILED ({})",
                refused.summary()
            );
            return vec![trail.observed("PRE-2", detail, "update_order_status", &write, &refused)];
        }
        let Some(after) = trail.call("get_order", &read) else { return Vec::new() };
        if status_of(&after).as_deref() != Some(current.as_str()) {
            let detail = format!("a refused update_order_status changed the order: {current} before, {:?} after", status_of(&after));
            return vec![trail.observed("PRE-2", detail, "update_order_status", &write, &refused)];
        }
        write["expected_status"] = json!(current);
        let Some(moved) = trail.call("update_order_status", &write) else { return Vec::new() };
        if let Some(faults) = trail.checked("update_order_status", &write, &moved) {
            return faults;
        }
        if !succeeded(&moved) {
            let detail = format!(
                "update_order_status {current} → {next} with the right expected_status was refused ({})",
                moved.summary()
            );
            return vec![trail.observed("PRE-2", detail, "update_order_status", &write, &moved)];
        }
        let Some(shown) = trail.call("get_order", &read) else { return Vec::new() };
        if status_of(&shown).as_deref() != Some(next) {
            let detail = format!("after update_order_status to {next}, get_order shows {:?}", status_of(&shown));
            return vec![trail.observed("PRE-2", detail, "get_order", &read, &shown)];
        }
        // Every read shows it (PRE-2): the list under the new status holds it too, on one of its
        // pages (a filter read from a stale index does not).
        let mut list = json!({ "restaurant_id": restaurant, "status": [next], "limit": 50 });
        for _ in 0..MAX_LIST_PAGES {
            let Some(page) = trail.call("list_orders", &list) else { return Vec::new() };
            if let Some(faults) = trail.checked("list_orders", &list, &page) {
                return faults;
            }
            let s = page.structured();
            let listed = s.and_then(|s| s.pointer("/data/orders")).and_then(Value::as_array).is_some_and(|items| {
                items.iter().any(|o| o.get("id").and_then(Value::as_str) == Some(order.as_str()))
            });
            if listed {
                break;
            }
            let Some(cursor) = s.and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str) else {
                let detail = format!("after update_order_status to {next}, list_orders under status {next} does not list the order");
                return vec![trail.observed("PRE-2", detail, "list_orders", &list, &page)];
            };
            list["cursor"] = json!(cursor);
        }
        // PRE-3: on along the lifecycle, each step with the right expected_status, as far as the
        // case says (to completed at most): every step the lifecycle allows is served.
        let last = step + 1 + case.target.index(lifecycle.len() - step - 1);
        let mut at = next;
        for &to in &lifecycle[step + 2..=last] {
            let write = json!({ "restaurant_id": restaurant, "order_id": order, "status": to, "expected_status": at });
            let Some(moved) = trail.call("update_order_status", &write) else { return Vec::new() };
            if let Some(faults) = trail.checked("update_order_status", &write, &moved) {
                return faults;
            }
            if !succeeded(&moved) {
                let detail = format!(
                    "update_order_status {at} → {to}, a step the lifecycle allows, with the right expected_status was refused ({})",
                    moved.summary()
                );
                return vec![trail.observed("PRE-3", detail, "update_order_status", &write, &moved)];
            }
            at = to;
        }
        // What the reference answered differently (a field the write should not have changed).
        trail.differences()
    })
}

/// Pages of a list a sequence reads at most to find a record (the busy restaurant's 137 orders
/// fill 3 pages of 50).
const MAX_LIST_PAGES: usize = 8;

/// An order's status in an answer: under data.order, or as data itself (the `bare-order-data`
/// variant).
pub(super) fn status_of(ex: &Exchange) -> Option<String> {
    let data = ex.structured().and_then(|s| s.get("data"));
    let order = data.and_then(|d| d.get("order")).or(data);
    order.and_then(|o| o.get("status")).and_then(Value::as_str).map(str::to_owned)
}

/// PROTO-2: a tools/call of a tool the server does not publish is the JSON-RPC error -32602
/// (MCP's invalid params), answered with the request's id, like every answer.
pub fn unknown_tool(engine: &Engine<'_>, cases: u32, rng: TestRng, fixed: Option<UnknownCase>) -> bool {
    let names: Vec<String> = engine
        .caller
        .ctx
        .published
        .tools
        .iter()
        .filter_map(|t| t.get("name")?.as_str().map(str::to_owned))
        .collect();
    if names.is_empty() {
        return false;
    }
    let published = names.clone();
    let strategy = (select(names), Pick::any(), Pick::any())
        .prop_map(move |(name, at, with)| {
            let letters = b"abcdefghijklmnopqrstuvwxyz_";
            let mut bytes = name.into_bytes();
            let i = at.index(bytes.len());
            let mut pick = with.index(letters.len());
            // Never the name itself, nor another published one.
            loop {
                bytes[i] = letters[pick];
                let candidate = String::from_utf8_lossy(&bytes).into_owned();
                if !published.contains(&candidate) {
                    return UnknownCase { name: candidate };
                }
                pick = (pick + 1) % letters.len();
            }
        })
        .boxed();
    let strategy = fixed.map_or(strategy, |case| Just(case).boxed());
    let replay = |case: &UnknownCase| Replay::UnknownTool(case.clone());
    engine.run_property(strategy, cases, SHRINK_ITERS, rng, &replay, &|case| {
        let args = json!({});
        let Some(ex) = engine.caller.call(&case.name, &args) else { return Vec::new() };
        let persona = engine.caller.persona.clone();
        let observed = |f: Fault| Observed::new(f, &persona, &case.name, &args, &ex);
        let mut faults = answered(&ex);
        if faults.is_empty() {
            faults.extend(super::oracle::every_rule(engine.caller.ctx, &ex, engine.caller.token()));
            let code = ex.rpc_error().and_then(|e| e.get("code")).and_then(Value::as_i64);
            if code != Some(-32602) {
                faults.push(Fault::new(
                    "PROTO-2",
                    format!("a tools/call of a tool the server does not publish was answered {}, not the JSON-RPC error -32602", ex.summary()),
                ));
            }
        }
        faults.into_iter().map(observed).collect()
    })
}

/// The cursor-binding rows this server can be called with.
pub fn binding_cases(engine: &Engine<'_>) -> Vec<BindingCase> {
    let ctx = engine.caller.ctx;
    crate::matrices::cursor_rows(&ctx.dataset)
        .into_iter()
        .filter(|r| engine.tool(r.tool.as_str()).is_some())
        .map(|r| BindingCase {
            tool: r.tool.as_str().to_owned(),
            argument: r.argument,
            size: crate::matrices::page_size(r.tool).unwrap_or("limit").to_owned(),
            base: ctx.id_map.outbound(&r.base),
            changed: ctx.id_map.outbound(&r.changed),
        })
        .collect()
}

/// PAG-6: a first page's cursor sent with one argument it was issued for changed is refused
/// with MCP_CURSOR_INVALID (a change the server refuses anyway needs only a refusal), as the
/// step `every cursor is refused when one argument it was issued for changes` judges it. Rows
/// in turn, a few each round; each is already minimal (three calls).
pub fn cursor_binding(
    engine: &Engine<'_>,
    cases: u32,
    round: u64,
    rng: TestRng,
    fixed: Option<BindingCase>,
) -> bool {
    let rows = match fixed {
        Some(case) => vec![case],
        None => {
            let rows = binding_cases(engine);
            if rows.is_empty() {
                return false;
            }
            let start = round as usize * cases as usize;
            (start..start + cases as usize).map(|i| rows[i % rows.len()].clone()).collect()
        }
    };
    let replay = |case: &BindingCase| Replay::CursorBinding(case.clone());
    engine.run_rows(rows, rng, &replay, &|case| {
        let mut trail = Trail::new(engine);
        let sized = |args: &Value| {
            let mut a = args.clone();
            a[case.size.as_str()] = json!(1);
            a
        };
        let first = sized(&case.base);
        let Some(ex) = trail.call(&case.tool, &first) else { return Vec::new() };
        if let Some(faults) = trail.checked(&case.tool, &first, &ex) {
            return faults;
        }
        let cursor = ex.structured().and_then(|s| s.pointer("/meta/next_cursor")).and_then(Value::as_str);
        let Some(cursor) = cursor.filter(|c| !c.is_empty()).map(str::to_owned) else { return Vec::new() };
        let alone = sized(&case.changed);
        let Some(ex) = trail.call(&case.tool, &alone) else { return Vec::new() };
        if let Some(faults) = trail.checked(&case.tool, &alone, &ex) {
            return faults;
        }
        let valid_alone = succeeded(&ex);
        let mut reused = alone.clone();
        reused["cursor"] = json!(cursor);
        let Some(ex) = trail.call(&case.tool, &reused) else { return Vec::new() };
        let code = error_code(&ex);
        if code == Some("MCP_CURSOR_INVALID") || (!valid_alone && ex.is_error()) {
            return trail.checked(&case.tool, &reused, &ex).unwrap_or_default();
        }
        if !answered(&ex).is_empty() || code == Some("MCP_RATE_LIMITED") {
            return trail.checked(&case.tool, &reused, &ex).unwrap_or_default();
        }
        let detail = format!(
            "{}: a cursor reused with `{}` changed was not refused with MCP_CURSOR_INVALID ({})",
            case.tool,
            case.argument,
            ex.summary()
        );
        vec![trail.observed("PAG-6", detail, &case.tool, &reused, &ex)]
    })
}
