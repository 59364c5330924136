//! Authentication and authorization (AUTH-1..8): 401s and resource metadata, audiences, scopes,
//! tenants (no existence oracle, no cross-tenant child), roles, revocation, the check order, and
//! every tool against every persona.

use chataigne_contract::{ErrorCode, ToolName};
use serde_json::{Value, json};

use crate::support::{
    PERSONAS, Reply, Server, code_of, dataset, expect_error, expect_ok, key, order_in, start, token,
    valid_args,
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Allowed,
    Scope,
    Forbidden,
}

fn outcome(reply: &Reply) -> Outcome {
    match code_of(reply) {
        None => Outcome::Allowed,
        Some(ErrorCode::ScopeRequired) => Outcome::Scope,
        Some(ErrorCode::ResourceForbidden) => Outcome::Forbidden,
        Some(other) => panic!("unexpected {other}: {}", reply.body),
    }
}

// AUTH-3, AUTH-4, AUTH-6, AUTH-7: every tool × every persona on the busy restaurant.
#[tokio::test(flavor = "multi_thread")]
async fn every_tool_against_every_persona() {
    let server = start().await;
    // Columns: owner, manager, staff, viewer, revoked, outsider, noscope.
    // A: allowed, F: MCP_RESOURCE_FORBIDDEN, S: MCP_SCOPE_REQUIRED.
    let table = [
        ("list_organizations", "AAAAAAS"),
        ("list_restaurants", "AAAAAAS"),
        ("get_restaurant", "AAAAFFS"),
        ("list_orders", "AAAAFFS"),
        ("get_order", "AAAAFFS"),
        ("list_conversations", "AAAAFFS"),
        ("get_conversation", "AAAAFFS"),
        ("search_transcripts", "AAAAFFS"),
        ("get_transcript", "AAAAFFS"),
        ("list_instructions", "AAAAFFS"),
        ("get_analytics", "AAAAFFS"),
        ("update_order_status", "AAAFFFS"),
        ("set_restaurant_status", "AAFFFFS"),
        ("send_message", "AAAFFFS"),
        ("create_instruction", "AAFFFFS"),
        ("create_organization", "AAAAAAS"),
        ("create_restaurant", "AFFFFFS"),
    ];
    assert_eq!(table.len(), ToolName::ALL.len());
    let mut mismatches = Vec::new();
    for (name, row) in table {
        let tool = ToolName::parse(name).expect("a contract tool");
        for (persona, expected) in PERSONAS.iter().zip(row.chars()) {
            let expected = match expected {
                'A' => Outcome::Allowed,
                'S' => Outcome::Scope,
                _ => Outcome::Forbidden,
            };
            if tool.kind().is_write() {
                server.reset().await;
            }
            let reply = server.call(persona, name, valid_args(tool)).await;
            let got = outcome(&reply);
            if got != expected {
                mismatches.push(format!("{name} as {persona}: expected {expected:?}, got {got:?}"));
            }
            if got == Outcome::Scope {
                assert_eq!(expect_error(&reply, ErrorCode::ScopeRequired)["required_scope"], tool.scope());
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

// AUTH-1
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_or_invalid_token_gets_401_with_the_resource_metadata() {
    let server = start().await;
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }).to_string();
    let canary = "dev-token-CANARY7f3a9";
    for authorization in [
        None,
        Some(format!("Bearer {canary}")),
        Some("Bearer dev-token-nobody".to_owned()),
        Some(format!("Basic {}", token("owner"))),
        Some(token("owner")),
        Some("Bearer ".to_owned()),
        Some(format!("Bearer {}x", token("owner"))),
    ] {
        let headers: Vec<(&str, &str)> =
            authorization.iter().map(|a| ("authorization", a.as_str())).collect();
        let http = server.post_mcp(&headers, list.clone()).await;
        assert_eq!(http.status, 401, "{authorization:?}: {}", http.text);
        let challenge = http.header("www-authenticate").expect("WWW-Authenticate");
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        assert!(challenge.contains("resource_metadata=\""), "{challenge}");
        let everything = format!("{:?}{}", http.headers, http.text);
        assert!(!everything.contains("CANARY"), "the token is never echoed: {everything}");
    }
    // The metadata URL of the challenge answers, as RFC 9728 says.
    let http = server.post_mcp(&[], list).await;
    let challenge = http.header("www-authenticate").expect("WWW-Authenticate");
    let url =
        challenge.split("resource_metadata=\"").nth(1).and_then(|s| s.split('"').next()).expect("a URL");
    let path = url.strip_prefix(&server.base).unwrap_or_else(|| panic!("{url} is on this server"));
    for path in [path, "/.well-known/oauth-protected-resource"] {
        let metadata = server.get(path, &[]).await;
        assert_eq!(metadata.status, 200, "{path}");
        assert_eq!(metadata.json["resource"], format!("{}/mcp", server.base), "{path}");
        let servers = metadata.json["authorization_servers"].as_array().expect("authorization_servers");
        assert!(!servers.is_empty(), "{path}: names the authorization server");
        let scopes: Vec<&str> = metadata.json["scopes_supported"]
            .as_array()
            .expect("scopes")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(scopes, chataigne_contract::tools::SCOPES, "{path}");
    }
}

// AUTH-1: the token is checked on every request, not at the handshake only: after the owner's
// own calls, each request a session carries (its protocol version named) without a token, or with
// another audience's, is 401.
#[tokio::test(flavor = "multi_thread")]
async fn every_request_after_the_handshake_needs_its_own_token() {
    let server = start().await;
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    assert_eq!(server.rpc("owner", &list).await.status, 200);
    let version = ("mcp-protocol-version", chataigne_contract::PROTOCOL_VERSIONS[0]);
    let other = format!("Bearer {}", token("other_audience"));
    for method in ["tools/list", "resources/list", "prompts/list", "ping"] {
        let body = json!({ "jsonrpc": "2.0", "id": 2, "method": method }).to_string();
        for headers in [vec![version], vec![version, ("authorization", other.as_str())]] {
            let http = server.post_mcp(&headers, body.clone()).await;
            assert_eq!(http.status, 401, "{method} {headers:?}: {}", http.text);
            assert!(http.header("www-authenticate").is_some_and(|c| c.contains("resource_metadata=")));
        }
    }
}

// AUTH-2
#[tokio::test(flavor = "multi_thread")]
async fn a_token_for_another_audience_gets_401() {
    let server = start().await;
    let http =
        server.rpc("other_audience", &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).await;
    assert_eq!(http.status, 401, "{}", http.text);
    assert!(http.header("www-authenticate").is_some_and(|c| c.contains("resource_metadata=")));
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "get_restaurant", "arguments": { "restaurant_id": "rst_central" } } });
    assert_eq!(server.rpc("other_audience", &call).await.status, 401);
}

