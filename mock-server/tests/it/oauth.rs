//! AUTH-1, AUTH-2 with the development authorization server: the whole PKCE flow end to end
//! (metadata, register, consent, token, call a tool, refresh), and audience binding. Then its
//! limits against hostile peers: registration body and field caps (RFC 7591 §3.2.2), the cap on
//! registered clients and its eviction order, the per-peer registration rate, the canonical
//! resource whatever the `Host` (RFC 8707), and rate windows shared by a user's clients.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = mock_server::Config::for_tests("secret");
    tokio::spawn(mock_server::run(listener, config, std::future::pending()));
    format!("http://{addr}")
}

/// `application/x-www-form-urlencoded`, without pulling reqwest's form feature into the build.
fn encode<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k.as_ref()), enc(v.as_ref())))
        .collect::<Vec<_>>()
        .join("&")
}

trait FormExt {
    fn form_body(self, body: String) -> Self;
}

impl FormExt for reqwest::RequestBuilder {
    fn form_body(self, body: String) -> Self {
        self.header("content-type", "application/x-www-form-urlencoded").body(body)
    }
}

/// One client for the module: building one loads the system's TLS roots, which is slow.
fn client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
        })
        .clone()
}

async fn call_tool(base: &str, token: &str) -> reqwest::Response {
    client()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_organizations", "arguments": {}}}))
        .send()
        .await
        .unwrap()
}

/// Register, consent as a persona, exchange the code; returns the token response and the client.
async fn authorize(
    base: &str,
    resource: Option<&str>,
    verifier: &str,
    sent_verifier: &str,
) -> (u16, Value, String) {
    let http = client();
    let meta: Value = http
        .get(format!("{base}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    let redirect = "http://127.0.0.1:9/callback";
    let reg: Value = http
        .post(meta["registration_endpoint"].as_str().unwrap())
        .json(&json!({"redirect_uris": [redirect], "client_name": "it"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = reg["client_id"].as_str().unwrap().to_owned();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let mut form = vec![
        ("response_type", "code".to_owned()),
        ("client_id", client_id.clone()),
        ("redirect_uri", redirect.to_owned()),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256".to_owned()),
        ("state", "xyz".to_owned()),
    ];
    if let Some(resource) = resource {
        form.push(("resource", resource.to_owned()));
    }
    let page = http.get(format!("{base}/oauth/authorize?{}", encode(&form))).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("value=\"manager\""));
    form.push(("persona", "manager".to_owned()));
    let approved =
        http.post(format!("{base}/oauth/authorize")).form_body(encode(&form)).send().await.unwrap();
    assert!(approved.status().is_redirection());
    let location = approved.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(redirect) && location.ends_with("&state=xyz"), "{location}");
    let code = location.split("code=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let token = http
        .post(meta["token_endpoint"].as_str().unwrap())
        .form_body(encode(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", redirect),
            ("client_id", &client_id),
            ("code_verifier", sent_verifier),
        ]))
        .send()
        .await
        .unwrap();
    (token.status().as_u16(), token.json().await.unwrap(), client_id)
}

/// The refresh grant: (HTTP status, body).
async fn refresh(base: &str, refresh_token: &str, client_id: Option<&str>) -> (u16, Value) {
    let mut form = vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token)];
    if let Some(client_id) = client_id {
        form.push(("client_id", client_id));
    }
    let answer = client().post(format!("{base}/oauth/token")).form_body(encode(&form)).send().await.unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn pkce_flow_issues_a_token_that_calls_tools_and_refreshes() {
    let base = start().await;
    let verifier = "a-verifier-of-at-least-forty-three-characters-0123456789";
    let (status, token, client_id) = authorize(&base, Some(&format!("{base}/mcp")), verifier, verifier).await;
    assert_eq!(status, 200, "{token}");
    let access = token["access_token"].as_str().unwrap();
    let reply: Value = call_tool(&base, access).await.json().await.unwrap();
    let orgs = &reply["result"]["structuredContent"]["data"]["organizations"];
    assert_eq!(orgs[0]["id"], "org_maison", "{reply}");
    assert_eq!(orgs[0]["role"], "manager");

    let (status, refreshed) =
        refresh(&base, token["refresh_token"].as_str().unwrap(), Some(&client_id)).await;
    assert_eq!(status, 200, "{refreshed}");
    let again = call_tool(&base, refreshed["access_token"].as_str().unwrap()).await;
    assert_eq!(again.status(), 200);
}

// OAuth 2.1 §4.3.1: a refresh token works only for the client it was issued to, which names
// itself; another client's attempt does not spend it.
#[tokio::test(flavor = "multi_thread")]
async fn refresh_tokens_work_only_for_their_client() {
    let server = crate::support::start().await;
    let base = server.base.clone();
    let (mine, other) = (new_client(&base).await, new_client(&base).await);
    let token = token_through(&base, &mine, "manager").await;
    let r0 = token["refresh_token"].as_str().unwrap();
    let (status, body) = refresh(&base, r0, Some(&other)).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "another client: {body}");
    let (status, body) = refresh(&base, r0, None).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")), "no client_id: {body}");
    let (status, body) = refresh(&base, r0, Some(&mine)).await;
    assert_eq!(status, 200, "not spent by the refusals: {body}");
}

// RFC 9700 §4.14.2: refresh tokens rotate, and a rotated one coming back (a thief or the client
// replaying: the server cannot tell) revokes its whole family, refresh and access tokens; other
// authorizations of the same client stay.
#[tokio::test(flavor = "multi_thread")]
async fn a_reused_refresh_token_revokes_its_family() {
    let server = crate::support::start().await;
    let base = server.base.clone();
    let mine = new_client(&base).await;
    let first = token_through(&base, &mine, "manager").await;
    let kept = token_through(&base, &mine, "manager").await;
    let r0 = first["refresh_token"].as_str().unwrap();
    let (status, second) = refresh(&base, r0, Some(&mine)).await;
    assert_eq!(status, 200, "{second}");
    let r1 = second["refresh_token"].as_str().unwrap();
    assert_ne!(r1, r0, "rotated");
    for access in [&first, &second] {
        assert_eq!(call_tool(&base, access["access_token"].as_str().unwrap()).await.status(), 200);
    }
    let (status, body) = refresh(&base, r0, Some(&mine)).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "reuse: {body}");
    let (status, body) = refresh(&base, r1, Some(&mine)).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "r1 revoked with it: {body}");
    for access in [&first, &second] {
        let status = call_tool(&base, access["access_token"].as_str().unwrap()).await.status();
        assert_eq!(status, 401, "the family's access tokens are revoked");
    }
    assert_eq!(call_tool(&base, kept["access_token"].as_str().unwrap()).await.status(), 200);
    let (status, body) = refresh(&base, kept["refresh_token"].as_str().unwrap(), Some(&mine)).await;
    assert_eq!(status, 200, "another family: {body}");
}

