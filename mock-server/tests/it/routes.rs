//! Which routes exist and who may reach them: the DNS-rebinding check (PROTO-5) on every route,
//! not only `/mcp`; the control API's secret (none by default, never empty) and its clock's
//! bound; unknown paths are 404 whatever is switched on; the binary's refusals at start.

use std::process::Stdio;
use std::time::Duration;

use mock_server::Defect;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{self, CONTROL_SECRET, start, start_with};

const EVIL: &str = "evil.example";

/// (method, path) of every route besides `/mcp`, and one that does not exist.
const ROUTES: [(&str, &str); 10] = [
    ("GET", "/control"),
    ("POST", "/control/reset"),
    ("POST", "/control/clock/advance"),
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/.well-known/chataigne-control"),
    ("POST", "/oauth/register"),
    ("GET", "/oauth/authorize"),
    ("POST", "/oauth/token"),
    ("GET", "/no-such-path"),
];

/// One client for the module: building one loads the system's TLS roots, which is slow.
fn client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(reqwest::Client::new).clone()
}

/// The HTTP status of `method path` with the control secret, a JSON body and `extra` headers.
async fn status(base: &str, method: &str, path: &str, extra: &[(&str, &str)]) -> u16 {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client()
        .request(method, format!("{base}{path}"))
        .header("x-control-secret", CONTROL_SECRET)
        .json(&json!({ "seconds": 60, "redirect_uris": ["http://127.0.0.1:9/cb"] }));
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.send().await.expect("the server answers").status().as_u16()
}

// PROTO-5 on every route: a web page on another origin, or reaching the server through a
// rebound name, is refused before anything runs, as on /mcp.
#[tokio::test(flavor = "multi_thread")]
async fn every_route_refuses_a_foreign_host_or_origin() {
    let server = start().await;
    let base = server.base.clone();
    let foreign_origin = format!("http://{EVIL}");
    for (method, path) in ROUTES {
        let host = status(&base, method, path, &[("host", EVIL)]).await;
        assert_eq!(host, 403, "{method} {path} with Host {EVIL}");
        let origin = status(&base, method, path, &[("origin", &foreign_origin)]).await;
        assert_eq!(origin, 403, "{method} {path} with Origin {foreign_origin}");
        let port = base.rsplit(':').next().unwrap();
        let local = status(
            &base,
            method,
            path,
            &[("host", &format!("localhost:{port}")), ("origin", "http://localhost:6274")],
        )
        .await;
        assert_ne!(local, 403, "{method} {path} from a loopback page");
    }
    // The tester's reset: with the right secret but an attacker's Host and Origin, nothing moves.
    server.advance(3600).await;
    let reset = status(&base, "POST", "/control/reset", &[("host", EVIL), ("origin", &foreign_origin)]).await;
    assert_eq!(reset, 403);
    let clock = server.get("/control/clock", &[("x-control-secret", CONTROL_SECRET)]).await;
    assert_eq!(clock.json["offset_ms"], 3_600_000, "the reset did not run: {}", clock.text);
}

// --allowed-host and --allowed-origin widen the check on every route; the server's own origin
// (--public-url) is allowed, since its consent page posts back to it; `host-unchecked` stays a
// defect of /mcp only.
#[tokio::test(flavor = "multi_thread")]
async fn allowed_hosts_and_the_servers_own_origin_pass_and_defects_stay_on_mcp() {
    let server = start_with(|c| {
        c.allowed_hosts = Some(vec!["mcp.example.test".into(), "pinned.example:8443".into()]);
        c.public_url = Some("https://mcp.example.test/".into());
        c.defects.push(Defect::HostUnchecked);
    })
    .await;
    let base = server.base.clone();
    for (method, path) in ROUTES {
        for headers in [
            [("host", "mcp.example.test"), ("origin", "https://mcp.example.test")],
            [("host", "MCP.example.test:443"), ("origin", "http://127.0.0.1:9")],
            [("host", "pinned.example:8443"), ("origin", "http://[::1]:9")],
        ] {
            assert_ne!(status(&base, method, path, &headers).await, 403, "{method} {path} {headers:?}");
        }
        for headers in [[("host", "pinned.example:9999")], [("host", EVIL)]] {
            assert_eq!(status(&base, method, path, &headers).await, 403, "{method} {path} {headers:?}");
        }
        let foreign = [("origin", "https://mcp.example.test.evil.example")];
        assert_eq!(status(&base, method, path, &foreign).await, 403, "{method} {path}");
    }
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }).to_string();
    let auth = format!("Bearer {}", support::token("owner"));
    let mcp = server.post_mcp(&[("authorization", &auth), ("host", EVIL)], list).await;
    assert_eq!(mcp.status, 200, "the defect still opens /mcp: {}", mcp.text);
}

// Without the authorization server, an unknown path is still 404 (it was the gate's 401): only
// /mcp wants a bearer.
#[tokio::test(flavor = "multi_thread")]
async fn unknown_paths_are_404_with_or_without_the_authorization_server() {
    for auth_server in [false, true] {
        let server = start_with(|c| c.auth_server = auth_server).await;
        for (method, path) in [("GET", "/no-such-path"), ("POST", "/no-such-path"), ("GET", "/oauth/nothing")]
        {
            let got = status(&server.base, method, path, &[]).await;
            assert_eq!(got, 404, "{method} {path}, auth server {auth_server}");
        }
        let metadata = status(&server.base, "GET", "/.well-known/oauth-authorization-server", &[]).await;
        assert_eq!(metadata, if auth_server { 200 } else { 404 });
        let mcp =
            server.post_mcp(&[], json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }).to_string());
        assert_eq!(mcp.await.status, 401, "/mcp still wants a bearer");
    }
}

