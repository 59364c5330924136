//! The reference server's integration tests, through the real HTTP transport (and stdio), one
//! module per contract area; `support` starts a server per test and checks every tool result.

mod support;

mod absent;
mod authorization;
mod capabilities;
mod connections;
mod deadlines;
mod envelope;
mod idempotency;
mod layers;
mod limits;
mod malformed;
mod oauth;
mod pagination;
mod preconditions;
mod protocol;
mod races;
mod rate_limits;
mod reporting;
mod routes;
mod security;
mod shutdown;
mod stdio;
mod variants;
