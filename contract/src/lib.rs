//! The Chataigne contract's vocabulary, shared by the reference server and the conformance suite
//! so that the two cannot drift: error codes (§9), the envelope (§2), the tool catalogue and its
//! JSON Schemas (§10), the dataset's types (§12) and the list of clauses.
//!
//! Invariant: this crate depends on nothing of the server or the suite.

pub mod clauses;
pub mod codes;
pub mod dataset;
pub mod envelope;
pub mod schema;
pub mod time;
pub mod tools;

pub use codes::{Category, Code, ErrorCode};
pub use tools::{Kind, Role, ToolName};

/// Largest serialized `structuredContent` (ENV-3).
pub const MAX_STRUCTURED_BYTES: usize = 128 * 1024;
/// Largest text summary, in UTF-8 bytes (ENV-3).
pub const MAX_SUMMARY_BYTES: usize = 4 * 1024;
/// Largest HTTP request body (LIM-7, ext).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Default and largest list page (PAG-1, PAG-2).
/// LIM-1: an analytics range (`from`, `to`, both included) spans at most this many days.
pub const MAX_RANGE_DAYS: i64 = 366;
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 50;
/// Conversation detail: default and largest message page (PAG-8).
pub const DEFAULT_MESSAGE_LIMIT: usize = 50;
pub const MAX_MESSAGE_LIMIT: usize = 100;
/// Idempotency retention (IDEM-6), in seconds.
pub const IDEMPOTENCY_RETENTION_SECS: u64 = 24 * 3600;
/// Protocol versions served (PROTO-1).
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];
