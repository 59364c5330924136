//! The second baseline of `bench/load.sh`: rmcp's Streamable HTTP service configured exactly as
//! chataigne-mock's (stateless, JSON responses), whose `tools/call` answers the same fixed result
//! as `axum_echo`. No gate, no auth, no pipeline, no store, no log line. Its calls/s is the
//! ceiling any server built on rmcp can reach on this load, so the three figures split the gap
//! to the bare echo into "the MCP layer" and "our code" (docs/BENCHMARKS.md).
//!
//! `cargo run --release -p mock-server --example rmcp_echo -- 127.0.0.1:8091`

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler};

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Built per call, as a real handler builds its answer.
        let mut result = CallToolResult::success(vec![ContentBlock::text(common::SUMMARY)]);
        result.structured_content = Some(common::envelope());
        Ok(result.into())
    }
}

// The same allocator as chataigne-mock and axum_echo.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr: SocketAddr = std::env::args().nth(1).as_deref().unwrap_or("127.0.0.1:8091").parse()?;
    // chataigne-mock's transport and its default Host check.
    let config = mock_server::transport::http::transport_config()
        .with_allowed_hosts(mock_server::transport::http::LOOPBACK_HOSTS.map(String::from));
    let service = StreamableHttpService::new(|| Ok(Echo), Arc::new(LocalSessionManager::default()), config);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await?;
    Ok(())
}