// Refresh tokens expire 30 days (of the server's clock) after their issue; each rotation
// starts a new 30 days.
#[tokio::test(flavor = "multi_thread")]
async fn refresh_tokens_expire_after_30_days() {
    let server = crate::support::start().await;
    let base = server.base.clone();
    let client_id = new_client(&base).await;
    let token = token_through(&base, &client_id, "manager").await;
    let day = 24 * 3600;
    server.advance(29 * day).await;
    let (status, rotated) = refresh(&base, token["refresh_token"].as_str().unwrap(), Some(&client_id)).await;
    assert_eq!(status, 200, "29 days on: {rotated}");
    server.advance(29 * day).await;
    let (status, later) = refresh(&base, rotated["refresh_token"].as_str().unwrap(), Some(&client_id)).await;
    assert_eq!(status, 200, "29 days after its rotation: {later}");
    server.advance(30 * day).await;
    let (status, body) = refresh(&base, later["refresh_token"].as_str().unwrap(), Some(&client_id)).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "30 days on: {body}");
}

// The consent page says no page may frame it (clickjacking: a page overlaying it could have the
// developer approve a client they did not mean to), in both the old and the CSP form.
#[tokio::test(flavor = "multi_thread")]
async fn the_consent_page_cannot_be_framed() {
    let base = start().await;
    let client_id = new_client(&base).await;
    let url = format!("{base}/oauth/authorize?{}", encode(&authorization(&client_id, None)));
    let page = client().get(url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers().get("x-frame-options").and_then(|v| v.to_str().ok()), Some("DENY"));
    let csp = page.headers().get("content-security-policy").and_then(|v| v.to_str().ok());
    assert_eq!(csp, Some("frame-ancestors 'none'"));
}

