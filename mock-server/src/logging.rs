//! Structured logs with `tracing`: text or JSON, to stderr (stdout belongs to stdio MCP) or a
//! file. What is logged is decided where calls end (transport/mcp.rs): never arguments (SEC-1).
//! Only this server's own events are written, whatever `RUST_LOG` says: libraries log what
//! they hold at debug and trace (rmcp: whole messages; its warnings: `Host` values).

use std::path::Path;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Targets whose events and spans may reach the log: the library and the binary. Everything
/// else (rmcp, hyper, axum, tower, redis, `log` records) is dropped at every level, since
/// SEC-1 must hold whatever `RUST_LOG` asks for.
pub fn ours(target: &str) -> bool {
    ["mock_server", "chataigne_mock"]
        .iter()
        .any(|own| target.strip_prefix(own).is_some_and(|rest| rest.is_empty() || rest.starts_with("::")))
}

pub fn init(format: Format, file: Option<&Path>) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let writer = match file {
        Some(path) => {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(file))
        }
        None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
    };
    let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false);
    let own = filter_fn(|metadata| ours(metadata.target()));
    let registry = tracing_subscriber::registry().with(own).with(filter);
    let result = match format {
        Format::Json => registry.with(layer.json().flatten_event(true)).try_init(),
        Format::Text => registry.with(layer).try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("logging: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_this_servers_targets_are_ours() {
        for target in ["mock_server", "mock_server::transport::mcp", "chataigne_mock"] {
            assert!(super::ours(target), "{target}");
        }
        for target in ["rmcp", "rmcp::transport", "hyper", "axum::rejection", "mock_serverx", "log", ""] {
            assert!(!super::ours(target), "{target}");
        }
    }
}