// AUTH-3
#[tokio::test(flavor = "multi_thread")]
async fn a_token_without_the_scope_gets_scope_required_naming_it() {
    let server = start().await;
    for tool in ToolName::ALL {
        let reply = server.call("noscope", tool.as_str(), valid_args(*tool)).await;
        let error = expect_error(&reply, ErrorCode::ScopeRequired);
        assert_eq!(error["required_scope"], tool.scope(), "{tool}");
        assert_eq!(error["category"], "authorization");
        assert_eq!(error["retryable"], false);
    }
}

/// The error as seen by a client, without its request ID.
fn comparable(reply: &Reply) -> String {
    reply.body["result"].to_string().replace(reply.request_id(), "req_")
}

// AUTH-4 on the resources surface: a restaurant's resource outside the caller's memberships is
// one "resource not found", the same as an absent one's but for the URI, and tells nothing of it.
#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_restaurant_resource_reads_as_an_absent_one() {
    let server = start().await;
    let read = async |id: &str| {
        let uri = format!("chataigne://restaurants/{id}");
        let message =
            json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": { "uri": uri } });
        let answer = server.rpc("owner", &message).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert!(answer.json.get("result").is_none(), "{id} is served: {}", answer.text);
        let mut error = answer.json["error"].clone();
        assert_eq!(error["data"]["uri"], json!(uri), "{}", answer.text);
        error["data"]["uri"] = Value::Null;
        (error, answer.text)
    };
    let (foreign, text) = read("rst_rival").await;
    let (absent, _) = read("rst_nowhere").await;
    assert_eq!(foreign, absent, "no existence oracle");
    let rival = dataset().restaurants.iter().find(|r| r.id == "rst_rival").expect("the foreign restaurant");
    assert!(!text.contains(&rival.name) && !text.contains(&rival.created_at), "{text}");
    // The owner's own restaurant is served through the same template.
    let own = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/read",
        "params": { "uri": "chataigne://restaurants/rst_central" } });
    let answer = server.rpc("owner", &own).await;
    assert!(answer.json["result"]["contents"][0]["text"].is_string(), "{}", answer.text);
}

