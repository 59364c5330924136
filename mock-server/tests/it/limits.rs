//! Limits (LIM-1, LIM-5..7): analytics bounds, pages cut to fit 128 KiB, items too large to
//! return, the 1 MiB body limit and string lengths. Rate limits and deadlines have their modules.

use chataigne_contract::ErrorCode;
use chataigne_contract::tools::METRICS;
use serde_json::{Value, json};

use crate::support::{code_of, dataset, expect_error, expect_ok, key, orders_newest_first, start, token};

fn analytics(metrics: &[&str], from: &str, to: &str) -> Value {
    json!({ "restaurant_id": "rst_central", "metrics": metrics, "from": from, "to": to })
}

// LIM-1
#[tokio::test(flavor = "multi_thread")]
async fn analytics_takes_one_to_eight_distinct_metrics_over_at_most_366_days() {
    let server = start().await;
    let check = async |args: Value, ok: bool| {
        let reply = server.call("viewer", "get_analytics", args.clone()).await;
        if ok {
            expect_ok(&reply);
        } else {
            assert_eq!(code_of(&reply), Some(ErrorCode::InvalidArguments), "{args}: {}", reply.body);
        }
    };
    let (one, eight, nine) = (&METRICS[..1], &METRICS[..8], &METRICS[..9]);
    check(analytics(one, "2026-11-01", "2026-11-30"), true).await;
    check(analytics(eight, "2026-11-01", "2026-11-30"), true).await;
    check(analytics(nine, "2026-11-01", "2026-11-30"), false).await;
    check(analytics(&METRICS, "2026-11-01", "2026-11-30"), false).await;
    check(analytics(&[], "2026-11-01", "2026-11-30"), false).await;
    check(analytics(&["orders_count", "orders_count"], "2026-11-01", "2026-11-30"), false).await;
    check(analytics(&["orders_count", "revenue_cents", "orders_count"], "2026-11-01", "2026-11-30"), false)
        .await;
    check(analytics(&["refunds"], "2026-11-01", "2026-11-30"), false).await;
    // 366 days inclusive, across a year without and a year with 29 February.
    check(analytics(one, "2025-12-01", "2026-12-01"), true).await;
    check(analytics(one, "2024-01-01", "2024-12-31"), true).await;
    check(analytics(one, "2025-11-30", "2026-12-01"), false).await;
    check(analytics(one, "2024-01-01", "2025-01-01"), false).await;
    // 366 days ending on 29 February, and a day more through it (365-day years count it 366).
    check(analytics(one, "2023-03-01", "2024-02-29"), true).await;
    check(analytics(one, "2023-03-01", "2024-03-01"), false).await;
    check(analytics(one, "2024-02-29", "2025-03-01"), false).await;
    check(analytics(one, "2026-11-30", "2026-11-30"), true).await;
    check(analytics(one, "2026-11-30", "2026-11-29"), false).await;
    check(analytics(one, "2026-02-29", "2026-03-01"), false).await;
    check(analytics(one, "2026-11-01T00:00:00Z", "2026-11-30"), false).await;
    let mut weekly = analytics(one, "2026-11-01", "2026-11-30");
    weekly["granularity"] = json!("week");
    check(weekly, true).await;
    weekly = analytics(one, "2026-11-01", "2026-11-30");
    weekly["granularity"] = json!("hour");
    check(weekly, false).await;
}

// LIM-1: what the accepted range returns is computed from the data.
#[tokio::test(flavor = "multi_thread")]
async fn analytics_counts_the_orders_of_the_range() {
    let server = start().await;
    let mut args = analytics(&["orders_count", "completed_orders"], "2026-01-01", "2026-12-01");
    args["granularity"] = json!("month");
    let reply = server.call("viewer", "get_analytics", args).await;
    let data = expect_ok(&reply);
    let orders: Vec<_> = dataset().orders_of("rst_central").collect();
    let completed = orders.iter().filter(|o| o.status == "completed").count();
    assert_eq!(data["totals"]["orders_count"], orders.len());
    assert_eq!(data["totals"]["completed_orders"], completed);
    let series = data["series"].as_array().expect("series");
    assert_eq!(series.len(), 12, "January to December");
    let sum: u64 = series.iter().map(|p| p["values"]["orders_count"].as_u64().expect("a count")).sum();
    assert_eq!(sum, orders.len() as u64);
}

