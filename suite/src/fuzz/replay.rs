//! `replay FILE`: a finding's transcript run again against a server, by the property that found
//! it, with its one failing case and no shrinking: the same calls in order, each persona's
//! token taken from the profile, and the same oracles. The finding reproduces when its clause
//! breaks again.

use std::io::Write;

use anyhow::{Context as _, bail};
use proptest::strategy::{Just, Strategy as _};

use super::budget::{Budget, Meter};
use super::caller::Caller;
use super::cases::Replay;
use super::engine::{Engine, rng};
use super::observed::PERSONA;
use super::transcript::Transcript;
use super::{access, races, rates, rows, sequences, transport};
use crate::profile::Profile;

/// Calls a replay may make at most: a cursor walk is the longest (20 pages and the tampered one).
const MAX_CALLS: u64 = 64;

/// What a replay came to.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// The clause broke again: the detail of what was wrong this time.
    Reproduced(String),
    /// Other clauses broke, not the transcript's.
    Other(Vec<(String, String)>),
    Passed,
}

/// Replay `t` against the server of `profile`; `disposable`: its state is thrown away after
/// (`--embedded`). `Err`: a configuration error (exit code 2).
pub fn run(
    t: &Transcript,
    profile: Profile,
    disposable: bool,
    console: &mut dyn Write,
) -> anyhow::Result<Verdict> {
    let (runtime, ctx) = crate::preflight::prepare_on_own_runtime(profile)?;
    if let Some(fault) = &ctx.broken_protocol {
        // The answer to initialize no client can read: nothing else can be replayed.
        let _ = writeln!(console, "[{}] {}", fault.clause, fault.detail);
        return Ok(if fault.clause == t.clause {
            Verdict::Reproduced(fault.detail.clone())
        } else {
            Verdict::Other(vec![(fault.clause.to_owned(), fault.detail.clone())])
        });
    }
    if let Some(problem) = &ctx.published.problem {
        bail!("tools/list failed: {problem}");
    }
    // A transport probe makes its own requests (without a token, for one).
    let probe = matches!(t.replay, Replay::Transport { .. });
    for step in t.calls.iter().filter(|_| !probe) {
        if !ctx.profile.tokens.contains_key(&step.persona) {
            bail!(
                "the profile has no token for persona `{}`, who made a call of this transcript",
                step.persona
            );
        }
    }
    let writes = disposable || ctx.control.is_some();
    let needs_writes = t.calls.iter().any(|s| {
        ctx.published
            .tools
            .iter()
            .filter_map(super::schema::Tool::new)
            .any(|tool| tool.name == s.tool && tool.writes)
    });
    if needs_writes && !writes {
        bail!("this transcript calls write tools: replay it with --embedded or a profile with a control API");
    }
    if writes && let Some(control) = &ctx.control {
        runtime.block_on(control.reset()).context("control API reset before the replay")?;
    }
    let caller = Caller::new(&ctx, &runtime, PERSONA, Meter::new(Budget::Calls(MAX_CALLS)))?;
    let mut engine = Engine::new(&ctx, caller, t.seed, writes);
    engine.access = access::cases(&ctx, &engine.caller, &engine.tools);
    let rng = rng(t.seed, 0, 0);
    match t.replay.clone() {
        Replay::Call { persona, tool, case } => {
            let tool = engine.tool(&tool).with_context(|| format!("the server does not publish `{tool}`"))?;
            if persona != engine.caller.persona {
                bail!("a single call of persona `{persona}`: not one the fuzzer makes");
            }
            engine.call_property(tool, Just(case).boxed(), 1, 0, rng);
        }
        Replay::Cursor(case) => {
            sequences::cursor(&engine, 1, rng, Some(case));
        }
        Replay::Idempotency { tool, case, persona } => {
            sequences::idempotency(&engine, 1, rng, Some((tool, case, persona)));
        }
        Replay::Precondition(case) => {
            sequences::precondition(&engine, 1, rng, Some(case));
        }
        Replay::UnknownTool(case) => {
            sequences::unknown_tool(&engine, 1, rng, Some(case));
        }
        Replay::CursorBinding(case) => {
            sequences::cursor_binding(&engine, 1, 0, rng, Some(case));
        }
        Replay::Access(case) => {
            access::sweep(&engine, case.group, 1, 0, rng, Some(case));
        }
        Replay::Transport { probe } => {
            transport::run(&engine, Some(&probe));
        }
        Replay::Largest(case) => {
            races::largest(&engine, rng, Some(case));
        }
        Replay::Carried(case) => {
            races::carried_cursor(&engine, rng, Some(case));
        }
        Replay::Burst(case) => {
            races::burst(&engine, 1, rng, Some(case));
        }
        Replay::Race(case) => {
            races::race(&engine, 1, rng, Some(case));
        }
        Replay::KeyScope(case) => {
            races::key_scope(&engine, 1, rng, Some(case));
        }
        Replay::Authority(case) => {
            races::authority(&engine, rng, Some(case));
        }
        Replay::Fault(case) => {
            races::faults(&engine, rng, Some(case));
        }
        Replay::Expiry(case) => {
            races::expiry(&engine, rng, Some(case));
        }
        Replay::Rates(case) => {
            rates::run(&engine, Some(case));
        }
        Replay::Bound(case) => {
            rows::run(&engine, rng, Some(case));
        }
    }
    if writes
        && let Some(control) = &ctx.control
        && let Err(e) = runtime.block_on(control.reset())
    {
        let _ = writeln!(console, "warning: control API reset after the replay failed: {e:#}");
    }
    if let Some(reason) = engine.broken() {
        bail!("the replay failed (a bug of the suite, please report it): {reason}");
    }
    let findings = engine.findings();
    if let Some(f) = findings.iter().find(|f| f.clause == t.clause) {
        return Ok(Verdict::Reproduced(f.detail.clone()));
    }
    if findings.is_empty() {
        return Ok(Verdict::Passed);
    }
    Ok(Verdict::Other(findings.iter().map(|f| (f.clause.to_owned(), f.detail.clone())).collect()))
}
