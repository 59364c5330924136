//! Call transcripts: search by phrase (newest call first) and one transcript, which may be too
//! large to return (LIM-6).

use chataigne_contract::ErrorCode;
use chataigne_contract::dataset::Transcript;
use serde_json::json;

use super::{Call, Output, in_order, start, take_page, to_json};
use crate::error::ToolError;

const SNIPPET_BYTES: usize = 160;

/// Text around the first match, cut on character boundaries.
fn snippet(text: &str, at: usize) -> String {
    let lo = text.floor_char_boundary(at.saturating_sub(SNIPPET_BYTES / 2));
    let hi = text.floor_char_boundary(lo + SNIPPET_BYTES);
    text[lo..hi].to_owned()
}

fn hit(t: &Transcript, at: usize) -> serde_json::Value {
    json!({
        "id": t.id, "restaurant_id": t.restaurant_id, "call_started_at": t.call_started_at,
        "duration_s": t.duration_s, "snippet": snippet(&t.text, at),
    })
}

pub fn search(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let rid = call.restaurant_id()?;
    let query = call.req("query")?.to_lowercase();
    let from = start(call)?;
    let transcripts = call.app.defects.listed(&data, rid, |d| &d.transcripts);
    let items = in_order(call, transcripts.as_deref(), &from).filter_map(|(k, t)| {
        // Lowercasing can change byte offsets; search the lowered text and clamp the offset.
        let lowered = t.text.to_lowercase();
        lowered.find(&query).map(|at| (k.clone(), hit(t, at.min(t.text.len()))))
    });
    let page = take_page(call, items, super::limit(call))?;
    // The summary never repeats the query (SEC-1).
    Ok(super::page_output(call, "transcripts", page, &format!("matching transcripts of {rid}")))
}

pub fn get(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let t = (call.app.defects)
        .transcript(&data, call.restaurant_id()?, call.req("transcript_id")?)
        .ok_or(ErrorCode::ResourceNotFound)?;
    super::single(call, "transcript", to_json(t), format!("Transcript {} ({} s)", t.id, t.duration_s))
}
