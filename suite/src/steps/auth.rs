//! Authentication at the HTTP edge: sessions without a token, with a bad one, or with a token
//! for another audience (AUTH-1, AUTH-2), the bearer challenge and the protected resource
//! metadata (RFC 9728); over stdio, a server started without a token (AUTH-1); and comparing
//! two refusals (AUTH-4).

use anyhow::anyhow;
use chataigne_contract::ToolName;
use chataigne_contract::envelope::{self, Parsed};
use cucumber::{then, when};
use serde_json::{Value, json};

use crate::steps::params::{Source, Target};
use crate::world::ConformanceWorld;

#[when("someone without a token initializes")]
async fn no_token(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut client = w.ctx().anonymous_client(None, None);
    let ex = client.initialize().await;
    w.record(ex);
    Ok(())
}

/// AUTH-1 on a notification: MCP's authorization covers every HTTP request, a message that
/// wants no answer included (the server must not act on it either).
#[when("someone without a token sends a notification")]
async fn no_token_notification(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut client = w.ctx().anonymous_client(None, None);
    let ex = client.notify("notifications/initialized", json!({})).await;
    w.record(ex);
    Ok(())
}

#[when(expr = "someone with the token {string} initializes")]
async fn some_token(w: &mut ConformanceWorld, token: String) -> anyhow::Result<()> {
    let token = w.expand(&token);
    let mut client = w.ctx().anonymous_client(Some(token), Some("(a made-up token)".to_owned()));
    let ex = client.initialize().await;
    w.record(ex);
    Ok(())
}

/// AUTH-1 for credentials of another scheme than Bearer (`Basic …`): the endpoint's only scheme is
/// Bearer, so the request carries no bearer token, as if it had no header at all.
#[when(expr = "someone with the Authorization header {string} initializes")]
async fn other_scheme(w: &mut ConformanceWorld, value: String) -> anyhow::Result<()> {
    let mut client = w.ctx().anonymous_client(None, Some("(another scheme)".to_owned()));
    let header = [("Authorization".to_owned(), w.expand(&value))];
    let ex = client.initialize_with(crate::client::PROTOCOL_VERSION, &header).await;
    w.record(ex);
    Ok(())
}

/// AUTH-1: the scheme is case-insensitive (RFC 9110 §11.1), so the persona's token under
/// `bearer` or `BEARER` opens a session and is served like `Bearer`.
#[when(expr = "they read the busy restaurant with their token under the scheme {string}")]
async fn scheme_in_another_case(w: &mut ConformanceWorld, scheme: String) -> anyhow::Result<()> {
    let persona = w.persona()?.to_owned();
    let token = w.ctx().profile.tokens.get(&persona).cloned();
    let token = token.ok_or_else(|| anyhow!("the profile has no token for persona \"{persona}\""))?;
    let mut client = w.ctx().anonymous_client(None, Some(persona));
    let header = [("Authorization".to_owned(), format!("{scheme} {token}"))];
    let init = client.initialize_with(crate::client::PROTOCOL_VERSION, &header).await;
    let opened = client.is_initialized();
    w.record(init);
    if !opened {
        return Err(w.fail(
            format!("initialize served with the token under the scheme {scheme}"),
            w.last()?.summary(),
        ));
    }
    let restaurant = w.ctx().id_map.to_server(&w.dataset().landmarks.busy_restaurant);
    let params = json!({ "name": "get_restaurant", "arguments": { "restaurant_id": restaurant } });
    let ex = client.request_with("tools/call", params, &header).await;
    w.record(ex);
    Ok(())
}

/// AUTH-4: an ID is the server's exact string. The busy restaurant's ID with its letters in upper
/// case names no restaurant the caller belongs to (looked up case-insensitively, it would be
/// served as the busy one).
#[when("they read the busy restaurant by its ID written in upper case")]
async fn upper_case_id(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let id = w.ctx().id_map.to_server(&w.dataset().landmarks.busy_restaurant);
    // The prefix stays (`rst_`): only what tells one record from another changes case.
    let (prefix, rest) = id.split_once('_').unwrap_or(("", id.as_str()));
    let upper =
        if prefix.is_empty() { rest.to_uppercase() } else { format!("{prefix}_{}", rest.to_uppercase()) };
    if upper == id {
        return Err(w.not_applicable("the busy restaurant's ID has no lower-case letter"));
    }
    // Sent as it is: the profile's ID map knows no such ID.
    let args = json!({ "restaurant_id": upper }).to_string();
    w.call_tool_text("get_restaurant", &args).await.map(drop)
}