/// The binary with `args`, its stderr piped; killed when dropped.
fn spawn(args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_chataigne-mock"))
        .args(args)
        .env_remove("CHATAIGNE_CONTROL_SECRET")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts")
}

/// What the binary printed to stderr before refusing to start; fails if it serves instead.
pub async fn refused(args: &[&str]) -> String {
    let child = spawn(args);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{args:?}: the server started instead of refusing"))
        .expect("the binary runs");
    assert!(!out.status.success(), "{args:?} is refused");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

// No default secret: --control-api alone generates one, printed once to stderr (not to the log
// file); the old public default `dev-control-secret` and an empty header open nothing.
#[tokio::test(flavor = "multi_thread")]
async fn control_api_without_a_secret_gets_a_random_one_printed_to_stderr_only() {
    let log = std::env::temp_dir().join(format!("chataigne-it-control-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let log_path = log.to_str().unwrap().to_owned();
    let mut child =
        spawn(&["--listen", "127.0.0.1:0", "--control-api", "--log-format", "json", "--log-file", &log_path]);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a line on stderr in time")
        .expect("stderr readable")
        .expect("the secret is printed");
    let secret = line.rsplit(' ').next().unwrap().to_owned();
    assert!(line.contains("control API secret") && secret.len() >= 32, "{line}");
    let base = format!("http://{}", support::served_address(&log).await);
    let http = reqwest::Client::new();
    let get = async |secret: Option<&str>| {
        let mut request = http.get(format!("{base}/control"));
        if let Some(secret) = secret {
            request = request.header("x-control-secret", secret);
        }
        request.send().await.expect("the binary answers").status().as_u16()
    };
    for wrong in [None, Some(""), Some("dev-control-secret"), Some(&secret[..secret.len() - 1])] {
        assert_eq!(get(wrong).await, 401, "{wrong:?}");
    }
    assert_eq!(get(Some(&secret)).await, 200);
    let _ = child.kill().await;
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert!(!logged.contains(&secret), "the secret is in the log:\n{logged}");
}

// An empty (or blank) secret would open the control API to an empty header: refused at start.
#[tokio::test(flavor = "multi_thread")]
async fn an_empty_control_secret_is_refused_at_start() {
    for secret in ["", "  "] {
        let said = refused(&["--listen", "127.0.0.1:0", "--control-api", "--control-secret", secret]).await;
        assert!(said.contains("--control-secret must not be empty"), "{said}");
    }
    let config = mock_server::Config::for_tests("");
    let error = mock_server::App::new(config).map(drop).unwrap_err().to_string();
    assert!(error.contains("non-empty secret"), "{error}");
}

// The control clock moved forward by any amount wrapped its offset negative (i64::MAX seconds
// saturated, then added): it now moves at most ten years ahead in all, never back, and a refusal
// is a 400 that changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_control_clock_moves_at_most_ten_years_ahead_and_never_back() {
    let server = start().await;
    let post = async |body: Value| {
        let answer = client()
            .post(server.url("/control/clock/advance"))
            .header("x-control-secret", CONTROL_SECRET)
            .json(&body)
            .send()
            .await
            .expect("the control API answers");
        (answer.status().as_u16(), answer.json::<Value>().await.unwrap_or(Value::Null))
    };
    let year = 365 * 24 * 3600_i64;
    let (status, clock) = post(json!({ "seconds": 9 * year })).await;
    assert_eq!(status, 200, "{clock}");
    for refused in [
        json!({ "seconds": 2 * year }),
        json!({ "seconds": i64::MAX }),
        json!({ "seconds": i64::MAX / 1000, "ms": i64::MAX }),
        json!({ "ms": i64::MAX }),
        json!({ "seconds": -1 }),
    ] {
        assert_eq!(post(refused.clone()).await.0, 400, "{refused}");
    }
    let now = server.get("/control/clock", &[("x-control-secret", CONTROL_SECRET)]).await;
    assert_eq!(now.json["offset_ms"], clock["offset_ms"], "refusals moved nothing: {}", now.text);
    assert!(now.json["now_ms"].as_i64().is_some_and(|ms| ms > 0), "{}", now.text);
    let reply = server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await;
    support::expect_ok(&reply);
}

// The development tokens are public: listening beyond loopback is refused unless asked for, and
// then warned about on stderr.
#[tokio::test(flavor = "multi_thread")]
async fn a_public_listen_address_is_refused_unless_allowed_and_then_warned_about() {
    for address in ["0.0.0.0:0", "[::]:0"] {
        let said = refused(&["--listen", address]).await;
        assert!(said.contains("--allow-public-bind") && said.contains("development tokens"), "{said}");
    }
    let mut child = spawn(&["--listen", "0.0.0.0:0", "--allow-public-bind", "--log-file", "/dev/null"]);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a line on stderr in time")
        .expect("stderr readable")
        .expect("a warning");
    assert!(line.starts_with("warning: listening on 0.0.0.0:0") && line.contains("public"), "{line}");
    let _ = child.kill().await;
    // Loopback, in either family, needs nothing.
    let mut quiet = spawn(&["--listen", "[::ffff:127.0.0.1]:0", "--log-file", "/dev/null"]);
    let mut lines = BufReader::new(quiet.stderr.take().unwrap()).lines();
    let said = tokio::time::timeout(Duration::from_secs(2), lines.next_line()).await;
    assert!(said.is_err() || matches!(said, Ok(Ok(None))), "loopback: {said:?}");
    let _ = quiet.kill().await;
}
