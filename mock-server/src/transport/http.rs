//! Streamable HTTP: the axum router around rmcp's service, and the gate in front of `/mcp` that
//! rmcp does not provide: Origin check (PROTO-5), bearer authentication (AUTH-1, AUTH-2), body
//! limit (LIM-7), JSON-RPC shape errors (PROTO-2) and the `x-request-id` header (ENV-2).

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::auth::{Principal, bearer};
use crate::transport::mcp::{Handler, RequestId, new_request_id};
use crate::transport::serve::BodyError;

/// Host names always accepted by the DNS-rebinding check (PROTO-5), besides `--allowed-host`s.
pub const LOOPBACK_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "::1", "[::1]"];

/// rmcp's transport as the reference server runs it: stateless, JSON answers, no SSE keep-alive.
/// Public so the load baseline (`examples/rmcp_echo.rs`) measures the same configuration.
pub fn transport_config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
}

/// `/mcp` behind the gate, and the resource metadata (RFC 9728). The development routes are
/// mounted beside these by `crate::router`.
pub fn routes(app: Arc<App>, ct: CancellationToken) -> Router {
    let mut config =
        transport_config().with_cancellation_token(ct).with_max_request_body_bytes(app.defects.body_limit());
    config = match &app.config.allowed_hosts {
        None => config.disable_allowed_hosts(),
        Some(_) if app.defects.host_unchecked() => config.disable_allowed_hosts(),
        Some(extra) => {
            let hosts = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(extra.iter().cloned());
            config.with_allowed_hosts(hosts)
        }
    };
    let handler_app = app.clone();
    let service = StreamableHttpService::new(
        move || Ok(Handler::http(handler_app.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    // A route layer: the gate (and its 401) is for /mcp only; an unknown path stays a 404.
    let mcp = Router::new().nest_service("/mcp", service).route_layer(from_fn_with_state(app.clone(), gate));
    Router::new()
        .route("/.well-known/oauth-protected-resource", get(resource_metadata))
        .route("/.well-known/oauth-protected-resource/mcp", get(resource_metadata))
        .route("/.well-known/chataigne-control", get(control_advert))
        .with_state(app)
        .merge(mcp)
}

/// The gate in front of rmcp. Every answer, refused or served, carries `x-request-id`.
async fn gate(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let request_id = new_request_id();
    let mut response = admit(&app, request, next, &request_id).await;
    if !app.defects.hides_request_id_header()
        && let Ok(value) = HeaderValue::from_str(&request_id)
    {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

async fn admit(app: &Arc<App>, mut request: Request, next: Next, request_id: &str) -> Response {
    // DNS-rebinding protection comes before anything else (PROTO-5).
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !origin_allowed(app, origin)
    {
        return (StatusCode::FORBIDDEN, "Forbidden: Origin not allowed").into_response();
    }
    let principal = match authenticate(app, request.headers()) {
        Some(p) => p,
        None => return unauthorized(app),
    };
    let mut posted = None;
    if request.method() == axum::http::Method::POST {
        let (mut parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, app.defects.body_limit()).await {
            Ok(bytes) => bytes,
            Err(e) => return body_refusal(BodyError::of(&e)),
        };
        if let Some(refusal) = check_json_rpc(&bytes) {
            return refusal;
        }
        if json_content(&parts.headers) || app.defects.rewrites_answers() {
            posted = Some(bytes.clone());
        }
        app.defects.request_headers(&mut parts.headers, &bytes);
        request = Request::from_parts(parts, Body::from(bytes));
    }
    request.extensions_mut().insert(principal);
    request.extensions_mut().insert(RequestId(request_id.to_owned()));
    let response = next.run(request).await;
    // rmcp answers 415 and a text naming serde's complaint (values included) for JSON it cannot
    // deserialize into its types; the gate's check lets such bodies through when they look
    // right (an id too large, a params value rmcp refuses), so their answer is replaced here.
    match posted {
        Some(bytes) if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE => cannot_take(&bytes),
        Some(bytes) if app.defects.rewrites_answers() => app.defects.answer(&bytes, response).await,
        _ => response,
    }
}

/// `Content-Type: application/json` as rmcp reads it: past this, its 415 means "cannot
/// deserialize", not "wrong media type".
fn json_content(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        v.split_once(';').map_or(v, |(essence, _)| essence).trim().eq_ignore_ascii_case("application/json")
    })
}

/// A body that could not be read. Only one over the limit is 413 (LIM-7); one cut short is not
/// JSON (PROTO-2's -32700); one still incomplete at the body deadline is 408, and the
/// connection is closed since the rest of it may still come.
fn body_refusal(error: BodyError) -> Response {
    match error {
        BodyError::TooLarge => {
            (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large: the limit is 1 MiB").into_response()
        }
        BodyError::CutShort => rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32700,
            "Parse error: the body ended before its length",
        ),
        BodyError::TimedOut => {
            let mut response = rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                Value::Null,
                -32600,
                "Invalid Request: the body did not arrive in time",
            );
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
    }
}

pub(crate) fn origin_allowed(app: &App, origin: &HeaderValue) -> bool {
    app.defects.origin_unchecked() || origin_ok(origin, &app.config.allowed_origins)
}

/// A loopback origin or one of `--allowed-origin`s.
fn origin_ok(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Ok(origin) = origin.to_str() else { return false };
    let host = origin.split_once("://").map_or("", |(_, rest)| rest);
    let host = host
        .rsplit_once(':')
        .map_or(host, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { host });
    matches!(host, "localhost" | "127.0.0.1" | "[::1]") || allowed.iter().any(|o| o == origin)
}

/// DNS-rebinding protection (PROTO-5) in front of every route but `/mcp`, whose gate checks the
/// Origin and rmcp the Host (there the defects may switch them off; here nothing does): the
/// control API, the authorization server, the metadata documents and unknown paths. Besides
/// the `/mcp` origins, the server's own (`--public-url`) is allowed: its consent page posts back.
pub async fn rebinding_guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == "/mcp" || path.starts_with("/mcp/") {
        return next.run(request).await;
    }
    if let Some(allowed) = &app.config.allowed_hosts
        && let Some(host) = request.headers().get(header::HOST)
        && !host_ok(host, allowed)
    {
        return (StatusCode::FORBIDDEN, "Forbidden: Host not allowed").into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !origin_ok(origin, &app.config.allowed_origins)
        && !own_origin(&app.public_url)
            .is_some_and(|own| origin.as_bytes().eq_ignore_ascii_case(own.as_bytes()))
    {
        return (StatusCode::FORBIDDEN, "Forbidden: Origin not allowed").into_response();
    }
    next.run(request).await
}

/// `Host` against the loopback names and `--allowed-host`s, as rmcp compares them on `/mcp`:
/// names case-insensitive and without brackets; an allowed entry with a port needs that port.
fn host_ok(host: &HeaderValue, allowed: &[String]) -> bool {
    let authority = |text: &str| {
        let a = text.trim().parse::<http::uri::Authority>().ok()?;
        Some((a.host().trim_matches(['[', ']']).to_ascii_lowercase(), a.port_u16()))
    };
    let Some((name, port)) = host.to_str().ok().and_then(authority) else { return false };
    LOOPBACK_HOSTS.iter().copied().chain(allowed.iter().map(String::as_str)).any(|entry| {
        let (allowed_name, allowed_port) =
            authority(entry).unwrap_or_else(|| (entry.to_ascii_lowercase(), None));
        allowed_name == name && allowed_port.is_none_or(|p| port == Some(p))
    })
}

/// `scheme://host[:port]` of the canonical URL: what a browser sends as `Origin` for its pages.
fn own_origin(public_url: &str) -> Option<&str> {
    let (scheme, rest) = public_url.split_once("://")?;
    let end = scheme.len() + 3 + rest.find('/').unwrap_or(rest.len());
    Some(&public_url[..end])
}

fn authenticate(app: &App, headers: &HeaderMap) -> Option<Principal> {
    let token = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
    // The audience is the canonical resource, never one built from the request (RFC 8707).
    let issued = |t: &str| app.issuer().check(t, &app.resource_url(), app.clock.now_ms());
    match token.and_then(|t| app.tokens.check(t).or_else(|| issued(t))) {
        Some(p) => Some(p),
        None if app.defects.serves_anonymous_as_owner() && token.is_none() => {
            app.tokens.check(&format!("{}owner", crate::auth::DEV_TOKEN_PREFIX))
        }
        None => None,
    }
}

/// 401 with the resource metadata URL (AUTH-1, RFC 9728 §5.1). The token is never echoed.
fn unauthorized(app: &App) -> Response {
    let challenge = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\"",
        app.public_url
    );
    let mut response = (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({ "error": "invalid_token", "error_description": "A valid bearer token for this resource is required" })),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// RFC 9728 protected resource metadata, from the canonical URL whatever the `Host`.
async fn resource_metadata(State(app): State<Arc<App>>) -> Response {
    let base = &app.public_url;
    axum::Json(json!({
        "resource": app.resource_url(),
        "authorization_servers": if app.config.auth_server { vec![base.clone()] } else { Vec::new() },
        "scopes_supported": chataigne_contract::tools::SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "Chataigne reference MCP server",
    }))
    .into_response()
}

/// Tells a conformance run whether the control API exists here (it still needs the secret).
async fn control_advert(State(app): State<Arc<App>>) -> Response {
    if app.config.control_secret.is_some() {
        axum::Json(json!({ "control_api": "/control" })).into_response()
    } else {
        StatusCode::NOT_FOUND.into_response()
    }
}

fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (status, axum::Json(body)).into_response()
}

/// JSON-RPC errors rmcp would answer otherwise (PROTO-2): not JSON → -32700; not a JSON-RPC
/// object → -32600; a `tools/call` without a tool name → -32602.
fn check_json_rpc(bytes: &Bytes) -> Option<Response> {
    if well_formed(bytes) {
        return None;
    }
    full_check(bytes)
}

/// The top-level members the gate looks at, borrowed from the body. `Some` even for `null`
/// (unlike `Option<&RawValue>`), so "present" means what `Map::contains_key` means.
#[derive(serde::Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    name: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    arguments: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

/// The common case without building a `Value` tree: true only when [`full_check`] would pass
/// the body too. Anything unusual (escapes, duplicate keys, odd types) goes the long way.
fn well_formed(bytes: &[u8]) -> bool {
    let starts = |raw: Option<&RawValue>, c: &[u8]| raw.is_some_and(|r| c.contains(&r.get().as_bytes()[0]));
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return false;
    }
    let Ok(p) = serde_json::from_slice::<Probe>(bytes) else { return false };
    let is_response = p.result.is_some() || p.error.is_some();
    let id_ok = p.id.is_none_or(|id| starts(Some(id), b"\"-0123456789n"));
    if p.jsonrpc.map(RawValue::get) != Some("\"2.0\"") || !id_ok || (!is_response && !starts(p.method, b"\""))
    {
        return false;
    }
    // An escaped method name might spell tools/call: only the plain spelling is fast.
    if p.method.is_some_and(|m| m.get().contains('\\')) {
        return false;
    }
    if p.method.map(RawValue::get) == Some("\"tools/call\"") && p.id.is_some() {
        let Some(params) = p.params.filter(|r| r.get().starts_with('{')) else { return false };
        let Ok(q) = serde_json::from_str::<Probe>(params.get()) else { return false };
        let args_ok = q.arguments.is_none_or(|a| a.get().starts_with('{') || a.get() == "null");
        return starts(q.name, b"\"") && args_ok;
    }
    true
}

fn full_check(bytes: &Bytes) -> Option<Response> {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        if valid_json(bytes) {
            return Some(cannot_take(bytes));
        }
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32700,
            "Parse error: the body is not JSON",
        ));
    };
    let Some(object) = value.as_object() else {
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32600,
            "Invalid Request: expected one JSON-RPC object",
        ));
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::Null | Value::String(_) | Value::Number(_));
    let id = if id_ok { id } else { Value::Null };
    let is_response = object.contains_key("result") || object.contains_key("error");
    let method = object.get("method");
    if object.get("jsonrpc") != Some(&json!("2.0"))
        || !id_ok
        || (!is_response && !method.is_some_and(Value::is_string))
    {
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            "Invalid Request: not a JSON-RPC 2.0 object",
        ));
    }
    if method == Some(&json!("tools/call")) && object.contains_key("id") {
        let params = object.get("params");
        let name_ok = params.and_then(|p| p.get("name")).is_some_and(Value::is_string);
        let args_ok = params.and_then(|p| p.get("arguments")).is_none_or(|a| a.is_object() || a.is_null());
        if !params.is_some_and(Value::is_object) || !name_ok || !args_ok {
            return Some(rpc_error(
                StatusCode::OK,
                id,
                -32602,
                "Invalid params: tools/call needs a tool name and object arguments",
            ));
        }
    }
    None
}

