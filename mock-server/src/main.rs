//! `chataigne-mock`: flags, logging, then the library's `run` or `run_stdio`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use chataigne_contract::dataset::Dataset;
use clap::{Parser, Subcommand};
use mock_server::dev::faults::Deadlines;
use mock_server::logging::{self, Format};
use mock_server::transport::serve::ServeLimits;
use mock_server::{Config, Defect, Variant, auth};

#[derive(Parser)]
#[command(name = "chataigne-mock", version, about = "The Chataigne reference MCP server (in memory)")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Serve Streamable HTTP at http://ADDR/mcp.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Listen on a non-loopback address although the development tokens are public (anyone who
    /// reaches the server acts as any persona): behind a trusted proxy or on a private network.
    #[arg(long)]
    allow_public_bind: bool,
    /// Serve MCP over stdin/stdout instead; the token comes from CHATAIGNE_TOKEN.
    #[arg(long)]
    stdio: bool,
    /// Load this dataset instead of the embedded one (same format as fixtures/dataset.json).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Serve the control API under /control (reset, clock, faults, deadlines).
    #[arg(long)]
    control_api: bool,
    /// Secret the control API requires in `x-control-secret` (not empty). Without it,
    /// --control-api generates a random one and prints it once to stderr.
    #[arg(long, env = "CHATAIGNE_CONTROL_SECRET")]
    control_secret: Option<String>,
    /// Switch on a deliberate defect (see `chataigne-mock defects`); repeatable.
    #[arg(long = "defect", value_name = "NAME")]
    defects: Vec<String>,
    /// Switch on an allowed variant: a behaviour the seed allows but the reference does not pick
    /// (see `chataigne-mock variants`, docs/VARIANTS.md); repeatable. At most one rate variant,
    /// and none with --redis.
    #[arg(long = "variant", value_name = "NAME")]
    variants: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    log_format: Format,
    /// Append logs to this file instead of stderr.
    #[arg(long)]
    log_file: Option<PathBuf>,
    #[arg(long, default_value_t = 15_000)]
    read_deadline_ms: u64,
    #[arg(long, default_value_t = 30_000)]
    analytics_deadline_ms: u64,
    #[arg(long, default_value_t = 20_000)]
    write_deadline_ms: u64,
    /// A browser origin allowed besides loopback ones (e.g. https://app.example.com); repeatable.
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// A Host allowed besides loopback ones; repeatable.
    #[arg(long = "allowed-host")]
    allowed_hosts: Vec<String>,
    /// Accept any Host (behind a trusted reverse proxy only).
    #[arg(long)]
    any_host: bool,
    /// Public base URL (e.g. https://mcp.example.com): URL/mcp is the canonical resource the
    /// metadata names, tokens are minted for and checked against, whatever the Host header
    /// (default: http://<--listen address>).
    #[arg(long)]
    public_url: Option<String>,
    /// Live idempotency records kept in memory at most; past it new keyed writes answer
    /// MCP_DEPENDENCY_UNAVAILABLE (retryable) until older records expire. Not with --redis.
    #[arg(long, value_name = "N", default_value_t = mock_server::state::idempotency::DEFAULT_CAPACITY)]
    max_idempotency_records: usize,
    /// Dynamically registered OAuth clients kept at most (unused ones expire after 24 h).
    #[arg(long, value_name = "N", default_value_t = mock_server::dev::oauth::OAuthLimits::default().max_clients)]
    max_registered_clients: usize,
    /// OAuth client registrations per minute per peer address.
    #[arg(long, value_name = "N", default_value_t = mock_server::dev::oauth::OAuthLimits::default().registrations_per_minute)]
    registrations_per_minute: u32,
    /// Keep the data's changes, the clock, idempotency keys and rate windows in Redis (e.g.
    /// redis://127.0.0.1:6379), shared by every replica started with the same URL, namespace and
    /// --secret (or none), which then answer as one server (README, "Replicas on Redis"). Redis
    /// must answer at start.
    #[arg(long, env = "CHATAIGNE_REDIS", conflicts_with = "redis_cluster")]
    redis: Option<String>,
    /// The same on a Redis Cluster: some of its nodes, comma-separated
    /// (redis://10.0.0.1:7000,redis://10.0.0.2:7000); a namespace lives in one hash slot.
    #[arg(long, env = "CHATAIGNE_REDIS_CLUSTER", value_name = "URL[,URL...]")]
    redis_cluster: Option<String>,
    #[arg(long, default_value = "chataigne")]
    redis_namespace: String,
    /// Do not serve the development OAuth authorization server (static tokens only).
    #[arg(long)]
    no_auth_server: bool,
    /// Secret for cursors and idempotency key hashes (replicas must share it). Default: with
    /// --redis, one the first replica stores in Redis (<namespace>:secret) for all of them, so
    /// anyone who can read Redis could forge cursors: pass one in production; else random.
    #[arg(long, env = "CHATAIGNE_SECRET")]
    secret: Option<String>,
    /// Open HTTP connections at most (lowered to fit the file descriptor limit). At the cap new
    /// clients wait in the listen backlog until a connection ends, or one kept alive between
    /// requests or slower than --header-grace-ms is closed for them.
    #[arg(long, value_name = "N", default_value_t = ServeLimits::default().max_connections)]
    max_connections: usize,
    /// At the cap, a connection whose request headers are still incomplete this long after it
    /// was accepted (or began a request) may be closed for a waiting client; never one sooner.
    #[arg(long, value_name = "MS", default_value_t = millis(ServeLimits::default().header_grace))]
    header_grace_ms: u64,
    /// A request's headers must arrive within this (it also closes idle keep-alive connections).
    #[arg(long, value_name = "MS", default_value_t = millis(ServeLimits::default().header_timeout))]
    header_timeout_ms: u64,
    /// A request's whole body must arrive within this once its headers have (408 on /mcp).
    #[arg(long, value_name = "MS", default_value_t = millis(ServeLimits::default().body_timeout))]
    body_timeout_ms: u64,
    /// On SIGTERM or Ctrl-C, calls in flight get this long to finish; then the server exits anyway.
    #[arg(long, value_name = "MS", default_value_t = millis(ServeLimits::default().shutdown_timeout))]
    shutdown_timeout_ms: u64,
    /// Add N generated orders to rst_large, at start and on reset (benchmarks; see
    /// docs/BENCHMARKS.md).
    #[arg(long, value_name = "N", default_value_t = 0)]
    synthetic_orders: usize,
    /// Report internal errors of tool calls (panics included) to this Sentry DSN, one event per
    /// error tagged with its request_id and scrubbed of every argument (SEC-1); off by default.
    #[arg(long, env = "SENTRY_DSN", value_name = "DSN")]
    sentry_dsn: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Print the dataset's personas with their development tokens.
    Personas {
        #[arg(long)]
        json: bool,
    },
    /// List the deliberate defect modes and the clause each breaks.
    Defects {
        #[arg(long)]
        json: bool,
    },
    /// List the allowed variants: behaviours the seed allows that the reference does not pick.
    Variants {
        #[arg(long)]
        json: bool,
    },
}

