//! The suite's stand-in for Sentry (`error_reports = "sentry-capture"`): a small HTTP server on
//! a local port that speaks Sentry's ingestion protocol, so the server under test reports its
//! errors to the suite and SEC-1 / IDEM-8 can be proven over what it reports, not only over its
//! log. The DSN to give the server is printed at the start of the run ([`Capture::dsn`]).
//!
//! Accepted: `POST /api/<project>/envelope/` (newline-delimited envelope: a header line, then
//! items, each a header line and a payload of `length` bytes or up to the next newline) and
//! `POST /api/<project>/store/` (one event as JSON, or the legacy base64 of zlib), bodies plain
//! or `Content-Encoding: gzip` / `deflate`; any project and any key. Each request is kept whole,
//! decoded, with the events it carried: the checks search the raw bytes (so nothing an SDK
//! attaches escapes them) and match events by their `request_id` tag. Bounded: 1 MiB per body
//! once decoded (413 past it), the newest 256 requests kept.

use std::collections::VecDeque;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};

/// Where the endpoint listens unless the profile says otherwise: a fixed port, so a server
/// started before the suite (a staging deployment, a CI service) can be given the DSN in advance.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9412";

/// The largest body accepted, once decoded.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Requests kept; older ones are dropped first.
pub const MAX_KEPT: usize = 256;

/// The one kind of error reporting the suite can receive today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ErrorReports {
    /// Sentry's protocol, received by the suite itself.
    #[serde(rename = "sentry-capture")]
    SentryCapture,
}

/// One request the endpoint accepted.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its place in the run: 0, 1, 2, …
    pub seq: u64,
    /// The body, decoded (decompressed, and for the legacy store format, un-base64'd).
    pub raw: String,
    /// The events it carried.
    pub events: Vec<Value>,
}

impl Received {
    /// The `request_id` tags of its events (tags as an object or as `[key, value]` pairs).
    pub fn request_ids(&self) -> impl Iterator<Item = &str> {
        self.events.iter().filter_map(|e| tag(e, "request_id"))
    }
}

/// A tag of an event, in either form Sentry accepts.
pub fn tag<'a>(event: &'a Value, name: &str) -> Option<&'a str> {
    match event.get("tags")? {
        Value::Object(tags) => tags.get(name)?.as_str(),
        Value::Array(pairs) => pairs.iter().find_map(|p| match p.as_array()?.as_slice() {
            [k, v] if k.as_str() == Some(name) => v.as_str(),
            _ => None,
        }),
        _ => None,
    }
}

#[derive(Debug, Default)]
struct Kept {
    next_seq: u64,
    requests: VecDeque<Received>,
}

