//! Assembles cucumber (our parser, the step collection, hooks, our writer) and runs the features
//! against a prepared [`RunContext`], giving back the clause matrix.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::rc::Rc;
use std::sync::Arc;

use cucumber::runner::ScenarioType;
use cucumber::{ArbitraryWriter as _, Cucumber, World as _, WriterExt as _, cli, writer};
use futures::FutureExt as _;

use crate::context::{RunContext, RunOptions};
use crate::features::{ALLOW_SKIPPED, FeatureParser, FeatureSource};
use crate::judge::RuleLevel;
use crate::profile::Profile;
use crate::report::{
    self, Collector, Finding, Report, ReportHeader, Reporter, RunLog, ScenarioExtras, scenario_key,
};
use crate::world::ConformanceWorld;

/// cucumber's CLI (filters, runner, console) with ours as the custom part.
pub type CucumberOpts<Custom> =
    cli::Opts<cli::Empty, cucumber::runner::basic::Cli, writer::basic::Cli, Custom>;

/// Where the run's side outputs go; files are opened by the caller so a bad path fails early.
pub struct Outputs<Out> {
    pub console: Out,
    pub junit: Option<File>,
    pub cucumber_json: Option<File>,
}

/// Scenarios run side by side by default: most of a run's time against a distant server is
/// waiting. Conflicting scenarios never overlap (`crate::schedule`); `--concurrency N`
/// overrides, `--concurrency 1` runs one at a time.
const DEFAULT_CONCURRENCY: usize = 32;

/// What a scenario touches, from its tags and steps (background included).
pub fn scenario_needs(
    feature: &cucumber::gherkin::Feature,
    rule: Option<&cucumber::gherkin::Rule>,
    scenario: &cucumber::gherkin::Scenario,
    personas: &[crate::schedule::Persona],
) -> crate::schedule::Needs {
    let tags = crate::features::scenario_tags(feature, rule, scenario);
    let steps: Vec<String> = feature
        .background
        .iter()
        .chain(rule.iter().flat_map(|r| &r.background))
        .flat_map(|b| &b.steps)
        .chain(&scenario.steps)
        .map(|s| s.value.clone())
        .collect();
    crate::schedule::Needs::of(&tags, &steps, personas)
}