/// Over stdio: the server started without the token variable; "they" is that session.
#[when("someone without a token starts the server over stdio")]
async fn stdio_no_token(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    if w.ctx().stdio.is_none() {
        return Err(anyhow!("this step needs the stdio transport: tag the scenario @needs-stdio"));
    }
    let mut client = w.ctx().anonymous_client(None, Some("(no token)".to_owned()));
    let ex = client.initialize().await;
    let ok = client.is_initialized();
    let got = ex.summary();
    w.record(ex);
    if !ok {
        return Err(w.fail("initialize to succeed (the token is checked on each call)", got));
    }
    w.persona = Some("(no token)".to_owned());
    w.keep_client(client)
}

/// Every tool of the contract once, with no arguments: authentication comes first (AUTH-8).
#[when("they call every tool of the contract")]
async fn every_tool(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    for tool in ToolName::ALL {
        w.call_tool(tool.as_str(), json!({})).await?;
    }
    Ok(())
}

#[then(expr = "every tool call failed with {string}")]
async fn every_call_failed(w: &mut ConformanceWorld, code: String) -> anyhow::Result<()> {
    let mut calls = 0;
    for ex in w.tool_calls() {
        calls += 1;
        let got = match ex.structured().map(envelope::parse) {
            Some(Ok(Parsed::Error(body))) if ex.is_error() => body.code.as_str().to_owned(),
            _ => ex.summary(),
        };
        if got != code {
            return Err(w.fail_about(Some(ex), format!("tool error {code}"), got));
        }
    }
    if calls == 0 {
        return Err(anyhow!("this step needs tool calls before it"));
    }
    Ok(())
}

/// The persona's own session, initialized by this step whatever the answer.
#[when("they initialize")]
async fn they_initialize(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut client = w.fresh_client()?;
    let ex = client.initialize().await;
    w.record(ex);
    Ok(())
}

#[then("the answer is HTTP 401 with a bearer challenge naming the resource metadata")]
async fn challenge(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    match crate::rules::transport::bearer_challenge(w.last()?) {
        Ok(url) => {
            w.saved.insert("resource_metadata".to_owned(), url);
            Ok(())
        }
        Err(m) => Err(w.fail(m.expected, m.got)),
    }
}

/// The requests a session carries besides `initialize`: each is sent again by the steps below
/// with other credentials in the persona's session.
const SESSION_REQUESTS: [(&str, &str); 5] = [
    ("tools/list", "{}"),
    ("tools/call", r#"{"name": "list_organizations", "arguments": {}}"#),
    ("resources/list", "{}"),
    ("prompts/list", "{}"),
    ("ping", "{}"),
];
const SAVED_SESSION_REQUESTS: &str = "session_requests";

/// MCP's authorization: the token is in every HTTP request, and checked on every one, not once
/// at `initialize`. The persona starts a session and lists the tools in it; then each request of [`SESSION_REQUESTS`], the
/// stream's GET and the session's DELETE are sent in it with `credentials`' token (none, or
/// another persona's) in place of the persona's.
async fn session_with(w: &mut ConformanceWorld, credentials: Option<String>) -> anyhow::Result<()> {
    let (mut own, _) = w.started_client(None).await?;
    // The session in use, with the persona's own token, before anything is sent without it.
    let listed = own.request("tools/list", json!({})).await;
    w.record(listed);
    let mut other = match &credentials {
        None => w.ctx().anonymous_client(None, Some("(no token)".to_owned())),
        Some(p) => w.ctx().client(p).ok_or_else(|| anyhow!("the profile has no token for \"{p}\""))?,
    };
    other.session_id = own.session_id.clone();
    other.protocol_version = own.protocol_version.clone();
    for (method, params) in SESSION_REQUESTS {
        let ex = other.request(method, serde_json::from_str(params)?).await;
        w.record(ex);
    }
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let ex = other.send_http(method).await;
        w.record(ex);
    }
    w.saved.insert(SAVED_SESSION_REQUESTS.to_owned(), (SESSION_REQUESTS.len() + 2).to_string());
    Ok(())
}

