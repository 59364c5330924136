//! What every fuzzed call is judged by, each failure filed under its clause: an answer at all
//! and no 5xx (PROTO-2), every rule of the judge's table (`crate::judge`: the transport's, the
//! envelope's, structured content valid against the published output schema, PROTO-4), a refusal for arguments the
//! schema forbids (the clause of the broken bound, else PROTO-3), and no refusal of a string drawn
//! on its length bound in two-byte characters (the bound's clause).

use chataigne_contract::{DEFAULT_LIMIT, DEFAULT_MESSAGE_LIMIT, ErrorCode};
use serde_json::Value;

use super::ids::Pools;
pub use super::observed::Fault;
use super::schema::{Mutation, Tool};
use super::strategy::Case;
use crate::client::Exchange;
use crate::context::RunContext;

fn fault(clause: &'static str, detail: String) -> Fault {
    Fault::new(clause, detail)
}

/// Every rule `ex`, the answer to `case` on `tool`, breaks.
pub fn judge(ctx: &RunContext, tool: &Tool, case: &Case, ex: &Exchange, token: Option<&str>) -> Vec<Fault> {
    let name = &tool.name;
    let mut out = answered(ex);
    if !out.is_empty() {
        return out;
    }
    out.extend(every_rule(ctx, ex, token));
    out.extend(id_header(ex));
    let must_refuse = !tool.accepts(&case.args);
    let target = case.target.as_ref().filter(|_| must_refuse);
    // A call no mutation broke that must be refused: its date range (LIM-1), else the schema.
    let range = crate::rules::ranges::range_problem(&case.args).filter(|_| must_refuse && target.is_none());
    let clause_of = |t: Option<&super::schema::Target>| match (t, &range) {
        (Some(t), _) => t.clause(name),
        (None, Some(_)) => "LIM-1",
        (None, None) => "PROTO-3",
    };
    let what_of = |t: Option<&super::schema::Target>| match (t, &range) {
        (Some(t), _) => t.describe(),
        (None, Some(r)) => r.clone(),
        (None, None) => "arguments the input schema forbids".to_owned(),
    };
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
    out.extend(envelope(name, ex));
    if !must_refuse
        && error_code(ex) == Some(ErrorCode::InvalidArguments.as_str())
        && let Some((field, clause, chars)) = two_byte_edge(tool, &case.args)
    {
        out.push(fault(
            clause,
            format!(
                "{name}: `{field}` of {chars} two-byte characters, on its bound counted in characters, \
                 refused as MCP_INVALID_ARGUMENTS (counted in UTF-8 bytes?)"
            ),
        ));
    }
    if !must_refuse && succeeded(ex) {
        out.extend(page_sizes(name, &case.args, ex));
        // Without `limit`, such a page is PAG-1's smaller default (`page_sizes`).
        if name.starts_with("list_")
            && case.args.get("limit").is_some()
            && let Some(detail) = cut_unmarked(&case.args, ex)
        {
            out.push(fault("LIM-5", format!("{name}: {detail}")));
        }
    }
    let category = ex.structured().and_then(|s| s.pointer("/data/error/category")).and_then(Value::as_str);
    if must_refuse
        && ex.is_error()
        && let Some(category) = category.filter(|c| !REFUSALS.contains(c))
    {
        // Not refused for its arguments: the server went further with input it must not read.
        let what = what_of(target);
        let clause = clause_of(target);
        out.push(fault(
            clause,
            format!(
                "{name}: {what} answered {} (category {category}), not a validation refusal",
                ex.summary()
            ),
        ));
    }
    if must_refuse && !ex.is_error() {
        let what = what_of(target);
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
            out.push(fault(clause_of(target), format!("{name} accepted {what} ({})", ex.summary())));
        }
    }
    out
}

/// A member of `args` the fuzzer drew on a length edge of its schema in non-ASCII characters
/// (`strategy::string`, `crate::edges::length_edges`): its name, the clause of its bound and
/// its length in characters.
fn two_byte_edge(tool: &Tool, args: &Value) -> Option<(String, &'static str, usize)> {
    args.as_object()?.iter().find_map(|(field, value)| {
        // Non-ASCII but no astral character: a UTF-16 count (which the seed allows) refuses an
        // astral value on the bound, and random draws may hold one.
        let text = value.as_str().filter(|t| !t.is_ascii() && t.chars().all(|c| u32::from(c) <= 0xFFFF))?;
        let prop = tool.schema.pointer(&format!("/properties/{field}"))?;
        let chars = text.chars().count();
        let bound = |k: &str| prop.get(k).and_then(Value::as_u64).map(|b| b as usize);
        let mutation = if bound("maxLength") == Some(chars) {
            Mutation::TooLong(chars as u64)
        } else if bound("minLength") == Some(chars) {
            Mutation::TooShort(chars as u64)
        } else {
            return None;
        };
        let clause = super::schema::Target { field: field.clone(), mutation }.clause(&tool.name);
        Some((field.clone(), clause, chars))
    })
}

