//! Runs against one seeding, as a CI pipeline without the control API makes them: the reference
//! server in-process, never reset, a message sent by a person in between (the README's curl
//! example), and the suite run again and again. Each run passes, and the runs left (counted at
//! start from the orders runs move) go down by what a run uses.

use std::path::PathBuf;
use std::time::Duration;

use chataigne_conformance::cli::Outcome;
use chataigne_conformance::client::McpClient;
use chataigne_conformance::profile::Profile;
use chataigne_conformance::report::Status;
use serde_json::json;

/// The reference server, and a profile for it without the control API (nothing resets it).
struct Seeded {
    _server: chataigne_conformance::embedded::EmbeddedServer,
    endpoint: String,
    profile: PathBuf,
    dir: PathBuf,
}

impl Seeded {
    fn start(name: &str) -> Seeded {
        Seeded::start_with(name, &[])
    }

    fn start_with(name: &str, variants: &[mock_server::Variant]) -> Seeded {
        let (server, profile) =
            chataigne_conformance::embedded::start(&[], variants).expect("the reference server starts");
        let endpoint = profile.endpoint.clone().expect("an HTTP endpoint");
        let dir = std::env::temp_dir().join(format!("chataigne-reruns-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!("endpoint = {endpoint:?}\ntimeout_ms = 10000\n[tokens]\n");
        for (persona, token) in &profile.tokens {
            text.push_str(&format!("{persona} = {token:?}\n"));
        }
        let path = dir.join("profile.toml");
        std::fs::write(&path, text).unwrap();
        Seeded { _server: server, endpoint, profile: path, dir }
    }

    fn run(&self, args: &[&str]) -> Outcome {
        crate::fake::run_profile(&self.profile, args)
    }

    fn runs_left(&self, runtime: &tokio::runtime::Runtime) -> Option<usize> {
        let profile = Profile::load(&self.profile).unwrap();
        runtime
            .block_on(chataigne_conformance::preflight::prepare(profile))
            .expect("preflight passes")
            .runs_left
    }

    /// What a person does with the README's curl example: a message without any canary.
    fn send_by_hand(&self, runtime: &tokio::runtime::Runtime) {
        let http = reqwest::Client::new();
        let mut client = McpClient::new(
            http,
            &self.endpoint,
            Some("dev-token-owner".to_owned()),
            None,
            Duration::from_secs(10),
        );
        runtime.block_on(async {
            client.initialize().await;
            let args = json!({
                "restaurant_id": "rst_central", "conversation_id": "cnv_long",
                "text": "Your table is ready", "idempotency_key": format!("key-{}-abcd", std::process::id()),
            });
            let ex = client.call_tool("send_message", args).await;
            assert!(!ex.is_error() && ex.structured().is_some(), "{}", ex.describe());
        });
    }
}

impl Drop for Seeded {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        chataigne_conformance::embedded::finish_log(false);
    }
}

fn check_passed(outcome: &Outcome, run: usize) {
    let report = outcome.report.as_ref().unwrap_or_else(|| panic!("run {run}: no report: {outcome:?}"));
    let failed: Vec<String> = report
        .clauses
        .iter()
        .flat_map(|c| &c.scenarios)
        .filter(|s| s.status == Status::Failed || s.status == Status::Blocked)
        .map(|s| format!("{}: {}", s.name, s.message.as_deref().unwrap_or("")))
        .collect();
    assert!(failed.is_empty(), "run {run} failed:\n{}", failed.join("\n\n"));
    assert_eq!(outcome.code, 0, "run {run}: {:?}", outcome.error);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

#[test]
fn runs_leave_the_server_fit_for_the_next_ones() {
    let seeded = Seeded::start("quick");
    let rt = runtime();
    // 86 received orders, a run moves up to 3.
    assert_eq!(seeded.runs_left(&rt), Some(28));
    seeded.send_by_hand(&rt);
    // The rate-limit bursts are left out here: a second burst within the minute waits for the
    // first one's window (scripts/reruns.sh runs them, twenty times: docs/RELIABILITY.md).
    for run in 1..=3 {
        check_passed(&seeded.run(&["--tags", "not @LIM-2"]), run);
    }
    // The reference refuses the forward skip: a run moved 2 received orders (86 - 6 = 80).
    assert_eq!(seeded.runs_left(&rt), Some(26));
}

/// A first run without a control API (nothing moves the clock) on a server no one else calls:
/// the LIM-2 bursts come after the matrices, which call every tool as every persona, so their
/// pairs' windows are in use; the bursts start at once and count those calls
/// (`rate_verdict::judge_after`) instead of waiting a minute for the windows to empty. LIM-2 and
/// LIM-3 are certified at the full level (exactly the reference's window) with no wait at all.
#[test]
fn a_first_run_without_control_api_certifies_the_rate_limits_without_waiting() {
    let seeded = Seeded::start("first-run");
    let outcome = seeded.run(&["--level", "full"]);
    check_passed(&outcome, 1);
    let report = outcome.report.as_ref().expect("a report");
    for id in ["LIM-2", "LIM-3"] {
        let c = report.clauses.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no {id}"));
        assert_eq!((c.status, c.full_status), (Status::Passed, Status::Passed), "{id}: {c:?}");
    }
    assert_eq!(report.timing.waited_for_rate_windows_s, 0.0, "{:?}", report.timing);
}
