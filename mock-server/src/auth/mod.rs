//! Authentication (AUTH-1, AUTH-2): bearer tokens resolved to a principal. The reference server
//! issues static development tokens, one per dataset persona (`dev-token-<persona>`); a token
//! issued for another audience is refused like an invalid one (no token passthrough).

use std::collections::HashMap;

use chataigne_contract::dataset::Dataset;
use serde::Serialize;

/// Whether a URL's host is this machine: `localhost` or a loopback address. What an `Origin`
/// may name without `--allowed-origin`, and an `http` redirect URI must name (RFC 8252 §7.3).
pub fn is_loopback(host: Option<url::Host<&str>>) -> bool {
    match host {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A persona's static development token is this prefix plus the persona's name.
pub const DEV_TOKEN_PREFIX: &str = "dev-token-";

/// Who is calling: the delegated user, through which OAuth client, with which scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: String,
    pub client_id: String,
    pub scopes: Vec<String>,
}

impl Principal {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Access tokens an authorization server issued for this server (the development one,
/// `dev::oauth`, implements it): the transport checks bearers through this, never through that
/// server itself.
pub trait Issuer: Send + Sync + std::fmt::Debug {
    /// The principal of an issued access token, if it is live and for `audience`.
    fn check(&self, token: &str, audience: &str, now_ms: i64) -> Option<Principal>;
}

/// A persona's development token, as `chataigne-mock personas --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct PersonaToken {
    pub persona: String,
    pub token: String,
    pub client_id: String,
    pub user_id: String,
    pub scopes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

pub fn persona_tokens(dataset: &Dataset) -> Vec<PersonaToken> {
    dataset
        .personas
        .iter()
        .map(|p| PersonaToken {
            persona: p.persona.clone(),
            token: format!("{DEV_TOKEN_PREFIX}{}", p.persona),
            client_id: p.client_id.clone(),
            user_id: p.user_id.clone(),
            scopes: p.scopes.clone(),
            audience: p.audience.clone(),
        })
        .collect()
}

/// The tokens this server accepts, for its own audience only.
#[derive(Debug, Default)]
pub struct Tokens {
    valid: HashMap<String, Principal>,
}

impl Tokens {
    /// `any_audience` is AUTH-2's defect mode: tokens minted for other resources accepted too.
    pub fn from_dataset(dataset: &Dataset, any_audience: bool) -> Tokens {
        let valid = persona_tokens(dataset)
            .into_iter()
            // A token minted for another resource is not a token for us (AUTH-2).
            .filter(|p| p.audience.is_none() || any_audience)
            .map(|p| (p.token, Principal { user_id: p.user_id, client_id: p.client_id, scopes: p.scopes }))
            .collect();
        Tokens { valid }
    }

    pub fn check(&self, token: &str) -> Option<Principal> {
        self.valid.get(token).cloned()
    }
}

/// The bearer token of an `Authorization` header value, if it has that form.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}
