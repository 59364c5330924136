//! LIM-2 and LIM-3, once, after the budget: a burst of one read tool as one persona until the
//! server refuses it for its rate, judged as `the first 1000 calls were all served, and a refusal
//! came in time` and `the refusal is a rate limit` judge it (`rate_verdict`); then the persona's
//! next read of another tool and another persona's call of the same tool must not be limited
//! (`nobody else is slowed`). The pair is the one of the access tables' allowed read rows the run
//! called least (its earlier calls may be in the window: a refusal that comes while they could
//! make up the difference is not judged).

use std::time::Instant;

use chataigne_contract::{Kind, ToolName};
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use serde_json::Value;

pub use super::cases::RateCase;
use super::cases::{Group, Replay};
use super::engine::{Engine, rng};
use super::observed::Observed;
use super::observed::Why;
use super::oracle::Fault;
use crate::client::{Exchange, McpClient};
use crate::rate_verdict::{self, Answer, Call, IN_FLIGHT, Verdict};

/// The longest a burst goes on without a refusal: a server slower than this is not judged.
const MAX_BURST_S: f64 = 30.0;

/// The burst's pair: an allowed read row of the access tables, by another persona than the
/// fuzzer's, the one the run called least; `None` when there is none.
pub fn case(engine: &Engine<'_>) -> Option<RateCase> {
    let read = |tool: &str| ToolName::parse(tool).is_some_and(|t| t.kind() == Kind::Read);
    let rows: Vec<_> = engine.access.iter().filter(|r| r.group == Group::Allowed && read(&r.tool)).collect();
    let tally = engine.caller.tally.borrow();
    let calls = |p: &str, t: &str| tally.get(&(p.to_owned(), t.to_owned())).copied().unwrap_or(0);
    let user = |p: &str| {
        engine.caller.ctx.dataset.personas.iter().find(|d| d.persona == p).map(|d| d.user_id.clone())
    };
    // A pair whose user has another client allowed the tool, if any: a window per user rather
    // than per client is then told apart too.
    let sibling = |r: &super::access::AccessCase| {
        rows.iter()
            .any(|o| o.tool == r.tool && o.persona != r.persona && user(&o.persona) == user(&r.persona))
    };
    let row = rows
        .iter()
        .filter(|r| r.persona != engine.caller.persona)
        .min_by_key(|r| (calls(&r.persona, &r.tool), !sibling(r)))?;
    let mut others = Vec::new();
    if let Some(other) = rows.iter().find(|r| r.persona == row.persona && r.tool != row.tool) {
        others.push((other.persona.clone(), other.tool.clone(), other.arguments.clone()));
    }
    // Another OAuth client of the same user first (a window per user is the likelier slip),
    // then another user.
    let mut same_tool: Vec<_> =
        rows.iter().filter(|r| r.tool == row.tool && r.persona != row.persona).collect();
    same_tool.sort_by_key(|r| user(&r.persona) != user(&row.persona));
    let mut personas = Vec::new();
    for r in same_tool {
        if !personas.contains(&r.persona) {
            personas.push(r.persona.clone());
            others.push((r.persona.clone(), r.tool.clone(), r.arguments.clone()));
        }
    }
    others.truncate(3);
    Some(RateCase {
        persona: row.persona.clone(),
        tool: row.tool.clone(),
        args: row.arguments.clone(),
        others,
        prior: calls(&row.persona, &row.tool),
    })
}

/// A fresh initialized session of `persona` (`None`: no token, or it cannot initialize).
async fn session(engine: &Engine<'_>, persona: &str) -> Option<McpClient> {
    let mut client = engine.caller.ctx.client(persona)?;
    client.initialize().await;
    client.is_initialized().then_some(client)
}

/// Send the pair's call, [`IN_FLIGHT`] at a time through as many sessions, until the server
/// refuses one for its rate (or `rate_verdict::keep_sending` or [`MAX_BURST_S`] says stop).
/// What a burst kept: its calls, the first refusal for the rate, the first answer that was
/// neither served nor so refused.
struct Burst {
    calls: Vec<Call>,
    refusal: Option<Exchange>,
    other: Option<Exchange>,
}

fn burst(engine: &Engine<'_>, case: &RateCase, limit: usize) -> Option<Burst> {
    let runtime = engine.caller.runtime;
    runtime.block_on(async {
        let fresh = futures::future::join_all((0..IN_FLIGHT).map(|_| session(engine, &case.persona))).await;
        let mut idle: Vec<McpClient> = fresh.into_iter().collect::<Option<_>>()?;
        let start = Instant::now();
        let mut pending = FuturesUnordered::new();
        let mut calls = Vec::new();
        let mut refusal = None;
        let mut other = None;
        let mut next = 1;
        let mut stop = false;
        loop {
            while !stop {
                let elapsed = start.elapsed().as_secs_f64();
                if !rate_verdict::keep_sending(limit, next - 1, elapsed) || elapsed > MAX_BURST_S {
                    stop = true;
                    break;
                }
                let Some(mut client) = idle.pop() else { break };
                let (index, tool, args) = (next, case.tool.clone(), case.args.clone());
                next += 1;
                pending.push(async move {
                    let sent = start.elapsed().as_secs_f64();
                    let ex = client.call_tool(&tool, args).await;
                    (client, index, sent, start.elapsed().as_secs_f64(), ex)
                });
            }
            let Some((client, index, sent, answered, ex)) = pending.next().await else { break };
            idle.push(client);
            let answer = crate::rules::rate_answer(&ex, false);
            calls.push(Call { index, answer, sent, answered });
            if answer != Answer::Served {
                stop = true;
                if answer == Answer::Limited && refusal.is_none() {
                    refusal = Some(ex);
                } else if answer == Answer::Other && other.is_none() {
                    other = Some(ex);
                }
            }
        }
        engine.caller.meter.borrow_mut().calls += (IN_FLIGHT + calls.len()) as u64;
        Some(Burst { calls, refusal, other })
    })
}

