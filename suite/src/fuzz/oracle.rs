//! What every fuzzed call is judged by, each failure filed under its clause: an answer at all
//! and no 5xx (PROTO-2), the transport's and the envelope's rules (`invariants`), structured
//! content valid against the published output schema (PROTO-4), and a refusal for arguments the
//! schema forbids (the clause of the broken bound, else PROTO-3).

use serde_json::Value;

use super::schema::{Mutation, Tool};
use super::strategy::Case;
use crate::client::Exchange;
use crate::context::RunContext;
use crate::invariants;

/// One broken rule, seen on one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub clause: &'static str,
    pub detail: String,
}

fn fault(clause: &'static str, detail: String) -> Fault {
    Fault { clause, detail }
}

/// Every rule `ex`, the answer to `case` on `tool`, breaks.
pub fn judge(ctx: &RunContext, tool: &Tool, case: &Case, ex: &Exchange, token: Option<&str>) -> Vec<Fault> {
    let name = &tool.name;
    let mut out = answered(ex);
    if !out.is_empty() {
        return out;
    }
    out.extend(invariants::check_protocol(ex).into_iter().map(|v| fault(v.clause, v.detail)));
    out.extend(invariants::check(ex, token).into_iter().map(|v| fault(v.clause, v.detail)));
    let must_refuse = !tool.accepts(&case.args);
    let target = case.target.as_ref().filter(|_| must_refuse);
    if let Some(err) = ex.rpc_error() {
        let code = err.get("code").and_then(Value::as_i64).unwrap_or_default();
        match (must_refuse, code) {
            (true, -32602 | -32600) => {}
            (true, _) => out.push(fault(
                "PROTO-2",
                format!("{name}: arguments the schema forbids got JSON-RPC error {code}, not -32602 nor a validation error"),
            )),
            (false, _) => out.push(fault(
                "PROTO-3",
                format!("{name}: arguments valid against the published input schema got JSON-RPC error {code}"),
            )),
        }
        return out;
    }
    out.extend(output_schema(ctx, name, ex));
    if must_refuse && !ex.is_error() {
        let what = target.map_or_else(|| "arguments the input schema forbids".to_owned(), |t| t.describe());
        let clamped = target.is_some_and(|t| {
            // PAG-8 lets a server clamp message_limit instead of refusing it.
            t.field == "message_limit"
                && matches!(t.mutation, Mutation::AboveMaximum(_))
                && ex
                    .structured()
                    .and_then(|s| s.pointer("/data/messages"))
                    .and_then(Value::as_array)
                    .is_some_and(|m| m.len() <= 100)
        });
        if !clamped {
            let clause = target.map_or("PROTO-3", |t| t.clause(name));
            out.push(fault(clause, format!("{name} accepted {what} ({})", ex.summary())));
        }
    }
    out
}

/// PROTO-2: an answer came, not a 5xx, and it is a JSON-RPC message.
pub fn answered(ex: &Exchange) -> Vec<Fault> {
    let what = ex.tool.as_deref().unwrap_or(&ex.method);
    match ex.response() {
        None => vec![fault("PROTO-2", format!("{what}: {}", ex.summary()))],
        Some(r) if r.status.is_some_and(|s| s >= 500) => {
            vec![fault("PROTO-2", format!("{what}: HTTP {} to a tools/call", r.status.unwrap_or_default()))]
        }
        Some(r) if r.message.is_none() => {
            vec![fault("PROTO-2", format!("{what}: no JSON-RPC answer ({})", ex.summary()))]
        }
        Some(_) => Vec::new(),
    }
}

/// PROTO-4: the structured content validates against the tool's published output schema.
pub fn output_schema(ctx: &RunContext, name: &str, ex: &Exchange) -> Vec<Fault> {
    let Some(Ok(validator)) = ctx.published.output_validators.get(name) else { return Vec::new() };
    match ex.structured() {
        None if ex.result().is_some() => {
            vec![fault(
                "PROTO-4",
                format!("{name}: a result without structuredContent, though the tool has an outputSchema"),
            )]
        }
        None => Vec::new(),
        Some(s) => {
            let failures = validator.failures(s);
            if failures.is_empty() {
                Vec::new()
            } else {
                let shown: Vec<&str> = failures.iter().take(3).map(String::as_str).collect();
                vec![fault(
                    "PROTO-4",
                    format!("{name}: structuredContent off the output schema: {}", shown.join("; ")),
                )]
            }
        }
    }
}

/// The error code of a tool error.
pub fn error_code(ex: &Exchange) -> Option<&str> {
    ex.structured()?.pointer("/data/error/code")?.as_str()
}

/// A success: a result that is not a tool error.
pub fn succeeded(ex: &Exchange) -> bool {
    ex.result().is_some() && !ex.is_error()
}
