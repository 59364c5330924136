//! `fuzz`: stateful, contract-aware fuzzing of an MCP server. Arguments are drawn from each
//! tool's published input schema (valid ones, and ones with a single mutation) with proptest,
//! every answer is judged by the contract's rules (`oracle`), a few stateful sequences check
//! cursors, idempotency and preconditions (`sequences`), and each failure is shrunk by proptest
//! to a minimal reproduction (`report`). A seed reproduces a run against the same server.
//!
//! Files, bottom first (ARCHITECTURE.md's fuzz layers): `budget` (how much to do), `ids`
//! (dataset IDs by argument), `schema` (what to generate from, which mutations, which clause),
//! `strategy` (proptest strategies), `cases` (what each property replays), `observed` (a failure
//! before it is a finding; what was blocked), `oracle` (judging a call), `caller` (synchronous
//! calls, budget, rate limits), `report`, `scenarios` (the rules' scenarios, first with a time
//! budget), `engine` (running one property), the properties
//! (`access`, `sequences`, `races` across sessions, clients and users, `rates`, `transport`),
//! `transcript`, `replay`; here, the plan of properties and `run`.

pub mod access;
pub mod budget;
pub mod caller;
pub mod cases;
pub mod engine;
pub mod html;
pub mod ids;
pub mod junit;
pub mod observed;
pub mod oracle;
pub mod races;
pub mod rates;
pub mod replay;
pub mod report;
pub mod rows;
pub mod scenarios;
pub mod schema;
pub mod sequences;
pub mod strategy;
pub mod transcript;
pub mod transport;

use std::fmt::Debug;
use std::io::Write;

use anyhow::Context as _;
use proptest::strategy::{Just, Strategy as _};
use proptest::test_runner::{Config, TestRng, TestRunner};
use serde_json::Value;

use self::budget::{Budget, Meter};
use self::caller::Caller;
pub use self::cases::Replay;
pub use self::engine::{Engine, MAX_SHRINK_ITERS, rng};
pub use self::observed::{Call, Observed, PERSONA};
use self::report::{Finding, FuzzReport};
use self::schema::Target;
use self::strategy::Case;
use crate::profile::Profile;

/// Rounds over every property at most: a budget of time on a fast server ends long before.
const MAX_ROUNDS: u64 = 10_000;

#[derive(Debug, Clone)]
pub struct Settings {
    pub seed: u64,
    pub budget: Budget,
    /// The server's state is thrown away after the run (`--embedded`): writes may be fuzzed
    /// without a control API.
    pub disposable: bool,
    /// `--no-rules`: draw cases at once, without running the rules' scenarios first.
    pub no_rules: bool,
}

/// What a round runs: one property.
#[derive(Debug, Clone)]
enum Prop {
    Valid(usize),
    Mutated(usize, Target),
    Cursor,
    Idempotency,
    Precondition,
    UnknownTool,
    /// A cursor reused with one argument changed (PAG-6).
    CursorBinding,
    /// Valid calls of other personas, judged by the access tables (AUTH-3/4/6).
    Access(access::Group),
    /// The transport family's probes, each once (`transport`).
    Transport,
    /// The tools that can exceed 128 KiB on the dataset's largest records (LIM-5, LIM-6, PAG-8).
    Largest,
    /// A cursor of the owner's reused by other personas (PAG-6).
    Carried,
    /// Identical keyed writes at once (IDEM-4).
    Burst,
    /// Moves of one order at once (PRE-4).
    Race,
    /// A key reused by another client and another user (IDEM-5).
    KeyScope,
    /// A walk whose membership ends between two pages (PAG-7; the control API).
    Authority,
    /// A read past its deadline, or failing inside (LIM-4, SEC-2; the control API).
    Faults,
    /// A key before and after its 24 hours on the server's clock (IDEM-6; the control API).
    Expiry,
    /// The two date ranges past LIM-1's rule, on every tool with a range.
    Ranges,
    /// Every row of the bounds matrix, once (`rows`).
    Bounds,
    /// The surfaces besides the tools, each persona's, once (`transport::run_surfaces`).
    Surfaces,
}

