//! Many calls in a row, for the rate limits (LIM-2, LIM-3): sent through a few sessions of the
//! same persona at once, so a remote server sees them well within its one-minute window.

use anyhow::anyhow;
use chataigne_contract::ErrorCode;
use cucumber::{then, when};
use serde_json::{Value, json};

use crate::world::ConformanceWorld;

/// Sessions used side by side; same persona, so the same (client, user) pair.
const SESSIONS: usize = 8;

async fn repeat(w: &mut ConformanceWorld, tool: &str, args: Value, n: usize) -> anyhow::Result<()> {
    let mut clients = Vec::new();
    for _ in 0..SESSIONS.min(n.max(1)) {
        let mut client = w.fresh_client()?;
        let ex = client.initialize().await;
        if !client.is_initialized() {
            let got = ex.summary();
            w.record(ex);
            return Err(w.fail("initialize to succeed", got));
        }
        clients.push(client);
    }
    let args = w.ctx().id_map.outbound(&args);
    let mut left = n;
    while left > 0 {
        let batch = left.min(clients.len());
        let calls = clients.iter_mut().take(batch).map(|c| c.call_tool(tool, args.clone()));
        for ex in futures::future::join_all(calls).await {
            w.record(ex);
        }
        left -= batch;
    }
    Ok(())
}

#[when(regex = r#"^they get (the [a-z][a-z -]*?[a-z]|"[^"]+") (\d+) times$"#)]
async fn get_n(w: &mut ConformanceWorld, target: String, n: usize) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    if !id.starts_with("rst_") {
        return Err(anyhow!("only restaurants are fetched in bulk"));
    }
    w.dirty = true;
    repeat(w, "get_restaurant", json!({ "restaurant_id": id }), n).await
}

/// Writes that fail (an invalid status) still count against the write limit (LIM-2).
#[when(regex = r#"^they ask (\d+) times to set (the [a-z][a-z -]*?[a-z]|"[^"]+") to "([a-z_]+)"$"#)]
async fn set_n(w: &mut ConformanceWorld, n: usize, target: String, status: String) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let observed =
        w.dataset().restaurants.iter().find(|r| r.id == id).map(|r| r.status.clone()).unwrap_or_default();
    w.dirty = true;
    let args = json!({ "restaurant_id": id, "status": status, "expected_status": observed });
    repeat(w, "set_restaurant_status", args, n).await
}

#[then("none of them was rate limited")]
async fn none_limited(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let limited = ErrorCode::RateLimited.as_str();
    let calls: Vec<_> = w.tool_calls().collect();
    let first = calls.iter().position(|e| {
        e.structured().and_then(|s| s.pointer("/data/error/code")).and_then(Value::as_str) == Some(limited)
    });
    match first {
        None => Ok(()),
        Some(i) => Err(w.fail_about(
            Some(calls[i]),
            format!("{} calls within the limit", calls.len()),
            format!("call {} was rate limited", i + 1),
        )),
    }
}
