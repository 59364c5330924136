//! The tool catalogue as the server publishes it in tools/list: descriptions, schemas,
//! annotations (PROTO-3), string bounds (LIM-7), and what must not be there (ABS-1, ABS-2).

use anyhow::anyhow;
use chataigne_contract::schema::Validator;
use chataigne_contract::{Kind, ToolName};
use cucumber::gherkin::Step;
use cucumber::{then, when};
use serde_json::{Value, json};

use crate::world::ConformanceWorld;

const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

#[when("they list the tools")]
async fn list_tools(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let ex = w.rpc("tools/list", params).await?;
        let Some(page) = ex.result().and_then(|r| r.get("tools")).and_then(Value::as_array) else {
            return Err(w.fail("a tools/list result with a `tools` array", w.last()?.summary()));
        };
        tools.extend(page.iter().cloned());
        cursor = ex.result().and_then(|r| r.get("nextCursor")).and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            w.tools = Some(tools);
            return Ok(());
        }
    }
    Err(w.fail("tools/list to end", "more than 100 pages"))
}

fn tools(w: &ConformanceWorld) -> anyhow::Result<&[Value]> {
    w.tools.as_deref().ok_or_else(|| anyhow!("no tools/list yet: add `When they list the tools`"))
}

fn name(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("(unnamed)")
}

/// Fail with every offending tool at once, so one run shows the whole list.
fn check_each(
    w: &ConformanceWorld,
    expected: &str,
    mut problem: impl FnMut(&Value) -> Option<String>,
) -> anyhow::Result<()> {
    let tools = tools(w)?;
    if tools.is_empty() {
        return Err(w.fail(expected, "tools/list is empty"));
    }
    let problems: Vec<String> =
        tools.iter().filter_map(|t| problem(t).map(|p| format!("{}: {p}", name(t)))).collect();
    if problems.is_empty() { Ok(()) } else { Err(w.fail(expected, problems.join("; "))) }
}

#[then("every tool has a description, an input schema and an output schema")]
async fn described(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "a description, an inputSchema and an outputSchema on every tool", |t| {
        let missing: Vec<&str> = [
            ("description", "a description"),
            ("inputSchema", "inputSchema"),
            ("outputSchema", "outputSchema"),
        ]
        .into_iter()
        .filter(|(k, _)| match t.get(k) {
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(Value::Object(_)) => false,
            _ => true,
        })
        .map(|(_, what)| what)
        .collect();
        (!missing.is_empty()).then(|| format!("no {}", missing.join(", no ")))
    })
}

#[then("every input schema is a closed JSON Schema 2020-12 object")]
async fn closed_inputs(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "inputSchema: 2020-12, type object, additionalProperties false, compiles", |t| {
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
    })
}

fn annotation(tool: &Value, hint: &str) -> Option<bool> {
    tool.get("annotations").and_then(|a| a.get(hint)).and_then(Value::as_bool)
}

fn kind(tool: &Value) -> Option<Kind> {
    ToolName::parse(name(tool)).map(ToolName::kind)
}

#[then("every read tool is annotated read-only")]
async fn reads_read_only(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "readOnlyHint: true on every read tool", |t| {
        let read = matches!(kind(t)?, Kind::Read | Kind::Analytics);
        (read && annotation(t, "readOnlyHint") != Some(true)).then(|| "readOnlyHint is not true".to_owned())
    })
}

#[then("every write tool is annotated neither read-only nor destructive")]
async fn writes_not_destructive(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "readOnlyHint: false and destructiveHint: false on every write tool", |t| {
        if !kind(t)?.is_write() {
            return None;
        }
        let ro = annotation(t, "readOnlyHint");
        let destructive = annotation(t, "destructiveHint");
        (ro != Some(false) || destructive != Some(false))
            .then(|| format!("readOnlyHint {ro:?}, destructiveHint {destructive:?}"))
    })
}

#[then("every idempotency-keyed write tool is annotated idempotent")]
async fn keyed_idempotent(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "idempotentHint: true on every tool keyed by idempotency_key", |t| {
        (kind(t)? == Kind::KeyedWrite && annotation(t, "idempotentHint") != Some(true))
            .then(|| "idempotentHint is not true".to_owned())
    })
}

#[then("the tools are exactly the tools of the contract")]
async fn exactly_the_catalogue(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let listed: Vec<&str> = tools(w)?.iter().map(name).collect();
    crate::rules::transport::exactly_the_contract_tools(&listed).map_err(|m| w.fail(m.expected, m.got))
}

/// The table lists words; a tool name containing one (between underscores or not) is refused.
#[then("no tool name contains any of these words:")]
async fn no_forbidden_names(w: &mut ConformanceWorld, step: &Step) -> anyhow::Result<()> {
    let words = super::table_words(step, "this step needs a table of words")?;
    check_each(w, "no tool named after a deliberately absent operation", |t| {
        let n = name(t).to_ascii_lowercase();
        let hits: Vec<&str> =
            words.iter().filter(|word| n.contains(word.as_str())).map(String::as_str).collect();
        (!hits.is_empty()).then(|| format!("contains {}", hits.join(", ")))
    })
}

/// An anchored pattern without unbounded repetition (`*`, `+`, `{n,}`) bounds the length as
/// surely as `maxLength` (fixed-width dates, for instance).
fn pattern_bounds_length(schema: &Value) -> bool {
    schema.get("pattern").and_then(Value::as_str).is_some_and(|p| {
        p.starts_with('^') && p.ends_with('$') && !p.contains('*') && !p.contains('+') && !p.contains(",}")
    })
}

/// Strings without an `enum` must declare `maxLength` (LIM-7), arrays of strings included; an
/// anchored fixed-width pattern counts as a declared maximum.
#[then("every string argument of every tool declares a maxLength")]
async fn bounded_strings(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "maxLength (or an anchored fixed-width pattern) on every free string argument", |t| {
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
    })
}

#[then(expr = "the input schema of {string} refuses {string} as its {string}")]
async fn schema_refuses(
    w: &mut ConformanceWorld,
    tool: String,
    value: String,
    field: String,
) -> anyhow::Result<()> {
    let tools = tools(w)?;
    let Some(t) = tools.iter().find(|t| name(t) == tool) else {
        return Err(w.fail(format!("a tool {tool}"), "no such tool in tools/list"));
    };
    let Some(prop) = t.pointer(&format!("/inputSchema/properties/{field}")) else {
        return Err(w.fail(format!("{tool} to have an argument {field}"), "no such property"));
    };
    let validator = Validator::new(prop).map_err(|e| w.fail("a compilable schema", e))?;
    if validator.is_valid(&Value::String(value.clone())) {
        return Err(w.fail(
            format!("{tool}.{field} to refuse \"{value}\""),
            format!("its schema accepts it: {prop}"),
        ));
    }
    Ok(())
}
