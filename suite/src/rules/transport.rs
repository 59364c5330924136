//! The transport's, the JSON-RPC envelope's and the HTTP edge's rules, as pure functions of one
//! exchange: the steps of `steps::transport`, `steps::protocol`, `steps::auth` and
//! `steps::catalogue` judge with them, and so does the fuzzer's transport family
//! (`fuzz::transport`), so the two cannot drift apart. No rule reads the wording of a message.
//!
//! A rule returns `Err(Miss)`: what was expected, and what was seen (the exchange's summary
//! unless the rule says more). A rule whose reading is the reference's choice returns
//! `Ok(Some(difference))` when the server made another choice the seed allows.

use std::ops::RangeInclusive;

use chataigne_contract::ToolName;
use serde_json::{Value, json};

use crate::client::Exchange;

/// MCP's published revisions: what "another protocol version it supports" can be.
pub const MCP_REVISIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// A rule broken: what it expected, and what the exchange showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    pub expected: String,
    pub got: String,
}

impl Miss {
    fn of(ex: &Exchange, expected: impl Into<String>) -> Miss {
        Miss { expected: expected.into(), got: ex.summary() }
    }
}

pub type Rule<T = ()> = Result<T, Miss>;

/// Lifecycle, "Version Negotiation": a server that does not serve the version asked for answers
/// with another MCP revision.
pub fn offers_other_version(ex: &Exchange, asked: &str) -> Rule {
    let got = ex.result().and_then(|r| r.get("protocolVersion")).and_then(Value::as_str);
    match got {
        Some(v) if v != asked && MCP_REVISIONS.contains(&v) => Ok(()),
        _ => Err(Miss::of(
            ex,
            format!("an initialize result whose protocolVersion is an MCP revision other than {asked}"),
        )),
    }
}

/// The server agrees on the version asked for (`@ext-protocol-versions` for the contract's
/// versions: a reference choice).
pub fn agrees_on_version(ex: &Exchange, version: &str) -> Rule {
    let got = ex.result().and_then(|r| r.get("protocolVersion")).and_then(Value::as_str);
    if got == Some(version) {
        Ok(())
    } else {
        Err(Miss::of(ex, format!("an initialize result with protocolVersion {version}")))
    }
}

/// A refusal: an HTTP status in `statuses` and no JSON-RPC result (nothing was served).
pub fn refused(ex: &Exchange, statuses: RangeInclusive<u16>, expected: &str) -> Rule {
    if ex.status().is_some_and(|s| statuses.contains(&s)) && ex.result().is_none() {
        Ok(())
    } else {
        Err(Miss::of(ex, format!("{expected} with no JSON-RPC result")))
    }
}

/// `refused` with one status: 400 Bad Request or 404 Not Found.
pub fn refused_with_status(ex: &Exchange, status: u16) -> Rule {
    let name = match status {
        400 => "Bad Request",
        404 => "Not Found",
        _ => "",
    };
    refused(ex, status..=status, format!("HTTP {status} {name}").trim_end())
}

/// JSON-RPC 2.0 §5 and MCP's "Responses": the answer has the request's id, with its type.
pub fn carries_id(ex: &Exchange, want: &Value) -> Rule {
    match ex.message().and_then(|m| m.get("id")) {
        Some(got) if got == want => Ok(()),
        _ => Err(Miss::of(ex, format!("a JSON-RPC answer with id {want}"))),
    }
}

/// The notification the suite sends to see it accepted: cancelling a request the server never
/// saw, which a receiver may ignore (MCP "Cancellation").
pub fn unanswerable_notification() -> (&'static str, Value) {
    ("notifications/cancelled", json!({ "requestId": "chataigne-never-sent", "reason": "conformance check" }))
}

/// Streamable HTTP, "Sending Messages to the Server": 202 Accepted and no body.
pub fn accepted_without_body(ex: &Exchange) -> bool {
    ex.status() == Some(202) && ex.response().is_some_and(|r| r.body_bytes == 0)
}

