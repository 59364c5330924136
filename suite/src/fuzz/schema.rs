//! What the fuzzer knows of a tool: the input schema it generates from (the server's published
//! one, its bounds tightened to the contract's where the contract has the tool, so a server that
//! publishes `limit ≤ 500` is still held to 50), the mutations that schema allows, and the
//! clause each mutation breaks when the server accepts it.

use chataigne_contract::schema::Validator;
use chataigne_contract::{Kind, ToolName};
use serde_json::{Map, Value};

/// One published tool, ready to fuzz.
#[derive(Debug)]
pub struct Tool {
    pub name: String,
    /// The schema arguments are drawn from.
    pub schema: Value,
    /// The contract's kind, when the tool is one of the contract's.
    pub kind: Option<Kind>,
    /// Whether a call may change the server's state.
    pub writes: bool,
    published: Option<Validator>,
    contract: Option<Validator>,
}

impl Tool {
    /// `None` when the published tool has no usable input schema.
    pub fn new(published: &Value) -> Option<Tool> {
        let name = published.get("name")?.as_str()?.to_owned();
        let input = published.get("inputSchema").filter(|s| s.is_object())?.clone();
        let known = ToolName::parse(&name);
        let contract_schema = known.map(ToolName::input_schema);
        let schema = match &contract_schema {
            Some(c) => tighten(&input, c),
            None => input.clone(),
        };
        // Without the contract's word, a tool is a write unless it says it only reads.
        let read_only = published.pointer("/annotations/readOnlyHint").and_then(Value::as_bool) == Some(true);
        let writes = known.map_or(!read_only, |t| t.kind().is_write());
        Some(Tool {
            name,
            schema,
            kind: known.map(ToolName::kind),
            writes,
            published: Validator::new(&input).ok(),
            contract: contract_schema.as_ref().and_then(|c| Validator::new(c).ok()),
        })
    }

    /// Arguments the server must accept as well-formed: valid against what it published and
    /// against the contract.
    pub fn accepts(&self, args: &Value) -> bool {
        self.published.as_ref().is_none_or(|v| v.is_valid(args))
            && self.contract.as_ref().is_none_or(|v| v.is_valid(args))
    }

    /// Whether the arguments carry this member.
    pub fn has_property(&self, name: &str) -> bool {
        self.schema.pointer(&format!("/properties/{name}")).is_some()
    }
}

/// `published` with every bound the contract also states made the stricter of the two;
/// properties the server did not publish are not added (sending them would be an extra member).
pub fn tighten(published: &Value, contract: &Value) -> Value {
    let mut out = published.clone();
    let Some(out_map) = out.as_object_mut() else { return out };
    if contract.get("additionalProperties") == Some(&Value::Bool(false)) {
        out_map.insert("additionalProperties".into(), Value::Bool(false));
    }
    let props: Vec<String> = out_map
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(required) = contract.get("required").and_then(Value::as_array) {
        let mut all: Vec<Value> =
            out_map.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
        for r in required {
            if !all.contains(r) && r.as_str().is_some_and(|r| props.iter().any(|p| p == r)) {
                all.push(r.clone());
            }
        }
        out_map.insert("required".into(), Value::Array(all));
    }
    if let Some(Value::Object(pp)) = out_map.get_mut("properties") {
        for (name, p) in pp.iter_mut() {
            if let Some(c) = contract.pointer(&format!("/properties/{name}")) {
                tighten_leaf(p, c);
            }
        }
    }
    out
}

