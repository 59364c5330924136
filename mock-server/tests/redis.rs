//! The Redis backend (`--redis`): replicas sharing one Redis behave as one server for
//! idempotency and rate limits; no raw key reaches Redis; Redis down gives
//! MCP_DEPENDENCY_UNAVAILABLE for keyed writes while reads go on, and recovery after a restart.
//! Each test starts its own `redis-server` on a free port (built with `--features redis-tests`).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mock_server::Config;
use serde_json::{Value, json};

/// A redis-server child process, killed when dropped.
struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    fn start(port: u16) -> RedisServer {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (apt-get install redis-server)");
        let server = RedisServer { child, port };
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

    fn stop(mut self) -> u16 {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.port
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One replica: the reference server on Redis, with the deployment's shared secret.
async fn replica(redis_url: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = Config {
        redis_url: Some(redis_url.to_owned()),
        redis_namespace: "it".into(),
        secret: Some("shared-deployment-secret".into()),
        ..Config::for_tests("secret")
    };
    tokio::spawn(mock_server::run(listener, config, std::future::pending()));
    format!("http://{addr}")
}

/// One client for the whole binary: building one loads the system's TLS roots, which is slow.
fn http() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(reqwest::Client::new)
}

async fn call(base: &str, tool: &str, args: Value) -> Value {
    let reply: Value = http()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("authorization", "Bearer dev-token-owner")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    reply["result"]["structuredContent"].clone()
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

#[tokio::test]
async fn rate_window_is_shared_by_replicas() {
    let redis = RedisServer::start(free_port());
    let (a, b) = (replica(&redis.url()).await, replica(&redis.url()).await);
    for i in 0..1000 {
        let base = if i % 2 == 0 { &a } else { &b };
        let s = call(base, "list_instructions", json!({"restaurant_id": "rst_central"})).await;
        assert_eq!(code(&s), None, "call {i}: {s}");
    }
    let limited = call(&b, "list_instructions", json!({"restaurant_id": "rst_central"})).await;
    assert_eq!(code(&limited), Some("MCP_RATE_LIMITED"));
    assert!(limited["data"]["error"]["retry_after_ms"].as_u64().unwrap() > 0);
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
    let mut conn = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
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

#[tokio::test]
async fn redis_down_gives_dependency_unavailable_then_recovers_without_duplicates() {
    let redis = RedisServer::start(free_port());
    let a = replica(&redis.url()).await;
    assert_eq!(code(&call(&a, "send_message", send("before-outage-1")).await), None);
    let port = redis.stop();

    let during = call(&a, "send_message", send("during-outage-1")).await;
    assert_eq!(code(&during), Some("MCP_DEPENDENCY_UNAVAILABLE"), "{during}");
    assert_eq!(during["data"]["error"]["retryable"], true);
    let read = call(&a, "get_restaurant", json!({"restaurant_id": "rst_central"})).await;
    assert_eq!(code(&read), None, "reads need no Redis: {read}");
    let count = messages_in(&a).await;

    let _redis = RedisServer::start(port);
    let retried = call(&a, "send_message", send("during-outage-1")).await;
    assert_eq!(code(&retried), None, "{retried}");
    assert_eq!(retried["meta"]["replayed"], false, "the refused call had no effect, so it runs now");
    let again = call(&a, "send_message", send("during-outage-1")).await;
    assert_eq!(again["meta"]["replayed"], true);
    assert_eq!(messages_in(&a).await, count + 1, "one effect");
}
