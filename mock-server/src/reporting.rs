//! Error reporting to Sentry (`--sentry-dsn`, `SENTRY_DSN`; off by default). A real server has
//! it, so it is not under `dev/`: every internal error of a tool call (MCP_INTERNAL_ERROR, an
//! injected fault or a panic included) becomes one event tagged with the call's request_id, its
//! tool and its code, and nothing of its arguments (SEC-1, IDEM-8).
//!
//! Two guards, so a later change that attaches more cannot leak either:
//! - [`Reporter::internal_error`] builds the event from the request_id, the tool and the code
//!   only;
//! - [`scrub`] (`before_send`) and [`scrub_breadcrumb`] (`before_breadcrumb`) rebuild every
//!   event and breadcrumb from an allow-list of fields: no message but one made from the
//!   allowed tags, no request data, headers, URL, query string, user, extra data, contexts or
//!   exceptions, breadcrumbs without message or data.
//!
//! Sending never holds a call: `capture_event` queues the envelope on sentry's transport thread
//! (a bounded queue of 30; when full, events are dropped, never waited for), whose HTTP client
//! has timeouts, so a DSN host that is slow, down or silent costs the calls nothing
//! (`tests/it/reporting.rs` proves it against a host that accepts and never answers).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chataigne_contract::{ErrorCode, ToolName};
use sentry::protocol::{Breadcrumb, Event, Level, Values};
use sentry::{ClientOptions, Hub, Scope, TransportFactory};
use serde_json::Value;

/// The only tags an event may carry, each with the form its value must have.
fn allowed_tag(name: &str, value: &str) -> bool {
    match name {
        "request_id" => chataigne_contract::envelope::is_request_id(value),
        "tool" => ToolName::parse(value).is_some(),
        "code" => ErrorCode::parse(value).is_some(),
        "cause" => matches!(value, "error" | "panic"),
        _ => false,
    }
}

/// One HTTP attempt to the DSN's host, at most: a host that accepts and never answers holds the
/// transport thread this long, never a call.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long shutdown waits for queued events to leave.
const FLUSH_ON_EXIT: Duration = Duration::from_secs(2);

/// What made a call end in an internal error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// An error the code returned (an injected fault among them).
    Error,
    /// A panic caught at the call's boundary.
    Panic,
}

impl Cause {
    fn as_str(self) -> &'static str {
        match self {
            Cause::Error => "error",
            Cause::Panic => "panic",
        }
    }
}

/// The server's error reporter: off without a DSN.
pub struct Reporter {
    hub: Option<Arc<Hub>>,
    /// The `report-leaks-arguments` defect: arguments attached to events, nothing scrubbed.
    leaks_arguments: bool,
}

// A DSN names a project key: not something to print in a debug dump.
impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporter").field("on", &self.is_on()).finish_non_exhaustive()
    }
}

impl Reporter {
    pub fn off() -> Reporter {
        Reporter { hub: None, leaks_arguments: false }
    }

    /// Reports to `dsn` over HTTP(S); `None` is off. An unparsable DSN is a startup error.
    /// `leaks_arguments` is SEC-1's defect mode (`Defects::reports_arguments`): events carry the
    /// call's arguments and nothing is scrubbed.
    pub fn new(dsn: Option<&str>, leaks_arguments: bool) -> anyhow::Result<Reporter> {
        let Some(dsn) = dsn.map(str::trim).filter(|d| !d.is_empty()) else {
            return Ok(Reporter::off());
        };
        let http = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the error reporter's HTTP client: {e}"))?;
        Reporter::with_transport(dsn, Arc::new(HttpTransport { http }), leaks_arguments)
    }

    /// As [`Reporter::new`], with another transport (tests).
    pub fn with_transport(
        dsn: &str,
        transport: Arc<dyn TransportFactory>,
        leaks_arguments: bool,
    ) -> anyhow::Result<Reporter> {
        let dsn: sentry::types::Dsn =
            dsn.parse().map_err(|e| anyhow::anyhow!("--sentry-dsn is not a Sentry DSN: {e}"))?;
        let mut options = ClientOptions::default();
        options.dsn = Some(dsn);
        options.release = Some(concat!("chataigne-mock@", env!("CARGO_PKG_VERSION")).into());
        options.transport = Some(transport);
        // No integration adds anything: no panic hook (panics in calls are caught at the call's
        // boundary, where the request_id is known), no contexts, no stack traces.
        options.default_integrations = false;
        options.send_default_pii = false;
        options.attach_stacktrace = false;
        options.shutdown_timeout = FLUSH_ON_EXIT;
        if !leaks_arguments {
            options.before_send = Some(Arc::new(|event| Some(scrub(event))));
            options.before_breadcrumb = Some(Arc::new(|crumb| Some(scrub_breadcrumb(crumb))));
        }
        let client = Arc::new(sentry::Client::with_options(options));
        let hub = Arc::new(Hub::new(Some(client), Arc::new(Scope::default())));
        Ok(Reporter { hub: Some(hub), leaks_arguments })
    }

