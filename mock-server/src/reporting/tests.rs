use std::sync::{Arc, Mutex};

use sentry::protocol::{Breadcrumb, Context, Event, Exception, Request, User};
use serde_json::json;

use super::*;
use crate::dev::defects::{Defect, Defects};

const CANARY: &str = "cnry0123456789abcdef";
const DSN: &str = "http://public@127.0.0.1:9/1";
const REQUEST_ID: &str = "req_0123456789abcdefABCD";

/// The envelopes a real client produced, as the bytes it would send.
#[derive(Default)]
struct Captured(Mutex<Vec<Vec<u8>>>);

impl sentry::Transport for Captured {
    fn send_envelope(&self, envelope: sentry::Envelope) {
        let mut bytes = Vec::new();
        envelope.to_writer(&mut bytes).expect("an envelope serializes");
        self.0.lock().unwrap().push(bytes);
    }
}

fn reporter(defects: &[Defect]) -> (Reporter, Arc<Captured>) {
    let captured = Arc::new(Captured::default());
    let reporter = Reporter::with_transport(
        DSN,
        Arc::new(Arc::clone(&captured)),
        Defects::new(defects).reports_arguments(),
    )
    .expect("the DSN parses");
    (reporter, captured)
}

fn base_event() -> Event<'static> {
    internal_error_event(REQUEST_ID, "send_message", Cause::Error)
}

/// `mutate` puts the canary somewhere in an event; `scrub` must leave no trace of it.
fn check(place: &str, mutate: impl FnOnce(&mut Event<'static>)) {
    let mut event = base_event();
    mutate(&mut event);
    let before = serde_json::to_string(&event).unwrap();
    assert!(before.contains(CANARY), "{place}: the case does not put the canary in the event");
    let after = serde_json::to_string(&scrub(event)).unwrap();
    assert!(!after.contains(CANARY), "{place}: the canary survived the scrub: {after}");
    let tags = &scrub(base_event()).tags;
    assert_eq!(tags.get("request_id").map(String::as_str), Some(REQUEST_ID), "{place}");
}

#[test]
fn scrub_leaves_no_value_anywhere_in_an_event() {
    let text = format!("Bonjour {CANARY}");
    check("message", |e| e.message = Some(text.clone()));
    check("extra", |e| drop(e.extra.insert("arguments".into(), json!({ "text": text }))));
    check("request data", |e| e.request = Some(Request { data: Some(text.clone()), ..Default::default() }));
    check("request query string", |e| {
        e.request = Some(Request { query_string: Some(format!("q={CANARY}")), ..Default::default() })
    });
    check("request URL", |e| {
        let url = format!("https://mcp.example.com/mcp?q={CANARY}").parse().unwrap();
        e.request = Some(Request { url: Some(url), ..Default::default() })
    });
    check("request headers", |e| {
        let headers = [("authorization".to_owned(), format!("Bearer {CANARY}"))].into();
        e.request = Some(Request { headers, ..Default::default() })
    });
    check("request cookies", |e| {
        e.request = Some(Request { cookies: Some(format!("s={CANARY}")), ..Default::default() })
    });
    check("user", |e| e.user = Some(User { id: Some(CANARY.into()), ..Default::default() }));
    check("a tag of another name", |e| drop(e.tags.insert("idempotency_key".into(), CANARY.into())));
    check("an allowed tag with a value of another form", |e| {
        drop(e.tags.insert("tool".into(), CANARY.into()))
    });
    check("the request_id tag", |e| drop(e.tags.insert("request_id".into(), format!("req_{CANARY}-x"))));
    check("transaction", |e| e.transaction = Some(format!("POST /mcp?q={CANARY}")));
    check("culprit", |e| e.culprit = Some(CANARY.into()));
    check("fingerprint", |e| e.fingerprint = vec![CANARY.into()].into());
    check("server name", |e| e.server_name = Some(CANARY.into()));
    check("exception value", |e| {
        e.exception =
            vec![Exception { ty: "panic".into(), value: Some(text.clone()), ..Default::default() }].into()
    });
    check("exception type", |e| {
        e.exception = vec![Exception { ty: format!("{CANARY} x"), ..Default::default() }].into()
    });
    check("contexts", |e| {
        drop(e.contexts.insert("state".into(), Context::Other([("q".into(), json!(CANARY))].into())))
    });
    check("breadcrumb message", |e| {
        e.breadcrumbs = vec![Breadcrumb { message: Some(text.clone()), ..Default::default() }].into()
    });
    check("breadcrumb data", |e| {
        let data = [("url".to_owned(), json!(format!("/search?q={CANARY}")))].into();
        e.breadcrumbs = vec![Breadcrumb { data, ..Default::default() }].into()
    });
    check("breadcrumb category", |e| {
        e.breadcrumbs = vec![Breadcrumb { category: Some(CANARY.into()), ..Default::default() }].into()
    });
}

#[test]
fn scrub_keeps_what_triage_needs() {
    let event = scrub(internal_error_event(REQUEST_ID, "search_transcripts", Cause::Panic));
    let tags: Vec<(&str, &str)> = event.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        tags,
        [
            ("cause", "panic"),
            ("code", "MCP_INTERNAL_ERROR"),
            ("request_id", REQUEST_ID),
            ("tool", "search_transcripts")
        ]
    );
    assert_eq!(event.message.as_deref(), Some("panic in search_transcripts"));
    assert_eq!(event.level, Level::Error);
}