pub fn accepted(ex: &Exchange) -> Rule {
    if accepted_without_body(ex) { Ok(()) } else { Err(Miss::of(ex, "HTTP 202 Accepted with no body")) }
}

/// `resource_metadata="<url>"` out of a `WWW-Authenticate: Bearer …` header.
fn resource_metadata(header: &str) -> Option<&str> {
    let rest = header.split("resource_metadata=").nth(1)?;
    let rest = rest.strip_prefix('"')?;
    rest.split('"').next()
}

/// AUTH-1, AUTH-2: HTTP 401 with `WWW-Authenticate: Bearer resource_metadata="<url>"`; the URL.
pub fn bearer_challenge(ex: &Exchange) -> Rule<String> {
    let header = ex.response().and_then(|r| r.header("www-authenticate")).unwrap_or_default().to_owned();
    let expected = "HTTP 401 with WWW-Authenticate: Bearer resource_metadata=\"<url>\"";
    if ex.status() != Some(401) || !header.trim_start().to_ascii_lowercase().starts_with("bearer") {
        return Err(Miss {
            expected: expected.to_owned(),
            got: format!("{}; WWW-Authenticate {header:?}", ex.summary()),
        });
    }
    match resource_metadata(&header) {
        Some(url) if url.starts_with("http") => Ok(url.to_owned()),
        _ => Err(Miss { expected: expected.to_owned(), got: format!("WWW-Authenticate {header:?}") }),
    }
}

/// RFC 9728 puts the protected resource metadata on the resource's own origin: whether `url` is
/// on the origin of `endpoint` (a URL elsewhere is not fetched: a server under test would make
/// the runner fetch anything it can reach).
pub fn on_endpoint_origin(url: &str, endpoint: &str) -> bool {
    let origin = |u: &str| u.parse::<reqwest::Url>().ok().map(|u| u.origin().ascii_serialization());
    origin(endpoint).is_some() && origin(url) == origin(endpoint)
}

/// AUTH-1, `the answer is HTTP 401 with a bearer challenge naming the resource metadata` then
/// `they fetch the protected resource metadata`: the challenge's URL is on the endpoint's origin.
pub fn challenge_on_origin(ex: &Exchange, endpoint: &str) -> Rule<String> {
    let url = bearer_challenge(ex)?;
    if on_endpoint_origin(&url, endpoint) {
        return Ok(url);
    }
    Err(Miss {
        expected: "a bearer challenge whose resource_metadata is on the endpoint's origin".to_owned(),
        got: "a resource_metadata URL on another origin".to_owned(),
    })
}

/// Not a 5xx, and a JSON-RPC error with `code`.
/// Streamable HTTP, "Listening for Messages from the Server": a GET asking for an event stream
/// gets one (HTTP 200, `text/event-stream`) or 405 Method Not Allowed, nothing else.
pub fn stream_or_405(ex: &Exchange) -> Rule {
    let stream = ex.status() == Some(200)
        && ex.response().is_some_and(|r| r.content_type.starts_with("text/event-stream"));
    if stream || ex.status() == Some(405) {
        Ok(())
    } else {
        Err(Miss {
            expected: "HTTP 200 with text/event-stream, or 405 Method Not Allowed".to_owned(),
            got: ex.summary(),
        })
    }
}

pub fn rpc_error(ex: &Exchange, code: i64) -> Rule {
    let expected = format!("JSON-RPC error {code}, without a 5xx");
    if ex.status().is_some_and(|s| s >= 500) {
        return Err(Miss::of(ex, expected));
    }
    match ex.rpc_error().and_then(|e| e.get("code")).and_then(Value::as_i64) {
        Some(c) if c == code => Ok(()),
        _ => Err(Miss::of(ex, expected)),
    }
}