/// The running endpoint; stops when dropped.
pub struct Capture {
    addr: SocketAddr,
    kept: Arc<Mutex<Kept>>,
    _server: crate::background::Background,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Capture {
    /// Listens on `listen` (port 0: any free port), on a thread and runtime of its own, so it
    /// runs before the server under test starts and whatever runtime the run uses.
    pub fn start(listen: SocketAddr) -> anyhow::Result<Capture> {
        let listener = std::net::TcpListener::bind(listen)
            .with_context(|| format!("the error-report endpoint cannot listen on {listen}"))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let kept = Arc::new(Mutex::new(Kept::default()));
        let app = axum::Router::new()
            .route("/api/{project}/envelope/", post(envelope))
            .route("/api/{project}/envelope", post(envelope))
            .route("/api/{project}/store/", post(store))
            .route("/api/{project}/store", post(store))
            // Compressed bodies are limited here, decoded ones in `decode`.
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(Arc::clone(&kept));
        let runtime = tokio::runtime::Builder::new_current_thread();
        let server = crate::background::spawn(
            "error-report endpoint",
            runtime,
            listener,
            |listener, stop| async move {
                let _ = axum::serve(listener, app).with_graceful_shutdown(stop).await;
            },
        )?;
        Ok(Capture { addr, kept, _server: server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The DSN to give the server under test. Any key and project are accepted; an unspecified
    /// listen address (0.0.0.0) is written as 127.0.0.1: a server elsewhere uses this machine's
    /// address instead.
    pub fn dsn(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        format!("http://chataigne@{addr}/1")
    }

    /// The `seq` the next request will get: a mark to read from.
    pub fn mark(&self) -> u64 {
        self.lock().next_seq
    }

    /// The requests received since `mark`, and whether some of them were already dropped (more
    /// than [`MAX_KEPT`] arrived since).
    pub fn since(&self, mark: u64) -> (Vec<Received>, bool) {
        let kept = self.lock();
        let requests: Vec<Received> = kept.requests.iter().filter(|r| r.seq >= mark).cloned().collect();
        let first_kept = kept.requests.front().map_or(kept.next_seq, |r| r.seq);
        (requests, first_kept > mark)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type Answer = (StatusCode, axum::Json<Value>);

async fn envelope(State(kept): State<Arc<Mutex<Kept>>>, headers: HeaderMap, body: Bytes) -> Answer {
    let decoded = match decode(&headers, &body) {
        Ok(d) => d,
        Err(answer) => return answer,
    };
    match parse_envelope(&decoded) {
        Ok((id, events)) => keep(&kept, decoded, events, id),
        Err(why) => refuse(StatusCode::BAD_REQUEST, &why),
    }
}

async fn store(State(kept): State<Arc<Mutex<Kept>>>, headers: HeaderMap, body: Bytes) -> Answer {
    let mut decoded = match decode(&headers, &body) {
        Ok(d) => d,
        Err(answer) => return answer,
    };
    // Older SDKs send the store body as base64 of zlib, without a Content-Encoding.
    if !decoded.trim_ascii_start().starts_with(b"{") {
        use base64::Engine as _;
        let unpacked = base64::engine::general_purpose::STANDARD
            .decode(decoded.trim_ascii())
            .ok()
            .and_then(|z| inflate(flate2::read::ZlibDecoder::new(&z[..])).ok());
        match unpacked {
            Some(d) => decoded = d,
            None => return refuse(StatusCode::BAD_REQUEST, "the body is neither JSON nor base64 of zlib"),
        }
    }
    match serde_json::from_slice::<Value>(&decoded) {
        Ok(event @ Value::Object(_)) => {
            let id = event.get("event_id").and_then(Value::as_str).map(str::to_owned);
            keep(&kept, decoded, vec![event], id)
        }
        _ => refuse(StatusCode::BAD_REQUEST, "the body is not a JSON event"),
    }
}

fn keep(kept: &Mutex<Kept>, raw: Vec<u8>, events: Vec<Value>, id: Option<String>) -> Answer {
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    let seq = kept.next_seq;
    kept.next_seq += 1;
    if kept.requests.len() == MAX_KEPT {
        kept.requests.pop_front();
    }
    kept.requests.push_back(Received { seq, raw: String::from_utf8_lossy(&raw).into_owned(), events });
    let id = id.unwrap_or_else(|| format!("{seq:032x}"));
    (StatusCode::OK, axum::Json(json!({ "id": id })))
}

fn refuse(status: StatusCode, why: &str) -> Answer {
    (status, axum::Json(json!({ "detail": why })))
}

/// The body as sent before `Content-Encoding`, at most [`MAX_BODY_BYTES`].
fn decode(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, Answer> {
    let encoding = headers
        .get(axum::http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    let decoded = match encoding.as_str() {
        "" | "identity" => Ok(body.to_vec()),
        "gzip" | "x-gzip" => inflate(flate2::read::GzDecoder::new(body)),
        // HTTP's deflate is zlib-wrapped; some clients send it raw.
        "deflate" => inflate(flate2::read::ZlibDecoder::new(body))
            .or_else(|_| inflate(flate2::read::DeflateDecoder::new(body))),
        other => {
            return Err(refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("Content-Encoding {other} is not supported"),
            ));
        }
    };
    decoded.map_err(|why| match why {
        Inflate::TooLarge => refuse(StatusCode::PAYLOAD_TOO_LARGE, "the decoded body is over 1 MiB"),
        Inflate::Corrupt => refuse(StatusCode::BAD_REQUEST, "the body does not decode"),
    })
}

enum Inflate {
    TooLarge,
    Corrupt,
}

/// Reads a decoder to its end, refusing past [`MAX_BODY_BYTES`] (a small gzip can inflate to
/// gigabytes).
fn inflate(decoder: impl std::io::Read) -> Result<Vec<u8>, Inflate> {
    let mut out = Vec::new();
    decoder.take(MAX_BODY_BYTES as u64 + 1).read_to_end(&mut out).map_err(|_| Inflate::Corrupt)?;
    if out.len() > MAX_BODY_BYTES {
        return Err(Inflate::TooLarge);
    }
    Ok(out)
}

/// An envelope's `event_id` and its `event` items.
pub fn parse_envelope(body: &[u8]) -> Result<(Option<String>, Vec<Value>), String> {
    let (header, mut rest) = split_line(body);
    let header: Value =
        serde_json::from_slice(header).map_err(|e| format!("the envelope header is not JSON: {e}"))?;
    let mut event_id = header.get("event_id").and_then(Value::as_str).map(str::to_owned);
    let mut events = Vec::new();
    while !rest.is_empty() {
        let (line, after) = split_line(rest);
        if line.trim_ascii().is_empty() {
            rest = after;
            continue;
        }
        let item: Value =
            serde_json::from_slice(line).map_err(|e| format!("an item header is not JSON: {e}"))?;
        let payload = match item.get("length").and_then(Value::as_u64) {
            Some(len) => {
                let len = usize::try_from(len).map_err(|_| "an item length is too large".to_owned())?;
                let payload = after.get(..len).ok_or("an item is shorter than its length")?;
                rest = after[len..].strip_prefix(b"\n").unwrap_or(&after[len..]);
                payload
            }
            None => {
                let (payload, next) = split_line(after);
                rest = next;
                payload
            }
        };
        if item.get("type").and_then(Value::as_str) == Some("event") {
            let event: Value =
                serde_json::from_slice(payload).map_err(|e| format!("an event item is not JSON: {e}"))?;
            if event_id.is_none() {
                event_id = event.get("event_id").and_then(Value::as_str).map(str::to_owned);
            }
            events.push(event);
        }
    }
    Ok((event_id, events))
}

/// The bytes before the first newline, and those after it.
fn split_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|b| *b == b'\n') {
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (bytes, &[]),
    }
}

/// Where in a received request `needle` is: the JSON path inside an event when it is in one
/// (`event.extra.arguments.text`), else "the request body".
pub fn locate(received: &Received, needle: &str) -> Option<String> {
    if !received.raw.contains(needle) {
        return None;
    }
    fn walk(v: &Value, path: &mut Vec<String>, needle: &str) -> Option<String> {
        match v {
            Value::String(s) if s.contains(needle) => Some(path.join(".")),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                path.push(i.to_string());
                let found = walk(item, path, needle);
                path.pop();
                found
            }),
            Value::Object(map) => map.iter().find_map(|(k, item)| {
                path.push(k.clone());
                let found = if k.contains(needle) { Some(path.join(".")) } else { walk(item, path, needle) };
                path.pop();
                found
            }),
            _ => None,
        }
    }
    let in_event = received.events.iter().find_map(|e| walk(e, &mut vec!["event".to_owned()], needle));
    Some(in_event.unwrap_or_else(|| "the request body".to_owned()))
}

#[cfg(test)]
mod tests;
