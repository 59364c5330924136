//! How requests arrive: Streamable HTTP (`http`: the gate in front of rmcp, resource metadata;
//! `bearer` and `jsonrpc`: the gate's authentication and JSON-RPC shape checks; `serve`: the
//! accept loop with its timeouts, connection cap and bounded shutdown) and the MCP
//! binding shared with stdio (`mcp`: rmcp's `ServerHandler`, the envelope, the log line;
//! `resources` and `prompts`: what it serves besides tools). Nothing here decides an outcome:
//! every tool call, and every restaurant resource's read, goes to `pipeline::call`.

mod bearer;
pub mod http;
mod jsonrpc;
pub(crate) mod mcp;
mod prompts;
mod resources;
pub mod serve;
