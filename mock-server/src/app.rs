//! The application state every transport shares, and its configuration.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use chataigne_contract::ToolName;
use chataigne_contract::dataset::Dataset;
use chataigne_contract::schema::Validator;

use crate::auth::{Issuer, Tokens};
use crate::dev::defects::{Defect, Defects};
use crate::dev::faults::{Deadlines, Fault, Faults};
use crate::dev::variants::{Variant, Variants};
use crate::state::clock::Clock;
use crate::state::idempotency::{IdempotencyStore, KeyHasher, MemoryStore, StoreError};
use crate::state::ratelimit::RateLimiter;
use crate::state::redis::Redis;
use crate::state::store::Store;
use crate::tools::cursor::CursorCodec;

/// The published dataset, embedded so the binary runs anywhere.
pub const EMBEDDED_DATASET: &str = include_str!("../../fixtures/dataset.json");

#[derive(Debug, Clone)]
pub struct Config {
    pub dataset: Dataset,
    /// `Some`: the control API is served under `/control`, refused without this secret.
    pub control_secret: Option<String>,
    pub defects: Vec<Defect>,
    /// Allowed variants: behaviours the seed allows but the reference does not pick
    /// (docs/VARIANTS.md); empty by default.
    pub variants: Vec<Variant>,
    pub deadlines: Deadlines,
    /// Browser origins allowed besides loopback ones (PROTO-5).
    pub allowed_origins: Vec<String>,
    /// `Host` values allowed besides loopback ones; `None` disables the check (behind a proxy).
    pub allowed_hosts: Option<Vec<String>>,
    /// Public base URL (e.g. `https://mcp.example.com`): the canonical resource is this plus
    /// `/mcp` (RFC 8707), used for the resource metadata (RFC 9728), the audience check and
    /// minting, never the request's `Host`. `None`: `http://<listen address>` when served by
    /// [`crate::run`], `http://localhost` otherwise.
    pub public_url: Option<String>,
    /// Live idempotency records kept in memory at most (`MemoryStore`; not with Redis).
    pub idempotency_capacity: usize,
    /// Limits of the development authorization server (registered clients, registrations).
    pub oauth: crate::dev::oauth::OAuthLimits,
    /// Secret for cursor MACs and key hashes. `None`: on Redis, the one the replicas keep there
    /// (`<namespace>:secret`, stored by the first); in memory, a random one.
    pub secret: Option<String>,
    /// Serve the development OAuth authorization server (`/oauth/*`).
    pub auth_server: bool,
    /// Keep the data's changes, the clock, idempotency keys and rate windows in this Redis
    /// instead of memory, shared by every replica on it (README, "Replicas on Redis").
    pub redis_url: Option<String>,
    /// `redis_url` lists nodes of a Redis Cluster, comma-separated (`--redis-cluster`).
    pub redis_cluster: bool,
    /// Prefix of this deployment's Redis keys: replicas share it.
    pub redis_namespace: String,
    /// Generated orders added to `rst_large` at start and on reset, for benchmarks
    /// (`store::SYNTHETIC_RESTAURANT`, docs/BENCHMARKS.md); 0 by default.
    pub synthetic_orders: usize,
    /// Report internal errors to this Sentry DSN (`crate::reporting`); off when `None`.
    pub sentry_dsn: Option<String>,
    /// Caps and timeouts of the HTTP listener: connections, header and body reads, shutdown.
    pub serve: crate::transport::serve::ServeLimits,
}

impl Config {
    pub fn new(dataset: Dataset) -> Config {
        Config {
            dataset,
            control_secret: None,
            defects: Vec::new(),
            variants: Vec::new(),
            deadlines: Deadlines::default(),
            allowed_origins: Vec::new(),
            allowed_hosts: Some(Vec::new()),
            public_url: None,
            idempotency_capacity: crate::state::idempotency::DEFAULT_CAPACITY,
            oauth: crate::dev::oauth::OAuthLimits::default(),
            secret: None,
            auth_server: true,
            redis_url: None,
            redis_cluster: false,
            redis_namespace: "chataigne".into(),
            synthetic_orders: 0,
            sentry_dsn: None,
            serve: crate::transport::serve::ServeLimits::default(),
        }
    }

