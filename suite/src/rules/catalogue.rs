//! The tool catalogue's rules, one tool at a time: what the steps of `steps::catalogue` judge on
//! `tools/list` and the fuzzer's catalogue probes judge on the same list (PROTO-3, LIM-7). Each
//! returns what is wrong with one tool's descriptor, `None` when nothing is.

use chataigne_contract::schema::Validator;
use chataigne_contract::{Kind, ToolName};
use serde_json::Value;

const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The tool's name as listed.
pub fn name(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("(unnamed)")
}

/// Each tool's problem, `name: problem`, for every tool `problem` finds one on.
pub fn problems(tools: &[Value], mut problem: impl FnMut(&Value) -> Option<String>) -> Vec<String> {
    tools.iter().filter_map(|t| problem(t).map(|p| format!("{}: {p}", name(t)))).collect()
}

/// PROTO-3, `every tool has a description, an input schema and an output schema`.
pub fn undescribed(t: &Value) -> Option<String> {
    let missing: Vec<&str> =
        [("description", "a description"), ("inputSchema", "inputSchema"), ("outputSchema", "outputSchema")]
            .into_iter()
            .filter(|(k, _)| match t.get(k) {
                Some(Value::String(s)) => s.trim().is_empty(),
                Some(Value::Object(_)) => false,
                _ => true,
            })
            .map(|(_, what)| what)
            .collect();
    (!missing.is_empty()).then(|| format!("no {}", missing.join(", no ")))
}

/// PROTO-3 (`@ext-closed-schemas`), `every input schema is a closed JSON Schema 2020-12 object`.
pub fn open_input(t: &Value) -> Option<String> {
    let schema = t.get("inputSchema")?;
    let mut problems = Vec::new();
    match schema.get("$schema").and_then(Value::as_str) {
        None | Some(DIALECT_2020_12) => {}
        Some(other) => problems.push(format!("$schema is {other}")),
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        problems.push("type is not object".to_owned());
    }
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        problems.push("additionalProperties is not false".to_owned());
    }
    if let Err(e) = Validator::new(schema) {
        problems.push(format!("does not compile: {e}"));
    }
    (!problems.is_empty()).then(|| problems.join(", "))
}

fn annotation(tool: &Value, hint: &str) -> Option<bool> {
    tool.get("annotations").and_then(|a| a.get(hint)).and_then(Value::as_bool)
}

fn kind(tool: &Value) -> Option<Kind> {
    ToolName::parse(name(tool)).map(ToolName::kind)
}

/// PROTO-3 (`@ext-closed-schemas`), `every read tool is annotated read-only`.
pub fn read_not_read_only(t: &Value) -> Option<String> {
    let read = matches!(kind(t)?, Kind::Read | Kind::Analytics);
    (read && annotation(t, "readOnlyHint") != Some(true)).then(|| "readOnlyHint is not true".to_owned())
}

/// PROTO-3 (`@ext-closed-schemas`), `every write tool is annotated neither read-only nor
/// destructive`.
pub fn write_misannotated(t: &Value) -> Option<String> {
    if !kind(t)?.is_write() {
        return None;
    }
    let ro = annotation(t, "readOnlyHint");
    let destructive = annotation(t, "destructiveHint");
    (ro != Some(false) || destructive != Some(false))
        .then(|| format!("readOnlyHint {ro:?}, destructiveHint {destructive:?}"))
}

/// PROTO-3 (`@ext-closed-schemas`), `every idempotency-keyed write tool is annotated idempotent`.
pub fn keyed_not_idempotent(t: &Value) -> Option<String> {
    (kind(t)? == Kind::KeyedWrite && annotation(t, "idempotentHint") != Some(true))
        .then(|| "idempotentHint is not true".to_owned())
}

/// The four rules of the closed-schemas scenario, in its order.
pub fn not_closed(t: &Value) -> Option<String> {
    let found: Vec<String> = [open_input, read_not_read_only, write_misannotated, keyed_not_idempotent]
        .into_iter()
        .filter_map(|rule| rule(t))
        .collect();
    (!found.is_empty()).then(|| found.join(", "))
}

/// An anchored pattern without unbounded repetition (`*`, `+`, `{n,}`) bounds the length as
/// surely as `maxLength` (fixed-width dates, for instance).
fn pattern_bounds_length(schema: &Value) -> bool {
    schema.get("pattern").and_then(Value::as_str).is_some_and(|p| {
        p.starts_with('^') && p.ends_with('$') && !p.contains('*') && !p.contains('+') && !p.contains(",}")
    })
}

/// LIM-7, `every string argument of every tool declares a maxLength`: strings without an `enum`
/// declare `maxLength`, arrays of strings included; an anchored fixed-width pattern counts as a
/// declared maximum.
pub fn unbounded_strings(t: &Value) -> Option<String> {
    let props = t.get("inputSchema")?.get("properties")?.as_object()?;
    let unbounded: Vec<&str> = props
        .iter()
        .filter(|(_, s)| {
            let item = if s.get("type").and_then(Value::as_str) == Some("array") {
                s.get("items")
            } else {
                Some(*s)
            };
            item.is_some_and(|i| {
                i.get("type").and_then(Value::as_str) == Some("string")
                    && i.get("enum").is_none()
                    && i.get("maxLength").is_none()
                    && !pattern_bounds_length(i)
            })
        })
        .map(|(k, _)| k.as_str())
        .collect();
    (!unbounded.is_empty()).then(|| format!("no maxLength on {}", unbounded.join(", ")))
}
