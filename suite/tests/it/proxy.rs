//! A fault proxy: the reference server (embedded, with its control API) behind a small HTTP
//! proxy that breaks one thing, the way a real server could. The suite runs against the proxy;
//! a test then asserts the clause the fault breaks is failed, not passed.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use chataigne_conformance::background::Background;
use chataigne_conformance::cli::Outcome;
use serde_json::Value;

/// A request on its way to the reference.
pub struct Req {
    pub path: String,
    pub headers: HeaderMap,
    /// The body as JSON (`Null` when it is none).
    pub json: Value,
    pub body: Bytes,
}

impl Req {
    /// The JSON-RPC method, or "".
    pub fn method(&self) -> &str {
        self.json.get("method").and_then(Value::as_str).unwrap_or_default()
    }

    /// The tool a `tools/call` names, or "".
    pub fn tool(&self) -> &str {
        self.json.pointer("/params/name").and_then(Value::as_str).unwrap_or_default()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The reference's answer, on its way back.
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Resp {
    /// Rewrites a JSON answer (other answers are left alone).
    pub fn edit_json(&mut self, edit: impl FnOnce(&mut Value)) {
        if let Ok(mut v) = serde_json::from_slice::<Value>(&self.body) {
            edit(&mut v);
            self.body = serde_json::to_vec(&v).expect("JSON");
            self.headers.remove("content-length");
        }
    }

    pub fn json(status: u16, body: &Value) -> Resp {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/json".parse().expect("header"));
        Resp { status, headers, body: serde_json::to_vec(body).expect("JSON") }
    }
}

/// What the proxy breaks: `request` may change the request or answer it itself; `response`
/// may change the reference's answer.
#[derive(Default)]
pub struct Fault {
    pub request: Option<Box<OnRequest>>,
    pub response: Option<Box<OnResponse>>,
}

/// Changes a request, or answers it in the reference's place.
pub type OnRequest = dyn Fn(&mut Req) -> Option<Resp> + Send + Sync;
/// Changes the reference's answer.
pub type OnResponse = dyn Fn(&Req, &mut Resp) + Send + Sync;

/// The reference and the proxy in front of it, and a profile that points at the proxy.
pub struct Proxied {
    _reference: Background,
    _proxy: Background,
    pub profile: PathBuf,
}

impl Proxied {
    /// Runs the suite against the proxy with `args` (e.g. `--tags @ENV-5`).
    pub fn run(&self, args: &[&str]) -> Outcome {
        crate::fake::run_profile(&self.profile, args)
    }
}

pub fn start(defects: &[mock_server::Defect], fault: Fault) -> Proxied {
    let (reference, profile) = chataigne_conformance::embedded::start(defects, &[]).expect("reference");
    let upstream = profile.endpoint.clone().expect("endpoint");
    let base = upstream.trim_end_matches("/mcp").to_owned();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let fault = Arc::new(fault);
    let http = reqwest::Client::new();
    let proxy = chataigne_conformance::background::spawn(
        "fault proxy",
        tokio::runtime::Builder::new_multi_thread(),
        listener,
        move |listener, shutdown| async move {
            let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
                let (fault, http, base) = (fault.clone(), http.clone(), base.clone());
                async move { forward(req, &fault, &http, &base, port).await }
            });
            let _ = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
        },
    )
    .expect("proxy");

    // One file per proxy: tests run in parallel.
    let dir = std::env::temp_dir().join(format!("chataigne-proxy-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("profile dir");
    let mut toml = format!("endpoint = \"http://127.0.0.1:{port}/mcp\"\n");
    if let Some(log) = &profile.server_log {
        toml += &format!("server_log = {:?}\n", log.display().to_string());
    }
    toml += "[tokens]\n";
    for (persona, token) in &profile.tokens {
        toml += &format!("{persona} = {token:?}\n");
    }
    if let Some(control) = &profile.control {
        toml += &format!("[control]\nurl = {:?}\nsecret = {:?}\n", control.url, control.secret);
    }
    let path = dir.join("profile.toml");
    std::fs::write(&path, toml).expect("profile");
    Proxied { _reference: reference, _proxy: proxy, profile: path }
}

async fn forward(
    req: axum::extract::Request,
    fault: &Fault,
    http: &reqwest::Client,
    base: &str,
    port: u16,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 4 << 20).await.unwrap_or_default();
    let mut req = Req {
        path: parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(),
        headers: parts.headers,
        json: serde_json::from_slice(&body).unwrap_or(Value::Null),
        body,
    };
    let answered = fault.request.as_ref().and_then(|f| f(&mut req));
    let mut resp = match answered {
        Some(resp) => resp,
        None => {
            let mut out = http.request(parts.method, format!("{base}{}", req.path)).body(req.body.clone());
            // The proxy's own Host becomes the reference's; any other (a foreign Host the suite
            // sends on purpose, PROTO-5) goes through as sent.
            let own_host = format!("127.0.0.1:{port}");
            for (name, value) in &req.headers {
                let own = name == "host" && value.to_str().is_ok_and(|v| v == own_host);
                if !own && name != "content-length" {
                    out = out.header(name, value);
                }
            }
            match out.send().await {
                Ok(r) => {
                    let status = r.status().as_u16();
                    let headers = r.headers().clone();
                    Resp { status, headers, body: r.bytes().await.unwrap_or_default().to_vec() }
                }
                Err(_) => Resp { status: 502, headers: HeaderMap::new(), body: Vec::new() },
            }
        }
    };
    if let Some(f) = &fault.response {
        f(&req, &mut resp);
    }
    resp.headers.remove("transfer-encoding");
    resp.headers.remove("content-length");
    (StatusCode::from_u16(resp.status).unwrap_or(StatusCode::BAD_GATEWAY), resp.headers, resp.body)
}
