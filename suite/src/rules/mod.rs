//! Rules a step of the features and the fuzzer both judge by, as small pure functions of the
//! answers: the step says it in the domain's words (`steps`), the fuzzer applies it to the calls
//! it makes (`fuzz`), and both reach the same verdict on the same answers. `transport` holds
//! the transport's and the JSON-RPC envelope's.

pub mod bounds;
pub mod capabilities;
pub mod catalogue;
pub mod cursors;
pub mod envelope;
pub mod ranges;
pub mod records;
pub mod resources;
pub mod transport;

use chataigne_contract::{ErrorCode, MAX_STRUCTURED_BYTES};
use serde_json::Value;

use crate::client::Exchange;
use crate::rate_verdict::Answer;

/// The code of a tool error (`data.error.code`), if the answer is one.
pub fn error_code(ex: &Exchange) -> Option<&str> {
    ex.structured().and_then(|s| s.pointer("/data/error/code")).and_then(Value::as_str)
}

/// A success: a structured result that is not a tool error.
pub fn is_success(ex: &Exchange) -> bool {
    ex.structured().is_some() && !ex.is_error() && error_code(ex).is_none()
}

/// `meta.replayed: true` on a success (IDEM-2, IDEM-5).
pub fn is_replay(ex: &Exchange) -> bool {
    is_success(ex)
        && ex.structured().and_then(|s| s.pointer("/meta/replayed")).and_then(Value::as_bool) == Some(true)
}

/// IDEM-4, `every call succeeded or was told the operation is in progress`: each of identical
/// keyed calls at once is a success or MCP_OPERATION_IN_PROGRESS.
pub fn success_or_in_progress(ex: &Exchange) -> bool {
    match error_code(ex) {
        None => ex.structured().is_some() && !ex.is_error(),
        Some(c) => c == ErrorCode::OperationInProgress.as_str(),
    }
}

/// AUTH-3, `the error names the required scope "…"`: `data.error.required_scope` is `scope`.
pub fn names_scope(ex: &Exchange, scope: &str) -> bool {
    ex.structured().and_then(|s| s.pointer("/data/error/required_scope")).and_then(Value::as_str)
        == Some(scope)
}

/// How long a refusal for the rate asks to wait (`retry_after_ms`, 1 s when it names none);
/// `None` for any other answer.
pub fn rate_wait_ms(ex: &Exchange) -> Option<u64> {
    let error = ex.structured()?.pointer("/data/error")?;
    (error.get("category")?.as_str()? == "rate_limit")
        .then(|| error.get("retry_after_ms").and_then(Value::as_u64).unwrap_or(1000))
}

/// `the error asks to retry after a delay`: a tool error with `retry_after_ms` > 0.
pub fn asks_to_retry_later(ex: &Exchange) -> bool {
    ex.structured()
        .and_then(|s| s.pointer("/data/error/retry_after_ms"))
        .and_then(Value::as_f64)
        .is_some_and(|ms| ms > 0.0)
}

/// PRE-4, `exactly one of the … calls succeeded, and the other failed with "A" or "B"`: of
/// writes racing from one observed state, one succeeds and every other is refused with one of
/// `codes`. `Err`: what the answers were instead.
pub fn one_winner(answers: &[&Exchange], codes: &[&str]) -> Result<usize, String> {
    let winners: Vec<usize> = (0..answers.len()).filter(|i| is_success(answers[*i])).collect();
    let losers_ok = answers
        .iter()
        .enumerate()
        .filter(|(i, _)| !winners.contains(i))
        .all(|(_, ex)| error_code(ex).is_some_and(|c| codes.contains(&c)));
    match winners.as_slice() {
        [one] if losers_ok => Ok(*one),
        _ => Err(format!(
            "{} of {} calls succeeded: {}",
            winners.len(),
            answers.len(),
            answers.iter().map(|ex| ex.summary()).collect::<Vec<_>>().join("; ")
        )),
    }
}

/// LIM-5, `the page is marked truncated` on a page too big for 128 KiB: a success over
/// [`MAX_STRUCTURED_BYTES`] not marked `meta.truncated: true`. `Some`: what was wrong.
pub fn untruncated_page(ex: &Exchange) -> Option<String> {
    let bytes = ex.structured_bytes();
    let truncated = ex.structured().and_then(|s| s.pointer("/meta/truncated")).and_then(Value::as_bool);
    (is_success(ex) && bytes > MAX_STRUCTURED_BYTES && truncated != Some(true)).then(|| {
        format!("a page of {bytes} bytes (over {MAX_STRUCTURED_BYTES}) was not cut and marked truncated")
    })
}

