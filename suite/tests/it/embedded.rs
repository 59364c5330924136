//! `--embedded` as users run it: the binary, its exit code, and what it leaves in the temp dir.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Runs the suite binary; returns its output and the path its embedded server logged to.
fn run(args: &[&str]) -> (Output, PathBuf) {
    let child = Command::new(env!("CARGO_BIN_EXE_chataigne-conformance"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the suite binary starts");
    let log = std::env::temp_dir().join(format!("chataigne-embedded-{}.log", child.id()));
    (child.wait_with_output().expect("the suite binary ends"), log)
}

#[test]
fn a_clean_run_leaves_no_server_log_behind() {
    let (out, log) = run(&["--embedded", "--tags", "@ENV-2"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!log.exists(), "{} left behind", log.display());
}

#[test]
fn a_run_that_is_not_clean_keeps_the_server_log_and_says_where() {
    // One clause run, the others not run: --require-all makes that exit 1.
    let (out, log) = run(&["--embedded", "--tags", "@ENV-2", "--require-all"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("reference server log kept: {}", log.display())), "{stderr}");
    let text = std::fs::read_to_string(&log).expect("the log is kept");
    std::fs::remove_file(&log).expect("the test removes what it checked");
    assert!(text.contains("request_id"), "the kept log has the server's calls");
}

/// Verdicts do not depend on how scenarios interleave: runs at a high concurrency give the same
/// verdict on every clause, at both levels, as a run one scenario at a time. (docs/BENCHMARKS.md
/// has 50 runs at the default concurrency.)
#[test]
fn verdicts_do_not_change_with_concurrency() {
    let verdicts = |concurrency: &str| -> String {
        let dir =
            std::env::temp_dir().join(format!("chataigne-concurrency-{}-{concurrency}", std::process::id()));
        let report = dir.join("clauses.json");
        let (out, _) = run(&[
            "--embedded",
            "--level",
            "full",
            "--concurrency",
            concurrency,
            "--report-json",
            report.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        // Issue 37: a pass is evidence. A scenario that passed without one exchange, or a clause
        // that passed with nothing judged, is a defect of the suite.
        for c in json["clauses"].as_array().unwrap() {
            if c["full_status"] == "passed" {
                assert!(c["full_evidence"].as_u64().unwrap() > 0, "{} passed on nothing", c["id"]);
            }
            for s in c["scenarios"].as_array().unwrap() {
                if s["status"] == "passed" {
                    assert!(s["exchanges"].as_u64().unwrap() > 0, "{} passed without an exchange", s["name"]);
                }
            }
        }
        json["clauses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("{} {} {}\n", c["id"], c["status"], c["full_status"]))
            .collect()
    };
    let one_at_a_time = verdicts("1");
    for _ in 0..3 {
        assert_eq!(verdicts("32"), one_at_a_time);
    }
}

/// A failed scenario must not keep what it locked. cucumber keeps a failed scenario's World in
/// its failure event, and buffers the events of scenarios that finish out of order: locks held
/// by that World stalled a whole-server scenario started earlier (which the buffered events
/// wait for) until the run's deadline. A defect that fails scenarios everywhere shows it.
#[test]
fn failed_scenarios_release_what_they_locked() {
    use chataigne_conformance::runner::{CucumberOpts, Outputs};
    let (_server, mut profile) =
        chataigne_conformance::embedded::start(&[mock_server::Defect::ErrorWithoutRequestId], &[]).unwrap();
    profile.deadline_s = 120;
    let opts =
        <CucumberOpts<cucumber::cli::Empty> as clap::Parser>::try_parse_from(["it", "--color", "never"])
            .unwrap();
    let outputs = Outputs { console: std::io::sink(), junit: None, cucumber_json: None };
    let started = std::time::Instant::now();
    let features = chataigne_conformance::features::FeatureSource::Embedded;
    let report =
        chataigne_conformance::cli::run_profile(profile, Default::default(), features, opts, outputs)
            .unwrap();
    assert_eq!(report.summary.interrupted, None, "stalled for {:?}", started.elapsed());
    assert!(!report.summary.certified);
}

/// The cucumber JSON report as cucumber-html-reporter and the JVM and Ruby formatters shape it:
/// each scenario element comes after its Background element, which carries the Background's own
/// keyword, name and line (cucumber-rs writes it after the scenario, under the scenario's name).
#[test]
fn the_cucumber_json_report_puts_each_background_before_its_scenario() {
    let dir = std::env::temp_dir().join(format!("chataigne-cucumber-json-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("features")).unwrap();
    let scenario = |name: &str| {
        format!(
            "  @ABS-1\n  Scenario: {name}\n    When they list the tools\n    Then the tools are exactly the tools of the contract\n\n"
        )
    };
    let with = format!(
        "Feature: With a background\n\n  Background: The owner is connected\n    Given the persona \"owner\"\n\n{}{}",
        scenario("First"),
        scenario("Second")
    );
    std::fs::write(dir.join("features/with.feature"), with).unwrap();
    let without = format!(
        "Feature: Without a background\n\n{}",
        scenario("Alone").replace("    When", "    Given the persona \"owner\"\n    When",)
    );
    std::fs::write(dir.join("features/without.feature"), without).unwrap();
    let report = dir.join("cucumber.json");
    let (out, log) = run(&[
        "--embedded",
        "--features",
        dir.join("features").to_str().unwrap(),
        "--cucumber-json",
        report.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    // Most clauses are not run, so the run is not clean and keeps its server's log.
    let _ = std::fs::remove_file(&log);
    assert!(!text.is_empty(), "no report: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let elements = |feature: &str| -> Vec<String> {
        let feature = json.as_array().unwrap().iter().find(|f| f["name"] == feature).unwrap();
        feature["elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let steps: Vec<&str> =
                    e["steps"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
                format!(
                    "{} {} {} line {}: {}",
                    e["type"],
                    e["keyword"],
                    e["name"],
                    e["line"],
                    steps.join("; ")
                )
            })
            .collect()
    };
    let background = r#""background" "Background" "The owner is connected" line 3: the persona "owner""#;
    let first = r#""scenario" "Scenario" "First" line 7: they list the tools; the tools are exactly the tools of the contract"#;
    let second = r#""scenario" "Scenario" "Second" line 12: they list the tools; the tools are exactly the tools of the contract"#;
    assert_eq!(elements("With a background"), [background, first, background, second]);
    let alone = r#""scenario" "Scenario" "Alone" line 4: the persona "owner"; they list the tools; the tools are exactly the tools of the contract"#;
    assert_eq!(elements("Without a background"), [alone]);
}

#[test]
fn an_unknown_defect_is_a_configuration_error() {
    let outcome = chataigne_conformance::cli::execute_args(
        ["chataigne-conformance", "--embedded", "--defect", "no-such-defect"],
        std::io::sink(),
    );
    assert_eq!(outcome.code, 2, "{outcome:?}");
    assert!(outcome.error.as_deref().is_some_and(|e| e.contains("--defect no-such-defect: no such defect")));
}

/// `--variant`: the seed level certifies an allowed reading, the full level tells it apart.
#[test]
fn a_variant_is_certified_at_the_seed_level_and_told_apart_at_the_full_level() {
    let run = |level: &str| {
        let (out, log) = run(&[
            "--embedded",
            "--variant",
            "transition-validation-code",
            "--tags",
            "@PRE-3",
            "--level",
            level,
        ]);
        // A run that is not certified keeps its server log: not needed here.
        let _ = std::fs::remove_file(log);
        out.status.code()
    };
    assert_eq!(run("seed"), Some(0));
    assert_eq!(run("full"), Some(1));
    let outcome = chataigne_conformance::cli::execute_args(
        ["chataigne-conformance", "--embedded", "--variant", "no-such-variant"],
        std::io::sink(),
    );
    assert_eq!(outcome.code, 2, "{outcome:?}");
    assert!(
        outcome.error.as_deref().is_some_and(|e| e.contains("--variant no-such-variant: no such variant"))
    );
}