    pub fn is_on(&self) -> bool {
        self.hub.is_some()
    }

    /// One event for a call that ended in an internal error. `args` is read only by the
    /// `report-leaks-arguments` defect (it is `Null` otherwise).
    pub fn internal_error(&self, request_id: &str, tool: &str, cause: Cause, args: &Value) {
        let Some(hub) = &self.hub else { return };
        let mut event = internal_error_event(request_id, tool, cause);
        if self.leaks_arguments {
            // The defect: what careless error reporting attaches, unscrubbed.
            event.message = Some(format!("internal error in {tool} with {args}"));
            event.extra.insert("arguments".to_owned(), args.clone());
            event.request = Some(sentry::protocol::Request {
                method: Some("POST".to_owned()),
                data: Some(args.to_string()),
                ..Default::default()
            });
        }
        hub.capture_event(event);
    }

    /// The reporter's own hub (tests add breadcrumbs through it).
    #[cfg(test)]
    fn hub(&self) -> Option<&Arc<Hub>> {
        self.hub.as_ref()
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        let Some(hub) = self.hub.take() else { return };
        // Sentry's transport thread is joined when the client drops, after any send in flight:
        // against a silent host that is a whole SEND_TIMEOUT. Close it on a thread of its own
        // and wait at most FLUSH_ON_EXIT, so queued events get their chance and shutdown is
        // never held longer.
        let (done, waited) = std::sync::mpsc::channel::<()>();
        let closing = std::thread::Builder::new().name("sentry-close".into()).spawn(move || {
            if let Some(client) = hub.client() {
                client.close(Some(FLUSH_ON_EXIT));
            }
            drop(hub);
            let _ = done.send(());
        });
        if closing.is_ok() {
            let _ = waited.recv_timeout(FLUSH_ON_EXIT + Duration::from_millis(500));
        }
    }
}

/// The event of an internal error: what the allow-list keeps, and nothing else.
fn internal_error_event(request_id: &str, tool: &str, cause: Cause) -> Event<'static> {
    let mut event =
        Event { level: Level::Error, logger: Some("chataigne-mock".to_owned()), ..Default::default() };
    for (key, value) in [
        ("request_id", request_id),
        ("tool", tool),
        ("code", ErrorCode::InternalError.as_str()),
        ("cause", cause.as_str()),
    ] {
        event.tags.insert(key.to_owned(), value.to_owned());
    }
    event.message = Some(message(&event.tags));
    event
}

/// The one message an event may carry: made of allowed tags only.
fn message(tags: &std::collections::BTreeMap<String, String>) -> String {
    let tool = tags.get("tool").map_or("a tool call", String::as_str);
    match tags.get("cause").map(String::as_str) {
        Some("panic") => format!("panic in {tool}"),
        _ => format!("internal error in {tool}"),
    }
}

/// `before_send`: the event rebuilt from an allow-list of fields. Whatever else a code path or
/// an integration attached (request data, headers, URL and query string, cookies, user, extra
/// data, contexts, exceptions (a type name can be a value too), stack frames with their
/// variables, threads, the transaction, the server name, a fingerprint) is dropped; tags are
/// kept only under an allowed name and with a value of the allowed form; the message is made
/// from those tags.
pub fn scrub(event: Event<'static>) -> Event<'static> {
    let tags: std::collections::BTreeMap<String, String> =
        event.tags.into_iter().filter(|(k, v)| allowed_tag(k, v)).collect();
    let breadcrumbs = event.breadcrumbs.values.into_iter().map(scrub_breadcrumb).collect::<Vec<_>>();
    Event {
        event_id: event.event_id,
        level: event.level,
        timestamp: event.timestamp,
        platform: event.platform,
        logger: Some("chataigne-mock".to_owned()),
        release: event.release,
        sdk: event.sdk,
        message: Some(message(&tags)),
        tags,
        breadcrumbs: Values::from(breadcrumbs),
        ..Default::default()
    }
}

/// `before_breadcrumb`: when, what kind and how severe; never a message or data (they are where
/// URLs, queries and bodies go).
pub fn scrub_breadcrumb(crumb: Breadcrumb) -> Breadcrumb {
    let word =
        |s: &str| !s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'.');
    Breadcrumb {
        timestamp: crumb.timestamp,
        ty: if word(&crumb.ty) { crumb.ty } else { "default".to_owned() },
        category: crumb.category.filter(|c| word(c)),
        level: crumb.level,
        ..Default::default()
    }
}

/// Sentry's reqwest transport (its thread, bounded queue and rate-limit handling) with our HTTP
/// client: sentry's own has no timeout, so a silent host would hold its thread, and the
/// shutdown that joins it, forever.
struct HttpTransport {
    http: reqwest::Client,
}

impl TransportFactory for HttpTransport {
    fn create_transport_with_options(&self, options: sentry::TransportOptions) -> Arc<dyn sentry::Transport> {
        Arc::new(
            sentry::transports::ReqwestHttpTransportOptions::from(options)
                .with_client(self.http.clone())
                .build(),
        )
    }
}

#[cfg(test)]
mod tests;
