//! The cucumber Writer of the suite: it feeds the console writer, the optional JUnit and cucumber
//! JSON writers, and the collector that turns scenario events into [`ScenarioResult`]s.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::rc::Rc;

use cucumber::event::{self, Cucumber, Feature, HookType, Rule, StepError};
use cucumber::gherkin;
use cucumber::writer::{self, Basic, JUnit, Json, Summarize};
use cucumber::{Event, Writer, parser};

use super::{Finding, ScenarioResult, Status};
use crate::context::Capabilities;
use crate::features::ALLOW_SKIPPED;
use crate::world::ConformanceWorld;

/// Identifies a scenario across the after hook and the event stream.
pub type ScenarioKey = (String, usize, String);

pub fn scenario_key(feature: &gherkin::Feature, scenario: &gherkin::Scenario) -> ScenarioKey {
    let path = feature.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| feature.name.clone());
    (path, scenario.position.line, scenario.name.clone())
}

/// What the after hook learns from the World that events do not carry.
#[derive(Debug, Default)]
pub struct RunLog {
    pub scenarios: HashMap<ScenarioKey, ScenarioExtras>,
    pub findings: Vec<Finding>,
    /// Every request_id answered in the run (ENV-2: unique per call).
    pub request_ids: std::collections::HashSet<String>,
}

#[derive(Debug, Default, Clone)]
pub struct ScenarioExtras {
    pub request_ids: Vec<String>,
    pub ext_differences: Vec<String>,
}

/// Scenario events → results.
#[derive(Debug, Default)]
pub struct Collector {
    capabilities: Capabilities,
    running: HashMap<ScenarioKey, ScenarioResult>,
    pub done: Vec<ScenarioResult>,
    pub parse_errors: Vec<String>,
}

impl Collector {
    pub fn new(capabilities: Capabilities) -> Collector {
        Collector { capabilities, ..Default::default() }
    }

    /// The results, with what the after hook logged merged in.
    pub fn results(&self, log: &RunLog) -> Vec<ScenarioResult> {
        let mut out = self.done.clone();
        for s in &mut out {
            let key = (s.feature.clone(), s.line, s.name.clone());
            if let Some(extras) = log.scenarios.get(&key) {
                s.request_ids = extras.request_ids.clone();
                s.ext_differences = extras.ext_differences.clone();
            }
        }
        out
    }

    pub fn handle(&mut self, ev: &parser::Result<Event<Cucumber<ConformanceWorld>>>) {
        let ev = match ev {
            Err(e) => {
                self.parse_errors.push(e.to_string());
                return;
            }
            Ok(ev) => &ev.value,
        };
        let Cucumber::Feature(feature, fev) = ev else { return };
        match fev {
            Feature::Scenario(sc, rev) => self.scenario(feature, None, sc, &rev.event),
            Feature::Rule(rule, Rule::Scenario(sc, rev)) => {
                self.scenario(feature, Some(rule), sc, &rev.event)
            }
            _ => {}
        }
    }

    fn scenario(
        &mut self,
        feature: &gherkin::Feature,
        rule: Option<&gherkin::Rule>,
        sc: &gherkin::Scenario,
        ev: &event::Scenario<ConformanceWorld>,
    ) {
        let key = scenario_key(feature, sc);
        match ev {
            event::Scenario::Started => {
                let tags = crate::features::scenario_tags(feature, rule, sc);
                let result = ScenarioResult {
                    feature: key.0.clone(),
                    name: sc.name.clone(),
                    line: sc.position.line,
                    status: Status::Passed,
                    skip_reason: None,
                    failed_step: None,
                    message: None,
                    ext_choices: tags
                        .iter()
                        .filter_map(|t| t.strip_prefix("ext-"))
                        .map(str::to_owned)
                        .collect(),
                    ext_differences: Vec::new(),
                    request_ids: Vec::new(),
                    tags,
                };
                self.running.insert(key, result);
            }
            event::Scenario::Step(step, event::Step::Failed(_, _, _, err))
            | event::Scenario::Background(step, event::Step::Failed(_, _, _, err)) => {
                if let Some(r) = self.running.get_mut(&key) {
                    let message = step_error(err);
                    // A step that could not read what it needs from another data shape blocks
                    // the scenario's clauses on ENV-7 instead of failing them.
                    let blocked = message.starts_with(crate::world::BLOCKED_BY_SHAPE);
                    let out_of_time = message.starts_with(crate::world::DEADLINE_PASSED);
                    if out_of_time && r.status == Status::Passed {
                        // Not checked, so not a verdict on the server: skipped, with the reason.
                        r.status = Status::Skipped;
                        r.skip_reason = Some(format!("{} before it ran", crate::world::DEADLINE_PASSED));
                        return;
                    }
                    if r.status != Status::Failed {
                        r.status = if blocked { Status::Blocked } else { Status::Failed };
                    }
                    r.failed_step.get_or_insert_with(|| format!("{}{}", step.keyword, step.value));
                    r.message.get_or_insert(message);
                }
            }
            event::Scenario::Step(_, event::Step::Skipped)
            | event::Scenario::Background(_, event::Step::Skipped) => {
                let caps = &self.capabilities;
                if let Some(r) = self.running.get_mut(&key)
                    && r.status == Status::Passed
                {
                    r.status = Status::Skipped;
                    let reason = caps.skip_reason(&r.tags).unwrap_or_else(|| {
                        if r.tags.iter().any(|t| t == ALLOW_SKIPPED) {
                            format!("a step has no definition (@{ALLOW_SKIPPED})")
                        } else {
                            "skipped".to_owned()
                        }
                    });
                    r.skip_reason = Some(reason);
                }
            }
            event::Scenario::Hook(which, event::Hook::Failed(_, info)) => {
                if let Some(r) = self.running.get_mut(&key) {
                    r.status = Status::Failed;
                    let which = match which {
                        HookType::Before => "before",
                        HookType::After => "after",
                    };
                    r.failed_step.get_or_insert_with(|| format!("the {which} hook"));
                    r.message.get_or_insert_with(|| panic_text(info));
                }
            }
            event::Scenario::Finished => {
                if let Some(r) = self.running.remove(&key) {
                    // A retried scenario reports again: its last attempt is the verdict.
                    self.done.retain(|d| (&d.feature, d.line, &d.name) != (&r.feature, r.line, &r.name));
                    self.done.push(r);
                }
            }
            _ => {}
        }
    }
}

