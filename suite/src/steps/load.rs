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
//! server nothing resets: the burst waits [`WAIT`] (61 s: every allowed window is fresh again)
//! with a countdown on stderr, then starts again once; only a second early refusal fails (the
//! control API is not used to reset it: other scenarios run meanwhile). Only counts, call times and
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
use crate::world::ConformanceWorld;

/// Calls in flight at once, each through its own session of the same persona (so the same
/// pair): fast enough to exceed 1000 a minute against a server answering in up to ~900 ms.
pub const IN_FLIGHT: usize = 48;

/// How long a burst refused too early waits before starting again: every allowed window is
/// fresh 60 s after the earlier run's last counted call, which came before the refusal.
pub const WAIT: Duration = Duration::from_secs(61);

/// Overrides [`WAIT`], in milliseconds (tests).
pub const WAIT_ENV: &str = "CHATAIGNE_RATE_WAIT_MS";

/// How often the wait says how long is left.
const COUNTDOWN_EVERY: Duration = Duration::from_secs(10);

/// A burst that met no refusal for this long stops (a server too slow to be driven past the
/// rate; a bucket drained at a low rate).
pub const MAX_BURST_S: f64 = 180.0;

/// Served exchanges kept to show in a report, besides the refusal.
const SAMPLE: usize = 2;

/// The most calls any allowed window serves in `elapsed_s` seconds from a fresh pair: two full
/// calendar minutes across a minute's end, plus what a bucket refills meanwhile.
pub fn bound(limit: usize, elapsed_s: f64) -> usize {
    2 * limit + (limit as f64 * elapsed_s.max(0.0) / 60.0).ceil() as usize
}

/// Whether a burst that has sent `sent` calls in `elapsed_s` seconds without meeting a refusal
/// sends another one.
pub fn keep_sending(limit: usize, sent: usize, elapsed_s: f64) -> bool {
    sent <= bound(limit, elapsed_s) && elapsed_s < MAX_BURST_S
}

/// What one call of a burst came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// Served: a success (or, for calls that are refused anyway, any answer but a rate limit).
    Served,
    /// Refused for its rate: a tool error of category rate_limit (or code MCP_RATE_LIMITED).
    Limited,
    /// Neither: another error, no answer.
    Other,
}

/// One call of a burst: its place in the order of sending (1-based), and when it left and came
/// back, in seconds since the burst started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    pub index: usize,
    pub answer: Answer,
    pub sent: f64,
    pub answered: f64,
}

/// Whether the burst matched the reference's window (choice `rate-window`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Exactness {
    /// Exactly `limit` calls served: call `limit + 1` of the window was the first refused.
    Exact,
    /// This many calls served before and around the first refusal.
    Served(usize),
    /// The first `limit + 1` calls took this many seconds, more than one window: the reference's
    /// behaviour cannot be told from another's.
    Unjudged(f64),
}

/// What a burst shows about the rate limit of its pair and tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// At least `limit` calls served, then a refusal within the bound.
    Held { served: usize, refused: usize, after_s: f64, exact: Exactness },
    /// Call `refused` was refused though at most `served` < `limit` calls could have been served
    /// before it: the window was in use, or the server limits below the contract's rate.
    Early { served: usize, refused: usize },
    /// `sent` calls in `elapsed_s` seconds, more than any allowed window serves (`bound`), and
    /// no refusal (or the first one only after that many).
    NoRefusal { sent: usize, elapsed_s: f64, bound: usize },
    /// No refusal within [`MAX_BURST_S`]: `sent` calls were too few to exceed the rate.
    TooSlow { sent: usize, elapsed_s: f64 },
    /// Call `index` was neither served nor refused for its rate.
    Broken { index: usize },
}

