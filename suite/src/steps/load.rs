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
//! The burst comes after every scenario of the run using its pair (`schedule::RatePhase`), whose
//! calls of the tool count in the pair's window: the verdict counts them too, as a prefix of the
//! burst's calls (`rate_verdict::judge_after`, from the run's `schedule::CallLog`: every call of
//! the tool as a persona of the pair answered within the last window and a second). So the burst
//! needs no fresh window, and starts at once (with a control API that moves the clock, the clock
//! is moved past the windows anyway, and the log forgets what came before).
//!
//! What the run cannot know is an earlier run's calls on a server nothing resets. A first burst
//! refused before `limit` calls could have been counted, or one that held but not exactly as the
//! reference's window with earlier calls in it, may show them: it is never the verdict. The burst
//! runs again a whole [`WAIT`] (61 s, every allowed window fresh again) after the first one's last
//! answer, with a countdown on stderr, and that burst, judged alone, is the verdict (an early
//! refusal then fails). Only counts, call times and a few exchanges (the first refusal, the first
//! served calls) are kept, whatever the burst's size.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use chataigne_contract::{ErrorCode, ToolName};
use cucumber::{then, when};
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::client::{Exchange, McpClient};
use crate::rate_verdict::{
    Answer, Call, EarlierCall, Exactness, IN_FLIGHT, MARGIN_S, Verdict, WINDOW_S, judge_after, keep_sending,
};
use crate::steps::params::{Quoted, Snake, Target};
use crate::world::ConformanceWorld;

/// How long a burst that cannot be the verdict waits before starting again, from its last answer:
/// every allowed window is fresh 60 s after the last call it counted.
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

