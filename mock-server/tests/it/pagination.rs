//! Pagination and cursors (PAG-1..8): page sizes, complete keyset walks (also while orders
//! arrive), opaque and bound cursors, access re-checked per page, and message paging.

use std::collections::HashSet;

use chataigne_contract::ErrorCode;
use serde_json::{Value, json};

use crate::support::{code_of, dataset, expect_error, expect_ok, orders_newest_first, start};

fn central(extra: Value) -> Value {
    let mut args = json!({ "restaurant_id": "rst_central" });
    args.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
    args
}

fn expected_central_ids() -> Vec<String> {
    orders_newest_first("rst_central").iter().map(|o| o.id.clone()).collect()
}

// PAG-1
#[tokio::test(flavor = "multi_thread")]
async fn lists_return_twenty_items_by_default() {
    let server = start().await;
    let check = async |tool: &str, key: &str| {
        let reply = server.call("owner", tool, central(json!({}))).await;
        assert_eq!(reply.items(key).len(), 20, "{tool}");
        assert!(reply.next_cursor().is_some(), "{tool}: more follow");
    };
    check("list_orders", "orders").await;
    check("list_conversations", "conversations").await;
    let reply = server.call("owner", "list_orders", central(json!({}))).await;
    assert_eq!(reply.ids("orders"), expected_central_ids()[..20]);
}

// PAG-2
#[tokio::test(flavor = "multi_thread")]
async fn limit_accepts_one_to_fifty_integers_only() {
    let server = start().await;
    let check = async |limit: Value, expected: Option<usize>| {
        let reply = server.call("owner", "list_orders", central(json!({ "limit": limit }))).await;
        match expected {
            Some(n) => assert_eq!(reply.items("orders").len(), n, "limit {limit}"),
            None => {
                expect_error(&reply, ErrorCode::InvalidArguments);
            }
        }
    };
    check(json!(0), None).await;
    check(json!(51), None).await;
    check(json!(-1), None).await;
    check(json!(1.5), None).await;
    check(json!("7"), None).await;
    check(json!(null), None).await;
    check(json!(1_000_000_000_000u64), None).await;
    check(json!(1), Some(1)).await;
    check(json!(7), Some(7)).await;
    check(json!(50), Some(50)).await;
    // 7.0 is the JSON integer 7 (JSON Schema 2020-12): it means 7, not the default.
    check(json!(7.0), Some(7)).await;
}

// PAG-3
#[tokio::test(flavor = "multi_thread")]
async fn next_cursor_is_present_exactly_when_more_items_follow() {
    let server = start().await;
    let check = async |restaurant: &str, limit: u64, sizes: &[usize]| {
        let args = json!({ "restaurant_id": restaurant, "limit": limit });
        let pages = server.walk("owner", "list_orders", args, "orders").await;
        let got: Vec<usize> = pages.iter().map(|p| p.items("orders").len()).collect();
        assert_eq!(got, sizes, "{restaurant} at {limit}");
        for (i, page) in pages.iter().enumerate() {
            assert_eq!(page.next_cursor().is_some(), i + 1 < pages.len(), "{restaurant} page {i}");
        }
    };
    check("rst_small", 20, &[3]).await;
    check("rst_small", 3, &[3]).await;
    check("rst_small", 2, &[2, 1]).await;
    check("rst_small", 1, &[1, 1, 1]).await;
    check("rst_central", 50, &[50, 50, 37]).await;
}

// PAG-4
#[tokio::test(flavor = "multi_thread")]
async fn walking_every_page_yields_every_order_once_in_documented_order() {
    let server = start().await;
    let expected = expected_central_ids();
    assert_eq!(expected.len(), 137);
    for limit in [1, 7, 20, 50] {
        let pages = server.walk("viewer", "list_orders", central(json!({ "limit": limit })), "orders").await;
        let ids: Vec<String> = pages.iter().flat_map(|p| p.ids("orders")).collect();
        assert_eq!(ids, expected, "limit {limit}");
        assert_eq!(pages.len(), 137usize.div_ceil(limit), "limit {limit}");
    }
    // The walk returns the dataset's records themselves.
    let pages = server.walk("viewer", "list_orders", central(json!({ "limit": 50 })), "orders").await;
    let items: Vec<Value> = pages.iter().flat_map(|p| p.items("orders").clone()).collect();
    let records: Vec<Value> =
        orders_newest_first("rst_central").iter().map(|o| serde_json::to_value(o).expect("JSON")).collect();
    assert_eq!(items, records);
}

