//! The bodies of the rules the judge (`crate::judge`, which lists them as data: clause, level,
//! which exchanges each applies to) runs on every exchange of every scenario and of `fuzz`, each
//! filed under its own clause: a bug shows up wherever it happens, not only in the scenario
//! written for it, and is blamed on the clause it breaks.
//!
//! - ENV-2: every request_id is well-formed and, over HTTP, equal to the `x-request-id` header
//!   (uniqueness across the run is checked by the runner, which sees every scenario);
//! - ENV-3: every text summary ≤ 4 KiB and structured output ≤ 128 KiB;
//! - ENV-4: an error's two request_ids match; an error carries code, category, retryable,
//!   message and request_id;
//! - ENV-5: every category is one of the nine, every code of the table has its fixed category and
//!   retryable flag (a code of the server's own keeps one of each across the run: the runner);
//! - ENV-6: no error message or error summary holds a string argument the call sent, or the token.
//!
//! And two of the transport's, on every request the suite makes:
//! - PROTO-1: an HTTP request served with a 2xx is answered as `application/json` or
//!   `text/event-stream` (Streamable HTTP, "Sending Messages to the Server");
//! - PROTO-2: the answer carries the request's `id`, with its type (JSON-RPC 2.0 §5; MCP basic
//!   protocol, "Responses"). A refusal with an HTTP error status may carry none or `null`: the
//!   transport allows an error body "that has no id".
//!
//! Each rule is two functions: `applies_*` (whether the exchange carries what the rule is about:
//! counted as evidence) and the check, which returns what was wrong.

use chataigne_contract::envelope;
use chataigne_contract::{Category, ErrorCode, MAX_STRUCTURED_BYTES, MAX_SUMMARY_BYTES};
use serde_json::Value;

use crate::client::Exchange;

/// One broken rule: the clause and what was seen (no sensitive value: an echo is named by the
/// argument's position, never shown).
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub clause: &'static str,
    pub detail: String,
}

/// What the tool-answer rules name an exchange by: the tool and its request_id.
fn label(ex: &Exchange) -> String {
    let tool = ex.tool.as_deref().unwrap_or(&ex.method);
    format!("{tool} ({})", ex.request_id().unwrap_or("no request_id"))
}

/// A request the suite built itself (raw bodies are odd on purpose), over HTTP, served with a 2xx.
pub fn applies_protocol(ex: &Exchange) -> bool {
    let (Some(_), Some(resp)) = (ex.rpc_id, ex.response()) else { return false };
    matches!(resp.status, Some(200..=299)) && ex.method != "raw" && !ex.stdio
}

/// A result to a `ping` the suite sent (MCP *Ping*, every revision: "an empty response").
pub fn applies_ping(ex: &Exchange) -> bool {
    ping_sent(ex) && ex.result().is_some()
}

/// Whether the request was a `ping`, sent through the client or as a raw body.
fn ping_sent(ex: &Exchange) -> bool {
    ex.method == "ping"
        || (ex.method == "raw"
            && ex.request_body.contains("ping")
            && serde_json::from_str::<Value>(&ex.request_body)
                .is_ok_and(|b| b.get("method").and_then(Value::as_str) == Some("ping")))
}

/// The result of a `ping` is empty: `{}`, `_meta` aside (every MCP result may carry it).
pub fn ping_result(ex: &Exchange) -> Option<String> {
    match ex.result()?.as_object() {
        Some(result) if result.keys().all(|k| k == "_meta") => None,
        _ => Some("ping answered with a result that is not empty ({})".to_owned()),
    }
}

fn is_json(ex: &Exchange) -> bool {
    ex.response().is_some_and(|r| r.content_type.starts_with("application/json"))
}

fn is_sse(ex: &Exchange) -> bool {
    ex.response().is_some_and(|r| r.content_type.starts_with("text/event-stream"))
}

