//! Resources (`resources/templates/list`, `resources/read`): a restaurant read through every
//! template the server advertises for one is held to the tenant clause like the tool (AUTH-4).
//! What the server does not advertise is not applicable, and only when it says so itself: no
//! resources capability in `initialize`, or -32601 for `resources/templates/list`.

use cucumber::{then, when};
use serde_json::{Value, json};

use crate::rules::resources as rules;
use crate::steps::params::Target;
use crate::world::ConformanceWorld;

use rules::TEMPLATE_PAGES;

/// A restaurant ID no dataset has: its read is what a refusal of a foreign one must look like.
const ABSENT: &str = rules::ABSENT_RESTAURANT;

/// Every restaurant template the server advertises, filled with the target's ID and then with
/// [`ABSENT`]'s, each read as the current persona (the pairs side by side in `history`).
#[when(expr = "they read {target} through every restaurant resource template the server lists")]
async fn read_through_templates(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let id = w.ctx().id_map.to_server(&w.landmark(&target)?);
    let templates = restaurant_templates(w).await?;
    let pairs: Vec<(String, String)> = templates
        .iter()
        .filter_map(|t| Some((rules::fill_restaurant(t, &id)?, rules::fill_restaurant(t, ABSENT)?)))
        .collect();
    if pairs.is_empty() {
        return Err(w.not_applicable("the server advertises no resource template naming a restaurant"));
    }
    for (uri, absent) in pairs {
        w.rpc("resources/read", json!({ "uri": uri })).await?;
        w.rpc("resources/read", json!({ "uri": absent })).await?;
    }
    Ok(())
}

/// PRE-2 on the resources surface: the restaurant the scenario created and changed, read through
/// every restaurant template the server advertises (each read after the change).
#[when("they read it back through every restaurant resource template the server lists")]
async fn read_created(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let id = saved(w, CREATED)?;
    let templates = restaurant_templates(w).await?;
    let uris: Vec<String> = templates.iter().filter_map(|t| rules::fill_restaurant(t, &id)).collect();
    if uris.is_empty() {
        return Err(w.not_applicable("the server advertises no resource template naming a restaurant"));
    }
    for uri in uris {
        w.rpc("resources/read", json!({ "uri": uri })).await?;
    }
    Ok(())
}

/// Every read of the last step answered, and each shows the restaurant in the status the
/// change left: a read that is not a success fails; a read whose contents state no status for
/// the restaurant shows nothing to compare (not applicable once every read is such).
#[then("every read shows the restaurant in the status its change left")]
async fn reads_show_status(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let id = saved(w, CREATED)?;
    let want = saved(w, CHANGED_TO)?;
    let reads: Vec<_> = w.history.iter().filter(|ex| ex.method == "resources/read").cloned().collect();
    if reads.is_empty() {
        return Err(anyhow::anyhow!("no resource was read: start with a read through the templates"));
    }
    let mut shown = 0;
    for ex in &reads {
        match rules::restaurant_status(ex, &id) {
            Err(what) => return Err(w.fail_about(Some(ex), format!("a read of the restaurant {id}"), what)),
            Ok(None) => {}
            Ok(Some(status)) if status == want => shown += 1,
            Ok(Some(status)) => {
                return Err(w.fail_about(
                    Some(ex),
                    format!("{id} in status \"{want}\", as the change left it"),
                    format!("status \"{status}\""),
                ));
            }
        }
    }
    if shown == 0 {
        return Err(w.not_applicable("no resource read states the restaurant's status"));
    }
    Ok(())
}

