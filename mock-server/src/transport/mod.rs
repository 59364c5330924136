//! How requests arrive: Streamable HTTP (`http`: the gate in front of rmcp, resource metadata;
//! `serve`: the accept loop with its timeouts, connection cap and bounded shutdown) and the MCP
//! binding shared with stdio (`mcp`: rmcp's `ServerHandler`, the envelope, the log line). Nothing here decides an outcome: every tool call goes to `pipeline::call`.

pub mod http;
pub(crate) mod mcp;
pub mod serve;