/// LIM-6, `the call fails with "MCP_OUTPUT_TOO_LARGE"` on an item too big for 128 KiB: a success
/// over [`MAX_STRUCTURED_BYTES`]. `Some`: what was wrong.
pub fn oversized_item(ex: &Exchange) -> Option<String> {
    let bytes = ex.structured_bytes();
    (is_success(ex) && bytes > MAX_STRUCTURED_BYTES).then(|| {
        format!(
            "a single item of {bytes} bytes (over {MAX_STRUCTURED_BYTES}) was returned instead of {}",
            ErrorCode::OutputTooLarge.as_str()
        )
    })
}

/// `the page is marked truncated`, on a page the dataset makes over 128 KiB (the large orders
/// restaurant's 50 orders): a success not marked `meta.truncated: true`, whatever its size.
pub fn unmarked_cut(ex: &Exchange) -> Option<String> {
    let truncated = ex.structured().and_then(|s| s.pointer("/meta/truncated")).and_then(Value::as_bool);
    (is_success(ex) && truncated != Some(true)).then(|| {
        format!("a page the dataset makes over {MAX_STRUCTURED_BYTES} bytes was not marked truncated")
    })
}

/// LIM-5 on any page: a success holding fewer items than the `limit` asked, with a `next_cursor`,
/// is a page cut short, and a cut page says so (`meta.truncated: true`) whatever its size or
/// filter. `key` is the list's member under `data`. `Some`: what was wrong.
pub fn cut_unmarked(ex: &Exchange, key: &str, limit: u64) -> Option<String> {
    if !is_success(ex) {
        return None;
    }
    let structured = ex.structured()?;
    let items = structured.pointer(&format!("/data/{key}")).and_then(Value::as_array)?.len() as u64;
    let next = structured.pointer("/meta/next_cursor").and_then(Value::as_str).is_some_and(|c| !c.is_empty());
    let truncated = structured.pointer("/meta/truncated").and_then(Value::as_bool) == Some(true);
    (items < limit && next && !truncated).then(|| {
        format!("a page of {items} items (limit {limit}) with a next_cursor, cut short, not marked truncated")
    })
}

/// LIM-5 on a page the dataset makes over 128 KiB: refused as too large instead of cut (a page
/// can always be cut, down to one item). `Some`: what was wrong.
pub fn page_refused_too_large(ex: &Exchange) -> Option<String> {
    let code = ErrorCode::OutputTooLarge.as_str();
    (ex.is_error() && error_code(ex) == Some(code)).then(|| {
        format!("a page the dataset makes over {MAX_STRUCTURED_BYTES} bytes was refused with {code}, not cut")
    })
}

/// `the call fails with "MCP_OUTPUT_TOO_LARGE"`, on an item the dataset makes over 128 KiB (the
/// huge transcript): any other answer of a tool result. `None`: so refused, or no tool result.
pub fn not_refused_too_large(ex: &Exchange) -> Option<String> {
    let code = ErrorCode::OutputTooLarge.as_str();
    if ex.result().is_none() || (ex.is_error() && error_code(ex) == Some(code)) {
        return None;
    }
    Some(match error_code(ex) {
        Some(other) => format!(
            "an item the dataset makes over {MAX_STRUCTURED_BYTES} bytes was refused with {other}, not {code}"
        ),
        None => format!(
            "an item the dataset makes over {MAX_STRUCTURED_BYTES} bytes was returned ({} bytes), not refused with {code}",
            ex.structured_bytes()
        ),
    })
}

/// `the walk yields every order of … exactly once`: the dataset's IDs a complete walk did not
/// yield.
pub fn missed<'a>(walked: &std::collections::HashSet<String>, expected: &'a [String]) -> Vec<&'a str> {
    expected.iter().filter(|id| !walked.contains(*id)).map(String::as_str).collect()
}

/// LIM-2, what one answer of a burst came to (`rate_verdict` judges the burst from them): a rate-limit refusal (category rate_limit or the code
/// MCP_RATE_LIMITED), served (a success; with `any_answer`, any answer of a call refused anyway),
/// or neither.
pub fn rate_answer(ex: &Exchange, any_answer: bool) -> Answer {
    let error = ex.structured().and_then(|s| s.pointer("/data/error"));
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str);
    if ex.is_error()
        && (field("category") == Some("rate_limit") || field("code") == Some(ErrorCode::RateLimited.as_str()))
    {
        return Answer::Limited;
    }
    let served = if any_answer {
        ex.result().is_some() || ex.rpc_error().is_some()
    } else {
        ex.structured().is_some() && !ex.is_error() && error.is_none()
    };
    if served { Answer::Served } else { Answer::Other }
}