// AUTH-4
#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_target_and_an_absent_one_get_identical_forbidden_answers() {
    let server = start().await;
    let check = async |tool: &str, foreign: Value, absent: Value| {
        let a = server.call("owner", tool, foreign).await;
        let b = server.call("owner", tool, absent).await;
        expect_error(&a, ErrorCode::ResourceForbidden);
        expect_error(&b, ErrorCode::ResourceForbidden);
        assert_eq!(comparable(&a), comparable(&b), "{tool}: no existence oracle");
    };
    let rst = |id: &str| json!({ "restaurant_id": id });
    check("get_restaurant", rst("rst_rival"), rst("rst_nowhere")).await;
    check("list_orders", rst("rst_rival"), rst("rst_nowhere")).await;
    check("list_instructions", rst("rst_rival"), rst("rst_nowhere")).await;
    let order = |r: &str| json!({ "restaurant_id": r, "order_id": "ord_r0001" });
    check("get_order", order("rst_rival"), order("rst_nowhere")).await;
    let status = |r: &str| json!({ "restaurant_id": r, "status": "paused", "expected_status": "open" });
    check("set_restaurant_status", status("rst_rival"), status("rst_nowhere")).await;
    let message = |r: &str| {
        json!({
            "restaurant_id": r, "conversation_id": "cnv_rival",
            "text": "Hi", "idempotency_key": key("oracle"),
        })
    };
    check("send_message", message("rst_rival"), message("rst_nowhere")).await;
    let org = |o: &str| json!({ "organization_id": o });
    check("list_restaurants", org("org_rival"), org("org_nowhere")).await;
    let restaurant = |o: &str| {
        json!({
            "organization_id": o, "name": "Mine now", "timezone": "UTC", "idempotency_key": key("oracle"),
        })
    };
    check("create_restaurant", restaurant("org_rival"), restaurant("org_nowhere")).await;
}

// AUTH-5
#[tokio::test(flavor = "multi_thread")]
async fn a_child_through_a_restaurant_that_does_not_own_it_is_not_found() {
    let server = start().await;
    let check = async |tool: &str, foreign: Value, absent: Value| {
        let a = server.call("owner", tool, foreign.clone()).await;
        let b = server.call("owner", tool, absent).await;
        expect_error(&a, ErrorCode::ResourceNotFound);
        expect_error(&b, ErrorCode::ResourceNotFound);
        assert_eq!(comparable(&a), comparable(&b), "{tool}: foreign and absent children look alike");
        assert_no_markers(&a, &tenant_markers("org_rival"), tool);
    };
    let c = "rst_central";
    let get_order = |o: &str| json!({ "restaurant_id": c, "order_id": o });
    check("get_order", get_order("ord_r0001"), get_order("ord_nowhere")).await;
    let in_small = json!({ "restaurant_id": "rst_small", "order_id": "ord_c0001" });
    check("get_order", in_small, json!({ "restaurant_id": "rst_small", "order_id": "ord_nowhere" })).await;
    let conversation = |id: &str| json!({ "restaurant_id": c, "conversation_id": id });
    check("get_conversation", conversation("cnv_rival"), conversation("cnv_nowhere")).await;
    let transcript = |id: &str| json!({ "restaurant_id": c, "transcript_id": id });
    check("get_transcript", transcript("trs_rival"), transcript("trs_nowhere")).await;
    let foreign_status =
        dataset().orders.iter().find(|o| o.id == "ord_r0001").expect("ord_r0001").status.clone();
    let update = |o: &str| {
        json!({
            "restaurant_id": c, "order_id": o, "status": "accepted", "expected_status": foreign_status,
        })
    };
    check("update_order_status", update("ord_r0001"), update("ord_nowhere")).await;
    let send = |id: &str| {
        json!({
            "restaurant_id": c, "conversation_id": id, "text": "Hi", "idempotency_key": key("bola"),
        })
    };
    check("send_message", send("cnv_rival"), send("cnv_nowhere")).await;
    // The foreign tenant's data did not change.
    let reply = server
        .call("outsider", "get_order", json!({ "restaurant_id": "rst_rival", "order_id": "ord_r0001" }))
        .await;
    assert_eq!(expect_ok(&reply)["order"]["status"], foreign_status.as_str());
    let reply = server
        .call(
            "outsider",
            "get_conversation",
            json!({ "restaurant_id": "rst_rival", "conversation_id": "cnv_rival" }),
        )
        .await;
    assert_eq!(expect_ok(&reply)["conversation"]["message_count"], 5);
}

