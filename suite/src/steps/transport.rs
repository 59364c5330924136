//! What MCP's basic protocol and Streamable HTTP transport require of any server, checked on the
//! wire (PROTO-1, PROTO-2; docs/CONTRACT.md names the section each check comes from): version
//! negotiation, the `MCP-Protocol-Version` header, JSON-RPC ids, notifications and responses sent
//! by the client, JSON or SSE answers, the GET stream, and sessions where the server keeps them.
//! Where the specification allows several behaviours (stateless or not, SSE or JSON, 405 for GET
//! or DELETE) each passes; what a server does without (sessions) is skipped with the reason.

use anyhow::anyhow;
use cucumber::{given, then, when};
use serde_json::{Value, json};

use crate::client::sse_messages;
use crate::rules::transport::{self as rules, Miss};
use crate::world::ConformanceWorld;

/// A broken rule as the scenario's failure.
fn failed(w: &ConformanceWorld, miss: Miss) -> anyhow::Error {
    w.fail(miss.expected, miss.got)
}

/// A JSON-RPC id as a step names it (`"abc-7"`, `0`): MCP's ids are strings or integers.
fn parse_id(text: &str) -> anyhow::Result<Value> {
    let id: Value = serde_json::from_str(text).map_err(|e| anyhow!("the id {text} is not JSON: {e}"))?;
    if id.is_string() || id.is_i64() || id.is_u64() {
        Ok(id)
    } else {
        Err(anyhow!("a JSON-RPC id of MCP is a string or an integer, not {text}"))
    }
}

/// Lifecycle, "Version Negotiation": a server that does not serve the version asked for
/// answers with one it does; the session is the scenario's own, so no other inherits it.
#[when(expr = "they initialize a session of their own with protocol version {string}")]
async fn initialize_own(w: &mut ConformanceWorld, version: String) -> anyhow::Result<()> {
    let mut client = w.fresh_client()?;
    let ex = client.initialize_with(&version, &[]).await;
    w.record(ex);
    w.own_session = Some(client);
    Ok(())
}

#[then(expr = "the server offers another protocol version it serves, not {string}")]
async fn offers_other_version(w: &mut ConformanceWorld, asked: String) -> anyhow::Result<()> {
    rules::offers_other_version(w.last()?, &asked).map_err(|m| failed(w, m))
}

/// Streamable HTTP, "Protocol Version Header": a request whose `MCP-Protocol-Version` names a
/// version the server does not serve is refused with 400 Bad Request.
#[when(expr = "they send the JSON-RPC request {string} with the header {string} set to {string}")]
async fn request_with_header(
    w: &mut ConformanceWorld,
    method: String,
    name: String,
    value: String,
) -> anyhow::Result<()> {
    let client = w.client().await?;
    let ex = client.request_with(&method, json!({}), &[(name, value)]).await;
    w.record(ex);
    Ok(())
}

#[then(regex = r"^the request is refused with HTTP (400|404) and not served$")]
async fn refused_with(w: &mut ConformanceWorld, status: u16) -> anyhow::Result<()> {
    rules::refused_with_status(w.last()?, status).map_err(|m| failed(w, m))
}

/// JSON-RPC 2.0 §5 and MCP's "Responses": the answer has the request's id, string or integer.
#[when(expr = "they send the JSON-RPC request {string} with the id {word}")]
async fn request_with_id(w: &mut ConformanceWorld, method: String, id: String) -> anyhow::Result<()> {
    let id = parse_id(&id)?;
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": {} });
    w.post_raw(body.to_string().into_bytes(), false, &[]).await.map(drop)
}

#[then(expr = "the answer carries the id {word}, with its type")]
async fn answer_has_id(w: &mut ConformanceWorld, id: String) -> anyhow::Result<()> {
    let want = parse_id(&id)?;
    rules::carries_id(w.last()?, &want).map_err(|m| failed(w, m))
}

