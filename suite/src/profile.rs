//! The profile: how the suite reaches a server under test (endpoint or stdio command, persona
//! tokens, ID map, control API, server log), read from TOML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::stdio::StdioCommand;

/// The commented example `init` writes; the same text as `ci/profile.example.toml`.
pub const EXAMPLE: &str = include_str!("../../ci/profile.example.toml");

/// Default wait for one answer.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub endpoint: Option<String>,
    /// The replicas of a deployment (their own MCP URLs), besides `endpoint` (which may be their
    /// load balancer): each client of the run sends its requests in turn to the endpoint and to
    /// every replica, so what one call leaves (a write, a key, a cursor, a version, a window, a
    /// revocation) is met by the next through another replica, and every exchange names its
    /// URL. Empty: one server.
    #[serde(default)]
    pub replicas: Vec<String>,
    pub stdio_command: Option<Vec<String>>,
    /// The environment variable through which a stdio server gets the persona's token.
    pub stdio_token_env: Option<String>,
    /// Where the stdio server's stderr is appended (otherwise only its last lines are kept, for
    /// failure messages).
    pub stdio_stderr: Option<PathBuf>,
    #[serde(default)]
    pub tokens: BTreeMap<String, String>,
    #[serde(default)]
    pub id_map: BTreeMap<String, String>,
    pub control: Option<ControlConfig>,
    pub server_log: Option<PathBuf>,
    /// `"sentry-capture"`: the suite receives the server's error reports on a Sentry ingestion
    /// endpoint of its own (`crate::error_reports`), and proves SEC-1 and IDEM-8 over them too.
    pub error_reports: Option<crate::error_reports::ErrorReports>,
    /// Where that endpoint listens (default `127.0.0.1:9412`; `0.0.0.0:PORT` for a server on
    /// another machine; port 0 for any free port, when the suite starts the server itself).
    pub error_reports_listen: Option<std::net::SocketAddr>,
    /// The endpoint once started (an embedded run starts it before its server, to give the
    /// server its DSN); never read from the file.
    #[serde(skip)]
    pub capture: Option<std::sync::Arc<crate::error_reports::Capture>>,
    pub dataset: Option<PathBuf>,
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// What the exit status certifies: `seed` (default) or `full` (also this project's
    /// extensions and the reference server's choices).
    #[serde(default)]
    pub level: Level,
    /// The whole run's limit in seconds: past it nothing more is sent, the scenarios left are
    /// reported skipped and the run ends with exit code 2 (reports written).
    #[serde(default = "default_deadline")]
    pub deadline_s: u64,
}

/// 20 minutes: a full run takes seconds next to the server and under a minute far from it, plus
/// at most two waits for a rate window an earlier run filled.
pub const DEFAULT_DEADLINE_S: u64 = 1200;

