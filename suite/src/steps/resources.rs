//! Resources (`resources/templates/list`, `resources/read`): a restaurant read through every
//! template the server advertises for one is held to the tenant clause like the tool (AUTH-4).
//! What the server does not advertise is not applicable, and only when it says so itself: no
//! resources capability in `initialize`, or -32601 for `resources/templates/list`.

use cucumber::{then, when};
use serde_json::{Value, json};

use crate::rules::resources as rules;
use crate::steps::params::Target;
use crate::world::ConformanceWorld;

/// At most this many pages of `resources/templates/list`.
const TEMPLATE_PAGES: usize = 20;

/// A restaurant ID no dataset has: its read is what a refusal of a foreign one must look like.
const ABSENT: &str = "rst_doesnotexist";

/// Every restaurant template the server advertises, filled with the target's ID and then with
/// [`ABSENT`]'s, each read as the current persona (the pairs side by side in `history`).
#[when(expr = "they read {target} through every restaurant resource template the server lists")]
async fn read_through_templates(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let id = w.ctx().id_map.to_server(&w.landmark(&target)?);
    let mut client = w.fresh_client()?;
    let init = client.initialize().await;
    let initialized = client.is_initialized();
    let advertised = rules::advertises_resources(&init);
    let got = init.summary();
    w.record(init);
    if !initialized {
        return Err(w.fail("initialize to succeed", got));
    }
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
            break;
        }
    }
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

/// Each read of the last step refused, telling nothing of `target` but what the caller sent.
#[then(expr = "every read is refused and tells nothing of {target}")]
async fn reads_refused(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let dataset = w.dataset();
    let restaurant = dataset
        .restaurants
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(|| anyhow::anyhow!("{id} is not a restaurant of the dataset"))?;
    let organization =
        dataset.organizations.iter().find(|o| o.id == restaurant.organization_id).map(|o| o.name.clone());
    let secrets = [restaurant.name.clone(), restaurant.created_at.clone(), organization.unwrap_or_default()];
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let reads: Vec<_> = w.history.iter().filter(|ex| ex.method == "resources/read").collect();
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