/// MCP *Ping*: answered, promptly, with an empty result (`{}`; `_meta` aside).
pub fn empty_result(ex: &Exchange) -> Rule {
    let expected = "an empty result {}, without a 5xx";
    if ex.status().is_some_and(|s| s >= 500) || ex.result().is_none() {
        return Err(Miss::of(ex, expected));
    }
    match crate::invariants::ping_result(ex) {
        None => Ok(()),
        Some(_) => Err(Miss::of(ex, expected)),
    }
}

/// AUTH-1: the protected resource metadata names its resource, at least one authorization
/// server and every scope of the contract (§7). What it lacks, when it does.
pub fn metadata_content(doc: &Value) -> Result<(), String> {
    let servers = doc.get("authorization_servers").and_then(Value::as_array).map_or(0, Vec::len);
    let scopes: Vec<&str> = doc
        .get("scopes_supported")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let missing: Vec<&str> =
        chataigne_contract::tools::SCOPES.iter().copied().filter(|s| !scopes.contains(s)).collect();
    if servers > 0 && missing.is_empty() && doc.get("resource").is_some() {
        return Ok(());
    }
    Err(format!(
        "{servers} authorization servers, scopes missing: [{}], document {}",
        missing.join(", "),
        crate::client::compact(doc, 600)
    ))
}

/// What [`metadata_content`] expects, as a finding states it.
pub const METADATA_CONTENT: &str =
    "resource, authorization_servers (at least one) and scopes_supported (every scope of §7)";

/// RFC 9728 §3.3: the metadata's `resource` is the protected resource's identifier, the MCP
/// endpoint's own URL (compared as URLs: scheme and host case, a default port). What it names
/// instead, when it does not.
pub fn names_endpoint(doc: &Value, endpoint: &str) -> Result<(), String> {
    let named = doc.get("resource").and_then(Value::as_str);
    let parse = |u: &str| reqwest::Url::parse(u).ok();
    match named {
        Some(r) if parse(r).is_some() && parse(r) == parse(endpoint) => Ok(()),
        Some(r) => Err(format!("resource {}", crate::client::cut(r, 200))),
        None => Err("no resource string".to_owned()),
    }
}

pub fn status_is(ex: &Exchange, status: u16) -> Rule {
    if ex.status() == Some(status) { Ok(()) } else { Err(Miss::of(ex, format!("HTTP {status}"))) }
}

pub fn status_is_not(ex: &Exchange, status: u16) -> Rule {
    match ex.status() {
        Some(s) if s != status => Ok(()),
        _ => Err(Miss::of(ex, format!("an answer other than HTTP {status}"))),
    }
}

pub fn no_server_error(ex: &Exchange) -> Rule {
    match ex.status() {
        Some(s) if s < 500 => Ok(()),
        _ => Err(Miss::of(ex, "an answer below HTTP 500")),
    }
}

/// A request the server must not run (a `tools/call` without its `params`): no JSON-RPC result
/// and no server error; how it is refused (an HTTP 4xx, a JSON-RPC error and its code) is not
/// judged: the SDKs differ (docs/DECISIONS.md).
pub fn not_served(ex: &Exchange) -> Rule {
    let fine = ex.response().is_some() && ex.result().is_none() && ex.status().is_none_or(|s| s < 500);
    if fine { Ok(()) } else { Err(Miss::of(ex, "a refusal (no JSON-RPC result, no server error)")) }
}

/// PROTO-5 for a foreign Host: any 4xx that did not run the request (the MCP SDKs answer 403 or
/// 421); another status than 403 is a difference from the reference's choice `host-validation`.
pub fn refused_4xx_host(ex: &Exchange) -> Rule<Option<String>> {
    match ex.status() {
        Some(status @ 400..=499) if ex.result().is_none() => {
            Ok((status != 403).then(|| format!("refused with HTTP {status}, not 403")))
        }
        _ => Err(Miss::of(ex, "an HTTP 4xx refusal with no JSON-RPC result (403 the reference)")),
    }
}