/// PROTO-1: the answer's Content-Type.
pub fn content_type(ex: &Exchange) -> Option<String> {
    let resp = ex.response()?;
    if is_json(ex) || is_sse(ex) {
        return None;
    }
    let what = ex.tool.as_deref().unwrap_or(&ex.method);
    let ct = if resp.content_type.is_empty() { "none" } else { resp.content_type.as_str() };
    Some(format!(
        "{what} answered with HTTP {} and Content-Type {ct}: a request's answer is application/json \
         or text/event-stream",
        resp.status.unwrap_or_default()
    ))
}

/// PROTO-2: the answer carries the request's id, with its type.
pub fn answer_id(ex: &Exchange) -> Option<String> {
    let id = ex.rpc_id?;
    let resp = ex.response()?;
    let what = ex.tool.as_deref().unwrap_or(&ex.method);
    let want = Value::from(id);
    let wrong = |got: Option<&Value>| {
        format!("{what} was answered with id {}; the request's id was {id}", compact_id(got))
    };
    match ex.message() {
        Some(m) if m.get("id") != Some(&want) => Some(wrong(m.get("id"))),
        Some(_) => None,
        None => {
            // No answer to this request was found: one to another id is a correlation fault.
            let found = if is_json(ex) {
                serde_json::from_str::<Value>(&resp.body).ok().into_iter().collect()
            } else if is_sse(ex) {
                crate::client::sse_messages(&resp.body)
            } else {
                Vec::new()
            };
            let answer = |m: &&Value| m.get("result").is_some() || m.get("error").is_some();
            found.iter().filter(answer).find(|m| m.get("id") != Some(&want)).map(|m| wrong(m.get("id")))
        }
    }
}

fn compact_id(id: Option<&Value>) -> String {
    id.map_or_else(|| "missing".to_owned(), |v| crate::client::compact(v, 80))
}

/// A tool call that brought a result.
pub fn applies_tool_result(ex: &Exchange) -> bool {
    ex.tool.is_some() && ex.result().is_some()
}

/// ENV-3: the text summary's size.
pub fn summary_size(ex: &Exchange) -> Option<String> {
    let n = ex.text_bytes();
    (n > MAX_SUMMARY_BYTES)
        .then(|| format!("{}: text summary of {n} bytes (at most {MAX_SUMMARY_BYTES})", label(ex)))
}

/// ENV-3: the structured output's size.
pub fn structured_size(ex: &Exchange) -> Option<String> {
    let n = ex.structured_bytes();
    (n > MAX_STRUCTURED_BYTES)
        .then(|| format!("{}: structured output of {n} bytes (at most {MAX_STRUCTURED_BYTES})", label(ex)))
}

fn meta_id(ex: &Exchange) -> Option<&str> {
    ex.structured()?.pointer("/meta/request_id").and_then(Value::as_str)
}

/// A tool result whose envelope names a request_id.
pub fn applies_meta_id(ex: &Exchange) -> bool {
    applies_tool_result(ex) && meta_id(ex).is_some()
}

/// ENV-2: the request_id's format.
pub fn request_id_format(ex: &Exchange) -> Option<String> {
    let id = meta_id(ex)?;
    (!envelope::is_request_id(id))
        .then(|| format!("{}: meta.request_id does not match ^req_[0-9A-Za-z]{{16,}}$", label(ex)))
}

/// Over HTTP, a tool result with a request_id and an `x-request-id` header.
pub fn applies_id_header(ex: &Exchange) -> bool {
    applies_meta_id(ex) && !ex.stdio && ex.response().and_then(|r| r.header("x-request-id")).is_some()
}

/// ENV-2: the header equals the envelope's request_id.
pub fn request_id_header(ex: &Exchange) -> Option<String> {
    let header = ex.response()?.header("x-request-id")?;
    (Some(header) != meta_id(ex))
        .then(|| format!("{}: the x-request-id header differs from meta.request_id", label(ex)))
}

