//! Error reporting (`--sentry-dsn`) through the real HTTP transport and sentry's real transport:
//! an internal error is one event tagged with its request_id and carrying none of the call's
//! values (SEC-1, IDEM-8); a panic in a call is one too; and a DSN host that accepts and never
//! answers costs the calls nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use chataigne_contract::ErrorCode;
use serde_json::json;

use crate::support::{Server, code_of, expect_error, expect_ok, key, start_with};

const CANARY: &str = "cnryreporting0042";

/// What a Sentry ingestion endpoint received: each request's body, as sent.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Bytes>>>);

impl Received {
    /// The events received so far, each with the raw body it came in.
    fn events(&self) -> Vec<(sentry::protocol::Event<'static>, String)> {
        let bodies = self.0.lock().unwrap().clone();
        let mut events = Vec::new();
        for body in bodies {
            let envelope = sentry::Envelope::from_slice(&body).expect("sentry sends envelopes");
            for item in envelope.items() {
                if let sentry::protocol::EnvelopeItem::Event(event) = item {
                    events.push(((**event).clone(), String::from_utf8_lossy(&body).into_owned()));
                }
            }
        }
        events
    }

    /// Waits until `n` events arrived (sentry sends from its own thread), then a little longer
    /// so an extra one would show.
    async fn wait_for(&self, n: usize) -> Vec<(sentry::protocol::Event<'static>, String)> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.events().len() < n && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.events()
    }
}

