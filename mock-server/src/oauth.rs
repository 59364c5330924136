//! A development OAuth 2.1 authorization server (on unless `--no-auth-server`), so real MCP
//! clients (MCP Inspector, the TypeScript SDK) can connect with a real flow: RFC 8414 metadata,
//! RFC 7591 dynamic registration, authorization code + PKCE S256 with a consent page that lets
//! the developer pick a dataset persona, token and refresh grants. Tokens are bound to this
//! server's resource (RFC 8707); static development tokens stay available for scripts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::app::App;
use crate::auth::Principal;
use crate::expiry::Swept;

/// Access tokens live an hour; refresh tokens until the server stops.
const ACCESS_TTL_MS: i64 = 3_600_000;
/// An unused authorization code expires after ten minutes (RFC 6749 §4.1.2's maximum).
const CODE_TTL_MS: i64 = 600_000;

#[derive(Debug, Clone)]
struct Registered {
    redirect_uris: Vec<String>,
}

#[derive(Debug, Clone)]
struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    principal: Principal,
    audience: String,
}

#[derive(Debug, Clone)]
pub struct Issued {
    pub principal: Principal,
    pub audience: String,
    pub expires_ms: i64,
}

#[derive(Debug)]
struct PendingCode {
    grant: Grant,
    expires_ms: i64,
}

/// The authorization server's state. Codes and access tokens expire and are swept as new ones
/// arrive; registered clients and refresh tokens live until the server stops (development use).
#[derive(Debug, Default)]
pub struct OAuth {
    clients: Mutex<HashMap<String, Registered>>,
    codes: Mutex<Swept<String, PendingCode>>,
    refresh: Mutex<HashMap<String, Grant>>,
    access: Mutex<Swept<String, Issued>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn random_token(prefix: &str) -> String {
    use rand::Rng;
    use rand::distr::Alphanumeric;
    let tail: String = rand::rng().sample_iter(&Alphanumeric).take(40).map(char::from).collect();
    format!("{prefix}{tail}")
}

impl OAuth {
    /// The principal of an issued access token, if it is live and for `audience`.
    pub fn check(&self, token: &str, audience: &str, now_ms: i64) -> Option<Principal> {
        let access = lock(&self.access);
        let issued = access.map.get(token)?;
        (issued.expires_ms > now_ms && issued.audience == audience).then(|| issued.principal.clone())
    }

    fn issue(&self, grant: &Grant, now_ms: i64) -> serde_json::Value {
        let access_token = random_token("at_");
        let refresh_token = random_token("rt_");
        let mut access = lock(&self.access);
        access.sweep_if_grown(|issued| issued.expires_ms > now_ms);
        access.map.insert(
            access_token.clone(),
            Issued {
                principal: grant.principal.clone(),
                audience: grant.audience.clone(),
                expires_ms: now_ms + ACCESS_TTL_MS,
            },
        );
        drop(access);
        lock(&self.refresh).insert(refresh_token.clone(), grant.clone());
        json!({
            "access_token": access_token, "token_type": "Bearer", "expires_in": ACCESS_TTL_MS / 1000,
            "refresh_token": refresh_token, "scope": grant.principal.scopes.join(" "),
        })
    }

    /// A new authorization code for `grant`.
    fn park_code(&self, grant: Grant, now_ms: i64) -> String {
        let code = random_token("code_");
        let mut codes = lock(&self.codes);
        codes.sweep_if_grown(|pending| pending.expires_ms > now_ms);
        codes.map.insert(code.clone(), PendingCode { grant, expires_ms: now_ms + CODE_TTL_MS });
        code
    }

    /// The grant of a live code. A code is used once, whatever happens next.
    fn take_code(&self, code: &str, now_ms: i64) -> Option<Grant> {
        let pending = lock(&self.codes).map.remove(code)?;
        (pending.expires_ms > now_ms).then_some(pending.grant)
    }
}

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/oauth/register", post(register))
        .route("/oauth/authorize", get(consent).post(approve))
        .route("/oauth/token", post(token))
        .with_state(app)
}

async fn metadata(State(app): State<Arc<App>>, headers: HeaderMap) -> Json<serde_json::Value> {
    let base = crate::http::base_url(&app, &headers);
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/oauth/authorize"),
        "token_endpoint": format!("{base}/oauth/token"),
        "registration_endpoint": format!("{base}/oauth/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": chataigne_contract::tools::SCOPES,
    }))
}

