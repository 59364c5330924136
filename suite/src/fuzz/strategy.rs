//! proptest strategies drawn from a tool's input schema: valid arguments, and arguments with one
//! mutation. Values are drawn as [`Drawn`] trees and resolved to JSON afterwards, so that IDs
//! can follow the drawn restaurant and idempotency keys can follow the other arguments.

use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::{Index, select, subsequence};
use serde_json::{Value, json};

use super::ids::{IdKind, Pools};
use super::schema::{EXTRA_FIELD, Mutation, Target, members};

/// A drawn value before IDs and keys are resolved.
#[derive(Debug, Clone)]
pub enum Drawn {
    Json(Value),
    Id(IdKind, Index),
    /// An idempotency key: derived from the other arguments when resolved, so the same
    /// arguments carry the same key (a replay) and other arguments another (never a mismatch
    /// made by shrinking). `Some(n)`: padded with "é" to exactly `n` characters, its maximum
    /// (`crate::edges::length_edges`: a server counting UTF-8 bytes refuses it).
    Key(Option<usize>),
    Obj(Vec<(String, Drawn)>),
    Arr(Vec<Drawn>),
}

/// One generated call: the arguments, and the mutation they carry, if any.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Case {
    pub args: Value,
    pub target: Option<Target>,
}

/// A choice among `len` things, as proptest's `Index` (shrinking towards the first), but
/// written in a transcript so a replay makes the same choice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pick(pub u64);

impl Pick {
    pub fn index(self, len: usize) -> usize {
        assert!(len > 0, "a pick among nothing");
        ((u128::from(self.0) * len as u128) >> 64) as usize
    }

    pub fn any() -> BoxedStrategy<Pick> {
        any::<u64>().prop_map(Pick).boxed()
    }
}

/// Turns drawn trees into arguments.
#[derive(Debug, Clone)]
pub struct Resolver {
    pub pools: Arc<Pools>,
    /// Mixed into idempotency keys: another seed, other keys.
    pub salt: u64,
}

impl Resolver {
    pub fn resolve(&self, drawn: &Drawn) -> Value {
        self.resolve_in(drawn, None)
    }

    fn resolve_in(&self, drawn: &Drawn, restaurant: Option<&str>) -> Value {
        match drawn {
            Drawn::Json(v) => v.clone(),
            Drawn::Id(kind, pick) => self
                .pools
                .pick(*kind, restaurant, pick)
                .map(Value::String)
                .unwrap_or_else(|| json!("unknown_1")),
            Drawn::Key(_) => json!("fuzz-key-unresolved"),
            Drawn::Arr(items) => Value::Array(items.iter().map(|i| self.resolve_in(i, restaurant)).collect()),
            Drawn::Obj(members) => {
                // The restaurant first: the other IDs are picked among its records.
                let rid =
                    members.iter().find(|(k, _)| k == "restaurant_id").map(|(_, d)| self.resolve_in(d, None));
                let anchor = rid.as_ref().and_then(Value::as_str).or(restaurant);
                let mut map = serde_json::Map::new();
                let mut keys = Vec::new();
                for (k, d) in members {
                    if let Drawn::Key(len) = d {
                        keys.push((k.clone(), *len));
                        continue;
                    }
                    let v = if k == "restaurant_id" {
                        rid.clone().unwrap_or_default()
                    } else {
                        self.resolve_in(d, anchor)
                    };
                    map.insert(k.clone(), v);
                }
                let mut obj = Value::Object(map);
                for (k, len) in keys {
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    self.salt.hash(&mut h);
                    obj.to_string().hash(&mut h);
                    let mut key = format!("fuzz-{:016x}", h.finish());
                    let pad = len.map_or(0, |n| n.saturating_sub(key.chars().count()));
                    key.push_str(&crate::edges::Unit::TwoBytes.repeat(pad));
                    obj[k.as_str()] = json!(key);
                }
                obj
            }
        }
    }
}

