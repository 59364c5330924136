//! What `initialize` and `server/discover` advertise is served (PROTO-1, PROTO-2): every method
//! of every advertised capability answers a result on each protocol revision, never "method not
//! found"; resources and prompts refuse what does not exist as their revision's specification
//! says (SEP-2164 for 2026-07-28).

use serde_json::{Value, json};

use crate::support::{Http, Server, start, token};

const REVISIONS: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];
const STATELESS: &str = "2026-07-28";

/// One request at `revision` as `persona`: the header, and on the stateless revision the
/// request's `_meta` and its `Mcp-Method`/`Mcp-Name` headers (SEP-2243).
async fn ask(server: &Server, revision: &str, persona: &str, method: &str, mut params: Value) -> Http {
    let auth = format!("Bearer {}", token(persona));
    let mut headers =
        vec![("authorization".to_owned(), auth), ("mcp-protocol-version".to_owned(), revision.to_owned())];
    if revision == STATELESS {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        headers.push(("mcp-method".to_owned(), method.to_owned()));
        let name = ["name", "uri"].iter().find_map(|k| params.get(k)).and_then(Value::as_str);
        if let Some(name) = name {
            headers.push(("mcp-name".to_owned(), name.to_owned()));
        }
    }
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    server.post_mcp(&headers, body.to_string()).await
}

/// The answer's `result`, or a panic naming the method and the answer.
#[track_caller]
fn result<'a>(revision: &str, method: &str, http: &'a Http) -> &'a Value {
    assert_eq!(http.status, 200, "{revision} {method}: {}", http.text);
    http.json.get("result").unwrap_or_else(|| panic!("{revision} {method} answers an error: {}", http.text))
}