/// Streamable HTTP, "Sending Messages to the Server": a notification or a response the server
/// accepts gets 202 Accepted and no body; one it cannot accept, an HTTP error status.
#[when("they send a notification the server has no answer for")]
async fn send_notification(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let client = w.client().await?;
    // Cancelling a request the server never saw: receivers may ignore it (MCP "Cancellation").
    let (method, params) = rules::unanswerable_notification();
    let ex = client.notify(method, params).await;
    w.record(ex);
    Ok(())
}

#[when("they send a JSON-RPC response to a request the server never made")]
async fn send_response(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let body = json!({ "jsonrpc": "2.0", "id": "chataigne-never-asked", "result": {} });
    w.post_raw(body.to_string().into_bytes(), false, &[]).await.map(drop)
}

#[then("the server accepts it with HTTP 202 and no body")]
async fn accepted(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    rules::accepted(w.last()?).map_err(|m| failed(w, m))
}

#[then("the server accepts it with HTTP 202 and no body, or refuses it with a 4xx")]
async fn accepted_or_refused(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ex = w.last()?;
    let refused = ex.status().is_some_and(|s| (400..500).contains(&s)) && ex.result().is_none();
    if rules::accepted_without_body(ex) || refused {
        Ok(())
    } else {
        Err(w.fail("HTTP 202 Accepted with no body, or a 4xx refusal", ex.summary()))
    }
}

/// Streamable HTTP, "Sending Messages to the Server" and "Streaming": a request is answered as
/// one JSON object (`application/json`) or an SSE stream whose events are JSON-RPC messages, one
/// of them the answer, each event ended by a blank line.
#[then("the answer is one JSON-RPC object or an event stream that carries it")]
async fn json_or_sse(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ex = w.last()?;
    let expected = "application/json with the JSON-RPC answer, or text/event-stream whose events \
                    each hold one JSON-RPC message, the answer among them";
    let Some(resp) = ex.response() else { return Err(w.fail(expected, ex.summary())) };
    let problem = if resp.content_type.starts_with("application/json") {
        match serde_json::from_str::<Value>(&resp.body) {
            _ if ex.message().is_none() => Some("no JSON-RPC answer to this request".to_owned()),
            Ok(v) if v.is_object() => None,
            // A shown body may be cut; the message was read whole.
            _ if resp.body_bytes > crate::client::SHOWN_BYTES => None,
            _ => Some("the body is not one JSON object".to_owned()),
        }
    } else if resp.content_type.starts_with("text/event-stream") {
        let text = resp.body.replace("\r\n", "\n");
        let events = text.split("\n\n").filter(|e| e.lines().any(|l| l.starts_with("data:"))).count();
        let parsed = sse_messages(&text).len();
        if ex.message().is_none() {
            Some("no event carries the JSON-RPC answer to this request".to_owned())
        } else if resp.body_bytes <= crate::client::SHOWN_BYTES && parsed < events {
            Some(format!("{} of {events} events do not hold a JSON-RPC message", events - parsed))
        } else {
            None
        }
    } else {
        Some(format!("Content-Type {}", resp.content_type))
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(w.fail(expected, format!("{p}: {}", ex.summary()))),
    }
}

/// Streamable HTTP, "Listening for Messages from the Server": a GET asking for an event stream
/// gets one (`text/event-stream`) or 405 Method Not Allowed. In a session of its own: an SDK
/// allows one such stream per session.
#[when("they open the server's event stream with GET in a session of their own")]
async fn open_stream(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut client = w.fresh_client()?;
    let init = client.initialize().await;
    if !client.is_initialized() {
        w.record(init);
        return Err(w.fail("an initialized session", "initialize failed"));
    }
    let ex = client.send_http(reqwest::Method::GET).await;
    w.record(ex);
    w.own_session = Some(client);
    Ok(())
}

/// PROTO-5 on the other verbs of the endpoint: MCP's Origin check is for every incoming
/// connection, a GET (the event stream) and a DELETE (the end of a session) too.
#[when(
    regex = r#"^they send (GET|DELETE) to the endpoint in a session of their own with the header "Origin" set to "([^"]+)"$"#
)]
async fn verb_with_origin(w: &mut ConformanceWorld, verb: String, origin: String) -> anyhow::Result<()> {
    let mut client = w.fresh_client()?;
    let init = client.initialize().await;
    if !client.is_initialized() {
        w.record(init);
        return Err(w.fail("an initialized session", "initialize failed"));
    }
    let method = if verb == "GET" { reqwest::Method::GET } else { reqwest::Method::DELETE };
    let ex = client.send_http_with(method, &[("Origin".to_owned(), origin)]).await;
    w.record(ex);
    Ok(())
}