fn first_type(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => {
            ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null")
        }
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    }
}

/// Valid arguments for an object schema: every required member, each optional one or not.
pub fn object(schema: &Value) -> BoxedStrategy<Drawn> {
    let parts: Vec<BoxedStrategy<Option<(String, Drawn)>>> = members(schema)
        .into_iter()
        // A made-up cursor is refused whatever the rest: the cursor sequence brings real ones.
        .filter(|(name, _, required)| *required || name != "cursor")
        .map(|(name, p, required)| {
            let n = name.clone();
            let v = value(&name, &p).prop_map(move |d| (n.clone(), d));
            if required { v.prop_map(Some).boxed() } else { proptest::option::of(v).boxed() }
        })
        .collect();
    parts.prop_map(|ms| Drawn::Obj(ms.into_iter().flatten().collect())).boxed()
}

/// A valid value of one member.
pub fn value(name: &str, schema: &Value) -> BoxedStrategy<Drawn> {
    if let Some(Value::Array(members)) = schema.get("enum")
        && !members.is_empty()
    {
        return select(members.clone()).prop_map(Drawn::Json).boxed();
    }
    let int = |k: &str| schema.get(k).and_then(Value::as_i64);
    let uint = |k: &str| schema.get(k).and_then(Value::as_u64);
    match first_type(schema) {
        "integer" | "number" => {
            let lo = int("minimum").unwrap_or(0);
            let hi = int("maximum").unwrap_or(lo.saturating_add(100)).max(lo);
            (lo..=hi).prop_map(|n| Drawn::Json(json!(n))).boxed()
        }
        "boolean" => any::<bool>().prop_map(|b| Drawn::Json(json!(b))).boxed(),
        "null" => Just(Drawn::Json(Value::Null)).boxed(),
        "object" => object(schema),
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            let lo = uint("minItems").unwrap_or(0) as usize;
            let hi = (uint("maxItems").unwrap_or(lo as u64 + 3) as usize).max(lo);
            let unique = schema.get("uniqueItems") == Some(&Value::Bool(true));
            if let Some(Value::Array(e)) = items.get("enum") {
                let mut vocab: Vec<Value> = Vec::new();
                for v in e {
                    if !vocab.contains(v) {
                        vocab.push(v.clone());
                    }
                }
                if unique && vocab.len() >= lo {
                    let hi = hi.min(vocab.len());
                    return subsequence(vocab, lo..=hi)
                        .prop_map(|vs| Drawn::Arr(vs.into_iter().map(Drawn::Json).collect()))
                        .boxed();
                }
            }
            let hi = hi.min(lo + 4);
            proptest::collection::vec(value(name, &items), lo..=hi)
                .prop_map(move |items| {
                    let mut items = items;
                    if unique {
                        // Drawn IDs and JSON compare by their text.
                        let mut seen = std::collections::HashSet::new();
                        items.retain(|i| seen.insert(format!("{i:?}")));
                    }
                    Drawn::Arr(items)
                })
                .boxed()
        }
        _ => string(name, schema),
    }
}

