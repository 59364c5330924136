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
    /// against the contract, a date range within LIM-1's rule.
    pub fn accepts(&self, args: &Value) -> bool {
        self.published.as_ref().is_none_or(|v| v.is_valid(args))
            && self.contract.as_ref().is_none_or(|v| v.is_valid(args))
            && (!crate::rules::ranges::has_range(&self.schema)
                || crate::rules::ranges::range_problem(args).is_none())
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

// What the input schema forbids lives below the fuzzer, where the contract's matrices (run in
// every certification) use it too.
pub use crate::bounds::{EXTRA_FIELD, Mutation, Target, targets};

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
}