/// The verdict on a burst of `calls` (in any order) against `limit` calls a minute. A burst
/// without a refusal has either gone past the bound (a limit missing or too high) or run out of
/// time ([`keep_sending`]).
pub fn judge(limit: usize, calls: &[Call]) -> Verdict {
    let first_limited = calls
        .iter()
        .filter(|c| c.answer == Answer::Limited)
        .min_by(|a, b| a.answered.total_cmp(&b.answered).then(a.index.cmp(&b.index)));
    let first_other = |before: f64| {
        calls.iter().filter(|c| c.answer == Answer::Other && c.sent <= before).map(|c| c.index).min()
    };
    let Some(refusal) = first_limited else {
        if let Some(index) = first_other(f64::INFINITY) {
            return Verdict::Broken { index };
        }
        // The last call was sent while the burst was within the bound at that time: the burst
        // stopped at the bound if it has gone past it since, else at the time limit.
        let sent = calls.len();
        let last_sent = calls.iter().map(|c| c.sent).fold(0.0, f64::max);
        let elapsed_s = calls.iter().map(|c| c.answered).fold(0.0, f64::max);
        let bound = bound(limit, last_sent);
        return if sent > bound {
            Verdict::NoRefusal { sent, elapsed_s, bound }
        } else {
            Verdict::TooSlow { sent, elapsed_s }
        };
    };
    if let Some(index) = first_other(refusal.answered) {
        return Verdict::Broken { index };
    }
    // What the server may have handled before refusing: every call sent before the refusal
    // came back.
    let served_before =
        calls.iter().filter(|c| c.answer == Answer::Served && c.sent <= refusal.answered).count();
    if served_before < limit {
        return Verdict::Early { served: served_before, refused: refusal.index };
    }
    let sent_before = refusal.index - 1;
    let allowed = bound(limit, refusal.answered);
    if sent_before > allowed {
        return Verdict::NoRefusal { sent: sent_before, elapsed_s: refusal.answered, bound: allowed };
    }
    let served = calls.iter().filter(|c| c.answer == Answer::Served).count();
    let first_sent = calls.iter().map(|c| c.sent).fold(f64::INFINITY, f64::min);
    let span = refusal.sent - first_sent;
    let exact = if span >= 60.0 {
        Exactness::Unjudged(span)
    } else if served == limit {
        Exactness::Exact
    } else {
        Exactness::Served(served)
    };
    Verdict::Held { served, refused: refusal.index, after_s: refusal.answered, exact }
}

/// How a burst's calls are judged besides rate limits.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Each call should succeed.
    Success,
    /// Each call is refused anyway (a viewer's write): any answer counts as served.
    AnyAnswer,
}

fn classify(ex: &Exchange, expect: Expect) -> Answer {
    let error = ex.structured().and_then(|s| s.pointer("/data/error"));
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str);
    if ex.is_error()
        && (field("category") == Some("rate_limit") || field("code") == Some(ErrorCode::RateLimited.as_str()))
    {
        return Answer::Limited;
    }
    let served = match expect {
        Expect::Success => ex.structured().is_some() && !ex.is_error() && error.is_none(),
        Expect::AnyAnswer => ex.result().is_some() || ex.rpc_error().is_some(),
    };
    if served { Answer::Served } else { Answer::Other }
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

/// Wait for an earlier run's window to end, saying so on stderr every [`COUNTDOWN_EVERY`].
async fn wait_for_window(w: &ConformanceWorld, tool: &str) -> anyhow::Result<()> {
    let persona = w.persona()?.to_owned();
    let end = Instant::now() + wait_time();
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        w.check_deadline()?;
        eprintln!(
            "rate window of {persona}/{tool} in use by an earlier run: waiting {} s",
            left.as_secs_f64().ceil()
        );
        tokio::time::sleep(left.min(COUNTDOWN_EVERY)).await;
    }
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
        wait_for_window(w, &plan.tool).await?;
        waited = true;
        run = burst(w, &plan).await?;
        verdict = judge(plan.limit, &run.calls);
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