/// PROTO-2 for a JSON array body, a JSON-RPC batch: MCP dropped batching in 2025-06-18, so the
/// revisions served have no such message. Never a 5xx or no answer; refused with a 4xx is the
/// reference's choice `no-batches` (the TypeScript SDK runs a batch: a difference, not a miss).
pub fn batch_refused(ex: &Exchange) -> Rule<Option<String>> {
    match ex.status() {
        Some(400..=499) if ex.result().is_none() => Ok(None),
        Some(status @ 100..=499) => Ok(Some(format!("a batch answered with HTTP {status}, not refused"))),
        _ => Err(Miss::of(ex, "an answer below HTTP 500 (a 4xx refusal the reference's)")),
    }
}

/// PROTO-2 over Streamable HTTP for a body the server cannot accept: an HTTP 4xx and no result;
/// JSON-RPC's own `code` is the reference's choice `jsonrpc-error-codes` (a difference otherwise).
pub fn refused_with_rpc_code(ex: &Exchange, code: i64) -> Rule<Option<String>> {
    let expected =
        format!("an HTTP 4xx refusal with no JSON-RPC result (JSON-RPC error {code} the reference)");
    let Some(status @ 400..=499) = ex.status() else { return Err(Miss::of(ex, expected)) };
    if ex.result().is_some() {
        return Err(Miss::of(ex, expected));
    }
    Ok(match ex.rpc_error().and_then(|e| e.get("code")).and_then(Value::as_i64) {
        Some(c) if c == code => None,
        Some(other) => Some(format!("HTTP {status} with JSON-RPC error {other}, not {code}")),
        None => Some(format!("HTTP {status} with no JSON-RPC error, not {code}")),
    })
}

/// ABS-1: `tools/list` offers exactly the contract's tools, each once.
pub fn exactly_the_contract_tools(listed: &[&str]) -> Rule {
    let extra: Vec<&str> = listed.iter().copied().filter(|n| ToolName::parse(n).is_none()).collect();
    let missing: Vec<&str> =
        ToolName::ALL.iter().map(|t| t.as_str()).filter(|n| !listed.contains(n)).collect();
    if extra.is_empty() && missing.is_empty() && listed.len() == ToolName::ALL.len() {
        return Ok(());
    }
    Err(Miss {
        expected: format!("the {} tools of the contract, each once", ToolName::ALL.len()),
        got: format!(
            "{} tools; not in the contract: [{}]; missing: [{}]",
            listed.len(),
            extra.join(", "),
            missing.join(", ")
        ),
    })
}

/// LIM-7's body: a valid `search_transcripts` call of `restaurant` whose body is exactly `size`
/// bytes, padded in its query; `None` when `size` is below the smallest such body.
pub fn sized_tools_call(id: u64, restaurant: &str, size: usize) -> Result<Vec<u8>, usize> {
    let body = |pad: &str| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "search_transcripts", "arguments": { "restaurant_id": restaurant, "query": pad } },
        })
        .to_string()
    };
    let base = body("").len();
    let pad = size.checked_sub(base).ok_or(base)?;
    Ok(body(&"a".repeat(pad)).into_bytes())
}

/// [`sized_tools_call`] padded with spaces after its opening brace instead (a one-character
/// query): `size` bytes sent, a message of a few hundred once parsed.
pub fn whitespace_tools_call(id: u64, restaurant: &str, size: usize) -> Result<Vec<u8>, usize> {
    let small = sized_tools_call(id, restaurant, 0).unwrap_err() + 1;
    let body = sized_tools_call(id, restaurant, small)?;
    let pad = size.checked_sub(body.len()).ok_or(body.len())?;
    let mut out = Vec::with_capacity(size);
    out.push(b'{');
    out.resize(1 + pad, b' ');
    out.extend_from_slice(&body[1..]);
    Ok(out)
}

