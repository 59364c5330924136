//! Streamable HTTP: the axum router around rmcp's service, and the gate in front of `/mcp` that
//! rmcp does not provide: Origin check (PROTO-5), bearer authentication (AUTH-1, AUTH-2), body
//! limit (LIM-7), JSON-RPC shape errors (PROTO-2, checked by `jsonrpc`) and the `x-request-id`
//! header (ENV-2).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::transport::bearer::{authenticate, unauthorized};
use crate::transport::jsonrpc::{cannot_take, check_json_rpc, rpc_error};
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
        && app.defects.origin_checked_for(request.method())
        && !app.defects.trusts_fetch_site(request.headers())
        && !origin_allowed(app, origin)
    {
        return (StatusCode::FORBIDDEN, "Forbidden: Origin not allowed").into_response();
    }
    app.defects.forwarded_host(request.headers_mut());
    if let Some(refusal) = app.defects.other_scheme_refusal(request.headers()) {
        return refusal;
    }
    let principal = match authenticate(app, request.headers()) {
        Some(p) => {
            app.defects.authenticated(&p);
            p
        }
        None => match app.defects.unauthenticated_principal(request.headers()) {
            Some(p) => p,
            None => return unauthorized(app),
        },
    };
    let mut posted = None;
    if request.method() == axum::http::Method::POST {
        let (mut parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, app.defects.body_limit_of(&parts.headers)).await {
            Ok(bytes) => bytes,
            Err(e) => return body_refusal(BodyError::of(&e)),
        };
        let Some(bytes) = app.defects.reserialized_body(bytes) else {
            return body_refusal(BodyError::TooLarge);
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

/// A loopback origin or one of `--allowed-origin`s (compared as origins: scheme, host and port,
/// RFC 6454, so `HTTP://App.example:80` is `http://app.example`).
fn origin_ok(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Some(origin) = parse_origin(origin.as_bytes()) else { return false };
    crate::auth::is_loopback(origin.host())
        || allowed.iter().any(|o| parse_origin(o.as_bytes()).is_some_and(|o| o.origin() == origin.origin()))
}

/// An `Origin` header's value as a URL: http(s), a host, nothing else. `null` (a sandboxed or
/// file page) and anything unreadable are no origin at all.
fn parse_origin(value: &[u8]) -> Option<url::Url> {
    let url = url::Url::parse(std::str::from_utf8(value).ok()?).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.host().is_some()).then_some(url)
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
        && !own_origin(origin, &app.public_url)
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

/// Whether `origin` is the canonical URL's own: what a browser sends for the server's pages.
fn own_origin(origin: &HeaderValue, public_url: &str) -> bool {
    let own = url::Url::parse(public_url).map(|u| u.origin());
    parse_origin(origin.as_bytes()).is_some_and(|o| own.is_ok_and(|own| o.origin() == own))
}

/// RFC 9728 protected resource metadata, from the canonical URL whatever the `Host`.
async fn resource_metadata(State(app): State<Arc<App>>) -> Response {
    let base = &app.public_url;
    // The `metadata-resource-origin` defect names the origin, not the endpoint (RFC 9728 §3.3).
    let resource = if app.defects.metadata_names_origin() { base.clone() } else { app.resource_url() };
    axum::Json(json!({
        "resource": resource,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_loopback_allowed_or_refused() {
        let allowed = vec!["https://app.example.com".to_owned()];
        let ok = |o: &str| origin_ok(&HeaderValue::from_str(o).unwrap(), &allowed);
        for yes in [
            "http://localhost",
            "http://localhost:6274",
            "https://127.0.0.1:8443",
            "http://[::1]:9",
            "HTTP://LocalHost",
            "https://app.example.com",
            "https://APP.example.com:443",
        ] {
            assert!(ok(yes), "{yes}");
        }
        for no in [
            "null",
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost:port",
            "localhost",
            "http://app.example.com",
            "https://app.example.com:8443",
            "file:///etc",
            "chrome-extension://localhost",
        ] {
            assert!(!ok(no), "{no}");
        }
    }

    #[test]
    fn the_server_s_own_origin_is_its_canonical_url_s() {
        let own = |o: &str| own_origin(&HeaderValue::from_str(o).unwrap(), "https://mcp.example.com/base");
        assert!(own("https://mcp.example.com"));
        assert!(own("https://MCP.example.com:443"));
        assert!(!own("http://mcp.example.com"));
        assert!(!own("https://mcp.example.com.evil"));
        assert!(!own("null"));
    }
}
