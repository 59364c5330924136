//! Rules of the envelope checked on every exchange of every scenario, each filed under its own
//! clause (the way output-schema violations are filed under PROTO-4): a bug shows up wherever it
//! happens, not only in the scenario written for it, and is blamed on the clause it breaks.
//!
//! - ENV-2: every request_id is well-formed and, over HTTP, equal to the `x-request-id` header
//!   (uniqueness across the run is checked by the runner, which sees every scenario);
//! - ENV-3: every text summary ≤ 4 KiB and structured output ≤ 128 KiB;
//! - ENV-4: an error's two request_ids match;
//! - ENV-4: an error carries code, category, retryable, message and request_id;
//! - ENV-5: every category is one of the nine, every code of the table has its fixed category and
//!   retryable flag (a code of the server's own keeps one of each across the run: the runner);
//! - ENV-6: no error message or error summary holds a string argument the call sent, or the token.
//!
//! And two of the transport's, on every request the suite makes ([`check_protocol`]):
//! - PROTO-1: an HTTP request served with a 2xx is answered as `application/json` or
//!   `text/event-stream` (Streamable HTTP, "Sending Messages to the Server");
//! - PROTO-2: the answer carries the request's `id`, with its type (JSON-RPC 2.0 §5; MCP basic
//!   protocol, "Responses"). A refusal with an HTTP error status may carry none or `null`: the
//!   transport allows an error body "that has no id".

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

/// The transport's rules `ex` breaks: requests the suite built itself (raw bodies are odd on
/// purpose), over HTTP, served with a 2xx.
pub fn check_protocol(ex: &Exchange) -> Vec<Violation> {
    let mut out = Vec::new();
    let (Some(id), Some(resp)) = (ex.rpc_id, ex.response()) else { return out };
    let Some(status @ 200..=299) = resp.status else { return out };
    if ex.method == "raw" || ex.stdio {
        return out;
    }
    let what = ex.tool.as_deref().unwrap_or(&ex.method);
    let mut push = |clause: &'static str, detail: String| out.push(Violation { clause, detail });
    let json = resp.content_type.starts_with("application/json");
    let sse = resp.content_type.starts_with("text/event-stream");
    if !json && !sse {
        let ct = if resp.content_type.is_empty() { "none" } else { resp.content_type.as_str() };
        push(
            "PROTO-1",
            format!(
                "{what} answered with HTTP {status} and Content-Type {ct}: a request's answer is \
                 application/json or text/event-stream"
            ),
        );
    }
    let want = Value::from(id);
    match ex.message() {
        Some(m) if m.get("id") != Some(&want) => push(
            "PROTO-2",
            format!("{what} was answered with id {}; the request's id was {id}", compact_id(m.get("id"))),
        ),
        Some(_) => {}
        None => {
            // No answer to this request was found: one to another id is a correlation fault.
            let found = if json {
                serde_json::from_str::<Value>(&resp.body).ok().into_iter().collect()
            } else if sse {
                crate::client::sse_messages(&resp.body)
            } else {
                Vec::new()
            };
            let answer = |m: &&Value| m.get("result").is_some() || m.get("error").is_some();
            if let Some(other) = found.iter().filter(answer).find(|m| m.get("id") != Some(&want)) {
                push(
                    "PROTO-2",
                    format!(
                        "{what} was answered with id {}; the request's id was {id}",
                        compact_id(other.get("id"))
                    ),
                );
            }
        }
    }
    out
}

fn compact_id(id: Option<&Value>) -> String {
    id.map_or_else(|| "missing".to_owned(), |v| crate::client::compact(v, 80))
}