impl Prop {
    /// Run in the first round only: the property makes the same calls every time (or, for the
    /// key scoping, a new key meets the same rule). The races too: with the control API they
    /// are slowed to collide on the first try (300 ms each), and a round of them again would
    /// halve the calls a second of fuzzing makes.
    fn once(&self) -> bool {
        matches!(
            self,
            Prop::Largest
                | Prop::Carried
                | Prop::KeyScope
                | Prop::Authority
                | Prop::Faults
                | Prop::Expiry
                | Prop::Burst
                | Prop::Race
                | Prop::Ranges
                | Prop::Bounds
                | Prop::Surfaces
        )
    }
}

/// Preflight, fuzz, report. `Err`: a configuration error (exit code 2).
pub fn run(profile: Profile, settings: &Settings, console: &mut dyn Write) -> anyhow::Result<FuzzReport> {
    let (runtime, ctx) = crate::preflight::prepare_on_own_runtime(profile)?;
    if let Some(fault) = &ctx.broken_protocol {
        // A verdict, as for a run: the clause the answer to initialize breaks (exit code 1).
        let target = report::Target {
            endpoint: &ctx.endpoint,
            stdio: ctx.stdio.is_some(),
            protocol_version: None,
            seed: settings.seed,
        };
        let report = FuzzReport {
            seed: settings.seed,
            budget: settings.budget.to_string(),
            calls: 1,
            elapsed_ms: 0,
            read_only: true,
            findings: vec![Finding::initialize(&target, fault.clause, &fault.detail)],
            blocked: Vec::new(),
            unjudged_calls: 0,
            rules: report::RulesRound::not_run("the answer to initialize cannot be read"),
        };
        report.print(console);
        return Ok(report);
    }
    if let Some(problem) = &ctx.published.problem {
        anyhow::bail!("tools/list failed: {problem}");
    }
    let writes = settings.disposable || ctx.control.is_some();
    if writes && let Some(control) = &ctx.control {
        // A known state first: the same seed then makes the same calls meet the same records.
        runtime.block_on(control.reset()).context("control API reset before fuzzing")?;
    }
    // The rules' own cases first (`scenarios`), within the budget; then the reset below gives
    // the drawn cases the dataset's state again.
    let started = std::time::Instant::now();
    let secrets: Vec<&str> = ctx.profile.tokens.values().map(String::as_str).collect();
    let (rules, rule_findings, rule_blocked) =
        match (scenarios::why_not(settings.budget, writes, settings.no_rules), settings.budget) {
            (None, Budget::Time(time)) => scenarios::run(&ctx.profile, time, settings.seed, &secrets),
            (why, _) => (report::RulesRound::not_run(why.unwrap_or("--no-rules")), Vec::new(), Vec::new()),
        };
    if writes
        && rules.not_run.is_none()
        && let Some(control) = &ctx.control
    {
        runtime.block_on(control.reset()).context("control API reset after the rules' scenarios")?;
    }
    let budget = match settings.budget {
        Budget::Time(d) => Budget::Time(d.saturating_sub(started.elapsed())),
        calls => calls,
    };
    let meter = Meter::new(budget);
    let caller = Caller::new(&ctx, &runtime, PERSONA, meter)?;
    let mut engine = Engine::new(&ctx, caller, settings.seed, writes);
    engine.access = access::cases(&ctx, &engine.caller, &engine.tools);
    engine.fuzz();
    let audited = if writes { audit_drawn(&ctx, &runtime, settings.seed, &secrets) } else { Vec::new() };
    if writes && let Some(control) = &ctx.control {
        // The fuzzer's writes must not leak into the next run (or the next suite run).
        if let Err(e) = runtime.block_on(control.reset()) {
            let _ = writeln!(console, "warning: control API reset after fuzzing failed: {e:#}");
        }
    }
    if let Some(reason) = engine.broken.take() {
        anyhow::bail!("the fuzzer failed (a bug of the suite, please report it): {reason}");
    }
    let mut report = engine.into_report(settings.budget.to_string());
    report.findings.extend(audited);
    // The rules' findings first: they are what the contract's rules derived.
    report.findings.splice(0..0, rule_findings);
    report.blocked.extend(rule_blocked);
    report.elapsed_ms += rules.elapsed_ms;
    report.rules = rules;
    report.print(console);
    Ok(report)
}

