//! ENV-7 (ext): every success's `data` has the shape the contract gives its tool (`data.order`
//! for `get_order`, …), checked on every exchange. The check is open: a server may add fields,
//! but the paths the contract names must be there with their types. Steps that need a path a
//! server moved report their clause *blocked by ENV-7* (`ConformanceWorld::field`), so a
//! different shape fails this clause alone.

use std::collections::HashMap;
use std::sync::LazyLock;

use chataigne_contract::ToolName;
use chataigne_contract::schema::Validator;
use serde_json::Value;

static SHAPES: LazyLock<HashMap<&'static str, Validator>> = LazyLock::new(|| {
    ToolName::ALL
        .iter()
        .filter_map(|t| Validator::new(&t.data_shape()).ok().map(|v| (t.as_str(), v)))
        .collect()
});

/// What is wrong with `data` of a `tool` success, naming the paths the contract expects; `None`
/// when it fits or when the tool is not one of the contract's.
pub fn check(tool: &str, data: &Value) -> Option<String> {
    let validator = SHAPES.get(tool)?;
    let failures = validator.shape_failures(data);
    if failures.is_empty() {
        return None;
    }
    let paths: Vec<String> = failures.iter().map(|f| format!("data{}", f.replace('/', "."))).collect();
    Some(format!("{tool}: {} (the contract's shape: docs/CONTRACT.md §10, ENV-7)", paths.join("; ")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn names_the_expected_path() {
        let bare = json!({ "id": "ord_1", "status": "received" });
        let found = super::check("get_order", &bare).expect("a bare order is another shape");
        assert!(found.contains("data.order missing"), "{found}");
        assert_eq!(super::check("no_such_tool", &bare), None);
    }

    #[test]
    fn extra_fields_are_allowed() {
        let orgs = json!({ "organizations": [], "total": 0 });
        assert_eq!(super::check("list_organizations", &orgs), None);
    }
}