/// PRE-2 on the lists: the restaurant the scenario created and changed, found in
/// `list_restaurants` of its organization (every page, at most a bounded walk), shows the status
/// its change left (a list read from a cache the write does not invalidate shows the old one).
#[then("the restaurants listed show it in the status its change left")]
async fn listed_status(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let id = saved(w, CREATED)?;
    let want = saved(w, CHANGED_TO)?;
    let org = w.dataset().landmarks.home_organization.clone();
    let mut args = json!({ "organization_id": org, "limit": chataigne_contract::MAX_LIMIT });
    for _ in 0..MAX_PAGES {
        w.call_tool("list_restaurants", args.clone()).await?;
        let ex = w.last()?;
        let Some(s) = ex.structured().filter(|_| !ex.is_error()) else {
            return Err(w.fail("a page of the organization's restaurants", ex.summary()));
        };
        let server_id = w.ctx().id_map.to_server(&id);
        let found = s.pointer("/data/restaurants").and_then(Value::as_array).and_then(|items| {
            items.iter().find(|r| r.get("id").and_then(Value::as_str) == Some(server_id.as_str())).cloned()
        });
        let next = s.pointer("/meta/next_cursor").and_then(Value::as_str).map(str::to_owned);
        if let Some(r) = found {
            let status = r.get("status").and_then(Value::as_str).unwrap_or_default().to_owned();
            if status == want {
                return Ok(());
            }
            return Err(w.fail(
                format!("{id} listed in status \"{want}\", as the change left it"),
                format!("status \"{status}\""),
            ));
        }
        let Some(cursor) = next else { break };
        args["cursor"] = json!(cursor);
    }
    Err(w.fail(format!("{id} among the organization's restaurants"), "not listed"))
}

/// Pages of the organization's restaurants read at most to find the one the scenario created.
const MAX_PAGES: usize = 20;

/// What an earlier step of the scenario saved: the change step comes first.
fn saved(w: &ConformanceWorld, what: &str) -> anyhow::Result<String> {
    w.saved.get(what).cloned().ok_or_else(|| anyhow::anyhow!("no restaurant was created and changed"))
}

/// What `saved` keeps of the restaurant the scenario created and changed.
const CREATED: &str = "created_restaurant";
const CHANGED_TO: &str = "created_restaurant_status";

/// The restaurant the last success created: its ID, the status its creation showed, and the
/// other status.
fn created_and_other(w: &ConformanceWorld) -> anyhow::Result<(String, String, &'static str)> {
    let created = w.success()?;
    let field = |pointer: &str| {
        w.field(&created.data, pointer)?.as_str().map(str::to_owned).ok_or_else(|| w.blocked(pointer))
    };
    let (id, seen) = (field("/restaurant/id")?, field("/restaurant/status")?);
    let other = if seen == "open" { "paused" } else { "open" };
    Ok((id, seen, other))
}

/// The restaurant the last success created, set to its other status with the status its creation
/// showed as the one seen (PRE-2).
#[when("they set the restaurant they created to its other status, saying what its creation showed")]
async fn change_created(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let (id, seen, other) = created_and_other(w)?;
    w.saved.insert(CREATED.to_owned(), id.clone());
    w.saved.insert(CHANGED_TO.to_owned(), other.to_owned());
    let args = json!({ "restaurant_id": id, "status": other, "expected_status": seen });
    w.dirty = true;
    // The organization's other restaurants before and after: a change of one restaurant's
    // status that reaches another (a "pause all") changes a state no call named (PRE-1).
    let before = organization_statuses(w).await?;
    w.call_tool("set_restaurant_status", args).await?;
    let after = organization_statuses(w).await?;
    // The change stays the last exchange, for the steps that judge it.
    let n = w.history.len();
    w.history.swap(n - 1, n - 2);
    // Only restaurants both pages list (a server many runs wrote to may list the dataset's past
    // the first page).
    for (rid, was) in before.iter().filter(|(rid, _)| **rid != id) {
        let Some(is) = after.get(rid) else { continue };
        let broken = (is != was).then(|| {
            format!("setting {id} to \"{other}\" left {rid} \"{is}\", \"{was}\" before: a state no call named changed")
        });
        w.tally.note("PRE-1", crate::judge::RuleLevel::Seed, broken);
    }
    Ok(())
}