#[when("they start a session and send each of its requests again without a token")]
async fn session_without_token(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    session_with(w, None).await
}

#[when(expr = "they start a session and send each of its requests again with the token of {string}")]
async fn session_with_token_of(w: &mut ConformanceWorld, persona: String) -> anyhow::Result<()> {
    session_with(w, Some(persona)).await
}

/// Each request the step before sent again is refused: HTTP 401 with a bearer challenge naming
/// the resource metadata, nothing served.
#[then("each of them is HTTP 401 with a bearer challenge naming the resource metadata")]
async fn each_challenged(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let n: usize = w
        .saved
        .get(SAVED_SESSION_REQUESTS)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow!("no requests sent again: start with a session's requests"))?;
    let sent = w.history.len().saturating_sub(n);
    for at in sent..w.history.len() {
        let ex = &w.history[at];
        if let Err(m) = crate::rules::transport::bearer_challenge(ex) {
            return Err(w.fail_about(Some(ex), format!("{} for {}", m.expected, ex.method), m.got));
        }
    }
    Ok(())
}

/// The most the runner reads of the metadata document: a real one is a few hundred bytes.
const MAX_METADATA_BYTES: usize = 256 * 1024;

#[when("they fetch the protected resource metadata")]
async fn fetch_metadata(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let endpoint: reqwest::Url = w.ctx().endpoint.parse()?;
    let origin = endpoint.origin().ascii_serialization();
    let url = match w.saved.get("resource_metadata") {
        Some(url) => url.clone(),
        None => format!("{origin}/.well-known/oauth-protected-resource"),
    };
    // RFC 9728 puts the metadata on the resource's own origin. Following a URL elsewhere would
    // let a server under test make the runner fetch (and show) anything it can reach.
    if !crate::rules::transport::on_endpoint_origin(&url, &w.ctx().endpoint) {
        return Err(w.fail_about(
            None,
            format!("resource_metadata on the endpoint's origin {origin}"),
            "a URL on another origin (not fetched)",
        ));
    }
    let mut resp = w.ctx().http.get(&url).send().await.map_err(|e| anyhow!("GET {url}: {e}"))?;
    let status = resp.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| anyhow!("GET {url}: {e}"))? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_METADATA_BYTES {
            return Err(w.fail_about(
                None,
                format!("a metadata document at {url}"),
                format!("HTTP {status} with a body over {MAX_METADATA_BYTES} bytes (not read further)"),
            ));
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let doc: Value = serde_json::from_str(&text).map_err(|_| {
        w.fail_about(
            None,
            format!("JSON at {url}"),
            format!("HTTP {status}: {}", crate::client::cut(&text, 300)),
        )
    })?;
    w.document = Some(doc);
    Ok(())
}

#[then("the metadata names an authorization server and every scope of the contract")]
async fn metadata_content(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let doc = w.document.as_ref().ok_or_else(|| anyhow!("no metadata fetched yet"))?;
    crate::rules::transport::metadata_content(doc)
        .map_err(|got| w.fail_about(None, crate::rules::transport::METADATA_CONTENT, got))
}

/// RFC 9728 §3.3: a client must refuse metadata whose `resource` is not the URL it reached.
#[then("the metadata names the MCP endpoint as its resource")]
async fn metadata_resource(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let doc = w.document.as_ref().ok_or_else(|| anyhow!("no metadata fetched yet"))?;
    let endpoint = w.ctx().endpoint.clone();
    crate::rules::transport::names_endpoint(doc, &endpoint)
        .map_err(|got| w.fail_about(None, format!("resource {endpoint}, the MCP endpoint's URL"), got))
}

