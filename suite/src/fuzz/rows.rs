//! The bounds matrix's rows (`matrices::bound_rows`: every input bound of every tool below, on
//! and past it, in each unit a length could be counted in and across the calendar's edges), each
//! sent once as the fuzzer's persona and judged by the rule the matrix's step uses
//! (`rules::bounds`) and by every rule of a single call. The fuzzer has no edges of its own: it
//! sends what the rules derive.

use proptest::test_runner::TestRng;

use super::cases::{BoundCase, Replay};
use super::engine::Engine;
use super::observed::{Fault, Observed};
use super::oracle;
use crate::matrices::{BoundRow, bound_rows};
use crate::rules::bounds;

/// Every row of a tool this run fuzzes (the write tools only with writes), or the one `fixed`
/// names; returns whether one failed.
pub fn run(engine: &Engine<'_>, rng: TestRng, fixed: Option<BoundCase>) -> bool {
    let ctx = engine.caller.ctx;
    let rows = bound_rows(&ctx.dataset);
    let cases: Vec<BoundCase> = rows
        .iter()
        .filter(|r| engine.tool(r.tool.as_str()).is_some())
        .map(|r| BoundCase {
            tool: r.tool.as_str().to_owned(),
            edge: r.edge.clone(),
            args: ctx.id_map.outbound(&r.args),
        })
        .filter(|c| fixed.as_ref().is_none_or(|f| f.tool == c.tool && f.edge == c.edge))
        .collect();
    engine.run_rows(cases, rng, &|c| Replay::Bound(c.clone()), &|c| eval(engine, &rows, c))
}

fn eval(engine: &Engine<'_>, rows: &[BoundRow], case: &BoundCase) -> Vec<Observed> {
    let Some(row) = rows.iter().find(|r| r.tool.as_str() == case.tool && r.edge == case.edge) else {
        return Vec::new();
    };
    let Some(ex) = engine.caller.call(&case.tool, &case.args) else { return Vec::new() };
    let mut faults = oracle::answered(&ex);
    if faults.is_empty() {
        faults.extend(oracle::every_rule(engine.caller.ctx, &ex, engine.caller.token()));
        if !bounds::held(row, &ex) {
            let own = engine.caller.ctx.published.refuses(&case.tool, &case.args);
            faults.push(Fault {
                clause: row.clause,
                detail: format!(
                    "{} with {}: {} (expected {})",
                    case.tool,
                    row.edge,
                    bounds::outcome(&ex),
                    bounds::expected(row)
                ),
                choice: bounds::choice(row, own),
            });
        }
    }
    faults
        .into_iter()
        .map(|fault| Observed {
            mutation: Some(row.edge.clone()),
            ..Observed::new(fault, &engine.caller.persona, &case.tool, &case.args, &ex)
        })
        .collect()
}