fn string(name: &str, schema: &Value) -> BoxedStrategy<Drawn> {
    if let Some(kind) = IdKind::of_field(name) {
        return any::<Index>().prop_map(move |i| Drawn::Id(kind, i)).boxed();
    }
    let max_len = schema.get("maxLength").and_then(Value::as_u64).map(|m| m as usize);
    if name == "idempotency_key" {
        // One key in four at its maximum in two-byte characters (the edges' row).
        return prop_oneof![3 => Just(Drawn::Key(None)), 1 => Just(Drawn::Key(max_len))].boxed();
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        // The contract's formats, with values near the dataset's month.
        if pattern == "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" {
            return (9u32..=12, 1u32..=28)
                .prop_map(|(m, d)| Drawn::Json(json!(format!("2026-{m:02}-{d:02}"))))
                .boxed();
        }
        if pattern.starts_with("^[0-9]{4}-[0-9]{2}-[0-9]{2}T") {
            return (1u32..=30, 0u32..24, 0u32..60)
                .prop_map(|(d, h, m)| Drawn::Json(json!(format!("2026-11-{d:02}T{h:02}:{m:02}:00Z"))))
                .boxed();
        }
        if pattern.contains("UTC|") {
            return select(vec!["UTC", "Europe/Paris", "America/New_York"])
                .prop_map(|z| Drawn::Json(json!(z)))
                .boxed();
        }
        let bare = pattern.trim_start_matches('^').trim_end_matches('$');
        if let Ok(s) = proptest::string::string_regex(bare) {
            return s.prop_map(|s| Drawn::Json(json!(s))).boxed();
        }
    }
    let lo = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    let hi = schema.get("maxLength").and_then(Value::as_u64).unwrap_or(lo + 24).min(lo + 24).max(lo);
    // The length edges within the bound, in two-byte characters (`crate::edges::length_edges`):
    // at the maximum and, for a minimum over 1, at it. Every count but UTF-8 bytes serves them.
    let two = |n: usize| Drawn::Json(json!(crate::edges::LengthEdge::within_two_bytes(n)));
    let mut edges: Vec<Drawn> = max_len.filter(|_| name != "cursor").map(two).into_iter().collect();
    if lo > 1 && name != "cursor" {
        edges.push(two(lo as usize));
    }
    // What names and messages hold (letters, digits, spaces, accents), and what breaks careless
    // code: quotes, a backslash, markup, a percent sign, an emoji, a zero-width space.
    const CLASS: &str = "[a-zA-Z0-9 éß'\"\\\\<>&%😀\u{200B}]";
    let drawn = match proptest::string::string_regex(&format!("{CLASS}{{{lo},{hi}}}")) {
        Ok(s) => s.prop_map(|s| Drawn::Json(json!(s))).boxed(),
        Err(_) => Just(Drawn::Json(json!("fuzz"))).boxed(),
    };
    if edges.is_empty() {
        return drawn;
    }
    prop_oneof![4 => drawn, 1 => select(edges)].boxed()
}

/// Valid arguments, with no mutation.
pub fn valid(schema: &Value, resolver: Resolver) -> BoxedStrategy<Case> {
    object(schema)
        .prop_map(move |d| {
            let mut args = resolver.resolve(&d);
            crate::rules::ranges::ordered(&mut args);
            Case { args, target: None }
        })
        .boxed()
}

