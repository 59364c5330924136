//! Read calls in the domain's words: "they list the orders of the busy restaurant with limit 7",
//! "they get the long conversation", "they search the transcripts of … for …", analytics.

use anyhow::anyhow;
use chataigne_contract::tools::METRICS;
use cucumber::when;
use serde_json::{Map, Value, json};

use crate::steps::params::{Child, Count, Quoted, Target};
use crate::world::{ConformanceWorld, ListCall, filters_of};

// A target is `{target}` (`params::Target`): a landmark phrase ("the busy restaurant") or a
// quoted ID; `ConformanceWorld::landmark` resolves both. The steps with an optional tail
// ("… with limit 5") stay regexes, which cucumber expressions cannot capture, and spell the
// target's regex out.

/// The list tool for `noun` of `id`: (tool, base arguments, data key).
pub fn list_tool(w: &ConformanceWorld, noun: &str, id: &str) -> anyhow::Result<(String, Value, String)> {
    let prefix = id.split('_').next().unwrap_or_default();
    let (tool, args) = match (noun, prefix) {
        ("orders" | "conversations" | "instructions", "rst") => {
            (format!("list_{noun}"), json!({ "restaurant_id": id }))
        }
        ("restaurants", "org") => ("list_restaurants".to_owned(), json!({ "organization_id": id })),
        ("messages", "cnv") => (
            "get_conversation".to_owned(),
            json!({ "restaurant_id": w.restaurant_of(id)?, "conversation_id": id }),
        ),
        _ => return Err(anyhow!("no list of {noun} for {id}")),
    };
    Ok((tool, args, noun.to_owned()))
}

/// `args` with `filters` (from "with limit 5 and channel \"web\"") merged in.
pub fn with_filters(w: &ConformanceWorld, mut args: Value, filters: &str) -> anyhow::Result<Value> {
    if filters.trim().is_empty() {
        return Ok(args);
    }
    let obj = args.as_object_mut().ok_or_else(|| anyhow!("arguments are not an object"))?;
    for (field, value) in filters_of(w, filters)? {
        obj.insert(field, value);
    }
    Ok(args)
}

/// Call a list tool and remember it so "the next page" can continue it.
pub async fn list_call(w: &mut ConformanceWorld, tool: &str, args: Value, key: &str) -> anyhow::Result<()> {
    let mut base = args.clone();
    if let Some(obj) = base.as_object_mut() {
        obj.remove("cursor");
    }
    // Pages, not rates: an earlier run's calls may have left the window full (a rerun at once).
    super::matrices::call_patiently(w, tool, args).await?;
    let next_cursor = w.success().ok().and_then(|s| s.meta.next_cursor);
    w.list = Some(ListCall { tool: tool.to_owned(), args: base, key: key.to_owned(), next_cursor });
    Ok(())
}

#[when(
    regex = r#"^they list the (orders|conversations|instructions|restaurants|messages) of (the [a-z][a-z -]*?[a-z]|"[^"]+")(?: with (.+))?$"#
)]
async fn list_of(
    w: &mut ConformanceWorld,
    noun: String,
    target: String,
    filters: String,
) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let (tool, args, key) = list_tool(w, &noun, &id)?;
    let args = with_filters(w, args, &filters)?;
    list_call(w, &tool, args, &key).await
}

#[when(regex = r"^they list the (organizations|restaurants)(?: with (.+))?$")]
async fn list_top(w: &mut ConformanceWorld, noun: String, filters: String) -> anyhow::Result<()> {
    let args = with_filters(w, json!({}), &filters)?;
    list_call(w, &format!("list_{noun}"), args, &noun).await
}

/// `get_restaurant`, `get_order`, `get_conversation` or `get_transcript`, by the ID's prefix.
#[when(regex = r#"^they get (the [a-z][a-z -]*?[a-z]|"[^"]+")(?: with (.+))?$"#)]
async fn get(w: &mut ConformanceWorld, target: String, filters: String) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let prefix = id.split('_').next().unwrap_or_default();
    let (tool, key) = match prefix {
        "rst" => ("get_restaurant", None),
        "ord" => ("get_order", None),
        "cnv" => ("get_conversation", Some("messages")),
        "trs" => ("get_transcript", None),
        _ => return Err(anyhow!("no get tool for {id}")),
    };
    let mut args = Map::new();
    if prefix == "rst" {
        args.insert("restaurant_id".into(), json!(id));
    } else {
        args.insert("restaurant_id".into(), json!(w.restaurant_of(&id)?));
        let field = match prefix {
            "ord" => "order_id",
            "cnv" => "conversation_id",
            _ => "transcript_id",
        };
        args.insert(field.into(), json!(id));
    }
    let args = with_filters(w, Value::Object(args), &filters)?;
    match key {
        Some(key) => list_call(w, tool, args, key).await,
        None => w.call_tool(tool, args).await.map(drop),
    }
}

/// A child addressed through a given restaurant: absent IDs, canaries, another tenant's child.
#[when(expr = "they get the {child} {quoted} of {target}")]
async fn get_child(
    w: &mut ConformanceWorld,
    kind: Child,
    child: Quoted,
    target: Target,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let child = w.expand(&child);
    let field = format!("{kind}_id");
    w.call_tool(&format!("get_{kind}"), json!({ "restaurant_id": restaurant, field: child })).await.map(drop)
}