fn error_of(ex: &Exchange) -> Option<&Value> {
    if !ex.is_error() {
        return None;
    }
    ex.structured()?.pointer("/data/error")
}

/// A tool error with its `data.error`.
pub fn applies_error(ex: &Exchange) -> bool {
    ex.tool.is_some() && error_of(ex).is_some()
}

/// A `tools/call` of a tool of the contract, its arguments an object, answered (HTTP 200, or over
/// stdio) with a JSON-RPC error rather than a result.
pub fn applies_rpc_error_for_tool(ex: &Exchange) -> bool {
    let known = ex.tool.as_deref().and_then(chataigne_contract::ToolName::parse).is_some();
    let object_args = serde_json::from_str::<Value>(&ex.request_body)
        .ok()
        .is_some_and(|b| b.pointer("/params/arguments").is_none_or(Value::is_object));
    known && object_args && ex.status().is_none_or(|s| s == 200) && ex.rpc_error().is_some()
}

/// ENV-4 ("Errors: `isError: true`, `structuredContent = {data: {error …}}`"): a tool's failure
/// (a deadline, a refusal, a fault inside) is a tool result with the error envelope, never a
/// JSON-RPC error, but -32602: what MCP SDKs answer for arguments they refuse before the tool runs.
pub fn rpc_error_for_tool(ex: &Exchange) -> Option<String> {
    let code = ex.rpc_error()?.get("code").and_then(Value::as_i64);
    (code != Some(-32602)).then(|| {
        format!(
            "{}: answered with the JSON-RPC error {}, not a tool result with isError and data.error",
            label(ex),
            code.map_or_else(|| "without a code".to_owned(), |c| c.to_string())
        )
    })
}

/// A tool error whose `data.error` names a request_id.
pub fn applies_error_id(ex: &Exchange) -> bool {
    error_of(ex).and_then(|e| e.get("request_id")).and_then(Value::as_str).is_some() && ex.tool.is_some()
}

/// ENV-4: the error's two request_ids match.
pub fn error_ids_match(ex: &Exchange) -> Option<String> {
    let inner = error_of(ex)?.get("request_id").and_then(Value::as_str);
    (inner != meta_id(ex))
        .then(|| format!("{}: data.error.request_id differs from meta.request_id", label(ex)))
}

/// ENV-4: an error carries its five members, code, category, retryable, message and request_id,
/// on every tool error (a rate refusal or a timeout as much as a validation error), and says
/// which are missing.
pub fn error_members(ex: &Exchange) -> Option<String> {
    let error = error_of(ex)?;
    let text = |k: &str| error.get(k).and_then(Value::as_str).is_some();
    let whole = text("code")
        && text("category")
        && error.get("retryable").and_then(Value::as_bool).is_some()
        && text("message")
        && text("request_id");
    if whole {
        return None;
    }
    let missing: Vec<&str> = ["code", "category", "retryable", "message", "request_id"]
        .into_iter()
        .filter(|k| error.get(k).is_none())
        .collect();
    Some(format!("{}: data.error without {}", label(ex), missing.join(", ")))
}

/// A tool error naming a category.
pub fn applies_category(ex: &Exchange) -> bool {
    ex.tool.is_some() && error_of(ex).and_then(|e| e.get("category")).and_then(Value::as_str).is_some()
}

/// ENV-5: the category is one of the nine.
pub fn category_known(ex: &Exchange) -> Option<String> {
    let category = error_of(ex)?.get("category").and_then(Value::as_str)?;
    category_named(category)
        .is_none()
        .then(|| format!("{}: category {category:?} is not one of the nine", label(ex)))
}

/// A table code, its category one of the nine and its flag a boolean.
fn table_row(ex: &Exchange) -> Option<(ErrorCode, Category, bool)> {
    ex.tool.as_ref()?;
    let error = error_of(ex)?;
    let code = ErrorCode::parse(error.get("code").and_then(Value::as_str)?)?;
    let category = category_named(error.get("category").and_then(Value::as_str)?)?;
    Some((code, category, error.get("retryable").and_then(Value::as_bool)?))
}

