//! Streamable HTTP: the axum router around rmcp's service, and the gate in front of `/mcp` that
//! rmcp does not provide: Origin check (PROTO-5), bearer authentication (AUTH-1, AUTH-2), body
//! limit (LIM-7), JSON-RPC shape errors (PROTO-2) and the `x-request-id` header (ENV-2).

use std::future::Future;
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
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::auth::{Principal, bearer};
use crate::defects::Defect;
use crate::handler::{Handler, RequestId, new_request_id};

pub fn router(app: Arc<App>, ct: CancellationToken) -> Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_cancellation_token(ct)
        .with_max_request_body_bytes(app.defects.body_limit());
    config = match &app.config.allowed_hosts {
        None => config.disable_allowed_hosts(),
        Some(extra) => {
            let mut hosts: Vec<String> =
                vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "[::1]".into()];
            hosts.extend(extra.iter().cloned());
            config.with_allowed_hosts(hosts)
        }
    };
    let handler_app = app.clone();
    let service = StreamableHttpService::new(
        move || Ok(Handler::http(handler_app.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp = Router::new().nest_service("/mcp", service).layer(from_fn_with_state(app.clone(), gate));
    let mut router = Router::new()
        .route("/.well-known/oauth-protected-resource", get(resource_metadata))
        .route("/.well-known/oauth-protected-resource/mcp", get(resource_metadata))
        .route("/.well-known/chataigne-control", get(control_advert))
        .with_state(app.clone())
        .merge(mcp);
    if app.config.auth_server {
        router = router.merge(crate::oauth::router(app.clone()));
    }
    if app.config.control_secret.is_some() {
        router = router.nest("/control", crate::control::router(app));
    }
    router
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let router = router(app, ct.child_token());
    // rmcp's token is cancelled only once axum has drained the calls in flight: cancelling it
    // at the signal would answer them with 500.
    let served = axum::serve(listener, router).with_graceful_shutdown(shutdown).await;
    ct.cancel();
    served?;
    Ok(())
}

/// The gate in front of rmcp. Every answer, refused or served, carries `x-request-id`.
async fn gate(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let request_id = new_request_id();
    let mut response = admit(&app, request, next, &request_id).await;
    if !app.defects.has(Defect::NoRequestIdHeader)
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
        None => return unauthorized(app, request.headers()),
    };
    if request.method() == axum::http::Method::POST {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, app.defects.body_limit()).await {
            Ok(bytes) => bytes,
            Err(_) => {
                return (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large: the limit is 1 MiB")
                    .into_response();
            }
        };
        if let Some(refusal) = check_json_rpc(&bytes) {
            return refusal;
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    request.extensions_mut().insert(principal);
    request.extensions_mut().insert(RequestId(request_id.to_owned()));
    next.run(request).await
}

fn origin_allowed(app: &App, origin: &HeaderValue) -> bool {
    if app.defects.has(Defect::OriginUnchecked) {
        return true;
    }
    let Ok(origin) = origin.to_str() else { return false };
    let host = origin.split_once("://").map_or("", |(_, rest)| rest);
    let host = host
        .rsplit_once(':')
        .map_or(host, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { host });
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
        || app.config.allowed_origins.iter().any(|o| o == origin)
}

fn authenticate(app: &App, headers: &HeaderMap) -> Option<Principal> {
    let token = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
    let issued = |t: &str| app.oauth.check(t, &resource_url(app, headers), app.clock.now_ms());
    match token.and_then(|t| app.tokens.check(t).or_else(|| issued(t))) {
        Some(p) => Some(p),
        None if app.defects.has(Defect::NoAuthentication) && token.is_none() => {
            app.tokens.check(&format!("{}owner", crate::DEV_TOKEN_PREFIX))
        }
        None => None,
    }
}

pub fn base_url(app: &App, headers: &HeaderMap) -> String {
    if let Some(url) = &app.config.public_url {
        return url.trim_end_matches('/').to_owned();
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    format!("http://{host}")
}

/// This server's resource identifier (RFC 8707): tokens must be minted for it.
pub fn resource_url(app: &App, headers: &HeaderMap) -> String {
    format!("{}/mcp", base_url(app, headers))
}

/// 401 with the resource metadata URL (AUTH-1, RFC 9728 §5.1). The token is never echoed.
fn unauthorized(app: &App, headers: &HeaderMap) -> Response {
    let challenge = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\"",
        base_url(app, headers)
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

/// RFC 9728 protected resource metadata.
async fn resource_metadata(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let base = base_url(&app, &headers);
    axum::Json(json!({
        "resource": format!("{base}/mcp"),
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
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
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
