//! Checks before any scenario runs, so a wrong URL or a dead server ends the run with exit code 2
//! and one line saying why, instead of a wall of failed clauses.

use std::time::Duration;

use anyhow::bail;
use serde_json::{Value, json};

use crate::client::{Exchange, McpClient};
use crate::context::{Capabilities, Published, RunContext, http_client, load_dataset};
use crate::control::Control;
use crate::profile::Profile;

/// Build the run's context: load the dataset, reach the endpoint, list the tools, probe the
/// control API. An `Err` is a configuration or connection error (exit code 2).
pub async fn prepare(profile: Profile) -> anyhow::Result<RunContext> {
    profile.validate()?;
    let dataset = load_dataset(profile.dataset.as_deref())?;
    let timeout = Duration::from_millis(profile.timeout_ms);
    let http = http_client(timeout)?;
    let endpoint = profile.endpoint().to_owned();

    let mut client = connect(&profile, &http, &endpoint, timeout).await?;
    let published = list_tools(&mut client).await;

    let mut capabilities = Capabilities { server_log: profile.server_log.is_some(), ..Default::default() };
    let control = match &profile.control {
        None => None,
        Some(cfg) => {
            let control = Control::new(http.clone(), &cfg.url, &cfg.secret, timeout);
            match control.probe().await {
                Ok(features) => capabilities.control_features = features,
                Err(e) => bail!("the profile's control API does not answer: {e:#}"),
            }
            capabilities.control_api = true;
            Some(control)
        }
    };

    Ok(RunContext {
        id_map: profile.id_map(),
        profile,
        endpoint,
        dataset,
        http,
        timeout,
        control,
        capabilities,
        published,
    })
}

/// Initialize with the persona tokens, the owner first, until one works.
async fn connect(
    profile: &Profile,
    http: &reqwest::Client,
    endpoint: &str,
    timeout: Duration,
) -> anyhow::Result<McpClient> {
    let mut personas: Vec<&String> = profile.tokens.keys().collect();
    personas.sort_by_key(|p| *p != "owner");
    let mut refused = Vec::new();
    let mut other = None;
    for persona in personas {
        let token = profile.tokens.get(persona).cloned();
        let mut client = McpClient::new(http.clone(), endpoint, token, Some(persona.clone()), timeout);
        let ex = client.initialize().await;
        match classify(&ex, endpoint) {
            Init::Ready => return Ok(client),
            Init::Unreachable(reason) => bail!("{reason}"),
            Init::Unauthorized => refused.push(persona.as_str()),
            Init::Broken(reason) => {
                other.get_or_insert(reason);
            }
        }
    }
    match other {
        Some(reason) => bail!("{reason}"),
        None => bail!(
            "every persona token was refused with HTTP 401 on initialize ({}): check the profile's [tokens]",
            refused.join(", ")
        ),
    }
}

enum Init {
    Ready,
    Unauthorized,
    /// No HTTP answer at all: nothing else will work either.
    Unreachable(String),
    Broken(String),
}

fn classify(ex: &Exchange, endpoint: &str) -> Init {
    let resp = match &ex.outcome {
        Ok(r) => r,
        Err(e) => return Init::Unreachable(format!("cannot reach {endpoint}: {e}")),
    };
    if ex.result().and_then(|r| r.get("protocolVersion")).is_some() {
        return Init::Ready;
    }
    if resp.status == 401 {
        return Init::Unauthorized;
    }
    if resp.content_type.starts_with("text/html") {
        return Init::Broken(format!(
            "{endpoint} answered initialize with an HTML page (HTTP {}), not JSON-RPC: is it the MCP endpoint?",
            resp.status
        ));
    }
    if let Some(err) = ex.rpc_error() {
        return Init::Broken(format!(
            "{endpoint} refused initialize with JSON-RPC error {} (HTTP {})",
            crate::client::compact(err, 200),
            resp.status
        ));
    }
    let why = resp.problem.clone().unwrap_or_else(|| "no protocolVersion in the result".to_owned());
    Init::Broken(format!("{endpoint} answered initialize with HTTP {}: {why}", resp.status))
}

/// Every page of tools/list; a failure is kept for PROTO-3 to report, not fatal.
async fn list_tools(client: &mut McpClient) -> Published {
    match list_all_tools(client).await {
        Ok(tools) => Published::new(tools),
        Err(problem) => Published { problem: Some(problem), ..Default::default() },
    }
}

/// `tools/list`, following `nextCursor`; `Err` says what went wrong, with the exchange.
pub async fn list_all_tools(client: &mut McpClient) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let ex = client.request("tools/list", params).await;
        let Some(result) = ex.result() else {
            return Err(format!("tools/list failed: {}\n{}", ex.summary(), ex.describe()));
        };
        let Some(page) = result.get("tools").and_then(Value::as_array) else {
            return Err(format!("tools/list has no `tools` array\n{}", ex.describe()));
        };
        tools.extend(page.iter().cloned());
        cursor = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err("tools/list did not end after 100 pages".to_owned())
}