pub async fn run_features<Out, Custom>(
    ctx: Arc<RunContext>,
    source: FeatureSource,
    opts: CucumberOpts<Custom>,
    outputs: Outputs<Out>,
) -> Report
where
    Out: io::Write + 'static,
    Custom: clap::Args,
{
    let capabilities = ctx.capabilities.clone();
    let collector = Rc::new(RefCell::new(Collector::new(capabilities.clone())));
    let log = Rc::new(RefCell::new(RunLog::default()));

    let console = writer::Basic::raw(outputs.console, writer::Coloring::Auto, 0);
    let reporter = Reporter::new(console, outputs.junit, outputs.cucumber_json, Rc::clone(&collector));
    // An unmatched step fails its scenario, unless the scenario allows skipping (the parser
    // tags scenarios skipped for a missing capability so).
    let writer = reporter
        .fail_on_skipped_with(
            |_: &cucumber::gherkin::Feature,
             _: Option<&cucumber::gherkin::Rule>,
             sc: &cucumber::gherkin::Scenario| { !sc.tags.iter().any(|t| t == ALLOW_SKIPPED) },
        )
        .normalized();

    let run_start = std::time::Instant::now();
    let deadline = run_start + std::time::Duration::from_secs(ctx.profile.deadline_s);
    let locks = Arc::new(crate::schedule::Locks::default());
    let claims = Arc::new(crate::schedule::Claims::default());
    for witness in crate::matrices::refusal_witnesses(&ctx.dataset) {
        claims.claim(&witness);
    }
    let personas = Arc::new(crate::schedule::personas(&ctx.dataset));
    let rates = Arc::new(rate_phase(&source, &capabilities, &personas).await);
    let audit_start = audit_baseline(&ctx).await;
    let before_ctx = Arc::clone(&ctx);
    let after_ctx = Arc::clone(&ctx);
    let after_log = Rc::clone(&log);
    let after_rates = Arc::clone(&rates);
    let cucumber = Cucumber::<ConformanceWorld, _, _, _, _, cli::Empty>::custom(
        FeatureParser { capabilities: capabilities.clone() },
        cucumber::runner::Basic::default(),
        writer,
    )
    .steps(ConformanceWorld::collection())
    .max_concurrent_scenarios(DEFAULT_CONCURRENCY)
    // Scenarios that change the whole server run in a phase of their own, one at a time, rather
    // than each draining the scenarios around it.
    .which_scenario({
        let personas = Arc::clone(&personas);
        let rates = Arc::clone(&rates);
        // Called once for every scenario that will run, as its feature is queued: the bursts'
        // features are queued last, so every user of their pairs is known before one starts.
        move |feature, rule, scenario| {
            let needs = scenario_needs(feature, rule, scenario, &personas);
            rates.register(&rate_key(feature, scenario), &needs);
            if needs.whole_server() { ScenarioType::Serial } else { ScenarioType::Concurrent }
        }
    })
    .before(move |feature, rule, scenario, world| {
        let ctx = Arc::clone(&before_ctx);
        let (locks, claims, personas) = (Arc::clone(&locks), Arc::clone(&claims), Arc::clone(&personas));
        let rates = Arc::clone(&rates);
        async move {
            world.queued_at = Some(std::time::Instant::now());
            let tags = crate::features::scenario_tags(feature, rule, scenario);
            let needs = scenario_needs(feature, rule, scenario, &personas);
            // A burst goes once the scenarios using its pairs are done, on fresh windows.
            if !needs.exhausts.is_empty() {
                fresh_windows(&ctx, &rates, &locks, deadline).await;
            }
            // Wait until no conflicting scenario runs (crate::schedule).
            world.whole_server = needs.whole_server();
            world.held = Some(locks.acquire(&needs).await);
            world.started_at = Some(std::time::Instant::now());
            world.install(ctx, &scenario.name, &tags);
            world.deadline = Some(deadline);
            world.claims = Some(claims);
        }
        .boxed_local()
    })
    .after(move |feature, _rule, scenario, _finished, world| {
        let log = Rc::clone(&after_log);
        let ctx = Arc::clone(&after_ctx);
        after_rates.finished(&rate_key(feature, scenario));
        async move {
            let Some(world) = world else { return };
            world.give_back_sessions();
            {
                let mut log = log.borrow_mut();
                let key = scenario_key(feature, scenario);
                let ext_differences =
                    world.ext_differences.iter().map(|(choice, what)| format!("{choice}: {what}")).collect();
                log.scenarios.insert(
                    key,
                    ScenarioExtras {
                        request_ids: world.request_ids(),
                        ext_differences,
                        exchanges: world.history.len() + world.library.as_ref().map_or(0, |l| l.exchanges),
                        timing: None,
                    },
                );
                // What the judge found on the scenario's exchanges: one finding per clause and
                // level, with how often; every count goes to the run's evidence.
                for (clause, tally) in &world.tally.clauses {
                    for level in [RuleLevel::Seed, RuleLevel::Ext] {
                        let broken =
                            if level == RuleLevel::Seed { tally.broken_seed } else { tally.broken_ext };
                        let Some((_, detail, _)) = tally.kept.iter().find(|(l, _, _)| *l == level) else {
                            continue;
                        };
                        let more =
                            if broken > 1 { format!(" (and {} more)", broken - 1) } else { String::new() };
                        log.findings.push(Finding {
                            clause: (*clause).to_owned(),
                            level,
                            detail: format!("{}: {detail}{more}", scenario.name),
                        });
                    }
                }
                log.evidence.merge(&world.tally);
                // ENV-5: a code of the server's own has one category and flag in the whole run.
                for (code, category, retryable, rid) in &world.own_codes {
                    let first = log
                        .own_codes
                        .entry(code.clone())
                        .or_insert_with(|| (*category, *retryable, rid.clone()))
                        .clone();
                    let broken = ((first.0, first.1) != (*category, *retryable)).then(|| {
                        format!(
                            "{}: {code} with category {}, retryable {retryable} ({rid}); earlier \
                             category {}, retryable {} ({})",
                            scenario.name,
                            category.as_str(),
                            first.0.as_str(),
                            first.1,
                            first.2
                        )
                    });
                    log.evidence.note("ENV-5", RuleLevel::Seed, broken.clone());
                    if let Some(detail) = broken {
                        log.findings.push(Finding {
                            clause: "ENV-5".to_owned(),
                            level: RuleLevel::Seed,
                            detail,
                        });
                    }
                }
                // ENV-2: a request_id is unique in the whole run, not only in a scenario.
                for id in world.request_ids() {
                    let broken = (!log.request_ids.insert(id.clone())).then(|| {
                        format!("{}: request_id {id} was already given to another call", scenario.name)
                    });
                    log.evidence.note("ENV-2", RuleLevel::Ext, broken.clone());
                    if let Some(detail) = broken {
                        log.findings.push(Finding {
                            clause: "ENV-2".to_owned(),
                            level: RuleLevel::Ext,
                            detail,
                        });
                    }
                }
            }
            // A scenario that changed the whole server through the control API leaves it as it
            // found it. Ordinary writes are not undone: the suite tolerates what they add, as it
            // must on a server without a control API, and a reset would disturb scenarios
            // running beside them.
            let mut reset = Ok(());
            if world.dirty
                && world.whole_server
                && let Some(control) = &ctx.control
            {
                // Reset also clears faults, deadlines and the clock (docs/CONTROL_API.md).
                reset = control.reset().await;
                if let (Ok(()), Some(held)) = (&reset, &world.held) {
                    held.reset_done();
                }
            } else if let Some(control) = &ctx.control {
                // A scenario holding only the personas of a user whose membership it revoked
                // gives the membership back, instead of resetting what others are using.
                for (user, org) in std::mem::take(&mut world.revoked) {
                    if reset.is_ok() {
                        reset = control.restore_membership(&user, &org).await;
                    }
                }
            }
            // Let waiting scenarios go now: cucumber keeps a failed scenario's World alive in
            // its failure event, and with it anything the World still holds.
            world.held = None;
            let since_start = |at: Option<std::time::Instant>| {
                at.map_or(0, |at| {
                    u64::try_from(at.saturating_duration_since(run_start).as_millis()).unwrap_or(u64::MAX)
                })
            };
            let timing = crate::report::ScenarioTiming {
                queued_ms: since_start(world.queued_at),
                started_ms: since_start(world.started_at),
                finished_ms: since_start(Some(std::time::Instant::now())),
            };
            if let Some(extras) = log.borrow_mut().scenarios.get_mut(&scenario_key(feature, scenario)) {
                extras.timing = Some(timing);
            }
            if let Err(e) = reset {
                panic!("resetting the server (or restoring a membership) after the scenario failed: {e:#}");
            }
        }
        .boxed_local()
    })
    .with_cli(opts);

    let mut writer = cucumber.run(source.clone()).await;
    let audit_not_run = match audit(&ctx, audit_start).await {
        Ok(notes) => {
            let mut log = log.borrow_mut();
            for note in notes {
                log.evidence.note(note.clause, RuleLevel::Seed, note.difference.clone());
                if let Some(detail) = note.difference {
                    log.findings.push(Finding {
                        clause: note.clause.to_owned(),
                        level: RuleLevel::Seed,
                        detail: format!("{}: {detail}", crate::audit::FINDING),
                    });
                }
            }
            None
        }
        Err(why) => Some(why),
    };

    let scenarios = collector.borrow().results(&log.borrow());
    let parse_errors = collector.borrow().parse_errors.clone();
    let findings = log.borrow().findings.clone();
    let evidence = log.borrow().evidence.clone();
    let header = ReportHeader {
        endpoint: ctx.endpoint.clone(),
        features: source.describe(),
        capabilities,
        level: ctx.profile.level,
        require_all: ctx.options.require_all,
    };
    let mut report = Report::build(&scenarios, &findings, &evidence, header, parse_errors);
    // Tenths of a second: a wait of a test's 300 ms still shows.
    let waited = (ctx.rate_waits.total().as_secs_f64() * 10.0).round() / 10.0;
    report.timing.waited_for_rate_windows_s = waited;
    report.oracle_not_run = ctx.oracle.not_run.clone();
    report.audit_not_run = audit_not_run;
    let waited = format!("waited for rate windows: {waited:.0} s\n");
    let oracle = match &report.oracle_not_run {
        Some(why) => format!("differential oracle: skipped (not a pass): {why}\n"),
        None => String::new(),
    };
    let audited = match &report.audit_not_run {
        Some(why) => format!("audit of untouched records: skipped (not a pass): {why}\n"),
        None => String::new(),
    };
    writer.write(crate::report::console_matrix(&report) + &waited + &oracle + &audited).await;
    report
}

