//! The optional control API of a server under test (time travel, faults, deadlines, membership
//! revocation). The reference server has it; scenarios that need it are tagged
//! `@needs-control-api` and are skipped when the profile gives none.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::client::{cut, describe_reqwest};

#[derive(Debug, Clone)]
pub struct Control {
    http: reqwest::Client,
    base: String,
    secret: String,
    timeout: Duration,
    /// Told when the server forgets its rate windows (a reset, a move of a window or more).
    log: Option<std::sync::Arc<crate::schedule::CallLog>>,
}

impl Control {
    pub fn new(http: reqwest::Client, base: &str, secret: &str, timeout: Duration) -> Control {
        Control {
            http,
            base: base.trim_end_matches('/').to_owned(),
            secret: secret.to_owned(),
            timeout,
            log: None,
        }
    }

    /// Tell `log` when the server's rate windows are cleared.
    pub fn with_log(mut self, log: std::sync::Arc<crate::schedule::CallLog>) -> Control {
        self.log = Some(log);
        self
    }

    fn windows_cleared(&self) {
        if let Some(log) = &self.log {
            log.windows_cleared();
        }
    }

    /// `GET {base}`: the capabilities the control API offers.
    pub async fn probe(&self) -> anyhow::Result<Vec<String>> {
        let body = self.send(reqwest::Method::GET, "", None).await?;
        let caps = body
            .get("capabilities")
            .and_then(Value::as_array)
            .context("the answer has no `capabilities` list")?;
        Ok(caps.iter().filter_map(Value::as_str).map(str::to_owned).collect())
    }

    /// Also clears the rate windows (docs/CONTROL_API.md).
    pub async fn reset(&self) -> anyhow::Result<()> {
        self.send(reqwest::Method::POST, "/reset", Some(json!({}))).await?;
        self.windows_cleared();
        if let Some(log) = &self.log {
            log.data_reset();
        }
        Ok(())
    }

    /// The server's clock, in milliseconds since the epoch (`GET /clock`).
    pub async fn now_ms(&self) -> anyhow::Result<i64> {
        let clock = self.send(reqwest::Method::GET, "/clock", None).await?;
        clock.get("now_ms").and_then(Value::as_i64).context("GET /control/clock: no now_ms")
    }

    /// A move of a window (60 s) or more leaves every rate window behind.
    pub async fn advance_clock(&self, seconds: u64) -> anyhow::Result<()> {
        self.send(reqwest::Method::POST, "/clock/advance", Some(json!({ "seconds": seconds }))).await?;
        if seconds >= crate::rate_verdict::WINDOW_S as u64 {
            self.windows_cleared();
        }
        Ok(())
    }

    /// `fault` is the body of `POST /faults`, e.g. `{"tool": "get_order", "error": "internal"}`.
    pub async fn add_fault(&self, fault: Value) -> anyhow::Result<()> {
        self.send(reqwest::Method::POST, "/faults", Some(fault)).await.map(drop)
    }

    pub async fn clear_faults(&self) -> anyhow::Result<()> {
        self.send(reqwest::Method::DELETE, "/faults", None).await.map(drop)
    }

    /// `deadlines` is `{"read_ms"?, "analytics_ms"?, "write_ms"?}`.
    pub async fn set_deadlines(&self, deadlines: Value) -> anyhow::Result<()> {
        self.send(reqwest::Method::POST, "/deadlines", Some(deadlines)).await.map(drop)
    }

    /// IDs are the server's (already mapped).
    pub async fn revoke_membership(&self, user_id: &str, organization_id: &str) -> anyhow::Result<()> {
        let body = json!({ "user_id": user_id, "organization_id": organization_id });
        self.send(reqwest::Method::POST, "/memberships/revoke", Some(body)).await.map(drop)
    }

    /// Gives a revoked membership back (IDs are the server's).
    pub async fn restore_membership(&self, user_id: &str, organization_id: &str) -> anyhow::Result<()> {
        let body = json!({ "user_id": user_id, "organization_id": organization_id });
        self.send(reqwest::Method::POST, "/memberships/restore", Some(body)).await.map(drop)
    }

    /// A new order arrives now in the restaurant (server ID); the answer is the order.
    pub async fn new_order(&self, restaurant_id: &str) -> anyhow::Result<Value> {
        self.send(reqwest::Method::POST, "/orders", Some(json!({ "restaurant_id": restaurant_id }))).await
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let mut req = self
            .http
            .request(method.clone(), &url)
            .header("x-control-secret", &self.secret)
            .timeout(self.timeout);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("control API {method} {url}: {}", describe_reqwest(&e)))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            bail!("control API {method} {url}: HTTP {} {}", status.as_u16(), cut(&text, 300));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text)
            .with_context(|| format!("control API {method} {url}: the answer is not JSON"))
    }
}