// PAG-4: filters walk the same way.
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_walk_yields_exactly_the_matching_orders() {
    let server = start().await;
    let check = async |filters: Value, keep: &dyn Fn(&chataigne_contract::dataset::Order) -> bool| {
        let mut args = central(filters.clone());
        args["limit"] = json!(7);
        let pages = server.walk("owner", "list_orders", args, "orders").await;
        let ids: Vec<String> = pages.iter().flat_map(|p| p.ids("orders")).collect();
        let expected: Vec<String> = orders_newest_first("rst_central")
            .into_iter()
            .filter(|o| keep(o))
            .map(|o| o.id.clone())
            .collect();
        assert!(!expected.is_empty(), "{filters}");
        assert_eq!(ids, expected, "{filters}");
    };
    check(json!({ "status": ["completed"] }), &|o| o.status == "completed").await;
    check(json!({ "status": ["received", "ready"] }), &|o| {
        ["received", "ready"].contains(&o.status.as_str())
    })
    .await;
    check(json!({ "channel": "phone" }), &|o| o.channel == "phone").await;
    check(json!({ "created_from": "2026-11-20T00:00:00Z", "created_to": "2026-11-25T23:59:59Z" }), &|o| {
        o.created_at.as_str() >= "2026-11-20T00:00:00Z" && o.created_at.as_str() <= "2026-11-25T23:59:59Z"
    })
    .await;
}

// PAG-4: keyset, not offset: orders arriving mid-walk cause no duplicate and no skip.
#[tokio::test(flavor = "multi_thread")]
async fn orders_arriving_during_a_walk_cause_no_duplicate_and_no_skip() {
    let server = start().await;
    let expected = expected_central_ids();
    for limit in [1, 7, 20, 50] {
        server.reset().await;
        let mut seen: Vec<String> = Vec::new();
        let mut inserted = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut args = central(json!({ "limit": limit }));
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let page = server.call("owner", "list_orders", args).await;
            seen.extend(page.ids("orders"));
            let (_, order) = server.control("/orders", json!({ "restaurant_id": "rst_central" })).await;
            inserted.insert(order["id"].as_str().expect("the new order's id").to_owned());
            cursor = page.next_cursor();
            if cursor.is_none() {
                break;
            }
        }
        let unique: HashSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "limit {limit}: a duplicate");
        let pre_existing: Vec<String> = seen.iter().filter(|id| !inserted.contains(*id)).cloned().collect();
        assert_eq!(pre_existing, expected, "limit {limit}: a skip or a reorder");
        // The new orders are really there: a fresh walk sees them first.
        let fresh = server.walk("owner", "list_orders", central(json!({ "limit": 50 })), "orders").await;
        let all: Vec<String> = fresh.iter().flat_map(|p| p.ids("orders")).collect();
        assert_eq!(all.len(), 137 + inserted.len(), "limit {limit}");
        assert!(all[..inserted.len()].iter().all(|id| inserted.contains(id)), "newest first");
    }
}

