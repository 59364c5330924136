//! Idempotency (IDEM-1..7): key length, replays with one effect, mismatches, calls in progress,
//! concurrent duplicates, key scope, 24 h retention, failed calls, and authorization first.

use chataigne_contract::ErrorCode;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{Value, json};

use crate::support::{Reply, Server, code_of, concurrently, dataset, expect_error, expect_ok, key, start};

const CONVERSATION: &str = "cnv_c01";

fn send(text: &str, key: &str) -> Value {
    json!({
        "restaurant_id": "rst_central", "conversation_id": CONVERSATION, "text": text, "idempotency_key": key,
    })
}

fn baseline() -> u64 {
    dataset().messages.iter().filter(|m| m.conversation_id == CONVERSATION).count() as u64
}

async fn count(server: &Server) -> u64 {
    server.message_count("rst_central", CONVERSATION).await
}

fn replayed(reply: &Reply) -> bool {
    reply.meta()["replayed"] == true
}

// IDEM-1
#[tokio::test(flavor = "multi_thread")]
async fn keyed_writes_need_a_key_of_8_to_255_characters() {
    let server = start().await;
    let check = async |tool: &str, mut args: Value, key: Option<String>, ok: bool| {
        if let Some(k) = &key {
            args["idempotency_key"] = json!(k);
        }
        let reply = server.call("owner", tool, args).await;
        if ok {
            expect_ok(&reply);
        } else {
            assert_eq!(code_of(&reply), Some(ErrorCode::InvalidArguments), "{tool} {key:?}: {}", reply.body);
        }
    };
    let message = json!({ "restaurant_id": "rst_central", "conversation_id": CONVERSATION, "text": "hi" });
    check("send_message", message.clone(), None, false).await;
    check("send_message", message.clone(), Some("k".repeat(7)), false).await;
    check("send_message", message.clone(), Some("k".repeat(256)), false).await;
    check("send_message", message.clone(), Some(String::new()), false).await;
    check("send_message", message.clone(), Some("8".repeat(8)), true).await;
    check("send_message", message.clone(), Some("k".repeat(255)), true).await;
    // Characters, not bytes: 255 "é" are 510 bytes and a valid key; 7 are 14 bytes and too short.
    check("send_message", message.clone(), Some("é".repeat(255)), true).await;
    check("send_message", message.clone(), Some("é".repeat(7)), false).await;
    check("send_message", message.clone(), Some("é".repeat(256)), false).await;
    let instruction = json!({ "restaurant_id": "rst_central", "text": "Use the side door" });
    check("create_instruction", instruction.clone(), None, false).await;
    check("create_instruction", instruction, Some("i".repeat(7)), false).await;
    check("create_organization", json!({ "name": "Keyless" }), None, false).await;
    let restaurant = json!({ "organization_id": "org_maison", "name": "Keyless", "timezone": "UTC" });
    check("create_restaurant", restaurant, None, false).await;
    assert_eq!(count(&server).await, baseline() + 3, "only the three valid calls sent a message");
}

// IDEM-2
#[tokio::test(flavor = "multi_thread")]
async fn a_replay_returns_the_same_data_flagged_with_a_new_request_id_and_no_second_effect() {
    let server = start().await;
    let k = key("replay");
    let first = server.call("staff", "send_message", send("Your table is ready", &k)).await;
    expect_ok(&first);
    assert!(!replayed(&first));
    for _ in 0..3 {
        let again = server.call("staff", "send_message", send("Your table is ready", &k)).await;
        assert_eq!(expect_ok(&again), expect_ok(&first), "the same message, same id");
        assert!(replayed(&again));
        assert_ne!(again.request_id(), first.request_id());
    }
    assert_eq!(count(&server).await, baseline() + 1, "one message sent");

    let organizations =
        async || server.call("owner", "list_organizations", json!({})).await.ids("organizations");
    let before = organizations().await;
    let k = key("org");
    let args = json!({ "name": "Chataigne Lyon", "idempotency_key": k });
    let first = server.call("owner", "create_organization", args.clone()).await;
    let again = server.call("owner", "create_organization", args).await;
    assert!(replayed(&again));
    assert_eq!(expect_ok(&again), expect_ok(&first));
    assert_eq!(organizations().await.len(), before.len() + 1, "one organization created");
}

