//! The surfaces a server exposes besides its tools, probed as the transport is: `ping`
//! (PROTO-1), the protected resource metadata (AUTH-1), every list, resource and prompt the
//! server serves as each persona of the profile (PROTO-1's capabilities, AUTH-4's tenants), and
//! the foreign restaurant read through every resource template it advertises (AUTH-4). Judged by
//! the rules the scenarios of the same names use (`crate::rules`), never more.

use serde_json::{Value, json};

use super::{Judged, judged, send, session, try_send};
use crate::client::Exchange;
use crate::fuzz::engine::Engine;
use crate::fuzz::observed::{PERSONA, Why};
use crate::rules::capabilities::{self as caps, LISTS, PROBES};
use crate::rules::resources as res;
use crate::rules::transport::{self as rules, Miss};
use crate::world::MAX_WALK_PAGES;

pub(super) const PING: &str = "ping";
pub(super) const METADATA: &str = "metadata";
pub(super) const SURFACES_AS: &str = "surfaces as ";
pub(super) const FOREIGN_READ: &str = "foreign restaurant as a resource";
pub(super) const UNKNOWN_NAMES: &str = "a prompt and a resource the server does not have";
/// Listed resources and prompts read at most (as the scenario's step): past it, blocked.
const MAX_ENTRIES: usize = 500;

/// This family's probes: every persona of the dataset the profile has a token for (of this
/// server's audience) walks the surfaces (a tenant leak is a persona's), in the dataset's order.
pub(super) fn probes(engine: &Engine<'_>, http: bool) -> Vec<String> {
    let mut out = vec![PING.to_owned()];
    if http {
        out.push(METADATA.to_owned());
    }
    let mut personas: Vec<&str> = Vec::new();
    // A token for another audience opens no session (AUTH-2 has its own probe).
    for p in engine.caller.ctx.dataset.personas.iter().filter(|p| p.audience.is_none()) {
        if engine.caller.can_call_as(&p.persona) && !personas.contains(&p.persona.as_str()) {
            personas.push(&p.persona);
        }
    }
    out.extend(personas.into_iter().map(|p| format!("{SURFACES_AS}{p}")));
    out.push(FOREIGN_READ.to_owned());
    out.push(UNKNOWN_NAMES.to_owned());
    out
}

/// The judged exchanges of probe `name`, `None` when it is not this family's.
pub(super) fn judge(engine: &Engine<'_>, name: &str) -> Option<Vec<Judged>> {
    if name == PING {
        let Some(mut client) = session(engine, name) else { return Some(Vec::new()) };
        let ex = send(engine, client.request("ping", json!({})));
        return Some(judged("PROTO-1", "ping", ex.clone(), rules::empty_result(&ex)));
    }
    if name == METADATA {
        return Some(metadata(engine));
    }
    if let Some(persona) = name.strip_prefix(SURFACES_AS) {
        return Some(surfaces(engine, name, persona));
    }
    if name == UNKNOWN_NAMES {
        return Some(unknown_names(engine, name));
    }
    (name == FOREIGN_READ).then(|| foreign_read(engine, name))
}

/// PROTO-2: a prompt and a resource the server does not have, each refused with a JSON-RPC error
/// (MCP's codes: the reference's choice `unknown-name-codes`).
fn unknown_names(engine: &Engine<'_>, name: &str) -> Vec<Judged> {
    let Some(mut client) = session(engine, name) else { return Vec::new() };
    let mut asks = vec![
        ("prompts/get", json!({ "name": caps::UNKNOWN_PROMPT })),
        ("resources/read", json!({ "uri": caps::UNKNOWN_URI })),
    ];
    // Again with each listed prompt's arguments (`caps::unknown_prompt_asks`).
    if let Some(listed) = try_send(engine, client.request("prompts/list", json!({}))) {
        let ctx = engine.caller.ctx;
        let own = |kind: &str| caps::own_record(&ctx.dataset, kind).map(|id| ctx.id_map.to_server(&id));
        asks.extend(caps::unknown_prompt_asks(&listed, own).into_iter().map(|p| ("prompts/get", p)));
    }
    let mut out = Vec::new();
    for (method, params) in asks {
        let Some(ex) = try_send(engine, client.request(method, params)) else { return out };
        let rule = caps::unknown_finding(&ex).map_err(|expected| Miss { expected, got: ex.summary() });
        out.extend(super::judged_choice("PROTO-2", "unknown-name-codes", method, ex, rule));
    }
    out
}