// RFC 7636 §4.1: a code verifier is 43 to 128 characters of the unreserved set; a 1-character
// one (its challenge computed honestly) gets no token.
#[tokio::test(flavor = "multi_thread")]
async fn code_verifiers_outside_rfc_7636_get_no_token() {
    let base = start().await;
    for verifier in ["a".to_owned(), "a".repeat(42), "a".repeat(129), format!("{}/", "a".repeat(42))] {
        let (status, body, _) = authorize(&base, None, &verifier, &verifier).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{verifier}: {body}");
    }
    for verifier in ["~".repeat(43), "Az0-._~".repeat(19)[..128].to_owned()] {
        let (status, body, _) = authorize(&base, None, &verifier, &verifier).await;
        assert_eq!(status, 200, "{verifier}: {body}");
    }
}

#[tokio::test]
async fn wrong_verifier_gets_no_token() {
    let base = start().await;
    let verifier = "a-verifier-of-at-least-forty-three-characters-0123456789";
    let (status, body, _) =
        authorize(&base, None, verifier, "another-verifier-of-at-least-forty-three-chars-000").await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_grant");
}

const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

/// POST /oauth/register with `body` as JSON.
async fn register(base: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = client().post(format!("{base}/oauth/register")).json(body).send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.json().await.unwrap_or(Value::Null))
}

/// A new client's id.
async fn new_client(base: &str) -> String {
    let (status, _, reg) = register(base, &json!({ "redirect_uris": [REDIRECT] })).await;
    assert_eq!(status, 201, "{reg}");
    reg["client_id"].as_str().unwrap().to_owned()
}

/// The authorization request's form for `client_id`, with `resource` if given.
fn authorization(client_id: &str, resource: Option<&str>) -> Vec<(&'static str, String)> {
    let mut form = vec![
        ("response_type", "code".to_owned()),
        ("client_id", client_id.to_owned()),
        ("redirect_uri", REDIRECT.to_owned()),
        ("code_challenge", URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()))),
        ("code_challenge_method", "S256".to_owned()),
        ("state", "xyz".to_owned()),
    ];
    if let Some(resource) = resource {
        form.push(("resource", resource.to_owned()));
    }
    form
}

/// GET the consent page of `client_id`: its HTTP status (200, or 303 back to the client).
async fn consent_status(base: &str, client_id: &str) -> u16 {
    let url = format!("{base}/oauth/authorize?{}", encode(&authorization(client_id, None)));
    client().get(url).send().await.unwrap().status().as_u16()
}

/// Consent as `persona` through `client_id` and exchange the code: the token response.
async fn token_through(base: &str, client_id: &str, persona: &str) -> Value {
    let mut form = authorization(client_id, None);
    form.push(("persona", persona.to_owned()));
    let approved =
        client().post(format!("{base}/oauth/authorize")).form_body(encode(&form)).send().await.unwrap();
    assert_eq!(approved.status(), 303, "{}", approved.text().await.unwrap());
    let location = approved.headers()["location"].to_str().unwrap().to_owned();
    let code = location.split("code=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT),
        ("client_id", client_id),
        ("code_verifier", VERIFIER),
    ];
    let token =
        client().post(format!("{base}/oauth/token")).form_body(encode(&exchange)).send().await.unwrap();
    assert_eq!(token.status(), 200);
    token.json().await.unwrap()
}

