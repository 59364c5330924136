//! The suite over the stdio transport, against the built reference server (`chataigne-mock
//! --stdio`, one process per persona): everything that makes sense over stdio passes, the
//! HTTP-only scenarios are skipped with their reason, and AUTH-1's stdio half runs.

use std::path::{Path, PathBuf};

use chataigne_conformance::cli::Outcome;
use chataigne_conformance::report::Status;

use crate::fake::dataset;

/// `target/debug/chataigne-mock`, next to the directory of this test binary
/// (`target/debug/deps/`). Built by a workspace test run, not by `-p chataigne-conformance`.
fn reference_server() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe.parent().and_then(Path::parent).expect("the test binary lives in target/<profile>/deps");
    let bin = dir.join(format!("chataigne-mock{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build the reference server first (`cargo build -p mock-server`); \
         a workspace test run builds it",
        bin.display()
    );
    bin
}

struct Run {
    dir: PathBuf,
}

impl Run {
    fn new(name: &str) -> Run {
        let dir = std::env::temp_dir().join(format!("chataigne-stdio-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Run { dir }
    }

    /// A profile starting `argv` over stdio, with every persona's development token.
    fn profile(&self, argv: &[String], timeout_ms: u64, extra: &str) -> PathBuf {
        let mut text = format!(
            "stdio_command = {}\nstdio_token_env = \"CHATAIGNE_TOKEN\"\ntimeout_ms = {timeout_ms}\n{extra}\n[tokens]\n",
            toml_array(argv)
        );
        for p in &dataset().personas {
            text.push_str(&format!("{} = \"dev-token-{}\"\n", p.persona, p.persona));
        }
        let path = self.dir.join("profile.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn run(&self, profile: &Path, args: &[&str]) -> Outcome {
        crate::fake::run_profile(profile, args)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn toml_array(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

#[test]
fn the_reference_server_passes_over_stdio() {
    let bin = reference_server();
    let run = Run::new("full");
    let log = run.dir.join("server.log");
    let extra = format!(
        "stdio_stderr = {:?}\nserver_log = {:?}",
        log.display().to_string(),
        log.display().to_string()
    );
    let profile = run.profile(&[bin.display().to_string(), "--stdio".into()], 10_000, &extra);
    let outcome = run.run(&profile, &[]);
    let report = outcome.report.as_ref().unwrap_or_else(|| panic!("no report: {outcome:?}"));
    let failed: Vec<String> = report
        .clauses
        .iter()
        .flat_map(|c| &c.scenarios)
        .filter(|s| s.status == Status::Failed)
        .map(|s| {
            format!(
                "{}: {}\n{}",
                s.name,
                s.failed_step.as_deref().unwrap_or(""),
                s.message.as_deref().unwrap_or("")
            )
        })
        .collect();
    assert!(failed.is_empty(), "failed over stdio:\n{}", failed.join("\n\n"));
    assert_eq!(report.summary.failed, 0, "{:?}", report.summary);
    assert_eq!(outcome.code, 0, "{:?}", outcome.error);
    assert!(report.endpoint.starts_with("stdio: "), "{}", report.endpoint);
    assert!(report.capabilities.stdio);

    let scenarios: Vec<_> = report.clauses.iter().flat_map(|c| &c.scenarios).collect();
    // Every HTTP-only scenario is skipped, with the reason; none passes.
    let http_only: Vec<_> = scenarios.iter().filter(|s| s.tags.iter().any(|t| t == "needs-http")).collect();
    assert!(http_only.len() >= 10, "{} scenarios tagged @needs-http", http_only.len());
    for s in &http_only {
        assert_eq!(s.status, Status::Skipped, "{}", s.name);
        assert_eq!(s.skip_reason.as_deref(), Some("needs HTTP transport"), "{}", s.name);
    }
    // PROTO-5 (Origin) has nothing but HTTP scenarios: the clause itself is skipped.
    let proto5 = report.clauses.iter().find(|c| c.id == "PROTO-5").unwrap();
    assert_eq!(proto5.status, Status::Skipped);
    assert_eq!(proto5.reason.as_deref(), Some("needs HTTP transport"));
    // AUTH-1's stdio half ran and passed.
    let stdio_auth = scenarios
        .iter()
        .find(|s| s.name == "A server started over stdio without a token refuses every call")
        .expect("the stdio AUTH-1 scenario");
    assert_eq!(stdio_auth.status, Status::Passed, "{stdio_auth:?}");
    assert!(!stdio_auth.request_ids.is_empty(), "{stdio_auth:?}");
    // PROTO-1: rmcp's own client starts the command and connects over stdio.
    let library = scenarios
        .iter()
        .find(|s| {
            s.name == "An ordinary MCP client library connects with a persona's token and lists the tools"
        })
        .expect("the PROTO-1 client library scenario");
    assert_eq!(library.status, Status::Passed, "{library:?}");
    // Scenarios where one persona must see another's writes cannot run on one process each.
    let idem5 = report.clauses.iter().find(|c| c.id == "IDEM-5").unwrap();
    assert_eq!(idem5.reason.as_deref(), Some("needs one server state across personas"), "{idem5:?}");
    // The children's stderr went to the log, and SEC-1's log scenarios read it. Its scenario
    // over error reports is skipped (no `error_reports`, and no control API to inject internal
    // errors with), so the clause is too.
    let sec1 = report.clauses.iter().find(|c| c.id == "SEC-1").unwrap();
    let over_log: Vec<_> =
        sec1.scenarios.iter().filter(|s| s.tags.iter().any(|t| t == "needs-server-log")).collect();
    assert!(over_log.len() >= 2 && over_log.iter().all(|s| s.status == Status::Passed), "{sec1:?}");
    assert_eq!(sec1.status, Status::Skipped, "{sec1:?}");
}

#[test]
fn a_stdio_command_that_does_not_start_is_a_configuration_error() {
    let run = Run::new("missing");
    let profile = run.profile(&["/nonexistent/chataigne-server".to_owned()], 10_000, "");
    let outcome = run.run(&profile, &[]);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.unwrap_or_default();
    assert!(reason.contains("cannot start `/nonexistent/chataigne-server`"), "{reason}");
    assert!(!reason.contains('\n'), "{reason}");
}

#[test]
fn a_stdio_server_that_exits_is_a_configuration_error() {
    let bin = reference_server();
    let run = Run::new("exits");
    let profile = run.profile(&[bin.display().to_string(), "--no-such-flag".into()], 10_000, "");
    let outcome = run.run(&profile, &[]);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.unwrap_or_default();
    assert!(reason.contains("did not answer initialize over stdio"), "{reason}");
    assert!(reason.contains("exit status"), "{reason}");
    assert!(!reason.contains('\n'), "{reason}");
}

#[test]
fn a_stdio_server_that_does_not_speak_json_rpc_is_a_configuration_error() {
    let run = Run::new("cat");
    // `sleep` reads nothing and answers nothing.
    let profile = run.profile(&["sleep".to_owned(), "30".to_owned()], 300, "");
    let outcome = run.run(&profile, &[]);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.unwrap_or_default();
    assert!(reason.contains("no answer within 300 ms"), "{reason}");
}

/// A server that prints something other than JSON-RPC on stdout is named for it at once, not
/// after the timeout.
#[test]
fn a_stdio_server_printing_text_on_stdout_is_named_for_it_at_once() {
    let run = Run::new("noise");
    let script = "read line; echo 'Server listening on stdio (v1.2)'; sleep 30".to_owned();
    let profile = run.profile(&["sh".to_owned(), "-c".to_owned(), script], 20_000, "");
    let started = std::time::Instant::now();
    let outcome = run.run(&profile, &[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.unwrap_or_default();
    assert!(reason.contains("printed non-JSON on stdout") && reason.contains("Server listening"), "{reason}");
}

/// A server that exits at once is reported with what it said on stderr, its token redacted.
#[test]
fn a_stdio_server_that_exits_is_reported_with_the_end_of_its_stderr() {
    let run = Run::new("stderr");
    let script = "echo 'fake-server: starting' >&2; \
        echo \"fake-server: cannot open /var/lib/fake.db (token $CHATAIGNE_TOKEN)\" >&2; exit 3";
    let profile = run.profile(&["sh".to_owned(), "-c".to_owned(), script.to_owned()], 10_000, "");
    let outcome = run.run(&profile, &[]);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.unwrap_or_default();
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert!(
        reason
            .contains("fake-server: starting | fake-server: cannot open /var/lib/fake.db (token [redacted])"),
        "{reason}"
    );
    assert!(!reason.contains("dev-token-"), "the token leaked: {reason}");
    assert!(!reason.contains('\n'), "{reason}");
}

/// A server that floods its stderr (10 MB) before exiting: the message holds its last line and
/// stays short.
#[test]
fn a_stdio_server_flooding_its_stderr_is_reported_with_its_last_line() {
    let run = Run::new("flood");
    let script = "head -c 10000000 /dev/zero | tr '\\0' x >&2; echo >&2; \
        echo 'fake-server: giving up' >&2; exit 3";
    let profile = run.profile(&["sh".to_owned(), "-c".to_owned(), script.to_owned()], 20_000, "");
    let outcome = run.run(&profile, &[]);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.unwrap_or_default();
    assert!(
        reason.ends_with("fake-server: giving up"),
        "{}",
        chataigne_conformance::client::cut(&reason, 400)
    );
    assert!(
        reason.len() < 3000,
        "{} bytes: {}",
        reason.len(),
        chataigne_conformance::client::cut(&reason, 400)
    );
}
