//! AUTH-1, AUTH-2 with the development authorization server: the whole PKCE flow end to end
//! (metadata, register, consent, token, call a tool, refresh), and audience binding.

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

fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
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

/// Register, consent as a persona, exchange the code; returns the token response.
async fn authorize(base: &str, resource: Option<&str>, verifier: &str, sent_verifier: &str) -> (u16, Value) {
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
    (token.status().as_u16(), token.json().await.unwrap())
}

#[tokio::test]
async fn pkce_flow_issues_a_token_that_calls_tools_and_refreshes() {
    let base = start().await;
    let verifier = "a-verifier-of-at-least-forty-three-characters-0123456789";
    let (status, token) = authorize(&base, Some(&format!("{base}/mcp")), verifier, verifier).await;
    assert_eq!(status, 200, "{token}");
    let access = token["access_token"].as_str().unwrap();
    let reply: Value = call_tool(&base, access).await.json().await.unwrap();
    let orgs = &reply["result"]["structuredContent"]["data"]["organizations"];
    assert_eq!(orgs[0]["id"], "org_maison", "{reply}");
    assert_eq!(orgs[0]["role"], "manager");

    let refreshed: Value = client()
        .post(format!("{base}/oauth/token"))
        .form_body(encode(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", token["refresh_token"].as_str().unwrap()),
        ]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let again = call_tool(&base, refreshed["access_token"].as_str().unwrap()).await;
    assert_eq!(again.status(), 200);
}

#[tokio::test]
async fn wrong_verifier_gets_no_token() {
    let base = start().await;
    let verifier = "a-verifier-of-at-least-forty-three-characters-0123456789";
    let (status, body) =
        authorize(&base, None, verifier, "another-verifier-of-at-least-forty-three-chars-000").await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_grant");
}

#[tokio::test]
async fn token_for_another_resource_is_refused_with_401() {
    let base = start().await;
    let verifier = "a-verifier-of-at-least-forty-three-characters-0123456789";
    let (status, token) = authorize(&base, Some("https://other.example.com/mcp"), verifier, verifier).await;
    assert_eq!(status, 200);
    let reply = call_tool(&base, token["access_token"].as_str().unwrap()).await;
    assert_eq!(reply.status(), 401);
    assert!(reply.headers()["www-authenticate"].to_str().unwrap().contains("resource_metadata="));
}
