//! What a tool returns, before the envelope: below the tools, so the development modes that
//! change an output (`dev::defects`, `dev::variants`) need not know the tools.

use chataigne_contract::ToolName;
use serde_json::Value;

/// What a tool returns, before the envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub data: Value,
    pub next_cursor: Option<String>,
    pub truncated: bool,
    pub replayed: bool,
    /// A keyed write's result was stored with its effect (one step on Redis): the pipeline
    /// need not store it again.
    pub stored: bool,
    /// The short text a person reads (ENV-1); at most 4 KiB (ENV-3).
    pub summary: String,
}

impl Output {
    pub fn new(data: Value, summary: impl Into<String>) -> Output {
        Output {
            data,
            next_cursor: None,
            truncated: false,
            replayed: false,
            stored: false,
            summary: summary.into(),
        }
    }

    /// The stored result of a keyed write, replayed (IDEM-2).
    pub fn replayed(tool: ToolName, data: Value) -> Output {
        Output {
            replayed: true,
            ..Output::new(data, format!("{tool}: replayed the stored result of this idempotency key"))
        }
    }
}