/// JSON by RFC 8259's grammar, whether or not serde can hold it: serde_json's skipping parser
/// (behind `IgnoredAny`) has no depth limit and checks neither number ranges nor surrogates.
fn valid_json(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok() && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// The answer to valid JSON that serde or rmcp cannot take (nesting past 128, a number beyond
/// f64, a lone surrogate, an id that is neither a string nor an exact integer; PROTO-2): -32602
/// with the request's id when only its params are at fault, else -32600 with the id when it
/// can be read, `null` otherwise. Like the gate's other refusals: 200 for -32602, 400 else.
fn cannot_take(bytes: &[u8]) -> Response {
    let probe = (bytes.trim_ascii_start().first() == Some(&b'{'))
        .then(|| serde_json::from_slice::<Probe>(bytes).ok())
        .flatten();
    let unreadable = "Invalid Request: the message cannot be read (its id, or a value nested too deep, out of range or a lone surrogate)";
    let Some(p) = probe else {
        return rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32600, unreadable);
    };
    let id = p.id.and_then(readable_id);
    let method_ok = p.method.is_some_and(|m| serde_json::from_str::<String>(m.get()).is_ok());
    let request_ok = p.jsonrpc.map(RawValue::get) == Some("\"2.0\"") && method_ok;
    match id {
        Some(id) if request_ok && p.params.is_some() => rpc_error(
            StatusCode::OK,
            id,
            -32602,
            "Invalid params: a value cannot be read (nested too deep, out of range, a lone surrogate or of the wrong type)",
        ),
        id => rpc_error(StatusCode::BAD_REQUEST, id.unwrap_or(Value::Null), -32600, unreadable),
    }
}