fn default_deadline() -> u64 {
    DEFAULT_DEADLINE_S
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlConfig {
    pub url: String,
    pub secret: String,
}

impl Profile {
    pub fn load(path: &Path) -> anyhow::Result<Profile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read profile {}", path.display()))?;
        Profile::parse(&text).with_context(|| format!("bad profile {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Profile> {
        // toml's message names the line and column; keep it on one line for the exit-2 reason.
        let mut profile: Profile =
            toml::from_str(text).map_err(|e| anyhow::anyhow!(e.to_string().replace('\n', " ")))?;
        for (persona, token) in &mut profile.tokens {
            *token = resolve_secret(token).with_context(|| format!("token of {persona}"))?;
        }
        if let Some(control) = &mut profile.control {
            control.secret = resolve_secret(&control.secret).context("control.secret")?;
        }
        Ok(profile)
    }

    /// The checks that make a run meaningless if they fail (exit code 2).
    pub fn validate(&self) -> anyhow::Result<()> {
        match (&self.endpoint, &self.stdio_command) {
            (Some(_), Some(_)) => bail!("give either `endpoint` or `stdio_command`, not both"),
            (None, None) => {
                bail!("no endpoint: set `endpoint` (or `stdio_command`) in the profile or pass --endpoint")
            }
            (Some(endpoint), None) => check_url(endpoint).context("endpoint")?,
            (None, Some(argv)) => {
                if argv.first().is_none_or(|p| p.trim().is_empty()) {
                    bail!("stdio_command is empty: give the program and its arguments");
                }
                if self.stdio_token_env.as_deref().is_none_or(|v| v.trim().is_empty()) {
                    bail!(
                        "stdio_command needs `stdio_token_env`: the environment variable that carries each persona's token"
                    );
                }
            }
        }
        if self.tokens.is_empty() {
            bail!("no persona token: the profile needs a [tokens] table (see `init`)");
        }
        // An empty token (often `env:NAME` with NAME set to "") would surface only as "every
        // token refused": name the persona instead.
        let empty: Vec<&str> =
            self.tokens.iter().filter(|(_, t)| t.trim().is_empty()).map(|(p, _)| p.as_str()).collect();
        if !empty.is_empty() {
            bail!(
                "the token of {} is empty: set it in [tokens] (or the environment variable its `env:` names)",
                empty.join(", ")
            );
        }
        if !self.replicas.is_empty() && self.stdio_command.is_some() {
            bail!("`replicas` are Streamable HTTP endpoints: not with `stdio_command`");
        }
        for (i, replica) in self.replicas.iter().enumerate() {
            check_url(replica).with_context(|| format!("replicas[{i}]"))?;
        }
        if let Some(control) = &self.control {
            check_url(&control.url).context("control.url")?;
        }
        if self.timeout_ms == 0 {
            bail!("timeout_ms must be positive");
        }
        if self.deadline_s == 0 {
            bail!("deadline_s must be positive");
        }
        Ok(())
    }

    /// SEC-1 and IDEM-8 read the server's log: a wrong path is a setup problem, not a server
    /// failure. Checked once the server runs (a stdio server creates its log when it starts).
    pub fn check_server_log(&self) -> anyhow::Result<()> {
        if let Some(log) = &self.server_log {
            std::fs::File::open(log).with_context(|| {
                format!("server_log {} cannot be read: fix the path, or remove `server_log`", log.display())
            })?;
        }
        Ok(())
    }

    pub fn endpoint(&self) -> &str {
        self.endpoint.as_deref().unwrap_or_default()
    }

    /// The URLs a client's requests go to in turn: the endpoint, then each replica it is not.
    pub fn route(&self) -> Vec<String> {
        let mut route = vec![self.endpoint().to_owned()];
        for replica in &self.replicas {
            if !route.contains(replica) {
                route.push(replica.clone());
            }
        }
        route
    }

    /// The stdio command, when the server is reached over stdio.
    pub fn stdio(&self) -> Option<StdioCommand> {
        let argv = self.stdio_command.clone()?;
        Some(StdioCommand {
            argv,
            token_env: self.stdio_token_env.clone().unwrap_or_default(),
            stderr: self.stdio_stderr.clone(),
            sentry_dsn: self.capture.as_ref().map(|c| c.dsn()),
        })
    }

    /// With `error_reports`: the capture endpoint, started now unless it already runs.
    pub fn start_error_reports(
        &mut self,
    ) -> anyhow::Result<Option<std::sync::Arc<crate::error_reports::Capture>>> {
        if self.error_reports.is_none() {
            return Ok(None);
        }
        if self.capture.is_none() {
            let listen = match self.error_reports_listen {
                Some(addr) => addr,
                None => crate::error_reports::DEFAULT_LISTEN.parse()?,
            };
            let capture = crate::error_reports::Capture::start(listen)
                .context("error_reports: fix `error_reports_listen`, or remove `error_reports`")?;
            self.capture = Some(std::sync::Arc::new(capture));
        }
        Ok(self.capture.clone())
    }

    pub fn id_map(&self) -> IdMap {
        IdMap::new(self.id_map.clone())
    }
}

/// `env:NAME` reads the secret from the environment, so CI keeps tokens out of the profile.
fn resolve_secret(value: &str) -> anyhow::Result<String> {
    match value.strip_prefix("env:") {
        None => Ok(value.to_owned()),
        Some(name) => std::env::var(name).with_context(|| format!("environment variable {name} is not set")),
    }
}

fn check_url(url: &str) -> anyhow::Result<()> {
    let parsed: reqwest::Url = url.parse().with_context(|| format!("`{url}` is not a URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        bail!("`{url}` is not an http(s) URL");
    }
    Ok(())
}

/// Dataset IDs ↔ the server's IDs. Scenarios speak dataset IDs; what goes on the wire is mapped
/// out, what comes back is mapped in before any comparison.
#[derive(Debug, Clone, Default)]
pub struct IdMap {
    out: BTreeMap<String, String>,
    back: BTreeMap<String, String>,
}

impl IdMap {
    pub fn new(out: BTreeMap<String, String>) -> IdMap {
        let back = out.iter().map(|(k, v)| (v.clone(), k.clone())).collect();
        IdMap { out, back }
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    pub fn to_server(&self, id: &str) -> String {
        self.out.get(id).cloned().unwrap_or_else(|| id.to_owned())
    }

    pub fn to_dataset(&self, id: &str) -> String {
        self.back.get(id).cloned().unwrap_or_else(|| id.to_owned())
    }

    /// Every string of `value` that is a dataset ID, replaced by the server's.
    pub fn outbound(&self, value: &Value) -> Value {
        map_strings(value, &self.out)
    }

    /// Every string of `value` that is a server ID, replaced by the dataset's.
    pub fn inbound(&self, value: &Value) -> Value {
        map_strings(value, &self.back)
    }
}

fn map_strings(value: &Value, map: &BTreeMap<String, String>) -> Value {
    if map.is_empty() {
        return value.clone();
    }
    match value {
        Value::String(s) => Value::String(map.get(s).cloned().unwrap_or_else(|| s.clone())),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, map)).collect()),
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(k, v)| (k.clone(), map_strings(v, map))).collect())
        }
        other => other.clone(),
    }
}

