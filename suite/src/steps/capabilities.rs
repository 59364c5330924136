//! What the server advertises against what it serves (PROTO-1, `rules::capabilities`): every
//! list of the protocol asked for in a new session, walked to its end, every listed resource read
//! and every listed prompt asked for, each advertised probe sent (`logging/setLevel`); the `Then`
//! judges each exchange by what `initialize` said.

use cucumber::{then, when};
use serde_json::{Value, json};

use crate::rules::capabilities::{self as rules, LISTS, PROBES};
use crate::world::{ConformanceWorld, MAX_WALK_PAGES};

/// Listed resources and prompts the step reads at most; a server that lists more blocks the
/// scenario (what was not read is not proven), never passes it.
const MAX_ENTRIES: usize = 500;

/// Every entry of every page of `surface`'s list (a list still going after [`MAX_WALK_PAGES`]
/// pages blocks the scenario: what was not read is not proven).
async fn every_page(w: &mut ConformanceWorld, surface: &rules::Surface) -> anyhow::Result<Vec<Value>> {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        if page == MAX_WALK_PAGES {
            return Err(w.cut_walk(surface.method));
        }
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let ex = w.rpc(surface.method, params).await?;
        entries.extend(rules::entries(ex, surface).cloned().unwrap_or_default());
        cursor = ex.result().and_then(|r| r.get("nextCursor")).and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(entries)
}

#[when("they start a session and ask for every list the protocol has and every entry listed")]
async fn ask_everything(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let (client, _) = w.started_client(None).await?;
    w.keep_client(client)?;
    let mut uris = Vec::new();
    let mut prompts = Vec::new();
    for surface in &LISTS {
        let entries = every_page(w, surface).await?;
        let field = |key: &str| {
            entries.iter().filter_map(|e| e.get(key)?.as_str().map(str::to_owned)).collect::<Vec<_>>()
        };
        match surface.method {
            "resources/list" => uris.extend(field("uri")),
            "prompts/list" => prompts.extend(field("name")),
            _ => {}
        }
    }
    if uris.len() + prompts.len() > MAX_ENTRIES {
        return Err(w.not_all_checked(format!(
            "the server lists {} resources and prompts, more than the {MAX_ENTRIES} this check reads, \
             so what it serves is not all proven",
            uris.len() + prompts.len()
        )));
    }
    for uri in uris {
        w.rpc("resources/read", json!({ "uri": uri })).await?;
    }
    for probe in &PROBES {
        let advertised = w
            .history
            .iter()
            .rfind(|ex| ex.method == "initialize")
            .and_then(|init| rules::advertised(init, probe.capability));
        if advertised == Some(true) {
            w.rpc(probe.method, serde_json::from_str(probe.params)?).await?;
        }
    }
    for name in prompts {
        w.rpc("prompts/get", json!({ "name": name })).await?;
    }
    Ok(())
}

#[then("each capability it advertises is served, and nothing it serves is unadvertised")]
async fn advertised_is_served(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let init = w
        .history
        .iter()
        .rfind(|ex| ex.method == "initialize")
        .ok_or_else(|| anyhow::anyhow!("no session was started: start with asking for every list"))?;
    for ex in &w.history {
        if let Some(expected) = rules::finding(init, ex) {
            return Err(w.fail_about(Some(ex), expected, ex.summary()));
        }
    }
    Ok(())
}

