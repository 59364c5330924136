//! Transport and protocol (PROTO-1..5): versions, JSON-RPC errors, the tool catalogue, Origin.

use chataigne_contract::schema::Validator;
use chataigne_contract::{Kind, ToolName};
use serde_json::{Value, json};

use crate::support::{start, token};

fn initialize(version: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "it", "version": "1" },
        },
    })
}

// PROTO-1
#[tokio::test(flavor = "multi_thread")]
async fn initialize_answers_each_served_version() {
    let server = start().await;
    for version in ["2025-06-18", "2025-11-25"] {
        let auth = format!("Bearer {}", token("owner"));
        let http = server
            .post_mcp(
                &[("authorization", &auth), ("mcp-protocol-version", version)],
                initialize(version).to_string(),
            )
            .await;
        assert_eq!(http.status, 200, "{version}: {}", http.text);
        let result = &http.json["result"];
        assert_eq!(result["protocolVersion"], version, "{}", http.text);
        assert!(result["capabilities"]["tools"].is_object(), "tools capability: {}", http.text);
        assert_eq!(result["serverInfo"]["name"], "chataigne-mock");
    }
}

// PROTO-1: stateless: a tools/call needs no prior initialize, and a notification is accepted.
#[tokio::test(flavor = "multi_thread")]
async fn tools_call_works_without_initialize_and_notifications_are_accepted() {
    let server = start().await;
    let reply = server.call("owner", "list_orders", json!({ "restaurant_id": "rst_small" })).await;
    assert_eq!(reply.ids("orders").len(), 3);
    let http = server.rpc("owner", &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    assert_eq!(http.status, 202, "{}", http.text);
}

// PROTO-1, the transport's musts the suite's transport.feature checks: a version it does not
// serve gets one it does; an unsupported MCP-Protocol-Version header is 400; notifications are
// 202 with no body; GET and DELETE are 405 (stateless: no stream, no session to end).
#[tokio::test(flavor = "multi_thread")]
async fn version_negotiation_and_the_transports_answers() {
    let server = start().await;
    let auth = format!("Bearer {}", token("owner"));
    let client = reqwest::Client::new();
    // As clients send it: no MCP-Protocol-Version header before a version is agreed.
    let answer: Value = client
        .post(server.url("/mcp"))
        .header("authorization", &auth)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize("1999-01-01").to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let offered = answer["result"]["protocolVersion"].as_str().unwrap_or_default().to_owned();
    assert!(chataigne_contract::PROTOCOL_VERSIONS.contains(&offered.as_str()), "{answer}");

    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let http =
        server.post_mcp(&[("authorization", &auth), ("mcp-protocol-version", "1999-01-01")], list).await;
    assert_eq!(http.status, 400, "{}", http.text);
    assert!(http.json.get("result").is_none(), "{}", http.text);

    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": "never-sent", "reason": "test" } });
    let http = server.rpc("owner", &cancel).await;
    assert_eq!((http.status, http.text.as_str()), (202, ""));

    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let resp = client
            .request(method.clone(), server.url("/mcp"))
            .header("authorization", &auth)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 405, "{method}");
    }
}

// PROTO-2: every answer carries its request's id with its type, successes and errors alike,
// including the ids a loose implementation gets wrong (0, a string of digits).
#[tokio::test(flavor = "multi_thread")]
async fn answers_carry_the_request_id_with_its_type() {
    let server = start().await;
    for id in [json!(0), json!(2147483648u64), json!("42"), json!("chataigne-é")] {
        for method in ["ping", "orders/teleport"] {
            let http = server.rpc("owner", &json!({ "jsonrpc": "2.0", "id": id, "method": method })).await;
            assert_eq!(http.status, 200, "{}", http.text);
            assert_eq!(http.json["id"], id, "{method}: {}", http.text);
            assert!(http.header("content-type").is_some_and(|c| c.starts_with("application/json")));
        }
    }
}

