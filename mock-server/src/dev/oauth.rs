//! A development OAuth 2.1 authorization server (on unless `--no-auth-server`), so real MCP
//! clients (MCP Inspector, the TypeScript SDK) can connect with a real flow: RFC 8414 metadata,
//! RFC 7591 dynamic registration, authorization code + PKCE S256 with a consent page that lets
//! the developer pick a dataset persona, token and refresh grants. Tokens are bound to this
//! server's canonical resource (RFC 8707, `--public-url`); static development tokens stay
//! available for scripts.
//!
//! Nothing here needs a login, so every endpoint is bounded against a hostile peer (or a web
//! page): registration bodies and fields are capped (RFC 7591 §3.2.2 errors), registrations are
//! limited per peer address, registered clients are capped with unused ones expiring, and each
//! client holds a bounded number of codes and tokens (docs/RELIABILITY.md, docs/DECISIONS.md).
//! Refresh tokens follow RFC 9700 §4.14: bound to their client, rotated on every use, a whole
//! family revoked when a rotated one comes back, and they expire.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::extract::{ConnectInfo, DefaultBodyLimit, Form, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_contract::dataset::Persona;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::auth::{Issuer, Principal};
use crate::state::clock::Clock;
use crate::state::expiry::Swept;
use crate::transport::serve::BodyError;

/// Access tokens live an hour.
const ACCESS_TTL_MS: i64 = 3_600_000;
/// A refresh token lives 30 days of the server's clock from its issue (each rotation starts a
/// new one): long enough for a developer's week, not for ever.
pub const REFRESH_TTL_MS: i64 = 30 * 24 * 3_600_000;
/// An unused authorization code expires after ten minutes (RFC 6749 §4.1.2's maximum).
const CODE_TTL_MS: i64 = 600_000;

/// A registration request's body at most (RFC 7591): 413 beyond.
pub const MAX_REGISTRATION_BYTES: usize = 16 * 1024;
/// Redirect URIs per client at most, and bytes per URI.
pub const MAX_REDIRECT_URIS: usize = 8;
pub const MAX_REDIRECT_URI_BYTES: usize = 2048;
/// `client_name` characters at most.
pub const MAX_CLIENT_NAME_CHARS: usize = 200;
/// Codes, access tokens and refresh tokens each client holds at most: issuing one more drops
/// its oldest of the kind (a refresh chain keeps only its newest token alive anyway).
pub const TOKENS_PER_CLIENT: usize = 8;
/// The body of any other authorization server request (consent form, token request) at most.
const MAX_FORM_BYTES: usize = 16 * 1024;
const MINUTE_MS: i64 = 60_000;

/// How much the authorization server keeps for unauthenticated peers (`Config::oauth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OAuthLimits {
    /// Registered clients kept at most; a registration past it evicts the oldest client never
    /// used for a token, or, if every client has been used, the least recently used one.
    pub max_clients: usize,
    /// A client never used for a token is forgotten this long after its registration.
    pub unused_client_ttl_ms: i64,
    /// Registrations per minute per peer address (IPv6: per /64); 429 beyond.
    pub registrations_per_minute: u32,
}

impl Default for OAuthLimits {
    fn default() -> Self {
        OAuthLimits { max_clients: 1000, unused_client_ttl_ms: 24 * 3_600_000, registrations_per_minute: 20 }
    }
}

#[derive(Debug)]
struct Registered {
    redirect_uris: Vec<String>,
    /// Registration order, for eviction.
    seq: u64,
    registered_ms: i64,
    /// When a token was last issued for it; `None`: never, so it expires.
    used_ms: Option<i64>,
    /// Its newest codes, access tokens and refresh token families, oldest first (some may be
    /// gone already).
    codes: VecDeque<String>,
    access: VecDeque<String>,
    refresh: VecDeque<String>,
}

impl Registered {
    fn live(&self, limits: &OAuthLimits, now_ms: i64) -> bool {
        self.used_ms.is_some() || now_ms - self.registered_ms < limits.unused_client_ttl_ms
    }

    /// Eviction order: unused before used; then oldest registration, or least recent use.
    fn eviction_rank(&self) -> (bool, i64, u64) {
        (self.used_ms.is_some(), self.used_ms.unwrap_or(0), self.seq)
    }
}

#[derive(Debug, Default)]
struct Clients {
    map: HashMap<String, Registered>,
    next_seq: u64,
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
    /// The refresh token family it was issued with, revoked with it.
    family: String,
}

/// One authorization's chain of refresh tokens (RFC 9700 §4.14.2): only the newest is good.
/// A token is `rt_<family>.<secret>`; presenting the family with another secret is a rotated
/// token coming back (or a forged one), and revokes the family.
#[derive(Debug)]
struct Family {
    grant: Grant,
    current: String,
    expires_ms: i64,
}