/// One burst: when it started, its calls, and the few exchanges worth showing.
struct Burst {
    start: Instant,
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
    /// Other arguments sent in turn with `args` (call `i` sends the `i`-th of all, round): the
    /// window is the pair's and the tool's, whatever record a call names.
    others: Vec<Value>,
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
    let turns: Vec<Value> =
        std::iter::once(&plan.args).chain(&plan.others).map(|a| w.ctx().id_map.outbound(a)).collect();
    let start = Instant::now();
    let mut pending = FuturesUnordered::new();
    let mut out = Burst { start, calls: Vec::new(), served: Vec::new(), refusal: None, other: None };
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
            let (index, tool, args) = (next, plan.tool.clone(), turns[(next - 1) % turns.len()].clone());
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

/// Wait for a window to end (`why`), with a countdown on stderr; the time counts in the report's
/// "waited for rate windows".
async fn wait_for_window(w: &ConformanceWorld, why: &str, wait: Duration) -> anyhow::Result<()> {
    let deadline = w.deadline.unwrap_or_else(|| Instant::now() + wait);
    w.ctx().rate_waits.wait(why, wait, deadline).await;
    w.check_deadline()
}

/// The run's calls of `tool` on the current persona's pair (any persona of it) that a window may
/// still count when a burst starts at `start`: answered within a window and [`MARGIN_S`] before
/// it, since the server last forgot its windows; in seconds since `start`.
fn earlier_calls(w: &ConformanceWorld, tool: &str, start: Instant) -> anyhow::Result<Vec<EarlierCall>> {
    let persona = w.persona()?;
    let personas = crate::schedule::personas(w.dataset());
    let pair = personas.iter().find(|p| p.name == persona).map(|p| p.pair.clone());
    let names: Vec<&str> = match &pair {
        Some(pair) => personas.iter().filter(|p| &p.pair == pair).map(|p| p.name.as_str()).collect(),
        None => vec![persona],
    };
    let reach = Duration::from_secs_f64(WINDOW_S + MARGIN_S);
    let since = start.checked_sub(reach).unwrap_or(start);
    let seconds = |t: Instant| -start.saturating_duration_since(t).as_secs_f64();
    Ok(w.ctx()
        .calls
        .earlier(&names, tool, since, start)
        .into_iter()
        .map(|c| EarlierCall { answer: c.answer, sent: seconds(c.sent), answered: seconds(c.answered) })
        .collect())
}

/// A burst and its verdict: with the run's earlier calls on the pair and tool counted, or
/// (`alone`, on a window known to be fresh) without them.
async fn judged_burst(
    w: &mut ConformanceWorld,
    plan: &Plan,
    alone: bool,
) -> anyhow::Result<(Burst, Verdict)> {
    let run = burst(w, plan).await?;
    let earlier = if alone { Vec::new() } else { earlier_calls(w, &plan.tool, run.start)? };
    let verdict = judge_after(plan.limit, &earlier, &run.calls);
    Ok((run, verdict))
}

/// What the `Then` steps judge, left by the burst step in `saved["burst"]`.
#[derive(Debug, Serialize, Deserialize)]
struct Outcome {
    tool: String,
    limit: usize,
    verdict: Verdict,
    /// The first burst was refused early: this one ran a whole window later.
    waited: bool,
    /// The first burst held but the run's earlier calls left the reference's window undecided:
    /// this one ran again on a fresh window.
    again: bool,
    /// Where the first refusal and the first broken call are in the history.
    refusal_at: Option<usize>,
    other_at: Option<usize>,
    /// What was surely left of the reference's window when the first refusal came back, when
    /// the burst was exactly that window and the window opened with it ([`window_left_ms`]).
    #[serde(default)]
    window_left_ms: Option<f64>,
}

/// The clock drift between suite and server allowed for (NTP slews by at most 500 ppm).
const DRIFT: f64 = 0.001;
/// Milliseconds the server's and the suite's roundings may take off a measured time.
const ROUNDING_MS: f64 = 10.0;

/// What was surely left of the window the burst opened when its first refusal came back: the
/// window opened when the server took one of the burst's calls, no earlier than the first was
/// sent, and the refusal was decided before its answer came back; less the clocks' drift and
/// roundings. Only meaningful when the burst was exactly the reference's window with no earlier
/// call in it (the caller's check).
fn window_left_ms(calls: &[Call]) -> Option<f64> {
    let first_sent = calls.iter().map(|c| c.sent).fold(f64::INFINITY, f64::min);
    let refused = calls.iter().find(|c| c.answer == Answer::Limited)?;
    let elapsed_ms = (refused.answered - first_sent) * 1000.0;
    Some(WINDOW_S * 1000.0 - elapsed_ms * (1.0 + DRIFT) - ROUNDING_MS)
}

const SAVED: &str = "burst";

/// Burst, and once more on a fresh window when the first burst cannot be judged with what the
/// run knows; record what is worth showing and leave the verdict for the `Then` steps.
///
/// The first burst is judged with the run's earlier calls on its pair and tool. Refused early,
/// or held but not exactly as the reference's window with earlier calls in it, it may show an
/// earlier run's calls that the suite cannot know of (a sliding window frees them one by one
/// during the burst): so it is never the verdict. The burst runs again a whole [`wait_time`]
/// after the first one's last answer, when every allowed window has forgotten every call made
/// before, this run's and any earlier run's: that burst is judged alone, and is the verdict. The
/// same server gives the same verdict whatever ran before.
async fn until_refused(w: &mut ConformanceWorld, plan: Plan) -> anyhow::Result<()> {
    // No reset through a control API even when there is one: it would disturb the scenarios
    // running beside this one. A window still in use is waited for, as on any server.
    w.dirty = true;
    let persona = w.persona()?.to_owned();
    let (mut run, mut verdict) = judged_burst(w, &plan, false).await?;
    let early = matches!(verdict, Verdict::Early { .. });
    let undecided = matches!(&verdict, Verdict::Held { exact, earlier, .. } if *earlier > 0 && *exact != Exactness::Exact);
    let (waited, again) = (early, undecided);
    if early || undecided {
        let why = if early {
            format!("rate window of {persona}/{} in use by an earlier run", plan.tool)
        } else {
            format!("rate window of {persona}/{} undecided with this run's earlier calls", plan.tool)
        };
        wait_for_window(w, &why, wait_time()).await?;
        (run, verdict) = judged_burst(w, &plan, true).await?;
    }
    let window_left_ms = match &verdict {
        Verdict::Held { exact: Exactness::Exact, earlier: 0, .. } => window_left_ms(&run.calls),
        _ => None,
    };
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
    let outcome = Outcome {
        tool: plan.tool,
        limit: plan.limit,
        verdict,
        waited,
        again,
        refusal_at,
        other_at,
        window_left_ms,
    };
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
    // In turn with the other restaurants of its organization: a server that counts a window per
    // restaurant serves the pair far past its rate.
    let d = w.dataset();
    let organization = d.restaurants.iter().find(|r| r.id == id).map(|r| r.organization_id.clone());
    let others = d
        .restaurants
        .iter()
        .filter(|r| r.id != id && Some(&r.organization_id) == organization.as_ref())
        .map(|r| json!({ "restaurant_id": r.id }))
        .collect();
    let plan = Plan {
        tool: tool.to_owned(),
        args: json!({ "restaurant_id": id }),
        others,
        limit: rate_of(tool)?,
        expect: Expect::Success,
        lead_alone: false,
    };
    until_refused(w, plan).await
}

/// LIM-2 for the analytics kind: one small range and metric, again and again.
#[when(expr = "they ask for the analytics of {target} again and again, until they are refused")]
async fn analytics_until_refused(w: &mut ConformanceWorld, target: Target) -> anyhow::Result<()> {
    let id = w.landmark(&target)?;
    let tool = "get_analytics";
    let plan = Plan {
        tool: tool.to_owned(),
        args: json!({ "restaurant_id": id, "metrics": ["orders_count"], "from": "2026-01-01", "to": "2026-01-31" }),
        limit: rate_of(tool)?,
        others: Vec::new(),
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
        others: Vec::new(),
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
        others: Vec::new(),
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
        Verdict::Held { served, refused, after_s, exact, earlier } => {
            let mut of_run =
                if earlier > 0 { format!(" ({earlier} of them earlier in this run)") } else { String::new() };
            if o.again {
                of_run.push_str(", on a fresh window after one the run's earlier calls left undecided");
            }
            match exact {
                Exactness::Exact => {}
                Exactness::Served(n) => w.ext_difference(
                    "rate-window",
                    format!(
                        "{n} calls of {tool} served before the first refusal{of_run} (call {refused} of the burst, after {after_s:.1} s); the reference serves exactly {limit} in the window the pair's first call opens"
                    ),
                ),
                Exactness::Uncertain(n) => w.ext_difference(
                    "rate-window",
                    format!(
                        "not judged: {n} earlier calls of {tool} in this run may or may not be in the refusal's window ({served} served in the burst)"
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
        Verdict::Early { served, refused, earlier } => {
            let of_run = if earlier > 0 { format!(" ({earlier} of them earlier in this run)") } else { String::new() };
            Err(w.fail_about(
                refusal,
                expected,
                format!("call {refused} refused when at most {served} calls could have been served{of_run}{again}"),
            ))
        }
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
    // A client that waits what it is told must not be refused again: no shorter than what is
    // surely left of the window the burst opened (the reference's window, exactly seen).
    let asked = error.get("retry_after_ms").and_then(Value::as_f64);
    if let (Some(left), Some(asked)) = (o.window_left_ms, asked)
        && retry_after
        && asked < left
    {
        w.ext_difference(
            "retry-after",
            format!(
                "retry_after_ms {asked} where at least {left:.0} ms were left of the window the burst's first call opened: a client that waits that long is refused again"
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(index: usize, answer: Answer, sent: f64, answered: f64) -> Call {
        Call { index, answer, sent, answered }
    }

    /// The window opened no earlier than the first call left; the refusal was decided before its
    /// answer came back: what is left is measured from those two, less drift and roundings.
    #[test]
    fn what_is_left_of_the_window_is_measured_from_the_first_call_sent_to_the_refusal_answered() {
        let calls = [
            call(2, Answer::Served, 0.01, 0.02),
            call(1, Answer::Served, 0.0, 0.03),
            call(3, Answer::Limited, 1.5, 2.0),
            call(4, Answer::Limited, 1.6, 2.5),
        ];
        let left = window_left_ms(&calls).unwrap();
        assert!((left - (60_000.0 - 2_000.0 * 1.001 - ROUNDING_MS)).abs() < 1e-6, "{left}");
        assert_eq!(window_left_ms(&calls[..2]), None, "no refusal");
    }
}
