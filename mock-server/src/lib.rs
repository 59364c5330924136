//! The Chataigne reference MCP server: every clause of the contract, in memory, over Streamable
//! HTTP at `/mcp` and over stdio. `main.rs` parses flags; everything else lives here so tests and
//! the conformance runner start the very same server with [`run`].

// Layers, each depending only on those below it: ARCHITECTURE.md lists them ("Layers of
// `mock-server/src`"), and tests/it/layers.rs fails on an import that points up. A call goes
//   transport (HTTP gate, MCP binding) → pipeline (AUTH-8 order) → tools → state;
//   app (the state they share) holds the dev parts' values, below it; router composes routes.
pub mod app;
pub mod auth;
mod canonical;
pub mod dev;
pub mod error;
pub mod logging;
pub mod output;
pub mod pipeline;
pub mod reporting;
pub mod router;
pub mod state;
pub mod tools;
pub mod transport;

use std::future::Future;
use std::sync::Arc;

pub use app::{App, Config, EMBEDDED_DATASET};
pub use auth::DEV_TOKEN_PREFIX;
pub use dev::defects::Defect;
pub use dev::variants::Variant;

/// Serve Streamable HTTP on `listener` until `shutdown` resolves; in-flight calls finish first.
/// Without `public_url`, the canonical resource is `http://<the listener's address>/mcp`.
pub async fn run(
    listener: tokio::net::TcpListener,
    mut config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    if config.public_url.is_none() {
        config.public_url = Some(format!("http://{}", listener.local_addr()?));
    }
    let app = Arc::new(App::start(config).await?);
    router::serve(listener, app, shutdown).await
}

/// Serve one MCP session over stdin/stdout; the token comes from the environment (AUTH-1).
pub async fn run_stdio(config: Config, token: Option<String>) -> anyhow::Result<()> {
    let app = Arc::new(App::start(config).await?);
    transport::mcp::serve_stdio(app, token).await
}
