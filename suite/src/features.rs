//! Where the Gherkin features come from, and the parser that marks scenarios the server cannot
//! run as skipped (with their reason) instead of leaving them out or letting them pass.
//!
//! Source: `--features DIR` if given, else the copies built into the binary (the same files as
//! `features/`, built in), so an installed `chataigne-conformance` works anywhere and a user's
//! own `features/` folder (their Gherkin files) is never taken for the contract's.

use std::path::{Path, PathBuf};
use std::vec;

use cucumber::feature::Ext as _;
use cucumber::gherkin::{self, GherkinEnv};
use cucumber::{cli, parser};
use futures::stream;

use crate::context::Capabilities;

/// The features built into the binary; a test keeps this list equal to `features/`.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("absent_operations.feature", include_str!("../../features/absent_operations.feature")),
    ("authorization.feature", include_str!("../../features/authorization.feature")),
    ("cursors.feature", include_str!("../../features/cursors.feature")),
    ("data_security.feature", include_str!("../../features/data_security.feature")),
    ("deadlines.feature", include_str!("../../features/deadlines.feature")),
    ("envelope.feature", include_str!("../../features/envelope.feature")),
    ("idempotency.feature", include_str!("../../features/idempotency.feature")),
    ("limits.feature", include_str!("../../features/limits.feature")),
    ("matrices.feature", include_str!("../../features/matrices.feature")),
    ("memberships.feature", include_str!("../../features/memberships.feature")),
    ("pagination.feature", include_str!("../../features/pagination.feature")),
    ("preconditions.feature", include_str!("../../features/preconditions.feature")),
    ("protocol.feature", include_str!("../../features/protocol.feature")),
    ("rate_limits.feature", include_str!("../../features/rate_limits.feature")),
    ("revisions.feature", include_str!("../../features/revisions.feature")),
    ("transport.feature", include_str!("../../features/transport.feature")),
];

/// Tag that lets a scenario stay skipped instead of failing (cucumber's convention).
pub const ALLOW_SKIPPED: &str = "allow.skipped";

#[derive(Debug, Clone, PartialEq)]
pub enum FeatureSource {
    Dir(PathBuf),
    Embedded,
}

impl FeatureSource {
    /// `--features` if given, else the built-in copies.
    pub fn choose(explicit: Option<&Path>) -> FeatureSource {
        match explicit {
            Some(dir) => FeatureSource::Dir(dir.to_owned()),
            None => FeatureSource::Embedded,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            FeatureSource::Dir(d) => d.display().to_string(),
            FeatureSource::Embedded => "built-in features".to_owned(),
        }
    }
}

/// The `.feature` files of `dir`, sorted.
pub fn feature_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "feature"))
        .collect();
    files.sort();
    Ok(files)
}

/// Parses the features, then rewrites every scenario needing an absent capability into one
/// step that no definition matches: cucumber reports it skipped in every output (console,
/// JUnit, JSON), and the step's text says why.
pub struct FeatureParser {
    pub capabilities: Capabilities,
}

impl parser::Parser<FeatureSource> for FeatureParser {
    type Cli = cli::Empty;
    type Output = stream::Iter<vec::IntoIter<parser::Result<gherkin::Feature>>>;

    fn parse(self, input: FeatureSource, _: cli::Empty) -> Self::Output {
        let parsed: Vec<Result<gherkin::Feature, gherkin::ParseFileError>> = match input {
            FeatureSource::Dir(dir) => match feature_files(&dir) {
                Ok(files) => {
                    files.iter().map(|f| gherkin::Feature::parse_path(f, GherkinEnv::default())).collect()
                }
                Err(source) => vec![Err(gherkin::ParseFileError::Reading { path: dir, source })],
            },
            FeatureSource::Embedded => EMBEDDED
                .iter()
                .map(|(name, text)| {
                    let path = PathBuf::from("features").join(name);
                    gherkin::Feature::parse(text, GherkinEnv::default())
                        .map(|mut f| {
                            f.path = Some(path.clone());
                            f
                        })
                        .map_err(|source| gherkin::ParseFileError::Parsing { path, error: None, source })
                })
                .collect(),
        };
        let mut features: Vec<_> = parsed
            .into_iter()
            .map(|f| {
                let feature = f.map_err(parser::Error::from)?;
                let mut feature = feature.expand_examples().map_err(parser::Error::from)?;
                self.mark_skipped(&mut feature);
                Ok(feature)
            })
            .collect();
        // A stable sort by `queue_rank`: otherwise the files' order.
        features.sort_by_key(|f: &parser::Result<gherkin::Feature>| f.as_ref().map_or(1, queue_rank));
        stream::iter(features)
    }
}