fn tighten_leaf(p: &mut Value, c: &Value) {
    let (Some(p), Some(c)) = (p.as_object_mut(), c.as_object()) else { return };
    let num = |v: &Value| v.as_f64();
    for (key, stricter_is_max) in [
        ("minimum", true),
        ("minLength", true),
        ("minItems", true),
        ("maximum", false),
        ("maxLength", false),
        ("maxItems", false),
    ] {
        let Some(cv) = c.get(key).and_then(num) else { continue };
        let keep_contract = match p.get(key).and_then(num) {
            None => true,
            Some(pv) => (stricter_is_max && cv > pv) || (!stricter_is_max && cv < pv),
        };
        if keep_contract {
            p.insert(key.into(), c[key].clone());
        }
    }
    if c.get("uniqueItems") == Some(&Value::Bool(true)) {
        p.insert("uniqueItems".into(), Value::Bool(true));
    }
    if let (Some(Value::Array(pe)), Some(Value::Array(ce))) = (p.get("enum").cloned(), c.get("enum")) {
        let both: Vec<Value> = pe.into_iter().filter(|v| ce.contains(v)).collect();
        if !both.is_empty() {
            p.insert("enum".into(), Value::Array(both));
        }
    }
    if let (Some(pi), Some(ci)) = (p.get_mut("items"), c.get("items")) {
        tighten_leaf(pi, ci);
    }
}

/// One way to make valid arguments invalid.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mutation {
    MissingRequired,
    WrongType,
    BelowMinimum(i64),
    AboveMaximum(i64),
    TooShort(u64),
    TooLong(u64),
    TooFewItems(u64),
    TooManyItems(u64),
    DuplicateItems,
    OutsideEnum,
    PatternBroken,
    /// An unknown member: `field` is the one added.
    ExtraProperty,
}

/// A mutation of one member of one tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub field: String,
    pub mutation: Mutation,
}

impl Target {
    /// The same target on another tool (`limit` above its maximum is one bug on every list).
    pub fn signature(&self) -> String {
        format!("{}:{:?}", self.field, self.mutation)
    }

    /// Which mutations to try first when the budget is short: bounds first (where servers go
    /// wrong), then required members, lengths, enums, closed objects, types, patterns.
    pub fn priority(&self) -> u8 {
        match self.mutation {
            Mutation::AboveMaximum(_) | Mutation::BelowMinimum(_) => 0,
            Mutation::TooManyItems(_) | Mutation::TooFewItems(_) | Mutation::DuplicateItems => 1,
            Mutation::MissingRequired => 2,
            Mutation::TooShort(_) | Mutation::TooLong(_) => 3,
            Mutation::OutsideEnum => 4,
            Mutation::ExtraProperty => 5,
            Mutation::WrongType => 6,
            Mutation::PatternBroken => 7,
        }
    }

    pub fn describe(&self) -> String {
        let f = &self.field;
        match &self.mutation {
            Mutation::MissingRequired => format!("required `{f}` missing"),
            Mutation::WrongType => format!("`{f}` of the wrong type"),
            Mutation::BelowMinimum(m) => format!("`{f}` below its minimum {m}"),
            Mutation::AboveMaximum(m) => format!("`{f}` above its maximum {m}"),
            Mutation::TooShort(m) => format!("`{f}` shorter than {m} characters"),
            Mutation::TooLong(m) => format!("`{f}` longer than {m} characters"),
            Mutation::TooFewItems(m) => format!("`{f}` with fewer than {m} items"),
            Mutation::TooManyItems(m) => format!("`{f}` with more than {m} items"),
            Mutation::DuplicateItems => format!("`{f}` with a duplicate item"),
            Mutation::OutsideEnum => format!("`{f}` outside its enum"),
            Mutation::PatternBroken => format!("`{f}` not matching its pattern"),
            Mutation::ExtraProperty => format!("unknown member `{f}`"),
        }
    }

    /// The clause a server breaks by accepting this mutation: the clause of the bound when the
    /// contract gives the bound its own clause, else PROTO-3 (the input schema is not enforced).
    pub fn clause(&self, tool: &str) -> &'static str {
        let f = self.field.as_str();
        match (&self.mutation, f) {
            (_, "limit") => "PAG-2",
            (Mutation::BelowMinimum(_) | Mutation::WrongType, "message_limit") => "PAG-8",
            (Mutation::TooFewItems(_) | Mutation::TooManyItems(_) | Mutation::DuplicateItems, "metrics")
                if tool == "get_analytics" =>
            {
                "LIM-1"
            }
            (Mutation::MissingRequired, "expected_status") => "PRE-1",
            (Mutation::MissingRequired | Mutation::TooShort(_) | Mutation::TooLong(_), "idempotency_key") => {
                "IDEM-1"
            }
            (Mutation::OutsideEnum, "status") if tool == "update_order_status" => "ABS-2",
            // LIM-7: string arguments have their documented maxLength (IDs break their pattern too).
            (Mutation::TooLong(_), f) if !f.ends_with("_id") => "LIM-7",
            _ => "PROTO-3",
        }
    }
}