/// PRE-4 on a restaurant: two personas set the restaurant the last success created to its other
/// status at once, both saying what its creation showed. The restaurant is the scenario's own, so
/// no other scenario sees it move.
#[when(expr = "{snake} and {snake} both set the restaurant they created to its other status at once")]
async fn race_created(
    w: &mut ConformanceWorld,
    a: super::params::Snake,
    b: super::params::Snake,
) -> anyhow::Result<()> {
    let (id, seen, other) = created_and_other(w)?;
    let args = json!({ "restaurant_id": id, "status": other, "expected_status": seen });
    w.dirty = true;
    let calls = [a, b]
        .into_iter()
        .map(|persona| crate::world::Concurrent {
            persona: persona.into(),
            tool: "set_restaurant_status".to_owned(),
            args: args.clone(),
            delay_ms: 0,
        })
        .collect();
    w.concurrently(calls).await
}

/// The status of each of the dataset's restaurants of the home organization, as its list shows
/// them now.
async fn organization_statuses(
    w: &mut ConformanceWorld,
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let org = w.dataset().landmarks.home_organization.clone();
    let ours: Vec<String> =
        w.dataset().restaurants.iter().filter(|r| r.organization_id == org).map(|r| r.id.clone()).collect();
    let args =
        json!({ "organization_id": w.ctx().id_map.to_server(&org), "limit": chataigne_contract::MAX_LIMIT });
    let ex = w.call_tool("list_restaurants", args).await?;
    let items = ex
        .structured()
        .and_then(|s| s.pointer("/data/restaurants"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let inbound = |v: &Value| w.ctx().id_map.inbound(v);
    Ok(items
        .iter()
        .map(inbound)
        .filter_map(|r| Some((r.get("id")?.as_str()?.to_owned(), r.get("status")?.as_str()?.to_owned())))
        .filter(|(rid, _)| ours.contains(rid))
        .collect())
}

/// Every restaurant template the server advertises, in a fresh session of the persona (kept
/// for the reads that follow). Not applicable when the server says it has none: no resources
/// capability in `initialize`, or -32601 for the list.
async fn restaurant_templates(w: &mut ConformanceWorld) -> anyhow::Result<Vec<String>> {
    let (client, advertised) = w.started_client(Some("resources")).await?;
    w.keep_client(client)?;
    if advertised == Some(false) {
        return Err(w.not_applicable("initialize advertises no resources capability"));
    }
    let mut templates = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..TEMPLATE_PAGES {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let ex = w.rpc("resources/templates/list", params).await?;
        if ex.rpc_error().and_then(|e| e.get("code")).and_then(Value::as_i64) == Some(-32601) {
            return Err(w.not_applicable("resources/templates/list is not served (-32601)"));
        }
        let Some(page) = ex.result().cloned() else {
            let got = ex.summary();
            return Err(
                w.fail("resources/templates/list to answer, as the resources capability is advertised", got)
            );
        };
        templates.extend(rules::templates(&page));
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            return Ok(templates);
        }
    }
    Err(w.fail(
        format!("resources/templates/list to end within {TEMPLATE_PAGES} pages"),
        "a next cursor on every page",
    ))
}

/// Each read of the last step refused, telling nothing of `target` but what the caller sent.
#[then(expr = "every read is refused and tells nothing of {target}")]
async fn reads_refused(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    refused_since(w, target, 0)
}

/// AUTH-7 on the resources surface: every read after the membership was revoked is refused, and
/// tells nothing of `target` (a read before it may have been served, and remembered).
#[then(expr = "every read since the revocation is refused and tells nothing of {target}")]
async fn reads_refused_since_revocation(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let since = w.revoked_at.ok_or_else(|| anyhow::anyhow!("no membership was revoked in this scenario"))?;
    refused_since(w, target, since)
}

fn refused_since(w: &mut ConformanceWorld, target: Target, since: usize) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let secrets = rules::restaurant_secrets(w.dataset(), &id);
    if secrets.is_empty() {
        anyhow::bail!("{id} is not a restaurant of the dataset");
    }
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let reads: Vec<_> = w.history.iter().skip(since).filter(|ex| ex.method == "resources/read").collect();
    if reads.is_empty() {
        return Err(anyhow::anyhow!("no resource was read: start with a read through the templates"));
    }
    for ex in reads {
        if let Some(expected) = rules::refused_without_leak(ex, &secrets) {
            return Err(w.fail_about(Some(ex), expected, ex.summary()));
        }
    }
    Ok(())
}

