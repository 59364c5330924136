//! Bursts of calls for the rate limits (LIM-2, LIM-3).
//!
//! The seed fixes a rate ("1000 calls a minute per OAuth client/user pair and tool", 500 for
//! writes), not a window: a sliding window, calendar minutes, a token bucket of 1000/min and the
//! reference's window (opened by a pair's first call, lasting 60 s) all honour it. So a burst
//! sends calls (at most [`IN_FLIGHT`] at a time, through as many sessions of one persona) until
//! the server refuses one, and [`judge`] decides from the calls' order and times alone, whatever
//! second the run started and however fast the server answers:
//! - every call the server may have handled before the first refusal was served, and there were
//!   at least `limit` of them (with calls in flight together, the server may handle them in any
//!   order: a call counts as "before" when it was sent before the refusal came back);
//! - the refusal came after at most [`bound`]`(limit, s) = 2 × limit + ⌈limit × s / 60⌉` calls,
//!   `s` the seconds since the burst started (calendar minutes let twice the rate through across a
//!   minute's end; a bucket refills during the burst);
//! - at the full level (choice `rate-window`), exactly `limit` calls were served: the reference
//!   refuses call `limit + 1` of its window.
//!
//! A pair refused before `limit` calls were served had its window in use, by an earlier run on a
//! server nothing resets: the burst waits what the refusal's `retry_after_ms` asks, or [`WAIT`]
//! (61 s: every allowed window is fresh again) when it asks nothing or more, with a countdown on
//! stderr, then starts again (once more after the rest of [`WAIT`] if the server asked for less
//! and still refuses early); only an early refusal after a whole window fails. With a control API
//! that moves the clock, the run starts past every earlier window (`runner`). Only counts, call times and
//! a few exchanges (the first refusal, the first served calls) are kept, whatever the burst's size.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use chataigne_contract::{ErrorCode, ToolName};
use cucumber::{then, when};
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::client::{Exchange, McpClient};
use crate::rate_verdict::{Answer, Call, Exactness, IN_FLIGHT, Verdict, judge, keep_sending};
use crate::steps::params::{Quoted, Snake, Target};
use crate::world::ConformanceWorld;

/// How long a burst refused too early waits before starting again: every allowed window is
/// fresh 60 s after the earlier run's last counted call, which came before the refusal.
pub const WAIT: Duration = Duration::from_secs(61);

/// Overrides [`WAIT`], in milliseconds (tests).
pub const WAIT_ENV: &str = "CHATAIGNE_RATE_WAIT_MS";

/// Served exchanges kept to show in a report, besides the refusal.
const SAMPLE: usize = 2;

/// How a burst's calls are judged besides rate limits.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Each call should succeed.
    Success,
    /// Each call is refused anyway (a viewer's write): any answer counts as served.
    AnyAnswer,
}

fn classify(ex: &Exchange, expect: Expect) -> Answer {
    crate::rules::rate_answer(ex, expect == Expect::AnyAnswer)
}

/// One burst: its calls, and the few exchanges worth showing.
struct Burst {
    calls: Vec<Call>,
    served: Vec<Exchange>,
    refusal: Option<Exchange>,
    other: Option<Exchange>,
}

/// What a scenario asks a burst to send.
struct Plan {
    tool: String,
    /// In dataset IDs.
    args: Value,
    limit: usize,
    expect: Expect,
    /// The first call goes alone, the others once it is answered (a keyed write: its replays).
    lead_alone: bool,
}

/// `IN_FLIGHT` sessions of the persona, initialized side by side (one after another they would
/// cost 2 × `IN_FLIGHT` round trips before the first call).
async fn sessions(w: &mut ConformanceWorld) -> anyhow::Result<Vec<McpClient>> {
    let fresh: Vec<McpClient> = (0..IN_FLIGHT).map(|_| w.fresh_client()).collect::<anyhow::Result<_>>()?;
    let started = futures::future::join_all(fresh.into_iter().map(|mut client| async move {
        let ex = client.initialize().await;
        (client, ex)
    }))
    .await;
    let mut clients = Vec::new();
    for (client, ex) in started {
        if !client.is_initialized() {
            let got = ex.summary();
            w.record(ex);
            return Err(w.fail("initialize to succeed", got));
        }
        clients.push(client);
    }
    Ok(clients)
}

