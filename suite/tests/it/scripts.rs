//! The project's own scripts fail when their baseline did not run: bench/outside-faults.sh against
//! stand-ins for the suite, the server and the proxy (shell scripts in a temporary folder).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A stand-in executable `name` in `dir` running `body` (sh).
fn stand_in(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// bench/outside-faults.sh with a suite stand-in whose run ends as `suite` says (it finds the
/// report's path in `$report`), on no fault but the healthy proxy: its exit status and stderr.
fn outside_faults(case: &str, suite: &str) -> (bool, String) {
    let dir = std::env::temp_dir().join(format!("chataigne-outside-faults-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mock = stand_in(&dir, "mock", "exec sleep 30");
    let proxy = stand_in(
        &dir,
        "proxy",
        r#"if [ "$1" = --list ]; then printf 'none\t-\tseed\tforwards everything\n'; exit 0; fi
exec sleep 30"#,
    );
    let suite = stand_in(
        &dir,
        "suite",
        &format!(
            r#"while [ $# -gt 0 ]; do [ "$1" = --report-json ] && report=$2; shift; done
{suite}"#
        ),
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/outside-faults.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("no-such-fault")
        .env("NO_BUILD", "1")
        .env("JOBS", "1")
        .env("PORT", "19560")
        .env("OUT", dir.join("out"))
        .env("SUITE", &suite)
        .env("MOCK", &mock)
        .env("PROXY", &proxy)
        .output()
        .expect("bash runs");
    let _ = std::fs::remove_dir_all(&dir);
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn outside_faults_fails_loudly_unless_its_healthy_baseline_is_certified() {
    let cases = [
        ("crashed", "exit 2"),
        (
            "failing",
            r#"echo '{"level":"full","summary":{"certified":false},"clauses":[{"id":"PAG-4","level":"seed","status":"failed","full_status":"failed"}]}' > "$report"; exit 1"#,
        ),
        (
            "seed-only",
            r#"echo '{"level":"seed","summary":{"certified":true},"clauses":[]}' > "$report"; exit 0"#,
        ),
        (
            "certified",
            r#"echo '{"level":"full","summary":{"certified":true},"clauses":[]}' > "$report"; exit 0"#,
        ),
    ];
    let results: Vec<(&str, (bool, String))> = std::thread::scope(|s| {
        let runs: Vec<_> =
            cases.iter().map(|(case, suite)| (*case, s.spawn(|| outside_faults(case, suite)))).collect();
        runs.into_iter().map(|(case, run)| (case, run.join().unwrap())).collect()
    });
    for (case, (ok, said)) in &results {
        match *case {
            "certified" => assert!(ok, "{case}: {said}"),
            "crashed" => assert!(!ok && said.contains("wrote no report"), "{case}: {said}"),
            _ => assert!(!ok && said.contains("not certified at the full level"), "{case}: {said}"),
        }
    }
}

/// scripts/acceptance certifies the server it starts, never whatever already answers on its
/// port: a port in use is an error before anything runs.
#[test]
fn acceptance_refuses_a_port_already_in_use() {
    // The Python server's port; if something else holds it already, the script must refuse too.
    let _holder = std::net::TcpListener::bind("127.0.0.1:18181");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/acceptance");
    let out = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_chataigne-conformance"))
        .arg("python")
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("port 18181 is already in use"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("seed-level run"), "a run started");
}
