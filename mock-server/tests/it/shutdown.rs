//! Graceful shutdown: on SIGTERM the server finishes the calls in flight and refuses new ones.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[tokio::test]
async fn sigterm_finishes_in_flight_calls_and_refuses_new_ones() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chataigne-mock"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--control-api", "--control-secret", "s"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let mut up = false;
    for _ in 0..100 {
        if http.get(format!("{base}/.well-known/oauth-protected-resource")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the server started");
    let fault = json!({"tool": "get_restaurant", "latency_ms": 800});
    let set =
        http.post(format!("{base}/control/faults")).header("x-control-secret", "s").json(&fault).send().await;
    assert!(set.unwrap().status().is_success());

    let slow = {
        let (http, base) = (http.clone(), base.clone());
        tokio::spawn(async move {
            http.post(format!("{base}/mcp"))
                .header("accept", "application/json, text/event-stream")
                .header("authorization", "Bearer dev-token-owner")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "get_restaurant", "arguments": {"restaurant_id": "rst_central"}}}))
                .send()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(250)).await;
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    tokio::time::sleep(Duration::from_millis(100)).await;

    // A new connection is refused while the in-flight call completes.
    let fresh =
        reqwest::Client::new().get(format!("{base}/.well-known/oauth-protected-resource")).send().await;
    assert!(fresh.is_err(), "a new connection after SIGTERM is refused");

    let answer = slow.await.unwrap().expect("the in-flight call is answered");
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["result"]["structuredContent"]["data"]["restaurant"]["id"], "rst_central", "{body}");
    let exit = tokio::task::spawn_blocking(move || child.wait()).await.unwrap().unwrap();
    assert!(exit.success(), "clean exit: {exit:?}");
}