fn step_error(err: &StepError) -> String {
    match err {
        StepError::NotFound => {
            "no step definition matches this step (a typo in the feature, or a step not written yet)"
                .to_owned()
        }
        StepError::AmbiguousMatch(e) => format!("more than one step definition matches: {e}"),
        StepError::Panic(info) => panic_text(info),
    }
}

fn panic_text(info: &event::Info) -> String {
    info.downcast_ref::<String>()
        .cloned()
        .or_else(|| info.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(a panic without a message)".to_owned())
}

/// Console + JUnit + cucumber JSON + the collector, behind one Writer whose CLI is the console's.
pub struct Reporter<Out: io::Write> {
    console: Summarize<Basic<Out>>,
    junit: Option<JUnit<ConformanceWorld, File>>,
    json: Option<Json<File>>,
    collector: Rc<RefCell<Collector>>,
}

impl<Out: io::Write> Reporter<Out> {
    pub fn new(
        console: Basic<Out>,
        junit: Option<File>,
        json: Option<File>,
        collector: Rc<RefCell<Collector>>,
    ) -> Reporter<Out> {
        Reporter {
            console: Summarize::new(console),
            junit: junit.map(|f| JUnit::raw(f, 0)),
            json: json.map(Json::raw),
            collector,
        }
    }
}

impl<Out: io::Write> Reporter<Out> {
    /// The line printed when a feature ends: its scenarios by status.
    fn progress(&self, ev: &parser::Result<Event<Cucumber<ConformanceWorld>>>) -> Option<String> {
        let Ok(ev) = ev else { return None };
        let Cucumber::Feature(feature, Feature::Finished) = &ev.value else { return None };
        let path =
            feature.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| feature.name.clone());
        let collector = self.collector.borrow();
        let mine: Vec<&ScenarioResult> = collector.done.iter().filter(|r| r.feature == path).collect();
        let count = |s: Status| mine.iter().filter(|r| r.status == s).count();
        let name = path.rsplit('/').next().unwrap_or(&path).trim_end_matches(".feature");
        let mut parts = vec![format!("{} passed", count(Status::Passed))];
        for (s, label) in
            [(Status::Failed, "failed"), (Status::Blocked, "blocked"), (Status::Skipped, "skipped")]
        {
            if count(s) > 0 {
                parts.push(format!("{} {label}", count(s)));
            }
        }
        Some(format!("  {name:<20} {:>3} scenarios: {}", mine.len(), parts.join(", ")))
    }
}

impl<Out: io::Write> Writer<ConformanceWorld> for Reporter<Out> {
    type Cli = writer::basic::Cli;

    async fn handle_event(&mut self, ev: parser::Result<Event<Cucumber<ConformanceWorld>>>, cli: &Self::Cli) {
        self.collector.borrow_mut().handle(&ev);
        if let Some(junit) = &mut self.junit {
            junit.handle_event(ev.clone(), &writer::junit::Cli::default()).await;
        }
        if let Some(json) = &mut self.json {
            json.handle_event(ev.clone(), &cucumber::cli::Empty).await;
        }
        // Quiet by default: one progress line per feature (the matrix and the failures follow
        // at the end). `-v` shows cucumber's step-by-step output, `-vv` also the World.
        if cli.verbose > 0 {
            let mut cli = *cli;
            cli.verbose -= 1;
            self.console.handle_event(ev, &cli).await;
        } else if let Some(line) = self.progress(&ev) {
            writer::Arbitrary::<ConformanceWorld, String>::write(&mut self.console, line).await;
        }
    }
}

impl<Out: io::Write> writer::Arbitrary<ConformanceWorld, String> for Reporter<Out> {
    async fn write(&mut self, val: String) {
        writer::Arbitrary::<ConformanceWorld, String>::write(&mut self.console, val).await;
    }
}
