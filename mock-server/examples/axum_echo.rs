//! The baseline of `bench/load.sh`: a bare axum server whose `POST /mcp` parses the JSON-RPC
//! request and answers a fixed `tools/call` result of about the size of the reference server's
//! `get_order` answer, with no auth, no MCP layer and no store. What the server costs beyond
//! this is what the ratio in docs/BENCHMARKS.md measures.
//!
//! `cargo run --release -p mock-server --example axum_echo -- 127.0.0.1:8090`

mod common;

use std::net::SocketAddr;

use axum::Json;
use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};

async fn mcp(Json(request): Json<Value>) -> Json<Value> {
    let mut answer = json!({
        "jsonrpc": "2.0",
        "id": request.get("id").cloned().unwrap_or(Value::Null),
        "result": { "content": [{ "type": "text", "text": common::SUMMARY }], "isError": false }
    });
    // Moved in, not through `json!`, which would deep-copy it.
    answer["result"]["structuredContent"] = common::envelope();
    Json(answer)
}

// The same allocator as chataigne-mock, so the ratio compares the layers, not the allocators.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr: SocketAddr = std::env::args().nth(1).as_deref().unwrap_or("127.0.0.1:8090").parse()?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, Router::new().route("/mcp", post(mcp))).await?;
    Ok(())
}