/// What a call made before a burst on its pair and tool came to (`rate_verdict::Earlier`): a
/// tool result tells served, refused for its rate or refused otherwise; anything else is unknown.
pub fn earlier_answer(ex: &Exchange) -> crate::rate_verdict::Earlier {
    use crate::rate_verdict::Earlier;
    if ex.result().is_none() {
        return Earlier::Unknown;
    }
    match rate_answer(ex, false) {
        Answer::Limited => Earlier::Limited,
        Answer::Served => Earlier::Served,
        Answer::Other => Earlier::Refused,
    }
}

/// `… has exactly N instructions "TEXT"`, one page: how many items under `data.{key}` have
/// `field` equal to `text`. `None`: the page cannot be read that way (no such array, an item
/// without a string `field`).
pub fn count_with(data: &Value, key: &str, field: &str, text: &str) -> Option<usize> {
    let items = data.get(key)?.as_array()?;
    let mut n = 0;
    for item in items {
        n += usize::from(item.get(field)?.as_str()? == text);
    }
    Some(n)
}

/// SEC-2's words of a server's insides (features/data_security.feature's table of `the error
/// reveals none of these:`, lower case).
pub const INTERNAL_MARKERS: &[&str] = &[
    "panicked",
    "backtrace",
    "stack trace",
    ".rs:",
    "src/",
    "traceback",
    "exception",
    "select",
    "insert into",
    "sqlstate",
    "postgres",
    "sqlite",
    "/home/",
    "/usr/",
    "/var/",
    ".go:",
    "thread '",
    "os error",
    "refused",
    "timed out",
    "errno",
    "unwrap",
    "null point",
    "at line",
];

