//! Structured logs with `tracing`: text or JSON, to stderr (stdout belongs to stdio MCP) or a
//! file. What is logged is decided where calls end (handler.rs): never arguments (SEC-1).

use std::path::Path;

use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

pub fn init(format: Format, file: Option<&Path>) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let writer = match file {
        Some(path) => {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(file))
        }
        None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(false);
    let result = match format {
        Format::Json => builder.json().flatten_event(true).try_init(),
        Format::Text => builder.try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("logging: {e}"))
}
