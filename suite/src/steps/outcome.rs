//! What a call came to: success or the error code (ENV-1, ENV-4, ENV-5), the envelope's parts,
//! request_ids (ENV-2), sizes (ENV-3), what errors must not echo (ENV-6), and the output-schema
//! check of every call (PROTO-4).

use chataigne_contract::envelope::{self, Parsed};
use std::collections::HashMap;

use chataigne_contract::{Category, ErrorCode, MAX_STRUCTURED_BYTES, MAX_SUMMARY_BYTES};
use cucumber::gherkin::Step;
use cucumber::then;
use serde_json::Value;

use crate::world::ConformanceWorld;

#[then("the call succeeds")]
async fn succeeds(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    w.success().map(drop)
}

#[then(regex = r#"^the call fails with "([A-Z_]+)"(?: or "([A-Z_]+)")?$"#)]
pub(crate) async fn fails_with(
    w: &mut ConformanceWorld,
    code: String,
    alternative: String,
) -> anyhow::Result<()> {
    let mut expected = Vec::new();
    for c in std::iter::once(&code).chain((!alternative.is_empty()).then_some(&alternative)) {
        match ErrorCode::parse(c) {
            Some(code) => expected.push(code),
            None => return Err(anyhow::anyhow!("{c} is not an error code of the contract (§9)")),
        }
    }
    let names: Vec<&str> = expected.iter().map(|c| c.as_str()).collect();
    let want = format!("tool error {}", names.join(" or "));
    let ex = w.last()?;
    let raw = ex.structured().and_then(|s| s.pointer("/data/error"));
    let field = |k: &str| raw.and_then(|e| e.get(k)).and_then(Value::as_str).map(str::to_owned);
    let (got_code, got_category) = (field("code"), field("category"));
    if ex.is_error() && got_code.as_deref().is_some_and(|g| names.contains(&g)) {
        let body =
            w.tool_error().map_err(|_| w.fail(&want, w.last().map(|e| e.summary()).unwrap_or_default()))?;
        return if names.contains(&body.code.as_str()) { Ok(()) } else { Err(w.fail(want, body.code)) };
    }
    // The seed names no code for these refusals: at the seed level a refusal of the same
    // category (or MCP's own -32602 for invalid arguments) is another allowed choice.
    if let Some(ext) = expected.iter().find(|c| c.is_ext()) {
        let category = ext.category().as_str();
        if ex.is_error() && got_category.as_deref() == Some(category) {
            let got = got_code.unwrap_or_else(|| "(no code)".to_owned());
            w.ext_difference(
                "error-codes",
                format!("refused with {got} (category {category}) where the project uses {ext}"),
            );
            return Ok(());
        }
        if *ext == ErrorCode::InvalidArguments && invalid_params(w) {
            w.ext_difference(
                "error-codes",
                format!("refused with JSON-RPC error -32602 where the project uses {ext}"),
            );
            return Ok(());
        }
    }
    let got = match got_code {
        Some(code) if ex.is_error() => format!("tool error {code}"),
        _ => ex.summary(),
    };
    Err(w.fail(want, got))
}

/// The last answer is MCP's protocol error for invalid params (-32602), a seed-level way to
/// refuse arguments that fail the input schema.
fn invalid_params(w: &ConformanceWorld) -> bool {
    w.last().ok().and_then(|e| e.rpc_error()).and_then(|e| e.get("code")).and_then(Value::as_i64)
        == Some(-32602)
}

#[then("the result is flagged as an error")]
async fn flagged(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ex = w.last()?;
    if ex.is_error() { Ok(()) } else { Err(w.fail("isError: true", ex.summary())) }
}

#[then("the error carries a code, a category, a retryable flag, a message and a request_id")]
async fn error_fields(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let missing = crate::rules::envelope::error_missing(w.last()?);
    if !missing.is_empty() {
        return Err(w.fail(
            "data.error with code, category, retryable, message, request_id",
            format!("missing {}", missing.join(", ")),
        ));
    }
    w.tool_error().map(drop)
}

#[then("the error's request_id is the one in meta")]
async fn error_ids_match(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ex = w.last()?;
    let s = ex.structured();
    let inner = s.and_then(|s| s.pointer("/data/error/request_id")).and_then(Value::as_str);
    let meta = s.and_then(|s| s.pointer("/meta/request_id")).and_then(Value::as_str);
    match (inner, meta) {
        (Some(a), Some(b)) if a == b => Ok(()),
        _ => Err(w.fail("data.error.request_id = meta.request_id", format!("{inner:?} and {meta:?}"))),
    }
}

