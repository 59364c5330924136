//! The envelope (ENV-1..6): success and error shapes, request IDs, sizes, the code table, and error
//! messages that never echo what was sent. Also one golden error envelope per code.

use std::collections::HashSet;

use chataigne_contract::{ErrorCode, ToolName};
use serde_json::{Value, json};

use crate::support::{
    Reply, Server, code_of, expect_error, expect_ok, key, order_in, redacted, start, valid_args,
};

// ENV-1
#[tokio::test(flavor = "multi_thread")]
async fn every_tool_succeeds_with_data_meta_and_one_readable_text_block() {
    let server = start().await;
    for tool in ToolName::ALL {
        let reply = server.call("owner", tool.as_str(), valid_args(*tool)).await;
        expect_ok(&reply);
        let keys: Vec<&String> = reply.structured.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["data", "meta"], "{tool}");
        let meta = reply.meta().as_object().expect("meta is an object");
        assert!(
            meta.keys().all(|k| ["request_id", "next_cursor", "truncated", "replayed"].contains(&k.as_str()))
        );
        assert_eq!(meta["truncated"], false, "{tool}");
        assert_eq!(meta["replayed"], false, "{tool}");
        assert_eq!(reply.body["result"]["isError"], false, "{tool}");
        // A sentence for a person, not the JSON again.
        assert!(!reply.text.trim_start().starts_with(['{', '[']), "{tool}: {}", reply.text);
    }
}

// ENV-2
#[tokio::test(flavor = "multi_thread")]
async fn request_ids_are_well_formed_unique_and_sent_as_header() {
    let server = start().await;
    let mut seen = HashSet::new();
    for i in 0..15 {
        // Successes and errors alike (the `call` helper checks format and header on each).
        let rid = if i % 3 == 0 { "rst_rival" } else { "rst_central" };
        for reply in [
            server.call("owner", "get_restaurant", json!({ "restaurant_id": rid })).await,
            server.call("viewer", "list_orders", json!({ "restaurant_id": "rst_small", "limit": 0 })).await,
        ] {
            assert!(seen.insert(reply.request_id().to_owned()), "request_id reused: {}", reply.request_id());
        }
    }
    assert_eq!(seen.len(), 30);
    // Answers refused at the door carry one too.
    let http = server.post_mcp(&[], "{}").await;
    assert_eq!(http.status, 401);
    let id = http.header("x-request-id").expect("x-request-id on a 401");
    assert!(chataigne_contract::envelope::is_request_id(id) && !seen.contains(id), "{id}");
}