/// The steps of the scenario stating probe `name`'s rules, `None` when it is not this family's.
pub(super) fn scenario(name: &str) -> Option<Vec<String>> {
    let s = |t: &str| format!("    {t}");
    let given = |p: &str| s(&format!("Given the persona \"{p}\""));
    let steps: Vec<String> = if name == PING {
        vec![
            given(PERSONA),
            s("When they send the JSON-RPC request \"ping\""),
            s("Then the answer is an empty result"),
        ]
    } else if name == METADATA {
        vec![
            s("When someone without a token initializes"),
            s("Then the answer is HTTP 401 with a bearer challenge naming the resource metadata"),
            s("When they fetch the protected resource metadata"),
            s("Then the metadata names an authorization server and every scope of the contract"),
            s("And the metadata names the MCP endpoint as its resource"),
        ]
    } else if let Some(persona) = name.strip_prefix(SURFACES_AS) {
        vec![
            given(persona),
            s("When they start a session and ask for every list the protocol has and every entry listed"),
            s("Then each capability it advertises is served, and nothing it serves is unadvertised"),
            s("And no answer names a restaurant or organization outside their memberships"),
        ]
    } else if name == UNKNOWN_NAMES {
        vec![
            given(PERSONA),
            s("When they start a session and ask for a prompt and a resource the server does not have"),
            s("Then each is refused with a JSON-RPC error, the codes MCP names by the reference's choice"),
        ]
    } else if name == FOREIGN_READ {
        vec![
            given(PERSONA),
            s(
                "When they read the foreign restaurant through every restaurant resource template the server lists",
            ),
            s("Then every read is refused and tells nothing of the foreign restaurant"),
            s(
                "And each read of the foreign restaurant is refused as the read of a restaurant that does not exist",
            ),
        ]
    } else {
        return None;
    };
    Some(steps)
}

fn miss(clause: &'static str, ex: Exchange, expected: String, got: String) -> Judged {
    let tool = ex.method.clone();
    Judged { clause, choice: None, tool, ex, miss: Some(Miss { expected, got }) }
}

/// AUTH-1: the document the challenge of a call without a token names (the well-known one when
/// it names none) holds what a client needs, and names the endpoint as its resource. A URL on
/// another origin is not fetched: the probe `no token` files it.
fn metadata(engine: &Engine<'_>) -> Vec<Judged> {
    let ctx = engine.caller.ctx;
    let mut client = ctx.anonymous_client(None, None);
    let challenge = send(engine, client.initialize());
    let url = match rules::bearer_challenge(&challenge) {
        Ok(url) if rules::on_endpoint_origin(&url, &ctx.endpoint) => url,
        Ok(_) => return Vec::new(),
        Err(_) => match ctx.endpoint.parse::<reqwest::Url>() {
            Ok(u) => format!("{}/.well-known/oauth-protected-resource", u.origin().ascii_serialization()),
            Err(_) => return Vec::new(),
        },
    };
    let Some(ex) = try_send(engine, client.get_document(&url)) else { return Vec::new() };
    let doc = ex.response().and_then(|r| serde_json::from_str::<Value>(&r.body).ok());
    let Some(doc) = doc else {
        let got = ex.summary();
        return vec![miss("AUTH-1", ex, format!("JSON at {url}"), got)];
    };
    let mut out = Vec::new();
    if let Err(got) = rules::metadata_content(&doc) {
        out.push(miss("AUTH-1", ex.clone(), rules::METADATA_CONTENT.to_owned(), got));
    }
    if let Err(got) = rules::names_endpoint(&doc, &ctx.endpoint) {
        out.push(miss("AUTH-1", ex, format!("resource {}, the MCP endpoint's URL", ctx.endpoint), got));
    }
    out
}