// IDEM-2, IDEM-3: arguments equal as JSON replay whatever their key order; any other text is a
// mismatch. A property over the wire, so few cases.
#[test]
fn key_order_is_irrelevant_and_any_other_text_mismatches() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let server = runtime.block_on(start());
    let k = key("perm");
    let text = "Merci, à tout de suite";
    let first = runtime.block_on(server.call("owner", "send_message", send(text, &k)));
    let stored = expect_ok(&first).clone();
    let fields: Vec<(&str, Value)> = vec![
        ("restaurant_id", json!("rst_central")),
        ("conversation_id", json!(CONVERSATION)),
        ("text", json!(text)),
        ("idempotency_key", json!(k)),
    ];
    let config = ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() };

    let mut runner = TestRunner::new(config.clone());
    let orders = Just(fields.clone()).prop_shuffle();
    runner
        .run(&orders, |fields| {
            let members: Vec<String> =
                fields.iter().map(|(name, value)| format!("{}:{value}", json!(name))).collect();
            let arguments = format!("{{ {} }}", members.join(" , "));
            let reply = runtime.block_on(server.call_text("owner", "send_message", &arguments));
            prop_assert!(replayed(&reply), "{arguments}: {}", reply.body);
            prop_assert_eq!(expect_ok(&reply), &stored);
            Ok(())
        })
        .expect("every permutation replays");

    let mut runner = TestRunner::new(config);
    let others = "[ -~]{1,40}".prop_filter("another text", move |t| t != text);
    runner
        .run(&others, |other| {
            let reply = runtime.block_on(server.call("owner", "send_message", send(&other, &k)));
            prop_assert_eq!(code_of(&reply), Some(ErrorCode::IdempotencyMismatch), "{}", reply.body);
            Ok(())
        })
        .expect("every other text mismatches");
    let total = runtime.block_on(count(&server));
    assert_eq!(total, baseline() + 1);
}

// IDEM-3
#[tokio::test(flavor = "multi_thread")]
async fn the_same_key_with_other_arguments_is_a_mismatch() {
    let server = start().await;
    let k = key("mismatch");
    expect_ok(&server.call("owner", "send_message", send("A table for two", &k)).await);
    let check = async |args: Value| {
        let reply = server.call("owner", "send_message", args).await;
        let error = expect_error(&reply, ErrorCode::IdempotencyMismatch);
        assert_eq!(error["category"], "conflict");
        assert_eq!(error["retryable"], false);
    };
    check(send("A table for three", &k)).await;
    check(send("A table for two ", &k)).await;
    check(send("a table for two", &k)).await;
    let mut other_conversation = send("A table for two", &k);
    other_conversation["conversation_id"] = json!("cnv_c02");
    check(other_conversation).await;
    assert_eq!(count(&server).await, baseline() + 1);
}

// IDEM-4
#[tokio::test(flavor = "multi_thread")]
async fn the_same_key_while_the_first_call_runs_is_in_progress() {
    let server = start().await;
    server.fault(json!({ "tool": "send_message", "latency_ms": 800 })).await;
    let k = key("busy");
    let args = send("Coming right up", &k);
    let (a, b) = tokio::join!(
        server.call("owner", "send_message", args.clone()),
        server.call("owner", "send_message", args.clone())
    );
    let (done, busy) = if a.is_error { (b, a) } else { (a, b) };
    expect_ok(&done);
    assert!(!replayed(&done));
    let error = expect_error(&busy, ErrorCode::OperationInProgress);
    assert_eq!(error["retryable"], true);
    assert!(error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0), "{error}");
    assert_eq!(count(&server).await, baseline() + 1);
    let later = server.call("owner", "send_message", args).await;
    assert!(replayed(&later));
    assert_eq!(expect_ok(&later), expect_ok(&done));
}