/// The 2026-07-28 mirror-header cases of `transport.feature`, and the header each changes
/// (an empty value removes it).
pub const MIRROR_CASES: [(&str, (&str, &str)); 5] = [
    ("an Mcp-Method header naming another method", ("mcp-method", "tools/list")),
    ("no Mcp-Method header", ("mcp-method", "")),
    ("an Mcp-Name header naming another tool", ("mcp-name", "list_orders")),
    ("no Mcp-Name header", ("mcp-name", "")),
    ("an MCP-Protocol-Version header naming another version", ("mcp-protocol-version", "2025-11-25")),
];

/// The header override of a mirror case, by its words in the feature.
pub fn mirror_override(case: &str) -> Option<(&'static str, &'static str)> {
    MIRROR_CASES.iter().find(|(c, _)| *c == case).map(|(_, o)| *o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whitespace_padded_call_is_its_size_and_small_once_parsed() {
        let body = super::whitespace_tools_call(7, "rst_x", 5000).unwrap();
        assert_eq!(body.len(), 5000);
        let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(parsed.to_string().len() < 300);
        assert_eq!(parsed["params"]["arguments"]["query"], "a");
    }

    #[test]
    fn the_metadata_names_the_endpoint_it_protects() {
        let check = |resource: Value, ok: bool| {
            let doc = serde_json::json!({ "resource": resource });
            assert_eq!(names_endpoint(&doc, "http://127.0.0.1:8080/mcp").is_ok(), ok, "{doc}");
        };
        check("http://127.0.0.1:8080/mcp".into(), true);
        check("HTTP://127.0.0.1:8080/mcp".into(), true);
        check("http://127.0.0.1:8080".into(), false);
        check("http://127.0.0.1:8080/".into(), false);
        check("http://127.0.0.1:9090/mcp".into(), false);
        check(Value::Null, false);
    }

    fn ex(status: u16, headers: &[(&str, &str)], message: Option<Value>, body_bytes: usize) -> Exchange {
        let body = message.as_ref().map(Value::to_string).unwrap_or_default();
        let mut ex = Exchange::answered_for_test(message);
        (ex.persona, ex.method, ex.tool) = (None, "raw".to_owned(), None);
        let response = ex.response_mut_for_test();
        response.status = Some(status);
        response.headers = headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        (response.body, response.body_bytes) = (body, body_bytes);
        ex
    }

    fn result(id: Value, result: Value) -> Option<Value> {
        Some(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
    }

    fn error(id: Value, code: i64) -> Option<Value> {
        Some(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": "m" } }))
    }

    #[test]
    fn ids_keep_their_type() {
        let zero = ex(200, &[], result(json!(0), json!({})), 10);
        assert!(carries_id(&zero, &json!(0)).is_ok());
        // zero-id-dropped and string-id-as-number
        assert!(carries_id(&ex(200, &[], result(Value::Null, json!({})), 10), &json!(0)).is_err());
        assert!(carries_id(&ex(200, &[], result(json!(7), json!({})), 10), &json!("7")).is_err());
    }

    #[test]
    fn versions() {
        let agreed = |v: &str| ex(200, &[], result(json!(1), json!({ "protocolVersion": v })), 10);
        assert!(offers_other_version(&agreed("2025-06-18"), "1999-01-01").is_ok());
        // version-echoed
        assert!(offers_other_version(&agreed("1999-01-01"), "1999-01-01").is_err());
        assert!(offers_other_version(&agreed("2030-01-01"), "1999-01-01").is_err());
        assert!(agrees_on_version(&agreed("2025-11-25"), "2025-11-25").is_ok());
        // old-protocol-only
        assert!(agrees_on_version(&agreed("2025-03-26"), "2025-11-25").is_err());
    }

    #[test]
    fn refusals() {
        assert!(refused_with_status(&ex(400, &[], error(Value::Null, -32600), 10), 400).is_ok());
        // version-header-ignored, mirror-headers-ignored: served
        assert!(refused_with_status(&ex(200, &[], result(json!(1), json!({})), 10), 400).is_err());
        // a 400 that served anyway is no refusal
        assert!(refused_with_status(&ex(400, &[], result(json!(1), json!({})), 10), 400).is_err());
        assert_eq!(refused_4xx_host(&ex(403, &[], None, 0)), Ok(None));
        assert!(matches!(refused_4xx_host(&ex(421, &[], None, 0)), Ok(Some(_))));
        // host-unchecked
        assert!(refused_4xx_host(&ex(200, &[], result(json!(1), json!({})), 10)).is_err());
        assert!(status_is(&ex(403, &[], None, 0), 403).is_ok());
        // origin-unchecked
        assert!(status_is(&ex(200, &[], result(json!(1), json!({})), 10), 403).is_err());
    }

    #[test]
    fn notifications() {
        assert!(accepted(&ex(202, &[], None, 0)).is_ok());
        // notification-answered
        assert!(accepted(&ex(200, &[], result(Value::Null, json!({})), 10)).is_err());
        assert!(accepted(&ex(202, &[], None, 3)).is_err());
    }

    #[test]
    fn challenges() {
        let header = [("www-authenticate", "Bearer resource_metadata=\"http://h/.well-known/x\"")];
        assert_eq!(bearer_challenge(&ex(401, &header, None, 0)).as_deref(), Ok("http://h/.well-known/x"));
        assert!(bearer_challenge(&ex(401, &[("www-authenticate", "Bearer")], None, 0)).is_err());
        // no-authentication, audience-unchecked: served
        assert!(bearer_challenge(&ex(200, &[], result(json!(1), json!({})), 10)).is_err());
    }

    #[test]
    fn envelope_refusals() {
        assert_eq!(refused_with_rpc_code(&ex(400, &[], error(Value::Null, -32600), 10), -32600), Ok(None));
        assert!(matches!(
            refused_with_rpc_code(&ex(400, &[], error(Value::Null, -32700), 10), -32600),
            Ok(Some(_))
        ));
        assert!(refused_with_rpc_code(&ex(200, &[], result(json!(1), json!({})), 10), -32600).is_err());
        assert!(rpc_error(&ex(200, &[], error(json!(1), -32602), 10), -32602).is_ok());
        assert!(rpc_error(&ex(500, &[], error(json!(1), -32602), 10), -32602).is_err());
        assert!(no_server_error(&ex(502, &[], None, 0)).is_err());
        assert!(not_served(&ex(200, &[], error(json!(1), -32603), 10)).is_ok());
        assert!(not_served(&ex(400, &[], None, 0)).is_ok());
        assert!(not_served(&ex(200, &[], result(json!(1), json!({})), 10)).is_err());
        assert!(not_served(&ex(500, &[], None, 0)).is_err());
        // body-unbounded
        assert!(status_is(&ex(200, &[], result(json!(1), json!({})), 10), 413).is_err());
        assert!(status_is_not(&ex(200, &[], None, 0), 413).is_ok());
    }

    #[test]
    fn sized_bodies_are_exact() {
        let body = sized_tools_call(3, "rst_x", 1_048_577).expect("large enough");
        assert_eq!(body.len(), 1_048_577);
        assert!(serde_json::from_slice::<Value>(&body).is_ok());
        assert!(sized_tools_call(3, "rst_x", 10).is_err());
    }

    #[test]
    fn the_catalogue() {
        let mut names: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
        assert!(exactly_the_contract_tools(&names).is_ok());
        // cancel-tool-exposed
        names.push("cancel_order");
        assert!(exactly_the_contract_tools(&names).is_err());
        assert_eq!(mirror_override("no Mcp-Name header"), Some(("mcp-name", "")));
    }
}
