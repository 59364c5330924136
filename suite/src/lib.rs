//! The Chataigne conformance suite as a library: the binary is a thin `main` over [`cli::main`],
//! and tests drive the same code through [`cli::execute_args`].
//!
//! Code map: `cli` (flags, exit codes) → `preflight` (reach the server, probe capabilities,
//! builds a `context::RunContext`) → `runner` (cucumber with `features::FeatureParser`, the
//! `steps`, and `report::Reporter`) → `report` (the clause matrix and its renderings).
//! Steps talk to the server through `world::ConformanceWorld`, which wraps `client::McpClient`
//! (over Streamable HTTP, or over stdio through `stdio`).

pub mod audit;
pub mod background;
pub mod bounds;
pub mod cli;
pub mod client;
pub mod context;
pub mod control;
pub mod edges;
#[cfg(feature = "embedded")]
pub mod embedded;
pub mod error_reports;
pub mod features;
pub mod fuzz;
pub mod invariants;
pub mod judge;
pub mod matrices;
pub mod oracle;
pub mod preflight;
pub mod profile;
pub mod rate_verdict;
pub mod report;
pub mod rules;
pub mod runner;
pub mod schedule;
pub mod self_test;
pub mod shape;
pub mod stdio;
pub mod steps;
pub mod text;
pub mod world;