/// AUTH-4: two refusals must not tell which resource exists. What the clause is about (code,
/// category, retryable, message, and the text summary with the request_id masked) must be equal;
/// any other field differing (a timestamp, a trace id) is the reference's choice only.
#[then("the last two errors are the same but for their request_id")]
async fn same_errors(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let calls: Vec<_> = w.tool_calls().collect();
    let [.., a, b] = calls.as_slice() else {
        return Err(anyhow!("this step needs two calls before it"));
    };
    // Each call's own arguments are masked first: a message that echoes the ID asked for is an
    // ENV-6 failure (filed by the every-exchange checks), not an existence oracle.
    let mask = |text: &str, ex: &crate::client::Exchange| {
        ex.sent_strings.iter().fold(text.to_owned(), |t, sent| t.replace(sent.as_str(), "<argument>"))
    };
    let strip = |ex: &crate::client::Exchange| {
        let rid = ex.request_id().unwrap_or_default().to_owned();
        let mut error =
            ex.structured().and_then(|s| s.pointer("/data/error")).cloned().unwrap_or(Value::Null);
        if let Some(obj) = error.as_object_mut() {
            obj.remove("request_id");
            if let Some(Value::String(message)) = obj.get_mut("message") {
                *message = mask(message, ex);
            }
        }
        let texts = ex.texts().join("\n");
        let texts = if rid.is_empty() { texts } else { texts.replace(&rid, "<request_id>") };
        (error, mask(&texts, ex))
    };
    let (ea, ta) = strip(a);
    let (eb, tb) = strip(b);
    if ea.is_null() || eb.is_null() {
        return Err(w.fail_about(
            Some(if ea.is_null() { a } else { b }),
            "two tool errors",
            "a call that did not fail",
        ));
    }
    let seed = |e: &Value| ["code", "category", "retryable", "message"].map(|k| e.get(k).cloned());
    if seed(&ea) != seed(&eb) || ta != tb {
        let shown = |e: &Value, t: &str| {
            let [code, category, retryable, message] = seed(e);
            format!(
                "code {code:?}, category {category:?}, retryable {retryable:?}, message {message:?}, text {t:?}"
            )
        };
        return Err(w.fail_about(
            Some(b),
            format!("the same refusal as before: {}", shown(&ea, &ta)),
            shown(&eb, &tb),
        ));
    }
    if ea != eb {
        let differing: Vec<String> = ea
            .as_object()
            .into_iter()
            .chain(eb.as_object())
            .flat_map(|o| o.keys())
            .filter(|k| ea.get(k.as_str()) != eb.get(k.as_str()))
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        w.ext_difference("identical-errors", format!("data.error differs in {}", differing.join(", ")));
    }
    Ok(())
}

#[then(expr = "the error names the required scope {string}")]
async fn required_scope(w: &mut ConformanceWorld, scope: String) -> anyhow::Result<()> {
    let body = w.tool_error()?;
    if crate::rules::names_scope(w.last()?, &scope) {
        Ok(())
    } else {
        Err(w.fail(format!("required_scope {scope}"), format!("{:?}", body.required_scope)))
    }
}

/// AUTH-5: every record of the last page, or of the walk, is the restaurant's own. Each is judged
/// by the dataset's owner of its ID whenever the suite knows it, whatever the server labels it
/// (a sibling's record labelled with the restaurant asked is still a leak), and by the server's
/// `restaurant_id` label otherwise (records created by runs are in no dataset). Nothing to judge
/// is a failure: an empty answer proves nothing.
#[then(expr = "every {source} belongs to {target}")]
async fn every_result_of(w: &mut ConformanceWorld, source: Source, target: Target) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let items: Vec<Value> = if source == "result" {
        let data = w.success()?.data;
        data.as_object()
            .into_iter()
            .flat_map(|o| o.values())
            .filter_map(Value::as_array)
            .flatten()
            .cloned()
            .collect()
    } else {
        let walk =
            w.walk.as_ref().ok_or_else(|| anyhow!("no walk yet: add `When they walk all the … of …`"))?;
        walk.items().cloned().collect()
    };
    if items.is_empty() {
        return Err(w.fail(format!("records of {restaurant} to judge"), "no record at all"));
    }
    let leaked = not_owned_by(&items, &restaurant, |id| w.restaurant_of(id).ok());
    if leaked.is_empty() {
        Ok(())
    } else {
        Err(w.fail(format!("only records of {restaurant}"), leaked.join(", ")))
    }
}