// LIM-5
#[tokio::test(flavor = "multi_thread")]
async fn a_page_over_128_kib_is_shortened_and_continues_exactly() {
    let server = start().await;
    let args = json!({ "restaurant_id": "rst_large", "limit": 50 });
    let first = server.call("owner", "list_orders", args.clone()).await;
    let n = first.items("orders").len();
    assert!(n > 0 && n < 50, "a shortened page, got {n}");
    assert_eq!(first.meta()["truncated"], true);
    assert!(first.next_cursor().is_some());
    let pages = server.walk("owner", "list_orders", args, "orders").await;
    let ids: Vec<String> = pages.iter().flat_map(|p| p.ids("orders")).collect();
    let expected: Vec<String> = orders_newest_first("rst_large").iter().map(|o| o.id.clone()).collect();
    assert_eq!(expected.len(), 50);
    assert_eq!(ids, expected, "nothing lost, nothing repeated");
    assert!(pages.len() > 1);
    let last = pages.last().expect("a last page");
    assert!(last.next_cursor().is_none());
    for page in &pages[..pages.len() - 1] {
        assert_eq!(page.meta()["truncated"], true, "every full page was cut by size, not by limit");
    }
    // A page under the limit is not marked.
    let small =
        server.call("owner", "list_orders", json!({ "restaurant_id": "rst_large", "limit": 5 })).await;
    assert_eq!(small.items("orders").len(), 5);
    assert_eq!(small.meta()["truncated"], false);
}

// LIM-5 through a filter: the filtered query path is cut as the plain one is, for every
// persona that may list the orders.
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_page_over_128_kib_is_truncated_too() {
    let server = start().await;
    let args = json!({ "restaurant_id": "rst_large", "limit": 50, "status": ["completed"] });
    let completed: Vec<String> = orders_newest_first("rst_large")
        .iter()
        .filter(|o| o.status == "completed")
        .map(|o| o.id.clone())
        .collect();
    for persona in ["owner", "manager", "viewer"] {
        let first = server.call(persona, "list_orders", args.clone()).await;
        assert_eq!(first.meta()["truncated"], true, "{persona}: {}", first.body);
        assert!(first.next_cursor().is_some(), "{persona}");
        let pages = server.walk(persona, "list_orders", args.clone(), "orders").await;
        let ids: Vec<String> = pages.iter().flat_map(|p| p.ids("orders")).collect();
        assert_eq!(ids, completed, "{persona}: nothing lost, nothing repeated");
    }
}

// LIM-6
#[tokio::test(flavor = "multi_thread")]
async fn a_single_item_over_128_kib_is_output_too_large() {
    let server = start().await;
    let args = json!({ "restaurant_id": "rst_central", "transcript_id": "trs_huge" });
    let reply = server.call("owner", "get_transcript", args).await;
    expect_error(&reply, ErrorCode::OutputTooLarge);
    assert!(reply.body.to_string().len() < 4096, "no part of the transcript comes back");
    // The same transcript is still searchable: a hit is a snippet, not the text.
    let huge = dataset().transcripts.iter().find(|t| t.id == "trs_huge").expect("trs_huge");
    let phrase: String = huge.text.chars().skip(70_000).take(12).collect();
    let args = json!({ "restaurant_id": "rst_central", "query": phrase });
    let reply = server.call("owner", "search_transcripts", args).await;
    assert!(reply.ids("transcripts").contains(&"trs_huge".to_owned()), "{}", reply.body);
}

// LIM-7
#[tokio::test(flavor = "multi_thread")]
async fn a_body_over_one_mib_is_refused_with_413() {
    let server = start().await;
    let auth = format!("Bearer {}", token("owner"));
    let body = |text_len: usize| {
        let arguments = json!({
            "restaurant_id": "rst_central", "conversation_id": "cnv_c01",
            "text": "x".repeat(text_len), "idempotency_key": key("big"),
        });
        let params = json!({ "name": "send_message", "arguments": arguments });
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }).to_string()
    };
    let http = server.post_mcp(&[("authorization", &auth)], body(1024 * 1024 + 1)).await;
    assert_eq!(http.status, 413, "{}", &http.text[..http.text.len().min(200)]);
    // Just under the limit, the body is read and the schema refuses the text.
    let http = server.post_mcp(&[("authorization", &auth)], body(1000 * 1000)).await;
    assert_eq!(http.status, 200);
    assert_eq!(http.json["result"]["structuredContent"]["data"]["error"]["code"], "MCP_INVALID_ARGUMENTS");
    assert_eq!(server.message_count("rst_central", "cnv_c01").await, message_count_in_dataset("cnv_c01"));
}