/// A scenario's name for the rate phase (its report key, in one string).
fn rate_key(feature: &cucumber::gherkin::Feature, scenario: &cucumber::gherkin::Scenario) -> String {
    format!("{:?}", scenario_key(feature, scenario))
}

/// The rate phase of the run: every pair a scenario of the features exhausts (before cucumber's
/// filters: a pair too many only makes a burst wait for no one).
async fn rate_phase(
    source: &FeatureSource,
    capabilities: &crate::context::Capabilities,
    personas: &[crate::schedule::Persona],
) -> crate::schedule::RatePhase {
    use cucumber::Parser as _;
    use futures::StreamExt as _;
    let parser = FeatureParser { capabilities: capabilities.clone() };
    let features: Vec<_> = parser.parse(source.clone(), cli::Empty).collect().await;
    let mut exhausted = Vec::new();
    for feature in features.iter().flatten() {
        let rules = feature.rules.iter().flat_map(|r| r.scenarios.iter().map(move |s| (Some(r), s)));
        for (rule, scenario) in feature.scenarios.iter().map(|s| (None, s)).chain(rules) {
            let needs = scenario_needs(feature, rule, scenario, personas);
            exhausted.extend(needs.exhausts.into_iter().map(|w| w.pair));
        }
    }
    crate::schedule::RatePhase::new(exhausted)
}