#[derive(Deserialize)]
struct Registration {
    #[serde(default)]
    redirect_uris: Vec<String>,
    #[serde(default)]
    client_name: Option<String>,
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (status, Json(json!({ "error": error, "error_description": description }))).into_response()
}

async fn register(State(app): State<Arc<App>>, Json(reg): Json<Registration>) -> Response {
    if reg.redirect_uris.is_empty() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri", "redirect_uris is required");
    }
    let client_id = random_token("cli_dyn").chars().take(28).collect::<String>();
    lock(&app.oauth.clients)
        .insert(client_id.clone(), Registered { redirect_uris: reg.redirect_uris.clone() });
    (
        StatusCode::CREATED,
        Json(json!({
            "client_id": client_id, "client_name": reg.client_name, "redirect_uris": reg.redirect_uris,
            "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        })),
    )
        .into_response()
}

#[derive(Deserialize, Clone)]
struct AuthorizeParams {
    response_type: String,
    client_id: String,
    redirect_uri: String,
    code_challenge: String,
    code_challenge_method: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    resource: Option<String>,
    /// Set by the consent page.
    #[serde(default)]
    persona: Option<String>,
}

/// `Err((error, description))` per RFC 6749 §4.1.2.1.
fn check_params(app: &App, p: &AuthorizeParams) -> Result<(), (&'static str, &'static str)> {
    let clients = lock(&app.oauth.clients);
    let Some(client) = clients.get(&p.client_id) else {
        return Err(("invalid_client", "unknown client_id"));
    };
    if !client.redirect_uris.contains(&p.redirect_uri) {
        return Err(("invalid_request", "redirect_uri not registered"));
    }
    if p.response_type != "code" || p.code_challenge_method != "S256" || p.code_challenge.len() < 43 {
        return Err(("invalid_request", "code flow with PKCE S256 required"));
    }
    Ok(())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The consent page: pick which dataset persona the client acts as.
async fn consent(State(app): State<Arc<App>>, Query(p): Query<AuthorizeParams>) -> Response {
    if let Err((error, description)) = check_params(&app, &p) {
        return oauth_error(StatusCode::BAD_REQUEST, error, description);
    }
    let hidden: String = [
        ("response_type", Some(p.response_type.clone())),
        ("client_id", Some(p.client_id.clone())),
        ("redirect_uri", Some(p.redirect_uri.clone())),
        ("code_challenge", Some(p.code_challenge.clone())),
        ("code_challenge_method", Some(p.code_challenge_method.clone())),
        ("state", p.state.clone()),
        ("scope", p.scope.clone()),
        ("resource", p.resource.clone()),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!(r#"<input type="hidden" name="{k}" value="{}">"#, escape(&v))))
    .collect();
    let buttons: String = app
        .config
        .dataset
        .personas
        .iter()
        .filter(|p| p.audience.is_none())
        .map(|p| {
            format!(
                r#"<p><button name="persona" value="{0}">{0}</button> {1}</p>"#,
                escape(&p.persona),
                escape(&p.description)
            )
        })
        .collect();
    Html(format!(
        "<!doctype html><title>Chataigne development sign-in</title><h1>Act as which persona?</h1>\
         <p>Development authorization server of the Chataigne reference MCP server.</p>\
         <form method=\"post\" action=\"/oauth/authorize\">{hidden}{buttons}</form>"
    ))
    .into_response()
}

async fn approve(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(p): Form<AuthorizeParams>,
) -> Response {
    if let Err((error, description)) = check_params(&app, &p) {
        return oauth_error(StatusCode::BAD_REQUEST, error, description);
    }
    let persona = p
        .persona
        .as_deref()
        .and_then(|name| app.config.dataset.persona(name))
        .filter(|p| p.audience.is_none());
    let Some(persona) = persona else {
        return oauth_error(StatusCode::BAD_REQUEST, "access_denied", "pick a persona");
    };
    let requested: Option<Vec<&str>> = p.scope.as_deref().map(|s| s.split_whitespace().collect());
    let scopes = persona
        .scopes
        .iter()
        .filter(|s| requested.as_ref().is_none_or(|r| r.contains(&s.as_str())))
        .cloned()
        .collect();
    let resource = crate::http::resource_url(&app, &headers);
    let grant = Grant {
        client_id: p.client_id.clone(),
        redirect_uri: p.redirect_uri.clone(),
        challenge: p.code_challenge.clone(),
        principal: Principal { user_id: persona.user_id.clone(), client_id: p.client_id.clone(), scopes },
        // RFC 8707: a token asked for another resource is minted for it, and refused here.
        audience: p.resource.clone().unwrap_or(resource),
    };
    let code = app.oauth.park_code(grant, app.clock.now_ms());
    let sep = if p.redirect_uri.contains('?') { '&' } else { '?' };
    let state = p.state.map(|s| format!("&state={}", urlencode(&s))).unwrap_or_default();
    Redirect::to(&format!("{}{sep}code={code}{state}", p.redirect_uri)).into_response()
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[derive(Deserialize)]
struct TokenRequest {
    grant_type: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    redirect_uri: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    code_verifier: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
}

async fn token(State(app): State<Arc<App>>, Form(req): Form<TokenRequest>) -> Response {
    let now = app.clock.now_ms();
    let grant = match req.grant_type.as_str() {
        "authorization_code" => {
            let grant = req.code.as_deref().and_then(|c| app.oauth.take_code(c, now));
            let Some(grant) = grant else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown, used or expired code",
                );
            };
            let verifier_ok = req
                .code_verifier
                .as_deref()
                .is_some_and(|v| URL_SAFE_NO_PAD.encode(Sha256::digest(v.as_bytes())) == grant.challenge);
            if !verifier_ok
                || req.client_id.as_deref() != Some(grant.client_id.as_str())
                || req.redirect_uri.as_deref() != Some(grant.redirect_uri.as_str())
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "PKCE, client or redirect mismatch",
                );
            }
            grant
        }
        "refresh_token" => {
            let grant = req.refresh_token.as_deref().and_then(|t| lock(&app.oauth.refresh).remove(t));
            match grant {
                Some(grant) => grant,
                None => {
                    return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown refresh token");
                }
            }
        }
        _ => return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "code or refresh_token"),
    };
    let body = app.oauth.issue(&grant, now);
    ([(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant() -> Grant {
        Grant {
            client_id: "cli_test".into(),
            redirect_uri: "http://127.0.0.1/cb".into(),
            challenge: "c".into(),
            principal: Principal { user_id: "usr_a".into(), client_id: "cli_test".into(), scopes: vec![] },
            audience: "http://127.0.0.1/mcp".into(),
        }
    }

    #[test]
    fn expired_access_tokens_go_as_new_ones_are_issued() {
        let oauth = OAuth::default();
        let later = 2 * ACCESS_TTL_MS;
        for _ in 0..3000 {
            oauth.issue(&grant(), 0);
        }
        let mut last = serde_json::Value::Null;
        for _ in 0..3000 {
            last = oauth.issue(&grant(), later);
        }
        let len = lock(&oauth.access).map.len();
        assert!(len < 6000, "tokens of two hours ago went, {len} left");
        let token = last["access_token"].as_str().unwrap();
        assert!(oauth.check(token, "http://127.0.0.1/mcp", later + 1).is_some());
        assert!(oauth.check(token, "http://127.0.0.1/mcp", later + ACCESS_TTL_MS).is_none());
    }

    #[test]
    fn a_code_is_good_once_and_only_for_ten_minutes() {
        let oauth = OAuth::default();
        let code = oauth.park_code(grant(), 0);
        assert!(oauth.take_code(&code, CODE_TTL_MS - 1).is_some());
        assert!(oauth.take_code(&code, CODE_TTL_MS - 1).is_none(), "used twice");
        let stale = oauth.park_code(grant(), 0);
        assert!(oauth.take_code(&stale, CODE_TTL_MS).is_none(), "expired");
        for _ in 0..3000 {
            oauth.park_code(grant(), 0);
        }
        for _ in 0..3000 {
            oauth.park_code(grant(), CODE_TTL_MS);
        }
        let len = lock(&oauth.codes).map.len();
        assert!(len < 6000, "unused codes of ten minutes ago went, {len} left");
    }
}
