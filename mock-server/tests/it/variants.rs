//! Allowed variants (docs/VARIANTS.md): each behaves as documented, and the reference server
//! (no variant) keeps the reference behaviour. The rate variants' arithmetic is proven by the unit
//! tests of `ratelimit.rs` with explicit instants; here one HTTP test each shows the variant is the
//! limiter the server runs.

use chataigne_contract::schema::Validator;
use chataigne_contract::{ErrorCode, ToolName, time};
use mock_server::dev::variants::Variants;
use mock_server::{App, Config, Variant};
use serde_json::{Value, json};

use crate::support::{
    CONTROL_SECRET, Reply, Server, code_of, concurrently, expect_error, expect_ok, order_in,
    orders_newest_first, start, start_with,
};

async fn with(variants: &[Variant]) -> Server {
    start_with(|config| {
        config.variants = variants.to_vec();
        // The rate variants replace the in-memory limiter: never on Redis (IT_REDIS).
        config.redis_url = None;
    })
    .await
}

fn update(order_id: &str, status: &str, expected: &str) -> Value {
    json!({
        "restaurant_id": "rst_central", "order_id": order_id, "status": status, "expected_status": expected,
    })
}

/// The server's clock, in milliseconds.
async fn now_ms(server: &Server) -> i64 {
    let http = server.get("/control/clock", &[("x-control-secret", CONTROL_SECRET)]).await;
    assert_eq!(http.status, 200, "{}", http.text);
    http.json["now_ms"].as_i64().expect("now_ms")
}

#[track_caller]
fn retry_after(reply: &Reply) -> i64 {
    let error = expect_error(reply, ErrorCode::RateLimited);
    let ms = error["retry_after_ms"].as_i64().expect("retry_after_ms");
    assert!(ms >= 1, "{error}");
    ms
}

/// A failing write that still counts against the manager's set_restaurant_status limit (500).
fn stale_write() -> Value {
    json!({ "restaurant_id": "rst_central", "status": "paused", "expected_status": "paused" })
}

/// `n` counted writes at once; how many the limiter let through.
async fn writes(server: &Server, n: usize) -> usize {
    let codes = concurrently(n, 16, |_| async {
        code_of(&server.call("manager", "set_restaurant_status", stale_write()).await)
    })
    .await;
    codes.iter().filter(|c| **c != Some(ErrorCode::RateLimited)).count()
}

async fn write(server: &Server) -> Reply {
    server.call("manager", "set_restaurant_status", stale_write()).await
}

// PRE-3, lifecycle-skip-forward
#[tokio::test(flavor = "multi_thread")]
async fn lifecycle_skip_forward_accepts_forward_moves_only() {
    let received = &order_in("rst_central", "received").id;
    let accepted = &order_in("rst_central", "accepted").id;
    let ready = &order_in("rst_central", "ready").id;
    let reference = start().await;
    let reply =
        reference.call("manager", "update_order_status", update(received, "preparing", "received")).await;
    expect_error(&reply, ErrorCode::OrderStatusPreconditionFailed);

    let server = with(&[Variant::LifecycleSkipForward]).await;
    let reply =
        server.call("manager", "update_order_status", update(received, "preparing", "received")).await;
    assert_eq!(expect_ok(&reply)["order"]["status"], "preparing");
    let reply =
        server.call("manager", "update_order_status", update(accepted, "completed", "accepted")).await;
    assert_eq!(expect_ok(&reply)["order"]["status"], "completed");
    // Backward, and to the same state: still refused; expected_status still compared.
    let reply =
        server.call("manager", "update_order_status", update(accepted, "accepted", "completed")).await;
    expect_error(&reply, ErrorCode::OrderStatusPreconditionFailed);
    let reply =
        server.call("manager", "update_order_status", update(received, "accepted", "preparing")).await;
    expect_error(&reply, ErrorCode::OrderStatusPreconditionFailed);
    let reply = server.call("manager", "update_order_status", update(ready, "ready", "ready")).await;
    expect_error(&reply, ErrorCode::OrderStatusPreconditionFailed);
    let reply = server.call("manager", "update_order_status", update(ready, "completed", "received")).await;
    expect_error(&reply, ErrorCode::ExpectedStateMismatch);
}

