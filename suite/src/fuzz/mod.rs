//! `fuzz`: stateful, contract-aware fuzzing of an MCP server. Arguments are drawn from each
//! tool's published input schema (valid ones, and ones with a single mutation) with proptest,
//! every answer is judged by the contract's rules (`oracle`), a few stateful sequences check
//! cursors, idempotency and preconditions (`sequences`), and each failure is shrunk by proptest
//! to a minimal reproduction (`report`). A seed reproduces a run against the same server.
//!
//! Files: `budget` (how much to do), `ids` (dataset IDs by argument), `schema` (what to
//! generate from, which mutations, which clause), `strategy` (proptest strategies), `caller`
//! (synchronous calls, budget, rate limits), `oracle` (judging a call), `sequences`, `races`
//! (across sessions, clients and users; the largest records; the control API), `report`.

pub mod access;
pub mod budget;
pub mod caller;
pub mod html;
pub mod ids;
pub mod junit;
pub mod observed;
pub mod oracle;
pub mod races;
pub mod rates;
pub mod replay;
pub mod report;
pub mod schema;
pub mod sequences;
pub mod strategy;
pub mod transcript;
pub mod transport;

use std::cell::{Cell, RefCell};
use std::fmt::Debug;
use std::io::Write;
use std::sync::Arc;

use anyhow::Context as _;
use proptest::strategy::{BoxedStrategy, Just, Strategy as _};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::Value;

use self::budget::{Budget, Meter};
use self::caller::Caller;
use self::oracle::Fault;
use self::report::{Finding, FuzzReport};
use self::schema::{Target, Tool};
use self::strategy::{Case, Resolver};
pub use self::transcript::Replay;
use crate::client::Exchange;
use crate::context::RunContext;
use crate::profile::Profile;

/// The persona calls are made as: the owner reaches every tool of the home organization.
pub const PERSONA: &str = "owner";
/// Shrinking steps per finding at most (each is a call, or a sequence of calls).
const MAX_SHRINK_ITERS: u32 = 48;
/// Rounds over every property at most: a budget of time on a fast server ends long before.
const MAX_ROUNDS: u64 = 10_000;

#[derive(Debug, Clone)]
pub struct Settings {
    pub seed: u64,
    pub budget: Budget,
    /// The server's state is thrown away after the run (`--embedded`): writes may be fuzzed
    /// without a control API.
    pub disposable: bool,
}

/// One failure on one call, before it becomes a finding.
#[derive(Debug, Clone)]
pub struct Observed {
    pub fault: Fault,
    /// Who made the failing call.
    pub persona: String,
    pub tool: String,
    pub args: Value,
    pub mutation: Option<String>,
    pub ex: Exchange,
    /// The calls of a sequence before this one.
    pub before: Vec<Call>,
    /// The case that failed, as `replay` runs it again (set by `run_property`).
    pub replay: Option<Replay>,
    /// The request is not a tools/call the finding can build again from `tool` and `args` (a
    /// transport probe): the request is the one the exchange sent, headers and all.
    pub raw: bool,
    /// The reference choice the failure is a difference from: counted at the full level only.
    pub choice: Option<&'static str>,
}

impl Observed {
    pub fn new(fault: Fault, persona: &str, tool: &str, args: &Value, ex: &Exchange) -> Observed {
        Observed {
            fault,
            persona: persona.to_owned(),
            tool: tool.to_owned(),
            args: args.clone(),
            mutation: None,
            ex: ex.clone(),
            before: Vec::new(),
            replay: None,
            raw: false,
            choice: None,
        }
    }
}

/// One call of a sequence, and its answer (`None`: the budget ran out before it).
#[derive(Debug, Clone)]
pub struct Call {
    pub persona: String,
    pub tool: String,
    pub args: Value,
    pub ex: Option<Exchange>,
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
    let meter = Meter::new(settings.budget);
    let caller = Caller::new(&ctx, &runtime, PERSONA, meter)?;
    let engine = Engine::new(&ctx, caller, settings.seed, writes);
    engine.fuzz();
    if writes && let Some(control) = &ctx.control {
        // The fuzzer's writes must not leak into the next run (or the next suite run).
        if let Err(e) = runtime.block_on(control.reset()) {
            let _ = writeln!(console, "warning: control API reset after fuzzing failed: {e:#}");
        }
    }
    if let Some(reason) = engine.broken.take() {
        anyhow::bail!("the fuzzer failed (a bug of the suite, please report it): {reason}");
    }
    let report = engine.into_report(settings);
    report.print(console);
    Ok(report)
}

