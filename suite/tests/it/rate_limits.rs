//! The rate-limit scenario against a fake server whose window of the burst's pair an earlier run
//! left full: the burst refused early waits (a short wait, injected through the environment of
//! the suite's binary) and starts again; a window still full after the wait fails LIM-2. And the
//! run-count at start: a used-up dataset ends the run with exit code 2 and one line.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chataigne_contract::ErrorCode;
use chataigne_contract::envelope::{self, ErrorBody};
use serde_json::{Value, json};

use crate::fake::{Fake, Reply, conforming, dataset, request_id, success};

const LIMIT: usize = 1000;
const BURST_TOKEN: &str = "t-owner_second_client";

/// The reference's windows (opened by a pair's first call, lasting 60 s), per token and tool,
/// but for the burst's own pair on `get_restaurant`: an earlier run used it, leaving `left`
/// calls; that window ends `ends_after` after its first refusal (never, if `None`).
struct Limiter {
    windows: HashMap<(String, String), (Instant, usize)>,
    earlier: Option<Earlier>,
    served: usize,
}

struct Earlier {
    left: usize,
    ends_after: Option<Duration>,
    ends: Option<Instant>,
}

impl Limiter {
    fn new(left: usize, ends_after: Option<Duration>) -> Limiter {
        Limiter {
            windows: HashMap::new(),
            earlier: Some(Earlier { left, ends_after, ends: None }),
            served: 0,
        }
    }

    /// Whether the call is served; refused, how long is left of the window that refuses it.
    fn hit(&mut self, token: &str, tool: &str) -> Result<(), Duration> {
        let now = Instant::now();
        if token == BURST_TOKEN
            && tool == "get_restaurant"
            && let Some(earlier) = &mut self.earlier
        {
            if earlier.left > 0 {
                earlier.left -= 1;
                self.served += 1;
                return Ok(());
            }
            let ends =
                *earlier.ends.get_or_insert_with(|| now + earlier.ends_after.unwrap_or(Duration::MAX / 4));
            if now < ends {
                return Err(ends - now);
            }
            self.earlier = None;
        }
        let (start, count) = self.windows.entry((token.to_owned(), tool.to_owned())).or_insert((now, 0));
        if now.duration_since(*start) >= Duration::from_secs(60) {
            (*start, *count) = (now, 0);
        }
        if *count >= LIMIT {
            return Err(Duration::from_secs(60) - now.duration_since(*start));
        }
        *count += 1;
        if tool == "get_restaurant" && token == BURST_TOKEN {
            self.served += 1;
        }
        Ok(())
    }
}

/// A refusal asking to wait what is left of the window, in whole milliseconds rounded up.
fn rate_limited(left: Duration) -> Reply {
    let mut body = ErrorBody::new(ErrorCode::RateLimited, request_id());
    body.retry_after_ms = Some(left.as_micros().div_ceil(1000) as u64);
    Reply::Result(json!({
        "content": [{ "type": "text", "text": "Too many calls: retry in a second." }],
        "structuredContent": envelope::error(&body),
        "isError": true,
    }))
}

fn serve(fake: &Fake, limiter: Arc<Mutex<Limiter>>) {
    fake.serve_tools_as(move |token, tool, args| {
        if let Err(left) = limiter.lock().unwrap().hit(token.unwrap_or_default(), tool) {
            return rate_limited(left);
        }
        conforming(tool, args)
    });
}

/// The suite's binary on the fake, with the rate window's wait shortened to 300 ms: its report
/// and its output.
fn run(fake: &Fake, args: &[&str]) -> (Output, Value) {
    let features = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../features");
    let out = Command::new(env!("CARGO_BIN_EXE_chataigne-conformance"))
        .arg("--profile")
        .arg(fake.profile(5000))
        .arg("--features")
        .arg(&features)
        .arg("--report-json")
        .arg(fake.report_path())
        .args(["--color", "never"])
        .args(args)
        .env("CHATAIGNE_RATE_WAIT_MS", "300")
        .output()
        .expect("the suite binary runs");
    let report = std::fs::read_to_string(fake.report_path())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (out, report)
}

