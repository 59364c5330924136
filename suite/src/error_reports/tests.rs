use std::io::Write as _;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;

const CANARY: &str = "cnryerrorreports01";

/// A real sentry client whose transport hands over the envelopes it built, as it would send them.
#[derive(Default)]
struct Outbox(Mutex<Vec<sentry::Envelope>>);

impl sentry::Transport for Outbox {
    fn send_envelope(&self, envelope: sentry::Envelope) {
        self.0.lock().unwrap().push(envelope);
    }
}

/// Events captured by a real `sentry::Client` (a tag, a message, extra data, a breadcrumb with
/// data, an attachment holding newlines), as their envelopes.
fn real_envelopes(request_id: &str) -> Vec<sentry::Envelope> {
    let outbox = Arc::new(Outbox::default());
    let mut options = sentry::ClientOptions::default();
    options.dsn = Some("http://key@127.0.0.1:1/7".parse().unwrap());
    options.transport = Some(Arc::new(Arc::clone(&outbox)));
    let client = sentry::Client::with_options(options);
    let hub = sentry::Hub::new(Some(Arc::new(client)), Arc::new(sentry::Scope::default()));
    hub.add_breadcrumb(sentry::Breadcrumb {
        message: Some("before".into()),
        data: [("q".to_owned(), json!(CANARY))].into(),
        ..Default::default()
    });
    hub.configure_scope(|scope| {
        scope.set_tag("request_id", request_id);
        scope.add_attachment(sentry::protocol::Attachment {
            buffer: format!("line one\nline {CANARY}\n").into_bytes(),
            filename: "notes.txt".into(),
            ..Default::default()
        });
    });
    let mut event = sentry::protocol::Event { message: Some("internal error".into()), ..Default::default() };
    event.extra.insert("arguments".into(), json!({ "text": CANARY }));
    hub.capture_event(event);
    std::mem::take(&mut *outbox.0.lock().unwrap())
}