// IDEM-4
#[tokio::test(flavor = "multi_thread")]
async fn sixty_four_concurrent_duplicates_send_one_message() {
    let server = start().await;
    // The first call holds its key long enough for the others to arrive while it runs.
    server.fault(json!({ "tool": "send_message", "latency_ms": 300 })).await;
    let k = key("storm");
    let replies = concurrently(64, 64, |_| {
        let (server, k) = (&server, &k);
        async move { server.call("owner", "send_message", send("Only once", k)).await }
    })
    .await;
    let originals: Vec<&Reply> = replies.iter().filter(|r| !r.is_error && !replayed(r)).collect();
    assert_eq!(originals.len(), 1, "exactly one call ran");
    let data = expect_ok(originals[0]);
    for reply in &replies {
        match code_of(reply) {
            None => assert_eq!(expect_ok(reply), data, "a replay carries the stored message"),
            Some(ErrorCode::OperationInProgress) => {}
            Some(other) => panic!("unexpected {other}: {}", reply.body),
        }
    }
    assert_eq!(count(&server).await, baseline() + 1, "one message stored");
}

// IDEM-5
#[tokio::test(flavor = "multi_thread")]
async fn a_key_is_scoped_by_client_user_and_tool() {
    let server = start().await;
    let k = key("scope");
    let original = server.call("owner", "send_message", send("From the console", &k)).await;
    let check = async |persona: &str, tool: &str, args: Value| {
        let reply = server.call(persona, tool, args).await;
        expect_ok(&reply);
        assert!(!replayed(&reply), "{persona} {tool}: an independent key runs");
        reply
    };
    // Other arguments too: neither a replay nor a mismatch.
    let second = check("owner_second_client", "send_message", send("From the second client", &k)).await;
    check("manager", "send_message", send("From the manager", &k)).await;
    let instruction =
        json!({ "restaurant_id": "rst_central", "text": "Same key, other tool", "idempotency_key": k });
    check("owner", "create_instruction", instruction).await;
    assert_eq!(count(&server).await, baseline() + 3);
    // Each scope still replays its own result.
    let again = server.call("owner", "send_message", send("From the console", &k)).await;
    assert_eq!(expect_ok(&again), expect_ok(&original));
    let again = server.call("owner_second_client", "send_message", send("From the second client", &k)).await;
    assert_eq!(expect_ok(&again), expect_ok(&second));
    assert!(replayed(&again));
}

// IDEM-6
#[tokio::test(flavor = "multi_thread")]
async fn a_key_is_remembered_for_24_hours_then_forgotten() {
    let server = start().await;
    let k = key("day");
    let first = server.call("owner", "send_message", send("See you tomorrow", &k)).await;
    server.advance(23 * 3600 + 59 * 60).await;
    let replay = server.call("owner", "send_message", send("See you tomorrow", &k)).await;
    assert!(replayed(&replay));
    assert_eq!(expect_ok(&replay), expect_ok(&first));
    server.advance(2 * 60).await;
    let fresh = server.call("owner", "send_message", send("See you tomorrow", &k)).await;
    assert!(!replayed(&fresh), "after 24 h the key runs as a new call");
    assert_ne!(expect_ok(&fresh)["message"]["id"], expect_ok(&first)["message"]["id"]);
    assert_eq!(count(&server).await, baseline() + 2, "a second message");
}