/// Send `plan`'s call until the server refuses one for its rate (or [`keep_sending`] says stop),
/// `IN_FLIGHT` at a time; wait for the calls in flight, then stop.
async fn burst(w: &mut ConformanceWorld, plan: &Plan) -> anyhow::Result<Burst> {
    let mut idle = sessions(w).await?;
    let args = w.ctx().id_map.outbound(&plan.args);
    let start = Instant::now();
    let mut pending = FuturesUnordered::new();
    let mut out = Burst { calls: Vec::new(), served: Vec::new(), refusal: None, other: None };
    let mut next = 1;
    let mut stop = false;
    loop {
        while !stop {
            // A keyed write's first call goes alone: its replays follow once it is stored.
            if plan.lead_alone && next == 2 && out.calls.is_empty() {
                break;
            }
            let Some(mut client) = idle.pop() else { break };
            w.check_deadline()?;
            if !keep_sending(plan.limit, next - 1, start.elapsed().as_secs_f64()) {
                stop = true;
                idle.push(client);
                break;
            }
            let (index, tool, args) = (next, plan.tool.clone(), args.clone());
            next += 1;
            pending.push(async move {
                let sent = start.elapsed().as_secs_f64();
                let ex = client.call_tool(&tool, args).await;
                (client, index, sent, start.elapsed().as_secs_f64(), ex)
            });
        }
        let Some((client, index, sent, answered, ex)) = pending.next().await else { break };
        idle.push(client);
        let answer = classify(&ex, plan.expect);
        out.calls.push(Call { index, answer, sent, answered });
        match answer {
            Answer::Served if out.served.len() < SAMPLE => out.served.push(ex),
            Answer::Served => {}
            Answer::Limited => {
                stop = true;
                out.refusal.get_or_insert(ex);
            }
            Answer::Other => {
                stop = true;
                out.other.get_or_insert(ex);
            }
        }
    }
    Ok(out)
}

/// [`WAIT`], or what [`WAIT_ENV`] says.
fn wait_time() -> Duration {
    std::env::var(WAIT_ENV).ok().and_then(|v| v.parse().ok()).map(Duration::from_millis).unwrap_or(WAIT)
}

/// How long the early refusal asks to wait (`retry_after_ms`, plus a little: windows round), at
/// most [`wait_time`]: the least the earlier run's window requires when the server says it.
fn wait_for(refusal: Option<&Exchange>) -> Duration {
    let asked = refusal
        .and_then(|ex| ex.structured()?.pointer("/data/error/retry_after_ms")?.as_u64())
        .filter(|ms| *ms > 0)
        .map(|ms| Duration::from_millis(ms + 250));
    asked.map_or(wait_time(), |d| d.min(wait_time()))
}

/// Wait for an earlier run's window to end, with a countdown on stderr; the time counts in the
/// report's "waited for rate windows".
async fn wait_for_window(w: &ConformanceWorld, tool: &str, wait: Duration) -> anyhow::Result<()> {
    let persona = w.persona()?.to_owned();
    let why = format!("rate window of {persona}/{tool} in use by an earlier run");
    let deadline = w.deadline.unwrap_or_else(|| Instant::now() + wait);
    w.ctx().rate_waits.wait(&why, wait, deadline).await;
    w.check_deadline()
}

/// What the `Then` steps judge, left by the burst step in `saved["burst"]`.
#[derive(Debug, Serialize, Deserialize)]
struct Outcome {
    tool: String,
    limit: usize,
    verdict: Verdict,
    /// The first burst was refused early and waited for the window.
    waited: bool,
    /// Where the first refusal and the first broken call are in the history.
    refusal_at: Option<usize>,
    other_at: Option<usize>,
}

const SAVED: &str = "burst";