/// ENV-1 and ENV-4, as the envelope's steps judge one answer (`rules::envelope`): a success
/// holds data and meta with request_id, truncated and replayed, and one readable text block; an
/// error is flagged `isError` and carries its five members under `data.error` (a `data.error`
/// with some of them missing is `invariants::check`'s).
fn envelope(name: &str, ex: &Exchange) -> Vec<Fault> {
    use crate::rules::envelope as rules;
    let mut out = Vec::new();
    if ex.structured().is_none() {
        return out;
    }
    if rules::unflagged_error(ex) {
        out.push(fault(
            "ENV-4",
            format!("{name}: a data.error not flagged isError: true ({})", ex.summary()),
        ));
    } else if ex.is_error() {
        if ex.structured().and_then(|s| s.pointer("/data/error")).is_none() {
            let missing = rules::error_missing(ex);
            out.push(fault(
                "ENV-4",
                format!("{name}: an error without data.error (missing {})", missing.join(", ")),
            ));
        }
    } else if crate::rules::is_success(ex) {
        let missing = rules::success_missing(ex);
        if !missing.is_empty() {
            out.push(fault(
                "ENV-1",
                format!("{name}: a success whose structured content misses {}", missing.join(", ")),
            ));
        }
        // The judge's rule (`rules::records::no_text`): one judge for both.
        if let Some(detail) = crate::rules::records::no_text(ex) {
            out.push(fault("ENV-1", detail));
        }
    }
    out
}

/// ENV-2 over HTTP: an answer with a request_id carries it in the `x-request-id` header too
/// (`invariants::check` judges a header that differs; a missing one is judged here, as the step
/// `every answer carries its request_id in the x-request-id header` does).
fn id_header(ex: &Exchange) -> Vec<Fault> {
    let meta = ex.structured().and_then(|s| s.pointer("/meta/request_id")).and_then(Value::as_str);
    let header = ex.response().and_then(|r| r.header("x-request-id"));
    if ex.stdio || meta.is_none() || header.is_some() {
        return Vec::new();
    }
    let what = ex.tool.as_deref().unwrap_or(&ex.method);
    vec![fault("ENV-2", format!("{what}: an answer with meta.request_id and no x-request-id header"))]
}

/// What a call with forbidden arguments may be refused as: a validation error, or the refusals
/// a server that checks access before the input schema gives (AUTH-8's order is the
/// reference's, not the seed's), or its rate limit.
const REFUSALS: [&str; 5] = ["validation", "authentication", "authorization", "not_found", "rate_limit"];

/// PAG-8's default: conversation detail without `message_limit` returns at most 50 messages
/// (the judge holds every page to its `limit` and `message_limit`, `rules::records`).
fn page_sizes(name: &str, args: &Value, ex: &Exchange) -> Vec<Fault> {
    let Some(s) = ex.structured() else { return Vec::new() };
    if name != "get_conversation" || args.get("message_limit").is_some() {
        return Vec::new();
    }
    let n = s.pointer("/data/messages").and_then(Value::as_array).map_or(0, Vec::len);
    if n > DEFAULT_MESSAGE_LIMIT {
        return vec![fault(
            "PAG-8",
            format!("{name}: {n} messages in one answer (at most {DEFAULT_MESSAGE_LIMIT})"),
        )];
    }
    Vec::new()
}

