//! The Redis backend (`--redis`, `--redis-cluster`): replicas sharing one Redis (or one Redis
//! Cluster) answer as one server — data, clock, revocations, idempotency records and rate windows
//! shared —, lose no write and double none when one is killed mid-call or a cluster master fails
//! over; no raw key reaches Redis; a Redis that is down or stalled holds nothing up
//! (keyed writes get MCP_DEPENDENCY_UNAVAILABLE within the 500 ms timeout, the rest is served);
//! a Redis that lost its data never lets a key run twice; one that does not answer at start
//! stops the server. Each test starts its own `redis-server` on a free port (built with
//! `--features redis-tests`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mock_server::{Config, Defect};
use serde_json::{Value, json};

/// A redis-server child process, killed when dropped.
struct RedisServer {
    child: Child,
    port: u16,
    /// Where an append-only file is kept, for a Redis with persistence.
    dir: Option<PathBuf>,
}

impl RedisServer {
    /// A Redis without persistence, as `scripts/test` runs it: a restart loses everything.
    fn start(port: u16) -> RedisServer {
        RedisServer::launch(port, None)
    }

    /// A Redis that logs every write to disk before answering, in `dir`.
    fn persistent(port: u16, dir: PathBuf) -> RedisServer {
        RedisServer::launch(port, Some(dir))
    }

    /// A redis-server with these arguments, once it accepts connections.
    fn spawn(port: u16, args: &[&str]) -> RedisServer {
        let child = Command::new("redis-server")
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (apt-get install redis-server)");
        let server = RedisServer { child, port, dir: None };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not start on port {port}");
    }

    fn launch(port: u16, dir: Option<PathBuf>) -> RedisServer {
        let mut args = vec!["--port".to_owned(), port.to_string(), "--bind".into(), "127.0.0.1".into()];
        match &dir {
            None => args.extend(["--save", "", "--appendonly", "no"].map(String::from)),
            Some(dir) => {
                std::fs::create_dir_all(dir).unwrap();
                args.extend(
                    ["--save", "", "--appendonly", "yes", "--appendfsync", "always"].map(String::from),
                );
                args.extend(["--dir".to_owned(), dir.display().to_string()]);
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut server = RedisServer::spawn(port, &args);
        server.dir = dir;
        server
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().unwrap();
        assert!(status.success(), "kill {signal}");
    }

    /// Stops the process without killing it: its socket stays open and accepts what is sent.
    fn pause(&self) {
        self.signal("-STOP");
    }

    fn resume(&self) {
        self.signal("-CONT");
    }

    /// Kills the process (no shutdown, no save), in place.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the process (no shutdown, no save); returns its port and data directory.
    fn stop(mut self) -> (u16, Option<PathBuf>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.port, self.dir.take())
    }

    /// A plain connection, to look at what the replicas wrote.
    fn inspect(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection().unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One replica: the reference server on Redis, with the deployment's shared secret.
async fn replica(redis_url: &str) -> String {
    replica_with(redis_url, Vec::new()).await
}

/// A replica with defects switched on; returned once it answers (it connects to Redis first).
async fn replica_with(redis_url: &str, defects: Vec<Defect>) -> String {
    start_replica(Config {
        secret: Some("shared-deployment-secret".into()),
        defects,
        ..replica_config(redis_url)
    })
    .await
}

/// A replica on `redis_url`, namespace `it`, with no `--secret` and the control API.
fn replica_config(redis_url: &str) -> Config {
    Config {
        redis_url: Some(redis_url.to_owned()),
        redis_namespace: "it".into(),
        ..Config::for_tests("secret")
    }
}

async fn start_replica(config: Config) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mock_server::run(listener, config, std::future::pending()));
    let base = format!("http://{addr}");
    assert_eq!(list_tools(&base).await, 17, "the replica serves");
    base
}

/// One client for the whole binary: building one loads the system's TLS roots, which is slow.
fn http() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(reqwest::Client::new)
}

async fn rpc(base: &str, body: Value) -> Value {
    http()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("authorization", "Bearer dev-token-owner")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn call(base: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    rpc(base, body).await["result"]["structuredContent"].clone()
}

/// How many tools `tools/list` names.
async fn list_tools(base: &str) -> usize {
    let reply = rpc(base, json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    reply["result"]["tools"].as_array().map_or(0, Vec::len)
}

/// Moves a replica's clock forward through the control API.
async fn advance_clock(base: &str, seconds: u64) {
    let status = http()
        .post(format!("{base}/control/clock/advance"))
        .header("x-control-secret", "secret")
        .json(&json!({ "seconds": seconds }))
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success(), "{status}");
}

fn code(structured: &Value) -> Option<&str> {
    structured.pointer("/data/error/code").and_then(Value::as_str)
}

async fn messages_in(base: &str) -> u64 {
    let s =
        call(base, "get_conversation", json!({"restaurant_id": "rst_central", "conversation_id": "cnv_c02"}))
            .await;
    s["data"]["conversation"]["message_count"].as_u64().unwrap()
}

fn send(key: &str) -> Value {
    json!({"restaurant_id": "rst_central", "conversation_id": "cnv_c02", "text": "Table for two is ready", "idempotency_key": key})
}

/// `future`, which must end within `limit`.
async fn within<T>(limit: Duration, what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, future).await.unwrap_or_else(|_| panic!("{what}: no answer within {limit:?}"))
}