/// After the drawn cases, on a server the control API reset before them: every record no drawn
/// write named is still the published dataset's (`crate::audit`). Not run, silently, where the
/// oracle found other data or the reads fail (the drawn cases' own findings say why).
fn audit_drawn(
    ctx: &crate::context::RunContext,
    runtime: &tokio::runtime::Runtime,
    seed: u64,
    secrets: &[&str],
) -> Vec<Finding> {
    if ctx.control.is_none() || !ctx.oracle.is_on() {
        return Vec::new();
    }
    let Ok(now) = runtime.block_on(crate::audit::take(ctx, true)) else { return Vec::new() };
    let expected = crate::audit::from_dataset(&ctx.dataset, &crate::audit::readers(ctx));
    let target =
        report::Target { endpoint: &ctx.endpoint, stdio: ctx.stdio.is_some(), protocol_version: None, seed };
    crate::audit::against(ctx, &expected, &now)
        .into_iter()
        .filter_map(|n| {
            let difference = n.difference?;
            // The read that shows the record as it is now: the finding's request and curl line.
            let (tool, args) = n.read.unwrap_or(("list_organizations", serde_json::json!({})));
            let args = ctx.id_map.outbound(&args);
            let request = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                              "params": { "name": tool, "arguments": args } });
            let reproduction = report::curl(&target, &request);
            Some(scenarios::of_audit(
                n.clause,
                &difference,
                (tool, args, request, reproduction),
                seed,
                secrets,
            ))
        })
        .collect()
}