#[then(regex = r#"^the error has category "([a-z_]+)" and is (not )?retryable$"#)]
async fn error_category(w: &mut ConformanceWorld, category: String, not: String) -> anyhow::Result<()> {
    let retryable = not.is_empty();
    // A -32602 refusal was accepted (and noted) by the step before: it has no category to check.
    if category == ErrorCode::InvalidArguments.category().as_str() && !retryable && invalid_params(w) {
        return Ok(());
    }
    let body = w.tool_error()?;
    // The code is the one the table gives this category and flag, but its fields disagree with
    // the table: that is ENV-5's failure (filed on every exchange), not this clause's.
    let table_agrees =
        body.code.known().is_some_and(|c| c.category().as_str() == category && c.retryable() == retryable);
    if (body.category.as_str() == category && body.retryable == retryable) || table_agrees {
        Ok(())
    } else {
        Err(w.fail(
            format!("category {category}, retryable {retryable}"),
            format!("category {}, retryable {}", body.category.as_str(), body.retryable),
        ))
    }
}

/// ENV-5 over the whole scenario: each error's category and flag are its code's (§9).
#[then("every error seen has its code's category and retryable flag")]
async fn every_error_fixed(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut seen = 0;
    // A code of the server's own has no row in the table: it must keep one category and flag.
    let mut own: HashMap<String, (Category, bool)> = HashMap::new();
    for ex in w.tool_calls() {
        let Some(Ok(Parsed::Error(body))) = ex.structured().map(envelope::parse) else { continue };
        seen += 1;
        let (category, retryable) = match body.code.known() {
            Some(code) => (code.category(), code.retryable()),
            None => *own.entry(body.code.as_str().to_owned()).or_insert((body.category, body.retryable)),
        };
        if body.category != category || body.retryable != retryable {
            let code = &body.code;
            return Err(w.fail_about(
                Some(ex),
                format!("{code}: category {}, retryable {retryable}", category.as_str()),
                format!("category {}, retryable {}", body.category.as_str(), body.retryable),
            ));
        }
    }
    if seen == 0 { Err(w.fail("at least one tool error in the scenario", "none")) } else { Ok(()) }
}

#[then("the structured content holds data and meta with request_id, truncated and replayed")]
async fn success_shape(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let missing = crate::rules::envelope::success_missing(w.last()?);
    if !missing.is_empty() {
        return Err(w.fail(
            "structuredContent {data, meta: {request_id, truncated, replayed}}",
            format!("missing {}", missing.join(", ")),
        ));
    }
    w.success().map(drop)
}

#[then("the result has one text block a person can read")]
async fn one_text(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let expected = "exactly one non-empty text block, prose rather than a JSON dump";
    crate::rules::envelope::one_readable_text(w.last()?).map_err(|got| w.fail(expected, got))
}

/// ENV-3 on every tool call of the scenario.
#[then("every text summary and structured output seen is within the contract's sizes")]
async fn sizes(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut seen = 0;
    for ex in w.tool_calls() {
        if ex.result().is_none() {
            continue;
        }
        // Only successes exercise the limit: errors are small by nature (no vacuous pass).
        seen += usize::from(!ex.is_error());
        let (t, s) = (ex.text_bytes(), ex.structured_bytes());
        if t > MAX_SUMMARY_BYTES || s > MAX_STRUCTURED_BYTES {
            return Err(w.fail_about(
                Some(ex),
                format!("text ≤ {MAX_SUMMARY_BYTES} bytes and structured ≤ {MAX_STRUCTURED_BYTES} bytes"),
                format!("text {t} bytes, structured {s} bytes"),
            ));
        }
    }
    if seen == 0 { Err(w.fail("at least one tool success", "none")) } else { Ok(()) }
}

#[then("every request_id seen has the contract's format")]
async fn id_format(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut seen = 0;
    for ex in w.tool_calls() {
        let Some(id) = ex.structured().and_then(|s| s.pointer("/meta/request_id")).and_then(Value::as_str)
        else {
            return Err(w.fail_about(Some(ex), "meta.request_id on every tool result", ex.summary()));
        };
        seen += 1;
        if !envelope::is_request_id(id) {
            return Err(w.fail_about(Some(ex), "a request_id matching ^req_[0-9A-Za-z]{16,}$", id));
        }
    }
    if seen == 0 { Err(w.fail("at least one tool result", "none")) } else { Ok(()) }
}

#[then("the request_ids seen are all different")]
async fn ids_unique(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ids: Vec<String> = w
        .tool_calls()
        .filter_map(|e| e.structured()?.pointer("/meta/request_id")?.as_str().map(str::to_owned))
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    if ids.len() < 2 {
        return Err(w.fail("at least two request_ids to compare", format!("{}", ids.len())));
    }
    if sorted.len() == ids.len() { Ok(()) } else { Err(w.fail("a new request_id per call", ids.join(", "))) }
}

#[then("every answer carries its request_id in the x-request-id header")]
async fn id_header(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    for ex in w.tool_calls() {
        let meta = ex.structured().and_then(|s| s.pointer("/meta/request_id")).and_then(Value::as_str);
        let header = ex.response().and_then(|r| r.header("x-request-id"));
        if meta.is_none() || meta != header {
            return Err(w.fail_about(
                Some(ex),
                "header x-request-id = meta.request_id",
                format!("header {header:?}, meta {meta:?}"),
            ));
        }
    }
    Ok(())
}

