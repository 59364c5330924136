//! The JSON-RPC shape of a posted body, checked by the `/mcp` gate before rmcp reads it
//! (PROTO-2): the errors rmcp would answer otherwise, or answer naming serde's complaint.

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use serde_json::{Value, json};

pub(super) fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (status, axum::Json(body)).into_response()
}

/// JSON-RPC errors rmcp would answer otherwise (PROTO-2): not JSON → -32700; not a JSON-RPC
/// object → -32600; a `tools/call` without a tool name → -32602.
pub(super) fn check_json_rpc(bytes: &Bytes) -> Option<Response> {
    if well_formed(bytes) {
        return None;
    }
    full_check(bytes)
}

/// The top-level members the gate looks at, borrowed from the body. `Some` even for `null`
/// (unlike `Option<&RawValue>`), so "present" means what `Map::contains_key` means.
#[derive(serde::Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    name: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    arguments: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

/// The common case without building a `Value` tree: true only when [`full_check`] would pass
/// the body too. Anything unusual (escapes, duplicate keys, odd types) goes the long way.
fn well_formed(bytes: &[u8]) -> bool {
    let starts = |raw: Option<&RawValue>, c: &[u8]| raw.is_some_and(|r| c.contains(&r.get().as_bytes()[0]));
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return false;
    }
    let Ok(p) = serde_json::from_slice::<Probe>(bytes) else { return false };
    let is_response = p.result.is_some() || p.error.is_some();
    let id_ok = p.id.is_none_or(|id| starts(Some(id), b"\"-0123456789n"));
    if p.jsonrpc.map(RawValue::get) != Some("\"2.0\"") || !id_ok || (!is_response && !starts(p.method, b"\""))
    {
        return false;
    }
    // An escaped method name might spell tools/call: only the plain spelling is fast.
    if p.method.is_some_and(|m| m.get().contains('\\')) {
        return false;
    }
    if p.method.map(RawValue::get) == Some("\"tools/call\"") && p.id.is_some() {
        let Some(params) = p.params.filter(|r| r.get().starts_with('{')) else { return false };
        let Ok(q) = serde_json::from_str::<Probe>(params.get()) else { return false };
        let args_ok = q.arguments.is_none_or(|a| a.get().starts_with('{') || a.get() == "null");
        return starts(q.name, b"\"") && args_ok;
    }
    true
}

fn full_check(bytes: &Bytes) -> Option<Response> {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        if valid_json(bytes) {
            return Some(cannot_take(bytes));
        }
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32700,
            "Parse error: the body is not JSON",
        ));
    };
    let Some(object) = value.as_object() else {
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32600,
            "Invalid Request: expected one JSON-RPC object",
        ));
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::Null | Value::String(_) | Value::Number(_));
    let id = if id_ok { id } else { Value::Null };
    let is_response = object.contains_key("result") || object.contains_key("error");
    let method = object.get("method");
    if object.get("jsonrpc") != Some(&json!("2.0"))
        || !id_ok
        || (!is_response && !method.is_some_and(Value::is_string))
    {
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            "Invalid Request: not a JSON-RPC 2.0 object",
        ));
    }
    if method == Some(&json!("tools/call")) && object.contains_key("id") {
        let params = object.get("params");
        let name_ok = params.and_then(|p| p.get("name")).is_some_and(Value::is_string);
        let args_ok = params.and_then(|p| p.get("arguments")).is_none_or(|a| a.is_object() || a.is_null());
        if !params.is_some_and(Value::is_object) || !name_ok || !args_ok {
            return Some(rpc_error(
                StatusCode::OK,
                id,
                -32602,
                "Invalid params: tools/call needs a tool name and object arguments",
            ));
        }
    }
    None
}