#[then("the server opens an event stream or answers 405 Method Not Allowed")]
async fn stream_or_405(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ex = w.last()?;
    crate::rules::transport::stream_or_405(ex).map_err(|m| w.fail(m.expected, m.got))
}

/// Streamable HTTP, "Session Management": sessions are the server's choice; a server without
/// them skips what follows.
#[given("a session of their own, if the server keeps sessions")]
async fn session_of_their_own(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut client = w.fresh_client()?;
    let ex = client.initialize().await;
    let initialized = client.is_initialized();
    let session = client.session_id.clone();
    w.record(ex);
    if !initialized {
        return Err(w.fail("an initialized session", "initialize failed"));
    }
    w.own_session = Some(client);
    if session.is_none() {
        return Err(w.not_applicable(
            "the server keeps no sessions (no Mcp-Session-Id on initialize), as Streamable HTTP allows",
        ));
    }
    Ok(())
}

#[then("the session ID holds only visible ASCII characters")]
async fn session_id_ascii(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let id = w.own_session.as_ref().and_then(|c| c.session_id.clone()).unwrap_or_default();
    if !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        Ok(())
    } else {
        Err(w.fail("an Mcp-Session-Id of visible ASCII characters (0x21 to 0x7E)", format!("{id:?}")))
    }
}

#[when("they end the session with DELETE")]
async fn end_session(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let client = w.own_session.as_mut().ok_or_else(|| anyhow!("no session of their own yet"))?;
    let ex = client.send_http(reqwest::Method::DELETE).await;
    w.record(ex);
    Ok(())
}

/// A server may refuse to let clients end sessions (405): the 404 that follows is then
/// not there to check.
#[then("the server ended the session, or does not let clients end one")]
async fn session_ended(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ex = w.last()?;
    match ex.status() {
        Some(200..=299) => Ok(()),
        Some(405) => Err(w.not_applicable("the server does not let clients end sessions (DELETE: 405)")),
        _ => Err(w.fail("a 2xx (session ended) or 405 Method Not Allowed", ex.summary())),
    }
}

#[when("they list the tools in that session")]
async fn list_in_own_session(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let client = w.own_session.as_mut().ok_or_else(|| anyhow!("no session of their own yet"))?;
    let ex = client.request("tools/list", json!({})).await;
    w.record(ex);
    Ok(())
}

#[when("they list the tools in a session the server never gave")]
async fn list_in_unknown_session(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let client = w.own_session.as_mut().ok_or_else(|| anyhow!("no session of their own yet"))?;
    // The shape of the SDKs' own IDs, so only the server's memory can tell it apart.
    client.session_id = Some("5c0a1e2d-0000-4000-8000-c4a7a16e0000".to_owned());
    let ex = client.request("tools/list", json!({})).await;
    w.record(ex);
    Ok(())
}

#[then("the request is refused with a 4xx and not served")]
async fn refused_any_4xx(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    rules::refused(w.last()?, 400..=499, "an HTTP 4xx").map_err(|m| failed(w, m))
}

