//! The response envelope (ENV-1, ENV-4): the shapes both sides read and write.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Category, Code, ErrorCode};

/// `meta` of a successful call (ENV-1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    pub truncated: bool,
    pub replayed: bool,
}

impl Meta {
    pub fn new(request_id: impl Into<String>) -> Self {
        Meta { request_id: request_id.into(), next_cursor: None, truncated: false, replayed: false }
    }
}

/// `data.error` of a failed call (ENV-4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Written from [`ErrorCode`]; read as whatever the server sent (§9 leaves some codes open).
    pub code: Code,
    pub category: Category,
    pub retryable: bool,
    pub message: String,
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_scope: Option<String>,
}

impl ErrorBody {
    /// An error with the code's fixed category, retryable flag and message.
    pub fn new(code: ErrorCode, request_id: impl Into<String>) -> Self {
        ErrorBody {
            code: Code::Known(code),
            category: code.category(),
            retryable: code.retryable(),
            message: code.default_message().to_owned(),
            request_id: request_id.into(),
            retry_after_ms: None,
            required_scope: None,
        }
    }
}

/// `structuredContent` of a success.
pub fn success(data: Value, meta: &Meta) -> Value {
    // Not `json!`: it would copy `data` through `to_value`, the whole answer once more.
    let mut object = serde_json::Map::new();
    object.insert("data".into(), data);
    object.insert("meta".into(), serde_json::to_value(meta).unwrap_or_default());
    Value::Object(object)
}

/// `structuredContent` of an error; the two request_ids are the same by construction.
pub fn error(body: &ErrorBody) -> Value {
    serde_json::json!({
        "data": { "error": body },
        "meta": { "request_id": body.request_id },
    })
}

/// The size of a value's compact JSON, counted without building the text (LIM-5/LIM-6 checks
/// run on every answer).
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a value that cannot serialize counts what it wrote.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// ENV-2: `^req_[0-9A-Za-z]{16,}$`, checked without a regex engine.
pub fn is_request_id(text: &str) -> bool {
    text.strip_prefix("req_")
        .is_some_and(|rest| rest.len() >= 16 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// A parsed envelope, as the suite reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Success { data: Value, meta: Meta },
    Error(ErrorBody),
}

/// Parse a `structuredContent`; `Err` says what is wrong with its shape.
pub fn parse(structured: &Value) -> Result<Parsed, String> {
    let data = structured.get("data").ok_or("structuredContent has no `data`")?;
    let meta = structured.get("meta").ok_or("structuredContent has no `meta`")?;
    if let Some(err) = data.get("error") {
        let body: ErrorBody = serde_json::from_value(err.clone()).map_err(|e| format!("data.error: {e}"))?;
        let meta_id = meta.get("request_id").and_then(Value::as_str);
        if meta_id != Some(body.request_id.as_str()) {
            return Err("data.error.request_id differs from meta.request_id".into());
        }
        return Ok(Parsed::Error(body));
    }
    let meta: Meta = serde_json::from_value(meta.clone()).map_err(|e| format!("meta: {e}"))?;
    Ok(Parsed::Success { data: data.clone(), meta })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_id_format() {
        let check = |s: &str, ok: bool| assert_eq!(is_request_id(s), ok, "{s}");
        check("req_0123456789abcdef", true);
        check("req_0123456789abcdefXYZ", true);
        check("req_0123456789abcde", false);
        check("req_0123456789abcde-", false);
        check("rq_0123456789abcdef", false);
        check("", false);
    }

    #[test]
    fn error_envelope_round_trips() {
        let body = ErrorBody::new(ErrorCode::RateLimited, "req_0123456789abcdef");
        let parsed = parse(&error(&body)).unwrap();
        assert_eq!(parsed, Parsed::Error(body));
    }
}
