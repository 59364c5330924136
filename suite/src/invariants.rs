//! Rules of the envelope checked on every exchange of every scenario, each filed under its own
//! clause (the way output-schema violations are filed under PROTO-4): a bug shows up wherever it
//! happens, not only in the scenario written for it, and is blamed on the clause it breaks.
//!
//! - ENV-2: every request_id is well-formed and, over HTTP, equal to the `x-request-id` header
//!   (uniqueness across the run is checked by the runner, which sees every scenario);
//! - ENV-3: every text summary ≤ 4 KiB and structured output ≤ 128 KiB;
//! - ENV-4: an error's two request_ids match;
//! - ENV-5: every code of the table has its fixed category and retryable flag;
//! - ENV-6: no error message or error summary holds a string argument the call sent, or the token.

use chataigne_contract::envelope::{self, Parsed};
use chataigne_contract::{ErrorCode, MAX_STRUCTURED_BYTES, MAX_SUMMARY_BYTES};
use serde_json::Value;

use crate::client::Exchange;

/// One broken rule: the clause and what was seen (no sensitive value: an echo is named by the
/// argument's position, never shown).
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub clause: &'static str,
    pub detail: String,
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
    if let Ok(Parsed::Error(body)) = envelope::parse(structured) {
        let code: ErrorCode = body.code;
        if body.category != code.category() || body.retryable != code.retryable() {
            push(
                "ENV-5",
                format!(
                    "{code} with category {}, retryable {} (the table: {}, {})",
                    body.category.as_str(),
                    body.retryable,
                    code.category().as_str(),
                    code.retryable()
                ),
            );
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