/// SEC-2, `the error reveals none of these:`: the `markers` (lower case) the error object or the
/// text blocks of the answer show, case-insensitively.
pub fn leaks<'m>(ex: &Exchange, markers: &[&'m str]) -> Vec<&'m str> {
    // The whole message, not only the error object and the texts: a client (and its logs) reads
    // every member, `_meta` and `meta` included. A JSON-RPC error (a resource read, a prompt)
    // carries its words in `message` and `data`.
    let message = ex.message().map(Value::to_string).unwrap_or_default();
    // The HTTP headers too: a detail header is as readable as the body.
    let headers: Vec<String> =
        ex.response().into_iter().flat_map(|r| &r.headers).map(|(k, v)| format!("{k}: {v}")).collect();
    // And every other message of an event stream (a log notification forwarded before the
    // answer): the client reads it as it reads the answer.
    let others: Vec<String> =
        ex.response().into_iter().flat_map(|r| &r.others).map(Value::to_string).collect();
    let seen = format!("{message}\n{}\n{}\n{}", ex.texts().join("\n"), headers.join("\n"), others.join("\n"))
        .to_ascii_lowercase();
    markers.iter().copied().filter(|m| seen.contains(m)).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(structured: Value) -> Exchange {
        let is_error = structured.pointer("/data/error").is_some();
        let message = json!({ "jsonrpc": "2.0", "id": 1, "result": { "isError": is_error, "structuredContent": structured, "content": [] } });
        Exchange::answered_for_test(Some(message))
    }

    fn ok(meta: Value) -> Exchange {
        answer(json!({ "data": { "x": 1 }, "meta": meta }))
    }

    fn refused(code: &str) -> Exchange {
        answer(json!({ "data": { "error": { "code": code } }, "meta": {} }))
    }

    #[test]
    fn an_internal_error_leaks_through_any_member_of_the_answer() {
        let message = json!({ "jsonrpc": "2.0", "id": 1, "result": {
            "isError": true,
            "structuredContent": { "data": { "error": { "code": "MCP_INTERNAL_ERROR" } }, "meta": {} },
            "content": [{ "type": "text", "text": "Internal error." }],
            "_meta": { "debug": { "sql": "SELECT * FROM orders", "at": "src/tools/orders.rs:42" } }
        } });
        let ex = Exchange::answered_for_test(Some(message));
        assert_eq!(leaks(&ex, &["select", "src/", "traceback"]), ["select", "src/"]);
        let clean = refused("MCP_INTERNAL_ERROR");
        assert!(leaks(&clean, INTERNAL_MARKERS).is_empty(), "{:?}", leaks(&clean, INTERNAL_MARKERS));
    }

    #[test]
    fn identical_calls_at_once_are_successes_or_in_progress() {
        assert!(success_or_in_progress(&ok(json!({}))));
        assert!(success_or_in_progress(&refused("MCP_OPERATION_IN_PROGRESS")));
        // The duplicates-executed defect's answers are successes: the count judges it; a
        // mismatch or any other refusal breaks this rule.
        assert!(!success_or_in_progress(&refused("MCP_IDEMPOTENCY_MISMATCH")));
    }

    #[test]
    fn racing_writes_have_one_winner() {
        let (win, lose) = (ok(json!({})), refused("ORDER_STATUS_PRECONDITION_FAILED"));
        let codes = ["MCP_EXPECTED_STATE_MISMATCH", "ORDER_STATUS_PRECONDITION_FAILED"];
        assert_eq!(one_winner(&[&lose, &win, &lose], &codes), Ok(1));
        // no-compare-and-set: every racer wins.
        assert!(one_winner(&[&win, &win, &lose], &codes).is_err());
        assert!(one_winner(&[&lose, &lose], &codes).is_err());
        assert!(one_winner(&[&win, &refused("MCP_INTERNAL_ERROR")], &codes).is_err());
    }

    #[test]
    fn replays_are_flagged_successes() {
        assert!(is_replay(&ok(json!({ "replayed": true }))));
        assert!(!is_replay(&ok(json!({ "replayed": false }))));
        assert!(!is_replay(&ok(json!({}))));
    }

    #[test]
    fn a_page_over_the_size_is_cut() {
        let big = "x".repeat(MAX_STRUCTURED_BYTES);
        let page = |truncated: bool| {
            answer(json!({ "data": { "orders": [big] }, "meta": { "truncated": truncated } }))
        };
        // no-truncation: the whole page, not marked.
        assert!(untruncated_page(&page(false)).is_some());
        assert!(untruncated_page(&page(true)).is_none());
        assert!(untruncated_page(&ok(json!({ "truncated": false }))).is_none());
    }

    #[test]
    fn an_item_over_the_size_is_refused() {
        let big = answer(
            json!({ "data": { "transcript": { "text": "x".repeat(MAX_STRUCTURED_BYTES) } }, "meta": {} }),
        );
        // huge-output: the item is returned.
        assert!(oversized_item(&big).is_some());
        assert!(oversized_item(&refused("MCP_OUTPUT_TOO_LARGE")).is_none());
        assert!(oversized_item(&ok(json!({}))).is_none());
    }

    #[test]
    fn internal_detail_is_seen_in_the_error() {
        let leak = answer(
            json!({ "data": { "error": { "code": "MCP_INTERNAL_ERROR", "message": "thread 'main' panicked at src/db.rs:12" } }, "meta": {} }),
        );
        // internal-error-leaks: a stack trace in the message.
        assert_eq!(leaks(&leak, INTERNAL_MARKERS), vec!["panicked", ".rs:", "src/", "thread '"]);
        assert!(leaks(&refused("MCP_INTERNAL_ERROR"), INTERNAL_MARKERS).is_empty());
        // A clean answer on an event stream whose log notification came first (b9-09).
        let mut streamed = refused("MCP_INTERNAL_ERROR");
        streamed.response_mut_for_test().others = vec![json!({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": { "level": "error", "data": "connection to postgres://u:p@db refused" },
        })];
        assert_eq!(leaks(&streamed, INTERNAL_MARKERS), vec!["postgres", "refused"]);
    }

    /// The markers are the feature's table, word for word.
    #[test]
    fn internal_markers_are_the_features() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../features/data_security.feature");
        let text = std::fs::read_to_string(path).expect("features/data_security.feature");
        let start = text.find("the error reveals none of these:").expect("the SEC-2 step");
        let table: Vec<String> = text[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.trim_start().starts_with('|'))
            .flat_map(|l| l.split('|').map(|c| c.trim().to_ascii_lowercase()).collect::<Vec<_>>())
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(table, INTERNAL_MARKERS);
    }

    #[test]
    fn effects_are_counted_by_text() {
        let data = json!({ "instructions": [{ "text": "a" }, { "text": "b" }, { "text": "a" }] });
        assert_eq!(count_with(&data, "instructions", "text", "a"), Some(2));
        assert_eq!(count_with(&data, "orders", "text", "a"), None);
        assert_eq!(count_with(&json!({ "instructions": [{ "id": 1 }] }), "instructions", "text", "a"), None);
    }
}