    /// The embedded dataset.
    pub fn embedded() -> Config {
        Config::new(Dataset::from_json(EMBEDDED_DATASET).expect("the embedded dataset parses"))
    }

    /// The embedded dataset with the control API on: what tests and `--embedded` runs use.
    pub fn for_tests(control_secret: &str) -> Config {
        Config { control_secret: Some(control_secret.to_owned()), ..Config::embedded() }
    }

    /// Refuses variants that cannot run together: two rate variants, or one with Redis.
    pub fn check_variants(&self) -> anyhow::Result<()> {
        crate::dev::variants::check(&self.variants, self.redis_url.is_some()).map_err(anyhow::Error::msg)
    }
}

#[derive(Debug)]
pub struct App {
    pub config: Config,
    pub store: Store,
    /// Shared with the development authorization server's routes.
    pub clock: Arc<Clock>,
    pub idempotency: Arc<dyn IdempotencyStore>,
    pub keys: KeyHasher,
    pub rate: Arc<dyn RateLimiter>,
    pub cursors: CursorCodec,
    pub faults: Faults,
    pub deadlines: RwLock<Deadlines>,
    pub tokens: Tokens,
    /// The canonical base URL (no trailing `/`): see [`Config::public_url`].
    pub public_url: String,
    /// The development authorization server's state: its routes (`crate::router`) and the
    /// reset reach it here; the transport only through [`App::issuer`].
    pub oauth: Arc<crate::dev::oauth::OAuth>,
    pub defects: Defects,
    pub variants: Variants,
    pub reporter: crate::reporting::Reporter,
    inputs: HashMap<ToolName, Validator>,
    /// The version of the shared control settings `faults` and `deadlines` hold (Redis), and the
    /// lock under which they are replaced.
    control_seen: std::sync::Mutex<(String, u64)>,
}