/// ENV-6: the error's message and the text summary never echo the scenario's canary.
#[then("neither the error message nor the text summary contains the canary")]
async fn no_canary(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let body = w.tool_error()?;
    let canary = w.canary.clone();
    let texts = w.last()?.texts().join("\n");
    // A prefix long enough to be ours: an echo may be cut.
    let probe = &canary[..canary.len().min(12)];
    if body.message.contains(probe) || texts.contains(probe) {
        return Err(w.fail(format!("no trace of the value sent ({canary})"), "the error echoes it"));
    }
    Ok(())
}

#[then("the error does not contain their token")]
async fn no_token(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ex = w.last()?;
    let body = ex.response().map(|r| r.body.as_str()).unwrap_or_default();
    let message = ex.message().map(Value::to_string).unwrap_or_default();
    match w.token() {
        Some(token) if !token.is_empty() && (body.contains(token) || message.contains(token)) => {
            Err(w.fail("no trace of the bearer token", "the answer contains it"))
        }
        _ => Ok(()),
    }
}

#[then("every structured output seen validates against the tool's published outputSchema")]
async fn outputs_valid(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let seen = w.tool_calls().filter(|e| e.result().is_some()).count();
    if seen == 0 {
        return Err(w.fail("at least one tool result to validate", "none"));
    }
    if let Some(problem) = &w.ctx().published.problem {
        return Err(
            w.fail("the tools the server published at start", problem.lines().next().unwrap_or_default())
        );
    }
    let unpublished: Vec<&str> = w
        .tool_calls()
        .filter_map(|e| e.tool.as_deref())
        .filter(|t| !w.ctx().published.output_validators.contains_key(*t))
        .collect();
    if !unpublished.is_empty() {
        return Err(w.fail(
            "an outputSchema published for every tool called",
            format!("none for {}", unpublished.join(", ")),
        ));
    }
    let Some(proto4) = w.tally.get("PROTO-4").filter(|t| t.broken(true) > 0) else { return Ok(()) };
    let all: Vec<&str> = proto4.kept.iter().map(|(_, v, _)| v.as_str()).collect();
    let more = proto4.broken(true).saturating_sub(all.len() as u64);
    let more = if more > 0 { format!("\n  … and {more} more") } else { String::new() };
    Err(w.fail_about(
        proto4.kept.first().and_then(|(_, _, at)| w.history.get((*at)?)),
        "every structuredContent valid against the published outputSchema",
        format!("{}{more}", all.join("\n  ")),
    ))
}

/// SEC-2: the words of the table (stack traces, SQL, paths, dependency messages) appear neither
/// in the error nor in the text summary.
#[then("the error reveals none of these:")]
async fn no_leak(w: &mut ConformanceWorld, step: &Step) -> anyhow::Result<()> {
    let markers = super::table_words(step, "this step needs a table")?;
    w.tool_error()?;
    let ex = w.last()?;
    let markers: Vec<&str> = markers.iter().map(String::as_str).collect();
    let hits = crate::rules::leaks(ex, &markers);
    if hits.is_empty() {
        Ok(())
    } else {
        Err(w.fail("an error without internal detail", format!("it shows {}", hits.join(", "))))
    }
}

/// SEC-2 on the resources surface: every `resources/read` of the scenario that failed (a JSON-RPC
/// error or a tool error) shows none of the table's words. Not applicable when no read failed
/// (the server's reads do not go through the tool the fault was put on).
#[then("every read that failed reveals none of these:")]
async fn no_read_leak(w: &mut ConformanceWorld, step: &Step) -> anyhow::Result<()> {
    let markers = super::table_words(step, "this step needs a table")?;
    let markers: Vec<&str> = markers.iter().map(String::as_str).collect();
    let failed: Vec<usize> = (0..w.history.len())
        .filter(|&i| w.history[i].method == "resources/read")
        .filter(|&i| w.history[i].rpc_error().is_some() || w.history[i].is_error())
        .collect();
    if failed.is_empty() {
        return Err(
            w.not_applicable("no resource read failed: the fault did not reach the resources surface")
        );
    }
    for at in failed {
        let hits = crate::rules::leaks(&w.history[at], &markers);
        if !hits.is_empty() {
            return Err(w.fail_about(
                w.history.get(at),
                "an error without internal detail",
                format!("it shows {}", hits.join(", ")),
            ));
        }
    }
    Ok(())
}

/// ENV-7 over the scenario: every success's `data` has its tool's shape; at least one success.
#[then("every success seen has the contract's data shape")]
async fn data_shapes(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut seen = 0;
    for ex in w.tool_calls() {
        let (Some(tool), Some(data)) = (ex.tool.as_deref(), ex.structured().and_then(|s| s.get("data")))
        else {
            continue;
        };
        if ex.is_error() {
            continue;
        }
        seen += 1;
        if let Some(problem) = crate::shape::check(tool, data) {
            return Err(w.fail_about(Some(ex), "the contract's data shape", problem));
        }
    }
    if seen == 0 { Err(w.fail("at least one tool success in the scenario", "none")) } else { Ok(()) }
}