/// What a run certifies. `Seed`: what the seed contract requires; a server that makes another
/// choice the seed allows passes. `Full`: also this project's extensions and the reference
/// server's choices (the reference server passes it).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    #[default]
    Seed,
    Full,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Seed => "seed",
            Level::Full => "full",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_parses_and_validates() {
        let profile = Profile::parse(EXAMPLE).unwrap();
        profile.validate().unwrap();
        assert_eq!(profile.tokens.len(), 9);
        assert_eq!(profile.timeout_ms, DEFAULT_TIMEOUT_MS);
    }

    #[test]
    fn bad_profiles_are_refused() {
        let check = |text: &str, needle: &str| {
            let err = Profile::parse(text).and_then(|p| p.validate()).unwrap_err();
            let msg = format!("{err:#}");
            assert!(msg.contains(needle), "{msg}");
        };
        check(
            "endpoint = \"http://x/mcp\"\nreplicas = [\"ftp://y/mcp\"]\n[tokens]\nowner = \"t\"",
            "replicas[0]",
        );
        check(
            "stdio_command = [\"x\"]\nstdio_token_env = \"T\"\nreplicas = [\"http://y/mcp\"]\n[tokens]\nowner = \"t\"",
            "not with `stdio_command`",
        );
        check("endpoint = 3", "invalid type");
        check("endpont = \"http://x/mcp\"", "unknown field");
        check("[tokens]\nowner = \"t\"", "no endpoint");
        check("endpoint = \"ftp://x/mcp\"\n[tokens]\nowner = \"t\"", "not an http(s) URL");
        check("endpoint = \"http://x/mcp\"", "no persona token");
        check("stdio_command = [\"x\"]\n[tokens]\nowner = \"t\"", "needs `stdio_token_env`");
        check(
            "stdio_command = []\nstdio_token_env = \"T\"\n[tokens]\nowner = \"t\"",
            "stdio_command is empty",
        );
        check(
            "endpoint = \"http://x/mcp\"\nstdio_command = [\"x\"]\nstdio_token_env = \"T\"\n[tokens]\nowner = \"t\"",
            "not both",
        );
        check(
            "endpoint = \"http://x/mcp\"\n[tokens]\nowner = \"env:CHATAIGNE_UNSET_VAR\"",
            "CHATAIGNE_UNSET_VAR is not set",
        );
        check(
            "endpoint = \"http://x/mcp\"\n[tokens]\nowner = \"t\"\nviewer = \" \"",
            "the token of viewer is empty",
        );
        let profile =
            Profile::parse("endpoint = \"http://x/mcp\"\nserver_log = \"/nonexistent/chataigne.log\"\n[tokens]\nowner = \"t\"")
                .unwrap();
        let err = format!("{:#}", profile.check_server_log().unwrap_err());
        assert!(err.contains("server_log /nonexistent/chataigne.log cannot be read"), "{err}");
    }

    #[test]
    fn error_reports_start_the_capture_endpoint_once() {
        let base = "endpoint = \"http://x/mcp\"\n[tokens]\nowner = \"t\"";
        let mut off = Profile::parse(base).unwrap();
        assert!(off.start_error_reports().unwrap().is_none());
        let text =
            format!("error_reports = \"sentry-capture\"\nerror_reports_listen = \"127.0.0.1:0\"\n{base}");
        let mut on = Profile::parse(&text).unwrap();
        let capture = on.start_error_reports().unwrap().expect("started");
        let again = on.start_error_reports().unwrap().expect("still there");
        assert!(std::sync::Arc::ptr_eq(&capture, &again));
        assert_ne!(capture.addr().port(), 0);
        let err = Profile::parse(&format!("error_reports = \"datadog\"\n{base}")).unwrap_err();
        assert!(format!("{err:#}").contains("unknown variant"), "{err:#}");
    }

    #[test]
    fn stdio_profile_validates() {
        let profile = Profile::parse(
            "stdio_command = [\"chataigne-mock\", \"--stdio\"]\nstdio_token_env = \"CHATAIGNE_TOKEN\"\n[tokens]\nowner = \"t\"",
        )
        .unwrap();
        profile.validate().unwrap();
        let command = profile.stdio().unwrap();
        assert_eq!(command.label(), "stdio: chataigne-mock --stdio");
        assert_eq!(command.token_env, "CHATAIGNE_TOKEN");
    }

    #[test]
    fn id_map_goes_both_ways() {
        let map = IdMap::new([("rst_a".to_owned(), "R1".to_owned())].into());
        let sent = map.outbound(&serde_json::json!({"restaurant_id": "rst_a", "n": [1, "rst_a"]}));
        assert_eq!(sent, serde_json::json!({"restaurant_id": "R1", "n": [1, "R1"]}));
        assert_eq!(map.inbound(&sent)["restaurant_id"], "rst_a");
    }

    /// Each request goes to the next of the endpoint and the replicas it is not.
    #[test]
    fn the_route_is_the_endpoint_then_each_other_replica() {
        let profile = Profile::parse(
            "endpoint = \"http://lb/mcp\"\nreplicas = [\"http://a/mcp\", \"http://lb/mcp\", \"http://b/mcp\", \"http://a/mcp\"]\n[tokens]\nowner = \"t\"",
        )
        .unwrap();
        profile.validate().unwrap();
        assert_eq!(profile.route(), ["http://lb/mcp", "http://a/mcp", "http://b/mcp"]);
        let mut client = crate::client::McpClient::new(
            reqwest::Client::new(),
            "http://lb/mcp",
            None,
            None,
            std::time::Duration::from_secs(1),
        )
        .with_route(profile.route().into());
        let urls: Vec<String> = (0..4).map(|_| client.next_url()).collect();
        assert_eq!(urls, ["http://lb/mcp", "http://a/mcp", "http://b/mcp", "http://lb/mcp"]);
        let mut again = client.restart_route();
        assert_eq!(again.next_url(), "http://lb/mcp");
    }
}