/// The control API can move the server's clock: windows an earlier run filled (its bursts came
/// last) are past before this one starts, instead of each scenario waiting for them.
async fn fresh_windows_at_start(ctx: &RunContext) {
    let Some(control) = ctx.control.as_ref().filter(|_| can_move_clock(ctx)) else { return };
    if let Err(e) = control.advance_clock(RATE_WINDOW_S).await {
        eprintln!("could not move the server's clock past earlier runs' rate windows: {e:#}");
    }
}

/// What the audit of untouched records compares the end of the run with. With a control API the
/// data is reset first (one round trip, and every run then starts from the same state): the
/// published dataset is the baseline. Without one, a first look at every record, taken before any
/// scenario writes, beside the clock's move.
async fn audit_baseline(ctx: &RunContext) -> Result<crate::audit::Snapshot, String> {
    // The reset also forgets every rate window: no clock to move past earlier runs' then.
    if let Some(control) = &ctx.control
        && control.reset().await.is_ok()
    {
        // `audit` reads the dataset then: the reset is in the call log.
        return Ok(crate::audit::Snapshot::default());
    }
    let (_, first) = futures::join!(fresh_windows_at_start(ctx), crate::audit::take(ctx, false));
    first
}

/// The audit of untouched records (`crate::audit`): against the first look, or against the
/// published dataset when the control API reset the data (at the start, or during the run).
async fn audit(
    ctx: &RunContext,
    start: Result<crate::audit::Snapshot, String>,
) -> Result<Vec<crate::audit::Note>, String> {
    let start = start.map_err(|e| format!("before the run: {e}"))?;
    let expected = if ctx.calls.last_data_reset().is_some() {
        if let Some(why) = &ctx.oracle.not_run {
            return Err(format!("the control API reset the data during the run, and {why}"));
        }
        crate::audit::from_dataset(&ctx.dataset, &crate::audit::readers(ctx))
    } else {
        start
    };
    let now = crate::audit::take(ctx, true).await.map_err(|e| format!("after the run: {e}"))?;
    Ok(crate::audit::against(ctx, &expected, &now))
}

/// The longest rate window the suite waits for, with a second to spare (the reference's is 60 s).
const RATE_WINDOW_S: u64 = 61;

fn can_move_clock(ctx: &RunContext) -> bool {
    ctx.capabilities.control_api && ctx.capabilities.control_features.iter().any(|f| f == "clock")
}

