//! What every scenario shares in one run: the profile, the dataset, the HTTP client (or the
//! stdio server processes), the capabilities probed at start, and the tool list the server
//! published.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use chataigne_contract::dataset::Dataset;
use chataigne_contract::schema::Validator;
use serde::Serialize;
use serde_json::Value;

use crate::client::McpClient;
use crate::control::Control;
use crate::profile::{IdMap, Profile};
use crate::stdio::StdioPool;

/// The published dataset, built in so the binary works anywhere.
pub const EMBEDDED_DATASET: &str = include_str!("../../fixtures/dataset.json");

/// Why a `@needs-http` scenario is skipped over stdio.
pub const NEEDS_HTTP: &str = "needs HTTP transport";
/// Why a `@needs-stdio` scenario is skipped over HTTP. Such a scenario checks the stdio half of
/// a clause whose HTTP half has scenarios of its own: over HTTP it does not make its clause
/// skipped (see `report::verdict`). The converse does not hold: a clause with a skipped
/// `@needs-http` scenario stays skipped over stdio.
pub const NEEDS_STDIO: &str = "needs stdio transport";

/// Why a `@needs-error-reports` scenario is skipped: the profile does not say the server reports
/// its errors to the suite.
pub const NEEDS_ERROR_REPORTS: &str = "needs error reports (profile: error_reports)";

/// What the server under test offers beyond the contract; scenarios needing an absent one are
/// skipped, never passed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Capabilities {
    pub control_api: bool,
    pub server_log: bool,
    /// The server reports its errors to the suite (`error_reports` in the profile).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error_reports: bool,
    /// What `GET {control}` listed.
    pub control_features: Vec<String>,
    /// The server is reached over stdio: scenarios tagged `@needs-http` are skipped, those
    /// tagged `@needs-stdio` run (and are skipped over HTTP).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stdio: bool,
}

impl Capabilities {
    /// Why a scenario with these tags cannot run here, if it cannot. `@needs-control-api` needs
    /// the control API; `@needs-control-<capability>` (e.g. `@needs-control-orders`) needs it to
    /// list that capability; `@needs-server-log` needs the server's log; `@needs-error-reports`
    /// needs its error reports sent to the suite (`error_reports`); `@needs-http` needs the
    /// Streamable HTTP transport (statuses, headers, raw bodies), `@needs-stdio` the stdio one;
    /// `@needs-shared-state` needs every persona to reach one server state (over stdio each
    /// persona has its own process: a write or a race of one is unseen by the others).
    pub fn skip_reason<'a>(&self, tags: impl IntoIterator<Item = &'a String>) -> Option<String> {
        for tag in tags {
            if tag == "needs-http" && self.stdio {
                return Some(NEEDS_HTTP.to_owned());
            }
            if tag == "needs-stdio" && !self.stdio {
                return Some(NEEDS_STDIO.to_owned());
            }
            if tag == "needs-shared-state" && self.stdio {
                return Some("needs one server state across personas".to_owned());
            }
            if tag == "needs-server-log" && !self.server_log {
                return Some("needs server log".to_owned());
            }
            if tag == "needs-error-reports" && !self.error_reports {
                return Some(NEEDS_ERROR_REPORTS.to_owned());
            }
            let Some(cap) = tag.strip_prefix("needs-control-") else { continue };
            if !self.control_api {
                return Some("needs control API".to_owned());
            }
            if cap != "api" && !self.control_features.iter().any(|f| f == cap) {
                return Some(format!("needs control API capability `{cap}`"));
            }
        }
        None
    }
}

/// The tools the server itself listed, with their output schemas compiled (PROTO-4 validates
/// against what the server published, not against the contract's copy).
#[derive(Debug, Default)]
pub struct Published {
    pub tools: Vec<Value>,
    pub output_validators: HashMap<String, Result<Arc<OutputValidator>, String>>,
    /// Each tool's published inputSchema, compiled: at the seed level a server is held to the
    /// input schema it publishes (an input bound of the contract's that it does not state is ext).
    pub input_validators: HashMap<String, Result<Arc<Validator>, String>>,
    /// Why the list is empty, when tools/list failed at start.
    pub problem: Option<String>,
}