// AUTH-6
#[tokio::test(flavor = "multi_thread")]
async fn a_role_too_low_is_forbidden_and_changes_nothing() {
    let server = start().await;
    let check = async |persona: &str, tool: ToolName, args: Value| {
        let reply = server.call(persona, tool.as_str(), args).await;
        expect_error(&reply, ErrorCode::ResourceForbidden);
    };
    use ToolName::*;
    check("viewer", UpdateOrderStatus, valid_args(UpdateOrderStatus)).await;
    check("viewer", SendMessage, valid_args(SendMessage)).await;
    check("staff", SetRestaurantStatus, valid_args(SetRestaurantStatus)).await;
    check("staff", CreateInstruction, valid_args(CreateInstruction)).await;
    check("manager", CreateRestaurant, valid_args(CreateRestaurant)).await;
    // Staff is limited to rst_central: the other restaurants are outside its membership.
    check("staff", GetRestaurant, json!({ "restaurant_id": "rst_small" })).await;
    check("staff", ListOrders, json!({ "restaurant_id": "rst_large" })).await;
    let restaurants = server.call("staff", "list_restaurants", json!({})).await.ids("restaurants");
    assert_eq!(restaurants, ["rst_central"]);
    // Nothing changed.
    let id = &order_in("rst_central", "received").id;
    let order =
        server.call("owner", "get_order", json!({ "restaurant_id": "rst_central", "order_id": id })).await;
    assert_eq!(expect_ok(&order)["order"]["status"], "received");
    let restaurant = server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await;
    assert_eq!(expect_ok(&restaurant)["restaurant"]["status"], "open");
    let restaurants = server.call("owner", "list_restaurants", json!({})).await.ids("restaurants");
    assert_eq!(restaurants.len(), 3, "no restaurant created: {restaurants:?}");
}

// AUTH-3 past the first call: a token of the same user and client without the tool's scope is
// refused on the page a cursor reaches and on the replay of a keyed call, the cursor and the
// key being bound to that user and client.
#[tokio::test(flavor = "multi_thread")]
async fn a_cursor_page_and_a_replay_still_check_the_scope() {
    let server = start().await;
    let first =
        server.call("owner", "list_orders", json!({ "restaurant_id": "rst_central", "limit": 5 })).await;
    let cursor = first.next_cursor().expect("a first page of the busy restaurant has a next page");
    let page = json!({ "restaurant_id": "rst_central", "limit": 5, "cursor": cursor });
    expect_ok(&server.call("owner", "list_orders", page.clone()).await);
    let refused = server.call("noscope", "list_orders", page).await;
    assert_eq!(expect_error(&refused, ErrorCode::ScopeRequired)["required_scope"], "orders:read");

    let create = json!({ "restaurant_id": "rst_central", "text": "Scope replay", "idempotency_key": key("scope-replay") });
    expect_ok(&server.call("owner", "create_instruction", create.clone()).await);
    let replay = server.call("noscope", "create_instruction", create).await;
    assert_eq!(expect_error(&replay, ErrorCode::ScopeRequired)["required_scope"], "instructions:write");
}

// AUTH-7
#[tokio::test(flavor = "multi_thread")]
async fn memberships_are_read_at_call_time() {
    let server = start().await;
    let get = json!({ "restaurant_id": "rst_central" });
    expect_error(&server.call("revoked", "get_restaurant", get.clone()).await, ErrorCode::ResourceForbidden);
    assert!(server.call("revoked", "list_restaurants", json!({})).await.ids("restaurants").is_empty());
    assert!(server.call("revoked", "list_organizations", json!({})).await.ids("organizations").is_empty());

    expect_ok(&server.call("viewer", "get_restaurant", get.clone()).await);
    server.revoke("usr_viewer", "org_maison").await;
    expect_error(&server.call("viewer", "get_restaurant", get.clone()).await, ErrorCode::ResourceForbidden);
    assert!(server.call("viewer", "list_organizations", json!({})).await.ids("organizations").is_empty());
    let body = json!({ "user_id": "usr_viewer", "organization_id": "org_maison" });
    server.control("/memberships/restore", body).await;
    expect_ok(&server.call("viewer", "get_restaurant", get).await);
}