/// The 2026-07-28 revision is the server's to serve. `server/discover` says whether it does, but
/// "not applicable" needs proof: one call whose headers mirror its body is sent either way. Served,
/// the server is held to the header rules that follow (whatever `server/discover` said); refused,
/// and `server/discover` not served either, the server does not serve the revision.
#[given("the server serves protocol version 2026-07-28")]
pub(super) async fn serves_2026(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    if w.ctx().stdio.is_some() {
        // The revision's requests without a session are HTTP's; stdio has one connection.
        return Err(w.not_applicable("the server is reached over stdio, where 2026-07-28 changes no request"));
    }
    let mut client = w.fresh_client()?;
    let discover = client.request_2026("server/discover", json!({}), &[]).await;
    let discovered = discover.result().is_some();
    let discover_summary = discover.summary();
    w.record(discover);
    let restaurant = w.ctx().id_map.to_server(&w.dataset().landmarks.busy_restaurant);
    let ex = client
        .request_2026(
            "tools/call",
            json!({ "name": "get_restaurant", "arguments": { "restaurant_id": restaurant } }),
            &[],
        )
        .await;
    let served = ex.result().is_some();
    let refused = ex.status().is_some_and(|s| (400..500).contains(&s)) || ex.rpc_error().is_some();
    w.record(ex);
    w.own_session = Some(client);
    match (served, discovered) {
        (true, _) => Ok(()),
        (false, false) if refused => Err(w.not_applicable(format!(
            "the server does not serve protocol version 2026-07-28 (server/discover: {}; a 2026-07-28 tools/call refused: {})",
            crate::client::cut(&discover_summary, 120),
            crate::client::cut(&w.last()?.summary(), 120)
        ))),
        (false, false) => Err(w.fail(
            "a 2026-07-28 tools/call served, or refused (HTTP 4xx or a JSON-RPC error) by a server that does not serve the revision",
            w.last()?.summary(),
        )),
        (false, true) => {
            Err(w.fail("a 2026-07-28 tools/call whose headers mirror its body, served", w.last()?.summary()))
        }
    }
}

/// `Mcp-Name` on every named target, not tools alone: a prompt (its name) and a resource (its
/// URI) the server lists in 2026-07-28, asked for with an `Mcp-Name` naming another. A server
/// that lists none has nothing to name: not applicable, shown by the list's answer.
#[when(
    regex = r"^they send a 2026-07-28 (prompts/get|resources/read) request for what the server lists, with an Mcp-Name header naming another$"
)]
async fn send_2026_named(w: &mut ConformanceWorld, method: String) -> anyhow::Result<()> {
    let (list, items, key) = match method.as_str() {
        "prompts/get" => ("prompts/list", "prompts", "name"),
        _ => ("resources/list", "resources", "uri"),
    };
    let client = w.own_session.as_mut().ok_or_else(|| anyhow!("no 2026-07-28 client yet"))?;
    let listed = client.request_2026(list, json!({}), &[]).await;
    let first = listed
        .result()
        .and_then(|r| r.get(items))
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|e| e.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let summary = listed.summary();
    w.record(listed);
    let Some(name) = first else {
        return Err(w.not_applicable(format!(
            "the server lists no {items} in 2026-07-28 ({})",
            crate::client::cut(&summary, 120)
        )));
    };
    let other = if key == "uri" { format!("{name}-other") } else { format!("{name}_other") };
    let client = w.own_session.as_mut().ok_or_else(|| anyhow!("no 2026-07-28 client yet"))?;
    let ex = client.request_2026(&method, json!({ key: name }), &[("mcp-name", other.as_str())]).await;
    w.record(ex);
    Ok(())
}

/// Streamable HTTP (2026-07-28), "Standard Headers": `Mcp-Method` on every request, `Mcp-Name`
/// on a named target, `MCP-Protocol-Version` agreeing with `_meta`; missing or disagreeing → 400.
#[when(
    regex = r"^they send a 2026-07-28 tools/call request with (an Mcp-Method header naming another method|no Mcp-Method header|an Mcp-Name header naming another tool|no Mcp-Name header|an MCP-Protocol-Version header naming another version)$"
)]
async fn send_2026_with(w: &mut ConformanceWorld, case: String) -> anyhow::Result<()> {
    let overrides = [rules::mirror_override(&case).ok_or_else(|| anyhow!("unknown case {case}"))?];
    let restaurant = w.ctx().id_map.to_server(&w.dataset().landmarks.busy_restaurant);
    let client = w.own_session.as_mut().ok_or_else(|| anyhow!("no 2026-07-28 client yet"))?;
    let params = json!({ "name": "get_restaurant", "arguments": { "restaurant_id": restaurant } });
    let ex = client.request_2026("tools/call", params, &overrides).await;
    w.record(ex);
    Ok(())
}