/// Milliseconds since the epoch of an `occurred_at` (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
fn occurred_ms(text: &str) -> i64 {
    assert_eq!(text.len(), 24, "{text}");
    let (seconds, millis) = text.split_at(19);
    let seconds = time::parse_timestamp(&format!("{seconds}Z")).unwrap_or_else(|| panic!("{text}"));
    let millis = millis.strip_prefix('.').and_then(|m| m.strip_suffix('Z')).expect("milliseconds");
    seconds * 1000 + millis.parse::<i64>().expect("digits")
}

// ENV-4, PROTO-4, error-extra-fields
#[tokio::test(flavor = "multi_thread")]
async fn error_extra_fields_carry_the_server_clock_and_a_fresh_trace_id() {
    let foreign = json!({ "restaurant_id": "rst_central" });
    let reference = start().await;
    let reply = reference.call("outsider", "get_restaurant", foreign.clone()).await;
    let error = expect_error(&reply, ErrorCode::ResourceForbidden);
    assert!(error.get("occurred_at").is_none() && error.get("trace_id").is_none(), "{error}");
    for descriptor in reference.tools_list("owner").await {
        let tool = ToolName::parse(descriptor["name"].as_str().unwrap()).unwrap();
        assert_eq!(descriptor["outputSchema"], tool.output_schema(), "{tool}");
    }

    let server = with(&[Variant::ErrorExtraFields]).await;
    // The server's clock, not the wall clock: ten days ahead.
    server.advance(10 * 86_400).await;
    let before = now_ms(&server).await;
    let first = server.call("outsider", "get_restaurant", foreign.clone()).await;
    let second = server
        .call("owner", "get_order", json!({ "restaurant_id": "rst_central", "order_id": "ord_nope" }))
        .await;
    let after = now_ms(&server).await;
    let mut traces = Vec::new();
    for (reply, code) in [(&first, ErrorCode::ResourceForbidden), (&second, ErrorCode::ResourceNotFound)] {
        let error = expect_error(reply, code);
        let at = occurred_ms(error["occurred_at"].as_str().expect("occurred_at"));
        assert!(before <= at && at <= after, "{at} within [{before}, {after}]");
        let trace = error["trace_id"].as_str().expect("trace_id");
        assert!(trace.len() == 32 && trace.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        traces.push(trace.to_owned());
        // The contract's closed error object would refuse them: the published schema allows them.
        assert!(!Validator::new(&ToolName::GetOrder.output_schema()).unwrap().is_valid(&reply.structured));
    }
    assert_ne!(traces[0], traces[1], "a fresh trace_id per call");
    // Successes are unchanged.
    let ok = server.call("owner", "get_restaurant", foreign).await;
    assert!(expect_ok(&ok).get("occurred_at").is_none() && ok.structured["meta"].get("trace_id").is_none());
    // tools/list publishes the patched schema for every tool.
    let variants = Variants::new(&[Variant::ErrorExtraFields]);
    for descriptor in server.tools_list("owner").await {
        let tool = ToolName::parse(descriptor["name"].as_str().unwrap()).unwrap();
        assert_eq!(descriptor["outputSchema"], variants.output_schema(tool), "{tool}");
        let error = &descriptor["outputSchema"]["oneOf"][1]["properties"]["data"]["properties"]["error"];
        assert!(
            error["properties"]["occurred_at"].is_object() && error["properties"]["trace_id"].is_object()
        );
        assert_eq!(error["additionalProperties"], false, "{tool}: still closed otherwise");
    }
}

// AUTH-7, no-membership-forbidden
#[tokio::test(flavor = "multi_thread")]
async fn no_membership_forbidden_refuses_the_unscoped_lists_to_users_without_membership() {
    let reference = start().await;
    let reply = reference.call("revoked", "list_organizations", json!({})).await;
    assert!(reply.items("organizations").is_empty(), "{}", reply.body);

    let server = with(&[Variant::NoMembershipForbidden]).await;
    for tool in ["list_organizations", "list_restaurants"] {
        expect_error(&server.call("revoked", tool, json!({})).await, ErrorCode::ResourceForbidden);
        assert!(!server.call("owner", tool, json!({})).await.items(&tool[5..]).is_empty());
        assert!(!server.call("outsider", tool, json!({})).await.items(&tool[5..]).is_empty());
    }
    // A restaurant-limited member is still a member.
    assert!(!server.call("staff", "list_restaurants", json!({})).await.items("restaurants").is_empty());
    // A membership revoked now is refused at once.
    server.revoke("usr_staff", "org_maison").await;
    expect_error(&server.call("staff", "list_organizations", json!({})).await, ErrorCode::ResourceForbidden);
    let args = json!({ "organization_id": "org_maison" });
    expect_error(&server.call("staff", "list_restaurants", args).await, ErrorCode::ResourceForbidden);
}

// AUTH-8, access-before-schema
#[tokio::test(flavor = "multi_thread")]
async fn access_before_schema_checks_scope_membership_and_role_first() {
    let received = &order_in("rst_central", "received").id;
    let extra = json!({ "restaurant_id": "rst_central", "unexpected": 1 });
    let off_enum = update(received, "cancelled", "received");
    let cases = [
        // (persona, tool, arguments, reference, variant)
        (
            "outsider",
            "get_restaurant",
            extra.clone(),
            ErrorCode::InvalidArguments,
            ErrorCode::ResourceForbidden,
        ),
        ("noscope", "get_restaurant", extra.clone(), ErrorCode::InvalidArguments, ErrorCode::ScopeRequired),
        (
            "noscope",
            "list_organizations",
            json!({ "limit": 0 }),
            ErrorCode::InvalidArguments,
            ErrorCode::ScopeRequired,
        ),
        (
            "viewer",
            "update_order_status",
            off_enum.clone(),
            ErrorCode::InvalidArguments,
            ErrorCode::ResourceForbidden,
        ),
        // Allowed callers still get the schema error.
        ("owner", "get_restaurant", extra.clone(), ErrorCode::InvalidArguments, ErrorCode::InvalidArguments),
        ("staff", "update_order_status", off_enum, ErrorCode::InvalidArguments, ErrorCode::InvalidArguments),
        // Too malformed to name the target: the schema error, whoever asks.
        ("outsider", "get_restaurant", json!({}), ErrorCode::InvalidArguments, ErrorCode::InvalidArguments),
        (
            "outsider",
            "get_restaurant",
            json!({ "restaurant_id": 42 }),
            ErrorCode::InvalidArguments,
            ErrorCode::InvalidArguments,
        ),
        (
            "outsider",
            "create_restaurant",
            json!({ "name": "X" }),
            ErrorCode::InvalidArguments,
            ErrorCode::InvalidArguments,
        ),
        (
            "outsider",
            "list_restaurants",
            json!({ "organization_id": 7 }),
            ErrorCode::InvalidArguments,
            ErrorCode::InvalidArguments,
        ),
    ];
    let reference = start().await;
    let server = with(&[Variant::AccessBeforeSchema]).await;
    for (persona, tool, args, in_reference, in_variant) in cases {
        let reply = reference.call(persona, tool, args.clone()).await;
        assert_eq!(code_of(&reply), Some(in_reference), "reference: {persona} {tool} {args}");
        let reply = server.call(persona, tool, args.clone()).await;
        assert_eq!(code_of(&reply), Some(in_variant), "variant: {persona} {tool} {args}");
    }
    // Valid calls still pass, and preconditions still come after everything.
    expect_ok(&server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await);
    let stale = update(received, "accepted", "ready");
    expect_error(&server.call("staff", "update_order_status", stale).await, ErrorCode::ExpectedStateMismatch);
}

// LIM-2, calendar-minute-windows
#[tokio::test(flavor = "multi_thread")]
async fn calendar_minute_windows_end_on_the_minute_of_the_server_clock() {
    let server = with(&[Variant::CalendarMinuteWindows]).await;
    // Start near hh:mm:30, so the minute ends about 30 s later (the reference window: 60 s).
    let into = now_ms(&server).await.rem_euclid(60_000);
    server.advance((90_000 - into).rem_euclid(60_000) / 1000).await;
    assert_eq!(writes(&server, 500).await, 500);
    let before = now_ms(&server).await;
    let refused = write(&server).await;
    let after = now_ms(&server).await;
    let retry = retry_after(&refused);
    assert!(
        (before..=after).any(|t| (t + retry).rem_euclid(60_000) == 0),
        "retry_after_ms {retry} ends on a minute boundary (clock {before}..={after})"
    );
    assert!(retry <= 31_000, "the calendar minute ends before a 60 s window would: {retry}");
    // Past the boundary a new window opens, though the first call was less than 60 s ago.
    server.advance((retry + 999) / 1000).await;
    assert_ne!(code_of(&write(&server).await), Some(ErrorCode::RateLimited));
}

// LIM-2, token-bucket
#[tokio::test(flavor = "multi_thread")]
async fn token_bucket_gives_a_token_back_every_120_ms_of_writes() {
    let server = with(&[Variant::TokenBucket]).await;
    assert_eq!(writes(&server, 500).await, 500, "a full bucket: the whole limit at once");
    // Tokens come back while the burst runs: call until the bucket is empty.
    let mut extra = 0;
    let refused = loop {
        let reply = write(&server).await;
        if code_of(&reply) == Some(ErrorCode::RateLimited) {
            break reply;
        }
        extra += 1;
        assert!(extra < 500, "the bucket empties");
    };
    let retry = retry_after(&refused);
    assert!(retry <= 120, "one token per 120 ms at 500/min, not a window's end: {retry}");
    // A second of the server's clock brings back 8 tokens.
    server.advance(1).await;
    assert_ne!(code_of(&write(&server).await), Some(ErrorCode::RateLimited));
}

// LIM-2, sliding-log
#[tokio::test(flavor = "multi_thread")]
async fn sliding_log_frees_only_the_calls_older_than_60_s() {
    let server = with(&[Variant::SlidingLog]).await;
    assert_eq!(writes(&server, 250).await, 250);
    server.advance(30).await;
    assert_eq!(writes(&server, 250).await, 250);
    let retry = retry_after(&write(&server).await);
    assert!(retry <= 30_000, "until the first calls are 60 s old: {retry}");
    // 61 s after the first calls: those 250 are free again, the later 250 still count (a
    // reference window would have reopened whole).
    server.advance(31).await;
    assert_eq!(writes(&server, 500).await, 250);
    let retry = retry_after(&write(&server).await);
    assert!(retry <= 30_000, "until the second calls are 60 s old: {retry}");
}

// ENV-7, bare-order-data
#[tokio::test(flavor = "multi_thread")]
async fn bare_order_data_answers_the_order_itself() {
    let received = &order_in("rst_central", "received").id;
    let get = json!({ "restaurant_id": "rst_central", "order_id": received });
    let reference = start().await;
    assert_eq!(expect_ok(&reference.call("owner", "get_order", get.clone()).await)["order"]["id"], *received);

    let server = with(&[Variant::BareOrderData]).await;
    let data = expect_ok(&server.call("owner", "get_order", get.clone()).await).clone();
    assert_eq!((&data["id"], &data["status"]), (&json!(received), &json!("received")), "{data}");
    assert!(data.get("order").is_none());
    let reply = server.call("manager", "update_order_status", update(received, "accepted", "received")).await;
    assert_eq!(expect_ok(&reply)["status"], "accepted");
    // Other tools and errors keep their shapes.
    let list =
        server.call("owner", "list_orders", json!({ "restaurant_id": "rst_central", "limit": 1 })).await;
    assert_eq!(list.items("orders").len(), 1);
    let absent = json!({ "restaurant_id": "rst_central", "order_id": "ord_nope" });
    expect_error(&server.call("owner", "get_order", absent).await, ErrorCode::ResourceNotFound);
    // The published output schemas say so.
    let variants = Variants::new(&[Variant::BareOrderData]);
    for descriptor in server.tools_list("owner").await {
        let tool = ToolName::parse(descriptor["name"].as_str().unwrap()).unwrap();
        assert_eq!(descriptor["outputSchema"], variants.output_schema(tool), "{tool}");
        let data = &descriptor["outputSchema"]["oneOf"][0]["properties"]["data"];
        let bare = matches!(tool, ToolName::GetOrder | ToolName::UpdateOrderStatus);
        assert_eq!(data["properties"].get("id").is_some(), bare, "{tool}");
    }
}

// PAG-4, oldest-first
#[tokio::test(flavor = "multi_thread")]
async fn oldest_first_walks_every_list_from_its_oldest_item_once() {
    let server = with(&[Variant::OldestFirst]).await;
    let mut expected: Vec<String> = orders_newest_first("rst_central").iter().map(|o| o.id.clone()).collect();
    expected.reverse();
    for limit in [1, 7, 50] {
        let args = json!({ "restaurant_id": "rst_central", "limit": limit });
        let pages = server.walk("viewer", "list_orders", args, "orders").await;
        let ids: Vec<String> = pages.iter().flat_map(|p| p.ids("orders")).collect();
        assert_eq!(ids, expected, "limit {limit}: created_at, then id, ascending");
    }
    // Messages too: the first page holds the oldest.
    let args = json!({ "restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 100 });
    let pages = server.walk("owner", "get_conversation", args, "messages").await;
    let ids: Vec<String> = pages.iter().flat_map(|p| p.ids("messages")).collect();
    assert_eq!((ids.len(), ids.first().map(String::as_str)), (150, Some("msg_long_001")));
    // The reference server keeps newest first.
    let reference = start().await;
    let first =
        reference.call("viewer", "list_orders", json!({ "restaurant_id": "rst_central", "limit": 1 })).await;
    assert_eq!(first.ids("orders"), [expected.last().unwrap().clone()]);
}

// PRE-3, transition-mismatch-code and transition-validation-code
#[tokio::test(flavor = "multi_thread")]
async fn transition_variants_refuse_a_backward_move_with_their_code_and_change_nothing() {
    let completed = &order_in("rst_central", "completed").id;
    let get = json!({ "restaurant_id": "rst_central", "order_id": completed });
    for (variant, code) in [
        (None, ErrorCode::OrderStatusPreconditionFailed),
        (Some(Variant::TransitionMismatchCode), ErrorCode::ExpectedStateMismatch),
        (Some(Variant::TransitionValidationCode), ErrorCode::InvalidArguments),
    ] {
        let server = with(variant.as_slice()).await;
        let reply =
            server.call("manager", "update_order_status", update(completed, "accepted", "completed")).await;
        let error = expect_error(&reply, code);
        assert_eq!(error["category"], code.category().as_str(), "{variant:?}");
        let order = server.call("owner", "get_order", get.clone()).await;
        assert_eq!(expect_ok(&order)["order"]["status"], "completed", "{variant:?}: nothing changed");
    }
}

// PAG-8, message-limit-clamp
#[tokio::test(flavor = "multi_thread")]
async fn message_limit_clamp_returns_at_most_a_hundred_messages_and_publishes_no_maximum() {
    let args = |limit: i64| json!({ "restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": limit });
    let reference = start().await;
    expect_error(&reference.call("owner", "get_conversation", args(101)).await, ErrorCode::InvalidArguments);

    let server = with(&[Variant::MessageLimitClamp]).await;
    for limit in [101, 1000] {
        let reply = server.call("owner", "get_conversation", args(limit)).await;
        assert_eq!(reply.items("messages").len(), 100, "message_limit {limit}");
        assert!(reply.next_cursor().is_some(), "50 more follow");
    }
    assert_eq!(server.call("owner", "get_conversation", args(40)).await.items("messages").len(), 40);
    expect_error(&server.call("owner", "get_conversation", args(0)).await, ErrorCode::InvalidArguments);
    let tools = server.tools_list("owner").await;
    let detail = tools.iter().find(|t| t["name"] == "get_conversation").expect("listed");
    let limit = &detail["inputSchema"]["properties"]["message_limit"];
    assert_eq!((limit.get("maximum"), &limit["minimum"]), (None, &json!(1)), "{limit}");
}

#[test]
fn rate_variants_are_exclusive_and_need_the_memory_limiter() {
    let app = |variants: &[Variant], redis: bool| {
        let mut config = Config::for_tests(CONTROL_SECRET);
        config.variants = variants.to_vec();
        config.redis_url = redis.then(|| "redis://127.0.0.1:1".to_owned());
        App::new(config).map(|_| ()).map_err(|e| e.to_string())
    };
    let both = app(&[Variant::TokenBucket, Variant::SlidingLog], false).unwrap_err();
    assert!(both.contains("token-bucket") && both.contains("sliding-log"), "{both}");
    let redis = app(&[Variant::CalendarMinuteWindows], true).unwrap_err();
    assert!(redis.contains("--redis"), "{redis}");
    let codes =
        app(&[Variant::TransitionMismatchCode, Variant::TransitionValidationCode], false).unwrap_err();
    assert!(codes.contains("cannot be combined"), "{codes}");
    let others: Vec<Variant> = Variant::ALL
        .iter()
        .copied()
        .filter(|v| {
            !matches!(v, Variant::TokenBucket | Variant::SlidingLog | Variant::TransitionValidationCode)
        })
        .collect();
    assert_eq!(app(&others, false), Ok(()));
}

#[test]
fn the_binary_lists_variants_and_refuses_bad_ones() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_chataigne-mock")).args(args).output().expect("runs")
    };
    let listed = run(&["variants", "--json"]);
    assert!(listed.status.success());
    let list: Vec<Value> = serde_json::from_slice(&listed.stdout).expect("JSON");
    let names: Vec<&str> = list.iter().filter_map(|v| v["name"].as_str()).collect();
    let all: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
    assert_eq!(names, all);
    let stderr = |args: &[&str]| {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} is refused");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(stderr(&["--variant", "no-such-variant"]).contains("unknown variant `no-such-variant`"));
    let both = stderr(&[
        "--listen",
        "127.0.0.1:0",
        "--variant",
        "token-bucket",
        "--variant",
        "calendar-minute-windows",
    ]);
    assert!(both.contains("cannot be combined"), "{both}");
    let redis =
        stderr(&["--listen", "127.0.0.1:0", "--redis", "redis://127.0.0.1:1", "--variant", "sliding-log"]);
    assert!(redis.contains("--redis"), "{redis}");
}

// LIM-1 / PROTO-3, repeats-as-once
#[tokio::test(flavor = "multi_thread")]
async fn repeats_as_once_serves_a_repeated_status_or_metric_as_given_once_and_publishes_no_unique_items() {
    let orders = |status: Value| json!({ "restaurant_id": "rst_central", "status": status, "limit": 50 });
    let analytics = |metrics: Value| json!({ "restaurant_id": "rst_central", "metrics": metrics, "from": "2026-01-01", "to": "2026-01-31" });
    let reference = start().await;
    expect_error(
        &reference.call("owner", "list_orders", orders(json!(["received", "received"]))).await,
        ErrorCode::InvalidArguments,
    );
    expect_error(
        &reference.call("owner", "get_analytics", analytics(json!(["orders_count", "orders_count"]))).await,
        ErrorCode::InvalidArguments,
    );

    let server = with(&[Variant::RepeatsAsOnce]).await;
    let once = server.call("owner", "list_orders", orders(json!(["received"]))).await;
    let twice = server.call("owner", "list_orders", orders(json!(["received", "received"]))).await;
    assert_eq!(twice.items("orders"), once.items("orders"));
    let twice =
        server.call("owner", "get_analytics", analytics(json!(["orders_count", "orders_count"]))).await;
    assert_eq!(expect_ok(&twice)["metrics"], json!(["orders_count"]), "{}", twice.structured);
    let tools = server.tools_list("owner").await;
    for (tool, prop) in [("list_orders", "status"), ("get_analytics", "metrics")] {
        let detail = tools.iter().find(|t| t["name"] == tool).expect("listed");
        let schema = &detail["inputSchema"]["properties"][prop];
        assert_eq!((schema.get("uniqueItems"), &schema["type"]), (None, &json!("array")), "{tool}: {schema}");
    }
}

// IDEM-1 / LIM-7, utf16-lengths
#[tokio::test(flavor = "multi_thread")]
async fn utf16_lengths_counts_an_astral_character_twice_and_a_two_byte_one_once() {
    let instruction =
        |key: String| json!({ "restaurant_id": "rst_central", "text": "Side door", "idempotency_key": key });
    let server = with(&[Variant::Utf16Lengths]).await;
    let call = async |key: String| server.call("owner", "create_instruction", instruction(key)).await;
    // 255 "😀" are 510 UTF-16 units: too long; 127 are 254: a key; 7 are 14: a key too.
    expect_error(&call("😀".repeat(255)).await, ErrorCode::InvalidArguments);
    expect_ok(&call("😀".repeat(127)).await);
    expect_ok(&call("😀".repeat(7)).await);
    // "é" is one unit, as in the reference.
    expect_ok(&call("é".repeat(255)).await);
    expect_error(&call("é".repeat(7)).await, ErrorCode::InvalidArguments);
    // The reference counts code points.
    let reference = start().await;
    expect_ok(&reference.call("owner", "create_instruction", instruction("😀".repeat(255))).await);
    expect_error(
        &reference.call("owner", "create_instruction", instruction("😀".repeat(7))).await,
        ErrorCode::InvalidArguments,
    );
    // The published schema keeps the contract's lengths.
    let tools = server.tools_list("owner").await;
    let detail = tools.iter().find(|t| t["name"] == "create_instruction").expect("listed");
    assert_eq!(detail["inputSchema"]["properties"]["idempotency_key"]["maxLength"], 255);
}