fn flip(cursor: &str, at: usize) -> String {
    let mut chars: Vec<char> = cursor.chars().collect();
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

// PAG-5
#[tokio::test(flavor = "multi_thread")]
async fn a_changed_cursor_is_invalid() {
    let server = start().await;
    let first = server.call("owner", "list_orders", central(json!({}))).await;
    let cursor = first.next_cursor().expect("a cursor");
    let dot = cursor.find('.').expect("body.tag");
    let mut variants = vec![
        String::new(),
        " ".into(),
        "bogus".into(),
        cursor[..cursor.len() - 1].to_owned(),
        cursor[1..].to_owned(),
        cursor[..dot].to_owned(),
        format!("{cursor}="),
        format!("{cursor}A"),
        format!(" {cursor}"),
        cursor.replace('.', ":"),
        cursor.replace('-', "+").replace('_', "/") + "+/",
        cursor.to_uppercase(),
    ];
    for at in [0, dot / 2, dot - 1, dot + 1, (dot + cursor.len()) / 2, cursor.len() - 2] {
        variants.push(flip(&cursor, at));
    }
    for variant in variants {
        assert_ne!(variant, cursor);
        let reply = server.call("owner", "list_orders", central(json!({ "cursor": variant }))).await;
        expect_error(&reply, ErrorCode::CursorInvalid);
    }
    // The intact cursor still works.
    let second = server.call("owner", "list_orders", central(json!({ "cursor": cursor }))).await;
    assert_eq!(second.ids("orders"), expected_central_ids()[20..40]);
}

// PAG-6
#[tokio::test(flavor = "multi_thread")]
async fn a_cursor_is_bound_to_its_filters_tool_client_and_user() {
    let server = start().await;
    let first = server.call("owner", "list_orders", central(json!({ "limit": 20 }))).await;
    let cursor = first.next_cursor().expect("a cursor");
    let check = async |persona: &str, tool: &str, mut args: Value| {
        args["cursor"] = json!(cursor);
        let reply = server.call(persona, tool, args.clone()).await;
        assert_eq!(
            code_of(&reply),
            Some(ErrorCode::CursorInvalid),
            "{persona} {tool} {args}: {}",
            reply.body
        );
    };
    check("owner", "list_orders", central(json!({ "status": ["completed"] }))).await;
    check("owner", "list_orders", central(json!({ "channel": "web" }))).await;
    check("owner", "list_orders", json!({ "restaurant_id": "rst_small" })).await;
    check("owner", "list_instructions", central(json!({}))).await;
    check("owner", "list_conversations", central(json!({}))).await;
    check("manager", "list_orders", central(json!({}))).await;
    check("owner_second_client", "list_orders", central(json!({}))).await;
    // A filtered cursor is bound to its filter too.
    let filtered =
        server.call("owner", "list_orders", central(json!({ "status": ["completed"], "limit": 5 }))).await;
    let filtered_cursor = filtered.next_cursor().expect("a cursor");
    let reply = server.call("owner", "list_orders", central(json!({ "cursor": filtered_cursor }))).await;
    expect_error(&reply, ErrorCode::CursorInvalid);
    // Another limit with the same filters continues where the page ended.
    let reply = server.call("owner", "list_orders", central(json!({ "cursor": cursor, "limit": 7 }))).await;
    assert_eq!(reply.ids("orders"), expected_central_ids()[20..27]);
    let reply = server.call("owner", "list_orders", central(json!({ "cursor": cursor }))).await;
    assert_eq!(reply.ids("orders"), expected_central_ids()[20..40]);
}

// PAG-7
#[tokio::test(flavor = "multi_thread")]
async fn a_membership_ending_mid_walk_forbids_the_next_page() {
    let server = start().await;
    let first = server.call("viewer", "list_orders", central(json!({}))).await;
    let cursor = first.next_cursor().expect("a cursor");
    let second = server.call("viewer", "list_orders", central(json!({ "cursor": cursor }))).await;
    let cursor = second.next_cursor().expect("a cursor");
    server.revoke("usr_viewer", "org_maison").await;
    let third = server.call("viewer", "list_orders", central(json!({ "cursor": cursor }))).await;
    expect_error(&third, ErrorCode::ResourceForbidden);
    assert!(!third.body.to_string().contains("ord_c"), "no order leaks: {}", third.body);
}

// PAG-7, the messages of a conversation: their cursor is a page of get_conversation.
#[tokio::test(flavor = "multi_thread")]
async fn a_membership_ending_mid_walk_forbids_the_next_page_of_messages() {
    let server = start().await;
    let args = |extra: Value| {
        let mut args = central(json!({ "conversation_id": "cnv_long", "message_limit": 5 }));
        args.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        args
    };
    let first = server.call("viewer", "get_conversation", args(json!({}))).await;
    let cursor = first.next_cursor().expect("a cursor");
    server.revoke("usr_viewer", "org_maison").await;
    let next = server.call("viewer", "get_conversation", args(json!({ "cursor": cursor }))).await;
    expect_error(&next, ErrorCode::ResourceForbidden);
    assert!(!next.body.to_string().contains("msg_long"), "no message leaks: {}", next.body);
}

fn long_conversation_ids() -> Vec<String> {
    let mut messages: Vec<_> =
        dataset().messages.iter().filter(|m| m.conversation_id == "cnv_long").collect();
    messages.sort_by(|a, b| (&b.sent_at, &b.id).cmp(&(&a.sent_at, &a.id)));
    messages.into_iter().map(|m| m.id.clone()).collect()
}

// PAG-8
#[tokio::test(flavor = "multi_thread")]
async fn conversation_detail_pages_messages_fifty_by_default_and_at_most_a_hundred() {
    let server = start().await;
    let expected = long_conversation_ids();
    assert_eq!(expected.len(), 150);
    assert_eq!(expected[0], "msg_long_150");
    let long = |extra: Value| {
        let mut args = central(json!({ "conversation_id": "cnv_long" }));
        args.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        args
    };
    let check = async |extra: Value, expected_len: Option<usize>| {
        let reply = server.call("owner", "get_conversation", long(extra.clone())).await;
        match expected_len {
            Some(n) => {
                assert_eq!(reply.items("messages").len(), n, "{extra}");
                assert_eq!(expect_ok(&reply)["conversation"]["message_count"], 150);
            }
            None => {
                expect_error(&reply, ErrorCode::InvalidArguments);
            }
        }
    };
    check(json!({}), Some(50)).await;
    check(json!({ "message_limit": 100 }), Some(100)).await;
    check(json!({ "message_limit": 1 }), Some(1)).await;
    check(json!({ "message_limit": 101 }), None).await;
    check(json!({ "message_limit": 0 }), None).await;
    check(json!({ "message_limit": 2.5 }), None).await;
    for (extra, pages) in
        [(json!({}), 3), (json!({ "message_limit": 100 }), 2), (json!({ "message_limit": 40 }), 4)]
    {
        let walk = server.walk("owner", "get_conversation", long(extra.clone()), "messages").await;
        let ids: Vec<String> = walk.iter().flat_map(|p| p.ids("messages")).collect();
        assert_eq!(ids, expected, "{extra}");
        assert_eq!(walk.len(), pages, "{extra}");
    }
}