/// The keyed write, retried while the answer says to retry later (Redis coming back, a claim
/// being released), for at most 15 s; the first other answer.
async fn until_settled(base: &str, args: Value) -> Value {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = call(base, "send_message", args.clone()).await;
        let later = matches!(code(&reply), Some("MCP_DEPENDENCY_UNAVAILABLE" | "MCP_OPERATION_IN_PROGRESS"));
        if !later || Instant::now() > end {
            return reply;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `n` keyed writes sent at once, each with its own key; the answers with how long each took.
async fn concurrent_writes(base: &str, keys: &[String]) -> Vec<(Value, Duration)> {
    let calls = keys.iter().map(|key| {
        let (base, args) = (base.to_owned(), send(key));
        tokio::spawn(async move {
            let sent = Instant::now();
            let reply = call(&base, "send_message", args).await;
            (reply, sent.elapsed())
        })
    });
    futures::future::join_all(calls).await.into_iter().map(Result::unwrap).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicates_across_two_replicas_have_exactly_one_effect() {
    let redis = RedisServer::start(free_port());
    let (a, b) = (replica(&redis.url()).await, replica(&redis.url()).await);
    let before = messages_in(&a).await;
    let calls = (0..64).map(|i| {
        let base = if i % 2 == 0 { a.clone() } else { b.clone() };
        tokio::spawn(async move { call(&base, "send_message", send("split-key-0001")).await })
    });
    let results: Vec<Value> =
        futures::future::join_all(calls).await.into_iter().map(Result::unwrap).collect();
    let first_runs = results.iter().filter(|r| code(r).is_none() && r["meta"]["replayed"] == false).count();
    assert_eq!(first_runs, 1, "exactly one call ran the effect");
    for r in &results {
        assert!(code(r).is_none() || code(r) == Some("MCP_OPERATION_IN_PROGRESS"), "{r}");
    }
    assert_eq!(
        (messages_in(&a).await, messages_in(&b).await),
        (before + 1, before + 1),
        "one message in all"
    );
}

/// Issue 28: replicas started with `--redis` and no `--secret` each drew a random secret, so a
/// key sent to one then the other ran twice (both `replayed: false`) and a cursor from one was
/// MCP_CURSOR_INVALID on the other. The first now stores a secret in Redis and both use it.
#[tokio::test]
async fn replicas_without_a_secret_share_the_one_kept_in_redis() {
    let redis = RedisServer::start(free_port());
    let (a, b) = (
        start_replica(replica_config(&redis.url())).await,
        start_replica(replica_config(&redis.url())).await,
    );
    let before = messages_in(&a).await;
    let first = call(&a, "send_message", send("no-secret-key-0001")).await;
    assert_eq!((code(&first), &first["meta"]["replayed"]), (None, &json!(false)), "{first}");
    let second = call(&b, "send_message", send("no-secret-key-0001")).await;
    assert_eq!((code(&second), &second["meta"]["replayed"]), (None, &json!(true)), "{second}");
    assert_eq!(second["data"], first["data"], "the stored result");
    assert_eq!((messages_in(&a).await, messages_in(&b).await), (before + 1, before + 1), "one effect");

    // A cursor from a is b's too: the next page, the same one a gives.
    let page = json!({"restaurant_id": "rst_central", "limit": 2});
    let first_page = call(&a, "list_orders", page.clone()).await;
    let cursor = first_page["meta"]["next_cursor"].as_str().expect("a next page").to_owned();
    let next = |base: String| {
        let mut args = page.clone();
        args["cursor"] = json!(cursor);
        async move { call(&base, "list_orders", args).await }
    };
    let (on_b, on_a) = (next(b.clone()).await, next(a.clone()).await);
    assert_eq!(code(&on_b), None, "a's cursor on b: {on_b}");
    assert_eq!(on_b["data"], on_a["data"]);

    // The secret is the one in Redis, a random 256 bits, under the namespace.
    let stored: String = redis::cmd("GET").arg("{it}:secret").query(&mut redis.inspect()).unwrap();
    assert!(stored.len() == 64 && stored.bytes().all(|c| c.is_ascii_hexdigit()), "{stored:?}");
}

/// What README's Redis section promises of replicas: keys, windows and the data are shared (the
/// fuller walk through three replicas is `three_replicas_on_one_redis_behave_as_one_server`).
#[tokio::test]
async fn replicas_share_data_idempotency_records_and_rate_windows() {
    let redis = RedisServer::start(free_port());
    let (a, b) = (replica(&redis.url()).await, replica(&redis.url()).await);

    // A key used on one replica replays on the other, with the stored result, and the effect is
    // in the data of both.
    let before = messages_in(&a).await;
    let first = call(&a, "send_message", send("shared-key-0001")).await;
    assert_eq!((code(&first), &first["meta"]["replayed"]), (None, &json!(false)), "{first}");
    let replay = call(&b, "send_message", send("shared-key-0001")).await;
    assert_eq!(replay["meta"]["replayed"], true, "{replay}");
    assert_eq!(replay["data"], first["data"], "the stored result, message id included");
    assert_eq!((messages_in(&a).await, messages_in(&b).await), (before + 1, before + 1));

    // An organization created on a is the caller's on b too.
    let created = call(
        &a,
        "create_organization",
        json!({"name": "Replica A Bistro", "idempotency_key": "org-key-0001"}),
    )
    .await;
    let org = created["data"]["organization"]["id"].as_str().expect("an organization id").to_owned();
    for base in [&a, &b] {
        let listed = call(base, "list_restaurants", json!({"organization_id": org})).await;
        assert_eq!(code(&listed), None, "{listed}");
    }
    let replayed = call(
        &b,
        "create_organization",
        json!({"name": "Replica A Bistro", "idempotency_key": "org-key-0001"}),
    )
    .await;
    assert_eq!(replayed["data"]["organization"]["id"], org.as_str());
    assert_eq!(replayed["meta"]["replayed"], true);

    // A persona's rate window counts its calls on every replica (1,000 reads a minute).
    for i in 0..1000 {
        let base = if i % 2 == 0 { &a } else { &b };
        let s = call(base, "list_instructions", json!({"restaurant_id": "rst_central"})).await;
        assert_eq!(code(&s), None, "call {i}: {s}");
    }
    let limited = call(&b, "list_instructions", json!({"restaurant_id": "rst_central"})).await;
    assert_eq!(code(&limited), Some("MCP_RATE_LIMITED"));
    assert!(limited["data"]["error"]["retry_after_ms"].as_u64().unwrap() > 0);
    let limited = call(&a, "list_instructions", json!({"restaurant_id": "rst_central"})).await;
    assert_eq!(code(&limited), Some("MCP_RATE_LIMITED"));
    // Another tool is not slowed (LIM-3).
    let other = call(&a, "get_restaurant", json!({"restaurant_id": "rst_central"})).await;
    assert_eq!(code(&other), None);
}

#[tokio::test]
async fn redis_holds_no_raw_key() {
    let redis = RedisServer::start(free_port());
    let a = replica(&redis.url()).await;
    let raw = "raw-key-CANARY-7f3a9c";
    assert_eq!(code(&call(&a, "send_message", send(raw)).await), None);
    let mut conn = redis.inspect();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert!(!keys.is_empty());
    for key in keys {
        assert!(!key.contains("CANARY"), "{key}");
        let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).unwrap();
        if kind == "hash" {
            let fields: Vec<String> = redis::cmd("HGETALL").arg(&key).query(&mut conn).unwrap();
            assert!(fields.iter().all(|f| !f.contains("CANARY")), "{key}: {fields:?}");
        }
    }
}

/// scripts/check-redis-keys, scripts/test's raw-key check: it passes on a Redis the server wrote
/// to, and fails when a raw key is there, and whenever it saw nothing (an empty Redis, a Redis it
/// cannot reach): a check of nothing is not a pass.
#[tokio::test]
async fn the_raw_key_check_of_scripts_test_passes_only_on_hashed_keys_it_saw() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/check-redis-keys");
    let check = |port: u16| {
        let out = Command::new("bash").arg(&script).arg(port.to_string()).output().expect("bash runs");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let redis = RedisServer::start(free_port());
    let (ok, said) = check(redis.port);
    assert!(!ok && said.contains("no key at all"), "an empty Redis: {said}");
    let a = replica(&redis.url()).await;
    assert_eq!(code(&call(&a, "send_message", send("raw-key-check-0001")).await), None);
    assert_eq!(code(&call(&a, "get_restaurant", json!({"restaurant_id": "rst_central"})).await), None);
    let (ok, said) = check(redis.port);
    assert!(ok, "after the server's writes: {said}");
    let mut conn = redis.inspect();
    let () = redis::cmd("SET").arg("chataigne:idem:raw-key-check-0001").arg("1").query(&mut conn).unwrap();
    let (ok, said) = check(redis.port);
    assert!(!ok && said.contains("raw-key-check-0001"), "a raw key: {said}");
    let (port, _) = redis.stop();
    let (ok, said) = check(port);
    assert!(!ok && said.contains("--scan failed"), "a Redis it cannot reach: {said}");
}

/// Redis down, then back with its data (it persists every write): keyed writes are refused
/// during the outage with no effect, reads go on, and afterwards each key has run once.
#[tokio::test]
async fn redis_down_gives_dependency_unavailable_then_a_persistent_redis_recovers_without_duplicates() {
    let dir = std::env::temp_dir().join(format!("chataigne-redis-{}-{}", std::process::id(), free_port()));
    let redis = RedisServer::persistent(free_port(), dir);
    let a = replica(&redis.url()).await;
    assert_eq!(code(&call(&a, "send_message", send("before-outage-1")).await), None);
    let (port, dir) = redis.stop();

    let during = call(&a, "send_message", send("during-outage-1")).await;
    assert_eq!(code(&during), Some("MCP_DEPENDENCY_UNAVAILABLE"), "{during}");
    assert_eq!(during["data"]["error"]["retryable"], true);
    let read = call(&a, "get_restaurant", json!({"restaurant_id": "rst_central"})).await;
    assert_eq!(code(&read), None, "reads need no Redis: {read}");
    let count = messages_in(&a).await;

    let _redis = RedisServer::persistent(port, dir.expect("a data directory"));
    let back = Instant::now();
    let retried = until_settled(&a, send("during-outage-1")).await;
    eprintln!("first keyed write accepted {:?} after Redis was back", back.elapsed());
    assert_eq!(code(&retried), None, "{retried}");
    assert_eq!(retried["meta"]["replayed"], false, "the refused call had no effect, so it runs now");
    let again = call(&a, "send_message", send("during-outage-1")).await;
    assert_eq!(again["meta"]["replayed"], true);
    let kept = call(&a, "send_message", send("before-outage-1")).await;
    assert_eq!(kept["meta"]["replayed"], true, "Redis kept the record through its restart: {kept}");
    assert_eq!(messages_in(&a).await, count + 1, "one effect");
}

/// Redis paused (SIGSTOP) for 5 s: nothing waits for it longer than the 500 ms timeout, calls do
/// not queue behind one another, and once it resumes every refused key runs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_redis_holds_up_nothing_and_keyed_writes_fail_fast() {
    let redis = RedisServer::start(free_port());
    let a = replica(&redis.url()).await;
    // Without its rate check, b's first exchange with the stalled Redis is its catch-up with the
    // data's log, which Redis runs when it resumes, long after b answered: harmless, a read.
    let b = replica_with(&redis.url(), vec![Defect::NoRateLimit]).await;
    assert_eq!(code(&call(&a, "send_message", send("before-stall-a")).await), None);
    assert_eq!(code(&call(&b, "send_message", send("before-stall-b")).await), None);
    let on = messages_in(&a).await;
    assert_eq!(messages_in(&b).await, on, "one conversation");

    redis.pause();
    let stalled = Instant::now();
    let margin = Duration::from_secs(2);
    let listed = Instant::now();
    assert_eq!(within(margin, "tools/list", list_tools(&a)).await, 17);
    let listed = listed.elapsed();
    let read = within(
        margin,
        "an unkeyed read",
        call(&a, "get_restaurant", json!({"restaurant_id": "rst_central"})),
    )
    .await;
    assert_eq!(code(&read), None, "served, uncounted: {read}");

    let keys = |replica: &str| (0..16).map(|i| format!("stall-{replica}-{i:04}")).collect::<Vec<_>>();
    let (keys_a, keys_b) = (keys("a"), keys("b"));
    let answers_a = within(margin, "16 keyed writes on a", concurrent_writes(&a, &keys_a)).await;
    let answers_b = within(margin, "16 keyed writes on b", concurrent_writes(&b, &keys_b)).await;
    for (reply, _) in answers_a.iter().chain(&answers_b) {
        assert_eq!(code(reply), Some("MCP_DEPENDENCY_UNAVAILABLE"), "{reply}");
        assert_eq!(reply["data"]["error"]["retryable"], true);
    }
    let slowest = |answers: &[(Value, Duration)]| answers.iter().map(|(_, took)| *took).max().unwrap();
    eprintln!(
        "during the stall: tools/list {listed:?}; 16 concurrent keyed writes: slowest {:?} (a), {:?} (b)",
        slowest(&answers_a),
        slowest(&answers_b)
    );
    assert!(stalled.elapsed() < Duration::from_secs(5), "all of the above happened during the stall");
    tokio::time::sleep_until((stalled + Duration::from_secs(5)).into()).await;
    redis.resume();

    // Every refused key runs now, once: the refused calls had no effect, and the claims Redis
    // made late were released.
    for (base, keys) in [(&a, &keys_a), (&b, &keys_b)] {
        for key in keys {
            let reply = until_settled(base, send(key)).await;
            assert_eq!(code(&reply), None, "{key}: {reply}");
            assert_eq!(reply["meta"]["replayed"], false, "{key}");
        }
    }
    assert_eq!(messages_in(&a).await, on + 32);
    assert_eq!(messages_in(&b).await, on + 32);
}

/// Redis restarted without persistence: every record is gone, so a retry of a key that
/// succeeded would run its effect again. The replicas notice the missing epoch marker and refuse
/// keyed writes for 24 h of server clock, or until an operator lifts the refusal. The data's
/// changes were in Redis too: every replica is back to the dataset, as Redis is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_lost_its_data_refuses_keyed_writes_instead_of_running_them_again() {
    let redis = RedisServer::start(free_port());
    let a = replica(&redis.url()).await;
    let keys: Vec<String> = (0..20).map(|i| format!("restart-key-{i:04}")).collect();
    let count = messages_in(&a).await;
    for key in &keys {
        assert_eq!(code(&call(&a, "send_message", send(key)).await), None);
    }
    assert_eq!(messages_in(&a).await, count + 20);

    let (port, _) = redis.stop();
    let redis = RedisServer::start(port);
    // A replica started now finds no marker and sets one: it cannot tell that data was lost.
    let late = replica(&redis.url()).await;
    assert_eq!(code(&call(&late, "send_message", send("late-key-0001")).await), None, "nothing to tell it");
    let late_count = messages_in(&late).await;

    // a knew the old marker: once it reaches Redis again it notices, and the refusal is set.
    let mut conn = redis.inspect();
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = call(&a, "send_message", send(&keys[0])).await;
        assert_eq!(code(&reply), Some("MCP_DEPENDENCY_UNAVAILABLE"), "never a second effect: {reply}");
        let until: Option<i64> = redis::cmd("HGET").arg("{it}:epoch").arg("until").query(&mut conn).unwrap();
        if until.is_some_and(|t| t > 0) {
            break;
        }
        assert!(Instant::now() < end, "the loss is noticed once Redis answers");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for key in &keys {
        let reply = call(&a, "send_message", send(key)).await;
        assert_eq!(code(&reply), Some("MCP_DEPENDENCY_UNAVAILABLE"), "{key}: {reply}");
        assert_eq!(reply["data"]["error"]["retryable"], true);
    }
    assert_eq!(messages_in(&a).await, count + 1, "the dataset's and late's; none of the 20 keys ran again");
    // The refusal is in Redis, so every replica keeps it, the late one too, for new keys too.
    let refused = call(&late, "send_message", send("late-key-0002")).await;
    assert_eq!(code(&refused), Some("MCP_DEPENDENCY_UNAVAILABLE"), "{refused}");
    // Calls without a key are served.
    let read = call(&a, "get_restaurant", json!({"restaurant_id": "rst_central"})).await;
    assert_eq!(code(&read), None, "{read}");

    // 24 h of a's clock later every lost record would have expired anyway: a accepts keys again.
    advance_clock(&a, 24 * 3600).await;
    let after_a_day = call(&a, "send_message", send(&keys[0])).await;
    assert_eq!(
        (code(&after_a_day), &after_a_day["meta"]["replayed"]),
        (None, &json!(false)),
        "{after_a_day}"
    );
    // The clock is shared: the late replica accepts keys again too.
    let accepted = call(&late, "send_message", send("late-key-0002")).await;
    assert_eq!(code(&accepted), None, "{accepted}");
    assert_eq!(messages_in(&late).await, late_count + 2);
    // A refusal set again (as a loss would) is lifted by an operator for every replica at once.
    let far = 4_000_000_000_000_i64;
    redis::cmd("HSET").arg("{it}:epoch").arg("until").arg(far).exec(&mut conn).unwrap();
    let refused = call(&late, "send_message", send("late-key-0003")).await;
    assert_eq!(code(&refused), Some("MCP_DEPENDENCY_UNAVAILABLE"), "{refused}");
    redis::cmd("HSET").arg("{it}:epoch").arg("until").arg(0).exec(&mut conn).unwrap();
    let lifted = call(&late, "send_message", send("late-key-0003")).await;
    assert_eq!(code(&lifted), None, "{lifted}");
    assert_eq!(messages_in(&a).await, late_count + 3);
}