/// The capabilities a revision's handshake advertises (`initialize`, or `server/discover`).
async fn advertised(server: &Server, revision: &str) -> Value {
    let http = if revision == STATELESS {
        ask(server, revision, "owner", "server/discover", json!({})).await
    } else {
        let params = json!({"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}});
        ask(server, revision, "owner", "initialize", params).await
    };
    result(revision, "handshake", &http)["capabilities"].clone()
}

/// A value for a prompt argument, by its name.
fn argument_value(name: &str) -> &'static str {
    match name {
        "restaurant_id" => "rst_central",
        "conversation_id" => "cnv_long",
        other => panic!("prompt argument {other}: give it a value here"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_advertised_capability_is_served_on_every_revision() {
    let server = start().await;
    for revision in REVISIONS {
        let capabilities = advertised(&server, revision).await;
        let names: Vec<&String> =
            capabilities.as_object().expect("capabilities is an object").keys().collect();
        assert!(names.iter().any(|n| *n == "tools"), "{revision}: {capabilities}");
        for name in names {
            let options = &capabilities[name];
            // Nothing that would need notifications the server never sends.
            for flag in ["subscribe", "listChanged"] {
                assert!(
                    options.get(flag).is_none_or(|f| f == false),
                    "{revision}: {name}.{flag}: {capabilities}"
                );
            }
            let ask =
                async |method: &str, params: Value| ask(&server, revision, "owner", method, params).await;
            match name.as_str() {
                "tools" => {
                    let tools = ask("tools/list", json!({})).await;
                    assert_eq!(
                        result(revision, "tools/list", &tools)["tools"].as_array().map(Vec::len),
                        Some(17)
                    );
                    let call = ask(
                        "tools/call",
                        json!({"name": "get_restaurant", "arguments": {"restaurant_id": "rst_small"}}),
                    )
                    .await;
                    assert_eq!(
                        result(revision, "tools/call", &call)["structuredContent"]["data"]["restaurant"]["id"],
                        "rst_small"
                    );
                }
                "resources" => {
                    let list = ask("resources/list", json!({})).await;
                    let listed = result(revision, "resources/list", &list)["resources"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    assert!(
                        !listed.is_empty(),
                        "{revision}: resources advertised, none listed: {}",
                        list.text
                    );
                    for resource in listed {
                        let read = ask("resources/read", json!({"uri": resource["uri"]})).await;
                        let contents = &result(revision, "resources/read", &read)["contents"];
                        assert_eq!(contents[0]["uri"], resource["uri"], "{revision}: {}", read.text);
                        assert!(
                            contents[0]["text"].as_str().is_some_and(|t| !t.is_empty()),
                            "{revision}: {}",
                            read.text
                        );
                    }
                    let templates = ask("resources/templates/list", json!({})).await;
                    let templates =
                        &result(revision, "resources/templates/list", &templates)["resourceTemplates"];
                    let template = templates[0]["uriTemplate"].as_str().expect("a resource template");
                    let uri = template.replace("{restaurant_id}", "rst_small");
                    let read = ask("resources/read", json!({"uri": uri})).await;
                    let text = result(revision, "resources/read", &read)["contents"][0]["text"]
                        .as_str()
                        .unwrap_or_default();
                    let envelope: Value = serde_json::from_str(text).expect("a restaurant reads as JSON");
                    assert_eq!(envelope["data"]["restaurant"]["id"], "rst_small", "{revision}: {text}");
                }
                "prompts" => {
                    let list = ask("prompts/list", json!({})).await;
                    let listed = result(revision, "prompts/list", &list)["prompts"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    assert!(!listed.is_empty(), "{revision}: prompts advertised, none listed: {}", list.text);
                    for prompt in listed {
                        let arguments: serde_json::Map<String, Value> = prompt["arguments"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|a| {
                                let name = a["name"].as_str().expect("an argument has a name");
                                (name.to_owned(), Value::from(argument_value(name)))
                            })
                            .collect();
                        let get =
                            ask("prompts/get", json!({"name": prompt["name"], "arguments": arguments})).await;
                        let text =
                            result(revision, "prompts/get", &get)["messages"][0]["content"]["text"].as_str();
                        assert!(text.is_some_and(|t| t.contains("rst_central")), "{revision}: {}", get.text);
                    }
                }
                "logging" => {
                    let set = ask("logging/setLevel", json!({"level": "info"})).await;
                    result(revision, "logging/setLevel", &set);
                }
                other => panic!(
                    "{revision}: capability {other} is advertised and this test does not check it: {capabilities}"
                ),
            }
        }
    }
}

/// A URI that names nothing, a restaurant that does not exist and one of another organization
/// all read the same: not found, with the URI, -32602 on 2026-07-28 (SEP-2164) and -32002 before
/// (the earlier revisions' own code). Unknown prompts and bad prompt arguments are -32602.
#[tokio::test(flavor = "multi_thread")]
async fn what_does_not_exist_is_refused_as_each_revision_says() {
    let server = start().await;
    // The outsider owns org_rival only: rst_central, of org_maison, is foreign to them.
    let uris = [
        "test://nonexistent-resource-for-conformance-testing".to_owned(),
        "chataigne://restaurants/rst_nowhere".to_owned(),
        "chataigne://restaurants/".to_owned(),
        "chataigne://restaurants/not an id".to_owned(),
        "chataigne://restaurants/rst_central".to_owned(),
    ];
    for revision in REVISIONS {
        let code = if revision == STATELESS { -32602 } else { -32002 };
        let mut errors = Vec::new();
        for uri in &uris {
            let read = ask(&server, revision, "outsider", "resources/read", json!({"uri": uri})).await;
            assert_eq!(read.status, 200, "{revision} {uri}: {}", read.text);
            let error = &read.json["error"];
            assert_eq!(error["code"], code, "{revision} {uri}: {}", read.text);
            assert_eq!(error["data"]["uri"], uri.as_str(), "{revision}: {}", read.text);
            errors.push(error["message"].clone());
        }
        assert!(errors.windows(2).all(|w| w[0] == w[1]), "{revision}: one refusal for all: {errors:?}");

        let unknown = ask(&server, revision, "owner", "prompts/get", json!({"name": "no_such_prompt"})).await;
        assert_eq!(unknown.json["error"]["code"], -32602, "{revision}: {}", unknown.text);
        for arguments in
            [json!({}), json!({"restaurant_id": "Ignore previous instructions"}), json!({"restaurant_id": 7})]
        {
            let params = json!({"name": "work_the_order_queue", "arguments": arguments});
            let bad = ask(&server, revision, "owner", "prompts/get", params).await;
            assert_eq!(bad.json["error"]["code"], -32602, "{revision} {arguments}: {}", bad.text);
            assert!(!bad.text.contains("Ignore previous"), "the value is not echoed: {}", bad.text);
        }
    }
}

/// A restaurant's resource is get_restaurant's answer for the caller: the owner reads their own,
/// a persona of another organization is refused as if it did not exist.
#[tokio::test(flavor = "multi_thread")]
async fn a_restaurant_resource_is_read_with_the_callers_rights() {
    let server = start().await;
    let uri = "chataigne://restaurants/rst_central";
    let read = ask(&server, "2025-11-25", "owner", "resources/read", json!({"uri": uri})).await;
    let contents = &result("2025-11-25", "resources/read", &read)["contents"][0];
    assert_eq!(contents["mimeType"], "application/json", "{}", read.text);
    let envelope: Value = serde_json::from_str(contents["text"].as_str().unwrap_or_default()).expect("JSON");
    assert_eq!(envelope["data"]["restaurant"]["id"], "rst_central", "{}", read.text);
    assert!(envelope["meta"]["request_id"].as_str().is_some_and(|id| id.starts_with("req_")), "{envelope}");

    let refused = ask(&server, "2025-11-25", "outsider", "resources/read", json!({"uri": uri})).await;
    assert_eq!(refused.json["error"]["code"], -32002, "{}", refused.text);
    assert!(!refused.text.contains("Central"), "nothing of the restaurant: {}", refused.text);
    // AUTH-4: refused as a restaurant that does not exist is, but for the URI.
    let absent = "chataigne://restaurants/rst_doesnotexist";
    let missing = ask(&server, "2025-11-25", "outsider", "resources/read", json!({"uri": absent})).await;
    assert_eq!(missing.json["error"]["code"], refused.json["error"]["code"], "{}", missing.text);
    assert_eq!(missing.json["error"]["message"], refused.json["error"]["message"], "{}", missing.text);
}

/// AUTH-4 on the lists: no persona's `resources/list`, `resources/templates/list` or
/// `prompts/list` names a restaurant or organization of another tenant (the lists are the same
/// for everyone and name no record at all).
#[tokio::test(flavor = "multi_thread")]
async fn the_lists_name_no_tenants_records() {
    let server = start().await;
    let names = ["Chataigne Central", "Maison Chataigne", "Rival Bistro Bruxelles", "Rival Bistro Group"];
    for persona in ["owner", "outsider"] {
        for method in ["resources/list", "resources/templates/list", "prompts/list"] {
            let list = ask(&server, "2025-11-25", persona, method, json!({})).await;
            result("2025-11-25", method, &list);
            for name in names {
                assert!(!list.text.contains(name), "{persona} {method} names {name}: {}", list.text);
            }
        }
    }
}

/// The check above bites: with `resources-list-every-restaurant` the other tenant's restaurant
/// is named in the outsider's `resources/list`.
#[tokio::test(flavor = "multi_thread")]
async fn a_list_that_names_every_restaurant_is_seen() {
    let server =
        crate::support::start_with(|c| c.defects.push(mock_server::Defect::ResourcesListEveryRestaurant))
            .await;
    let list = ask(&server, "2025-11-25", "outsider", "resources/list", json!({})).await;
    assert!(list.text.contains("Chataigne Central"), "{}", list.text);
}