// AUTH-2, RFC 8707: the authorization server mints for its canonical resource only.
#[tokio::test]
async fn minting_refuses_another_resource_with_invalid_target() {
    let base = start().await;
    let client_id = new_client(&base).await;
    let http = client();
    for resource in ["https://other.example.com/mcp", "http://localhost:5555/mcp", &format!("{base}/mcp/")] {
        // The consent page and the approval both send the client back with the error.
        let form = authorization(&client_id, Some(resource));
        let page = http.get(format!("{base}/oauth/authorize?{}", encode(&form))).send().await.unwrap();
        let mut approve = form.clone();
        approve.push(("persona", "manager".to_owned()));
        let approved =
            http.post(format!("{base}/oauth/authorize")).form_body(encode(&approve)).send().await.unwrap();
        for answer in [page, approved] {
            assert_eq!(answer.status(), 303, "{resource}");
            let location = answer.headers()["location"].to_str().unwrap().to_owned();
            assert!(location.starts_with(&format!("{REDIRECT}?error=invalid_target&")), "{location}");
            assert!(location.ends_with("&state=xyz") && !location.contains("code="), "{location}");
        }
    }
    // The token endpoint refuses a `resource` parameter naming anything else too.
    let mut form = authorization(&client_id, Some(&format!("{base}/mcp")));
    form.push(("persona", "manager".to_owned()));
    let approved =
        http.post(format!("{base}/oauth/authorize")).form_body(encode(&form)).send().await.unwrap();
    let location = approved.headers()["location"].to_str().unwrap().to_owned();
    let code = location.split("code=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let mut exchange = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code),
        ("redirect_uri", REDIRECT.to_owned()),
        ("client_id", client_id.clone()),
        ("code_verifier", VERIFIER.to_owned()),
    ];
    let mut refused = exchange.clone();
    refused.push(("resource", "https://other.example.com/mcp".to_owned()));
    let answer = http.post(format!("{base}/oauth/token")).form_body(encode(&refused)).send().await.unwrap();
    assert_eq!(answer.status(), 400);
    assert_eq!(answer.json::<Value>().await.unwrap()["error"], "invalid_target");
    // The code was not spent on the refusal: with the canonical resource it gets a token.
    exchange.push(("resource", format!("{base}/mcp")));
    let answer = http.post(format!("{base}/oauth/token")).form_body(encode(&exchange)).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let token: Value = answer.json().await.unwrap();
    assert_eq!(call_tool(&base, token["access_token"].as_str().unwrap()).await.status(), 200);
}

// AUTH-2, RFC 8707 / RFC 9728: the `Host` header changes neither the audience tokens are checked
// against nor the resource the metadata names.
#[tokio::test(flavor = "multi_thread")]
async fn the_host_header_does_not_change_the_audience() {
    let server = crate::support::start().await;
    let base = server.base.clone();
    let canonical = format!("{base}/mcp");
    let spoofed = "localhost:5555";
    let http = client();
    let get = async |path: &str| -> Value {
        let answer = http.get(format!("{base}{path}")).header("host", spoofed).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        answer.json().await.unwrap()
    };
    assert_eq!(get("/.well-known/oauth-protected-resource/mcp").await["resource"], canonical);
    assert_eq!(get("/.well-known/oauth-protected-resource").await["authorization_servers"], json!([base]));
    assert_eq!(get("/.well-known/oauth-authorization-server").await["issuer"], base);
    let unauthorized = http
        .post(format!("{base}/mcp"))
        .header("host", spoofed)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), 401);
    let challenge = unauthorized.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(
        challenge.contains(&format!("\"{base}/.well-known/oauth-protected-resource/mcp\"")),
        "{challenge}"
    );
    // The exploit: a token for the spoofed Host's resource cannot be had...
    let client_id = new_client(&base).await;
    let form = authorization(&client_id, Some(&format!("http://{spoofed}/mcp")));
    let page = http.get(format!("{base}/oauth/authorize?{}", encode(&form))).send().await.unwrap();
    assert!(page.headers()["location"].to_str().unwrap().contains("error=invalid_target"));
    // ...and one for the canonical resource is one whatever the Host it is sent with.
    let token = token_through(&base, &client_id, "manager").await;
    let access = token["access_token"].as_str().unwrap();
    for host in [spoofed, "127.0.0.1", "localhost"] {
        let answer = http
            .post(format!("{base}/mcp"))
            .header("host", host)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {access}"))
            .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "Host {host}");
    }

    // With --public-url, the canonical resource is that URL, never the address reached.
    let public =
        crate::support::start_with(|c| c.public_url = Some("https://mcp.example.test/".into())).await;
    let metadata = public.get("/.well-known/oauth-protected-resource", &[]).await;
    assert_eq!(metadata.json["resource"], "https://mcp.example.test/mcp");
    let client_id = new_client(&public.base).await;
    let reached = format!("{}/mcp", public.base);
    let form = authorization(&client_id, Some(&reached));
    let page = http.get(format!("{}/oauth/authorize?{}", public.base, encode(&form))).send().await.unwrap();
    assert!(page.headers()["location"].to_str().unwrap().contains("error=invalid_target"), "{reached}");
    let token = token_through(&public.base, &client_id, "manager").await;
    assert_eq!(call_tool(&public.base, token["access_token"].as_str().unwrap()).await.status(), 200);
}