/// Run the burst once (or `fixed`'s, for a replay); returns whether it broke a rule.
pub fn run(engine: &Engine<'_>, fixed: Option<RateCase>) -> bool {
    let Some(case) = fixed.or_else(|| case(engine)) else { return false };
    let replay = |c: &RateCase| Replay::Rates(c.clone());
    let rng = rng(engine.seed, 0, 5 << 32);
    engine.run_rows(vec![case], rng, &replay, &|case| judge(engine, case))
}

fn judge(engine: &Engine<'_>, case: &RateCase) -> Vec<Observed> {
    let Some(limit) = ToolName::parse(&case.tool).map(|t| t.kind().rate_per_minute() as usize) else {
        return Vec::new();
    };
    let who = format!("{} as `{}`", case.tool, case.persona);
    let Some(Burst { calls, refusal, other }) = burst(engine, case, limit) else {
        let reason =
            format!("the burst's {IN_FLIGHT} sessions of `{}` could not be initialized", case.persona);
        engine.block(Why::NoSession, &format!("rate burst of {who}"), reason);
        return Vec::new();
    };
    let observe =
        |clause: &'static str, detail: String, persona: &str, tool: &str, args: &Value, ex: &Exchange| {
            Observed::new(Fault::new(clause, detail), persona, tool, args, ex)
        };
    let mut out = Vec::new();
    match rate_verdict::judge(limit, &calls) {
        Verdict::Early { served, refused, .. } if served as u64 + case.prior < limit as u64 => {
            if let Some(ex) = &refusal {
                let detail = format!(
                    "{who}: call {refused} of a burst refused for its rate when at most {served} calls (and {} earlier ones) could have been served; the contract serves {limit} a minute",
                    case.prior
                );
                out.push(observe("LIM-2", detail, &case.persona, &case.tool, &case.args, ex));
            }
        }
        Verdict::NoRefusal { sent, elapsed_s, bound } => {
            // No exchange of the burst is kept but the last refusal: a fresh call shows the state.
            let ex = engine.caller.runtime.block_on(async {
                let mut client = session(engine, &case.persona).await?;
                Some(client.call_tool(&case.tool, case.args.clone()).await)
            });
            if let Some(ex) = ex {
                let detail = format!(
                    "{who}: no rate-limit refusal after {sent} calls in {elapsed_s:.1} s, more than any window of {limit} a minute serves ({bound})"
                );
                out.push(observe("LIM-2", detail, &case.persona, &case.tool, &case.args, &ex));
            }
        }
        Verdict::Broken { index } => {
            // A call of the burst neither served nor refused for its rate: what LIM-2's burst
            // reads is broken (the answer, not the wording, says so).
            if let Some(ex) = &other {
                let detail = format!(
                    "{who}: call {index} of a burst was neither served nor refused for its rate ({})",
                    ex.summary()
                );
                out.push(observe("LIM-2", detail, &case.persona, &case.tool, &case.args, ex));
            }
        }
        Verdict::TooSlow { sent, elapsed_s } => {
            let reason = format!(
                "no refusal after {sent} calls in {elapsed_s:.1} s: too few to exceed {limit} a minute, LIM-2 not judged"
            );
            engine.block(Why::BurstTooSlow, &format!("rate burst of {who}"), reason);
        }
        Verdict::Held { .. } | Verdict::Early { .. } => {}
    }
    let Some(refusal) = refusal else { return out };
    // `the refusal is a rate limit`: its envelope by every rule of an error (ENV-4, ENV-5), and
    // a delay to wait (the project's `retry_after_ms`, a reference choice).
    for v in super::oracle::every_rule(engine.caller.ctx, &refusal, engine.caller.token_of(&case.persona)) {
        out.push(observe(v.clause, v.detail, &case.persona, &case.tool, &case.args, &refusal));
    }
    for (fault, choice) in super::oracle::rate_refusal(&who, &refusal) {
        let mut o = observe(fault.clause, fault.detail, &case.persona, &case.tool, &case.args, &refusal);
        o.choice = choice;
        out.push(o);
    }
    // `nobody else is slowed`: one call of each other pair, through a fresh session.
    for (persona, tool, args) in &case.others {
        let ex = engine.caller.runtime.block_on(async {
            let mut client = session(engine, persona).await?;
            Some(client.call_tool(tool, args.clone()).await)
        });
        engine.caller.meter.borrow_mut().calls += 2;
        let Some(ex) = ex else { continue };
        if crate::rules::rate_answer(&ex, true) == Answer::Limited {
            let detail = format!(
                "{tool} as `{persona}` was refused for its rate once {who} was limited: a limit is per OAuth client, user and tool ({})",
                ex.summary()
            );
            out.push(observe("LIM-3", detail, persona, tool, args, &ex));
        }
    }
    out
}