/// Every list of the protocol walked to its end in a new session of `persona`, every listed
/// resource read, every listed prompt asked for, each advertised probe sent: each answer held to
/// what `initialize` advertised (PROTO-1), and none naming a restaurant or organization outside
/// the persona's memberships (AUTH-4). The first miss of each clause is filed.
fn surfaces(engine: &Engine<'_>, name: &str, persona: &str) -> Vec<Judged> {
    let ctx = engine.caller.ctx;
    let what = format!("probe {name}");
    let Some(mut client) = ctx.client(persona) else {
        engine.block(Why::NoSession, &what, format!("the profile has no token for `{persona}`"));
        return Vec::new();
    };
    let init = send(engine, client.initialize());
    if !client.is_initialized() {
        engine.block(Why::NoSession, &what, format!("initialize as `{persona}` failed ({})", init.summary()));
        return Vec::new();
    }
    let mut answers = Vec::new();
    let (mut uris, mut prompts) = (Vec::new(), Vec::new());
    for surface in &LISTS {
        let mut cursor: Option<String> = None;
        for page in 0.. {
            if page == MAX_WALK_PAGES {
                let why =
                    format!("{} still gives a next cursor after {MAX_WALK_PAGES} pages", surface.method);
                engine.block(Why::WalkCapped, &what, why);
                return Vec::new();
            }
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
            let Some(ex) = try_send(engine, client.request(surface.method, params)) else {
                return Vec::new();
            };
            match surface.method {
                "resources/list" => uris.extend(caps::resource_uris(&ex)),
                "prompts/list" => prompts.extend(caps::prompt_names(&ex)),
                _ => {}
            }
            cursor = ex.result().and_then(|r| r.get("nextCursor")).and_then(Value::as_str).map(str::to_owned);
            answers.push(ex);
            if cursor.is_none() {
                break;
            }
        }
    }
    if uris.len() + prompts.len() > MAX_ENTRIES {
        let why = format!(
            "{} resources and prompts listed, more than the {MAX_ENTRIES} read",
            uris.len() + prompts.len()
        );
        engine.block(Why::TooManyEntries, &what, why);
        return Vec::new();
    }
    for uri in uris {
        let Some(ex) = try_send(engine, client.request("resources/read", json!({ "uri": uri }))) else {
            return Vec::new();
        };
        answers.push(ex);
    }
    for probe in PROBES.iter().filter(|p| caps::advertised(&init, p.capability) == Some(true)) {
        let params = serde_json::from_str(probe.params).unwrap_or_else(|_| json!({}));
        let Some(ex) = try_send(engine, client.request(probe.method, params)) else { return Vec::new() };
        answers.push(ex);
    }
    for prompt in prompts {
        let Some(ex) = try_send(engine, client.request("prompts/get", json!({ "name": prompt }))) else {
            return Vec::new();
        };
        answers.push(ex);
    }
    let user = ctx.dataset.personas.iter().find(|p| p.persona == persona).map(|p| p.user_id.clone());
    let secrets = user.map(|u| caps::out_of_reach(&ctx.dataset, &u)).unwrap_or_default();
    let tenant_surface =
        |m: &str| m == "resources/read" || m == "prompts/get" || LISTS.iter().any(|s| s.method == m);
    let mut out = Vec::new();
    if let Some((ex, expected)) = answers.iter().find_map(|ex| caps::finding(&init, ex).map(|e| (ex, e))) {
        out.push(miss("PROTO-1", ex.clone(), expected, ex.summary()));
    }
    let leak = answers
        .iter()
        .filter(|ex| tenant_surface(&ex.method))
        .find_map(|ex| caps::named(ex, &secrets).map(|n| (ex, n)));
    if let Some((ex, leaked)) = leak {
        let expected = format!("no name of a restaurant or organization outside {persona}'s memberships");
        out.push(miss("AUTH-4", ex.clone(), expected, format!("the answer names \"{leaked}\"")));
    }
    out
}

/// AUTH-4 on the resources surface: every restaurant template the owner's session lists, filled
/// with the foreign restaurant and with one that does not exist; each foreign read refused,
/// telling nothing of the restaurant, and alike with the other. Not applicable (nothing judged,
/// as the scenario says) when the server advertises no resources or serves no templates.
fn foreign_read(engine: &Engine<'_>, name: &str) -> Vec<Judged> {
    let ctx = engine.caller.ctx;
    let Some(mut client) = ctx.client(PERSONA) else {
        engine.block(
            Why::NoSession,
            &format!("probe {name}"),
            format!("the profile has no token for `{PERSONA}`"),
        );
        return Vec::new();
    };
    let init = send(engine, client.initialize());
    if !client.is_initialized() || caps::advertised(&init, "resources") != Some(true) {
        return Vec::new();
    }
    let mut templates = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..res::TEMPLATE_PAGES {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let Some(ex) = try_send(engine, client.request("resources/templates/list", params)) else {
            return Vec::new();
        };
        // Not served, or not answered: the surfaces probe holds it to the capability.
        let Some(page) = ex.result() else { return Vec::new() };
        templates.extend(res::templates(page));
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let landmark = &ctx.dataset.landmarks.foreign_restaurant;
    let foreign = ctx.id_map.to_server(landmark);
    let secrets = res::restaurant_secrets(&ctx.dataset, landmark);
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    for template in &templates {
        let (Some(uri), Some(absent)) = (
            res::fill_restaurant(template, &foreign),
            res::fill_restaurant(template, res::ABSENT_RESTAURANT),
        ) else {
            continue;
        };
        let Some(read) = try_send(engine, client.request("resources/read", json!({ "uri": uri }))) else {
            return Vec::new();
        };
        let Some(other) = try_send(engine, client.request("resources/read", json!({ "uri": absent }))) else {
            return Vec::new();
        };
        if let Some(expected) = res::refused_without_leak(&read, &secrets) {
            let got = read.summary();
            return vec![miss("AUTH-4", read, expected, got)];
        }
        if let Some(expected) = res::refused_alike(&read, &foreign, &other, res::ABSENT_RESTAURANT) {
            let got = format!("{}\nvs. {}", read.summary(), other.summary());
            return vec![miss("AUTH-4", read, expected, got)];
        }
    }
    Vec::new()
}
