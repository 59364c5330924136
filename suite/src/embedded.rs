//! `--embedded`: the reference server in-process, on its own multi-thread runtime in a background
//! thread, with a profile that points at it, a log file the suite can search (SEC-1) and the
//! suite's error-report endpoint as its Sentry DSN (SEC-1 and IDEM-8 over error reports).

use std::fs::File;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::Context;

use crate::context::load_dataset;
use crate::profile::{ControlConfig, DEFAULT_TIMEOUT_MS, Profile};

/// Stops the server when dropped.
pub type EmbeddedServer = crate::background::Background;

/// The reference server with `defects` (deliberate bugs) and `variants` (other readings the seed
/// allows) switched on; none of either for a real run.
pub fn start(
    defects: &[mock_server::Defect],
    variants: &[mock_server::Variant],
) -> anyhow::Result<(EmbeddedServer, Profile)> {
    start_with(defects, variants, None, None)
}

/// [`start`] as a replica of a deployment: its state kept in the Redis at `redis_url` when given
/// (replicas on one Redis share its secret too), its error reports sent to `capture` when given
/// (one endpoint for every replica, as a deployment has one DSN).
pub fn start_with(
    defects: &[mock_server::Defect],
    variants: &[mock_server::Variant],
    redis_url: Option<&str>,
    capture: Option<std::sync::Arc<crate::error_reports::Capture>>,
) -> anyhow::Result<(EmbeddedServer, Profile)> {
    // Random: the control API resets and reconfigures the server; a local process should not
    // be able to guess its secret from the pid.
    let secret = mock_server::dev::control::random_secret();
    let log_path = install_log()?;

    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("cannot bind 127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();

    // Any free port: several embedded servers may run at once (tests, self-test).
    let capture = match capture {
        Some(capture) => capture,
        None => std::sync::Arc::new(crate::error_reports::Capture::start(([127, 0, 0, 1], 0).into())?),
    };

    let mut config = mock_server::Config::for_tests(&secret);
    config.defects = defects.to_vec();
    config.variants = variants.to_vec();
    config.sentry_dsn = Some(capture.dsn());
    config.redis_url = redis_url.map(str::to_owned);
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.worker_threads(2);
    let server =
        crate::background::spawn("embedded server", runtime, listener, |listener, shutdown| async move {
            if let Err(e) = mock_server::run(listener, config, shutdown).await {
                tracing::error!("the embedded server stopped: {e:#}");
            }
        })?;

    let dataset = load_dataset(None)?;
    let base = format!("http://127.0.0.1:{port}");
    let tokens = dataset
        .personas
        .iter()
        .map(|p| (p.persona.clone(), format!("{}{}", mock_server::DEV_TOKEN_PREFIX, p.persona)))
        .collect();
    let profile = Profile {
        endpoint: Some(format!("{base}/mcp")),
        replicas: Vec::new(),
        stdio_command: None,
        stdio_token_env: None,
        stdio_stderr: None,
        tokens,
        id_map: Default::default(),
        control: Some(ControlConfig { url: format!("{base}/control"), secret }),
        server_log: Some(log_path),
        error_reports: Some(crate::error_reports::ErrorReports::SentryCapture),
        error_reports_listen: Some(capture.addr()),
        capture: Some(capture),
        dataset: None,
        timeout_ms: DEFAULT_TIMEOUT_MS,
        level: Default::default(),
        deadline_s: crate::profile::DEFAULT_DEADLINE_S,
    };
    Ok((server, profile))
}

static LOG: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The server logs through `tracing`: send everything to a JSON file, as a deployment would.
/// One subscriber per process, so every embedded server of a self-test shares the file.
fn install_log() -> anyhow::Result<PathBuf> {
    if let Some(path) = LOG.get() {
        return Ok(path.clone());
    }
    let path = std::env::temp_dir().join(format!("chataigne-embedded-{}.log", std::process::id()));
    let file = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new("info,mock_server=debug"))
        .with_writer(Mutex::new(file))
        .finish();
    // A second embedded run in the same process keeps the first subscriber and its file.
    if tracing::subscriber::set_global_default(subscriber).is_err() {
        tracing::warn!("a global tracing subscriber was already installed");
    }
    Ok(LOG.get_or_init(|| path).clone())
}

/// At the end of the command: a run that went wrong keeps the server's log and says where it is
/// (it holds the server side of every failure); a clean run leaves nothing in the temp dir. The
/// subscriber keeps writing to the unlinked file, so call this after the last embedded run only.
pub fn finish_log(keep: bool) {
    let Some(path) = LOG.get() else { return };
    if keep {
        eprintln!("reference server log kept: {}", path.display());
    } else {
        let _ = std::fs::remove_file(path);
    }
}