#[when(regex = r#"^they get (the [a-z][a-z -]*?[a-z]|"[^"]+") again and again, until they are refused$"#)]
async fn get_until_refused(w: &mut ConformanceWorld, target: String) -> anyhow::Result<()> {
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
    regex = r#"^they send the message "([^"]*)" in (the [a-z][a-z -]*?[a-z]|"[^"]+") with the key "([^"]*)", then again and again, until they are refused$"#
)]
async fn send_until_refused(
    w: &mut ConformanceWorld,
    text: String,
    target: String,
    key: String,
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
#[when(
    regex = r#"^they ask to set (the [a-z][a-z -]*?[a-z]|"[^"]+") to "([a-z_]+)" again and again, until they are refused$"#
)]
async fn set_until_refused(w: &mut ConformanceWorld, target: String, status: String) -> anyhow::Result<()> {
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
    let retry_after = error.get("retry_after_ms").and_then(Value::as_f64);
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
    if !retry_after.is_some_and(|ms| ms > 0.0) {
        w.ext_difference(
            "retry-after",
            format!("a rate-limit refusal with retry_after_ms {:?}", error.get("retry_after_ms")),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! [`judge`] on bursts driven like [`burst`] drives them (`keep_sending`, `IN_FLIGHT` at a
    //! time) against simulated servers of every window the seed allows, started at any second.

    use std::collections::VecDeque;

    use super::{Answer, Call, Exactness, IN_FLIGHT, Verdict, bound, judge, keep_sending};

    /// A server's rate limiter: whether the call it handles at `t` (seconds) is served.
    trait Limiter {
        fn hit(&mut self, t: f64) -> Answer;
    }

    /// At most `limit` served calls in any 60 s.
    struct Sliding {
        limit: usize,
        served: VecDeque<f64>,
    }

    impl Limiter for Sliding {
        fn hit(&mut self, t: f64) -> Answer {
            while self.served.front().is_some_and(|s| t - s >= 60.0) {
                self.served.pop_front();
            }
            if self.served.len() < self.limit {
                self.served.push_back(t);
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// Calendar minutes; the burst starts `offset` seconds into a minute.
    struct Calendar {
        limit: usize,
        offset: f64,
        minute: i64,
        count: usize,
    }

    impl Limiter for Calendar {
        fn hit(&mut self, t: f64) -> Answer {
            let minute = ((t + self.offset) / 60.0).floor() as i64;
            if minute != self.minute {
                (self.minute, self.count) = (minute, 0);
            }
            if self.count < self.limit {
                self.count += 1;
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// A bucket of `limit` tokens refilled at `limit` a minute.
    struct Bucket {
        limit: f64,
        tokens: f64,
        last: f64,
    }

    impl Limiter for Bucket {
        fn hit(&mut self, t: f64) -> Answer {
            self.tokens = (self.tokens + (t - self.last) * self.limit / 60.0).min(self.limit);
            self.last = t;
            if self.tokens >= 1.0 {
                self.tokens -= 1.0;
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// The reference: a window opened by the first call, lasting 60 s.
    struct Reference {
        limit: usize,
        start: Option<f64>,
        count: usize,
    }

    impl Limiter for Reference {
        fn hit(&mut self, t: f64) -> Answer {
            if self.start.is_none_or(|s| t - s >= 60.0) {
                (self.start, self.count) = (Some(t), 0);
            }
            if self.count < self.limit {
                self.count += 1;
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// Serves `n` calls, then refuses everything (a limit below the contract's).
    struct Below(usize);

    impl Limiter for Below {
        fn hit(&mut self, _: f64) -> Answer {
            if self.0 == 0 {
                return Answer::Limited;
            }
            self.0 -= 1;
            Answer::Served
        }
    }

    /// No limit; call `broken` (if any) fails otherwise.
    struct Unlimited {
        calls: usize,
        broken: Option<usize>,
    }

    impl Limiter for Unlimited {
        fn hit(&mut self, _: f64) -> Answer {
            self.calls += 1;
            if Some(self.calls) == self.broken { Answer::Other } else { Answer::Served }
        }
    }

    fn sliding(limit: usize) -> Sliding {
        Sliding { limit, served: VecDeque::new() }
    }

    fn calendar(limit: usize, offset: f64) -> Calendar {
        Calendar { limit, offset, minute: i64::MIN, count: 0 }
    }

    fn bucket(limit: usize) -> Bucket {
        Bucket { limit: limit as f64, tokens: limit as f64, last: 0.0 }
    }

    fn reference(limit: usize) -> Reference {
        Reference { limit, start: None, count: 0 }
    }

    /// Drive `server` as `burst` does: `IN_FLIGHT` calls at a time, call `i` answered
    /// `latency(i)` seconds after it is sent and handled by the server halfway; no new call after
    /// the first refusal or once `keep_sending` says stop.
    fn simulate(limit: usize, server: &mut dyn Limiter, latency: impl Fn(usize) -> f64) -> Vec<Call> {
        // The timings of the tests below are worked out for 16 calls in flight; the verdict
        // rules hold for any width (`the_burst_width_changes_no_verdict`).
        simulate_with(16, limit, server, latency)
    }

    fn simulate_with(
        in_flight: usize,
        limit: usize,
        server: &mut dyn Limiter,
        latency: impl Fn(usize) -> f64,
    ) -> Vec<Call> {
        // (index, sent, answered, handled, decision)
        let mut flight: Vec<(usize, f64, f64, f64, Option<Answer>)> = Vec::new();
        let mut calls = Vec::new();
        let (mut now, mut next, mut stop) = (0.0_f64, 1, false);
        loop {
            while !stop && flight.len() < in_flight {
                if !keep_sending(limit, next - 1, now) {
                    stop = true;
                    break;
                }
                let lat = latency(next);
                flight.push((next, now, now + lat, now + lat / 2.0, None));
                next += 1;
            }
            let Some(first) = (0..flight.len())
                .min_by(|&a, &b| flight[a].2.total_cmp(&flight[b].2).then(flight[a].0.cmp(&flight[b].0)))
            else {
                return calls;
            };
            // The server handles calls in the order they reach it.
            let handled = flight[first].3;
            let mut order: Vec<usize> =
                (0..flight.len()).filter(|&k| flight[k].4.is_none() && flight[k].3 <= handled).collect();
            order.sort_by(|&a, &b| flight[a].3.total_cmp(&flight[b].3).then(flight[a].0.cmp(&flight[b].0)));
            for k in order {
                flight[k].4 = Some(server.hit(flight[k].3));
            }
            let (index, sent, answered, _, decision) = flight.swap_remove(first);
            let answer = decision.expect("handled before it is answered");
            now = answered;
            calls.push(Call { index, answer, sent, answered });
            stop |= answer != Answer::Served;
        }
    }

    const FAST: f64 = 0.01;

    fn held(v: &Verdict) -> (usize, Exactness) {
        match v {
            Verdict::Held { served, exact, .. } => (*served, exact.clone()),
            other => panic!("expected the limit to hold: {other:?}"),
        }
    }

    #[test]
    fn the_bound_allows_two_minutes_and_a_refill() {
        assert_eq!(bound(1000, 0.0), 2000);
        assert_eq!(bound(1000, 30.0), 2500);
        assert_eq!(bound(500, 1.0), 1009);
        assert!(keep_sending(1000, 2000, 0.0));
        assert!(!keep_sending(1000, 2001, 0.0));
        assert!(!keep_sending(1000, 10, super::MAX_BURST_S));
    }

    #[test]
    fn the_reference_window_is_exact() {
        for limit in [1000, 500] {
            let calls = simulate(limit, &mut reference(limit), |_| FAST);
            let v = judge(limit, &calls);
            assert_eq!(held(&v), (limit, Exactness::Exact), "{limit}");
            let Verdict::Held { refused, .. } = v else { unreachable!() };
            assert_eq!(refused, limit + 1);
        }
    }

    #[test]
    fn a_sliding_window_passes_and_looks_like_the_reference() {
        let calls = simulate(1000, &mut sliding(1000), |_| FAST);
        assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact));
    }

    #[test]
    fn calendar_minutes_pass_whatever_the_second_the_burst_starts() {
        // Well inside a minute: like the reference.
        let calls = simulate(1000, &mut calendar(1000, 10.0), |_| FAST);
        assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact));
        // :00 passes during the burst (1000 calls take about 0.63 s here): more than 1000 served.
        for before_00 in [0.05, 0.3, 0.6, 0.62] {
            let calls = simulate(1000, &mut calendar(1000, 60.0 - before_00), |_| FAST);
            let v = judge(1000, &calls);
            let (served, exact) = held(&v);
            assert!(served > 1000 && served <= 2000, "{before_00}: {v:?}");
            assert_eq!(exact, Exactness::Served(served), "{before_00}");
        }
        // :00 comes just after the refusal: like the reference.
        for before_00 in [0.65, 1.0, 59.9] {
            let calls = simulate(1000, &mut calendar(1000, 60.0 - before_00), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact), "{before_00}");
        }
        // :00 right after call 1000: two full minutes back to back, still within the bound.
        let most = (0..80)
            .map(|k| {
                let calls = simulate(1000, &mut calendar(1000, 60.0 - 0.6 - k as f64 * 0.0005), |_| FAST);
                held(&judge(1000, &calls)).0
            })
            .max();
        assert!(most.is_some_and(|n| n > 1990), "{most:?}");
    }

    #[test]
    fn the_burst_width_changes_no_verdict() {
        for width in [1, 16, IN_FLIGHT] {
            let calls = simulate_with(width, 1000, &mut reference(1000), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact), "reference, {width} in flight");
            let calls = simulate_with(width, 1000, &mut sliding(1000), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact), "sliding, {width} in flight");
            let calls = simulate_with(width, 1000, &mut calendar(1000, 10.0), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)).0, 1000, "calendar, {width} in flight");
            let calls = simulate_with(width, 1000, &mut bucket(1000), |_| FAST);
            let served = held(&judge(1000, &calls)).0;
            assert!(served > 1000 && served <= 2000, "bucket, {width} in flight: {served}");
        }
    }

    #[test]
    fn a_token_bucket_passes_fast_or_slow() {
        let calls = simulate(1000, &mut bucket(1000), |_| FAST);
        let (served, exact) = held(&judge(1000, &calls));
        assert!(served > 1000 && served < 1020, "{served}");
        assert_eq!(exact, Exactness::Served(served));
        // 32 calls a second: the bucket drains slowly, for over a minute.
        let calls = simulate(1000, &mut bucket(1000), |_| 0.5);
        let v = judge(1000, &calls);
        let (served, exact) = held(&v);
        assert!(served > 2000, "{v:?}");
        assert!(matches!(exact, Exactness::Unjudged(s) if s > 60.0), "{v:?}");
        // The write rate too.
        let calls = simulate(500, &mut bucket(500), |_| 0.1);
        assert!(held(&judge(500, &calls)).0 > 500);
    }

    #[test]
    fn a_slow_server_is_judged_by_what_it_served_not_by_its_speed() {
        // 20 calls a second: 1000 served in 50 s, the next refused.
        let calls = simulate(1000, &mut reference(1000), |_| 0.8);
        assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact));
        // 16 calls a second is under 1000 a minute: no window is ever full.
        let calls = simulate(1000, &mut reference(1000), |_| 1.0);
        assert!(matches!(judge(1000, &calls), Verdict::TooSlow { .. }), "{:?}", judge(1000, &calls));
    }

    #[test]
    fn calls_in_flight_may_reach_the_server_in_any_order() {
        // Latencies from 0.01 to 0.05 s: calls overtake each other around call 1000.
        let jitter = |i: usize| 0.01 + (i * 7 % 5) as f64 * 0.01;
        for (limit, calls) in [
            (1000, simulate(1000, &mut reference(1000), jitter)),
            (1000, simulate(1000, &mut sliding(1000), jitter)),
            (500, simulate(500, &mut reference(500), jitter)),
        ] {
            let v = judge(limit, &calls);
            assert_eq!(held(&v), (limit, Exactness::Exact), "{v:?}");
        }
    }

    #[test]
    fn a_window_in_use_is_an_early_refusal_then_a_fresh_one_passes() {
        // An earlier run filled the window 30 s ago.
        let mut server = Reference { limit: 1000, start: Some(-30.0), count: 1000 };
        let calls = simulate(1000, &mut server, |_| FAST);
        assert_eq!(judge(1000, &calls), Verdict::Early { served: 0, refused: 1 });
        // Calendar minutes: an earlier run in the same minute, the burst 2 s before :00.
        let mut server = Calendar { limit: 1000, offset: 58.0, minute: 0, count: 1000 };
        assert!(matches!(judge(1000, &simulate(1000, &mut server, |_| FAST)), Verdict::Early { .. }));
        // 61 s later, every window is fresh: the second burst (shifted by 61 s) passes.
        let mut server = Calendar { limit: 1000, offset: 58.0 + 61.0, minute: 0, count: 1000 };
        assert_eq!(held(&judge(1000, &simulate(1000, &mut server, |_| FAST))).0, 1000);
        // A bucket an earlier run left half empty.
        let mut server = Bucket { limit: 1000.0, tokens: 500.0, last: 0.0 };
        assert!(matches!(judge(1000, &simulate(1000, &mut server, |_| FAST)), Verdict::Early { .. }));
    }

    #[test]
    fn a_limit_below_the_contract_is_an_early_refusal() {
        let calls = simulate(1000, &mut Below(900), |_| FAST);
        let v = judge(1000, &calls);
        assert!(matches!(v, Verdict::Early { served: 900, .. }), "{v:?}");
    }

    #[test]
    fn no_limit_is_caught_at_the_bound() {
        let calls = simulate(1000, &mut Unlimited { calls: 0, broken: None }, |_| FAST);
        let v = judge(1000, &calls);
        let Verdict::NoRefusal { sent, bound, .. } = v else { panic!("{v:?}") };
        assert!(sent > bound && sent <= bound + IN_FLIGHT + 1, "{v:?}");
        // A limit of twice the contract's, refusing only after 2100 calls: past the bound too.
        let v = judge(1000, &simulate(1000, &mut Below(2100), |_| FAST));
        assert!(matches!(v, Verdict::NoRefusal { .. }), "{v:?}");
    }

    #[test]
    fn a_call_neither_served_nor_refused_breaks_the_burst() {
        let calls = simulate(1000, &mut Unlimited { calls: 0, broken: Some(10) }, |_| FAST);
        assert_eq!(judge(1000, &calls), Verdict::Broken { index: 10 });
    }
}
