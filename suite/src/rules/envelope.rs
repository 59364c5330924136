//! The envelope's rules on one answer (ENV-1, ENV-4), as the steps of `steps::outcome` state them
//! and the fuzzer applies them to every tool call it makes.

use serde_json::Value;

use crate::client::Exchange;

/// ENV-1, `the structured content holds data and meta with request_id, truncated and replayed`:
/// the members a success's structured content lacks.
pub fn success_missing(ex: &Exchange) -> Vec<&'static str> {
    let s = ex.structured();
    ["/data", "/meta", "/meta/request_id", "/meta/truncated", "/meta/replayed"]
        .into_iter()
        .filter(|p| s.and_then(|s| s.pointer(p)).is_none())
        .collect()
}

/// ENV-1, `the result has one text block a person can read`: exactly one non-empty text block,
/// prose rather than a JSON dump. `Err`: what the answer has instead.
pub fn one_readable_text(ex: &Exchange) -> Result<(), String> {
    match ex.texts().as_slice() {
        [text] if text.trim().is_empty() => Err("an empty text block".to_owned()),
        [text] if serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object() || v.is_array()) => {
            Err("a text block that is JSON".to_owned())
        }
        [_] => Ok(()),
        other => Err(format!("{} text blocks", other.len())),
    }
}

/// ENV-4, `the error carries a code, a category, a retryable flag, a message and a request_id`:
/// the members `data.error` lacks (all of them when there is no `data.error`).
pub fn error_missing(ex: &Exchange) -> Vec<&'static str> {
    let err = ex.structured().and_then(|s| s.pointer("/data/error"));
    ["code", "category", "retryable", "message", "request_id"]
        .into_iter()
        .filter(|k| err.and_then(|e| e.get(k)).is_none())
        .collect()
}

/// ENV-4, `the result is flagged as an error`, on an answer that is one: a structured
/// `data.error` with a code, and `isError` not true.
pub fn unflagged_error(ex: &Exchange) -> bool {
    ex.structured().and_then(|s| s.pointer("/data/error/code")).is_some() && !ex.is_error()
}