#[derive(Debug)]
struct PendingCode {
    grant: Grant,
    expires_ms: i64,
}

/// The authorization server's state. Codes and access tokens expire and are swept as new ones
/// arrive; clients are capped and expire unless used; each client's codes and tokens are capped
/// (newest kept). Locks are taken in field order: clients, codes, refresh, access.
#[derive(Debug, Default)]
pub struct OAuth {
    limits: OAuthLimits,
    clients: Mutex<Clients>,
    codes: Mutex<Swept<String, PendingCode>>,
    /// Refresh token families by their id.
    refresh: Mutex<HashMap<String, Family>>,
    access: Mutex<Swept<String, Issued>>,
    /// Registration windows per peer: (start, count).
    registrations: Mutex<Swept<IpAddr, (i64, u32)>>,
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

/// Adds `id` to a client's list of one kind; past the cap the oldest goes from `map` too.
fn keep_newest<V>(ids: &mut VecDeque<String>, id: String, map: &mut HashMap<String, V>) {
    ids.push_back(id);
    while ids.len() > TOKENS_PER_CLIENT {
        if let Some(old) = ids.pop_front() {
            map.remove(&old);
        }
    }
}

/// The key a peer's registrations are counted under: its address, an IPv6 one by its /64 (one
/// host usually holds a whole /64).
fn peer_key(peer: Option<SocketAddr>) -> IpAddr {
    match peer.map(|p| p.ip()) {
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
        Some(v4) => v4,
        None => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
    }
}

impl OAuth {
    pub fn new(limits: OAuthLimits) -> OAuth {
        OAuth { limits, ..OAuth::default() }
    }

    /// Forgets the registration windows (control API reset; the clock may go back).
    pub fn clear_windows(&self) {
        lock(&self.registrations).clear();
    }

    /// Counts a registration attempt of `peer`: `Err(retry_after_ms)` past the limit.
    fn admit_registration(&self, peer: IpAddr, now_ms: i64) -> Result<(), i64> {
        let mut windows = lock(&self.registrations);
        let open = |start: i64| (0..MINUTE_MS).contains(&(now_ms - start));
        windows.sweep_if_grown(|(start, _)| open(*start));
        let (start, count) = windows.map.entry(peer).or_insert((now_ms, 0));
        if !open(*start) {
            (*start, *count) = (now_ms, 0);
        }
        if *count >= self.limits.registrations_per_minute {
            return Err((*start + MINUTE_MS - now_ms).max(1));
        }
        *count += 1;
        Ok(())
    }

    /// Registers a client; past the cap, expired clients go first, then one by eviction order.
    fn register_client(&self, redirect_uris: Vec<String>, now_ms: i64) -> String {
        let mut clients = lock(&self.clients);
        if clients.map.len() >= self.limits.max_clients {
            let expired: Vec<String> = clients
                .map
                .iter()
                .filter(|(_, c)| !c.live(&self.limits, now_ms))
                .map(|(id, _)| id.clone())
                .collect();
            for id in expired {
                if let Some(gone) = clients.map.remove(&id) {
                    self.forget_tokens(&gone);
                }
            }
        }
        while clients.map.len() >= self.limits.max_clients.max(1) {
            let Some(oldest) =
                clients.map.iter().min_by_key(|(_, c)| c.eviction_rank()).map(|(id, _)| id.clone())
            else {
                break;
            };
            if let Some(gone) = clients.map.remove(&oldest) {
                self.forget_tokens(&gone);
            }
        }
        let client_id = random_token("cli_dyn").chars().take(28).collect::<String>();
        let seq = clients.next_seq;
        clients.next_seq += 1;
        let registered = Registered {
            redirect_uris,
            seq,
            registered_ms: now_ms,
            used_ms: None,
            codes: VecDeque::new(),
            access: VecDeque::new(),
            refresh: VecDeque::new(),
        };
        clients.map.insert(client_id.clone(), registered);
        client_id
    }

    /// Drops what was issued to a client that is gone. Called with `clients` locked.
    fn forget_tokens(&self, gone: &Registered) {
        let mut codes = lock(&self.codes);
        for id in &gone.codes {
            codes.map.remove(id);
        }
        drop(codes);
        let mut refresh = lock(&self.refresh);
        for id in &gone.refresh {
            refresh.remove(id);
        }
        drop(refresh);
        let mut access = lock(&self.access);
        for id in &gone.access {
            access.map.remove(id);
        }
    }

