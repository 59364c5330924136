//! The Redis backend (`--redis`): replicas sharing one Redis share idempotency records and rate
//! windows, not data; no raw key reaches Redis; a Redis that is down or stalled holds nothing up
//! (keyed writes get MCP_DEPENDENCY_UNAVAILABLE within the 500 ms timeout, the rest is served);
//! a Redis that lost its data never lets a key run twice; one that does not answer at start
//! stops the server. Each test starts its own `redis-server` on a free port (built with
//! `--features redis-tests`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
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
        let child = Command::new("redis-server")
            .args(&args)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (apt-get install redis-server)");
        let server = RedisServer { child, port, dir };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not start on port {port}");
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
    let before = messages_in(&a).await + messages_in(&b).await;
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
    assert_eq!(messages_in(&a).await + messages_in(&b).await, before + 1, "one message in all");
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
    let before = messages_in(&a).await + messages_in(&b).await;
    let first = call(&a, "send_message", send("no-secret-key-0001")).await;
    assert_eq!((code(&first), &first["meta"]["replayed"]), (None, &json!(false)), "{first}");
    let second = call(&b, "send_message", send("no-secret-key-0001")).await;
    assert_eq!((code(&second), &second["meta"]["replayed"]), (None, &json!(true)), "{second}");
    assert_eq!(second["data"], first["data"], "the stored result");
    assert_eq!(messages_in(&a).await + messages_in(&b).await, before + 1, "one effect");

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
    let stored: String = redis::cmd("GET").arg("it:secret").query(&mut redis.inspect()).unwrap();
    assert!(stored.len() == 64 && stored.bytes().all(|c| c.is_ascii_hexdigit()), "{stored:?}");
}

/// What README's Redis section promises of replicas, and no more: keys and windows are shared,
/// the data is each replica's own.
#[tokio::test]
async fn replicas_share_idempotency_records_and_rate_windows_but_not_data() {
    let redis = RedisServer::start(free_port());
    let (a, b) = (replica(&redis.url()).await, replica(&redis.url()).await);

    // A key used on one replica replays on the other, with the stored result...
    let (on_a, on_b) = (messages_in(&a).await, messages_in(&b).await);
    let first = call(&a, "send_message", send("shared-key-0001")).await;
    assert_eq!((code(&first), &first["meta"]["replayed"]), (None, &json!(false)), "{first}");
    let replay = call(&b, "send_message", send("shared-key-0001")).await;
    assert_eq!(replay["meta"]["replayed"], true, "{replay}");
    assert_eq!(replay["data"], first["data"], "the stored result, message id included");
    // ...although the other replica's data lacks the effect: each keeps its own store.
    assert_eq!(messages_in(&a).await, on_a + 1);
    assert_eq!(messages_in(&b).await, on_b, "the message exists on the replica that ran it only");

    // A write made on one replica is not seen by another: an organization created on a is
    // unknown on b, where the caller has no membership in it.
    let created = call(
        &a,
        "create_organization",
        json!({"name": "Replica A Bistro", "idempotency_key": "org-key-0001"}),
    )
    .await;
    let org = created["data"]["organization"]["id"].as_str().expect("an organization id").to_owned();
    let on_own = call(&a, "list_restaurants", json!({"organization_id": org})).await;
    assert_eq!(code(&on_own), None, "{on_own}");
    let elsewhere = call(&b, "list_restaurants", json!({"organization_id": org})).await;
    assert_eq!(code(&elsewhere), Some("MCP_RESOURCE_FORBIDDEN"), "{elsewhere}");
    // The key replays on b all the same, naming an organization b does not have.
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
    // Without its rate check, b's claims are the first thing sent to the stalled Redis: Redis
    // runs them when it resumes, long after b answered, and b must release them.
    let b = replica_with(&redis.url(), vec![Defect::NoRateLimit]).await;
    assert_eq!(code(&call(&a, "send_message", send("before-stall-a")).await), None);
    assert_eq!(code(&call(&b, "send_message", send("before-stall-b")).await), None);
    let (on_a, on_b) = (messages_in(&a).await, messages_in(&b).await);

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
    assert_eq!(messages_in(&a).await, on_a + 16);
    assert_eq!(messages_in(&b).await, on_b + 16);
}

/// Redis restarted without persistence: every record is gone, so a retry of a key that
/// succeeded would run its effect again. The replicas notice the missing epoch marker and refuse
/// keyed writes for 24 h of server clock, or until an operator lifts the refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_lost_its_data_refuses_keyed_writes_instead_of_running_them_again() {
    let redis = RedisServer::start(free_port());
    let a = replica(&redis.url()).await;
    let keys: Vec<String> = (0..20).map(|i| format!("restart-key-{i:04}")).collect();
    for key in &keys {
        assert_eq!(code(&call(&a, "send_message", send(key)).await), None);
    }
    let count = messages_in(&a).await;

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
        let until: Option<i64> = redis::cmd("HGET").arg("it:epoch").arg("until").query(&mut conn).unwrap();
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
    assert_eq!(messages_in(&a).await, count, "none of the 20 keys ran its effect again");
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
    // The late replica's clock has not moved: refused, until an operator lifts the refusal.
    let refused = call(&late, "send_message", send("late-key-0002")).await;
    assert_eq!(code(&refused), Some("MCP_DEPENDENCY_UNAVAILABLE"), "{refused}");
    redis::cmd("HSET").arg("it:epoch").arg("until").arg(0).exec(&mut conn).unwrap();
    let lifted = call(&late, "send_message", send("late-key-0002")).await;
    assert_eq!(code(&lifted), None, "{lifted}");
    assert_eq!(messages_in(&late).await, late_count + 1);
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
