//! Rate limits (LIM-2, LIM-3): 1000 reads and 500 writes per minute per (client, user, tool),
//! every call counting; other pairs and tools unaffected; the window reopens after a minute.

use chataigne_contract::ErrorCode;
use serde_json::{Value, json};

use crate::support::{Server, code_of, concurrently, expect_error, expect_ok, redacted, start};

const PARALLEL: usize = 16;

async fn burst(
    server: &Server,
    persona: &str,
    tool: &str,
    n: usize,
    args: impl Fn(usize) -> Value,
) -> Vec<Option<ErrorCode>> {
    concurrently(n, PARALLEL, |i| {
        let args = args(i);
        async move { code_of(&server.call(persona, tool, args).await) }
    })
    .await
}

#[track_caller]
fn assert_rate_limited(reply: &crate::support::Reply) {
    let error = expect_error(reply, ErrorCode::RateLimited);
    assert_eq!(error["category"], "rate_limit");
    assert_eq!(error["retryable"], true);
    assert!(error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0 && ms <= 60_000), "{error}");
}

// LIM-2, LIM-3
#[tokio::test(flavor = "multi_thread")]
async fn the_1001st_read_in_a_minute_is_rate_limited_for_that_pair_and_tool_only() {
    let server = start().await;
    let central = json!({ "restaurant_id": "rst_central" });
    let codes = burst(&server, "owner", "get_restaurant", 1000, |_| central.clone()).await;
    assert!(codes.iter().all(Option::is_none), "1000 reads pass: {:?}", codes.iter().flatten().next());
    let limited = server.call("owner", "get_restaurant", central.clone()).await;
    assert_rate_limited(&limited);
    insta::assert_json_snapshot!("error_MCP_RATE_LIMITED", redacted(&limited));
    // Every call counts, and the limit comes before the schema (AUTH-8): even an invalid one.
    let invalid = server.call("owner", "get_restaurant", json!({ "restaurant_id": 42 })).await;
    assert_rate_limited(&invalid);
    // LIM-3: another user, another client of the same user, another tool: unaffected.
    expect_ok(&server.call("manager", "get_restaurant", central.clone()).await);
    expect_ok(&server.call("owner_second_client", "get_restaurant", central.clone()).await);
    expect_ok(&server.call("owner", "list_orders", central.clone()).await);
    // A minute later the window reopens.
    server.advance(61).await;
    expect_ok(&server.call("owner", "get_restaurant", central).await);
}

// LIM-2: 500 writes, failed ones counting too.
#[tokio::test(flavor = "multi_thread")]
async fn the_501st_write_in_a_minute_is_rate_limited_and_failed_calls_count() {
    let server = start().await;
    // Every one of these fails (a stale expected_status or an invalid status) and still counts.
    let codes = burst(&server, "manager", "set_restaurant_status", 500, |i| {
        let status = if i % 2 == 0 { "paused" } else { "closed" };
        json!({ "restaurant_id": "rst_central", "status": status, "expected_status": "paused" })
    })
    .await;
    for code in &codes {
        assert!(
            matches!(code, Some(ErrorCode::ExpectedStateMismatch | ErrorCode::InvalidArguments)),
            "{code:?}"
        );
    }
    let valid = json!({ "restaurant_id": "rst_central", "status": "paused", "expected_status": "open" });
    assert_rate_limited(&server.call("manager", "set_restaurant_status", valid.clone()).await);
    let restaurant = server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await;
    assert_eq!(expect_ok(&restaurant)["restaurant"]["status"], "open", "the limited call had no effect");
    // Reads of the same pair and writes of another pair are not slowed.
    expect_ok(&server.call("manager", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await);
    expect_ok(&server.call("owner", "set_restaurant_status", valid.clone()).await);
    server.advance(61).await;
    let back = json!({ "restaurant_id": "rst_central", "status": "open", "expected_status": "paused" });
    expect_ok(&server.call("manager", "set_restaurant_status", back).await);
}
