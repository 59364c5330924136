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

use super::{Finding, Halt, ScenarioResult, Status};
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
    /// Codes outside §9 seen in the run: the first category, flag and request_id of each (ENV-5).
    pub own_codes: HashMap<String, (chataigne_contract::Category, bool, String)>,
    /// What the judge and the run-wide rules judged, per clause and level (evidence).
    pub evidence: crate::judge::Tally,
}

#[derive(Debug, Default, Clone)]
pub struct ScenarioExtras {
    pub request_ids: Vec<String>,
    pub ext_differences: Vec<String>,
    /// The exchanges the scenario made: what its steps judged.
    pub exchanges: usize,
    pub timing: Option<super::ScenarioTiming>,
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
                s.exchanges = extras.exchanges;
                s.timing = extras.timing;
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
                    exchanges: 0,
                    not_applicable: false,
                    cut_short: false,
                    timing: None,
                    tags,
                    last_exchange: None,
                };
                self.running.insert(key, result);
            }
            event::Scenario::Step(step, event::Step::Failed(_, _, world, err))
            | event::Scenario::Background(step, event::Step::Failed(_, _, world, err)) => {
                if let Some(r) = self.running.get_mut(&key) {
                    let message = step_error(err);
                    // What the step said about why it stopped (typed, never read from the
                    // message): a step that could not read what it needs from another data
                    // shape blocks the scenario's clauses on ENV-7 instead of failing them.
                    let halt = world.as_ref().and_then(|w| w.halt.get().cloned());
                    if let Some(Halt::NotApplicable(why)) = &halt
                        && r.status == Status::Passed
                    {
                        // The step found the scenario does not apply here: not a verdict.
                        r.status = Status::Skipped;
                        r.not_applicable = true;
                        r.skip_reason = Some(why.clone());
                        return;
                    }
                    let blocked = halt == Some(Halt::Blocked);
                    let out_of_time = halt == Some(Halt::OutOfTime);
                    if out_of_time && r.status == Status::Passed {
                        // Not checked, so not a verdict on the server: skipped, with the reason.
                        r.status = Status::Skipped;
                        r.cut_short = true;
                        r.skip_reason = Some(format!("{} before it ran", crate::world::DEADLINE_PASSED));
                        return;
                    }
                    if r.status != Status::Failed {
                        r.status = if blocked { Status::Blocked } else { Status::Failed };
                    }
                    r.failed_step.get_or_insert_with(|| format!("{}{}", step.keyword, step.value));
                    if r.last_exchange.is_none() {
                        // The exchange the message shows (by its request_id), else the last one.
                        r.last_exchange = world.as_ref().and_then(|w| {
                            let shown = w
                                .history
                                .iter()
                                .rev()
                                .find(|e| e.request_id().is_some_and(|id| message.contains(id)));
                            shown.or(w.history.last()).cloned()
                        });
                    }
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
    json: Option<CucumberJson>,
    collector: Rc<RefCell<Collector>>,
}

/// cucumber's JSON writer, with the Background elements where report viewers expect them.
///
/// cucumber-rs files a Background's steps under an element of type `background` that carries its
/// scenario's name and line and comes after that scenario's element (created first, by the before
/// hook). Cucumber JVM and Ruby, whose shape cucumber-html-reporter and the like read, put the
/// Background element first, under the Background's own name and line: the buffer is rewritten
/// so when the run finishes.
struct CucumberJson {
    writer: Json<SharedBuffer>,
    buffer: SharedBuffer,
    file: File,
    /// (feature path, scenario line) → the Background its steps came from.
    backgrounds: Vec<(String, usize, BackgroundInfo)>,
}

#[derive(Debug, Clone, PartialEq)]
struct BackgroundInfo {
    keyword: String,
    name: String,
    line: usize,
}

#[derive(Clone, Default)]
struct SharedBuffer(Rc<RefCell<Vec<u8>>>);

impl io::Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl CucumberJson {
    fn new(file: File) -> CucumberJson {
        let buffer = SharedBuffer::default();
        CucumberJson { writer: Json::raw(buffer.clone()), buffer, file, backgrounds: Vec::new() }
    }

    async fn handle(&mut self, ev: parser::Result<Event<Cucumber<ConformanceWorld>>>) {
        if let Ok(Event { value: Cucumber::Feature(feature, fev), .. }) = &ev {
            let scenario = match fev {
                Feature::Scenario(sc, rev) => Some((None, sc, &rev.event)),
                Feature::Rule(rule, Rule::Scenario(sc, rev)) => Some((Some(rule), sc, &rev.event)),
                _ => None,
            };
            if let Some((rule, sc, event::Scenario::Background(_, event::Step::Started))) = scenario {
                let background = feature.background.as_ref().or(rule.and_then(|r| r.background.as_ref()));
                if let Some(bg) = background {
                    let path = scenario_key(feature, sc).0;
                    let info = BackgroundInfo {
                        keyword: bg.keyword.clone(),
                        name: bg.name.clone(),
                        line: bg.position.line,
                    };
                    if !self.backgrounds.iter().any(|(p, l, _)| *p == path && *l == sc.position.line) {
                        self.backgrounds.push((path, sc.position.line, info));
                    }
                }
            }
        }
        let finished = matches!(&ev, Ok(Event { value: Cucumber::Finished, .. }));
        self.writer.handle_event(ev, &cucumber::cli::Empty).await;
        if finished {
            let written = std::mem::take(&mut *self.buffer.0.borrow_mut());
            let text = match serde_json::from_slice(&written) {
                Ok(features) => {
                    let features = backgrounds_first(features, &self.backgrounds);
                    serde_json::to_vec(&features).unwrap_or(written)
                }
                Err(_) => written,
            };
            // Best effort as cucumber's own writer: the verdict does not depend on this file.
            let _ = io::Write::write_all(&mut self.file, &text);
        }
    }
}

/// Each scenario element preceded by its Background element, under the Background's own name
/// and line (see [`CucumberJson`]).
fn backgrounds_first(
    mut features: serde_json::Value,
    backgrounds: &[(String, usize, BackgroundInfo)],
) -> serde_json::Value {
    use serde_json::Value;
    for feature in features.as_array_mut().into_iter().flatten() {
        let uri = feature.get("uri").and_then(Value::as_str).unwrap_or_default().to_owned();
        let Some(elements) = feature.get_mut("elements").and_then(Value::as_array_mut) else { continue };
        let is_background = |e: &Value| e.get("type").and_then(Value::as_str) == Some("background");
        let (mut pending, scenarios): (Vec<Value>, Vec<Value>) =
            std::mem::take(elements).into_iter().partition(is_background);
        let same = |a: &Value, b: &Value| a.get("name") == b.get("name") && a.get("line") == b.get("line");
        for scenario in scenarios {
            if let Some(i) = pending.iter().position(|bg| same(bg, &scenario)) {
                let mut bg = pending.remove(i);
                let line = scenario.get("line").and_then(Value::as_u64).unwrap_or_default();
                // cucumber trims the working directory off the path it writes as `uri`.
                let info = backgrounds.iter().find(|(path, l, _)| {
                    *l as u64 == line && (*path == uri || path.ends_with(&format!("/{uri}")))
                });
                if let Some((_, _, info)) = info {
                    bg["keyword"] = Value::from(info.keyword.clone());
                    bg["name"] = Value::from(info.name.clone());
                    bg["line"] = Value::from(info.line);
                }
                elements.push(bg);
            }
            elements.push(scenario);
        }
        elements.extend(pending);
    }
    features
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
            json: json.map(CucumberJson::new),
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
            json.handle(ev.clone()).await;
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
