//! The tool catalogue as the server publishes it in tools/list: descriptions, schemas,
//! annotations (PROTO-3), string bounds (LIM-7), and what must not be there (ABS-1, ABS-2).

use anyhow::anyhow;
use chataigne_contract::schema::Validator;
use cucumber::gherkin::Step;
use cucumber::{then, when};
use serde_json::{Value, json};

use crate::rules::catalogue::{self as rules, name};
use crate::world::ConformanceWorld;

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
    let problems = rules::problems(tools, &mut problem);
    if problems.is_empty() { Ok(()) } else { Err(w.fail(expected, problems.join("; "))) }
}

#[then("every tool has a description, an input schema and an output schema")]
async fn described(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "a description, an inputSchema and an outputSchema on every tool", rules::undescribed)
}

#[then("every input schema is a closed JSON Schema 2020-12 object")]
async fn closed_inputs(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(
        w,
        "inputSchema: 2020-12, type object, additionalProperties false, compiles",
        rules::open_input,
    )
}

#[then("every read tool is annotated read-only")]
async fn reads_read_only(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "readOnlyHint: true on every read tool", rules::read_not_read_only)
}

#[then("every write tool is annotated neither read-only nor destructive")]
async fn writes_not_destructive(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(
        w,
        "readOnlyHint: false and destructiveHint: false on every write tool",
        rules::write_misannotated,
    )
}

#[then("every idempotency-keyed write tool is annotated idempotent")]
async fn keyed_idempotent(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(w, "idempotentHint: true on every tool keyed by idempotency_key", rules::keyed_not_idempotent)
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

#[then("every string argument of every tool declares a maxLength")]
async fn bounded_strings(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    check_each(
        w,
        "maxLength (or an anchored fixed-width pattern) on every free string argument",
        rules::unbounded_strings,
    )
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
