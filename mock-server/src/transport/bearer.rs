//! Bearer authentication at the `/mcp` gate (AUTH-1, AUTH-2): a static development token or one
//! an authorization server issued for this resource (`auth::Issuer`), and the 401 otherwise.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::app::App;
use crate::auth::Principal;

pub(super) fn authenticate(app: &App, headers: &HeaderMap) -> Option<Principal> {
    let token =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| app.defects.bearer(v));
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
pub(super) fn unauthorized(app: &App) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(crate::app::canonical_base("https:///x").is_err());
        assert!(crate::app::canonical_base("https://user@x").is_err());
        assert!(crate::app::canonical_base("https://x/a b").is_err());
        assert_eq!(
            crate::app::canonical_base("HTTPS://Mcp.Example.COM:443/base/").unwrap(),
            "https://mcp.example.com/base"
        );
        assert_eq!(
            crate::app::canonical_base("https://mcp.example.com/base/").unwrap(),
            "https://mcp.example.com/base"
        );
    }
}