    /// Whether `client_id` is a live client with `redirect_uri` registered.
    fn check_client(&self, client_id: &str, redirect_uri: &str, now_ms: i64) -> Result<(), Refusal> {
        let clients = lock(&self.clients);
        let Some(client) = clients.map.get(client_id).filter(|c| c.live(&self.limits, now_ms)) else {
            return Err(Refusal::Direct("invalid_client", "unknown client_id"));
        };
        if !client.redirect_uris.iter().any(|u| u == redirect_uri) {
            return Err(Refusal::Direct("invalid_request", "redirect_uri not registered"));
        }
        Ok(())
    }

    /// Plants an access token as if issued for `audience` (tests of the resource server).
    #[cfg(test)]
    pub(crate) fn plant(&self, token: &str, principal: Principal, audience: &str, expires_ms: i64) {
        let issued = Issued { principal, audience: audience.to_owned(), expires_ms, family: String::new() };
        lock(&self.access).map.insert(token.to_owned(), issued);
    }

    /// Tokens for a code's `grant`, starting a refresh token family; `None` if its client is gone
    /// (evicted or expired). Marks the client used.
    fn issue(&self, grant: &Grant, now_ms: i64) -> Option<serde_json::Value> {
        let mut clients = lock(&self.clients);
        let client = clients.map.get_mut(&grant.client_id).filter(|c| c.live(&self.limits, now_ms))?;
        client.used_ms = Some(now_ms);
        let family = random_token("").chars().take(24).collect::<String>();
        let current = random_token("");
        let refresh_token = format!("rt_{family}.{current}");
        let mut refresh = lock(&self.refresh);
        refresh.insert(
            family.clone(),
            Family { grant: grant.clone(), current, expires_ms: now_ms + REFRESH_TTL_MS },
        );
        keep_newest(&mut client.refresh, family.clone(), &mut refresh);
        drop(refresh);
        let access_token = self.issue_access(client, grant, family, now_ms);
        Some(token_response(grant, access_token, refresh_token))
    }

    /// An access token of `family` for `grant`, kept among the client's newest. Called with
    /// `clients` locked (and `refresh` maybe: `access` comes after both).
    fn issue_access(&self, client: &mut Registered, grant: &Grant, family: String, now_ms: i64) -> String {
        let access_token = random_token("at_");
        let mut access = lock(&self.access);
        access.sweep_if_grown(|issued| issued.expires_ms > now_ms);
        let issued = Issued {
            principal: grant.principal.clone(),
            audience: grant.audience.clone(),
            expires_ms: now_ms + ACCESS_TTL_MS,
            family,
        };
        access.map.insert(access_token.clone(), issued);
        keep_newest(&mut client.access, access_token.clone(), &mut access.map);
        access_token
    }

    /// The refresh grant (RFC 6749 §6, RFC 9700 §4.14.2): `token` must be its family's newest
    /// and `client_id` the client it was issued to; then it is rotated. A rotated token coming
    /// back revokes the family, access tokens included: the server cannot tell which of the two
    /// holders is the thief. A token of another client is refused without spending it.
    fn refresh(&self, token: &str, client_id: &str, now_ms: i64) -> Result<serde_json::Value, &'static str> {
        let unknown = "unknown, revoked or expired refresh token";
        let (family_id, secret) = token.strip_prefix("rt_").and_then(|t| t.split_once('.')).ok_or(unknown)?;
        let mut clients = lock(&self.clients);
        let mut refresh = lock(&self.refresh);
        let family = refresh.get(family_id).ok_or(unknown)?;
        if family.grant.client_id != client_id {
            return Err("the refresh token was issued to another client");
        }
        let newest: bool = family.current.as_bytes().ct_eq(secret.as_bytes()).into();
        let expired = family.expires_ms <= now_ms;
        let client = clients.map.get_mut(client_id).filter(|c| c.live(&self.limits, now_ms));
        let (Some(client), true, false) = (client, newest, expired) else {
            refresh.remove(family_id);
            if let Some(client) = clients.map.get_mut(client_id) {
                let mut access = lock(&self.access);
                client.access.retain(|id| match access.map.get(id) {
                    Some(issued) if issued.family == family_id => {
                        access.map.remove(id);
                        false
                    }
                    _ => true,
                });
            }
            return Err(if !newest {
                "a rotated refresh token was used again: its whole family is revoked"
            } else {
                unknown
            });
        };
        client.used_ms = Some(now_ms);
        let family = refresh.get_mut(family_id).ok_or(unknown)?;
        family.current = random_token("");
        family.expires_ms = now_ms + REFRESH_TTL_MS;
        let refresh_token = format!("rt_{family_id}.{}", family.current);
        let grant = family.grant.clone();
        let access_token = self.issue_access(client, &grant, family_id.to_owned(), now_ms);
        Ok(token_response(&grant, access_token, refresh_token))
    }