/// Where a feature is queued (lowest first), so that a run's long holds overlap rather than
/// follow one another:
/// 0. features acting as every persona (the matrices): they hold every persona, shared, for
///    seconds, and start as soon as the scenarios that change the whole server are done;
/// 1. the others;
/// 2. features revoking a membership: each holds one user's personas to itself, so it waits for
///    the every-persona scenarios already running rather than holding them up, and runs beside
///    the bursts of other pairs;
/// 3. features whose bursts exhaust rate windows, last: the scenarios that use those pairs are
///    then started before them, and the bursts wait for them to finish
///    (`crate::schedule::RatePhase`), never for one not yet started.
pub fn queue_rank(feature: &gherkin::Feature) -> u8 {
    let steps = || all_scenarios(feature).flat_map(|s| &s.steps).map(|step| step.value.as_str());
    if exhausts_windows(feature) {
        3
    } else if steps().any(|s| s.starts_with(crate::schedule::REVOKE_STEP)) {
        2
    } else if steps().any(|s| s.contains(crate::schedule::EVERY_PERSONA)) {
        0
    } else {
        1
    }
}

/// Every scenario of `feature`, its rules' included.
fn all_scenarios(feature: &gherkin::Feature) -> impl Iterator<Item = &gherkin::Scenario> {
    feature.scenarios.iter().chain(feature.rules.iter().flat_map(|r| &r.scenarios))
}

/// Whether a scenario of `feature` calls a tool until the server refuses (a burst step).
pub fn exhausts_windows(feature: &gherkin::Feature) -> bool {
    all_scenarios(feature)
        .flat_map(|s| &s.steps)
        .any(|step| crate::schedule::burst_tool(&step.value).is_some())
}

impl FeatureParser {
    fn mark_skipped(&self, feature: &mut gherkin::Feature) {
        let feature_tags = feature.tags.clone();
        let mark = |rule_tags: &[String], scenario: &mut gherkin::Scenario| {
            let tags = feature_tags.iter().chain(rule_tags).chain(&scenario.tags);
            if let Some(reason) = self.capabilities.skip_reason(tags) {
                scenario.steps = vec![skip_step(scenario, &reason)];
                scenario.tags.push(ALLOW_SKIPPED.to_owned());
            }
        };
        for scenario in &mut feature.scenarios {
            mark(&[], scenario);
        }
        for rule in &mut feature.rules {
            let rule_tags = rule.tags.clone();
            for scenario in &mut rule.scenarios {
                mark(&rule_tags, scenario);
            }
        }
    }
}

/// A scenario's tags with its feature's and rule's.
pub fn scenario_tags(
    feature: &gherkin::Feature,
    rule: Option<&gherkin::Rule>,
    scenario: &gherkin::Scenario,
) -> Vec<String> {
    feature.tags.iter().chain(rule.iter().flat_map(|r| &r.tags)).chain(&scenario.tags).cloned().collect()
}

/// The text of the step that stands for a skipped scenario.
pub fn skip_step_text(reason: &str) -> String {
    format!("the server under test offers what this scenario needs (skipped: {reason})")
}

fn skip_step(scenario: &gherkin::Scenario, reason: &str) -> gherkin::Step {
    let position = scenario.steps.first().map(|s| s.position).unwrap_or(scenario.position);
    gherkin::Step {
        keyword: "Given ".to_owned(),
        ty: gherkin::StepType::Given,
        value: skip_step_text(reason),
        docstring: None,
        table: None,
        span: scenario.span,
        position,
    }
}
