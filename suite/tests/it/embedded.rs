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
    let report = chataigne_conformance::cli::run_profile(profile, features, opts, outputs).unwrap();
    assert_eq!(report.summary.interrupted, None, "stalled for {:?}", started.elapsed());
    assert!(!report.summary.certified);
}
