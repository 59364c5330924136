//! The engine under every property: the fuzzer's caller, the tools it fuzzes, the ID resolver,
//! and proptest's run of one property (`run_property`: cases, shrinking, the locked clause), which
//! files each failure as a finding. The plan of properties sits above it (`fuzz`).

use std::cell::{Cell, RefCell};
use std::fmt::Debug;
use std::sync::Arc;

use proptest::strategy::{BoxedStrategy, Just, Strategy as _};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::Value;

use super::caller::Caller;
use super::cases::{AccessCase, Group, Replay};
use super::observed::{self, Observed, PERSONA};
use super::report::{self, Finding, FuzzReport};
use super::schema::{Target, Tool};
use super::strategy::{self, Case, Resolver};
use super::{ids, oracle};
use crate::context::RunContext;

/// Shrinking steps per finding at most (each is a call, or a sequence of calls).
pub const MAX_SHRINK_ITERS: u32 = 48;

pub struct Engine<'a> {
    pub caller: Caller<'a>,
    pub tools: Vec<Tool>,
    pub resolver: Resolver,
    pub vocabulary: Vec<String>,
    pub seed: u64,
    pub writes: bool,
    /// The access tables' rows this server can be called with (personas with a token).
    pub access: Vec<AccessCase>,
    pub(super) findings: RefCell<Vec<Finding>>,
    /// Why the fuzzer itself failed, if it did: the run is then a configuration error.
    pub(super) broken: RefCell<Option<String>>,
}

impl<'a> Engine<'a> {
    pub fn new(ctx: &'a RunContext, caller: Caller<'a>, seed: u64, writes: bool) -> Engine<'a> {
        let tools: Vec<Tool> =
            ctx.published.tools.iter().filter_map(Tool::new).filter(|t| writes || !t.writes).collect();
        let schemas: Vec<&Value> = tools.iter().map(|t| &t.schema).collect();
        let vocabulary = strategy::vocabulary(&schemas);
        let pools = Arc::new(ids::Pools::new(&ctx.dataset, &ctx.id_map, PERSONA));
        Engine {
            // The access tables' rows: set by whoever plans the run (`access::cases`).
            access: Vec::new(),
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

    pub fn access_rows(&self, group: Group) -> Vec<AccessCase> {
        self.access.iter().filter(|c| c.group == group).cloned().collect()
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
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

    pub(super) fn into_report(self, budget: String) -> FuzzReport {
        // LIM-2 faults of calls made outside a property (none is shrunk).
        for o in self.caller.take_pending() {
            self.file(o, false);
        }
        let meter = self.caller.meter.borrow();
        FuzzReport {
            seed: self.seed,
            budget,
            calls: meter.calls,
            elapsed_ms: meter.elapsed().as_millis(),
            read_only: !self.writes,
            findings: self.findings.take(),
            blocked: self.caller.unjudged.blocked(),
            unjudged_calls: self.caller.unjudged.calls(),
            rules: report::RulesRound::default(),
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