/// The records among `items` that are not `restaurant`'s, each with why: its owner in the
/// dataset (`owner_of`), or else the server's own `restaurant_id` label.
fn not_owned_by(items: &[Value], restaurant: &str, owner_of: impl Fn(&str) -> Option<String>) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| {
            let id = item.get("id").and_then(Value::as_str);
            let label = item.get("restaurant_id").and_then(Value::as_str);
            let shown = id.unwrap_or("(no id)");
            match (id.and_then(&owner_of), label) {
                (Some(owner), _) if owner != restaurant => Some(format!("{shown} of {owner}")),
                (_, Some(label)) if label != restaurant => Some(format!("{shown} labelled {label}")),
                _ => None,
            }
        })
        .collect()
}

/// AUTH-5's count: the walk holds every instruction the dataset gives the restaurant, so an
/// empty list (or one that lost them) cannot pass "every item belongs to it".
#[then(expr = "the walk holds every instruction of {target} in the dataset")]
async fn walk_holds_instructions(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let walk = w.walk.as_ref().ok_or_else(|| anyhow!("no walk yet: add `When they walk all the … of …`"))?;
    let seen: std::collections::HashSet<&str> =
        walk.items().filter_map(|i| i.get("id").and_then(Value::as_str)).collect();
    let expected: Vec<&str> = w
        .dataset()
        .instructions
        .iter()
        .filter(|i| i.restaurant_id == restaurant)
        .map(|i| i.id.as_str())
        .collect();
    if expected.is_empty() {
        return Err(anyhow!("the dataset gives {restaurant} no instruction to look for"));
    }
    let missing: Vec<&str> = expected.iter().copied().filter(|id| !seen.contains(id)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let count = walk.items().count();
    Err(w.fail(
        format!(
            "the {} instructions of {restaurant} in the dataset ({})",
            expected.len(),
            expected.join(", ")
        ),
        format!("{count} items, missing {}", missing.join(", ")),
    ))
}

/// AUTH-7 for a user without memberships: nothing to list. An empty list is the reference's
/// answer; MCP_RESOURCE_FORBIDDEN leaks nothing either and is another allowed choice.
#[then(regex = r"^they are shown no (organizations|restaurants)$")]
async fn shown_nothing(w: &mut ConformanceWorld, key: String) -> anyhow::Result<()> {
    let ex = w.last()?;
    if ex.is_error() {
        let body = w.tool_error()?;
        if body.code == chataigne_contract::ErrorCode::ResourceForbidden {
            w.ext_difference("empty-when-no-membership", "refused with MCP_RESOURCE_FORBIDDEN");
            return Ok(());
        }
        return Err(w.fail(
            format!("an empty list of {key} or MCP_RESOURCE_FORBIDDEN"),
            format!("tool error {}", body.code),
        ));
    }
    let data = w.success()?.data;
    // A value that is not a list is not an empty one: the check could not read it.
    let pointer = format!("/{key}");
    let items = w.field(&data, &pointer)?.as_array().ok_or_else(|| w.blocked(&pointer))?.len();
    if items == 0 { Ok(()) } else { Err(w.fail(format!("no {key}"), format!("{items} {key}"))) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::not_owned_by;

    #[test]
    fn records_are_judged_by_their_dataset_owner_whatever_their_label() {
        let owner_of = |id: &str| match id {
            "ins_c1" => Some("rst_central".to_owned()),
            "ins_s1" => Some("rst_small".to_owned()),
            _ => None,
        };
        let check = |items: serde_json::Value, expected: &[&str]| {
            let items = items.as_array().unwrap().clone();
            assert_eq!(not_owned_by(&items, "rst_central", owner_of), expected, "{items:?}");
        };
        check(json!([{ "id": "ins_c1", "restaurant_id": "rst_central" }, { "id": "ins_c1" }]), &[]);
        // A sibling's record labelled with the restaurant asked is still the sibling's.
        check(json!([{ "id": "ins_s1", "restaurant_id": "rst_central" }]), &["ins_s1 of rst_small"]);
        check(json!([{ "id": "ins_s1" }]), &["ins_s1 of rst_small"]);
        // Records the dataset does not know are judged by their label.
        check(
            json!([{ "id": "ins_new", "restaurant_id": "rst_central" }, { "id": "ins_x", "restaurant_id": "rst_small" }]),
            &["ins_x labelled rst_small"],
        );
        check(json!([{ "restaurant_id": "rst_rival" }]), &["(no id) labelled rst_rival"]);
    }
}
