//! Personas and server state: who "they" are, and what the control API changes (reset,
//! membership revocation).

use anyhow::{Context, anyhow};
use cucumber::{given, when};

use crate::steps::params::{Change, Name, Target};
use crate::world::ConformanceWorld;

#[given(expr = "the persona {string}")]
async fn persona(w: &mut ConformanceWorld, name: String) -> anyhow::Result<()> {
    w.use_persona(&name)
}

/// Starts from the dataset as published; the after hook resets again when the scenario is done.
/// Already fresh when the scenario before it reset the server and nothing ran in between
/// (`schedule::Held::server_fresh`) and this one has not called yet: no second reset then.
#[given("a fresh server state")]
async fn fresh_state(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let control = w.control()?;
    let fresh =
        w.held.as_ref().is_some_and(|h| h.server_fresh()) && w.history.is_empty() && w.library.is_none();
    if !fresh {
        control.reset().await?;
    }
    w.dirty = true;
    Ok(())
}

#[when(expr = "the membership of {name} in {target} is {change}")]
async fn membership(
    w: &mut ConformanceWorld,
    persona: Name,
    organization: Target,
    change: Change,
) -> anyhow::Result<()> {
    let org = w.landmark(&organization)?;
    let user = w
        .dataset()
        .persona(&persona)
        .map(|p| p.user_id.clone())
        .ok_or_else(|| anyhow!("unknown persona \"{persona}\""))?;
    let (user, org) = (w.ctx().id_map.to_server(&user), w.ctx().id_map.to_server(&org));
    w.dirty = true;
    let control = w.control()?;
    let revoke = change == "revoked";
    let done = if revoke {
        control.revoke_membership(&user, &org).await
    } else {
        control.restore_membership(&user, &org).await
    };
    done.with_context(|| {
        format!("the membership of {persona} could not be {change} through the control API")
    })?;
    // The after hook restores what is still revoked (the scenario holds only its personas).
    w.revoked.retain(|m| *m != (user.clone(), org.clone()));
    if revoke {
        w.revoked.push((user, org));
        w.revoked_at = Some(w.history.len());
    }
    Ok(())
}

/// Fault injection: every following call of `tool` fails with `error` (`internal`,
/// `dependency`) until the after hook clears the faults.
#[given(expr = "the server fails the next calls of {string} with a {string} error")]
async fn fault(w: &mut ConformanceWorld, tool: String, error: String) -> anyhow::Result<()> {
    w.dirty = true;
    w.control()?
        .add_fault(serde_json::json!({ "tool": tool, "error": error }))
        .await
        .with_context(|| format!("injecting a {error} fault into {tool}"))
}

#[given(regex = r"^the server's (read|analytics|write) deadline is (\d+) ms$")]
async fn deadline(w: &mut ConformanceWorld, kind: String, ms: u64) -> anyhow::Result<()> {
    w.dirty = true;
    w.control()?
        .set_deadlines(serde_json::json!({ format!("{kind}_ms"): ms }))
        .await
        .context("shortening a deadline")
}

/// Latency before the tool runs.
#[given(regex = r#"^the server slows "([a-z_]+)" by (\d+) ms$"#)]
async fn slow(w: &mut ConformanceWorld, tool: String, ms: u64) -> anyhow::Result<()> {
    w.dirty = true;
    w.control()?
        .add_fault(serde_json::json!({ "tool": tool, "latency_ms": ms }))
        .await
        .with_context(|| format!("slowing {tool}"))
}

/// A write whose effect is applied, then whose answer is held back.
#[given(regex = r#"^the server holds the answers of "([a-z_]+)" for (\d+) ms after their effect$"#)]
async fn hold(w: &mut ConformanceWorld, tool: String, ms: u64) -> anyhow::Result<()> {
    w.dirty = true;
    w.control()?
        .add_fault(serde_json::json!({ "tool": tool, "delay_after_effect_ms": ms }))
        .await
        .with_context(|| format!("holding the answers of {tool}"))
}

#[given("the server no longer injects faults")]
async fn no_faults(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    w.control()?.clear_faults().await
}

#[when(regex = r"^(\d+) hours and (\d+) seconds? pass on the server's clock$")]
async fn time_passes(w: &mut ConformanceWorld, hours: u64, seconds: u64) -> anyhow::Result<()> {
    w.dirty = true;
    w.control()?.advance_clock(hours * 3600 + seconds).await.context("advancing the server's clock")?;
    // The reference's clock follows, so a key past its 24 h is forgotten there too (IDEM-6).
    w.ctx().oracle.advance_clock(hours * 3600 + seconds);
    Ok(())
}

/// IDEM-6's calendar edges (`crate::edges::dst_edges`): the server's clock moved forward to 12
/// hours before the next daylight-saving change of that kind in `zone` (this year's or the
/// next's), so the 24 hours that follow cross it.
#[given(
    regex = r#"^the server's clock is 12 hours before the next (spring|fall) change of "([A-Za-z_/]+)"$"#
)]
async fn before_dst(w: &mut ConformanceWorld, change: String, zone: String) -> anyhow::Result<()> {
    const LEAD_S: i64 = 12 * 3600;
    w.dirty = true;
    let now_s = w.control()?.now_ms().await.context("reading the server's clock")?.div_euclid(1000);
    let year = chataigne_contract::time::civil_from_days(now_s.div_euclid(86_400)).0;
    let edge = (year..=year + 1)
        .flat_map(crate::edges::dst_edges)
        .find(|e| e.zone == zone && e.why.starts_with(&change) && e.at_s - LEAD_S > now_s)
        .with_context(|| format!("no {change} change of {zone} known after the server's clock"))?;
    let seconds = u64::try_from(edge.at_s - LEAD_S - now_s).unwrap_or(0);
    w.control()?.advance_clock(seconds).await.context("advancing the server's clock")?;
    w.ctx().oracle.advance_clock(seconds);
    Ok(())
}

#[when(regex = r"^they wait (\d+) ms$")]
async fn wait(_: &mut ConformanceWorld, ms: u64) {
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}