// ENV-3
#[tokio::test(flavor = "multi_thread")]
async fn the_largest_answers_stay_within_the_summary_and_output_limits() {
    let server = start().await;
    let big = [
        ("list_orders", json!({ "restaurant_id": "rst_large", "limit": 50 })),
        ("list_orders", json!({ "restaurant_id": "rst_central", "limit": 50 })),
        (
            "get_conversation",
            json!({ "restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 100 }),
        ),
        ("search_transcripts", json!({ "restaurant_id": "rst_central", "query": "e", "limit": 50 })),
        (
            "get_analytics",
            json!({ "restaurant_id": "rst_central", "metrics": ["orders_count", "revenue_cents", "messages_sent"],
                    "from": "2025-12-01", "to": "2026-12-01" }),
        ),
    ];
    for (tool, args) in big {
        let reply = server.call("owner", tool, args).await;
        expect_ok(&reply);
        let size = serde_json::to_string(&reply.structured).expect("JSON").len();
        assert!(size <= chataigne_contract::MAX_STRUCTURED_BYTES, "{tool}: {size} bytes");
        assert!(reply.text.len() <= chataigne_contract::MAX_SUMMARY_BYTES, "{tool}");
    }
}

// ENV-4
#[tokio::test(flavor = "multi_thread")]
async fn an_error_is_flagged_and_carries_one_request_id_twice() {
    let server = start().await;
    let reply = server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_rival" })).await;
    let error = expect_error(&reply, ErrorCode::ResourceForbidden);
    assert_eq!(reply.body["result"]["isError"], true);
    assert_eq!(error["request_id"], reply.meta()["request_id"]);
    assert_eq!(reply.structured["data"].as_object().map(|d| d.len()), Some(1), "data holds only `error`");
    assert_eq!(reply.meta().as_object().map(|m| m.len()), Some(1), "meta holds only `request_id`");
    for field in ["code", "category", "retryable", "message", "request_id"] {
        assert!(error.get(field).is_some(), "data.error.{field}");
    }
    assert!(reply.text.contains("MCP_RESOURCE_FORBIDDEN"), "the summary names the code: {}", reply.text);
}

/// Provokes every error code the HTTP transport can produce, except MCP_RATE_LIMITED (see
/// rate_limits.rs) and MCP_AUTHENTICATION_REQUIRED (stdio only, see stdio.rs).
async fn provoke_each_code(server: &Server) -> Vec<(ErrorCode, Reply)> {
    let central = |extra: Value| {
        let mut args = json!({ "restaurant_id": "rst_central" });
        args.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        args
    };
    let completed = &order_in("rst_central", "completed").id;
    let mut out = vec![
        (
            ErrorCode::InvalidArguments,
            server
                .call(
                    "owner",
                    "list_orders",
                    central(json!({
                        "limit": 0,
                    })),
                )
                .await,
        ),
        (ErrorCode::ScopeRequired, server.call("noscope", "get_restaurant", central(json!({}))).await),
        (
            ErrorCode::ResourceForbidden,
            server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_rival" })).await,
        ),
        (
            ErrorCode::ResourceNotFound,
            server.call("owner", "get_order", central(json!({ "order_id": "ord_r0001" }))).await,
        ),
        (
            ErrorCode::CursorInvalid,
            server
                .call(
                    "owner",
                    "list_orders",
                    central(json!({
                        "cursor": "bogus",
                    })),
                )
                .await,
        ),
        (
            ErrorCode::ExpectedStateMismatch,
            server
                .call(
                    "owner",
                    "set_restaurant_status",
                    central(json!({
                        "status": "paused", "expected_status": "paused",
                    })),
                )
                .await,
        ),
        (
            ErrorCode::OrderStatusPreconditionFailed,
            server
                .call(
                    "owner",
                    "update_order_status",
                    central(json!({
                        "order_id": completed, "status": "accepted", "expected_status": "completed",
                    })),
                )
                .await,
        ),
        (
            ErrorCode::OutputTooLarge,
            server.call("owner", "get_transcript", central(json!({ "transcript_id": "trs_huge" }))).await,
        ),
    ];
    let k = key("mismatch");
    let send = |text: &str, k: &str| {
        central(json!({ "conversation_id": "cnv_c01", "text": text, "idempotency_key": k }))
    };
    expect_ok(&server.call("owner", "send_message", send("first", &k)).await);
    out.push((
        ErrorCode::IdempotencyMismatch,
        server.call("owner", "send_message", send("second", &k)).await,
    ));

    server.fault(json!({ "tool": "create_instruction", "latency_ms": 800 })).await;
    let args = central(json!({ "text": "Slow one", "idempotency_key": key("slow") }));
    let (a, b) = tokio::join!(
        server.call("owner", "create_instruction", args.clone()),
        server.call("owner", "create_instruction", args.clone())
    );
    let busy = if a.is_error { a } else { b };
    out.push((ErrorCode::OperationInProgress, busy));

    server.fault(json!({ "tool": "get_restaurant", "error": "dependency" })).await;
    out.push((
        ErrorCode::DependencyUnavailable,
        server.call("owner", "get_restaurant", central(json!({}))).await,
    ));
    server.fault(json!({ "tool": "list_instructions", "error": "internal" })).await;
    out.push((ErrorCode::InternalError, server.call("owner", "list_instructions", central(json!({}))).await));

    server.control("/deadlines", json!({ "read_ms": 250, "write_ms": 250 })).await;
    server.fault(json!({ "tool": "get_order", "latency_ms": 1000 })).await;
    server.fault(json!({ "tool": "set_restaurant_status", "latency_ms": 1000 })).await;
    out.push((
        ErrorCode::ToolTimeout,
        server.call("owner", "get_order", central(json!({ "order_id": "ord_c0001" }))).await,
    ));
    out.push((
        ErrorCode::OutcomeUnknown,
        server
            .call(
                "owner",
                "set_restaurant_status",
                central(json!({ "status": "paused", "expected_status": "open" })),
            )
            .await,
    ));
    out
}

// ENV-4, ENV-5: each code with its category and retryable flag, as golden files.
#[tokio::test(flavor = "multi_thread")]
async fn error_envelopes_match_snapshots() {
    let server = start().await;
    let provoked = provoke_each_code(&server).await;
    let codes: HashSet<ErrorCode> = provoked.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        codes.len(),
        ErrorCode::ALL.len() - 2,
        "every code but rate-limited and authentication-required"
    );
    for (code, reply) in &provoked {
        let error = expect_error(reply, *code);
        assert_eq!(error["category"], code.category().as_str(), "{code}");
        assert_eq!(error["retryable"], code.retryable(), "{code}");
        let with_retry = matches!(code, ErrorCode::OperationInProgress | ErrorCode::RateLimited);
        assert_eq!(
            error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0),
            with_retry,
            "{code}: retry_after_ms"
        );
        assert_eq!(error.get("required_scope").is_some(), *code == ErrorCode::ScopeRequired, "{code}");
        insta::assert_json_snapshot!(format!("error_{code}"), redacted(reply));
    }
}

