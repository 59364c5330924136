//! The features folder against the contract: every clause has a scenario, every clause tag is a
//! real clause, every scenario checks a clause, and the binary's built-in copies are current.

use std::collections::BTreeSet;
use std::path::PathBuf;

use chataigne_conformance::features::{EMBEDDED, feature_files};
use chataigne_contract::clauses::CLAUSES;
use cucumber::gherkin::{self, GherkinEnv};

fn features_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../features")
}

/// Every scenario's merged tags (feature, rule, scenario), with its name.
fn scenarios() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for path in feature_files(&features_dir()).unwrap() {
        let feature = gherkin::Feature::parse_path(&path, GherkinEnv::default())
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
        let mut push = |rule_tags: &[String], sc: &gherkin::Scenario| {
            let tags = feature.tags.iter().chain(rule_tags).chain(&sc.tags).cloned().collect();
            out.push((format!("{}: {}", path.display(), sc.name), tags));
        };
        for sc in &feature.scenarios {
            push(&[], sc);
        }
        for rule in &feature.rules {
            for sc in &rule.scenarios {
                push(&rule.tags, sc);
            }
        }
    }
    out
}

fn looks_like_clause(tag: &str) -> bool {
    tag.split_once('-').is_some_and(|(area, n)| {
        !area.is_empty()
            && area.bytes().all(|b| b.is_ascii_uppercase())
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Every reference choice is checked somewhere: by a scenario tagged `@ext-<choice>`, or by a step
/// that notes the difference (`ext_difference("<choice>", …)`). A choice listed but never
/// checked would be a full level that passes on nothing.
#[test]
fn every_reference_choice_is_checked() {
    let tagged: BTreeSet<String> = scenarios().into_iter().flat_map(|(_, tags)| tags).collect();
    let mut steps = String::new();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/steps");
    for entry in std::fs::read_dir(dir).unwrap() {
        steps.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    // The matrices' rows name the choice a row's difference is from (`BoundRow::choice`, `rules::bounds`), some
    // taken from the derived edges (`edges::CODE_POINTS`).
    for rows in ["src/matrices.rs", "src/edges.rs", "src/rules/bounds.rs"] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rows);
        steps.push_str(&std::fs::read_to_string(path).unwrap());
    }
    let unchecked: Vec<&str> = chataigne_contract::clauses::CHOICES
        .iter()
        .map(|(choice, _)| *choice)
        .filter(|c| !tagged.contains(&format!("ext-{c}")) && !steps.contains(&format!("\"{c}\"")))
        .collect();
    assert!(unchecked.is_empty(), "reference choices nothing checks: {}", unchecked.join(", "));
}

/// Fails until every contract area has its feature file; the message names what is missing.
#[test]
fn every_clause_has_a_scenario() {
    let tagged: BTreeSet<String> = scenarios().into_iter().flat_map(|(_, tags)| tags).collect();
    let missing: Vec<&str> = CLAUSES.iter().map(|c| c.id).filter(|id| !tagged.contains(*id)).collect();
    let mut areas: Vec<&str> = missing.iter().filter_map(|id| id.split('-').next()).collect();
    areas.dedup();
    assert!(
        missing.is_empty(),
        "{} clauses have no scenario in features/ (areas: {}): {}",
        missing.len(),
        areas.join(", "),
        missing.join(", ")
    );
}

#[test]
fn every_clause_tag_is_a_clause() {
    let unknown: Vec<String> = scenarios()
        .into_iter()
        .flat_map(|(name, tags)| tags.into_iter().map(move |t| (name.clone(), t)))
        .filter(|(_, t)| looks_like_clause(t) && chataigne_contract::clauses::find(t).is_none())
        .map(|(name, t)| format!("@{t} in {name}"))
        .collect();
    assert!(unknown.is_empty(), "tags that are not clauses of the contract: {}", unknown.join("; "));
}

#[test]
fn every_scenario_checks_a_clause() {
    let untagged: Vec<String> = scenarios()
        .into_iter()
        .filter(|(_, tags)| !tags.iter().any(|t| chataigne_contract::clauses::find(t).is_some()))
        .map(|(name, _)| name)
        .collect();
    assert!(untagged.is_empty(), "scenarios without a clause tag: {}", untagged.join("; "));
}

/// The binary's built-in copies are the folder's files (add a new file to `EMBEDDED`).
#[test]
fn built_in_features_are_the_folder() {
    let on_disk: Vec<(String, String)> = feature_files(&features_dir())
        .unwrap()
        .iter()
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(p).unwrap()))
        .collect();
    let built_in: Vec<(String, String)> =
        EMBEDDED.iter().map(|(n, t)| ((*n).to_owned(), (*t).to_owned())).collect();
    let names = |v: &[(String, String)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&built_in),
        names(&on_disk),
        "features::EMBEDDED must list every file of features/, sorted"
    );
    assert!(built_in == on_disk, "a built-in feature differs from its file: rebuild");
}