/// AUTH-4's "refused alike" on the resources surface: each read of `target` is refused exactly
/// as the read of a restaurant that does not exist through the same template, but for the ID
/// each names and its request_id.
#[then(expr = "each read of {target} is refused as the read of a restaurant that does not exist")]
async fn refused_alike(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let id = w.ctx().id_map.to_server(&w.landmark(&target)?);
    let reads: Vec<_> = w.history.iter().filter(|ex| ex.method == "resources/read").collect();
    if reads.is_empty() || reads.len() % 2 != 0 {
        return Err(anyhow::anyhow!("reads in pairs are needed: start with a read through the templates"));
    }
    for pair in reads.chunks(2) {
        if let Some(expected) = rules::refused_alike(pair[0], &id, pair[1], ABSENT) {
            return Err(w.fail_about(
                Some(pair[0]),
                expected,
                format!("{}\nvs. {}", pair[0].summary(), pair[1].summary()),
            ));
        }
    }
    Ok(())
}

/// What the scenario's reads through child templates stand for: the foreign tenant's IDs, each
/// paired with an absent one of its kind, in the order the templates named them.
const CHILD_READS: &str = "child_reads";

/// The foreign tenant's record of `kind` (the dataset's landmarks; an instruction of the foreign
/// restaurant), in dataset IDs.
fn foreign_of(w: &ConformanceWorld, kind: &str) -> Option<String> {
    let d = w.dataset();
    let l = &d.landmarks;
    Some(match kind {
        "organization" => l.foreign_organization.clone(),
        "restaurant" => l.foreign_restaurant.clone(),
        "order" => l.foreign_order.clone(),
        "conversation" => l.foreign_conversation.clone(),
        "transcript" => l.foreign_transcript.clone(),
        _ => d.instructions.iter().find(|i| i.restaurant_id == l.foreign_restaurant)?.id.clone(),
    })
}

/// AUTH-5 on the resources surface: every template the server advertises that names a child
/// record (an order, a conversation, a transcript, an instruction), each variable filled with the
/// foreign tenant's record of its kind, then with one of that kind that does not exist; each pair
/// read in turn. Not applicable when the server advertises no such template.
#[when(
    "they read the foreign tenant's records through every resource template the server lists that names a child record"
)]
async fn read_children(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let templates = restaurant_templates(w).await?;
    let mut pairs = Vec::new();
    for template in &templates {
        let foreign = |kind: &str| foreign_of(w, kind).map(|id| w.ctx().id_map.to_server(&id));
        let Some((uri, kinds)) = rules::fill_kinds(template, foreign) else { continue };
        if !kinds.iter().any(|k| rules::is_child(k)) {
            continue;
        }
        let absent = |kind: &str| {
            let id = foreign(kind)?;
            Some(format!("{}_doesnotexist", id.split_once('_').map_or("x", |(p, _)| p)))
        };
        let Some((other, _)) = rules::fill_kinds(template, absent) else { continue };
        let ids: Vec<(String, String)> =
            kinds.iter().filter_map(|k| Some((foreign(k)?, absent(k)?))).collect();
        pairs.push((uri, other, ids));
    }
    if pairs.is_empty() {
        return Err(w.not_applicable("the server advertises no resource template naming a child record"));
    }
    let mut saved = Vec::new();
    for (uri, absent, ids) in pairs {
        w.rpc("resources/read", json!({ "uri": uri })).await?;
        w.rpc("resources/read", json!({ "uri": absent })).await?;
        saved.push(ids);
    }
    w.saved.insert(CHILD_READS.to_owned(), serde_json::to_string(&saved)?);
    Ok(())
}

