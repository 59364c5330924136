//! JSON Schema validation (2020-12) with messages that never echo the instance's values (ENV-6).

use serde_json::Value;

/// A compiled schema.
pub struct Validator(jsonschema::Validator);

/// The names an object schema lists as `required` (none when it lists none).
pub fn required(schema: &Value) -> Vec<&str> {
    schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Validator")
    }
}

impl Validator {
    pub fn new(schema: &Value) -> Result<Self, String> {
        jsonschema::draft202012::new(schema).map(Validator).map_err(|e| e.to_string())
    }

    pub fn is_valid(&self, instance: &Value) -> bool {
        self.0.is_valid(instance)
    }

    /// Like [`Self::failures`], but a missing property is named (`/order/status missing`): for
    /// shape checks, where the path the contract expects is the point. Still no values.
    pub fn shape_failures(&self, instance: &Value) -> Vec<String> {
        self.0
            .iter_errors(instance)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind() {
                    return format!("{at}/{} missing", property.as_str().unwrap_or("?"));
                }
                let kw = e.schema_path().to_string();
                let kw = kw.rsplit('/').next().unwrap_or_default().to_owned();
                format!("{} fails `{}`", if at.is_empty() { "/" } else { &at }, kw)
            })
            .collect()
    }

    /// Where the instance fails, as JSON pointers and the failing keyword, without values:
    /// safe to put in an error message or a report.
    pub fn failures(&self, instance: &Value) -> Vec<String> {
        self.0
            .iter_errors(instance)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                let kw = e.schema_path().to_string();
                let kw = kw.rsplit('/').next().unwrap_or_default().to_owned();
                format!("{} fails `{}`", if at.is_empty() { "/" } else { &at }, kw)
            })
            .collect()
    }
}