/// A stand-in for Sentry: `POST /api/<project>/envelope/` kept, answered 200.
async fn ingestion() -> (String, Received) {
    use axum::routing::post;
    let received = Received::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/api/{project}/envelope/",
        post(move |body: Bytes| {
            let kept = kept.clone();
            async move {
                kept.0.lock().unwrap().push(body);
                axum::Json(json!({ "id": "0" }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://public@{addr}/1"), received)
}

async fn reporting_server(dsn: &str) -> Server {
    let dsn = dsn.to_owned();
    start_with(move |c| c.sentry_dsn = Some(dsn)).await
}

fn tag<'a>(event: &'a sentry::protocol::Event<'static>, name: &str) -> Option<&'a str> {
    event.tags.get(name).map(String::as_str)
}

// SEC-1, IDEM-8
#[tokio::test(flavor = "multi_thread")]
async fn an_injected_internal_error_is_one_event_with_its_request_id_and_no_value() {
    let (dsn, received) = ingestion().await;
    let server = reporting_server(&dsn).await;
    server.fault(json!({ "tool": "send_message", "error": "internal" })).await;
    let idempotency_key = format!("{CANARY}-{}", key("rep"));
    let failed = server
        .call(
            "owner",
            "send_message",
            json!({
                "restaurant_id": "rst_central", "conversation_id": "cnv_long",
                "text": format!("Bonjour {CANARY}"), "idempotency_key": idempotency_key,
            }),
        )
        .await;
    expect_error(&failed, ErrorCode::InternalError);
    // Neither a success nor another error is reported.
    expect_ok(&server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await);
    let refused = server
        .call("owner", "search_transcripts", json!({ "restaurant_id": "rst_rival", "query": CANARY }))
        .await;
    assert!(code_of(&refused).is_some(), "{}", refused.body);

    let events = received.wait_for(1).await;
    assert_eq!(events.len(), 1, "exactly one event: {events:?}");
    let (event, raw) = &events[0];
    assert_eq!(tag(event, "request_id"), Some(failed.request_id()));
    assert_eq!(tag(event, "tool"), Some("send_message"));
    assert_eq!(tag(event, "code"), Some("MCP_INTERNAL_ERROR"));
    for secret in [CANARY, "dev-token-owner", "cnv_long", "rst_central"] {
        assert!(!raw.contains(secret), "{secret} reached the error report: {raw}");
    }
}

// SEC-1: the defect the suite must catch attaches what the healthy server never does.
#[tokio::test(flavor = "multi_thread")]
async fn the_leaking_defect_reports_the_arguments() {
    let (dsn, received) = ingestion().await;
    let server = start_with(move |c| {
        c.sentry_dsn = Some(dsn);
        c.defects.push(mock_server::Defect::ReportLeaksArguments);
    })
    .await;
    server.fault(json!({ "tool": "create_organization", "error": "internal" })).await;
    let args = json!({ "name": format!("Org {CANARY}"), "idempotency_key": key("leak") });
    expect_error(&server.call("owner", "create_organization", args).await, ErrorCode::InternalError);
    let events = received.wait_for(1).await;
    assert_eq!(events.len(), 1);
    assert!(events[0].1.contains(CANARY), "the defect leaks: {}", events[0].1);
}

// A panic in a read is caught at the call's boundary; in a write, the effect's task is.
#[tokio::test(flavor = "multi_thread")]
async fn a_panic_in_a_call_is_an_internal_error_and_one_event() {
    let (dsn, received) = ingestion().await;
    let server = reporting_server(&dsn).await;
    server.fault(json!({ "tool": "get_order", "error": "panic" })).await;
    server.fault(json!({ "tool": "create_instruction", "error": "panic" })).await;
    let read = server
        .call("owner", "get_order", json!({ "restaurant_id": "rst_central", "order_id": "ord_c0001" }))
        .await;
    expect_error(&read, ErrorCode::InternalError);
    let args = json!({ "restaurant_id": "rst_central", "text": CANARY, "idempotency_key": key("panic") });
    let write = server.call("owner", "create_instruction", args).await;
    expect_error(&write, ErrorCode::InternalError);
    // The server keeps serving.
    expect_ok(&server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await);

    let events = received.wait_for(2).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let of = |request_id: &str| events.iter().find(|(e, _)| tag(e, "request_id") == Some(request_id));
    let (read_event, _) = of(read.request_id()).expect("the read's event");
    assert_eq!(tag(read_event, "cause"), Some("panic"));
    assert_eq!(read_event.message.as_deref(), Some("panic in get_order"));
    let (_, raw) = of(write.request_id()).expect("the write's event");
    assert!(!raw.contains(CANARY), "{raw}");
}

/// A DSN host that accepts connections and never answers: each call keeps its usual latency
/// (far under the transport's 5 s send timeout, which a blocking send would cost), past the
/// transport's queue of 30, and the server still stops promptly.
#[tokio::test(flavor = "multi_thread")]
async fn a_silent_error_host_costs_the_calls_nothing() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dsn = format!("http://public@{}/1", silent.local_addr().unwrap());
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let held = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((socket, _)) = silent.accept().await {
            held.lock().unwrap().push(socket); // kept open, never read nor answered
        }
    });

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = mock_server::Config::for_tests(crate::support::CONTROL_SECRET);
    config.sentry_dsn = Some(dsn);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(mock_server::run(listener, config, async {
        let _ = stopped.await;
    }));
    let server = Server::attach(&base);
    server.fault(json!({ "tool": "get_order", "error": "internal" })).await;
    let args = json!({ "restaurant_id": "rst_central", "order_id": "ord_c0001" });
    let mut slowest = Duration::ZERO;
    for _ in 0..50 {
        let started = Instant::now();
        expect_error(&server.call("owner", "get_order", args.clone()).await, ErrorCode::InternalError);
        slowest = slowest.max(started.elapsed());
    }
    assert!(slowest < Duration::from_secs(1), "a call took {slowest:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while accepted.lock().unwrap().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!accepted.lock().unwrap().is_empty(), "the transport never reached the silent host");

    let stopping = Instant::now();
    let _ = stop.send(());
    drop(server);
    tokio::time::timeout(Duration::from_secs(4), running)
        .await
        .expect("the server stops without waiting for the silent host")
        .unwrap()
        .unwrap();
    assert!(stopping.elapsed() < Duration::from_secs(4));
}