/// Each read of the step before: refused, telling nothing of the foreign tenant's records (the
/// restaurant's name, organization and creation time; the order's, conversation's customer; the
/// transcript's text), and refused exactly as the read of records that do not exist, but for
/// the IDs each names.
#[then(
    "each read is refused, tells nothing of the records and is refused as the read of records that do not exist"
)]
async fn children_refused_alike(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let saved = saved_pairs(w, CHILD_READS, "no reads: start with the child templates")?;
    let secrets = foreign_secrets(w);
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let reads: Vec<_> = w.history.iter().filter(|ex| ex.method == "resources/read").collect();
    let reads = &reads[reads.len().saturating_sub(2 * saved.len())..];
    for (pair, ids) in reads.chunks(2).zip(&saved) {
        if let Some(expected) = rules::refused_without_leak(pair[0], &secrets) {
            return Err(w.fail_about(Some(pair[0]), expected, pair[0].summary()));
        }
        let foreign: Vec<&str> = ids.iter().map(|(f, _)| f.as_str()).collect();
        let absent: Vec<&str> = ids.iter().map(|(_, a)| a.as_str()).collect();
        if let Some(expected) = rules::refused_alike_ids(pair[0], &foreign, pair[1], &absent) {
            let got = format!("{}\nvs. {}", pair[0].summary(), pair[1].summary());
            return Err(w.fail_about(Some(pair[0]), expected, got));
        }
    }
    Ok(())
}

/// What the scenario's prompts stand for: per prompt asked, the foreign IDs and the absent ones.
const PROMPT_ASKS: &str = "prompt_asks";

/// AUTH-4 on the prompts surface: every prompt the server lists whose arguments name records
/// (a restaurant, a conversation, …), asked for with the foreign tenant's records, then with
/// records that do not exist. A prompt with a required argument that names no record is left
/// out; not applicable when none is left, or the server lists no prompts.
#[when(
    "they ask for every prompt the server lists about the foreign tenant's records, then about records that do not exist"
)]
async fn ask_prompts(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    ask_prompts_with(w, false).await
}

/// AUTH-5 on the prompts surface: every prompt with two arguments or more that name records,
/// asked with the caller's own records but one, the foreign tenant's (then one that does not
/// exist): a prompt that reads a child record by its ID alone (a conversation, not the
/// conversation of the restaurant named) shows it.
#[when(
    "they ask for every prompt the server lists with one of the foreign tenant's records among their own, then with one that does not exist"
)]
async fn ask_prompts_mixed(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    ask_prompts_with(w, true).await
}