/// Before a burst (`needs.exhausts`): every scenario using one of its pairs has finished
/// ([`crate::schedule::RatePhase`]), so the run's calls on the pairs are all known; then, with a
/// control API that moves the clock, the windows those scenarios opened are made fresh, the clock
/// moved past them once for the whole phase with nothing else running. With no clock to move
/// the burst starts at once: its verdict counts the run's earlier calls on its pair and tool
/// (`rate_verdict::judge_after`, `steps::load`).
async fn fresh_windows(
    ctx: &Arc<RunContext>,
    rates: &crate::schedule::RatePhase,
    locks: &crate::schedule::Locks,
    deadline: std::time::Instant,
) {
    rates.users_done(deadline).await;
    if let Some(control) = ctx.control.as_ref().filter(|_| can_move_clock(ctx)) {
        rates
            .clear_once(|| async {
                let _alone = locks.acquire(&crate::schedule::Needs::whole_server_only()).await;
                match control.advance_clock(RATE_WINDOW_S).await {
                    Ok(()) => true,
                    Err(e) => {
                        eprintln!("could not move the server's clock past the rate windows: {e:#}");
                        false
                    }
                }
            })
            .await;
    }
}

/// What a run came to.
#[derive(Debug)]
pub struct Outcome {
    pub code: u8,
    /// The one-line reason of an exit code 2.
    pub error: Option<String>,
    pub report: Option<Report>,
}

impl Outcome {
    pub(crate) fn config_error(e: anyhow::Error) -> Outcome {
        // One line: the chain joined, newlines folded.
        let text = format!("{e:#}").replace('\n', " ");
        Outcome { code: 2, error: Some(text), report: None }
    }
}

/// Preflight, then the features, on a runtime of their own. `Err`: exit code 2.
pub fn run_profile<Out: io::Write + 'static, Custom: clap::Args>(
    profile: Profile,
    options: RunOptions,
    source: FeatureSource,
    opts: CucumberOpts<Custom>,
    outputs: Outputs<Out>,
) -> anyhow::Result<Report> {
    // cucumber's run future is !Send: one thread, one current-thread runtime.
    let (runtime, mut ctx) = crate::preflight::prepare_on_own_runtime(profile)?;
    ctx.options = options;
    let header = crate::report::ReportHeader {
        endpoint: ctx.endpoint.clone(),
        features: source.describe(),
        capabilities: ctx.capabilities.clone(),
        level: ctx.profile.level,
        require_all: options.require_all,
    };
    if let Some(fault) = &ctx.broken_protocol {
        let report = Report::protocol_broken(header, fault.clause, &fault.detail);
        let mut console = outputs.console;
        for line in report::verdict_lines(&report) {
            let _ = writeln!(console, "{line}");
        }
        let _ = writeln!(console, "{}", fault.detail);
        return Ok(report);
    }
    if !options.run_anyway
        && let Some(reason) = not_a_contract_server(&ctx)
    {
        // Hundreds of failed scenarios would say less than one line.
        let report = Report::not_a_contract_server(header, &reason);
        let mut console = outputs.console;
        for line in report::verdict_lines(&report) {
            let _ = writeln!(console, "{line}");
        }
        let _ = writeln!(console, "(--run-anyway runs every scenario all the same)");
        return Ok(report);
    }
    Ok(runtime.block_on(run_features(Arc::new(ctx), source, opts, outputs)))
}

/// Why the server is not a Chataigne server at all, if it lists under half of the contract's
/// tools (a typo in one name is a PROTO-3/ABS-1 failure among others, not this).
fn not_a_contract_server(ctx: &crate::context::RunContext) -> Option<String> {
    use chataigne_contract::ToolName;
    let listed: Vec<&str> = ctx
        .published
        .tools
        .iter()
        .filter_map(|t| t.get("name").and_then(serde_json::Value::as_str))
        .collect();
    let missing: Vec<&str> =
        ToolName::ALL.iter().map(|t| t.as_str()).filter(|t| !listed.contains(t)).collect();
    (missing.len() * 2 > ToolName::ALL.len()).then(|| {
        format!(
            "not a Chataigne server: tools/list lacks {} of the contract's {} tools ({})",
            missing.len(),
            ToolName::ALL.len(),
            missing.join(", ")
        )
    })
}