/// A tool's published output schema, and its `oneOf` branches apart: "fails `oneOf`" says
/// nothing, the closest branch's failures say what is wrong.
#[derive(Debug)]
pub struct OutputValidator {
    whole: Validator,
    /// Each `oneOf` branch, flagged when it describes the error envelope (`data.error`).
    branches: Vec<(bool, Validator)>,
}

impl OutputValidator {
    pub fn new(schema: &Value) -> Result<OutputValidator, String> {
        let whole = Validator::new(schema)?;
        let branches = schema
            .get("oneOf")
            .and_then(Value::as_array)
            .map(|bs| {
                bs.iter()
                    .filter_map(|b| {
                        let is_error = b.pointer("/properties/data/properties/error").is_some();
                        Validator::new(b).ok().map(|v| (is_error, v))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(OutputValidator { whole, branches })
    }

    /// Empty when `instance` is valid; else the failures against the branch it meant to be
    /// (the error envelope if it has `data.error`, the success one otherwise).
    pub fn failures(&self, instance: &Value) -> Vec<String> {
        if self.whole.is_valid(instance) {
            return Vec::new();
        }
        let is_error = instance.pointer("/data/error").is_some();
        self.branches
            .iter()
            .filter(|(e, _)| *e == is_error)
            .map(|(_, b)| b.failures(instance))
            .find(|f| !f.is_empty())
            .unwrap_or_else(|| self.whole.failures(instance))
    }
}

impl Published {
    pub fn new(tools: Vec<Value>) -> Published {
        let output_validators = tools
            .iter()
            .filter_map(|t| {
                let name = t.get("name")?.as_str()?.to_owned();
                let schema = t.get("outputSchema")?;
                Some((name, OutputValidator::new(schema).map(Arc::new)))
            })
            .collect();
        let input_validators = tools
            .iter()
            .filter_map(|t| {
                let name = t.get("name")?.as_str()?.to_owned();
                let schema = t.get("inputSchema")?;
                Some((name, Validator::new(schema).map(Arc::new)))
            })
            .collect();
        Published { tools, output_validators, input_validators, problem: None }
    }

    /// Whether the server's own published input schema of `tool` refuses `args` (`None`: it
    /// published none, or one that does not compile).
    pub fn refuses(&self, tool: &str, args: &Value) -> Option<bool> {
        match self.input_validators.get(tool)? {
            Ok(v) => Some(!v.is_valid(args)),
            Err(_) => None,
        }
    }
}

#[derive(Debug)]
pub struct RunContext {
    pub profile: Profile,
    /// How this run judges and when it stops early (flags, not profile settings).
    pub options: RunOptions,
    /// The endpoint, or `stdio: <command>`.
    pub endpoint: String,
    /// A deployment's endpoint and replicas, each client's requests to the next in turn
    /// (`Profile::route`); empty over stdio.
    pub route: Arc<[String]>,
    /// Over stdio: the command and one server process per persona.
    pub stdio: Option<StdioPool>,
    pub dataset: Dataset,
    pub id_map: IdMap,
    pub http: reqwest::Client,
    pub timeout: Duration,
    pub control: Option<Control>,
    /// The endpoint receiving the server's error reports, with `error_reports`.
    pub error_reports: Option<Arc<crate::error_reports::Capture>>,
    pub capabilities: Capabilities,
    pub published: Published,
    /// How many more runs the server's data is good for (orders a run moves forward, counted at
    /// start): "dataset: N runs left before re-seeding". `None` when not counted: the control API
    /// resets the state, the owner's token is missing, or the orders could not be listed.
    pub runs_left: Option<usize>,
    /// Initialized sessions that finished scenarios gave back, by persona: the next scenario of
    /// that persona takes one instead of paying an initialize round trip again.
    pub sessions: std::sync::Mutex<HashMap<String, Vec<McpClient>>>,
    /// The server answered `initialize` in a way no MCP client can read: a verdict on the
    /// clause it breaks, not a run that could not start (exit code 1, reports written).
    pub broken_protocol: Option<ProtocolFault>,
    /// The time the run spent waiting for rate windows (reported).
    pub rate_waits: crate::schedule::Waits,
    /// Every `tools/call` of the run, for the rate bursts' verdicts.
    pub calls: Arc<crate::schedule::CallLog>,
    /// The differential oracle: the reference to compare with, or why nothing is compared.
    pub oracle: crate::oracle::Oracle,
    /// Each persona's records of other tenants, as the server names them (the judge's
    /// tenancy rules, `rules::records`).
    pub tenancy: crate::rules::records::Tenancy,
}

/// A protocol fault found before any scenario runs: the clause and the exchange that shows it.
#[derive(Debug, Clone)]
pub struct ProtocolFault {
    pub clause: &'static str,
    pub detail: String,
}

/// Flags of one run that are not part of the target's profile.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// `--require-all`: a skipped or unrun clause also fails the certificate.
    pub require_all: bool,
    /// `--run-anyway`: every scenario runs even against a server that is not a Chataigne server.
    pub run_anyway: bool,
}

/// Idle sessions kept per persona: about as many as scenarios run at once.
const IDLE_SESSIONS: usize = 16;

impl RunContext {
    /// An initialized session of `persona` a finished scenario gave back, if any.
    pub fn take_session(&self, persona: &str) -> Option<McpClient> {
        let client = self.sessions.lock().unwrap_or_else(|e| e.into_inner()).get_mut(persona)?.pop()?;
        // Each scenario's calls meet a deployment's replicas in the same order, whatever ran before.
        Some(client.restart_route())
    }

    /// Keep `client` for the next scenario of `persona` (dropped beyond [`IDLE_SESSIONS`]).
    pub fn give_back(&self, persona: String, client: McpClient) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let idle = sessions.entry(persona).or_default();
        if idle.len() < IDLE_SESSIONS {
            idle.push(client);
        }
    }

    /// A client for `persona`, not yet initialized; `None` if the profile has no token for it.
    pub fn client(&self, persona: &str) -> Option<McpClient> {
        let token = self.profile.tokens.get(persona)?;
        if let Some(pool) = &self.stdio {
            // Every session of a persona talks to the persona's one process.
            let conn = pool.connection(persona, token);
            let client = McpClient::stdio(conn, &self.endpoint, Some(persona.to_owned()), self.timeout);
            return Some(client.with_log(Arc::clone(&self.calls), crate::rules::earlier_answer));
        }
        Some(self.anonymous_client(Some(token.clone()), Some(persona.to_owned())))
    }

    /// A client with any token (or none). Over stdio it gets a server process of its own,
    /// started with that token (or without the variable), killed when the client drops.
    pub fn anonymous_client(&self, token: Option<String>, persona: Option<String>) -> McpClient {
        let client = match &self.stdio {
            None => McpClient::new(self.http.clone(), &self.endpoint, token, persona, self.timeout)
                .with_route(Arc::clone(&self.route)),
            Some(pool) => {
                let conn = pool.command.spawn(token.as_deref());
                McpClient::stdio(conn, &self.endpoint, persona, self.timeout)
            }
        };
        client.with_log(Arc::clone(&self.calls), crate::rules::earlier_answer)
    }
}

pub fn load_dataset(path: Option<&Path>) -> anyhow::Result<Dataset> {
    match path {
        None => Dataset::from_json(EMBEDDED_DATASET).context("the built-in dataset does not parse"),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read dataset {}", path.display()))?;
            Dataset::from_json(&text).with_context(|| format!("bad dataset {}", path.display()))
        }
    }
}

/// Idle connections the run keeps per host between calls.
pub const MAX_IDLE_CONNECTIONS: usize = 32;

pub fn http_client(timeout: Duration) -> anyhow::Result<reqwest::Client> {
    // Calls time out through `tokio::time::timeout` at `timeout`, with one message for every
    // phase; reqwest's own limit is only a backstop.
    reqwest::Client::builder()
        .timeout(timeout + Duration::from_secs(1))
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        // Idle connections are dropped before a server closes them (the reference does after
        // 30 s, nginx after 75 s), so no call races a server closing its connection.
        .pool_idle_timeout(Duration::from_secs(5))
        // And few are kept: a server's connection cap (the reference's 512, a proxy's worker
        // connections) counts idle ones too, and a burst needs its connections open at once.
        .pool_max_idle_per_host(MAX_IDLE_CONNECTIONS)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("cannot build the HTTP client")
}
