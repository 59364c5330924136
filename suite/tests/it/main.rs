//! The suite's integration tests: the features cover the contract (`coverage`), and the runner
//! turns broken servers into the right verdicts and exit codes (`runner`, against wiremock).

mod coverage;
mod fake;
mod runner;