/// AUTH-4 and AUTH-5 on a success, from what the dataset says of the IDs sent: a restaurant or
/// organization outside the persona's memberships is refused (AUTH-4); a child record addressed
/// through another restaurant than its own is not found, and a list of a restaurant holds only
/// its records, by their IDs whatever the server labels them (AUTH-5). IDs the dataset does not
/// know (created by the run) are not judged.
pub fn access(pools: &Pools, name: &str, args: &Value, ex: &Exchange) -> Vec<Fault> {
    let mut out = Vec::new();
    if !succeeded(ex) {
        return out;
    }
    for member in ["restaurant_id", "organization_id"] {
        if args.get(member).and_then(Value::as_str).is_some_and(|id| pools.foreign.contains(id)) {
            out.push(fault(
                "AUTH-4",
                format!("{name} served `{member}` of a tenant the caller is not a member of"),
            ));
            return out;
        }
    }
    // Judged by the IDs the dataset knows, never the server's own `restaurant_id` labels: a
    // record of a restaurant outside the caller's memberships, under whatever label.
    let data = ex.structured().and_then(|s| s.get("data")).and_then(Value::as_object);
    let records: Vec<&Value> = data
        .into_iter()
        .flat_map(|d| d.values())
        .flat_map(|v| match v {
            Value::Array(items) => items.iter().collect::<Vec<_>>(),
            other => vec![other],
        })
        .collect();
    let owner_of =
        |record: &Value| record.get("id").and_then(Value::as_str).and_then(|id| pools.restaurant_of.get(id));
    if records.iter().filter_map(|r| owner_of(r)).any(|own| pools.foreign.contains(own)) {
        out.push(fault(
            "AUTH-5",
            format!("{name} served a record of a restaurant outside the caller's memberships"),
        ));
        return out;
    }
    let Some(restaurant) = args.get("restaurant_id").and_then(Value::as_str) else { return out };
    if records.iter().filter_map(|r| owner_of(r)).any(|own| own != restaurant) {
        out.push(fault("AUTH-5", format!("{name} of one restaurant served another restaurant's records")));
        return out;
    }
    for member in ["order_id", "conversation_id", "transcript_id"] {
        let Some(id) = args.get(member).and_then(Value::as_str) else { continue };
        if pools.restaurant_of.get(id).is_some_and(|own| own != restaurant) {
            out.push(fault(
                "AUTH-5",
                format!("{name} served `{member}` through a restaurant that is not its own"),
            ));
            return out;
        }
    }
    let items = ex
        .structured()
        .and_then(|s| s.get("data"))
        .and_then(Value::as_object)
        .and_then(|d| d.values().find_map(Value::as_array));
    let stray =
        items.into_iter().flatten().filter_map(|i| i.get("restaurant_id")?.as_str()).any(|r| r != restaurant);
    if stray {
        out.push(fault("AUTH-5", format!("{name} of one restaurant listed another restaurant's records")));
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

/// Every rule of the judge's table (`crate::judge::RULES`: PROTO-1/2/4, ENV-2..7) that `ex`
/// breaks: the same rules, with the same applicability, as every scenario's exchange.
pub fn every_rule(ctx: &RunContext, ex: &Exchange, token: Option<&str>) -> Vec<Fault> {
    let seen = crate::judge::Seen { ex, token, published: Some(&ctx.published), tenancy: Some(&ctx.tenancy) };
    // An ext rule of a seed clause (ENV-5's codes this project added) is a difference from the
    // reference's choice: counted at the full level only.
    crate::judge::judge(&seen)
        .1
        .into_iter()
        .map(|b| Fault { choice: b.choice, ..Fault::new(b.clause, b.detail) })
        .collect()
}

/// The error code of a tool error.
pub fn error_code(ex: &Exchange) -> Option<&str> {
    ex.structured()?.pointer("/data/error/code")?.as_str()
}

/// A success: a result that is not a tool error.
pub fn succeeded(ex: &Exchange) -> bool {
    ex.result().is_some() && !ex.is_error()
}

/// LIM-2 on a refusal for the rate (`rules::rate_answer`): category rate_limit, retryable, and
/// (the reference's choice `retry-after`) a `retry_after_ms` > 0 to wait. Each broken rule, with
/// the choice it is a difference from, if any; read from the fields, never the message.
pub fn rate_refusal(name: &str, ex: &Exchange) -> Vec<(Fault, Option<&'static str>)> {
    let mut out = Vec::new();
    let Some(error) = ex.structured().and_then(|s| s.pointer("/data/error")) else { return out };
    if error.get("category").and_then(Value::as_str) != Some("rate_limit") {
        out.push((
            fault(
                "LIM-2",
                format!("{name}: a refusal for the rate whose category is not rate_limit ({})", ex.summary()),
            ),
            None,
        ));
    }
    if error.get("retryable").and_then(Value::as_bool) != Some(true) {
        out.push((
            fault("LIM-2", format!("{name}: a refusal for the rate not marked retryable ({})", ex.summary())),
            None,
        ));
    }
    if !crate::rules::asks_to_retry_later(ex) {
        out.push((
            fault(
                "LIM-2",
                format!("{name}: a rate-limit refusal without a retry_after_ms > 0 ({})", ex.summary()),
            ),
            Some("retry-after"),
        ));
    }
    out
}

/// LIM-5 on a page of a list called with `args` (`rules::cut_unmarked`, the matrices' rule too):
/// fewer items than its `limit` (20 without one) with a `next_cursor`, not marked truncated.
pub fn cut_unmarked(args: &Value, page: &Exchange) -> Option<String> {
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(DEFAULT_LIMIT as u64);
    let data = page.structured()?.get("data")?.as_object()?;
    let key = data.iter().find(|(_, v)| v.is_array()).map(|(k, _)| k.clone())?;
    crate::rules::cut_unmarked(page, &key, limit)
}

/// Whether `args` name, by what the dataset says, a restaurant or organization outside the
/// fuzzing persona's memberships, or a child record through another restaurant than its own: a
/// refusal of such a call is the rule (AUTH-4, AUTH-5), not something that stopped a sequence.
pub fn names_foreign(pools: &Pools, args: &Value) -> bool {
    let id = |member: &str| args.get(member).and_then(Value::as_str);
    if ["restaurant_id", "organization_id"].iter().any(|m| id(m).is_some_and(|i| pools.foreign.contains(i))) {
        return true;
    }
    let Some(restaurant) = id("restaurant_id") else { return false };
    ["order_id", "conversation_id", "transcript_id"]
        .iter()
        .filter_map(|m| id(m))
        .any(|child| pools.restaurant_of.get(child).is_some_and(|own| own != restaurant))
}
