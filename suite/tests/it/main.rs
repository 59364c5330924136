//! The suite's integration tests: the features cover the contract (`coverage`), and the runner
//! turns broken servers into the right verdicts and exit codes (`runner`, against wiremock), and
//! the suite over stdio against the built reference server (`stdio`), and `--embedded` as a
//! process (`embedded`).

mod coverage;
mod embedded;
mod fake;
mod rate_limits;
mod reruns;
mod runner;
mod stdio;