/// Burst, and again once after waiting if the window was in use; record what is worth showing
/// and leave the verdict for the `Then` steps.
async fn until_refused(w: &mut ConformanceWorld, plan: Plan) -> anyhow::Result<()> {
    // No reset through a control API even when there is one: it would disturb the scenarios
    // running beside this one. A window still in use is waited for, as on any server.
    w.dirty = true;
    let mut run = burst(w, &plan).await?;
    let mut verdict = judge(plan.limit, &run.calls);
    let mut waited = false;
    if matches!(verdict, Verdict::Early { .. }) {
        // What the server asks first; if that was less than a whole window and the pair is
        // still refused early (a sliding window frees one call at a time), the rest of
        // [`wait_time`] since the first refusal: every allowed window is fresh by then.
        let refused_at = Instant::now();
        let asked = wait_for(run.refusal.as_ref());
        wait_for_window(w, &plan.tool, asked).await?;
        waited = true;
        run = burst(w, &plan).await?;
        verdict = judge(plan.limit, &run.calls);
        let rest = wait_time().saturating_sub(refused_at.elapsed());
        if matches!(verdict, Verdict::Early { .. }) && asked < wait_time() && !rest.is_zero() {
            wait_for_window(w, &plan.tool, rest).await?;
            run = burst(w, &plan).await?;
            verdict = judge(plan.limit, &run.calls);
        }
    }
    for ex in run.served {
        w.record(ex);
    }
    let other_at = run.other.map(|ex| {
        w.record(ex);
        w.history.len() - 1
    });
    let refusal_at = run.refusal.map(|ex| {
        w.record(ex);
        w.history.len() - 1
    });
    let outcome = Outcome { tool: plan.tool, limit: plan.limit, verdict, waited, refusal_at, other_at };
    w.saved.insert(SAVED.to_owned(), serde_json::to_string(&outcome)?);
    Ok(())
}

fn rate_of(tool: &str) -> anyhow::Result<usize> {
    let name = ToolName::parse(tool).ok_or_else(|| anyhow!("{tool} is not a tool of the contract"))?;
    Ok(name.kind().rate_per_minute() as usize)
}

#[when(expr = "they get {target} again and again, until they are refused")]
async fn get_until_refused(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    if !id.starts_with("rst_") {
        return Err(anyhow!("only restaurants are fetched in bulk"));
    }
    let tool = "get_restaurant";
    let plan = Plan {
        tool: tool.to_owned(),
        args: json!({ "restaurant_id": id }),
        limit: rate_of(tool)?,
        expect: Expect::Success,
        lead_alone: false,
    };
    until_refused(w, plan).await
}

/// Replays of one keyed write: successful calls that change nothing after the first.
#[when(
    expr = "they send the message {quoted} in {target} with the key {quoted}, then again and again, until they are refused"
)]
async fn send_until_refused(
    w: &mut ConformanceWorld,
    text: Quoted,
    target: Target,
    key: Quoted,
) -> anyhow::Result<()> {
    let tool = "send_message";
    let args = super::keyed::message_args(w, None, &target, &text, &key)?;
    let plan = Plan {
        tool: tool.to_owned(),
        args,
        limit: rate_of(tool)?,
        expect: Expect::Success,
        lead_alone: true,
    };
    until_refused(w, plan).await
}

/// Writes the persona may not make: every answer but a rate limit counts as served.
#[when(expr = "they ask to set {target} to {snake} again and again, until they are refused")]
async fn set_until_refused(w: &mut ConformanceWorld, target: Target, status: Snake) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let observed =
        w.dataset().restaurants.iter().find(|r| r.id == id).map(|r| r.status.clone()).unwrap_or_default();
    let tool = "set_restaurant_status";
    let args = json!({ "restaurant_id": id, "status": status, "expected_status": observed });
    let plan = Plan {
        tool: tool.to_owned(),
        args,
        limit: rate_of(tool)?,
        expect: Expect::AnyAnswer,
        lead_alone: false,
    };
    until_refused(w, plan).await
}

fn outcome(w: &ConformanceWorld) -> anyhow::Result<Outcome> {
    let text = w
        .saved
        .get(SAVED)
        .ok_or_else(|| anyhow!("no burst yet: add `When they … until they are refused`"))?;
    Ok(serde_json::from_str(text)?)
}