/// A Redis that does not answer at start: the server does not start, and says why without the
/// URL's password.
#[test]
fn a_redis_that_does_not_answer_at_start_stops_the_server() {
    let port = free_port();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_chataigne-mock"))
        .args(["--listen", "127.0.0.1:0", "--redis", &format!("redis://:hunter2-password@127.0.0.1:{port}")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("Redis at 127.0.0.1:{port}")), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

/// `call` as another persona (`dev-token-<persona>`).
async fn call_as(base: &str, persona: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let reply: Value = http()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer dev-token-{persona}"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    reply["result"]["structuredContent"].clone()
}

/// A control API call on one replica: its status and JSON answer (`null` when none).
async fn control(base: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{base}/control/{path}");
    let request = match body {
        Some(body) => http().post(url).json(&body),
        None => http().get(url),
    };
    let reply = request.header("x-control-secret", "secret").send().await.unwrap();
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or(Value::Null))
}

fn order_of(s: &Value) -> (String, String) {
    let o = &s["data"]["order"];
    (
        o["status"].as_str().unwrap_or_default().to_owned(),
        o["updated_at"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Three replicas on one Redis (or one Redis Cluster) answer as one server: what is written
/// through one is read through the others, with the same answers as the in-memory reference.
async fn three_replicas_behave_as_one(a: &str, b: &str, c: &str) {
    let all = [a, b, c];
    // A message sent through a is in the conversation on every replica; its key replays on b.
    let before = messages_in(a).await;
    let first = call(a, "send_message", send("one-server-key-0001")).await;
    assert_eq!((code(&first), &first["meta"]["replayed"]), (None, &json!(false)), "{first}");
    let replay = call(b, "send_message", send("one-server-key-0001")).await;
    assert_eq!((code(&replay), &replay["meta"]["replayed"]), (None, &json!(true)), "{replay}");
    assert_eq!(replay["data"], first["data"], "the stored result, message id included");
    for base in all {
        assert_eq!(messages_in(base).await, before + 1, "{base}: the one message");
    }
    let id = first["data"]["message"]["id"].as_str().unwrap();
    let conversation = call(
        c,
        "get_conversation",
        json!({"restaurant_id": "rst_central", "conversation_id": "cnv_c02", "message_limit": 1}),
    )
    .await;
    assert_eq!(conversation["data"]["messages"][0]["id"], id, "newest first, on c: {conversation}");

    // An organization created through a is the caller's on b; a restaurant created in it through
    // b is read through c, an instruction created through c is listed through a.
    let created = call(
        a,
        "create_organization",
        json!({"name": "One Server Bistro", "idempotency_key": "one-server-org-1"}),
    )
    .await;
    let org = created["data"]["organization"]["id"].as_str().expect("an organization id").to_owned();
    let listed = call(b, "list_organizations", json!({"limit": 50})).await;
    assert!(listed["data"]["organizations"].as_array().unwrap().iter().any(|o| o["id"] == org.as_str()));
    let restaurant = call(
        b,
        "create_restaurant",
        json!({"organization_id": org, "name": "Annexe", "timezone": "Europe/Paris", "idempotency_key": "one-server-rst-1"}),
    )
    .await;
    let rid = restaurant["data"]["restaurant"]["id"].as_str().expect("a restaurant id").to_owned();
    let read = call(c, "get_restaurant", json!({"restaurant_id": rid})).await;
    assert_eq!(read["data"]["restaurant"], restaurant["data"]["restaurant"], "{read}");
    let instruction = call(
        c,
        "create_instruction",
        json!({"restaurant_id": rid, "text": "Chestnuts on Sundays", "idempotency_key": "one-server-ins-1"}),
    )
    .await;
    let listed = call(a, "list_instructions", json!({"restaurant_id": rid})).await;
    assert_eq!(listed["data"]["instructions"][0], instruction["data"]["instruction"], "{listed}");

    // An order read through b is moved through c with the status b read; a sees the move, and b's
    // view is not stale: the same move again from the old status is refused on b.
    let target = json!({"restaurant_id": "rst_central", "order_id": "ord_c0001"});
    let (status, _) = order_of(&call(b, "get_order", target.clone()).await);
    let next = match status.as_str() {
        "received" => "accepted",
        "accepted" => "preparing",
        "preparing" => "ready",
        "ready" => "completed",
        other => panic!("ord_c0001 is {other}: pick an order that can move"),
    };
    advance_clock(b, 5).await;
    let mut update = target.clone();
    update["expected_status"] = json!(status);
    update["status"] = json!(next);
    let moved = call(c, "update_order_status", update.clone()).await;
    assert_eq!(code(&moved), None, "{moved}");
    for base in all {
        assert_eq!(order_of(&call(base, "get_order", target.clone()).await), order_of(&moved), "{base}");
    }
    let again = call(b, "update_order_status", update).await;
    assert_eq!(code(&again), Some("MCP_EXPECTED_STATE_MISMATCH"), "b sees the move: {again}");

    // A restaurant paused through a is paused on c, in its lists too.
    let paused = call(
        a,
        "set_restaurant_status",
        json!({"restaurant_id": rid, "expected_status": "open", "status": "paused"}),
    )
    .await;
    assert_eq!(code(&paused), None, "{paused}");
    let listed = call(c, "list_restaurants", json!({"organization_id": org, "status": "paused"})).await;
    assert_eq!(listed["data"]["restaurants"][0]["id"], rid.as_str(), "{listed}");

    // A cursor minted on a continues on b, onto the page a gives.
    let page = json!({"restaurant_id": "rst_central", "limit": 2});
    let first_page = call(a, "list_orders", page.clone()).await;
    let mut args = page.clone();
    args["cursor"] = first_page["meta"]["next_cursor"].clone();
    let (on_b, on_a) = (call(b, "list_orders", args.clone()).await, call(a, "list_orders", args).await);
    assert_eq!(code(&on_b), None, "{on_b}");
    assert_eq!(on_b["data"], on_a["data"]);

    // A membership revoked through a's control API is refused on every replica; restored through
    // c, it is served again everywhere.
    let staff = json!({"user_id": "usr_staff", "organization_id": "org_maison"});
    let read_as_staff = json!({"restaurant_id": "rst_central"});
    assert_eq!(code(&call_as(b, "staff", "get_restaurant", read_as_staff.clone()).await), None);
    assert_eq!(control(a, "memberships/revoke", Some(staff.clone())).await.0, 204);
    for base in all {
        let refused = call_as(base, "staff", "get_restaurant", read_as_staff.clone()).await;
        assert_eq!(code(&refused), Some("MCP_RESOURCE_FORBIDDEN"), "{base}: {refused}");
    }
    assert_eq!(control(c, "memberships/restore", Some(staff)).await.0, 204);
    for base in all {
        assert_eq!(code(&call_as(base, "staff", "get_restaurant", read_as_staff.clone()).await), None);
    }

    // The clock moved through b (above) and through c is every replica's.
    let (_, moved) = control(c, "clock/advance", Some(json!({"seconds": 3600}))).await;
    let offset = moved["offset_ms"].as_i64().unwrap();
    assert!(offset >= 3_605_000, "{moved}");
    for base in all {
        assert_eq!(control(base, "clock", None).await.1["offset_ms"], offset, "{base}");
    }

    // A fault injected and a deadline shortened through a's control API apply on every replica;
    // cleared through c, on every replica again.
    let fault = json!({"tool": "get_organization_x", "error": "internal"});
    assert_eq!(control(a, "faults", Some(fault)).await.0, 400, "an unknown tool is refused");
    let fault = json!({"tool": "list_instructions", "error": "internal"});
    assert_eq!(control(a, "faults", Some(fault)).await.0, 200);
    assert_eq!(control(a, "deadlines", Some(json!({"read_ms": 1234}))).await.0, 200);
    for base in all {
        let failed = call(base, "list_instructions", json!({"restaurant_id": "rst_central"})).await;
        assert_eq!(code(&failed), Some("MCP_INTERNAL_ERROR"), "{base}: {failed}");
        assert_eq!(control(base, "deadlines", None).await.1["read_ms"], 1234, "{base}");
    }
    let cleared =
        http().delete(format!("{c}/control/faults")).header("x-control-secret", "secret").send().await;
    assert_eq!(cleared.unwrap().status().as_u16(), 204);
    for base in all {
        let served = call(base, "list_instructions", json!({"restaurant_id": "rst_central"})).await;
        assert_eq!(code(&served), None, "{base}: {served}");
    }

    // A reset through a: every replica is back to the dataset and the wall clock.
    assert_eq!(control(a, "reset", Some(json!({}))).await.0, 204);
    for base in all {
        assert_eq!(control(base, "clock", None).await.1["offset_ms"], 0, "{base}");
        assert_ne!(control(base, "deadlines", None).await.1["read_ms"], 1234, "{base}");
        assert_eq!(messages_in(base).await, before, "{base}");
        let gone = call(base, "get_restaurant", json!({"restaurant_id": rid})).await;
        assert_eq!(code(&gone), Some("MCP_RESOURCE_FORBIDDEN"), "{base}: {gone}");
        assert_eq!(order_of(&call(base, "get_order", target.clone()).await).0, status, "{base}");
    }
    // And the key is forgotten: it runs again.
    let rerun = call(c, "send_message", send("one-server-key-0001")).await;
    assert_eq!((code(&rerun), &rerun["meta"]["replayed"]), (None, &json!(false)), "{rerun}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_one_redis_behave_as_one_server() {
    let redis = RedisServer::start(free_port());
    let (a, b, c) = (replica(&redis.url()).await, replica(&redis.url()).await, replica(&redis.url()).await);
    three_replicas_behave_as_one(&a, &b, &c).await;
}

/// A Redis Cluster of `masters` masters, each with `replicas` replicas, on free ports; its
/// processes killed when dropped.
struct RedisCluster {
    nodes: Vec<RedisServer>,
    dir: PathBuf,
}

impl RedisCluster {
    fn start(masters: usize, replicas: usize) -> RedisCluster {
        let dir =
            std::env::temp_dir().join(format!("chataigne-cluster-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|_| {
                let port = free_port();
                let args = [
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &dir.join(format!("nodes-{port}.conf")).display().to_string(),
                    "--cluster-node-timeout",
                    "1000",
                    // A replica syncs at once (the default waits 5 s for more replicas): until it
                    // has, it may not take over from its master.
                    "--repl-diskless-sync-delay",
                    "0",
                    "--dir",
                    &dir.display().to_string(),
                ];
                RedisServer::spawn(port, &args)
            })
            .collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli on PATH");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        let cluster = RedisCluster { nodes, dir };
        cluster.wait_ok();
        cluster
    }

    /// Until every node still running says the cluster is ok and agrees on its slots.
    fn wait_ok(&self) {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = self.nodes.iter().all(|n| {
                let info: String =
                    redis::cmd("CLUSTER").arg("INFO").query(&mut n.inspect()).unwrap_or_default();
                info.contains("cluster_state:ok")
            });
            if ok {
                return;
            }
            assert!(Instant::now() < end, "the cluster did not come up");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn urls(&self) -> String {
        self.nodes.iter().map(RedisServer::url).collect::<Vec<_>>().join(",")
    }

    /// The master holding namespace `ns`'s slot (its keys exist once a replica started).
    fn master_of(&self, ns: &str) -> usize {
        let key = format!("{{{ns}}}:state");
        let slot: i64 =
            redis::cmd("CLUSTER").arg("KEYSLOT").arg(&key).query(&mut self.nodes[0].inspect()).unwrap();
        self.nodes
            .iter()
            .position(|n| {
                let mut conn = n.inspect();
                let count: i64 =
                    redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query(&mut conn).unwrap_or(0);
                role(&mut conn).0 == "master" && count > 0
            })
            .expect("a master holding the namespace's slot")
    }

    /// A replica of node `master`.
    fn replica_of(&self, master: usize) -> usize {
        let port = self.nodes[master].port;
        self.nodes.iter().position(|n| role(&mut n.inspect()) == ("slave".into(), port)).expect("a replica")
    }
}

/// `ROLE`: "master" or "slave", and for a replica its master's port.
fn role(conn: &mut redis::Connection) -> (String, u16) {
    let role: Vec<redis::Value> = redis::cmd("ROLE").query(conn).unwrap_or_default();
    let text = |v: Option<&redis::Value>| match v {
        Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
        Some(redis::Value::Int(i)) => i.to_string(),
        _ => String::new(),
    };
    (text(role.first()), text(role.get(2)).parse().unwrap_or(0))
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A replica on a Redis Cluster.
async fn cluster_replica(urls: &str, namespace: &str) -> String {
    start_replica(Config {
        secret: Some("shared-deployment-secret".into()),
        redis_url: Some(urls.to_owned()),
        redis_cluster: true,
        redis_namespace: namespace.into(),
        ..Config::for_tests("secret")
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_a_redis_cluster_behave_as_one_server() {
    let cluster = RedisCluster::start(3, 0);
    let urls = cluster.urls();
    let (a, b, c) = (
        cluster_replica(&urls, "it").await,
        cluster_replica(&urls, "it").await,
        cluster_replica(&urls, "it").await,
    );
    three_replicas_behave_as_one(&a, &b, &c).await;
}

/// `call`, or `None` when the replica did not answer (killed).
async fn try_call(base: &str, tool: &str, args: Value) -> Option<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let reply = http()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("authorization", "Bearer dev-token-owner")
        .json(&body)
        .send()
        .await
        .ok()?;
    let reply: Value = reply.json().await.ok()?;
    Some(reply["result"]["structuredContent"].clone())
}

fn burst_message(key: &str) -> Value {
    json!({"restaurant_id": "rst_central", "conversation_id": "cnv_c02", "text": format!("burst {key}"), "idempotency_key": key})
}

fn burst_instruction(key: &str) -> Value {
    json!({"restaurant_id": "rst_central", "text": format!("burst {key}"), "idempotency_key": key})
}

/// `tool` with `args` until an answer that is not "later" (Redis coming back, a claim held by a
/// replica that may be gone), for at most 20 s.
async fn settle(base: &str, tool: &str, args: Value) -> Value {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let reply = call(base, tool, args.clone()).await;
        let later = matches!(
            code(&reply),
            Some("MCP_DEPENDENCY_UNAVAILABLE" | "MCP_OPERATION_IN_PROGRESS" | "MCP_OUTCOME_UNKNOWN")
        );
        if !later || Instant::now() > end {
            return reply;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The texts of every message of `cnv_c02` and of every instruction of `rst_central`, walked
/// through their cursors on `base`.
async fn written_texts(base: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for (tool, list, mut args) in [
        (
            "get_conversation",
            "messages",
            json!({"restaurant_id": "rst_central", "conversation_id": "cnv_c02", "message_limit": 100}),
        ),
        ("list_instructions", "instructions", json!({"restaurant_id": "rst_central", "limit": 50})),
    ] {
        loop {
            let page = call(base, tool, args.clone()).await;
            assert_eq!(code(&page), None, "{page}");
            texts.extend(
                page["data"][list].as_array().unwrap().iter().map(|m| m["text"].as_str().unwrap().to_owned()),
            );
            match page["meta"]["next_cursor"].as_str() {
                Some(cursor) => args["cursor"] = json!(cursor),
                None => break,
            }
        }
    }
    texts
}

/// Each key's write exactly once among `texts`.
fn exactly_once(texts: &[String], keys: &[String]) {
    for key in keys {
        let n = texts.iter().filter(|t| **t == format!("burst {key}")).count();
        assert_eq!(n, 1, "{key}: its effect {n} times");
    }
}

/// A replica in its own process (the binary), with the control API, killed when dropped.
struct ReplicaProcess {
    child: Child,
    base: String,
}

impl ReplicaProcess {
    async fn start(redis_url: &str) -> ReplicaProcess {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_chataigne-mock"))
            .args(["--listen", &format!("127.0.0.1:{port}"), "--redis", redis_url, "--redis-namespace", "it"])
            .args(["--secret", "shared-deployment-secret", "--control-api", "--control-secret", "secret"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let end = Instant::now() + Duration::from_secs(20);
        while try_call(&base, "get_restaurant", json!({"restaurant_id": "rst_central"})).await.is_none() {
            assert!(Instant::now() < end, "the replica process did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ReplicaProcess { child, base }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ReplicaProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A replica killed (SIGKILL) during a burst of keyed writes: its claims held before the effect
/// (send_message, slowed before it) are taken over once it stops beating, its effects made but
/// never answered (create_instruction, slowed after it) replay; retried through another replica,
/// every write's effect is there exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_during_a_burst_of_keyed_writes_loses_none_and_doubles_none() {
    let redis = RedisServer::start(free_port());
    let mut doomed = ReplicaProcess::start(&redis.url()).await;
    let survivor = replica(&redis.url()).await;
    for fault in [
        json!({"tool": "send_message", "latency_ms": 400}),
        json!({"tool": "create_instruction", "delay_after_effect_ms": 5000}),
    ] {
        assert_eq!(control(&doomed.base, "faults", Some(fault)).await.0, 200);
    }
    let before = written_texts(&survivor).await.len();
    let keys: Vec<String> = (0..32).map(|i| format!("burst-kill-{i:04}")).collect();
    let request = |key: &String| match key[11..].parse::<u32>().unwrap() % 2 {
        0 => ("send_message", burst_message(key)),
        _ => ("create_instruction", burst_instruction(key)),
    };
    let burst: Vec<_> = keys
        .iter()
        .map(|key| {
            let (base, (tool, args)) = (doomed.base.clone(), request(key));
            tokio::spawn(async move { try_call(&base, tool, args).await })
        })
        .collect();
    // Mid-call: every send_message holds its claim, every create_instruction made its effect.
    tokio::time::sleep(Duration::from_millis(250)).await;
    doomed.kill();
    for answer in futures::future::join_all(burst).await {
        assert!(answer.unwrap().is_none(), "no call was answered before the kill");
    }
    let retried = Instant::now();
    for key in &keys {
        let (tool, args) = request(key);
        let reply = settle(&survivor, tool, args).await;
        assert_eq!(code(&reply), None, "{key}: {reply}");
    }
    eprintln!("every key settled {:?} after the kill", retried.elapsed());
    let texts = written_texts(&survivor).await;
    exactly_once(&texts, &keys);
    assert_eq!(texts.len(), before + keys.len());
    // The effects made before the kill replayed: the instructions' keys.
    let replayed = call(&survivor, "create_instruction", burst_instruction(&keys[1])).await;
    assert_eq!(replayed["meta"]["replayed"], true, "{replayed}");
}

/// Four writers, two through each of two replicas, each sending the next keyed message
/// (`<prefix>-NNNN`) until the burst ends.
struct Burst {
    prefix: &'static str,
    next: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    writers: Vec<tokio::task::JoinHandle<Vec<(String, Instant)>>>,
}

impl Burst {
    fn start(a: &str, b: &str, prefix: &'static str) -> Burst {
        let (next, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let writers = (0..4)
            .map(|part: usize| {
                let base = if part.is_multiple_of(2) { a.to_owned() } else { b.to_owned() };
                let (next, stop) = (next.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut acknowledged = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let key = format!("{prefix}-{:04}", next.fetch_add(1, Ordering::Relaxed));
                        let reply = call(&base, "send_message", burst_message(&key)).await;
                        if code(&reply).is_none() {
                            acknowledged.push((key, Instant::now()));
                        }
                        // About 20 writes a second in all: with the retries, under the 500 a minute.
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    acknowledged
                })
            })
            .collect();
        Burst { prefix, next, stop, writers }
    }

    /// Ends the burst: the keys acknowledged (with when), and every key sent.
    async fn end(self) -> (Vec<(String, Instant)>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut acknowledged = Vec::new();
        for w in futures::future::join_all(self.writers).await {
            acknowledged.extend(w.unwrap());
        }
        let sent =
            (0..self.next.load(Ordering::Relaxed)).map(|i| format!("{}-{i:04}", self.prefix)).collect();
        (acknowledged, sent)
    }
}

/// Until node `node` of the cluster is a master.
async fn promoted(cluster: &RedisCluster, node: usize) -> Instant {
    let end = Instant::now() + Duration::from_secs(20);
    while role(&mut cluster.nodes[node].inspect()).0 != "master" {
        assert!(Instant::now() < end, "the replica was not promoted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Instant::now()
}

/// A Redis Cluster master fails over to its replica (`CLUSTER FAILOVER`) during a burst of keyed
/// writes through two replicas: every acknowledged write is still there, none doubled, writes are
/// served again once the new master is known, and every write refused meanwhile runs once when
/// retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_failover_during_a_burst_keeps_every_acknowledged_write_once() {
    let cluster = RedisCluster::start(3, 1);
    let urls = cluster.urls();
    let (a, b) = (cluster_replica(&urls, "it").await, cluster_replica(&urls, "it").await);
    let before = written_texts(&a).await.len();
    let started = Instant::now();
    let burst = Burst::start(&a, &b, "burst-fail");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let replica = cluster.replica_of(cluster.master_of("it"));
    redis::cmd("CLUSTER").arg("FAILOVER").exec(&mut cluster.nodes[replica].inspect()).unwrap();
    let promotion = promoted(&cluster, replica).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (acknowledged, keys) = burst.end().await;
    let after: Vec<_> =
        acknowledged.iter().filter(|(_, at)| *at > promotion).map(|(_, at)| *at - promotion).collect();
    eprintln!(
        "promoted {:?} after the burst began; {} of {} writes acknowledged, {} after the promotion, the first {:?} after it",
        promotion - started,
        acknowledged.len(),
        keys.len(),
        after.len(),
        after.iter().min()
    );
    assert!(!after.is_empty(), "writes are served again once the new master is known");
    let acknowledged: Vec<String> = acknowledged.into_iter().map(|(key, _)| key).collect();
    exactly_once(&written_texts(&b).await, &acknowledged);
    for key in &keys {
        let reply = settle(&a, "send_message", burst_message(key)).await;
        assert_eq!(code(&reply), None, "{key}: {reply}");
    }
    let texts = written_texts(&b).await;
    exactly_once(&texts, &keys);
    assert_eq!(texts.len(), before + keys.len());
}

/// The namespace's master killed (SIGKILL) during a burst: its replica is promoted once the
/// cluster notices. Replication is asynchronous, so a write acknowledged just before the kill may
/// be lost with its idempotency record (Redis's limit, README); what must hold is that no write is
/// doubled, that the replicas agree on the data (one that applied an entry the new master lacks
/// starts over from the log), and that every key retried settles with its effect once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_master_killed_during_a_burst_doubles_nothing_and_the_replicas_agree() {
    let mut cluster = RedisCluster::start(3, 1);
    let urls = cluster.urls();
    let (a, b) = (cluster_replica(&urls, "it").await, cluster_replica(&urls, "it").await);
    let before = written_texts(&a).await.len();
    let burst = Burst::start(&a, &b, "burst-kill-master");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let master = cluster.master_of("it");
    let replica = cluster.replica_of(master);
    cluster.nodes[master].kill();
    let promotion = promoted(&cluster, replica).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (acknowledged, keys) = burst.end().await;
    let after = acknowledged.iter().filter(|(_, at)| *at > promotion).count();
    eprintln!("{} of {} writes acknowledged, {after} after the promotion", acknowledged.len(), keys.len());
    for key in &keys {
        let reply = settle(&a, "send_message", burst_message(key)).await;
        assert_eq!(code(&reply), None, "{key}: {reply}");
    }
    let (on_a, on_b) = (written_texts(&a).await, written_texts(&b).await);
    assert_eq!(on_a, on_b, "one data on both replicas");
    exactly_once(&on_a, &keys);
    assert_eq!(on_a.len(), before + keys.len());
}