// Per-call allocation dominates the server's CPU under load; mimalloc halves its cost
// (docs/BENCHMARKS.md). The echo baseline uses the same allocator, so the ratio stays fair.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let dataset = match &cli.dataset {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            Dataset::from_json(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => Config::embedded().dataset,
    };
    match &cli.command {
        Some(Command::Personas { json }) => return print_personas(&dataset, *json),
        Some(Command::Defects { json }) => return print_defects(*json),
        Some(Command::Variants { json }) => return print_variants(*json),
        None => {}
    }
    let defects = cli
        .defects
        .iter()
        .map(|name| {
            Defect::parse(name)
                .with_context(|| format!("unknown defect `{name}` (see `chataigne-mock defects`)"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let variants = cli
        .variants
        .iter()
        .map(|name| {
            Variant::parse(name)
                .with_context(|| format!("unknown variant `{name}` (see `chataigne-mock variants`)"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let control_secret = match (cli.control_api, &cli.control_secret) {
        (false, _) => None,
        (true, Some(secret)) if secret.trim().is_empty() => {
            anyhow::bail!("--control-secret must not be empty")
        }
        (true, Some(secret)) => Some(secret.clone()),
        (true, None) => Some(mock_server::dev::control::random_secret()),
    };
    let config = Config {
        control_secret: control_secret.clone(),
        defects,
        variants,
        deadlines: Deadlines {
            read_ms: cli.read_deadline_ms,
            analytics_ms: cli.analytics_deadline_ms,
            write_ms: cli.write_deadline_ms,
        },
        allowed_origins: cli.allowed_origins.clone(),
        allowed_hosts: (!cli.any_host).then(|| cli.allowed_hosts.clone()),
        public_url: cli.public_url.clone(),
        idempotency_capacity: cli.max_idempotency_records,
        oauth: mock_server::dev::oauth::OAuthLimits {
            max_clients: cli.max_registered_clients,
            registrations_per_minute: cli.registrations_per_minute,
            ..Default::default()
        },
        secret: cli.secret.clone(),
        auth_server: !cli.no_auth_server,
        redis_url: cli.redis.clone().or_else(|| cli.redis_cluster.clone()),
        redis_cluster: cli.redis_cluster.is_some(),
        redis_namespace: cli.redis_namespace.clone(),
        synthetic_orders: cli.synthetic_orders,
        sentry_dsn: cli.sentry_dsn.clone(),
        serve: ServeLimits {
            max_connections: cli.max_connections,
            header_grace: Duration::from_millis(cli.header_grace_ms),
            header_timeout: Duration::from_millis(cli.header_timeout_ms),
            body_timeout: Duration::from_millis(cli.body_timeout_ms),
            shutdown_timeout: Duration::from_millis(cli.shutdown_timeout_ms),
        },
        ..Config::new(dataset)
    };
    config.check_variants()?;
    logging::init(cli.log_format, cli.log_file.as_deref())?;
    let runtime = tokio::runtime::Runtime::new()?;
    if cli.stdio {
        return runtime.block_on(mock_server::run_stdio(config, std::env::var("CHATAIGNE_TOKEN").ok()));
    }
    if !cli.listen.ip().to_canonical().is_loopback() {
        if !cli.allow_public_bind {
            anyhow::bail!(
                "refusing to listen on {}: the development tokens (dev-token-<persona>) are public, so anyone \
                 who reaches this address acts as any persona. Listen on a loopback address, or pass \
                 --allow-public-bind (behind a trusted proxy or on a private network)",
                cli.listen
            );
        }
        // To the terminal, where the person who started it looks; the log may go to a file.
        eprintln!(
            "warning: listening on {} (--allow-public-bind): the development tokens are public, anyone who \
             reaches this address acts as any persona",
            cli.listen
        );
    }
    runtime.block_on(async {
        // The listen backlog is where clients wait while the connection cap is reached.
        let listener = mock_server::transport::serve::bind(cli.listen).with_context(|| format!("binding {}", cli.listen))?;
        if cli.public_url.is_none() && cli.listen.ip().is_unspecified() {
            tracing::warn!("listening on every interface without --public-url: OAuth tokens are minted for http://{}/mcp only", listener.local_addr()?);
        }
        if let (Some(secret), None) = (&control_secret, &cli.control_secret) {
            // Once, to the terminal: never into the log, which may be kept or shipped (SEC-1).
            eprintln!("control API secret (generated for this run; --control-secret to choose one): {secret}");
        }
        tracing::info!(address = %listener.local_addr()?, control_api = cli.control_api, "serving http://{}/mcp", listener.local_addr()?);
        mock_server::run(listener, config, shutdown_signal()).await
    })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// SIGTERM or Ctrl-C: stop accepting, let in-flight calls finish (for `--shutdown-timeout-ms`).
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

fn print_personas(dataset: &Dataset, json: bool) -> anyhow::Result<()> {
    let personas = auth::persona_tokens(dataset);
    if json {
        println!("{}", serde_json::to_string_pretty(&personas)?);
    } else {
        for p in personas {
            let aud = p.audience.map(|a| format!(" (audience {a})")).unwrap_or_default();
            println!("{:<22} {:<34} {} via {}{aud}", p.persona, p.token, p.user_id, p.client_id);
        }
    }
    Ok(())
}

fn print_defects(json: bool) -> anyhow::Result<()> {
    if json {
        let list: Vec<_> = Defect::ALL
            .iter()
            .map(|d| serde_json::json!({ "name": d.name(), "clause": d.clause(), "description": d.description() }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for d in Defect::ALL {
            println!("{:<30} {:<8} {}", d.name(), d.clause(), d.description());
        }
    }
    Ok(())
}

fn print_variants(json: bool) -> anyhow::Result<()> {
    if json {
        let list: Vec<_> = Variant::ALL
            .iter()
            .map(|v| serde_json::json!({ "name": v.name(), "clause": v.clause(), "description": v.description() }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for v in Variant::ALL {
            println!("{:<30} {:<8} {}", v.name(), v.clause(), v.description());
        }
    }
    Ok(())
}