/// POST /oauth/register with a chunked body of `kib` KiB of blanks: the answer's HTTP status.
async fn chunked_registration(base: &str, kib: usize) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /oauth/register HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = format!("400\r\n{}\r\n", " ".repeat(1024));
    for _ in 0..kib {
        // The server may answer and close before the whole body is sent.
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = vec![0; 64];
    let n = stream.read(&mut answer).await.unwrap();
    let line = String::from_utf8_lossy(&answer[..n]).into_owned();
    line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("a status line: {line}"))
}

// RFC 7591 §3.2.2: a registration body over 16 KiB, or not JSON, is refused.
#[tokio::test]
async fn registration_body_over_16_kib_is_refused_with_413() {
    let base = start().await;
    let name = "n".repeat(16 * 1024);
    let (status, _, body) = register(&base, &json!({ "redirect_uris": [REDIRECT], "extra": name })).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"], "invalid_client_metadata");
    // Streamed without a length, the cap holds too.
    assert_eq!(chunked_registration(&base, 64).await, 413);
    let text = client()
        .post(format!("{base}/oauth/register"))
        .header("content-type", "text/plain")
        .body(json!({ "redirect_uris": [REDIRECT] }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 415, "a web page's simple request is not a registration");
    let foreign = client()
        .post(format!("{base}/oauth/register"))
        .header("origin", "https://evil.example")
        .json(&json!({ "redirect_uris": [REDIRECT] }))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403, "a foreign page's registration is refused");
    // The consent form and token requests are capped at 16 KiB as well.
    let big = client()
        .post(format!("{base}/oauth/token"))
        .form_body(format!("grant_type=refresh_token&refresh_token={}", "r".repeat(17 * 1024)))
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
}