/// An id as JSON-RPC libraries keep it (rmcp's `NumberOrString`): a string, or an integer held
/// exactly (an i64, or a float form of one below 2^53).
fn readable_id(raw: &RawValue) -> Option<Value> {
    match serde_json::from_str::<Value>(raw.get()).ok()? {
        Value::String(s) => Some(Value::String(s)),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0).map(|f| f as i64)
            })
            .map(Value::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn agrees(body: &str) -> bool {
        let bytes = Bytes::copy_from_slice(body.as_bytes());
        !well_formed(&bytes) || full_check(&bytes).is_none()
    }

    #[test]
    fn the_audience_is_the_canonical_resource_whatever_the_host() {
        let config =
            crate::Config { public_url: Some("http://127.0.0.1:5555/".into()), ..crate::Config::embedded() };
        let app = App::new(config).unwrap();
        assert_eq!(app.resource_url(), "http://127.0.0.1:5555/mcp");
        let principal =
            Principal { user_id: "usr_owner".into(), client_id: "cli_console".into(), scopes: vec![] };
        let far = i64::MAX / 2;
        app.oauth.plant("at_foreign", principal.clone(), "http://localhost:5555/mcp", far);
        app.oauth.plant("at_canonical", principal, "http://127.0.0.1:5555/mcp", far);
        for host in ["localhost:5555", "127.0.0.1:5555", "evil.example"] {
            let headers = |token: &str| {
                let mut h = HeaderMap::new();
                h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
                h.insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}")).unwrap());
                h
            };
            assert!(authenticate(&app, &headers("at_foreign")).is_none(), "Host {host} made it ours");
            assert!(authenticate(&app, &headers("at_canonical")).is_some(), "Host {host}");
        }
        assert!(crate::app::canonical_base("ftp://x").is_err());
        assert!(crate::app::canonical_base("http://x/?q").is_err());
        assert!(crate::app::canonical_base("https://").is_err());
        assert_eq!(
            crate::app::canonical_base("https://mcp.example.com/base/").unwrap(),
            "https://mcp.example.com/base"
        );
    }

    #[test]
    fn usual_requests_take_the_fast_path() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order","arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#,
            r#" {"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        ] {
            assert!(well_formed(body.as_bytes()), "{body}");
            assert!(full_check(&Bytes::from(body)).is_none(), "{body}");
        }
    }

    #[test]
    fn unusual_requests_go_the_long_way() {
        for body in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
        ] {
            assert!(!well_formed(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn valid_json_is_the_rfc_8259_grammar_not_what_serde_can_hold() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        for json in
            [deep.as_str(), "1e400", r#""\ud800""#, r#"{"a":1,"a":2}"#, "123456789012345678901234567890"]
        {
            assert!(valid_json(json.as_bytes()), "{json}");
        }
        for not_json in ["", "{", "[1,]", r#""\x""#, "\u{feff}{}", "{} x", "NaN", "\"\u{1}\""] {
            assert!(!valid_json(not_json.as_bytes()), "{not_json}");
        }
        assert!(!valid_json(&[b'"', 0xff, b'"']), "not UTF-8");
    }

    proptest! {
        // The fast path may only ever say "fine" where the full check says so too.
        #[test]
        fn fast_path_never_accepts_what_the_full_check_rejects(
            jsonrpc in prop::sample::select(vec![r#""2.0""#, r#""1.0""#, "2", "null", r#""2\u002e0""#]),
            id in prop::sample::select(vec!["", "1", "-3", r#""a""#, "null", "{}", "[1]", "true"]),
            method in prop::sample::select(vec!["", r#""tools/call""#, r#""tools\/call""#, r#""ping""#, "5", "null"]),
            params in prop::sample::select(vec!["", "{}", r#"{"name":"x"}"#, r#"{"name":"x","arguments":null}"#,
                r#"{"name":"x","arguments":[]}"#, r#"{"name":1}"#, "[]", "null", r#"{"name":"x","name":"y"}"#]),
            extra in prop::sample::select(vec!["", r#""result":{}"#, r#""error":null"#, r#""id":2"#]),
        ) {
            let mut members = vec![format!(r#""jsonrpc":{jsonrpc}"#)];
            if !id.is_empty() { members.push(format!(r#""id":{id}"#)); }
            if !method.is_empty() { members.push(format!(r#""method":{method}"#)); }
            if !params.is_empty() { members.push(format!(r#""params":{params}"#)); }
            if !extra.is_empty() { members.push(extra.to_owned()); }
            let body = format!("{{{}}}", members.join(","));
            prop_assert!(agrees(&body), "{}", body);
        }

        #[test]
        fn fast_path_agrees_on_arbitrary_bytes(body in ".{0,64}") {
            prop_assert!(agrees(&body));
        }
    }
}