/// A tool error with a code of the seed's table.
pub fn applies_seed_code(ex: &Exchange) -> bool {
    table_row(ex).is_some_and(|(code, _, _)| !code.is_ext())
}

/// A tool error with a code this project added to the table (§9 **ext**).
pub fn applies_ext_code(ex: &Exchange) -> bool {
    table_row(ex).is_some_and(|(code, _, _)| code.is_ext())
}

/// The seed codes whose row a clause states again in its own words (CONTRACT.md: IDEM-4's
/// "conflict, retryable", IDEM-3's "conflict, not retryable", AUTH-3's "authorization, not
/// retryable", PRE-2's "category conflict, not retryable"): a wrong row breaks that clause too.
pub const ROWS_STATED_BY: &[(ErrorCode, &str)] = &[
    (ErrorCode::OperationInProgress, "IDEM-4"),
    (ErrorCode::IdempotencyMismatch, "IDEM-3"),
    (ErrorCode::ScopeRequired, "AUTH-3"),
    (ErrorCode::ExpectedStateMismatch, "PRE-2"),
    (ErrorCode::OrderStatusPreconditionFailed, "PRE-2"),
];

/// A tool error with a code whose row `clause` states.
pub fn applies_row_stated_by(ex: &Exchange, clause: &str) -> bool {
    table_row(ex).is_some_and(|(code, _, _)| ROWS_STATED_BY.iter().any(|(c, cl)| *c == code && *cl == clause))
}

/// ENV-5: a table code with its fixed category and retryable flag.
pub fn code_on_its_row(ex: &Exchange) -> Option<String> {
    let (code, category, retryable) = table_row(ex)?;
    (category != code.category() || retryable != code.retryable()).then(|| {
        format!(
            "{}: {} with category {}, retryable {retryable} (the table: {}, {})",
            label(ex),
            code.as_str(),
            category.as_str(),
            code.category().as_str(),
            code.retryable()
        )
    })
}

/// ENV-6: no error message or error summary holds a string argument the call sent, or the token.
pub fn no_echo(ex: &Exchange, token: Option<&str>) -> Option<String> {
    let message = error_of(ex).and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or_default();
    let texts = ex.texts();
    let places: Vec<(&str, &str)> = std::iter::once(("the error message", message))
        .chain(texts.iter().map(|t| ("the text summary", *t)))
        .collect();
    let mut found = Vec::new();
    for (i, sent) in ex.sent_strings.iter().enumerate() {
        if let Some((place, _)) = places.iter().find(|(_, text)| text.contains(sent.as_str())) {
            found.push(format!("{place} echoes string argument #{} the call sent", i + 1));
        }
    }
    if let Some(token) = token.filter(|t| !t.is_empty())
        && let Some((place, _)) = places.iter().find(|(_, text)| text.contains(token))
    {
        found.push(format!("{place} echoes the bearer token"));
    }
    (!found.is_empty()).then(|| format!("{}: {}", label(ex), found.join("; ")))
}

fn category_named(name: &str) -> Option<Category> {
    Category::ALL.into_iter().find(|c| c.as_str() == name)
}

/// A code outside §9's table as one error carried it: `(code, category, retryable)`. ENV-5 holds
/// such a code to one category and flag wherever it appears in the run.
pub fn code_of_its_own(ex: &Exchange) -> Option<(String, Category, bool)> {
    if !ex.is_error() {
        return None;
    }
    let error = ex.structured()?.pointer("/data/error")?;
    let code = error.get("code").and_then(Value::as_str)?;
    let category = category_named(error.get("category").and_then(Value::as_str)?)?;
    let retryable = error.get("retryable").and_then(Value::as_bool)?;
    ErrorCode::parse(code).is_none().then(|| (code.to_owned(), category, retryable))
}