/// The field name an extra-property mutation adds: no contract tool has it.
pub const EXTRA_FIELD: &str = "fuzz_unknown_member";

/// Every mutation the tool's schema allows, one per member and bound.
pub fn targets(schema: &Value) -> Vec<Target> {
    let mut out = Vec::new();
    let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let required = chataigne_contract::schema::required(schema);
    let mut push = |field: &str, mutation: Mutation| out.push(Target { field: field.to_owned(), mutation });
    for (name, p) in &props {
        if required.contains(&name.as_str()) {
            push(name, Mutation::MissingRequired);
        }
        if p.get("type").is_some() {
            push(name, Mutation::WrongType);
        }
        let int = |k: &str| p.get(k).and_then(Value::as_i64);
        let uint = |k: &str| p.get(k).and_then(Value::as_u64);
        if let Some(m) = int("minimum") {
            push(name, Mutation::BelowMinimum(m));
        }
        if let Some(m) = int("maximum") {
            push(name, Mutation::AboveMaximum(m));
        }
        if let Some(m) = uint("minLength").filter(|m| *m > 0) {
            push(name, Mutation::TooShort(m));
        }
        if let Some(m) = uint("maxLength") {
            push(name, Mutation::TooLong(m));
        }
        if let Some(m) = uint("minItems").filter(|m| *m > 0) {
            push(name, Mutation::TooFewItems(m));
        }
        if let Some(m) = uint("maxItems") {
            push(name, Mutation::TooManyItems(m));
        }
        if p.get("uniqueItems") == Some(&Value::Bool(true)) {
            push(name, Mutation::DuplicateItems);
        }
        if p.get("enum").is_some() || p.pointer("/items/enum").is_some() {
            push(name, Mutation::OutsideEnum);
        }
        if p.get("pattern").is_some() {
            push(name, Mutation::PatternBroken);
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        push(EXTRA_FIELD, Mutation::ExtraProperty);
    }
    out
}

/// The property schemas of an object schema, with the required ones flagged.
pub fn members(schema: &Value) -> Vec<(String, Value, bool)> {
    let required = chataigne_contract::schema::required(schema);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m: &Map<String, Value>| {
            m.iter().map(|(k, v)| (k.clone(), v.clone(), required.contains(&k.as_str()))).collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_looser_published_bound_is_held_to_the_contracts() {
        let contract = ToolName::ListOrders.input_schema();
        let mut published = contract.clone();
        published["properties"]["limit"]["maximum"] = json!(500);
        published["additionalProperties"] = json!(true);
        published["required"] = json!([]);
        let t = tighten(&published, &contract);
        assert_eq!(t["properties"]["limit"]["maximum"], 50);
        assert_eq!(t["additionalProperties"], false);
        assert_eq!(t["required"], json!(["restaurant_id"]));
    }

    #[test]
    fn every_bound_of_a_list_is_a_target_with_its_clause() {
        let targets = targets(&ToolName::ListOrders.input_schema());
        let limit = targets.iter().find(|t| t.mutation == Mutation::AboveMaximum(50)).unwrap();
        assert_eq!((limit.field.as_str(), limit.clause("list_orders")), ("limit", "PAG-2"));
        assert!(
            targets.iter().any(|t| t.field == "restaurant_id" && t.mutation == Mutation::MissingRequired)
        );
        assert!(targets.iter().any(|t| t.mutation == Mutation::ExtraProperty));
        let keyed = self::targets(&ToolName::SendMessage.input_schema());
        let short = keyed.iter().find(|t| t.mutation == Mutation::TooShort(8)).unwrap();
        assert_eq!(short.clause("send_message"), "IDEM-1");
    }
}