// RFC 7591 §3.2.2: each field within its cap, or invalid_redirect_uri / invalid_client_metadata.
#[tokio::test]
async fn registration_fields_over_their_caps_get_rfc7591_errors() {
    let server = crate::support::start().await;
    let base = server.base.clone();
    let uri = |len: usize| format!("http://127.0.0.1:9/{}", "p".repeat(len - 19));
    let nine: Vec<String> = (0..9).map(|i| format!("http://127.0.0.1:9/cb{i}")).collect();
    let refused = [
        (json!({}), "invalid_redirect_uri"),
        (json!({ "redirect_uris": [] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": nine }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": [uri(2049)] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["javascript:alert(1)"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["data:text/html,<script>x</script>"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["http://127.0.0.1:9/cb\r\nSet-Cookie: x=y"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["http://app.example.com/cb"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["http://127.0.0.1@evil.example/cb"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["myapp:/cb"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["/relative"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": ["http://127.0.0.1:9/cb#fragment"] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": [7] }), "invalid_redirect_uri"),
        (json!({ "redirect_uris": [REDIRECT], "client_name": "c".repeat(201) }), "invalid_client_metadata"),
        (json!({ "redirect_uris": [REDIRECT], "client_name": 7 }), "invalid_client_metadata"),
        (json!([REDIRECT]), "invalid_client_metadata"),
    ];
    for (body, error) in &refused {
        let (status, _, answer) = register(&base, body).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some(*error)), "{body}");
    }
    let answer = client()
        .post(format!("{base}/oauth/register"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
    assert_eq!(answer.json::<Value>().await.unwrap()["error"], "invalid_client_metadata");
    // At the caps exactly: 8 URIs, one of 2048 bytes, a name of 200 characters (not bytes).
    let mut eight: Vec<String> = (0..7).map(|i| format!("http://127.0.0.1:9/cb{i}")).collect();
    eight.push(uri(2048));
    let name = "é".repeat(200);
    let (status, _, answer) = register(&base, &json!({ "redirect_uris": eight, "client_name": name })).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["redirect_uris"], json!(eight));
    assert_eq!(answer["client_name"], json!(name));
    // A native app's private-use scheme in reverse-domain form is a redirect URI too (RFC 8252
    // §7.1), and so is https anywhere and http on a loopback host.
    let allowed =
        ["com.example.app:/oauth", "https://app.example.com/cb", "http://localhost:6274/oauth/callback"];
    let (status, _, body) = register(&base, &json!({ "redirect_uris": allowed })).await;
    assert_eq!(status, 201, "{body}");
    // The challenge a code keeps is an S256 one: 43 characters, nothing longer.
    let client_id = new_client(&base).await;
    let mut form = authorization(&client_id, None);
    form[3].1 = "c".repeat(10_000);
    let page = client().get(format!("{base}/oauth/authorize?{}", encode(&form))).send().await.unwrap();
    assert_eq!(page.status(), 400);
}

// Registered clients are capped; past the cap the oldest client never used for a token goes
// first, a used one only when every client has been used; unused clients expire after 24 h.
#[tokio::test(flavor = "multi_thread")]
async fn registered_clients_are_capped_and_the_oldest_unused_goes_first() {
    let server = crate::support::start_with(|c| c.oauth.max_clients = 3).await;
    let base = server.base.clone();
    let used = new_client(&base).await;
    let token = token_through(&base, &used, "manager").await;
    let (b, c) = (new_client(&base).await, new_client(&base).await);
    let d = new_client(&base).await;
    assert_eq!(consent_status(&base, &b).await, 400, "b, the oldest unused, went");
    for live in [&used, &c, &d] {
        assert_eq!(consent_status(&base, live).await, 200, "{live} stays");
    }
    let e = new_client(&base).await;
    assert_eq!(consent_status(&base, &c).await, 400, "then c; never the used one, older still");
    for live in [&used, &d, &e] {
        assert_eq!(consent_status(&base, live).await, 200);
    }
    assert_eq!(call_tool(&base, token["access_token"].as_str().unwrap()).await.status(), 200);
    // A day later the unused clients are gone; the used one stays, and so does its token chain.
    server.advance(24 * 3600).await;
    for unused in [&d, &e] {
        assert_eq!(consent_status(&base, unused).await, 400, "{unused} expired");
    }
    assert_eq!(consent_status(&base, &used).await, 200);
    let (status, refreshed) = refresh(&base, token["refresh_token"].as_str().unwrap(), Some(&used)).await;
    assert_eq!(status, 200, "{refreshed}");
}

// Registrations are limited per peer address: 20 a minute, then 429 with Retry-After.
#[tokio::test(flavor = "multi_thread")]
async fn registrations_are_rate_limited_per_peer_with_429() {
    let server = crate::support::start().await;
    let base = server.base.clone();
    for i in 0..20 {
        let (status, _, body) = register(&base, &json!({ "redirect_uris": [REDIRECT] })).await;
        assert_eq!(status, 201, "registration {i}: {body}");
    }
    // Every attempt counts, refused ones too, and nothing is parsed past the limit.
    for body in [json!({ "redirect_uris": [REDIRECT] }), json!({})] {
        let (status, headers, answer) = register(&base, &body).await;
        assert_eq!(status, 429, "{answer}");
        let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry), "Retry-After {retry}");
        assert_eq!(answer["error"], "temporarily_unavailable");
    }
    server.advance(60).await;
    let (status, _, _) = register(&base, &json!({ "redirect_uris": [REDIRECT] })).await;
    assert_eq!(status, 201, "a new window a minute later");
}

// LIM-3 with dynamic registration: a token acts as the persona picked on the consent page, so
// registering more clients does not multiply a user's rate limits (docs/DECISIONS.md).
#[tokio::test(flavor = "multi_thread")]
async fn clients_registered_for_one_persona_share_its_rate_windows() {
    let server = crate::support::start().await;
    let base = server.base.clone();
    let tokens = [
        token_through(&base, &new_client(&base).await, "manager").await,
        token_through(&base, &new_client(&base).await, "manager").await,
    ];
    let write = |token: String| {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "set_restaurant_status", "arguments": {} } });
        let base = base.clone();
        async move {
            let answer = client()
                .post(format!("{base}/mcp"))
                .header("accept", "application/json, text/event-stream")
                .header("authorization", format!("Bearer {token}"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let reply: Value = answer.json().await.unwrap();
            reply["result"]["structuredContent"]["data"]["error"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }
    };
    // The persona's static token spends the write window (500 a minute; refused calls count).
    let spent = crate::support::concurrently(500, 16, |_| write(crate::support::token("manager"))).await;
    assert!(spent.iter().all(|code| code == "MCP_INVALID_ARGUMENTS"), "{spent:?}");
    for token in &tokens {
        let code = write(token["access_token"].as_str().unwrap().to_owned()).await;
        assert_eq!(code, "MCP_RATE_LIMITED", "a new client is not a new window");
    }
    // Another persona (another dataset client) keeps its own window.
    let second = token_through(&base, &new_client(&base).await, "owner_second_client").await;
    assert_eq!(write(second["access_token"].as_str().unwrap().to_owned()).await, "MCP_INVALID_ARGUMENTS");
}