// ENV-6: canaries in every kind of argument never come back in an error.
#[tokio::test(flavor = "multi_thread")]
async fn error_messages_never_echo_argument_values() {
    let server = start().await;
    let check = async |canary: &str, tool: &str, args: Value, code: ErrorCode| {
        assert!(args.to_string().contains(canary), "the canary {canary} is sent");
        let reply = server.call("owner", tool, args).await;
        assert_eq!(code_of(&reply), Some(code), "{tool}: {}", reply.body);
        let everything = reply.body.to_string().to_lowercase();
        assert!(!everything.contains(&canary.to_lowercase()), "{tool} echoes {canary}: {}", reply.body);
    };
    let c = "rst_central";
    let msg = |conversation: &str, text: &str, key: &str| {
        json!({
            "restaurant_id": c, "conversation_id": conversation, "text": text, "idempotency_key": key,
        })
    };
    let search = |rid: &str, query: &str| json!({ "restaurant_id": rid, "query": query });
    let analytics = |metric: &str, from: &str| {
        json!({
            "restaurant_id": c, "metrics": [metric], "from": from, "to": "2026-03-02",
        })
    };
    let restaurant = |org: &str, name: &str, timezone: &str| {
        json!({
            "organization_id": org, "name": name, "timezone": timezone, "idempotency_key": key("c"),
        })
    };
    let org = |name: &str, key: &str| json!({ "name": name, "idempotency_key": key });
    let order = |id: &str| json!({ "restaurant_id": c, "order_id": id });
    let update = |id: &str| {
        json!({
            "restaurant_id": c, "order_id": id, "status": "accepted", "expected_status": "received",
        })
    };
    let canary_key = "CANARYkey-5c1f0a";
    expect_ok(&server.call("owner", "send_message", msg("cnv_c01", "hello", canary_key)).await);
    let long = format!("CANARYlong-{}", "x".repeat(2100));
    let long_query = format!("CANARYquery-33c{}", "q".repeat(200));

    use ErrorCode::*;
    check(
        "CANARYtext-9d2e",
        "send_message",
        msg("cnv_rival", "CANARYtext-9d2e", &key("c")),
        ResourceNotFound,
    )
    .await;
    check("CANARYlong-", "send_message", msg("cnv_c01", &long, &key("c")), InvalidArguments).await;
    check(canary_key, "send_message", msg("cnv_c01", "CANARYother-77ab", canary_key), IdempotencyMismatch)
        .await;
    check(
        "CANARYother-77ab",
        "send_message",
        msg("cnv_c01", "CANARYother-77ab", canary_key),
        IdempotencyMismatch,
    )
    .await;
    check("CANARYquery-31c", "search_transcripts", search("rst_rival", "CANARYquery-31c"), ResourceForbidden)
        .await;
    check("CANARYquery-33c", "search_transcripts", search(c, &long_query), InvalidArguments).await;
    let mut extra = search(c, "CANARYquery-32c");
    extra["extra"] = json!(1);
    check("CANARYquery-32c", "search_transcripts", extra, InvalidArguments).await;
    check("CANARYorder44", "get_order", order("ord_CANARYorder44"), ResourceNotFound).await;
    check("CANARYbadid-45", "get_order", order("CANARYbadid-45"), InvalidArguments).await;
    check("CANARY55", "update_order_status", update("ord_CANARY55"), ResourceNotFound).await;
    check("CANARYrst46", "get_restaurant", json!({ "restaurant_id": "rst_CANARYrst46" }), ResourceForbidden)
        .await;
    let cursor = json!({ "restaurant_id": c, "cursor": "CANARYcursor-47" });
    check("CANARYcursor-47", "list_orders", cursor, CursorInvalid).await;
    let status = json!({ "restaurant_id": c, "status": ["CANARYstatus48"] });
    check("CANARYstatus48", "list_orders", status, InvalidArguments).await;
    let property = json!({ "restaurant_id": c, "canary_property_49": true });
    check("canary_property_49", "list_orders", property, InvalidArguments).await;
    check("CANARYorg-50", "create_organization", org("CANARYorg-50", "short"), InvalidArguments).await;
    check("CANARYk", "create_organization", org("Fine name", "CANARYk"), InvalidArguments).await;
    let zone = restaurant("org_maison", "Fine name", "CANARY/Zone!52");
    check("CANARY/Zone!52", "create_restaurant", zone, InvalidArguments).await;
    let foreign = restaurant("org_rival", "CANARYname-53", "UTC");
    check("CANARYname-53", "create_restaurant", foreign, ResourceForbidden).await;
    check("CANARYmetric54", "get_analytics", analytics("CANARYmetric54", "2026-01-01"), InvalidArguments)
        .await;
    check("2026-02-30", "get_analytics", analytics("orders_count", "2026-02-30"), InvalidArguments).await;
}
