//! The listener against slow and stalled peers (docs/RELIABILITY.md, "Caps and timeouts"):
//! headers and bodies have deadlines, stalled connections beyond the cap do not lock a
//! well-behaved client out (under a low file descriptor limit too), a body cut short is not
//! "too large" (LIM-7), and a stalled client does not keep the server from shutting down.

use std::process::Stdio;
use std::time::Duration;

use mock_server::Config;
use mock_server::transport::serve::ServeLimits;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::support::{self, start_with};

/// Far longer than any test waits: only the limit under test can close a connection.
const LONG: Duration = Duration::from_secs(600);
/// How long a test waits for what should happen within a second: a generous margin.
const MARGIN: Duration = Duration::from_secs(10);

fn limits(change: impl FnOnce(&mut ServeLimits)) -> ServeLimits {
    let mut limits = ServeLimits {
        header_timeout: LONG,
        body_timeout: LONG,
        shutdown_timeout: LONG,
        ..ServeLimits::default()
    };
    change(&mut limits);
    limits
}

async fn connect(base: &str) -> TcpStream {
    TcpStream::connect(base.strip_prefix("http://").unwrap()).await.expect("the server accepts")
}

/// A connection that sent half a request line's headers and then nothing.
async fn stalled(base: &str) -> TcpStream {
    let mut stream = connect(base).await;
    stream.write_all(b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHo").await.unwrap();
    stream
}

/// Whether the server closes `stream` within `wait` (EOF or reset), reading what it sends.
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 4096];
    timeout(wait, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// The head of a POST to `path` announcing `length` bytes of JSON body.
fn post_head(base: &str, path: &str, length: usize) -> String {
    let host = base.strip_prefix("http://").unwrap();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {}\r\n\
         Content-Length: {length}\r\n\r\n",
        support::token("owner")
    )
}

/// Everything the server sends on `stream` until it closes it: (status, body as JSON).
async fn answer(stream: &mut TcpStream) -> (u16, Value) {
    let mut bytes = Vec::new();
    timeout(MARGIN, stream.read_to_end(&mut bytes)).await.expect("an answer in time").expect("readable");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// A well-behaved client's GET, on a connection of its own.
async fn fresh_get(base: &str) -> u16 {
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let get = client.get(format!("{base}/.well-known/oauth-protected-resource")).send();
    timeout(MARGIN, get).await.expect("served in time").expect("served").status().as_u16()
}

// A peer that sends half a header line and waits is closed after the header timeout (it was
// kept for ever); a well-behaved client is served meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_half_sent_header_is_closed_after_the_header_timeout() {
    let server = start_with(|c| c.serve = limits(|l| l.header_timeout = Duration::from_millis(300))).await;
    let mut slow = stalled(&server.base).await;
    assert_eq!(fresh_get(&server.base).await, 200);
    assert!(closed_within(&mut slow, MARGIN).await, "the stalled connection is still open");
}

// Beyond the cap, a new connection closes the oldest idle one (here: stalled in its headers)
// instead of waiting behind them; a well-behaved client is served at once.
#[tokio::test(flavor = "multi_thread")]
async fn stalled_connections_beyond_the_cap_do_not_lock_out_a_fresh_client() {
    let server = start_with(|c| c.serve = limits(|l| l.max_connections = 8)).await;
    let mut slow = Vec::new();
    for _ in 0..30 {
        slow.push(stalled(&server.base).await);
    }
    assert_eq!(fresh_get(&server.base).await, 200);
    let closed =
        futures::future::join_all(slow.iter_mut().map(|s| closed_within(s, Duration::from_secs(2)))).await;
    let closed = closed.iter().filter(|c| **c).count();
    assert!(closed >= 30 - 8, "only {closed} of 30 stalled connections were closed for newer ones");
}

// The tester's lock-out: under `ulimit -n 64`, 100 stalled connections took every descriptor
// and no client was served again. The cap now stays under the limit and makes room.
#[tokio::test(flavor = "multi_thread")]
async fn stalled_connections_under_a_low_descriptor_limit_do_not_lock_out_a_fresh_client() {
    let log = std::env::temp_dir().join(format!("chataigne-it-ulimit-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_chataigne-mock"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--header-timeout-ms",
            "600000",
            "--log-format",
            "json",
            "--log-file",
        ])
        .arg(&log)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let base = format!("http://{}", support::served_address(&log).await);
    let mut slow = Vec::new();
    for _ in 0..100 {
        slow.push(stalled(&base).await);
    }
    assert_eq!(fresh_get(&base).await, 200);
    assert_eq!(fresh_get(&base).await, 200, "and again");
    let _ = child.kill().await;
    let _ = std::fs::remove_file(&log);
}

// LIM-7: 413 means too large. A body cut short (the client half-closes before its
// Content-Length) is a 400 with PROTO-2's -32700 on /mcp and a 400 on registration; one still
// incomplete at the body deadline is a 408 and the connection is closed.
#[tokio::test(flavor = "multi_thread")]
async fn a_body_cut_short_is_400_and_a_stalled_one_408_never_413() {
    let server = start_with(|c| c.serve = limits(|l| l.body_timeout = Duration::from_millis(500))).await;
    let base = server.base.clone();
    let partial = br#"{"jsonrpc":"2.0","id":1,"#;
    for (path, code) in [("/mcp", Some(-32700)), ("/oauth/register", None)] {
        let mut cut = connect(&base).await;
        cut.write_all(post_head(&base, path, 100).as_bytes()).await.unwrap();
        cut.write_all(partial).await.unwrap();
        cut.shutdown().await.unwrap();
        let (status, body) = answer(&mut cut).await;
        assert_eq!(status, 400, "{path} cut short: {body}");
        if let Some(code) = code {
            assert_eq!(body["error"]["code"], code, "{body}");
        }

        let mut stalled = connect(&base).await;
        stalled.write_all(post_head(&base, path, 100).as_bytes()).await.unwrap();
        stalled.write_all(partial).await.unwrap();
        let (status, body) = answer(&mut stalled).await;
        assert_eq!(status, 408, "{path} stalled: {body}");
    }
    assert_eq!(fresh_get(&base).await, 200);
}

// SIGTERM with stalled clients (one in its headers, one in its body): the server still
// exits, once the shutdown timeout is over (it waited for them for ever).
#[tokio::test(flavor = "multi_thread")]
async fn shutdown_with_stalled_clients_returns_within_the_shutdown_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let config = Config {
        serve: limits(|l| l.shutdown_timeout = Duration::from_millis(500)),
        ..Config::for_tests(support::CONTROL_SECRET)
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mock_server::run(listener, config, async {
        let _ = stopped.await;
    }));
    let _headers = stalled(&base).await;
    let mut body = connect(&base).await;
    body.write_all(post_head(&base, "/mcp", 100).as_bytes()).await.unwrap();
    body.write_all(b"{").await.unwrap();
    assert_eq!(fresh_get(&base).await, 200, "the server is up and the stalled ones are in");
    stop.send(()).unwrap();
    let stopped = timeout(MARGIN, server).await.expect("the server stops in time");
    stopped.expect("the server task").expect("a clean stop");
}