// PROTO-2
#[tokio::test(flavor = "multi_thread")]
async fn malformed_requests_get_json_rpc_errors_never_a_5xx() {
    let server = start().await;
    let auth = format!("Bearer {}", token("owner"));
    let check = async |body: &str, status: u16, code: i64| {
        let http = server.post_mcp(&[("authorization", &auth)], body.to_owned()).await;
        assert_eq!(http.status, status, "{body}: {}", http.text);
        assert_eq!(http.json["jsonrpc"], "2.0", "{body}: {}", http.text);
        assert_eq!(http.json["error"]["code"], code, "{body}: {}", http.text);
    };
    check("not json", 400, -32700).await;
    check(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#, 400, -32700).await;
    check("", 400, -32700).await;
    check("[]", 400, -32600).await;
    check(r#"{"x":1}"#, 400, -32600).await;
    check(r#"{"id":1,"method":"tools/list"}"#, 400, -32600).await;
    check(r#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#, 400, -32600).await;
    check(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#, 400, -32600).await;
    check(r#"{"jsonrpc":"2.0","id":1,"method":42}"#, 400, -32600).await;
    check(r#"{"jsonrpc":"2.0","id":1,"method":"orders/cancel"}"#, 200, -32601).await;
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"cancel_order","arguments":{}}}"#,
        200,
        -32602,
    )
    .await;
    check(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#, 200, -32602).await;
    check(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#, 200, -32602).await;
    check(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, 200, -32602).await;
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order","arguments":[1]}}"#,
        200,
        -32602,
    )
    .await;
}

// PROTO-2: a tool call refused for its arguments answers the request's id, whatever its kind.
#[tokio::test(flavor = "multi_thread")]
async fn argument_refusals_echo_every_kind_of_id() {
    let server = start().await;
    for id in [json!("bound-1"), json!("42"), json!(0), json!(-7), json!(9_007_199_254_740_991_i64)] {
        let call = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "list_organizations", "arguments": { "limit": 0 } },
        });
        let http = server.rpc("owner", &call).await;
        assert_eq!(http.json["id"], id, "{}", http.text);
        let code = http.json.pointer("/result/structuredContent/data/error/code");
        assert_eq!(code, Some(&json!("MCP_INVALID_ARGUMENTS")), "{}", http.text);
    }
}

// PROTO-2: the error answers carry the request's id, and odd-but-valid inputs are not 5xx either.
#[tokio::test(flavor = "multi_thread")]
async fn json_rpc_errors_echo_the_id_and_odd_inputs_are_never_5xx() {
    let server = start().await;
    let http = server.rpc("owner", &json!({ "jsonrpc": "2.0", "id": "abc", "method": "nope/nope" })).await;
    assert_eq!(http.json["id"], "abc", "{}", http.text);
    assert_eq!(http.json["error"]["code"], -32601);
    let reply = server.call("owner", "no_such_tool", json!({})).await;
    assert_eq!(reply.rpc_error(), Some(-32602), "{}", reply.body);
    assert!(!reply.body.to_string().contains("no_such_tool"), "the unknown name is not echoed");
    let odd = [
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "get_order", "arguments": null },
        }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "" } }),
        json!({ "jsonrpc": "2.0", "id": 1e300, "method": "tools/list" }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "cursor": 5 } }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": [] }),
        json!({ "jsonrpc": "2.0", "id": 1, "result": {} }),
    ];
    for message in odd {
        let http = server.rpc("owner", &message).await;
        assert!(http.status < 500, "{message}: {} {}", http.status, http.text);
    }
    let http = server
        .post_mcp(&[("authorization", &format!("Bearer {}", token("owner")))], vec![0xffu8, 0xfe])
        .await;
    assert_eq!(http.status, 400, "{}", http.text);
}