    /// A new authorization code for `grant`; `None` if its client is gone.
    fn park_code(&self, grant: Grant, now_ms: i64) -> Option<String> {
        let mut clients = lock(&self.clients);
        let client = clients.map.get_mut(&grant.client_id).filter(|c| c.live(&self.limits, now_ms))?;
        let code = random_token("code_");
        let mut codes = lock(&self.codes);
        codes.sweep_if_grown(|pending| pending.expires_ms > now_ms);
        codes.map.insert(code.clone(), PendingCode { grant, expires_ms: now_ms + CODE_TTL_MS });
        keep_newest(&mut client.codes, code.clone(), &mut codes.map);
        Some(code)
    }

    /// The grant of a live code. A code is used once, whatever happens next.
    fn take_code(&self, code: &str, now_ms: i64) -> Option<Grant> {
        let pending = lock(&self.codes).map.remove(code)?;
        (pending.expires_ms > now_ms).then_some(pending.grant)
    }
}

impl Issuer for OAuth {
    /// The principal of an issued access token, if it is live and for `audience`.
    fn check(&self, token: &str, audience: &str, now_ms: i64) -> Option<Principal> {
        let access = lock(&self.access);
        let issued = access.map.get(token)?;
        (issued.expires_ms > now_ms && issued.audience == audience).then(|| issued.principal.clone())
    }
}

fn token_response(grant: &Grant, access_token: String, refresh_token: String) -> serde_json::Value {
    json!({
        "access_token": access_token, "token_type": "Bearer", "expires_in": ACCESS_TTL_MS / 1000,
        "refresh_token": refresh_token, "scope": grant.principal.scopes.join(" "),
    })
}

/// What the authorization server's routes read: its own state, the server's clock, the
/// canonical base URL and the personas a developer may act as. `crate::router` builds it from
/// the server's parts, so nothing here reads `App`.
#[derive(Debug, Clone)]
pub struct AuthServer {
    pub oauth: Arc<OAuth>,
    pub clock: Arc<Clock>,
    /// The canonical base URL (no trailing `/`), as `App::public_url`.
    pub public_url: String,
    pub personas: Vec<Persona>,
}

impl AuthServer {
    /// The resource server's identifier (RFC 8707), as `App::resource_url`.
    fn resource_url(&self) -> String {
        format!("{}/mcp", self.public_url)
    }

    fn persona(&self, name: &str) -> Option<&Persona> {
        self.personas.iter().find(|p| p.persona == name)
    }
}

pub fn router(server: AuthServer) -> Router {
    Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/oauth/register", post(register))
        .route("/oauth/authorize", get(consent).post(approve))
        .route("/oauth/token", post(token))
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .with_state(Arc::new(server))
}

/// RFC 8414 metadata, from the canonical URL whatever the `Host`.
async fn metadata(State(server): State<Arc<AuthServer>>) -> Json<serde_json::Value> {
    let base = &server.public_url;
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

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (status, Json(json!({ "error": error, "error_description": description }))).into_response()
}

/// The metadata kept of a registration: what the flow needs, within the field caps.
struct Registration {
    redirect_uris: Vec<String>,
    client_name: Option<String>,
}

/// A redirect URI a client may register (OAuth 2.1 §2.3.1, RFC 8252): `https` on any host;
/// `http` on a loopback host only (a native app's local listener: anywhere else the code would
/// travel in clear); or a private-use scheme in reverse-domain form (`com.example.app:/cb`,
/// RFC 8252 §7.1), which no browser handles itself — so never `javascript:`, `data:`, `file:`
/// and the like. Absolute, no fragment, no user info, no blanks or controls (a CRLF would end
/// up in a `Location` header).
fn redirect_uri_ok(uri: &str) -> bool {
    if uri.contains('#') || uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Ok(url) = url::Url::parse(uri) else { return false };
    // The URL standard reads `https:///cb` as host `cb` and `http:` as a URL: the raw text must
    // name its authority itself.
    let authority = || uri.split_once("://").is_some_and(|(_, rest)| !rest.starts_with('/'));
    let plain = url.username().is_empty() && url.password().is_none();
    match url.scheme() {
        "https" => plain && authority() && url.host().is_some(),
        "http" => plain && authority() && crate::auth::is_loopback(url.host()),
        // Reverse-domain form, with something after the colon.
        private => private.contains('.') && uri.len() > private.len() + 1,
    }
}