// AUTH-8: authentication → tool → rate limit → schema → scope → membership → role → idempotency →
// preconditions. Each pair below fails two checks; the earlier one must answer.
#[tokio::test(flavor = "multi_thread")]
async fn checks_run_in_the_documented_order() {
    let server = start().await;
    let check = async |persona: &str, tool: &str, args: Value, code: ErrorCode| {
        let reply = server.call(persona, tool, args.clone()).await;
        assert_eq!(code_of(&reply), Some(code), "{persona} {tool} {args}: {}", reply.body);
    };
    use ErrorCode::*;
    let stale = |rid: &str| json!({ "restaurant_id": rid, "status": "paused", "expected_status": "paused" });
    // Schema before scope; scope before membership.
    check("noscope", "list_orders", json!({ "restaurant_id": "rst_central", "limit": 0 }), InvalidArguments)
        .await;
    check("noscope", "get_restaurant", json!({ "restaurant_id": "rst_rival" }), ScopeRequired).await;
    check("noscope", "get_restaurant", json!({ "restaurant_id": "rst_nowhere" }), ScopeRequired).await;
    // Membership before the child lookup.
    check(
        "outsider",
        "get_order",
        json!({ "restaurant_id": "rst_central", "order_id": "ord_nowhere" }),
        ResourceForbidden,
    )
    .await;
    // Schema before role; role before preconditions; membership before preconditions.
    let id = &order_in("rst_central", "received").id;
    let cancel = json!({
        "restaurant_id": "rst_central", "order_id": id, "status": "cancelled", "expected_status": "received",
    });
    check("viewer", "update_order_status", cancel, InvalidArguments).await;
    let stale_order = json!({
        "restaurant_id": "rst_central", "order_id": id, "status": "accepted", "expected_status": "ready",
    });
    check("viewer", "update_order_status", stale_order, ResourceForbidden).await;
    check("staff", "set_restaurant_status", stale("rst_central"), ResourceForbidden).await;
    check("owner", "set_restaurant_status", stale("rst_rival"), ResourceForbidden).await;
    // Authorization before idempotency: a key used elsewhere is no mismatch for a forbidden call.
    let k = key("order");
    let send = |rid: &str, text: &str| {
        json!({
            "restaurant_id": rid, "conversation_id": "cnv_c01", "text": text, "idempotency_key": k,
        })
    };
    expect_ok(&server.call("staff", "send_message", send("rst_central", "first")).await);
    check("staff", "send_message", send("rst_small", "second"), ResourceForbidden).await;
    // The tool exists before anything else: an unknown tool is a protocol error even for noscope.
    let reply = server.call("noscope", "delete_restaurant", json!({ "restaurant_id": "rst_central" })).await;
    assert_eq!(reply.rpc_error(), Some(-32602));
}

/// IDs and names of one tenant's records, which the other tenant must never see.
fn tenant_markers(organization_id: &str) -> Vec<String> {
    let d = dataset();
    let restaurants: Vec<&str> = d
        .restaurants
        .iter()
        .filter(|r| r.organization_id == organization_id)
        .map(|r| r.id.as_str())
        .collect();
    let ours = |rid: &str| restaurants.contains(&rid);
    let conversations: Vec<&str> =
        d.conversations.iter().filter(|c| ours(&c.restaurant_id)).map(|c| c.id.as_str()).collect();
    let mut markers: Vec<String> = vec![organization_id.to_owned()];
    markers.extend(d.organizations.iter().filter(|o| o.id == organization_id).map(|o| o.name.clone()));
    for r in d.restaurants.iter().filter(|r| ours(&r.id)) {
        markers.extend([r.id.clone(), r.name.clone()]);
    }
    markers.extend(d.orders.iter().filter(|o| ours(&o.restaurant_id)).map(|o| o.id.clone()));
    markers.extend(conversations.iter().map(|c| (*c).to_owned()));
    markers.extend(
        d.messages
            .iter()
            .filter(|m| conversations.contains(&m.conversation_id.as_str()))
            .map(|m| m.id.clone()),
    );
    markers.extend(d.transcripts.iter().filter(|t| ours(&t.restaurant_id)).map(|t| t.id.clone()));
    for i in d.instructions.iter().filter(|i| ours(&i.restaurant_id)) {
        markers.extend([i.id.clone(), i.text.clone()]);
    }
    markers
}