impl App {
    /// The server as configured; with `redis_url`, Redis is connected first, and a Redis that
    /// does not answer is an error (docs/DECISIONS.md, "Shared state").
    pub async fn start(config: Config) -> anyhow::Result<App> {
        let (redis, shared_secret) = match &config.redis_url {
            Some(url) => {
                config.check_variants()?;
                let redis =
                    Arc::new(Redis::connect(url, config.redis_cluster, &config.redis_namespace).await?);
                redis.beat().await?;
                redis.beat_forever();
                // Without --secret, replicas agree on the one kept in Redis: each drawing its own
                // would hash one key two ways (and run it twice) and refuse each other's cursors.
                let shared = match &config.secret {
                    Some(_) => None,
                    None => {
                        let secret = redis.shared_secret().await?;
                        tracing::info!(
                            "no --secret: cursors and idempotency key hashes use the deployment's secret \
                             kept in Redis at {}:secret, shared by every replica on it",
                            config.redis_namespace
                        );
                        Some(secret)
                    }
                };
                (Some(redis), shared)
            }
            None => (None, None),
        };
        let app = App::build(config, redis, shared_secret)?;
        // The data as the replicas made it so far, before serving (a long log in several rounds).
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while app.store.catch_up().await.is_err() {
            if std::time::Instant::now() > until {
                anyhow::bail!("Redis (--redis) did not give the data's changes within 30 s");
            }
            // Not a spin while Redis is being left alone (each failed round fails at once then).
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Ok(app)
    }

    /// An in-memory server; one on Redis is built by [`App::start`], which connects first.
    pub fn new(config: Config) -> anyhow::Result<App> {
        App::build(config, None, None)
    }

    /// `shared_secret`: the one kept in Redis, used when `config.secret` is `None`.
    fn build(
        config: Config,
        redis: Option<Arc<Redis>>,
        shared_secret: Option<String>,
    ) -> anyhow::Result<App> {
        config.check_variants()?;
        // An empty secret would open the control API to an empty header.
        if config.control_secret.as_deref().is_some_and(|s| s.trim().is_empty()) {
            anyhow::bail!("the control API needs a non-empty secret");
        }
        let variants = Variants::new(&config.variants);
        let secret = match (&config.secret, shared_secret) {
            (Some(s), _) => s.as_bytes().to_vec(),
            (None, Some(shared)) => shared.into_bytes(),
            (None, None) => rand::random::<[u8; 32]>().to_vec(),
        };
        let defects = Defects::new(&config.defects);
        let inputs = ToolName::ALL
            .iter()
            .map(|t| {
                let published = variants.input_schema(*t, defects.input_schema(*t));
                let schema = variants.validated_schema(defects.validated_schema(published));
                Ok((*t, Validator::new(&schema).map_err(anyhow::Error::msg)?))
            })
            .collect::<anyhow::Result<_>>()?;
        let clock = Arc::new(Clock::default());
        let store = match &redis {
            Some(redis) => {
                Store::shared(&config.dataset, config.synthetic_orders, redis.clone(), clock.clone())
            }
            None => Store::new(&config.dataset, config.synthetic_orders),
        };
        let (idempotency, rate): (Arc<dyn IdempotencyStore>, Arc<dyn RateLimiter>) = match redis {
            Some(redis) => (redis.clone(), redis),
            None if config.redis_url.is_some() => anyhow::bail!("a server on Redis is built by App::start"),
            None => {
                (Arc::new(MemoryStore::with_capacity(config.idempotency_capacity)), variants.memory_limiter())
            }
        };
        let public_url = canonical_base(config.public_url.as_deref().unwrap_or("http://localhost"))?;
        let reporter =
            crate::reporting::Reporter::new(config.sentry_dsn.as_deref(), defects.reports_arguments())?;
        Ok(App {
            store,
            clock,
            idempotency,
            keys: KeyHasher::new(&secret),
            rate,
            cursors: CursorCodec::new(&secret),
            faults: Faults::default(),
            deadlines: RwLock::new(config.deadlines),
            tokens: Tokens::from_dataset(&config.dataset, defects.has(Defect::AudienceUnchecked)),
            public_url,
            oauth: Arc::new(crate::dev::oauth::OAuth::new(config.oauth)),
            defects,
            variants,
            reporter,
            inputs,
            control_seen: std::sync::Mutex::new((String::new(), 0)),
            config,
        })
    }

    /// Who issued the bearer tokens this server accepts besides its static ones.
    pub fn issuer(&self) -> &dyn Issuer {
        &*self.oauth
    }

    /// The validator of the very schema `tools/list` publishes.
    pub fn input_validator(&self, tool: ToolName) -> &Validator {
        &self.inputs[&tool]
    }

    /// The input schema `tools/list` publishes and calls are validated against: the contract's,
    /// as the defects and variants switched on change it.
    pub fn input_schema(&self, tool: ToolName) -> serde_json::Value {
        self.variants.input_schema(tool, self.defects.input_schema(tool))
    }

    /// This server's resource identifier (RFC 8707): tokens are minted for it and only for it.
    pub fn resource_url(&self) -> String {
        format!("{}/mcp", self.public_url)
    }

    pub fn deadlines(&self) -> Deadlines {
        *self.deadlines.read().unwrap_or_else(|e| e.into_inner())
    }

    /// On Redis, the faults and deadlines the control API last set through any replica, once the
    /// store caught up with them; nothing to do when they did not change.
    pub fn sync_control(&self) {
        let mut seen = self.control_seen.lock().unwrap_or_else(|e| e.into_inner());
        let (held, fields) = {
            let data = self.store.read();
            let held = (data.position.lineage.clone(), data.position.control_version);
            // A version already applied (in the lineage it belongs to: a Redis that lost its
            // data counts its versions again): nothing to do, nothing copied.
            if held.0 == seen.0 && held.1 <= seen.1 {
                return;
            }
            (held, data.control.clone())
        };
        let (mut faults, mut deadlines) = (Vec::new(), self.config.deadlines);
        for (field, value) in &fields {
            let ms = value.parse().ok();
            match (field.strip_prefix("fault:"), field.as_str(), ms) {
                (Some(_), _, _) => faults.extend(serde_json::from_str::<Fault>(value).ok()),
                (None, "read_ms", Some(ms)) => deadlines.read_ms = ms,
                (None, "analytics_ms", Some(ms)) => deadlines.analytics_ms = ms,
                (None, "write_ms", Some(ms)) => deadlines.write_ms = ms,
                // Written by another version of the server: not this one's to apply.
                _ => {}
            }
        }
        self.faults.replace(faults);
        *self.deadlines.write().unwrap_or_else(|e| e.into_inner()) = deadlines;
        *seen = held;
    }

    /// Injects a fault (replacing that tool's): here, and on Redis for every replica. Err: Redis
    /// did not answer, nothing changed.
    pub async fn set_fault(&self, fault: Fault) -> Result<(), StoreError> {
        let json = serde_json::to_string(&fault).map_err(|_| StoreError)?;
        self.store.set_control(false, &[(format!("fault:{}", fault.tool), json)]).await?;
        self.faults.set(fault);
        Ok(())
    }

    /// Removes every fault: here, and on Redis for every replica.
    pub async fn clear_faults(&self) -> Result<(), StoreError> {
        self.store.set_control(true, &[]).await?;
        self.faults.clear();
        Ok(())
    }

    /// Changes the deadlines given (the others stay): here, and on Redis for every replica.
    pub async fn set_deadlines(
        &self,
        read_ms: Option<u64>,
        analytics_ms: Option<u64>,
        write_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        let given = [("read_ms", read_ms), ("analytics_ms", analytics_ms), ("write_ms", write_ms)];
        let fields: Vec<_> =
            given.iter().filter_map(|(name, ms)| ms.map(|ms| ((*name).to_owned(), ms.to_string()))).collect();
        self.store.set_control(false, &fields).await?;
        let mut d = self.deadlines.write().unwrap_or_else(|e| e.into_inner());
        d.read_ms = read_ms.unwrap_or(d.read_ms);
        d.analytics_ms = analytics_ms.unwrap_or(d.analytics_ms);
        d.write_ms = write_ms.unwrap_or(d.write_ms);
        Ok(())
    }

    /// Back to the state at start: data, keys, windows, faults, deadlines, clock. On Redis the
    /// data and the clock go back for every replica; Err: Redis did not answer (the data is as
    /// it was; this replica's faults, deadlines and windows are reset all the same).
    pub async fn reset(&self) -> Result<(), StoreError> {
        let data = self.store.reset().await;
        // A shared store that is down keeps its keys; the rest of the reset still applies.
        let _ = self.idempotency.clear().await;
        let _ = self.rate.clear().await;
        self.faults.clear();
        *self.deadlines.write().unwrap_or_else(|e| e.into_inner()) = self.config.deadlines;
        self.oauth.clear_windows();
        if data.is_ok() {
            // What a defect deleted is back with the data.
            self.defects.data_reset();
            self.clock.reset();
        }
        data
    }
}

/// `--public-url` checked: an absolute http(s) URL with a host, without user info, query or
/// fragment; in its normal form (`url`: host lower-cased, default port dropped), trailing `/` cut.
pub fn canonical_base(text: &str) -> anyhow::Result<String> {
    let bad = || {
        anyhow::anyhow!("--public-url must be an absolute http(s) URL without query or fragment: {text:?}")
    };
    let raw = text.trim();
    // The URL standard forgives what a person most likely mistyped (`https:///x` names host
    // `x`, blanks and backslashes are dropped or turned around): refused here instead.
    let authority = raw.split_once("://").map(|(_, rest)| rest);
    if authority.is_none_or(|a| a.starts_with('/'))
        || raw.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\\'))
    {
        return Err(bad());
    }
    let url = url::Url::parse(raw).map_err(|_| bad())?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none();
    if !plain {
        return Err(bad());
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}