/// Every clause the bounds matrix files rows under has its scenario, tagged with that clause, and
/// no such scenario names a clause without rows: a bound the contract adds is checked in the run.
#[test]
fn every_clause_of_the_bounds_matrix_has_its_scenario() {
    const STEP: &str = "every input bound filed under ";
    let dataset = chataigne_contract::dataset::generate();
    let derived: BTreeSet<&str> =
        chataigne_conformance::matrices::bound_rows(&dataset).iter().map(|r| r.clause).collect();
    let mut scenarios = BTreeSet::new();
    for path in feature_files(&features_dir()).unwrap() {
        let feature = gherkin::Feature::parse_path(&path, GherkinEnv::default()).unwrap();
        for sc in &feature.scenarios {
            for step in &sc.steps {
                let Some(rest) = step.value.strip_prefix(STEP) else { continue };
                let clause = rest.split(' ').next().unwrap().to_owned();
                assert!(sc.tags.contains(&clause), "{}: tagged {:?}, checks {clause}", sc.name, sc.tags);
                scenarios.insert(clause);
            }
        }
    }
    let scenarios: BTreeSet<&str> = scenarios.iter().map(String::as_str).collect();
    assert_eq!(scenarios, derived, "clauses with a bounds scenario vs clauses the matrix derives");
}

/// Every step of every feature (backgrounds included, outlines with each row of their examples)
/// matches exactly one step definition: none undefined, none ambiguous. A run reports both too,
/// but only for the scenarios it reaches; this reads them all without a server.
#[test]
fn every_step_matches_exactly_one_definition() {
    use chataigne_conformance::world::ConformanceWorld;
    use cucumber::World as _;

    let steps = ConformanceWorld::collection();
    let mut problems = Vec::new();
    let mut checked = 0;
    for path in feature_files(&features_dir()).unwrap() {
        let feature = gherkin::Feature::parse_path(&path, GherkinEnv::default()).unwrap();
        let backgrounds =
            feature.background.iter().chain(feature.rules.iter().filter_map(|r| r.background.as_ref()));
        let mut all: Vec<gherkin::Step> = backgrounds.flat_map(|b| b.steps.iter().cloned()).collect();
        let scenarios = feature.scenarios.iter().chain(feature.rules.iter().flat_map(|r| &r.scenarios));
        for sc in scenarios {
            // An outline's steps once per row of its examples, placeholders filled in.
            let rows: Vec<Vec<(String, String)>> = sc
                .examples
                .iter()
                .filter_map(|e| e.table.as_ref())
                .flat_map(|t| {
                    let header = &t.rows[0];
                    t.rows[1..].iter().map(move |row| {
                        header.iter().zip(row).map(|(h, v)| (format!("<{h}>"), v.clone())).collect()
                    })
                })
                .collect();
            for row in if rows.is_empty() { vec![Vec::new()] } else { rows } {
                for step in &sc.steps {
                    let mut step = step.clone();
                    for (placeholder, value) in &row {
                        step.value = step.value.replace(placeholder, value);
                    }
                    all.push(step);
                }
            }
        }
        for step in all {
            checked += 1;
            match steps.find(&step) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    problems.push(format!("{}: undefined: {} {}", path.display(), step.keyword, step.value))
                }
                Err(e) => problems.push(format!(
                    "{}: ambiguous: {} {}: {e}",
                    path.display(),
                    step.keyword,
                    step.value
                )),
            }
        }
    }
    assert!(checked > 500, "only {checked} steps read");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The queue order that keeps the run's long holds overlapping (`features::queue_rank`): the
/// features acting as every persona go first, those revoking a membership after every other
/// and before the bursts, which go last. Checked on the real files, so a scenario that revokes
/// a membership in another feature (queued among the others, holding its user's personas while
/// the matrices wait) fails here.
#[test]
fn features_are_queued_so_that_long_holds_overlap() {
    let mut ranks = Vec::new();
    for path in feature_files(&features_dir()).unwrap() {
        let feature = gherkin::Feature::parse_path(&path, GherkinEnv::default()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        ranks.push((name, chataigne_conformance::features::queue_rank(&feature)));
    }
    let of = |rank: u8| ranks.iter().filter(|(_, r)| *r == rank).map(|(n, _)| n.as_str()).collect::<Vec<_>>();
    assert_eq!(of(0), ["matrices.feature", "revisions.feature"], "{ranks:?}");
    assert_eq!(of(2), ["memberships.feature"], "{ranks:?}");
    assert_eq!(of(3), ["rate_limits.feature"], "{ranks:?}");
}