/// AUTH-4 on every surface the step above reached: no list, listed resource or prompt names a
/// restaurant or organization outside the persona's memberships (`rules::out_of_reach`).
#[then("no answer names a restaurant or organization outside their memberships")]
async fn nothing_out_of_reach(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let persona = w.persona()?.to_owned();
    let dataset = w.dataset();
    let user = dataset
        .personas
        .iter()
        .find(|p| p.persona == persona)
        .map(|p| p.user_id.clone())
        .ok_or_else(|| anyhow::anyhow!("persona \"{persona}\" is not in the dataset"))?;
    let secrets = rules::out_of_reach(dataset, &user);
    let surfaces = ["resources/read", "prompts/get"];
    let mut judged = 0;
    for ex in &w.history {
        if !(surfaces.contains(&ex.method.as_str()) || LISTS.iter().any(|s| s.method == ex.method)) {
            continue;
        }
        judged += 1;
        if let Some(name) = rules::named(ex, &secrets) {
            let expected = format!("no name of a restaurant or organization outside {persona}'s memberships");
            return Err(w.fail_about(Some(ex), expected, format!("the answer names \"{name}\"")));
        }
    }
    if judged == 0 {
        return Err(anyhow::anyhow!("no list was asked for: start with asking for every list"));
    }
    Ok(())
}

/// PROTO-2 for names the server does not have (`rules::capabilities::unknown_finding`).
#[when("they start a session and ask for a prompt and a resource the server does not have")]
async fn ask_unknown(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let (client, _) = w.started_client(None).await?;
    w.keep_client(client)?;
    w.rpc("prompts/get", json!({ "name": rules::UNKNOWN_PROMPT })).await?;
    w.rpc("resources/read", json!({ "uri": rules::UNKNOWN_URI })).await?;
    // The unknown name again with the arguments of each prompt the server lists, filled with the
    // caller's own records: a server that falls back to a prompt it has only shows it then.
    let listed = w.rpc("prompts/list", json!({})).await?.clone();
    let own = |kind: &str| rules::own_record(w.dataset(), kind).map(|id| w.ctx().id_map.to_server(&id));
    for params in rules::unknown_prompt_asks(&listed, own) {
        w.rpc("prompts/get", params).await?;
    }
    Ok(())
}

#[then("each is refused with a JSON-RPC error, the codes MCP names by the reference's choice")]
async fn unknown_refused(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let asked: Vec<_> = w
        .history
        .iter()
        .filter(|ex| matches!(ex.method.as_str(), "prompts/get" | "resources/read"))
        .cloned()
        .collect();
    if asked.len() < 2 {
        return Err(anyhow::anyhow!(
            "start with asking for a prompt and a resource the server does not have"
        ));
    }
    for ex in &asked {
        match rules::unknown_finding(ex) {
            Err(expected) => return Err(w.fail_about(Some(ex), expected, ex.summary())),
            Ok(Some(difference)) => w.ext_difference("unknown-name-codes", difference),
            Ok(None) => {}
        }
    }
    Ok(())
}

/// ABS-1 on every surface that can offer an operation: no resource, resource template or prompt
/// the server lists is named after a deliberately absent operation (its name, URI or URI
/// template), as no tool is. Every page of each list is read; more than a walk's pages blocks.
#[then("no resource, resource template or prompt the server lists is named after any of these words:")]
async fn no_absent_entries(w: &mut ConformanceWorld, step: &cucumber::gherkin::Step) -> anyhow::Result<()> {
    let words = super::table_words(step, "this step needs a table of words")?;
    let (client, _) = w.started_client(None).await?;
    w.keep_client(client)?;
    let mut named = Vec::new();
    for surface in LISTS.iter().filter(|s| s.method != "tools/list") {
        for entry in every_page(w, surface).await? {
            for key in ["name", "uri", "uriTemplate"] {
                if let Some(text) = entry.get(key).and_then(Value::as_str) {
                    named.push((surface.method, key, text.to_owned()));
                }
            }
        }
    }
    for (method, key, text) in named {
        let lower = text.to_ascii_lowercase();
        let hits: Vec<&str> =
            words.iter().filter(|word| lower.contains(word.as_str())).map(String::as_str).collect();
        if !hits.is_empty() {
            let ex = w.history.iter().rev().find(|e| e.method == method);
            return Err(w.fail_about(
                ex,
                "no resource, template or prompt named after a deliberately absent operation",
                format!("{method} lists {key} {text}, which contains {}", hits.join(", ")),
            ));
        }
    }
    Ok(())
}