#[when(expr = "they search the transcripts of {target} for {quoted}")]
async fn search(w: &mut ConformanceWorld, target: Target, query: Quoted) -> anyhow::Result<()> {
    let restaurant = w.landmark(&target)?;
    let query = w.expand(&query);
    let args = json!({ "restaurant_id": restaurant, "query": query });
    list_call(w, "search_transcripts", args, "transcripts").await
}

#[when(expr = "they search the transcripts of {target} for a canary of {count} characters")]
async fn search_canary(w: &mut ConformanceWorld, target: Target, len: Count) -> anyhow::Result<()> {
    let len = len.0;
    let restaurant = w.landmark(&target)?;
    let query: String = w.canary.chars().cycle().take(len).collect();
    w.call_tool("search_transcripts", json!({ "restaurant_id": restaurant, "query": query })).await.map(drop)
}

#[when(expr = "they ask the analytics of {target} for {count} metric(s) from {quoted} to {quoted}")]
async fn analytics_n(
    w: &mut ConformanceWorld,
    target: Target,
    n: Count,
    from: Quoted,
    to: Quoted,
) -> anyhow::Result<()> {
    let n = n.0;
    if n > METRICS.len() {
        return Err(anyhow!("the contract has only {} metrics", METRICS.len()));
    }
    let metrics: Vec<&str> = METRICS[..n].to_vec();
    analytics(w, &target, json!(metrics), &from, &to).await
}

#[when(expr = "they ask the analytics of {target} for the metrics {quoted} from {quoted} to {quoted}")]
async fn analytics_named(
    w: &mut ConformanceWorld,
    target: Target,
    metrics: Quoted,
    from: Quoted,
    to: Quoted,
) -> anyhow::Result<()> {
    let metrics: Vec<&str> = metrics.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
    analytics(w, &target, json!(metrics), &from, &to).await
}

async fn analytics(
    w: &mut ConformanceWorld,
    target: &str,
    metrics: Value,
    from: &str,
    to: &str,
) -> anyhow::Result<()> {
    let restaurant = w.landmark(target)?;
    let args = json!({ "restaurant_id": restaurant, "metrics": metrics, "from": from, "to": to });
    w.call_tool("get_analytics", args).await.map(drop)
}

/// One valid call of each read tool, on the busy restaurant's data.
#[when("they call every read tool once with valid arguments")]
async fn every_read(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let l = w.dataset().landmarks.clone();
    let order = w
        .dataset()
        .orders_of(&l.busy_restaurant)
        .next()
        .map(|o| o.id.clone())
        .ok_or_else(|| anyhow!("the busy restaurant has no order in the dataset"))?;
    let calls = [
        ("list_organizations", json!({})),
        ("list_restaurants", json!({})),
        ("get_restaurant", json!({ "restaurant_id": l.busy_restaurant })),
        ("list_orders", json!({ "restaurant_id": l.busy_restaurant })),
        ("get_order", json!({ "restaurant_id": l.busy_restaurant, "order_id": order })),
        ("list_conversations", json!({ "restaurant_id": l.busy_restaurant })),
        (
            "get_conversation",
            json!({ "restaurant_id": l.busy_restaurant, "conversation_id": l.long_conversation, "message_limit": 5 }),
        ),
        ("search_transcripts", json!({ "restaurant_id": l.busy_restaurant, "query": l.transcript_phrase })),
        (
            "get_transcript",
            json!({ "restaurant_id": l.busy_restaurant, "transcript_id": l.small_transcript }),
        ),
        ("list_instructions", json!({ "restaurant_id": l.busy_restaurant })),
        (
            "get_analytics",
            json!({ "restaurant_id": l.busy_restaurant, "metrics": ["orders_count", "revenue_cents"], "from": "2026-11-01", "to": "2026-11-30" }),
        ),
    ];
    let mut failed = Vec::new();
    for (tool, args) in calls {
        w.call_tool(tool, args).await?;
        if w.success().is_err() {
            failed.push((w.history.len() - 1, format!("{tool}: {}", w.last()?.summary())));
        }
    }
    match failed.first() {
        None => Ok(()),
        Some((first, _)) => {
            let got: Vec<&str> = failed.iter().map(|(_, f)| f.as_str()).collect();
            Err(w.fail_about(
                w.history.get(*first),
                "every read tool to succeed with valid arguments",
                got.join("; "),
            ))
        }
    }
}

/// A child (order, conversation, transcript) asked of a restaurant it may not belong to:
/// "they ask the busy restaurant for the foreign order".
#[when(expr = "they ask {target} for {target}")]
async fn get_through(w: &mut ConformanceWorld, target: Target, child: Target) -> anyhow::Result<()> {
    let child = w.landmark(&child)?;
    let restaurant = w.landmark(&target)?;
    let (tool, field) = match child.split('_').next() {
        Some("ord") => ("get_order", "order_id"),
        Some("cnv") => ("get_conversation", "conversation_id"),
        Some("trs") => ("get_transcript", "transcript_id"),
        _ => return Err(anyhow!("{child} is not an order, a conversation or a transcript")),
    };
    w.call_tool(tool, json!({ "restaurant_id": restaurant, field: child })).await.map(drop)
}