fn clause<'a>(report: &'a Value, id: &str) -> &'a Value {
    let clauses = report["clauses"].as_array().unwrap_or_else(|| panic!("no report: {report}"));
    clauses.iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no {id} in {report}"))
}

#[test]
fn a_window_an_earlier_run_left_full_is_waited_for_then_the_burst_passes() {
    let fake = Fake::start();
    // The earlier run's window has 10 calls left and ends 150 ms after it first refuses.
    let limiter = Arc::new(Mutex::new(Limiter::new(10, Some(Duration::from_millis(150)))));
    serve(&fake, Arc::clone(&limiter));
    let (out, report) = run(&fake, &["--tags", "@LIM-3", "--level", "full"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{report:#}");
    assert!(
        stderr.contains(
            "rate window of owner_second_client/get_restaurant in use by an earlier run: waiting 1 s"
        ),
        "{stderr}"
    );
    for id in ["LIM-2", "LIM-3"] {
        let c = clause(&report, id);
        assert_eq!(c["status"], "passed", "{c:#}");
        assert_eq!(c["full_status"], "passed", "{c:#}");
    }
    // 10 calls in the earlier window, then exactly the limit in a fresh one.
    assert_eq!(limiter.lock().unwrap().served, 10 + LIMIT);
    // The wait (a whole window, shortened to 300 ms here) is in the report.
    let waited = report["timing"]["waited_for_rate_windows_s"].as_f64().unwrap_or_default();
    assert!(waited > 0.0, "{:#}", report["timing"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("waited for rate windows: "));
}

#[test]
fn a_window_still_full_after_the_wait_fails_the_limit() {
    let fake = Fake::start();
    let limiter = Arc::new(Mutex::new(Limiter::new(10, None)));
    serve(&fake, Arc::clone(&limiter));
    let (out, report) = run(&fake, &["--tags", "@LIM-3"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let c = clause(&report, "LIM-2");
    assert_eq!(c["status"], "failed", "{c:#}");
    let message = c["scenarios"][0]["message"].as_str().unwrap_or_default();
    for needle in [
        "the first 1000 calls of get_restaurant in a minute served",
        // The burst after the wait is judged alone: on a fresh window, call 1 was refused.
        "call 1 refused when at most 0 calls could have been served, again after waiting",
        "MCP_RATE_LIMITED",
    ] {
        assert!(message.contains(needle), "message lacks {needle:?}:\n{message}");
    }
    // Twice 10 calls: one burst, one more after the wait; nothing more is sent.
    assert_eq!(limiter.lock().unwrap().served, 10);
}

#[test]
fn a_used_up_dataset_ends_the_run_before_any_scenario() {
    let fake = Fake::start();
    let busy = dataset().landmarks.busy_restaurant;
    // Two received orders left: a run moves up to three.
    fake.serve_tools(move |tool, args| {
        let status = args.pointer("/status/0").and_then(Value::as_str);
        match (tool, status) {
            ("list_orders", Some("received")) if args["restaurant_id"] == busy.as_str() => {
                let orders: Vec<Value> = dataset()
                    .orders_of(&busy)
                    .take(2)
                    .map(|o| {
                        let mut o = serde_json::to_value(o).unwrap();
                        o["status"] = json!("received");
                        o
                    })
                    .collect();
                success(json!({ "orders": orders }))
            }
            _ => conforming(tool, args),
        }
    });
    let outcome = fake.run(2000, &["--tags", "@ENV-1"]);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    let reason = outcome.error.as_deref().unwrap_or_default();
    assert!(reason.starts_with("the dataset is used up: re-seed fixtures/dataset.json"), "{reason}");
    assert!(reason.contains("2 orders in status received; a run needs 3"), "{reason}");
    assert!(!reason.contains('\n'), "{reason}");
}