/// The asks of the two steps above: all of a prompt's record arguments foreign, or (`mixed`) one
/// at a time among the caller's own.
async fn ask_prompts_with(w: &mut ConformanceWorld, mixed: bool) -> anyhow::Result<()> {
    let (client, _) = w.started_client(None).await?;
    w.keep_client(client)?;
    let mut prompts: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..TEMPLATE_PAGES {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let ex = w.rpc("prompts/list", params).await?;
        let Some(page) = ex.result().cloned() else {
            return Err(w.not_applicable("prompts/list is not served"));
        };
        prompts.extend(page.get("prompts").and_then(Value::as_array).cloned().unwrap_or_default());
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let mut asks = Vec::new();
    for prompt in &prompts {
        let Some(name) = prompt.get("name").and_then(Value::as_str) else { continue };
        let arguments = prompt.get("arguments").and_then(Value::as_array).cloned().unwrap_or_default();
        // Each record argument: its name, the foreign record, one that does not exist, the caller's.
        let mut records = Vec::new();
        let mut usable = true;
        for arg in &arguments {
            let Some(arg_name) = arg.get("name").and_then(Value::as_str) else { continue };
            let required = arg.get("required").and_then(Value::as_bool).unwrap_or(false);
            let kind = rules::kind_of(arg_name);
            let to_server = |id: String| w.ctx().id_map.to_server(&id);
            let foreign = kind.and_then(|k| foreign_of(w, k)).map(to_server);
            let own =
                kind.and_then(|k| crate::rules::capabilities::own_record(w.dataset(), k)).map(to_server);
            let (Some(id), Some(own)) = (foreign, own) else {
                usable &= !required;
                continue;
            };
            let none = format!("{}_doesnotexist", id.split_once('_').map_or("x", |(p, _)| p));
            records.push((arg_name.to_owned(), id, none, own));
        }
        if !usable || records.is_empty() {
            continue;
        }
        if !mixed {
            let (mut foreign, mut absent) = (json!({}), json!({}));
            for (arg, id, none, _) in &records {
                foreign[arg] = json!(id);
                absent[arg] = json!(none);
            }
            let ids = records.iter().map(|(_, id, none, _)| (id.clone(), none.clone())).collect();
            asks.push((name.to_owned(), foreign, absent, ids));
        } else if records.len() > 1 {
            for (i, (arg, id, none, _)) in records.iter().enumerate() {
                let (mut foreign, mut absent) = (json!({}), json!({}));
                for (j, (other, _, _, own)) in records.iter().enumerate() {
                    if j != i {
                        foreign[other] = json!(own);
                        absent[other] = json!(own);
                    }
                }
                foreign[arg] = json!(id);
                absent[arg] = json!(none);
                asks.push((name.to_owned(), foreign, absent, vec![(id.clone(), none.clone())]));
            }
        }
    }
    if asks.is_empty() {
        let why =
            if mixed { "two arguments or more that name records" } else { "arguments that name a record" };
        return Err(w.not_applicable(format!("the server lists no prompt with {why}")));
    }
    let mut saved = Vec::new();
    for (name, foreign, absent, ids) in asks {
        w.rpc("prompts/get", json!({ "name": name, "arguments": foreign })).await?;
        w.rpc("prompts/get", json!({ "name": name, "arguments": absent })).await?;
        saved.push(ids);
    }
    w.saved.insert(PROMPT_ASKS.to_owned(), serde_json::to_string(&saved)?);
    Ok(())
}

/// Each pair of the step before: the answer about the foreign tenant's records tells nothing of
/// them (names, creation times, customers, texts) and is the answer about records that do not
/// exist, but for the IDs: served or refused, alike.
#[then("each answer tells nothing of the records and is the answer about records that do not exist")]
async fn prompts_alike(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let saved = saved_pairs(w, PROMPT_ASKS, "no prompts asked: start with the prompts")?;
    let secrets = foreign_secrets(w);
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let asks: Vec<_> = w.history.iter().filter(|ex| ex.method == "prompts/get").collect();
    let asks = &asks[asks.len().saturating_sub(2 * saved.len())..];
    for (pair, ids) in asks.chunks(2).zip(&saved) {
        if let Some(secret) = rules::told(pair[0], &secrets) {
            let expected = "an answer that tells nothing of another tenant's records";
            return Err(w.fail_about(Some(pair[0]), expected, format!("it shows \"{secret}\"")));
        }
        let foreign: Vec<&str> = ids.iter().map(|(f, _)| f.as_str()).collect();
        let absent: Vec<&str> = ids.iter().map(|(_, a)| a.as_str()).collect();
        if let Some(expected) = rules::answered_alike_ids(pair[0], &foreign, pair[1], &absent) {
            let got = format!("{}\nvs. {}", pair[0].summary(), pair[1].summary());
            return Err(w.fail_about(Some(pair[0]), expected, got));
        }
    }
    Ok(())
}

/// What a step saved of the pairs it sent: per pair, the foreign IDs and the absent ones.
fn saved_pairs(w: &ConformanceWorld, key: &str, missing: &str) -> anyhow::Result<Vec<Vec<(String, String)>>> {
    let text = w.saved.get(key).ok_or_else(|| anyhow::anyhow!("{missing}"))?;
    Ok(serde_json::from_str(text)?)
}

/// What only the foreign tenant's records tell of themselves: the restaurant's name, creation
/// time and organization, the order's and the conversation's customer, the transcript's opening.
fn foreign_secrets(w: &ConformanceWorld) -> Vec<String> {
    let d = w.dataset();
    let l = &d.landmarks;
    let mut secrets = rules::restaurant_secrets(d, &l.foreign_restaurant);
    secrets.extend(d.orders.iter().filter(|o| o.id == l.foreign_order).map(|o| o.customer_name.clone()));
    secrets.extend(
        d.conversations.iter().filter(|c| c.id == l.foreign_conversation).map(|c| c.customer_name.clone()),
    );
    secrets.extend(
        d.transcripts
            .iter()
            .filter(|t| t.id == l.foreign_transcript)
            .map(|t| t.text.chars().take(40).collect()),
    );
    secrets
}