// LIM-7 when the body does not say its length: sent chunked with no Content-Length, a body over
// 1 MiB is refused with 413 all the same (not served, not a 5xx), and one just under it is read.
#[tokio::test(flavor = "multi_thread")]
async fn a_chunked_body_over_one_mib_is_refused_with_413_too() {
    let server = start().await;
    let auth = format!("Bearer {}", token("owner"));
    let chunked = |text_len: usize| {
        let arguments = json!({
            "restaurant_id": "rst_central", "conversation_id": "cnv_c01",
            "text": "x".repeat(text_len), "idempotency_key": key("chunked"),
        });
        let params = json!({ "name": "send_message", "arguments": arguments });
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }).to_string();
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
            body.into_bytes().chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
        reqwest::Body::wrap_stream(futures::stream::iter(pieces))
    };
    let http = server.post_mcp(&[("authorization", &auth)], chunked(1024 * 1024 + 1)).await;
    assert_eq!(http.status, 413, "{}", &http.text[..http.text.len().min(200)]);
    let http = server.post_mcp(&[("authorization", &auth)], chunked(1000 * 1000)).await;
    assert_eq!(http.status, 200, "{}", &http.text[..http.text.len().min(200)]);
    assert_eq!(http.json["result"]["structuredContent"]["data"]["error"]["code"], "MCP_INVALID_ARGUMENTS");
    assert_eq!(server.message_count("rst_central", "cnv_c01").await, message_count_in_dataset("cnv_c01"));
}

fn message_count_in_dataset(conversation: &str) -> u64 {
    dataset().messages.iter().filter(|m| m.conversation_id == conversation).count() as u64
}

// LIM-7: string arguments have their documented maxLength, and the maximum itself is accepted.
#[tokio::test(flavor = "multi_thread")]
async fn strings_over_their_max_length_are_invalid_arguments() {
    let server = start().await;
    let check = async |tool: &str, args: Value, ok: bool| {
        let reply = server.call("owner", tool, args).await;
        if ok {
            expect_ok(&reply);
        } else {
            expect_error(&reply, ErrorCode::InvalidArguments);
        }
    };
    let send = |len: usize| {
        json!({
            "restaurant_id": "rst_central", "conversation_id": "cnv_c01",
            "text": "é".repeat(len), "idempotency_key": key("len"),
        })
    };
    check("send_message", send(2000), true).await;
    check("send_message", send(2001), false).await;
    check("send_message", send(0), false).await;
    let instruction = |len: usize| {
        json!({
            "restaurant_id": "rst_central", "text": "i".repeat(len), "idempotency_key": key("len"),
        })
    };
    check("create_instruction", instruction(2000), true).await;
    check("create_instruction", instruction(2001), false).await;
    let search = |len: usize| json!({ "restaurant_id": "rst_central", "query": "q".repeat(len) });
    check("search_transcripts", search(200), true).await;
    check("search_transcripts", search(201), false).await;
    check("search_transcripts", search(0), false).await;
    let org = |len: usize| json!({ "name": "n".repeat(len), "idempotency_key": key("len") });
    check("create_organization", org(120), true).await;
    check("create_organization", org(121), false).await;
    let restaurant = |name: usize, tz: String| {
        json!({
            "organization_id": "org_maison", "name": "r".repeat(name),
            "timezone": tz, "idempotency_key": key("len"),
        })
    };
    check("create_restaurant", restaurant(120, "America/Argentina/Buenos_Aires".into()), true).await;
    check("create_restaurant", restaurant(121, "UTC".into()), false).await;
    check("create_restaurant", restaurant(5, format!("Europe/{}", "P".repeat(60))), false).await;
    check("create_restaurant", restaurant(5, "not a zone".into()), false).await;
    let order = |id: String| json!({ "restaurant_id": "rst_central", "order_id": id });
    check("get_order", order(format!("ord_{}", "c".repeat(61))), false).await;
    check("get_restaurant", json!({ "restaurant_id": format!("rst_{}", "x".repeat(61)) }), false).await;
    let cursor = json!({ "restaurant_id": "rst_central", "cursor": "c".repeat(4097) });
    check("list_orders", cursor, false).await;
}
