//! The bounds matrix's rule (`matrices::bound_rows`): past a bound, the arguments refused; on it,
//! served. The step `every input bound filed under … is refused past it and served on it` and the
//! fuzzer's bound rows judge each row's answer with it.

use chataigne_contract::envelope::{self, Parsed};
use serde_json::Value;

use crate::client::Exchange;
use crate::matrices::{BoundRow, Expect};

/// An answer in a few words: `success`, the tool error's code, or what came.
pub fn outcome(ex: &Exchange) -> String {
    match ex.structured().map(envelope::parse) {
        Some(Ok(Parsed::Success { .. })) if !ex.is_error() => "success".to_owned(),
        Some(Ok(Parsed::Error(body))) => body.code.as_str().to_owned(),
        _ => ex.summary(),
    }
}

/// Whether `ex`, the answer to `row`, is what it expects: past the bound, refused for the
/// arguments (a validation error or MCP's -32602); on it, served.
pub fn held(row: &BoundRow, ex: &Exchange) -> bool {
    let category = ex
        .structured()
        .filter(|_| ex.is_error())
        .and_then(|s| s.pointer("/data/error/category"))
        .and_then(Value::as_str);
    let invalid_params = ex.rpc_error().and_then(|e| e.get("code")).and_then(Value::as_i64) == Some(-32602);
    // A broken ID is also what the access checks look up: a server that checks access before
    // the input schema (AUTH-8's order is the reference's choice) refuses it as forbidden or
    // not found, which refuses it all the same.
    let access_refusal =
        row.argument.ends_with("_id") && matches!(category, Some("authorization" | "not_found"));
    match row.expect {
        Expect::Refused => category == Some("validation") || invalid_params || access_refusal,
        Expect::Served => outcome(ex) == "success",
    }
}

/// The reference choice a row checks, if the seed level does not hold this server to it: the
/// row's own (a repeated item), or, for a PROTO-3 refusal, a bound of the contract's schema that
/// the input schema the server publishes does not state (`contract-input-schemas`;
/// `own_schema_refuses`: whether the published schema refuses the row's arguments). `None`: the
/// row is a seed rule for this server.
pub fn choice(row: &BoundRow, own_schema_refuses: Option<bool>) -> Option<&'static str> {
    if let Some(choice) = row.choice {
        return Some(choice);
    }
    (row.clause == "PROTO-3" && row.expect == Expect::Refused && own_schema_refuses == Some(false))
        .then_some("contract-input-schemas")
}

/// What a row expected, as a finding says it.
pub fn expected(row: &BoundRow) -> &'static str {
    match row.expect {
        Expect::Refused => "refused",
        Expect::Served => "served",
    }
}