/// Valid arguments but for `target`. `vocabulary` is every enum member the server published:
/// a value of another enum is the likeliest wrong one (`cancelled` for a lifecycle target).
pub fn mutated(
    schema: &Value,
    target: &Target,
    vocabulary: &[String],
    resolver: Resolver,
) -> BoxedStrategy<Case> {
    let field = target.field.clone();
    let prop = schema.pointer(&format!("/properties/{field}")).cloned().unwrap_or(json!({}));
    let replacement: Option<BoxedStrategy<Value>> = match &target.mutation {
        Mutation::MissingRequired => None,
        Mutation::WrongType => Some(wrong_type(first_type(&prop))),
        Mutation::BelowMinimum(m) => Some(past(*m, -1)),
        Mutation::AboveMaximum(m) => Some(past(*m, 1)),
        Mutation::TooShort(m) => {
            let m = *m;
            Some((0..m).prop_map(move |n| json!(filler((m - 1 - n) as usize))).boxed())
        }
        Mutation::TooLong(m) => {
            let m = *m;
            let prefix = id_prefix(&field);
            Some(
                (0u64..64)
                    .prop_map(move |n| {
                        json!(format!("{prefix}{}", filler((m + 1 + n) as usize - prefix.len())))
                    })
                    .boxed(),
            )
        }
        Mutation::TooFewItems(m) => {
            let items = prop.get("items").cloned().unwrap_or(json!({}));
            let r = resolver.clone();
            Some(
                proptest::collection::vec(value(&field, &items), 0..(*m as usize))
                    .prop_map(move |v| r.resolve(&Drawn::Arr(v)))
                    .boxed(),
            )
        }
        Mutation::TooManyItems(m) => {
            let items = prop.get("items").cloned().unwrap_or(json!({}));
            let want = *m as usize + 1;
            let vocab: Vec<Value> = items.get("enum").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut unique = Vec::new();
            for v in vocab {
                if !unique.contains(&v) {
                    unique.push(v);
                }
            }
            if unique.len() >= want {
                // Distinct items: the count alone breaks the bound.
                let len = unique.len();
                Some(subsequence(unique, want..=len).prop_map(Value::Array).boxed())
            } else {
                let r = resolver.clone();
                Some(
                    proptest::collection::vec(value(&field, &items), want..=want + 3)
                        .prop_map(move |v| r.resolve(&Drawn::Arr(v)))
                        .boxed(),
                )
            }
        }
        Mutation::DuplicateItems => {
            let items = prop.get("items").cloned().unwrap_or(json!({}));
            let r = resolver.clone();
            Some(
                proptest::collection::vec(value(&field, &items), 1..=3)
                    .prop_map(move |v| {
                        let mut v = v;
                        v.insert(0, v[0].clone());
                        r.resolve(&Drawn::Arr(v))
                    })
                    .boxed(),
            )
        }
        Mutation::OutsideEnum => {
            let members: Vec<Value> = prop
                .get("enum")
                .or_else(|| prop.pointer("/items/enum"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut outside: Vec<String> =
                vocabulary.iter().filter(|w| !members.contains(&json!(w))).cloned().collect();
            outside.extend(["UNKNOWN".to_owned(), String::new()]);
            let in_array = first_type(&prop) == "array";
            Some(select(outside).prop_map(move |w| if in_array { json!([w]) } else { json!(w) }).boxed())
        }
        Mutation::PatternBroken => Some(
            select(vec!["not matching", "2026/11/02", "x_1", "\u{1F600}"]).prop_map(|s| json!(s)).boxed(),
        ),
        Mutation::ExtraProperty => Some(select(vec![json!("x"), json!(1), json!(true)]).boxed()),
    };
    let target = target.clone();
    let base = object(schema);
    match replacement {
        None => base
            .prop_map(move |d| {
                let mut args = resolver.resolve(&d);
                crate::rules::ranges::ordered(&mut args);
                if let Some(m) = args.as_object_mut() {
                    m.remove(&target.field);
                }
                Case { args, target: Some(target.clone()) }
            })
            .boxed(),
        Some(r) => (base, r)
            .prop_map(move |(d, v)| {
                let mut args = resolver.resolve(&d);
                // One thing wrong: the range is right, unless the mutation is of its members.
                crate::rules::ranges::ordered(&mut args);
                if let Some(m) = args.as_object_mut() {
                    m.insert(target.field.clone(), v);
                }
                Case { args, target: Some(target.clone()) }
            })
            .boxed(),
    }
}

/// A number past `bound` in `direction` (1 above, -1 below): mostly near it, where servers
/// go wrong by a little (a bound of 500 for 50), sometimes far; shrinking goes to the bound ± 1.
fn past(bound: i64, direction: i64) -> BoxedStrategy<Value> {
    let near = bound.abs().max(10) * 2;
    let at = move |n: i64| json!(bound.saturating_add(direction.saturating_mul(n.saturating_add(1))));
    prop_oneof![9 => (0..near).prop_map(at), 1 => (0..1_000_000_000i64).prop_map(at)].boxed()
}

/// A value whose JSON type is not `declared`: the first ones are what clients get wrong (a
/// number as a string, a fraction for an integer).
fn wrong_type(declared: &str) -> BoxedStrategy<Value> {
    let all = [json!("7"), json!(1.5), json!(7), json!(true), Value::Null, json!([]), json!({})];
    let fits = |v: &Value| match declared {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    };
    select(all.into_iter().filter(|v| !fits(v)).collect::<Vec<_>>()).boxed()
}

/// The prefix an ID member's values carry (`rst_`), so a too-long ID is wrong by its length.
fn id_prefix(field: &str) -> String {
    match IdKind::of_field(field) {
        Some(IdKind::Organization) => "org_",
        Some(IdKind::Restaurant) => "rst_",
        Some(IdKind::Order) => "ord_",
        Some(IdKind::Conversation) => "cnv_",
        Some(IdKind::Transcript) => "trs_",
        None => "",
    }
    .to_owned()
}

/// `n` characters of text.
fn filler(n: usize) -> String {
    "abcdefghij".chars().cycle().take(n).collect()
}

/// Every string enum member of the tools' input schemas.
pub fn vocabulary(schemas: &[&Value]) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(e)) = m.get("enum") {
                    for w in e.iter().filter_map(Value::as_str) {
                        if !out.iter().any(|o| o == w) {
                            out.push(w.to_owned());
                        }
                    }
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for s in schemas {
        walk(s, &mut out);
    }
    out
}

/// The name an extra member gets (re-exported for the report).
pub const EXTRA: &str = EXTRA_FIELD;

#[cfg(test)]
mod tests {
    use chataigne_contract::ToolName;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use super::*;
    use crate::fuzz::schema::{Tool, targets};

    fn resolver() -> Resolver {
        let dataset = crate::context::load_dataset(None).unwrap();
        Resolver { pools: Arc::new(Pools::new(&dataset, &Default::default(), "owner")), salt: 7 }
    }

    #[test]
    fn valid_arguments_validate_against_the_contract() {
        let mut runner = TestRunner::deterministic();
        for tool in ToolName::ALL {
            let schema = tool.input_schema();
            let checked = Tool::new(&json!({ "name": tool.as_str(), "inputSchema": schema })).unwrap();
            let strategy = valid(&schema, resolver());
            for _ in 0..30 {
                let case = strategy.new_tree(&mut runner).unwrap().current();
                assert!(checked.accepts(&case.args), "{tool}: {}", case.args);
            }
        }
    }

    #[test]
    fn each_mutation_makes_the_arguments_invalid() {
        let mut runner = TestRunner::deterministic();
        for tool in ToolName::ALL {
            let schema = tool.input_schema();
            let checked = Tool::new(&json!({ "name": tool.as_str(), "inputSchema": schema })).unwrap();
            let vocab = vocabulary(&[&schema]);
            for target in targets(&schema) {
                let strategy = mutated(&schema, &target, &vocab, resolver());
                for _ in 0..10 {
                    let case = strategy.new_tree(&mut runner).unwrap().current();
                    assert!(!checked.accepts(&case.args), "{tool} {target:?}: {}", case.args);
                }
            }
        }
    }

    #[test]
    fn ids_follow_the_drawn_restaurant_and_keys_the_arguments() {
        let mut runner = TestRunner::deterministic();
        let strategy = valid(&ToolName::SendMessage.input_schema(), resolver());
        let dataset = crate::context::load_dataset(None).unwrap();
        for _ in 0..30 {
            let args = strategy.new_tree(&mut runner).unwrap().current().args;
            let rid = args["restaurant_id"].as_str().unwrap();
            let cnv = dataset.conversations.iter().find(|c| c.id == args["conversation_id"]).unwrap();
            // A restaurant without conversations gets any (a not-found call, still a call).
            if dataset.conversations.iter().any(|c| c.restaurant_id == rid) {
                assert_eq!(cnv.restaurant_id, rid);
            }
            let key = args["idempotency_key"].as_str().unwrap();
            assert!(key.starts_with("fuzz-") && key.len() >= 8, "{key}");
        }
    }
}