/// JSON by RFC 8259's grammar, whether or not serde can hold it: serde_json's skipping parser
/// (behind `IgnoredAny`) has no depth limit and checks neither number ranges nor surrogates.
fn valid_json(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok() && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// The answer to valid JSON that serde or rmcp cannot take (nesting past 128, a number beyond
/// f64, a lone surrogate, an id that is neither a string nor an exact integer; PROTO-2): -32602
/// with the request's id when only its params are at fault, else -32600 with the id when it
/// can be read, `null` otherwise. Like the gate's other refusals: 200 for -32602, 400 else.
pub(super) fn cannot_take(bytes: &[u8]) -> Response {
    let probe = (bytes.trim_ascii_start().first() == Some(&b'{'))
        .then(|| serde_json::from_slice::<Probe>(bytes).ok())
        .flatten();
    let unreadable = "Invalid Request: the message cannot be read (its id, or a value nested too deep, out of range or a lone surrogate)";
    let Some(p) = probe else {
        return rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32600, unreadable);
    };
    let id = p.id.and_then(readable_id);
    let method_ok = p.method.is_some_and(|m| serde_json::from_str::<String>(m.get()).is_ok());
    let request_ok = p.jsonrpc.map(RawValue::get) == Some("\"2.0\"") && method_ok;
    match id {
        Some(id) if request_ok && p.params.is_some() => rpc_error(
            StatusCode::OK,
            id,
            -32602,
            "Invalid params: a value cannot be read (nested too deep, out of range, a lone surrogate or of the wrong type)",
        ),
        id => rpc_error(StatusCode::BAD_REQUEST, id.unwrap_or(Value::Null), -32600, unreadable),
    }
}

/// An id as JSON-RPC libraries keep it (rmcp's `NumberOrString`): a string, or an integer held
/// exactly (an i64, or a float form of one below 2^53).
fn readable_id(raw: &RawValue) -> Option<Value> {
    match serde_json::from_str::<Value>(raw.get()).ok()? {
        Value::String(s) => Some(Value::String(s)),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0).map(|f| f as i64)
            })
            .map(Value::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn agrees(body: &str) -> bool {
        let bytes = Bytes::copy_from_slice(body.as_bytes());
        !well_formed(&bytes) || full_check(&bytes).is_none()
    }

    #[test]
    fn usual_requests_take_the_fast_path() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order","arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#,
            r#" {"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        ] {
            assert!(well_formed(body.as_bytes()), "{body}");
            assert!(full_check(&Bytes::from(body)).is_none(), "{body}");
        }
    }

    #[test]
    fn unusual_requests_go_the_long_way() {
        for body in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
        ] {
            assert!(!well_formed(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn valid_json_is_the_rfc_8259_grammar_not_what_serde_can_hold() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        for json in
            [deep.as_str(), "1e400", r#""\ud800""#, r#"{"a":1,"a":2}"#, "123456789012345678901234567890"]
        {
            assert!(valid_json(json.as_bytes()), "{json}");
        }
        for not_json in ["", "{", "[1,]", r#""\x""#, "\u{feff}{}", "{} x", "NaN", "\"\u{1}\""] {
            assert!(!valid_json(not_json.as_bytes()), "{not_json}");
        }
        assert!(!valid_json(&[b'"', 0xff, b'"']), "not UTF-8");
    }

    proptest! {
        // The fast path may only ever say "fine" where the full check says so too.
        #[test]
        fn fast_path_never_accepts_what_the_full_check_rejects(
            jsonrpc in prop::sample::select(vec![r#""2.0""#, r#""1.0""#, "2", "null", r#""2\u002e0""#]),
            id in prop::sample::select(vec!["", "1", "-3", r#""a""#, "null", "{}", "[1]", "true"]),
            method in prop::sample::select(vec!["", r#""tools/call""#, r#""tools\/call""#, r#""ping""#, "5", "null"]),
            params in prop::sample::select(vec!["", "{}", r#"{"name":"x"}"#, r#"{"name":"x","arguments":null}"#,
                r#"{"name":"x","arguments":[]}"#, r#"{"name":1}"#, "[]", "null", r#"{"name":"x","name":"y"}"#]),
            extra in prop::sample::select(vec!["", r#""result":{}"#, r#""error":null"#, r#""id":2"#]),
        ) {
            let mut members = vec![format!(r#""jsonrpc":{jsonrpc}"#)];
            if !id.is_empty() { members.push(format!(r#""id":{id}"#)); }
            if !method.is_empty() { members.push(format!(r#""method":{method}"#)); }
            if !params.is_empty() { members.push(format!(r#""params":{params}"#)); }
            if !extra.is_empty() { members.push(extra.to_owned()); }
            let body = format!("{{{}}}", members.join(","));
            prop_assert!(agrees(&body), "{}", body);
        }

        #[test]
        fn fast_path_agrees_on_arbitrary_bytes(body in ".{0,64}") {
            prop_assert!(agrees(&body));
        }
    }
}