/// RFC 7591 §2 metadata within the caps; `Err((error, description))` per §3.2.2. Other fields
/// are accepted and neither kept nor echoed.
fn parse_registration(body: &[u8]) -> Result<Registration, (&'static str, &'static str)> {
    let metadata = "invalid_client_metadata";
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| (metadata, "the body is not a JSON object"))?;
    let object = value.as_object().ok_or((metadata, "the body is not a JSON object"))?;
    let uris = object.get("redirect_uris").and_then(|v| v.as_array());
    let uris = uris.filter(|u| !u.is_empty()).ok_or(("invalid_redirect_uri", "redirect_uris is required"))?;
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(("invalid_redirect_uri", "at most 8 redirect_uris"));
    }
    let redirect_uris = uris
        .iter()
        .map(|u| match u.as_str() {
            Some(u) if u.len() > MAX_REDIRECT_URI_BYTES => {
                Err(("invalid_redirect_uri", "a redirect_uri over 2048 bytes"))
            }
            Some(u) if redirect_uri_ok(u) => Ok(u.to_owned()),
            _ => Err((
                "invalid_redirect_uri",
                "a redirect_uri must be https, http on a loopback host, or a reverse-domain private-use scheme, without fragment",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let client_name = match object.get("client_name") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(name)) if name.chars().count() <= MAX_CLIENT_NAME_CHARS => {
            Some(name.clone())
        }
        Some(serde_json::Value::String(_)) => return Err((metadata, "client_name over 200 characters")),
        Some(_) => return Err((metadata, "client_name is not a string")),
    };
    Ok(Registration { redirect_uris, client_name })
}

/// RFC 7591 registration. In order (a foreign `Origin` or `Host` was refused before, as on every
/// route: `transport::http::rebinding_guard`): the peer's rate (429); a JSON content type (a page
/// cannot send one without a preflight we never grant); the body cap (413); the metadata caps
/// (400).
async fn register(State(server): State<Arc<AuthServer>>, request: Request) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    let now = server.clock.now_ms();
    if let Err(retry_ms) = server.oauth.admit_registration(peer_key(peer), now) {
        let mut response = oauth_error(
            StatusCode::TOO_MANY_REQUESTS,
            "temporarily_unavailable",
            "too many registrations from this address; retry later",
        );
        let seconds = (retry_ms + 999) / 1000;
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return oauth_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_client_metadata",
            "Content-Type must be application/json",
        );
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_REGISTRATION_BYTES).await {
        Ok(body) => body,
        Err(e) => {
            let (status, description) = match BodyError::of(&e) {
                BodyError::TooLarge => {
                    (StatusCode::PAYLOAD_TOO_LARGE, "the registration request is over 16 KiB")
                }
                BodyError::TimedOut => {
                    (StatusCode::REQUEST_TIMEOUT, "the registration request did not arrive in time")
                }
                BodyError::CutShort => (StatusCode::BAD_REQUEST, "the registration request was cut short"),
            };
            return oauth_error(status, "invalid_client_metadata", description);
        }
    };
    let reg = match parse_registration(&body) {
        Ok(reg) => reg,
        Err((error, description)) => return oauth_error(StatusCode::BAD_REQUEST, error, description),
    };
    let client_id = server.oauth.register_client(reg.redirect_uris.clone(), now);
    (
        StatusCode::CREATED,
        Json(json!({
            "client_id": client_id, "client_id_issued_at": now.div_euclid(1000),
            "client_name": reg.client_name, "redirect_uris": reg.redirect_uris,
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

/// Why an authorization request is refused (RFC 6749 §4.1.2.1).
enum Refusal {
    /// Client or redirect URI unknown: told to the user, never redirected.
    Direct(&'static str, &'static str),
    /// Anything else once they are known: back to the client's redirect URI.
    Redirect(&'static str, &'static str),
}

/// An S256 challenge: 43 characters of base64url (a SHA-256 digest), nothing longer to keep.
fn challenge_ok(challenge: &str) -> bool {
    challenge.len() == 43 && challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn check_params(server: &AuthServer, p: &AuthorizeParams) -> Result<(), Refusal> {
    server.oauth.check_client(&p.client_id, &p.redirect_uri, server.clock.now_ms())?;
    if p.response_type != "code" || p.code_challenge_method != "S256" || !challenge_ok(&p.code_challenge) {
        return Err(Refusal::Direct("invalid_request", "code flow with PKCE S256 required"));
    }
    // RFC 8707 §2: this server mints tokens for its own canonical resource only.
    if p.resource.as_deref().is_some_and(|r| r != server.resource_url()) {
        return Err(Refusal::Redirect("invalid_target", "resource is not this server's canonical resource"));
    }
    Ok(())
}

fn refuse(p: &AuthorizeParams, refusal: Refusal) -> Response {
    match refusal {
        Refusal::Direct(error, description) => oauth_error(StatusCode::BAD_REQUEST, error, description),
        Refusal::Redirect(error, description) => {
            let sep = if p.redirect_uri.contains('?') { '&' } else { '?' };
            let state = p.state.as_deref().map(|s| format!("&state={}", urlencode(s))).unwrap_or_default();
            let to = format!(
                "{}{sep}error={error}&error_description={}{state}",
                p.redirect_uri,
                urlencode(description)
            );
            Redirect::to(&to).into_response()
        }
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The consent page: pick which dataset persona the client acts as.
async fn consent(State(server): State<Arc<AuthServer>>, Query(p): Query<AuthorizeParams>) -> Response {
    if let Err(refusal) = check_params(&server, &p) {
        return refuse(&p, refusal);
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
    let buttons: String = server
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
    let page = Html(format!(
        "<!doctype html><title>Chataigne development sign-in</title><h1>Act as which persona?</h1>\
         <p>Development authorization server of the Chataigne reference MCP server.</p>\
         <form method=\"post\" action=\"/oauth/authorize\">{hidden}{buttons}</form>"
    ));
    // Never inside another page's frame: a page could otherwise overlay it and have the
    // developer click a persona for a client they did not mean to approve (clickjacking).
    let no_framing =
        [(header::X_FRAME_OPTIONS, "DENY"), (header::CONTENT_SECURITY_POLICY, "frame-ancestors 'none'")];
    (no_framing, page).into_response()
}

async fn approve(State(server): State<Arc<AuthServer>>, Form(p): Form<AuthorizeParams>) -> Response {
    if let Err(refusal) = check_params(&server, &p) {
        return refuse(&p, refusal);
    }
    let persona = p.persona.as_deref().and_then(|name| server.persona(name)).filter(|p| p.audience.is_none());
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
    let grant = Grant {
        client_id: p.client_id.clone(),
        redirect_uri: p.redirect_uri.clone(),
        challenge: p.code_challenge.clone(),
        // The token acts as the persona picked: its user through its dataset client, exactly as
        // `dev-token-<persona>` does, so rate windows (LIM-3), key scopes (IDEM-5) and cursors
        // are the persona's, however many clients register (docs/DECISIONS.md).
        principal: Principal {
            user_id: persona.user_id.clone(),
            client_id: persona.client_id.clone(),
            scopes,
        },
        audience: server.resource_url(),
    };
    let Some(code) = server.oauth.park_code(grant, server.clock.now_ms()) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_client", "unknown client_id");
    };
    let sep = if p.redirect_uri.contains('?') { '&' } else { '?' };
    let state = p.state.map(|s| format!("&state={}", urlencode(&s))).unwrap_or_default();
    Redirect::to(&format!("{}{sep}code={code}{state}", p.redirect_uri)).into_response()
}

/// Every byte but RFC 3986's unreserved ones (`A-Z a-z 0-9 - . _ ~`) as `%XX`.
const RESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn urlencode(text: &str) -> String {
    utf8_percent_encode(text, RESERVED).to_string()
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
    #[serde(default)]
    resource: Option<String>,
}

async fn token(State(server): State<Arc<AuthServer>>, Form(req): Form<TokenRequest>) -> Response {
    let now = server.clock.now_ms();
    // RFC 8707 §2.2: a token for any other resource is refused, not minted.
    if req.resource.as_deref().is_some_and(|r| r != server.resource_url()) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "resource is not this server's canonical resource",
        );
    }
    let body = match req.grant_type.as_str() {
        "authorization_code" => {
            let grant = req.code.as_deref().and_then(|c| server.oauth.take_code(c, now));
            let Some(grant) = grant else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown, used or expired code",
                );
            };
            let verifier_ok = req.code_verifier.as_deref().is_some_and(|v| {
                verifier_ok(v) && URL_SAFE_NO_PAD.encode(Sha256::digest(v.as_bytes())) == grant.challenge
            });
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
            let Some(body) = server.oauth.issue(&grant, now) else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "the client is no longer registered",
                );
            };
            body
        }
        "refresh_token" => {
            // A public client names itself (OAuth 2.1 §4.3.1): its tokens are bound to it.
            let (Some(token), Some(client_id)) = (req.refresh_token.as_deref(), req.client_id.as_deref())
            else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "refresh_token and client_id are required",
                );
            };
            match server.oauth.refresh(token, client_id, now) {
                Ok(body) => body,
                Err(description) => {
                    return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", description);
                }
            }
        }
        _ => return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "code or refresh_token"),
    };
    ([(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

/// An RFC 7636 §4.1 code verifier: 43 to 128 characters of the unreserved set. A short one
/// could be guessed from its challenge.
fn verifier_ok(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlencode_keeps_only_the_unreserved_bytes() {
        assert_eq!(urlencode("aZ09-._~"), "aZ09-._~");
        assert_eq!(urlencode("a b+c/d?e=f&g*h%é"), "a%20b%2Bc%2Fd%3Fe%3Df%26g%2Ah%25%C3%A9");
    }

    /// Room for the thousands of clients these tests register.
    fn oauth() -> OAuth {
        OAuth::new(OAuthLimits { max_clients: 10_000, ..OAuthLimits::default() })
    }

    /// A grant for a newly registered client.
    fn grant(oauth: &OAuth, now_ms: i64) -> Grant {
        let client_id = oauth.register_client(vec!["http://127.0.0.1/cb".into()], now_ms);
        Grant {
            client_id: client_id.clone(),
            redirect_uri: "http://127.0.0.1/cb".into(),
            challenge: "c".into(),
            principal: Principal { user_id: "usr_a".into(), client_id, scopes: vec![] },
            audience: "http://127.0.0.1/mcp".into(),
        }
    }

    #[test]
    fn code_verifiers_are_43_to_128_unreserved_characters() {
        let ok = |v: &str| verifier_ok(v);
        assert!(ok(&"a".repeat(43)) && ok(&"Z-._~9".repeat(22)[..128]));
        assert!(!ok("a") && !ok(&"a".repeat(42)) && !ok(&"a".repeat(129)));
        assert!(!ok(&format!("{}+", "a".repeat(42))) && !ok(&format!("{} ", "a".repeat(43))));
    }

    #[test]
    fn expired_access_tokens_go_as_new_ones_are_issued() {
        let oauth = oauth();
        let later = 2 * ACCESS_TTL_MS;
        for _ in 0..3000 {
            oauth.issue(&grant(&oauth, 0), 0).unwrap();
        }
        let mut last = serde_json::Value::Null;
        for _ in 0..3000 {
            last = oauth.issue(&grant(&oauth, later), later).unwrap();
        }
        let len = lock(&oauth.access).map.len();
        assert!(len < 6000, "tokens of two hours ago went, {len} left");
        let token = last["access_token"].as_str().unwrap();
        assert!(oauth.check(token, "http://127.0.0.1/mcp", later + 1).is_some());
        assert!(oauth.check(token, "http://127.0.0.1/mcp", later + ACCESS_TTL_MS).is_none());
    }

    #[test]
    fn a_code_is_good_once_and_only_for_ten_minutes() {
        let oauth = oauth();
        let code = oauth.park_code(grant(&oauth, 0), 0).unwrap();
        assert!(oauth.take_code(&code, CODE_TTL_MS - 1).is_some());
        assert!(oauth.take_code(&code, CODE_TTL_MS - 1).is_none(), "used twice");
        let stale = oauth.park_code(grant(&oauth, 0), 0).unwrap();
        assert!(oauth.take_code(&stale, CODE_TTL_MS).is_none(), "expired");
        for _ in 0..3000 {
            oauth.park_code(grant(&oauth, 0), 0).unwrap();
        }
        for _ in 0..3000 {
            oauth.park_code(grant(&oauth, CODE_TTL_MS), CODE_TTL_MS).unwrap();
        }
        let len = lock(&oauth.codes).map.len();
        assert!(len < 6000, "unused codes of ten minutes ago went, {len} left");
    }

    #[test]
    fn one_client_holds_at_most_its_newest_codes_and_tokens() {
        let oauth = oauth();
        let grant = grant(&oauth, 0);
        let issued: Vec<_> = (0..100).map(|_| oauth.issue(&grant, 0).unwrap()).collect();
        for _ in 0..100 {
            oauth.park_code(grant.clone(), 0).unwrap();
        }
        assert_eq!(lock(&oauth.access).map.len(), TOKENS_PER_CLIENT);
        assert_eq!(lock(&oauth.refresh).len(), TOKENS_PER_CLIENT);
        assert_eq!(lock(&oauth.codes).map.len(), TOKENS_PER_CLIENT);
        let valid = |i: usize| oauth.check(issued[i]["access_token"].as_str().unwrap(), &grant.audience, 1);
        assert!(valid(99).is_some() && valid(100 - TOKENS_PER_CLIENT).is_some());
        assert!(valid(99 - TOKENS_PER_CLIENT).is_none(), "older tokens were dropped");
    }

    #[test]
    fn past_the_cap_unused_clients_go_oldest_first_and_take_their_codes_along() {
        let oauth = OAuth::new(OAuthLimits { max_clients: 3, ..OAuthLimits::default() });
        let used = grant(&oauth, 0);
        oauth.issue(&used, 0).unwrap();
        let a = grant(&oauth, 1);
        let b = grant(&oauth, 2);
        oauth.park_code(a.clone(), 2).unwrap();
        // Full: the next registration evicts `a`, the oldest unused, not `used`, older still.
        let c = grant(&oauth, 3);
        assert!(oauth.park_code(a.clone(), 3).is_none(), "a is gone");
        assert!(lock(&oauth.codes).map.is_empty(), "a's code went with it");
        assert!(oauth.park_code(b.clone(), 3).is_some() && oauth.park_code(used.clone(), 3).is_some());
        let e = grant(&oauth, 4);
        assert!(oauth.park_code(b.clone(), 4).is_none(), "then b");
        assert!(oauth.park_code(c.clone(), 4).is_some() && oauth.park_code(used.clone(), 4).is_some());
        // All used: the least recently used goes, with its tokens.
        let token = oauth.issue(&used, 5).unwrap();
        oauth.issue(&c, 6).unwrap();
        oauth.issue(&e, 7).unwrap();
        grant(&oauth, 8);
        assert!(oauth.park_code(used.clone(), 8).is_none(), "the least recently used client went");
        assert!(oauth.check(token["access_token"].as_str().unwrap(), &used.audience, 8).is_none());
        assert!(oauth.refresh(token["refresh_token"].as_str().unwrap(), &used.client_id, 8).is_err());
        assert_eq!(lock(&oauth.clients).map.len(), 3);
    }

    #[test]
    fn unused_clients_expire_after_a_day_and_used_ones_stay() {
        let oauth = oauth();
        let (unused, used) = (grant(&oauth, 0), grant(&oauth, 0));
        oauth.issue(&used, 0).unwrap();
        let day = OAuthLimits::default().unused_client_ttl_ms;
        assert!(oauth.check_client(&unused.client_id, &unused.redirect_uri, day - 1).is_ok());
        assert!(oauth.check_client(&unused.client_id, &unused.redirect_uri, day).is_err());
        assert!(oauth.check_client(&used.client_id, &used.redirect_uri, 10 * day).is_ok());
    }

    #[test]
    fn registrations_are_counted_per_address_and_ipv6_per_64() {
        let oauth = OAuth::new(OAuthLimits { registrations_per_minute: 2, ..OAuthLimits::default() });
        let v4 = peer_key(Some("10.0.0.1:1".parse().unwrap()));
        assert_eq!(oauth.admit_registration(v4, 0), Ok(()));
        assert_eq!(oauth.admit_registration(v4, 1), Ok(()));
        assert_eq!(oauth.admit_registration(v4, 1_000), Err(59_000));
        assert_eq!(oauth.admit_registration(peer_key(Some("10.0.0.2:1".parse().unwrap())), 1_000), Ok(()));
        assert_eq!(oauth.admit_registration(v4, MINUTE_MS), Ok(()), "a new window");
        let a = peer_key(Some("[2001:db8::1]:1".parse().unwrap()));
        let b = peer_key(Some("[2001:db8::ffff:2]:1".parse().unwrap()));
        assert_eq!(a, b, "one /64");
        assert_ne!(a, peer_key(Some("[2001:db8:0:1::1]:1".parse().unwrap())));
        assert_eq!(peer_key(Some("[::ffff:10.0.0.1]:1".parse().unwrap())), v4);
        // A clock moved back (control reset) does not leave a window open for ever.
        assert_eq!(oauth.admit_registration(v4, MINUTE_MS + 1), Ok(()));
        assert_eq!(oauth.admit_registration(v4, MINUTE_MS + 2), Err(MINUTE_MS - 2));
        assert_eq!(oauth.admit_registration(v4, 0), Ok(()), "a window from the future is over");
    }

    #[test]
    fn redirect_uris_must_be_absolute_and_harmless() {
        for ok in [
            "http://127.0.0.1:9/cb",
            "http://localhost:6274/oauth/callback",
            "http://[::1]/cb",
            "http://127.0.0.2",
            "https://app.example.com/cb?x=1",
            "https://app.example.com",
            "com.example.app:/oauth",
            "com.example.app://oauth",
        ] {
            assert!(redirect_uri_ok(ok), "{ok}");
        }
        for bad in [
            "http://app.example.com/cb",
            "http://127.0.0.1.evil.example/cb",
            "http://127.0.0.1@evil.example/cb",
            "https://user@app.example.com/cb",
            "http://localhost:port/cb",
            "https:///cb",
            "myapp:/cb",
            "mailto:a@example.com",
            "ftp://127.0.0.1/cb",
            "ws://127.0.0.1/cb",
            "data:,x",
            "blob:https://app.example.com/x",
            "http://127.0.0.1:9/cb\r\nSet-Cookie: x=y",
            "/cb",
            "cb",
            "http:",
            "http:///cb",
            "http://x/cb#frag",
            "javascript:alert(1)",
            "JavaScript:x",
            "data:text/html,x",
            "file:///etc/passwd",
            "http://x/ cb",
            "http://x/\ncb",
            "1http://x",
        ] {
            assert!(!redirect_uri_ok(bad), "{bad}");
        }
    }
}