pub struct Engine<'a> {
    pub caller: Caller<'a>,
    pub tools: Vec<Tool>,
    pub resolver: Resolver,
    pub vocabulary: Vec<String>,
    pub seed: u64,
    pub writes: bool,
    /// The access tables' rows this server can be called with (personas with a token).
    pub access: Vec<access::AccessCase>,
    findings: RefCell<Vec<Finding>>,
    /// Why the fuzzer itself failed, if it did: the run is then a configuration error.
    broken: RefCell<Option<String>>,
}

impl<'a> Engine<'a> {
    pub fn new(ctx: &'a RunContext, caller: Caller<'a>, seed: u64, writes: bool) -> Engine<'a> {
        let tools: Vec<Tool> =
            ctx.published.tools.iter().filter_map(Tool::new).filter(|t| writes || !t.writes).collect();
        let schemas: Vec<&Value> = tools.iter().map(|t| &t.schema).collect();
        let vocabulary = strategy::vocabulary(&schemas);
        let pools = Arc::new(ids::Pools::new(&ctx.dataset, &ctx.id_map, PERSONA));
        let access = access::cases(ctx, &caller, &tools);
        Engine {
            access,
            caller,
            resolver: Resolver { pools, salt: seed },
            tools,
            vocabulary,
            seed,
            writes,
            findings: RefCell::new(Vec::new()),
            broken: RefCell::new(None),
        }
    }

    pub fn access_rows(&self, group: access::Group) -> Vec<access::AccessCase> {
        self.access.iter().filter(|c| c.group == group).cloned().collect()
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

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

    /// One call of `tool` per case, judged by every rule of a single call.
    pub fn call_property(
        &self,
        t: &Tool,
        strategy: BoxedStrategy<Case>,
        cases: u32,
        shrink_iters: u32,
        rng: TestRng,
    ) -> bool {
        let replay = |case: &Case| Replay::Call {
            persona: self.caller.persona.clone(),
            tool: t.name.clone(),
            case: case.clone(),
        };
        self.run_property(strategy, cases, shrink_iters, rng, &replay, &|case| {
            let Some(ex) = self.caller.call(&t.name, &case.args) else { return Vec::new() };
            let mut faults = oracle::judge(self.caller.ctx, t, case, &ex, self.caller.token());
            faults.extend(oracle::access(&self.resolver.pools, &t.name, &case.args, &ex));
            let mutation = case.target.as_ref().map(Target::describe);
            faults
                .into_iter()
                .map(|fault| Observed {
                    mutation: mutation.clone(),
                    ..Observed::new(fault, &self.caller.persona, &t.name, &case.args, &ex)
                })
                .collect()
        })
    }

    /// Each of `rows` once, each already minimal (one case, no shrinking), until the budget is
    /// spent: the tables' rows and the fixed cases of the sequences. Returns whether one failed.
    pub fn run_rows<T: Clone + Debug + 'static>(
        &self,
        rows: Vec<T>,
        rng: TestRng,
        replay: &dyn Fn(&T) -> Replay,
        eval: &dyn Fn(&T) -> Vec<Observed>,
    ) -> bool {
        let mut failed = false;
        for row in rows {
            if self.caller.spent() {
                break;
            }
            failed |= self.run_property(Just(row).boxed(), 1, 0, rng.clone(), replay, eval);
        }
        failed
    }

    /// Run one property through proptest, so a failure is shrunk for real. The first failure
    /// locks the clause: shrinking keeps an input only while it still breaks that clause.
    /// Returns whether the property failed.
    pub fn run_property<T: Clone + Debug>(
        &self,
        strategy: BoxedStrategy<T>,
        cases: u32,
        shrink_iters: u32,
        rng: TestRng,
        replay: &dyn Fn(&T) -> Replay,
        eval: &dyn Fn(&T) -> Vec<Observed>,
    ) -> bool {
        let config = Config {
            cases,
            max_shrink_iters: shrink_iters,
            failure_persistence: None,
            max_local_rejects: 0,
            max_global_rejects: 0,
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(config, rng);
        let locked: Cell<Option<&'static str>> = Cell::new(None);
        let first: RefCell<Vec<Observed>> = RefCell::new(Vec::new());
        let last: RefCell<Option<Observed>> = RefCell::new(None);
        let result = runner.run(&strategy, |value| {
            if self.caller.spent() {
                // Nothing can be judged: the input counts as passing, and a shrink stops here.
                return Ok(());
            }
            let mut observed = eval(&value);
            // A refusal for the rate the caller gave up on, judged by LIM-2's rules.
            observed.extend(self.caller.take_pending());
            for o in &mut observed {
                o.replay = Some(replay(&value));
            }
            let hit = match locked.get() {
                None => observed.first(),
                Some(clause) => observed.iter().find(|o| o.fault.clause == clause),
            };
            let Some(hit) = hit.cloned() else { return Ok(()) };
            if locked.get().is_none() {
                locked.set(Some(hit.fault.clause));
                *first.borrow_mut() = observed.clone();
            }
            let reason = hit.fault.detail.clone();
            *last.borrow_mut() = Some(hit);
            Err(TestCaseError::fail(reason))
        });
        let reason = match result {
            Ok(()) => return false,
            Err(TestError::Fail(reason, _)) => reason,
            Err(TestError::Abort(reason)) => reason,
        };
        let Some(minimal) = last.into_inner() else {
            // A failure no rule filed: the fuzzer's own code panicked (proptest catches panics).
            self.broken.borrow_mut().get_or_insert_with(|| reason.to_string());
            return true;
        };
        let clause = minimal.fault.clause;
        // A budget spent while shrinking leaves the smallest input found so far, not a minimum.
        let complete = !self.caller.spent();
        self.file(minimal, complete);
        // Other clauses the first failing call broke, as found (not shrunk).
        let mut others = first.into_inner();
        others.retain(|o| o.fault.clause != clause);
        others.dedup_by_key(|o| o.fault.clause);
        for o in others {
            self.file(o, false);
        }
        true
    }

    fn file(&self, o: Observed, shrunk: bool) {
        let mut findings = self.findings.borrow_mut();
        if findings.iter().any(|f| {
            f.clause == o.fault.clause
                && f.tool == o.tool
                && f.mutation == o.mutation
                && f.persona == o.persona
        }) {
            return;
        }
        let ctx = self.caller.ctx;
        let target = report::Target {
            endpoint: &ctx.endpoint,
            stdio: ctx.stdio.is_some(),
            protocol_version: self.caller.protocol_version(),
            seed: self.seed,
        };
        // Every token of the profile is masked in what a finding keeps of the answers.
        let secrets: Vec<&str> = ctx.profile.tokens.values().map(String::as_str).collect();
        findings.push(Finding::new(&target, o, shrunk, &secrets));
    }

    /// Why the fuzzer itself failed, if it did.
    pub fn broken(&self) -> Option<String> {
        self.broken.borrow().clone()
    }

    /// The findings filed so far (a replay reads them).
    pub fn findings(&self) -> Vec<Finding> {
        self.findings.borrow().clone()
    }

    fn into_report(self, settings: &Settings) -> FuzzReport {
        // LIM-2 faults of calls made outside a property (none is shrunk).
        for o in self.caller.take_pending() {
            self.file(o, false);
        }
        let meter = self.caller.meter.borrow();
        FuzzReport {
            seed: self.seed,
            budget: settings.budget.to_string(),
            calls: meter.calls,
            elapsed_ms: meter.elapsed().as_millis(),
            read_only: !self.writes,
            findings: self.findings.take(),
            blocked: self.caller.unjudged.blocked(),
            unjudged_calls: self.caller.unjudged.calls(),
        }
    }

    /// `what` could not be judged, for `reason` (never a pass).
    pub fn block(&self, why: observed::Why, what: &str, reason: String) {
        self.caller.unjudged.block(why, what, reason);
    }
}

/// The generator of one property in one round: a function of the seed alone, so a seed
/// reproduces every case whatever ran before.
pub fn rng(seed: u64, round: u64, index: u64) -> TestRng {
    // splitmix64: well-spread bytes from a few integers.
    let mut state =
        seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}
