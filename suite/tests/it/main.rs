//! The suite's integration tests: the features cover the contract (`coverage`), and the runner
//! turns broken servers into the right verdicts and exit codes (`runner`, against wiremock), and
//! the suite over stdio against the built reference server (`stdio`), and `--embedded` as a
//! process (`embedded`), and SEC-1 / IDEM-8 over the reference server's error reports
//! (`error_reports`), and the run's queue keeps rate bursts after every scenario using their pairs
//! (`schedule`).

mod coverage;
mod edges;
mod embedded;
mod error_reports;
mod fake;
mod fuzz;
mod fuzz_evidence;
mod layers;
mod oracle;
mod proxied;
mod proxy;
mod rate_limits;
mod replicas;
mod reruns;
mod runner;
mod schedule;
mod scripts;
mod stdio;
mod vacuous;
