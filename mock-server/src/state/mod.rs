//! What the server remembers: the dataset (`store`), idempotency records, rate windows (in
//! memory or on Redis), and the clock they all read. No module here knows about MCP or HTTP.

pub mod clock;
pub(crate) mod expiry;
pub mod idempotency;
pub mod ratelimit;
pub mod redis;
pub mod store;
