//! Step definitions, one module per domain concept (not per feature file): sessions and
//! personas, the protocol, the tool catalogue, reads, writes, outcomes, pages, the server's log
//! and its error reports.
//!
//! A step returns `anyhow::Result<()>`; an `Err` fails the step, and its message (built with
//! `ConformanceWorld::fail`) is what every report shows. To add steps: put them in the module of
//! their concept (or a new one listed here), call the server through the World's helpers
//! (`call_tool`, `rpc`, `post_raw`), and judge with `success()`, `tool_error()` and `fail()`.

mod auth;
mod capabilities;
mod catalogue;
mod keyed;
mod load;
mod logs;
mod matrices;
mod outcome;
pub mod pages;
mod params;
mod protocol;
pub mod reads;
mod reports;
mod resources;
mod session;
mod transport;
mod writes;

/// The cells of a step's table, trimmed and lowercased, empty ones left out; `missing` is the
/// error when the step has no table.
fn table_words(step: &cucumber::gherkin::Step, missing: &str) -> anyhow::Result<Vec<String>> {
    let table = step.table.as_ref().ok_or_else(|| anyhow::anyhow!("{missing}"))?;
    Ok(table.rows.iter().flatten().map(|c| c.trim().to_ascii_lowercase()).filter(|c| !c.is_empty()).collect())
}