fn bytes_of(envelope: &sentry::Envelope) -> Vec<u8> {
    let mut out = Vec::new();
    envelope.to_writer(&mut out).unwrap();
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// The endpoint and a client for it (one per test: a client's pool belongs to its runtime).
struct Endpoint {
    capture: Capture,
    http: reqwest::Client,
}

async fn post(endpoint: &Endpoint, path: &str, encoding: Option<&str>, body: Vec<u8>) -> (u16, Value) {
    let mut request = endpoint
        .http
        .post(format!("http://{}{path}", endpoint.capture.addr()))
        .header("x-sentry-auth", "Sentry sentry_key=key, sentry_version=7")
        .body(body);
    if let Some(encoding) = encoding {
        request = request.header("content-encoding", encoding);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn start() -> Endpoint {
    Endpoint { capture: Capture::start(([127, 0, 0, 1], 0).into()).unwrap(), http: reqwest::Client::new() }
}

/// The envelope a real client sends, gzip'd as most SDKs send it, parses into its one event
/// with its tag; its raw bytes hold everything it attached, even in an attachment.
#[tokio::test]
async fn a_real_clients_envelope_gzipped_is_parsed_whole() {
    let endpoint = start();
    let capture = &endpoint.capture;
    let envelopes = real_envelopes("req_0123456789abcdefGZIP");
    assert_eq!(envelopes.len(), 1);
    let (status, answer) =
        post(&endpoint, "/api/7/envelope/", Some("gzip"), gzip(&bytes_of(&envelopes[0]))).await;
    assert_eq!(status, 200, "{answer}");
    let (received, dropped) = capture.since(0);
    assert!(!dropped);
    assert_eq!(received.len(), 1);
    let report = &received[0];
    assert_eq!(report.events.len(), 1, "{}", report.raw);
    assert_eq!(report.request_ids().collect::<Vec<_>>(), ["req_0123456789abcdefGZIP"]);
    // The envelope header writes the UUID hyphenated, the event without hyphens.
    let id = answer["id"].as_str().unwrap().replace('-', "");
    assert_eq!(Some(id.as_str()), report.events[0]["event_id"].as_str());
    assert_eq!(locate(report, CANARY).as_deref(), Some("event.breadcrumbs.values.0.data.q"));
    assert!(report.raw.contains(&format!("line {CANARY}")), "the attachment is searched too");
}

/// The same, plain and zlib-deflated, and through the store endpoint as an event's JSON in every
/// encoding a client may use (gzip, deflate, the legacy base64 of zlib).
#[tokio::test]
async fn every_encoding_and_both_endpoints_are_received() {
    use base64::Engine as _;
    let endpoint = start();
    let capture = &endpoint.capture;
    let envelope = real_envelopes("req_0123456789abcdefSTORE").remove(0);
    let raw = bytes_of(&envelope);
    let event = envelope.event().expect("an event item").clone();
    let json = serde_json::to_vec(&event).unwrap();
    let legacy = base64::engine::general_purpose::STANDARD.encode(zlib(&json)).into_bytes();
    let sent = [
        ("/api/7/envelope/", None, raw.clone()),
        ("/api/7/envelope", Some("deflate"), zlib(&raw)),
        ("/api/7/store/", None, json.clone()),
        ("/api/7/store/", Some("gzip"), gzip(&json)),
        ("/api/7/store/", Some("deflate"), zlib(&json)),
        ("/api/7/store/", None, legacy),
    ];
    for (path, encoding, body) in sent {
        let (status, answer) = post(&endpoint, path, encoding, body).await;
        assert_eq!(status, 200, "{path} {encoding:?}: {answer}");
    }
    let (received, _) = capture.since(0);
    assert_eq!(received.len(), 6);
    for report in &received {
        assert_eq!(report.request_ids().collect::<Vec<_>>(), ["req_0123456789abcdefSTORE"], "{}", report.raw);
        assert!(locate(report, CANARY).is_some_and(|place| place.starts_with("event.")), "{}", report.raw);
    }
}

#[tokio::test]
async fn bad_bodies_are_refused_and_kept_nowhere() {
    let endpoint = start();
    let capture = &endpoint.capture;
    let check = |status: u16, expected: u16, what: &str| assert_eq!(status, expected, "{what}");
    // A gzip bomb: 64 KiB that inflate past the 1 MiB limit.
    let bomb = gzip(&vec![b' '; MAX_BODY_BYTES + 1]);
    check(
        post(&endpoint, "/api/1/envelope/", Some("gzip"), bomb).await.0,
        413,
        "gzip over 1 MiB once decoded",
    );
    check(
        post(&endpoint, "/api/1/envelope/", None, vec![b'{'; MAX_BODY_BYTES + 1]).await.0,
        413,
        "a body over 1 MiB",
    );
    check(post(&endpoint, "/api/1/envelope/", Some("br"), b"{}\n".to_vec()).await.0, 415, "brotli");
    check(
        post(&endpoint, "/api/1/envelope/", Some("gzip"), b"not gzip".to_vec()).await.0,
        400,
        "corrupt gzip",
    );
    check(
        post(&endpoint, "/api/1/envelope/", None, b"not json\n".to_vec()).await.0,
        400,
        "a header that is not JSON",
    );
    let short = b"{}\n{\"type\":\"event\",\"length\":50}\n{}\n".to_vec();
    check(post(&endpoint, "/api/1/envelope/", None, short).await.0, 400, "an item shorter than its length");
    check(
        post(&endpoint, "/api/1/store/", None, b"[1]".to_vec()).await.0,
        400,
        "a store body that is not an event",
    );
    assert_eq!(capture.since(0).0.len(), 0);
}

#[test]
fn envelope_items_with_and_without_length() {
    let body = b"{\"event_id\":\"abc\"}\n{\"type\":\"attachment\",\"length\":5}\na\nb\nc\n{\"type\":\"event\"}\n{\"tags\":{\"request_id\":\"req_x\"}}\n{\"type\":\"client_report\",\"length\":2}\n{}";
    let (id, events) = parse_envelope(body).unwrap();
    assert_eq!(id.as_deref(), Some("abc"));
    assert_eq!(events, [json!({ "tags": { "request_id": "req_x" } })]);
    let pairs = json!({ "tags": [["request_id", "req_y"], ["tool", "get_order"]] });
    assert_eq!(tag(&pairs, "request_id"), Some("req_y"));
}

/// At most MAX_KEPT requests are kept; a reader from an older mark is told some were dropped.
#[tokio::test]
async fn the_newest_requests_are_kept_and_a_reader_knows_when_some_were_dropped() {
    let endpoint = start();
    let capture = &endpoint.capture;
    let mark = capture.mark();
    for i in 0..MAX_KEPT + 4 {
        let body = format!("{{}}\n{{\"type\":\"event\"}}\n{{\"tags\":{{\"request_id\":\"r{i}\"}}}}\n");
        assert_eq!(post(&endpoint, "/api/1/envelope/", None, body.into_bytes()).await.0, 200);
    }
    let (received, dropped) = capture.since(mark);
    assert!(dropped);
    assert_eq!(received.len(), MAX_KEPT);
    assert_eq!(received[0].request_ids().collect::<Vec<_>>(), ["r4"]);
    let (recent, dropped) = capture.since(capture.mark() - 2);
    assert!(!dropped);
    assert_eq!(recent.len(), 2);
}

#[test]
fn the_dsn_names_a_reachable_address() {
    let capture = Capture::start(([0, 0, 0, 0], 0).into()).unwrap();
    let port = capture.addr().port();
    assert_eq!(capture.dsn(), format!("http://chataigne@127.0.0.1:{port}/1"));
    let dsn: sentry::types::Dsn = capture.dsn().parse().expect("sentry accepts the DSN");
    assert_eq!(dsn.port(), port);
}
