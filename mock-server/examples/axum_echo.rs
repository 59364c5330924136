//! The baseline of `bench/load.sh`: a bare axum server whose `POST /mcp` parses the JSON-RPC
//! request and answers a fixed `tools/call` result of about the size of the reference server's
//! `get_order` answer, with no auth, no MCP layer and no store. What the server costs beyond
//! this is what the ratio in docs/BENCHMARKS.md measures.
//!
//! `cargo run --release -p mock-server --example axum_echo -- 127.0.0.1:8090`

use std::net::SocketAddr;

use axum::Json;
use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};

fn order() -> Value {
    json!({
        "id": "ord_c0001", "restaurant_id": "rst_central", "status": "received", "channel": "phone",
        "customer_name": "Camille Lefebvre",
        "items": [
            { "name": "Velouté de châtaigne", "quantity": 2, "unit_price_cents": 850 },
            { "name": "Tarte fine aux pommes", "quantity": 1, "unit_price_cents": 1200 }
        ],
        "total_cents": 2900, "currency": "EUR", "notes": "Sans noix, merci",
        "created_at": "2026-11-30T20:47:13Z", "updated_at": "2026-11-30T20:47:13Z"
    })
}

async fn mcp(Json(request): Json<Value>) -> Json<Value> {
    let envelope = json!({
        "data": { "order": order() },
        "meta": { "request_id": "req_0123456789abcdef0123", "next_cursor": null, "truncated": false, "replayed": false }
    });
    Json(json!({
        "jsonrpc": "2.0",
        "id": request.get("id").cloned().unwrap_or(Value::Null),
        "result": {
            "content": [{ "type": "text", "text": "Order ord_c0001: received, 2900 cents" }],
            "structuredContent": envelope,
            "isError": false
        }
    }))
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