#[then(regex = r"^the first (\d+) calls were all (?:served|answered), and a refusal came in time$")]
async fn limit_held(w: &mut ConformanceWorld, n: usize) -> anyhow::Result<()> {
    let o = outcome(w)?;
    if n != o.limit {
        return Err(anyhow!("the contract's limit for {} is {} a minute, not {n}", o.tool, o.limit));
    }
    let (limit, tool) = (o.limit, o.tool.as_str());
    let refusal = o.refusal_at.and_then(|i| w.history.get(i));
    let expected = format!(
        "the first {limit} calls of {tool} in a minute served, then a rate-limit refusal within 2 × {limit} + {limit} × seconds / 60 calls"
    );
    let again = if o.waited { ", again after waiting for an earlier run's window to end" } else { "" };
    match o.verdict {
        Verdict::Held { served, refused, after_s, exact } => {
            match exact {
                Exactness::Exact => {}
                Exactness::Served(n) => w.ext_difference(
                    "rate-window",
                    format!(
                        "{n} calls of {tool} served before the first refusal (call {refused}, after {after_s:.1} s); the reference serves exactly {limit} in the window the pair's first call opens"
                    ),
                ),
                Exactness::Unjudged(s) => w.ext_difference(
                    "rate-window",
                    format!(
                        "not judged: the first {refused} calls took {s:.1} s, more than one 60 s window ({served} served)"
                    ),
                ),
            }
            Ok(())
        }
        Verdict::Early { served, refused } => Err(w.fail_about(
            refusal,
            expected,
            format!("call {refused} refused when at most {served} calls could have been served{again}"),
        )),
        Verdict::NoRefusal { sent, elapsed_s, bound } => Err(w.fail_about(
            w.history.last(),
            expected,
            format!(
                "no refusal after {sent} calls in {elapsed_s:.1} s, more than any window of {limit} a minute serves ({bound})"
            ),
        )),
        Verdict::TooSlow { sent, elapsed_s } => Err(w.fail_about(
            w.history.last(),
            expected,
            format!(
                "only {sent} calls in {elapsed_s:.0} s ({:.0} a minute, {IN_FLIGHT} at a time) and no refusal: the server answers too slowly to be driven past {limit} a minute",
                sent as f64 * 60.0 / elapsed_s.max(1.0)
            ),
        )),
        Verdict::Broken { index } => {
            let ex = o.other_at.and_then(|i| w.history.get(i));
            let got = ex.map(Exchange::summary).unwrap_or_default();
            Err(w.fail_about(ex, expected, format!("call {index} was neither served nor rate limited: {got}")))
        }
    }
}

/// The first refusal of the burst: a tool error of category rate_limit (seed); the code
/// MCP_RATE_LIMITED, `retryable: true` and `retry_after_ms` are the project's (ext).
#[then("the refusal is a rate limit")]
async fn refusal_is_rate_limit(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let o = outcome(w)?;
    let Some(ex) = o.refusal_at.and_then(|i| w.history.get(i)) else {
        return Err(w.fail("a rate-limit refusal in the burst", "none"));
    };
    let error = ex.structured().and_then(|s| s.pointer("/data/error")).cloned().unwrap_or(Value::Null);
    let category = error.get("category").and_then(Value::as_str).unwrap_or("(none)").to_owned();
    if !ex.is_error() || category != "rate_limit" {
        let got = format!("{}, category {category}", ex.summary());
        return Err(w.fail_about(Some(ex), "a tool error (isError) of category rate_limit", got));
    }
    let limited = ErrorCode::RateLimited;
    let code = error.get("code").and_then(Value::as_str).unwrap_or("(none)").to_owned();
    let retryable = error.get("retryable").and_then(Value::as_bool);
    let retry_after = crate::rules::asks_to_retry_later(ex);
    // The burst step records the refusal last: ext differences carry its request_id.
    if code != limited.as_str() {
        w.ext_difference(
            "error-codes",
            format!("refused with {code} (category rate_limit) where the project uses {limited}"),
        );
    }
    if retryable != Some(true) {
        w.ext_difference(
            "error-codes",
            format!("a rate-limit refusal with retryable {retryable:?} where {limited} is retryable"),
        );
    }
    if !retry_after {
        w.ext_difference(
            "retry-after",
            format!("a rate-limit refusal with retry_after_ms {:?}", error.get("retry_after_ms")),
        );
    }
    Ok(())
}