#[test]
fn breadcrumbs_keep_their_kind_and_lose_message_and_data() {
    let crumb = Breadcrumb {
        ty: "http".into(),
        category: Some("query".into()),
        message: Some(format!("GET /search?q={CANARY}")),
        data: [("body".to_owned(), json!(CANARY))].into(),
        ..Default::default()
    };
    let scrubbed = scrub_breadcrumb(crumb);
    assert_eq!((scrubbed.ty.as_str(), scrubbed.category.as_deref()), ("http", Some("query")));
    assert!(!serde_json::to_string(&scrubbed).unwrap().contains(CANARY));
}

/// Through a real sentry client: one event per internal error, tagged, and no canary even in a
/// breadcrumb recorded on the reporter's hub before it.
#[test]
fn a_real_client_sends_one_scrubbed_event_per_internal_error() {
    let (reporter, captured) = reporter(&[]);
    let hub = reporter.hub().expect("on");
    hub.add_breadcrumb(Breadcrumb { message: Some(format!("query {CANARY}")), ..Default::default() });
    let args = json!({ "text": CANARY, "idempotency_key": CANARY });
    reporter.internal_error(REQUEST_ID, "send_message", Cause::Error, &args);
    let sent = captured.0.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "one envelope");
    let text = String::from_utf8(sent[0].clone()).unwrap();
    assert!(!text.contains(CANARY), "{text}");
    let event: Value = text
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(|v| v.get("tags").is_some()))
        .expect("an event item");
    assert_eq!(event["tags"]["request_id"], REQUEST_ID);
    assert_eq!(event["tags"]["tool"], "send_message");
    assert_eq!(event["tags"]["code"], "MCP_INTERNAL_ERROR");
    assert_eq!(event["message"], "internal error in send_message");
}

#[test]
fn the_leaking_defect_attaches_the_arguments() {
    let (reporter, captured) = reporter(&[Defect::ReportLeaksArguments]);
    reporter.internal_error(REQUEST_ID, "send_message", Cause::Error, &json!({ "text": CANARY }));
    let sent = captured.0.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert!(String::from_utf8_lossy(&sent[0]).contains(CANARY));
}

#[test]
fn no_dsn_is_off_and_a_bad_dsn_is_refused() {
    assert!(!Reporter::new(None, false).unwrap().is_on());
    assert!(!Reporter::new(Some("  "), false).unwrap().is_on());
    let err = Reporter::new(Some("not a dsn"), false).unwrap_err();
    assert!(err.to_string().contains("--sentry-dsn is not a Sentry DSN"), "{err}");
    // Off: nothing to send, nothing happens.
    Reporter::off().internal_error(REQUEST_ID, "send_message", Cause::Error, &Value::Null);
}