// PROTO-2: valid JSON (RFC 8259) that serde or rmcp cannot take got rmcp's HTTP 415 and a text
// quoting serde; it gets a JSON-RPC error: -32602 with the id when only the params are at
// fault, -32600 otherwise (with the id when it can be read, else null).
#[tokio::test]
async fn valid_json_that_rmcp_cannot_take_gets_a_json_rpc_error_with_its_id() {
    let server = start().await;
    let auth = format!("Bearer {}", token("owner"));
    let call = |id: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_order","arguments":{arguments}}}}}"#
        )
    };
    let deep = format!(r#"{{"a":{}{}}}"#, "[".repeat(129), "]".repeat(129));
    let cases = [
        (call("7", &deep), 200, -32602, json!(7)),
        (call(r#""k""#, r#"{"a":1e400}"#), 200, -32602, json!("k")),
        (call("8", r#"{"a":"CANARY\ud800"}"#), 200, -32602, json!(8)),
        (call("123456789012345678901234567890", "{}"), 400, -32600, Value::Null),
        (call("2.5", "{}"), 400, -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":9,"method":"\ud800"}"#.to_owned(), 400, -32600, json!(9)),
    ];
    for (body, status, code, id) in cases {
        let http = server.post_mcp(&[("authorization", &auth)], body.clone()).await;
        assert_eq!(
            (http.status, &http.json["error"]["code"]),
            (status, &json!(code)),
            "{body}: {}",
            http.text
        );
        assert_eq!(http.json["id"], id, "{body}: {}", http.text);
        assert_eq!(http.json["jsonrpc"], "2.0");
        assert!(
            !http.text.contains("CANARY") && !http.text.contains("1e400"),
            "no value echoed: {}",
            http.text
        );
    }
}

// PROTO-3
#[tokio::test(flavor = "multi_thread")]
async fn tools_list_publishes_exactly_the_contract_tools_with_schemas_and_annotations() {
    let server = start().await;
    let tools = server.tools_list("owner").await;
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().expect("a name")).collect();
    let expected: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(tools.len(), 17);
    assert_eq!(names, expected);
    for descriptor in &tools {
        let tool = ToolName::parse(descriptor["name"].as_str().unwrap_or_default()).expect("a contract tool");
        assert!(descriptor["description"].as_str().is_some_and(|d| d.len() > 10), "{tool}: description");
        let input = &descriptor["inputSchema"];
        assert_eq!(input["$schema"], "https://json-schema.org/draft/2020-12/schema", "{tool}");
        assert_eq!(input["type"], "object", "{tool}");
        assert_eq!(input["additionalProperties"], false, "{tool}: closed input schema");
        assert_eq!(input, &tool.input_schema(), "{tool}: the contract's input schema");
        Validator::new(input).unwrap_or_else(|e| panic!("{tool}: input schema compiles: {e}"));
        assert_eq!(descriptor["outputSchema"], tool.output_schema(), "{tool}: the contract's output schema");
        Validator::new(&descriptor["outputSchema"]).unwrap_or_else(|e| panic!("{tool}: {e}"));
        let a = &descriptor["annotations"];
        match tool.kind() {
            Kind::Read | Kind::Analytics => assert_eq!(a["readOnlyHint"], true, "{tool}"),
            Kind::Write | Kind::KeyedWrite => {
                assert_eq!(a["readOnlyHint"], false, "{tool}");
                assert_eq!(a["destructiveHint"], false, "{tool}");
            }
        }
        assert_eq!(a["idempotentHint"] == true, tool.kind() == Kind::KeyedWrite, "{tool}: idempotentHint");
    }
}

// PROTO-3: the whole catalogue, as published, is a golden file (`cargo insta review` to update).
#[tokio::test(flavor = "multi_thread")]
async fn tools_list_matches_snapshot() {
    let server = start().await;
    insta::assert_json_snapshot!("tools_list", server.tools_list("viewer").await);
}

// PROTO-5
#[tokio::test(flavor = "multi_thread")]
async fn foreign_origins_and_hosts_are_refused() {
    let server = start().await;
    let auth = format!("Bearer {}", token("owner"));
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }).to_string();
    let check = async |header: &str, value: &str, status: u16| {
        let http = server.post_mcp(&[("authorization", &auth), (header, value)], list.clone()).await;
        assert_eq!(http.status, status, "{header}: {value}: {}", http.text);
        if status == 200 {
            assert_eq!(http.json["result"]["tools"].as_array().map(Vec::len), Some(17), "served");
        }
    };
    check("origin", "https://evil.example", 403).await;
    check("origin", "http://localhost.evil.example", 403).await;
    check("origin", "http://127.0.0.1.evil.example:3000", 403).await;
    check("origin", "null", 403).await;
    check("origin", "http://localhost:3000", 200).await;
    check("origin", "http://127.0.0.1:8080", 200).await;
    check("origin", "http://localhost", 200).await;
    check("host", "evil.example", 403).await;
    // Refused before authentication: a foreign page learns nothing, not even "401".
    let http = server.post_mcp(&[("origin", "https://evil.example")], list.clone()).await;
    assert_eq!(http.status, 403);
}

/// PROTO-1: the stateless revision 2026-07-28 — `server/discover` lists the served versions, and
/// a tool call carrying the per-request metadata is answered without any handshake.
#[tokio::test]
async fn the_2026_07_28_revision_discovers_and_calls_statelessly() {
    let server = start().await;
    let auth = format!("Bearer {}", token("owner"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let base = [("authorization", auth.as_str()), ("mcp-protocol-version", "2026-07-28")];

    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}});
    let headers = [base[0], base[1], ("mcp-method", "server/discover")];
    let answer = server.post_mcp(&headers, discover.to_string()).await;
    let versions = json!(["2025-06-18", "2025-11-25", "2026-07-28"]);
    assert_eq!(answer.json["result"]["supportedVersions"], versions, "{}", answer.text);

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "get_restaurant", "arguments": {"restaurant_id": "rst_small"}, "_meta": meta}});
    let headers = [base[0], base[1], ("mcp-method", "tools/call"), ("mcp-name", "get_restaurant")];
    let answer = server.post_mcp(&headers, call.to_string()).await;
    let restaurant = &answer.json["result"]["structuredContent"]["data"]["restaurant"];
    assert_eq!(restaurant["id"], "rst_small", "{}", answer.text);
}