// IDEM-7
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_call_leaves_its_key_free() {
    let server = start().await;
    let check = async |persona: &str, tool: &str, failing: Value, code: ErrorCode, corrected: Value| {
        let reply = server.call(persona, tool, failing).await;
        expect_error(&reply, code);
        let reply = server.call(persona, tool, corrected).await;
        expect_ok(&reply);
        assert!(!replayed(&reply), "{tool} after {code}: the corrected call runs");
    };
    let k = key("free");
    let mut foreign = send("Hello", &k);
    foreign["conversation_id"] = json!("cnv_rival");
    check("staff", "send_message", foreign, ErrorCode::ResourceNotFound, send("Hello", &k)).await;
    let k = key("free");
    let mut elsewhere = send("Hello", &k);
    elsewhere["restaurant_id"] = json!("rst_small");
    check("staff", "send_message", elsewhere, ErrorCode::ResourceForbidden, send("Hello", &k)).await;
    let k = key("free");
    check(
        "staff",
        "send_message",
        send(&"x".repeat(2001), &k),
        ErrorCode::InvalidArguments,
        send("Hello", &k),
    )
    .await;
    let k = key("free");
    let restaurant = |org: &str| {
        json!({
            "organization_id": org, "name": "Annexe", "timezone": "Europe/Paris", "idempotency_key": k,
        })
    };
    check(
        "owner",
        "create_restaurant",
        restaurant("org_rival"),
        ErrorCode::ResourceForbidden,
        restaurant("org_maison"),
    )
    .await;
    // An unexpected failure in the effect frees the key too.
    let k = key("free");
    let instruction = json!({ "restaurant_id": "rst_central", "text": "Fragile", "idempotency_key": k });
    server.fault(json!({ "tool": "create_instruction", "error": "internal" })).await;
    expect_error(
        &server.call("manager", "create_instruction", instruction.clone()).await,
        ErrorCode::InternalError,
    );
    server.fault(json!({ "tool": "create_instruction" })).await;
    let reply = server.call("manager", "create_instruction", instruction).await;
    assert!(!replayed(&reply) && !reply.is_error, "{}", reply.body);
}

// IDEM-7: authorization is checked before a replay.
#[tokio::test(flavor = "multi_thread")]
async fn a_user_who_lost_access_gets_forbidden_not_the_stored_result() {
    let server = start().await;
    let k = key("revoked");
    let first = server.call("staff", "send_message", send("Before the revocation", &k)).await;
    let message_id = expect_ok(&first)["message"]["id"].as_str().expect("an id").to_owned();
    server.revoke("usr_staff", "org_maison").await;
    let replay = server.call("staff", "send_message", send("Before the revocation", &k)).await;
    expect_error(&replay, ErrorCode::ResourceForbidden);
    assert!(!replay.body.to_string().contains(&message_id), "the stored result does not leak");
}

// IDEM-1..3 at the memory cap: a store full of unexpired records refuses new keys with
// MCP_DEPENDENCY_UNAVAILABLE (retryable) before any effect, and still answers known keys;
// expired records are swept first (docs/DECISIONS.md).
#[tokio::test(flavor = "multi_thread")]
async fn a_full_idempotency_store_refuses_new_keys_with_a_retryable_error_and_no_effect() {
    if std::env::var("IT_REDIS").is_ok() {
        return; // The cap is the in-memory store's; Redis bounds itself (maxmemory).
    }
    let capacity = 32;
    let server = crate::support::start_with(|c| c.idempotency_capacity = capacity).await;
    let (mut sent, mut refused) = (Vec::new(), None);
    for i in 0..4 * capacity {
        let k = key("full");
        let reply = server.call("owner", "send_message", send(&format!("Message {i}"), &k)).await;
        if code_of(&reply) == Some(ErrorCode::DependencyUnavailable) {
            refused = Some((reply, k, i));
            break;
        }
        expect_ok(&reply);
        sent.push(k);
    }
    let (reply, refused_key, i) = refused.expect("the store fills up");
    assert!(sent.len() <= capacity, "{} keys held by a store of {capacity}", sent.len());
    assert_eq!(expect_error(&reply, ErrorCode::DependencyUnavailable)["retryable"], true);
    assert_eq!(count(&server).await, baseline() + sent.len() as u64, "the refused write sent nothing");
    // Known keys need no room: a replay and a mismatch are answered as ever.
    let replay = server.call("owner", "send_message", send("Message 0", &sent[0])).await;
    assert!(replayed(&replay), "{}", replay.body);
    let other = server.call("owner", "send_message", send("Other text", &sent[0])).await;
    expect_error(&other, ErrorCode::IdempotencyMismatch);
    // Unkeyed calls do not need the store.
    expect_ok(&server.call("owner", "list_orders", json!({ "restaurant_id": "rst_central" })).await);
    // A day later the old records are swept and the refused key runs, once.
    server.advance(24 * 3600).await;
    let retried = server.call("owner", "send_message", send(&format!("Message {i}"), &refused_key)).await;
    expect_ok(&retried);
    assert!(!replayed(&retried));
    assert_eq!(count(&server).await, baseline() + sent.len() as u64 + 1);
}