impl Engine<'_> {
    /// The transport's probes, valid calls of every tool, then the sequences, then each mutation, bounds first
    /// and a mutation already tried on another tool last; again and again until the budget
    /// is spent.
    fn plan(&self) -> Vec<Prop> {
        // The transport's probes first: a few dozen requests, deterministic, and out of reach of
        // a budget spent shrinking the first tool calls' findings.
        let mut props = vec![Prop::Transport];
        props.extend((0..self.tools.len()).map(Prop::Valid));
        props.push(Prop::Cursor);
        props.push(Prop::UnknownTool);
        props.push(Prop::CursorBinding);
        if self.writes {
            props.extend([Prop::Idempotency, Prop::Precondition]);
        }
        let mut seen = std::collections::HashMap::<String, usize>::new();
        let mut mutations = Vec::new();
        let by_tool: Vec<Vec<Target>> = self.tools.iter().map(|t| schema::targets(&t.schema)).collect();
        let longest = by_tool.iter().map(Vec::len).max().unwrap_or(0);
        // Round-robin over the tools, so no tool's mutations all come before another's.
        for rank in 0..longest {
            for (i, targets) in by_tool.iter().enumerate() {
                let Some(t) = targets.get(rank) else { continue };
                let repeats = seen.entry(t.signature()).or_insert(0);
                mutations.push(((*repeats, t.priority(), rank, i), Prop::Mutated(i, t.clone())));
                *repeats += 1;
            }
        }
        mutations.sort_by_key(|(k, _)| *k);
        // The access tables after each bound's first try (bounds are where servers go wrong
        // most) and one unknown member (one call tells whether the input schemas are enforced
        // at all), then the other mutations.
        let early = |repeats: usize, priority: u8, p: &Prop| {
            repeats == 0
                && (priority == 0
                    || matches!(p, Prop::Mutated(_, t) if t.mutation == crate::bounds::Mutation::ExtraProperty))
        };
        let (bounds, rest): (Vec<_>, Vec<_>) =
            mutations.into_iter().partition(|((repeats, priority, _, _), p)| early(*repeats, *priority, p));
        props.extend(bounds.into_iter().map(|(_, p)| p));
        // The largest records, other personas' cursors and the races after the bounds too:
        // a few calls each, once.
        props.extend([Prop::Largest, Prop::Carried, Prop::Ranges]);
        if self.writes {
            // The clock last: it stays advanced by a day.
            props.extend([
                Prop::Burst,
                Prop::Race,
                Prop::KeyScope,
                Prop::Authority,
                Prop::Faults,
                Prop::Expiry,
            ]);
        }
        let groups: Vec<access::Group> =
            access::Group::ALL.into_iter().filter(|g| !self.access_rows(*g).is_empty()).collect();
        // Every group, the allowed rows last: a refused allowed row is a table broken too, and
        // a round of rows (one per tool) costs fewer calls than the other mutations. The
        // access properties keep their order among themselves, so their generators too.
        props.extend(groups.iter().map(|g| Prop::Access(*g)));
        // The surfaces and every row of the bounds matrix after the tables: hundreds of calls,
        // each the rules' own case.
        props.extend([Prop::Surfaces, Prop::Bounds]);
        props.extend(rest.into_iter().map(|(_, p)| p));
        props
    }

    fn fuzz(&self) {
        self.fuzz_rounds();
        // The rate limits last, once, past the budget (a burst is over a thousand calls): with
        // writes (the server is a test deployment) and a budget of at least a read tool's rate.
        if self.writes && self.broken.borrow().is_none() && self.rates_fit() {
            self.caller.meter.borrow_mut().lifted = true;
            rates::run(self, None);
            self.caller.meter.borrow_mut().lifted = false;
        }
    }

    /// Whether the budget is large enough to add a rate-limit burst: as many calls as a read
    /// tool's rate a minute, or a minute of fuzzing.
    fn rates_fit(&self) -> bool {
        let rate = u64::from(chataigne_contract::tools::Kind::Read.rate_per_minute());
        match self.caller.meter.borrow().budget() {
            Budget::Calls(n) => n >= rate,
            Budget::Time(d) => d.as_secs() >= 60,
        }
    }

    fn fuzz_rounds(&self) {
        let plan = self.plan();
        // Each property's generator index: the properties added later (an unknown tool, the
        // access tables; then the races and largest records) count apart, so adding one leaves
        // the others' draws as they were.
        let mut counts = (0u64, 0u64, 0u64);
        let keys: Vec<u64> = plan
            .iter()
            .map(|p| match p {
                // Its probes are not drawn: a key of its own, apart from both counts.
                Prop::Transport => 3 << 32,
                Prop::Ranges => 4 << 32,
                Prop::Bounds => 5 << 32,
                Prop::Surfaces => 6 << 32,
                Prop::UnknownTool | Prop::CursorBinding | Prop::Access(_) => {
                    counts.1 += 1;
                    (1 << 32) + counts.1
                }
                Prop::Largest
                | Prop::Carried
                | Prop::Burst
                | Prop::Race
                | Prop::KeyScope
                | Prop::Authority
                | Prop::Faults
                | Prop::Expiry => {
                    counts.2 += 1;
                    (2 << 32) + counts.2
                }
                // Named, not `_`: a new property must choose its count, or it would move these.
                Prop::Valid(_)
                | Prop::Mutated(..)
                | Prop::Cursor
                | Prop::Idempotency
                | Prop::Precondition => {
                    counts.0 += 1;
                    counts.0 - 1
                }
            })
            .collect();
        let mut done = vec![false; plan.len()];
        for round in 0..MAX_ROUNDS {
            let before = self.caller.meter.borrow().calls;
            for (i, prop) in plan.iter().enumerate() {
                if self.caller.spent() || self.broken.borrow().is_some() {
                    return;
                }
                if done[i] || (round > 0 && prop.once()) {
                    continue;
                }
                // A sequence's first call may be refused (an ID of the foreign tenant): two tries.
                let cases = match (prop, round) {
                    (Prop::Valid(_) | Prop::Cursor | Prop::Idempotency | Prop::Precondition, 0) => 2,
                    // Rows of the tables: `access::sweep` takes one of each tool a round.
                    (Prop::Access(_) | Prop::Transport, _) => 1,
                    // Six rows a round, three calls each.
                    (Prop::CursorBinding, _) => 6,
                    // Bounds are where servers go wrong: a second draw before other mutations.
                    (Prop::Mutated(_, t), 0) if t.priority() == 0 => 2,
                    (_, 0) => 1,
                    (Prop::Cursor | Prop::Idempotency | Prop::Precondition | Prop::UnknownTool, _) => 1,
                    _ => 2,
                };
                let rng = rng(self.seed, round, keys[i]);
                done[i] = match prop {
                    Prop::Valid(t) => self.run_case_property(*t, None, cases, rng),
                    Prop::Mutated(t, target) => self.run_case_property(*t, Some(target), cases, rng),
                    Prop::Cursor => sequences::cursor(self, cases, rng, None),
                    Prop::Idempotency => sequences::idempotency(self, cases, rng, None),
                    Prop::Precondition => sequences::precondition(self, cases, rng, None),
                    Prop::UnknownTool => sequences::unknown_tool(self, cases, rng, None),
                    Prop::CursorBinding => sequences::cursor_binding(self, cases, round, rng, None),
                    Prop::Access(group) => access::sweep(self, *group, cases, round, rng, None),
                    // Deterministic: once is all there is to do.
                    Prop::Transport => {
                        transport::run(self, None);
                        true
                    }
                    Prop::Largest => races::largest(self, rng, None),
                    Prop::Carried => races::carried_cursor(self, rng, None),
                    Prop::Burst => races::burst(self, 1, rng, None),
                    Prop::Race => races::race(self, 1, rng, None),
                    Prop::KeyScope => races::key_scope(self, 1, rng, None),
                    Prop::Authority => races::authority(self, rng, None),
                    Prop::Faults => races::faults(self, rng, None),
                    Prop::Expiry => races::expiry(self, rng, None),
                    Prop::Ranges => self.ranges(rng),
                    Prop::Bounds => rows::run(self, rng, None),
                    Prop::Surfaces => transport::run_surfaces(self),
                };
            }
            if self.caller.meter.borrow().calls == before {
                return;
            }
        }
    }

    fn run_case_property(&self, tool: usize, target: Option<&Target>, cases: u32, rng: TestRng) -> bool {
        let t = &self.tools[tool];
        let strategy = match target {
            None => strategy::valid(&t.schema, self.resolver.clone()),
            Some(target) => strategy::mutated(&t.schema, target, &self.vocabulary, self.resolver.clone()),
        };
        self.call_property(t, strategy, cases, MAX_SHRINK_ITERS, rng)
    }

    /// LIM-1 on every tool whose input has a date range (`rules::ranges`): valid arguments on
    /// the busy restaurant with the range one day too long, then reversed; each must be refused
    /// (a success is filed under LIM-1 by `oracle::judge`). Replayed as the single call it is.
    fn ranges(&self, rng: TestRng) -> bool {
        use proptest::strategy::ValueTree as _;
        let ctx = self.caller.ctx;
        let busy = ctx.id_map.to_server(&ctx.dataset.landmarks.busy_restaurant);
        let mut failed = false;
        for t in self.tools.iter().filter(|t| crate::rules::ranges::has_range(&t.schema)) {
            let mut runner = TestRunner::new_with_rng(Config::default(), rng.clone());
            let Ok(tree) = strategy::valid(&t.schema, self.resolver.clone()).new_tree(&mut runner) else {
                continue;
            };
            let mut base = tree.current().args;
            if t.has_property("restaurant_id") {
                base["restaurant_id"] = Value::from(busy.clone());
            }
            for args in crate::rules::ranges::past_edges(&base) {
                let case = Case { args, target: None };
                failed |= self.call_property(t, Just(case).boxed(), 1, 0, rng.clone());
            }
        }
        failed
    }
}