/// The rules `ex` breaks. `token` is the bearer token the call was made with.
pub fn check(ex: &Exchange, token: Option<&str>) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(tool) = ex.tool.as_deref() else { return out };
    let Some(result) = ex.result() else { return out };
    let rid = ex.request_id().unwrap_or("no request_id");
    let mut push = |clause: &'static str, what: String| {
        out.push(Violation { clause, detail: format!("{tool} ({rid}): {what}") })
    };

    let text_bytes = ex.text_bytes();
    let structured = result.get("structuredContent");
    let structured_bytes = ex.structured_bytes();
    if text_bytes > MAX_SUMMARY_BYTES {
        push("ENV-3", format!("text summary of {text_bytes} bytes (at most {MAX_SUMMARY_BYTES})"));
    }
    if structured_bytes > MAX_STRUCTURED_BYTES {
        push(
            "ENV-3",
            format!("structured output of {structured_bytes} bytes (at most {MAX_STRUCTURED_BYTES})"),
        );
    }
    let Some(structured) = structured else { return out };

    let meta_id = structured.pointer("/meta/request_id").and_then(Value::as_str);
    if let Some(id) = meta_id {
        if !envelope::is_request_id(id) {
            push("ENV-2", "meta.request_id does not match ^req_[0-9A-Za-z]{16,}$".to_owned());
        }
        if let Some(header) = ex.response().and_then(|r| r.header("x-request-id"))
            && !ex.stdio
            && header != id
        {
            push("ENV-2", "the x-request-id header differs from meta.request_id".to_owned());
        }
    }

    if !ex.is_error() {
        return out;
    }
    let error = structured.pointer("/data/error");
    let inner_id = error.and_then(|e| e.get("request_id")).and_then(Value::as_str);
    if inner_id.is_some() && inner_id != meta_id {
        push("ENV-4", "data.error.request_id differs from meta.request_id".to_owned());
    }
    if let Some(error) = error {
        let code = error.get("code").and_then(Value::as_str);
        let category = error.get("category").and_then(Value::as_str);
        let retryable = error.get("retryable").and_then(Value::as_bool);
        match (code, category.map(category_named), retryable) {
            (Some(code), Some(Some(category)), Some(retryable)) => match ErrorCode::parse(code) {
                Some(known) if category != known.category() || retryable != known.retryable() => push(
                    "ENV-5",
                    format!(
                        "{code} with category {}, retryable {retryable} (the table: {}, {})",
                        category.as_str(),
                        known.category().as_str(),
                        known.retryable()
                    ),
                ),
                Some(_) => {}
                // A code of the server's own (the seed leaves some open): its category and flag
                // must be the same wherever it appears, which the runner checks across the run.
                None => {}
            },
            (_, Some(None), _) => {
                push("ENV-5", format!("category {:?} is not one of the nine", category.unwrap_or_default()))
            }
            _ => {
                let missing: Vec<&str> = ["code", "category", "retryable", "message", "request_id"]
                    .into_iter()
                    .filter(|k| error.get(k).is_none())
                    .collect();
                push("ENV-4", format!("data.error without {}", missing.join(", ")));
            }
        }
    }
    let message = error.and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or_default();
    let texts = ex.texts();
    let places: Vec<(&str, &str)> = std::iter::once(("the error message", message))
        .chain(texts.iter().map(|t| ("the text summary", *t)))
        .collect();
    for (i, sent) in ex.sent_strings.iter().enumerate() {
        if let Some((place, _)) = places.iter().find(|(_, text)| text.contains(sent.as_str())) {
            push("ENV-6", format!("{place} echoes string argument #{} the call sent", i + 1));
        }
    }
    if let Some(token) = token.filter(|t| !t.is_empty())
        && let Some((place, _)) = places.iter().find(|(_, text)| text.contains(token))
    {
        push("ENV-6", format!("{place} echoes the bearer token"));
    }
    out
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

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;

    fn answered(error: Value, arguments: Value) -> Exchange {
        let rid = "req_0123456789abcdefAB";
        let mut error = error;
        error["request_id"] = json!(rid);
        let message = json!({ "jsonrpc": "2.0", "id": 1, "result": {
            "isError": true,
            "content": [{ "type": "text", "text": "refused" }],
            "structuredContent": { "data": { "error": error }, "meta": { "request_id": rid } },
        }});
        let mut ex = Exchange::answered_for_test(Some(message));
        ex.response_mut_for_test().headers = vec![("x-request-id".into(), rid.into())];
        ex.sent_strings = crate::client::sent_strings(&arguments);
        ex
    }

    fn clauses(ex: &Exchange) -> Vec<&'static str> {
        check(ex, Some("secret-token-123")).into_iter().map(|v| v.clause).collect()
    }

    fn protocol_clauses(ex: &Exchange) -> Vec<&'static str> {
        check_protocol(ex).into_iter().map(|v| v.clause).collect()
    }

    #[test]
    fn an_answer_is_json_or_an_event_stream_with_the_requests_id() {
        let ok = answered(json!({}), json!({}));
        assert_eq!(protocol_clauses(&ok), Vec::<&str>::new());
        let mut as_text = ok.clone();
        if let Ok(r) = &mut as_text.outcome {
            r.content_type = "text/plain".into();
        }
        assert_eq!(protocol_clauses(&as_text), ["PROTO-1"]);
        // Ids of another request, of another type, or null on a served request.
        for id in [json!(2), json!("1"), Value::Null] {
            let mut other = ok.clone();
            if let Ok(r) = &mut other.outcome {
                r.message.as_mut().unwrap()["id"] = id.clone();
            }
            assert_eq!(protocol_clauses(&other), ["PROTO-2"], "id {id}");
        }
        // An answer the reader set aside as another request's is still a correlation fault.
        let mut unmatched = ok.clone();
        if let Ok(r) = &mut unmatched.outcome {
            let mut m = r.message.take().unwrap();
            m["id"] = json!(7);
            r.body = format!("event: message\ndata: {m}\n\n");
            r.content_type = "text/event-stream".into();
        }
        assert_eq!(protocol_clauses(&unmatched), ["PROTO-2"]);
        // A refusal with an HTTP error status may carry a null id (the transport allows it);
        // a raw body the suite made odd on purpose is not judged here.
        let mut refused = ok.clone();
        if let Ok(r) = &mut refused.outcome {
            r.status = Some(400);
            r.message.as_mut().unwrap()["id"] = Value::Null;
        }
        assert_eq!(protocol_clauses(&refused), Vec::<&str>::new());
        let mut raw = as_text;
        raw.method = "raw".into();
        assert_eq!(protocol_clauses(&raw), Vec::<&str>::new());
    }

    #[test]
    fn a_code_of_the_servers_own_is_data_not_a_failure() {
        let error = json!({ "code": "INVALID_ARGUMENT", "category": "validation", "retryable": false,
            "message": "The arguments were rejected by the input schema" });
        let ex = answered(error, json!({ "restaurant_id": "rst_central", "status": "rejected", "limit": 0 }));
        assert_eq!(clauses(&ex), Vec::<&str>::new());
        assert_eq!(code_of_its_own(&ex), Some(("INVALID_ARGUMENT".into(), Category::Validation, false)));
    }

    #[test]
    fn a_table_code_off_its_row_or_an_unknown_category_is_env_5() {
        let error = json!({ "code": "MCP_CURSOR_INVALID", "category": "conflict", "retryable": false,
            "message": "no" });
        assert_eq!(clauses(&answered(error, json!({}))), ["ENV-5"]);
        let error = json!({ "code": "INVALID_ARGUMENT", "category": "bad_input", "retryable": false,
            "message": "no" });
        let ex = answered(error, json!({}));
        assert_eq!(clauses(&ex), ["ENV-5"]);
        assert_eq!(code_of_its_own(&ex), None);
    }

    #[test]
    fn an_error_without_its_members_is_env_4() {
        let ex = answered(json!({ "code": "MCP_CURSOR_INVALID", "message": "no" }), json!({}));
        assert_eq!(clauses(&ex), ["ENV-4"]);
    }

    #[test]
    fn an_echo_is_what_the_caller_sent() {
        let error = json!({ "code": "MCP_RESOURCE_FORBIDDEN", "category": "authorization",
            "retryable": false, "message": "Restaurant rst_central is not yours" });
        assert_eq!(clauses(&answered(error, json!({ "restaurant_id": "rst_central" }))), ["ENV-6"]);
        let error = json!({ "code": "MCP_RESOURCE_FORBIDDEN", "category": "authorization",
            "retryable": false, "message": "token secret-token-123 refused" });
        assert_eq!(clauses(&answered(error, json!({}))), ["ENV-6"]);
    }
}