#[track_caller]
fn assert_no_markers(reply: &Reply, markers: &[String], what: &str) {
    let text = reply.body.to_string();
    let leaked: Vec<&String> = markers.iter().filter(|m| text.contains(m.as_str())).collect();
    assert!(leaked.is_empty(), "{what} shows the other tenant's {leaked:?}");
}

/// Every read tool of one tenant's restaurant, with that tenant's child IDs.
fn reads(
    rid: &str,
    org: &str,
    order: &str,
    conversation: &str,
    transcript: &str,
) -> Vec<(&'static str, Value)> {
    vec![
        ("list_restaurants", json!({ "organization_id": org })),
        ("get_restaurant", json!({ "restaurant_id": rid })),
        ("list_orders", json!({ "restaurant_id": rid })),
        ("get_order", json!({ "restaurant_id": rid, "order_id": order })),
        ("list_conversations", json!({ "restaurant_id": rid })),
        ("get_conversation", json!({ "restaurant_id": rid, "conversation_id": conversation })),
        ("search_transcripts", json!({ "restaurant_id": rid, "query": "gluten-free" })),
        ("get_transcript", json!({ "restaurant_id": rid, "transcript_id": transcript })),
        ("list_instructions", json!({ "restaurant_id": rid })),
        (
            "get_analytics",
            json!({
                "restaurant_id": rid, "metrics": ["orders_count"], "from": "2026-11-01", "to": "2026-11-30",
            }),
        ),
    ]
}

async fn assert_isolated(
    server: &Server,
    persona: &str,
    own: &str,
    other: &str,
    other_reads: Vec<(&str, Value)>,
) {
    let theirs = tenant_markers(other);
    for (tool, args) in other_reads {
        let reply = server.call(persona, tool, args).await;
        expect_error(&reply, ErrorCode::ResourceForbidden);
        assert_no_markers(&reply, &theirs, tool);
    }
    // The persona's own lists, whole, show nothing of the other tenant.
    let mine = dataset().restaurants.iter().filter(|r| r.organization_id == own);
    let mut lists = vec![("list_organizations", json!({})), ("list_restaurants", json!({}))];
    for r in mine {
        lists.extend(
            reads(&r.id, own, "ord_x", "cnv_x", "trs_x").into_iter().filter(|(t, _)| !t.starts_with("get_")),
        );
    }
    for (tool, args) in lists {
        let key = match tool {
            "list_organizations" => "organizations",
            "list_restaurants" => "restaurants",
            "list_orders" => "orders",
            "list_conversations" => "conversations",
            "search_transcripts" => "transcripts",
            _ => "instructions",
        };
        for page in server.walk(persona, tool, args, key).await {
            assert_no_markers(&page, &theirs, tool);
        }
    }
}

// AUTH-4, AUTH-5: no read returns a field of the other tenant, either way round.
#[tokio::test(flavor = "multi_thread")]
async fn no_read_shows_the_other_tenants_data() {
    let server = start().await;
    let home = reads("rst_central", "org_maison", "ord_c0001", "cnv_long", "trs_c03");
    assert_isolated(&server, "outsider", "org_rival", "org_maison", home).await;
    let foreign = reads("rst_rival", "org_rival", "ord_r0001", "cnv_rival", "trs_rival");
    assert_isolated(&server, "owner", "org_maison", "org_rival", foreign).await;
    // And the outsider does see its own tenant.
    let orgs = server.call("outsider", "list_organizations", json!({})).await.ids("organizations");
    assert_eq!(orgs, ["org_rival"]);
    let hits = server
        .call(
            "owner",
            "search_transcripts",
            json!({ "restaurant_id": "rst_central", "query": "gluten-free" }),
        )
        .await;
    let mut ids = hits.ids("transcripts");
    ids.sort();
    assert_eq!(ids, ["trs_c02", "trs_c03", "trs_c06", "trs_c09"]);
}
