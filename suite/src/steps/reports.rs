//! The server's error reports, received by the suite's own Sentry endpoint when the profile sets
//! `error_reports` (`crate::error_reports`): every internal error arrived as an event tagged
//! with its request_id, and no report holds a value the scenario sent or a token (SEC-1,
//! IDEM-8). Scenarios using these steps are tagged `@needs-error-reports`.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use chataigne_contract::ErrorCode;
use chataigne_contract::envelope::{self, Parsed};
use cucumber::then;

use crate::client::Exchange;
use crate::error_reports::{Capture, Received, locate};
use crate::world::ConformanceWorld;

fn capture(w: &ConformanceWorld) -> anyhow::Result<std::sync::Arc<Capture>> {
    w.ctx()
        .error_reports
        .clone()
        .ok_or_else(|| anyhow!("this step needs error reports: tag the scenario @needs-error-reports"))
}

fn is_internal_error(ex: &Exchange) -> bool {
    matches!(ex.structured().map(envelope::parse), Some(Ok(Parsed::Error(body))) if body.code == ErrorCode::InternalError)
}

#[then("every internal error of the scenario reached error reporting, tagged with its request_id")]
async fn every_internal_error_reported(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let capture = capture(w)?;
    let expected: Vec<&Exchange> = w.tool_calls().filter(|ex| is_internal_error(ex)).collect();
    if expected.is_empty() {
        return Err(w.fail_about(
            None,
            "at least one call of the scenario ending in MCP_INTERNAL_ERROR, to be reported",
            "none: no call failed with MCP_INTERNAL_ERROR",
        ));
    }
    // Reporters send from a background queue, some in batches: give them the call timeout.
    let waited = w.ctx().timeout.max(Duration::from_secs(10));
    let deadline = Instant::now() + waited;
    loop {
        let (received, _) = capture.since(w.reports_from);
        let missing: Vec<&Exchange> = expected
            .iter()
            .copied()
            .filter(|ex| {
                let id = ex.request_id().unwrap_or_default();
                !received.iter().any(|r| r.request_ids().any(|tag| tag == id))
            })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let ids: Vec<&str> = missing.iter().filter_map(|ex| ex.request_id()).collect();
            let tags: Vec<&str> = received.iter().flat_map(Received::request_ids).collect();
            let events: usize = received.iter().map(|r| r.events.len()).sum();
            return Err(w.fail_about(
                missing.first().copied(),
                format!(
                    "an error report (a Sentry event) tagged request_id=<the envelope's request_id> for each of the {} internal errors",
                    expected.len()
                ),
                format!(
                    "none for {} within {} s; {events} event(s) arrived since the scenario started, tagged request_id={} (does the server report to {}?)",
                    ids.join(", "),
                    waited.as_secs(),
                    if tags.is_empty() { "(none)".to_owned() } else { tags.join(", ") },
                    capture.dsn()
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[then("no error report holds a value the scenario sent, nor their token")]
async fn no_value_in_reports(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let capture = capture(w)?;
    let (received, dropped) = capture.since(w.reports_from);
    if dropped {
        return Err(w.fail_about(
            None,
            "every error report since the scenario started, to search them",
            format!(
                "over {} reports arrived since: the oldest were not kept (a server reporting far more than its internal errors?)",
                crate::error_reports::MAX_KEPT
            ),
        ));
    }
    // What must not be anywhere: the canary (in every text, query, key and name the scenario
    // sent), every string argument value long enough to be told apart (IDs among them), and
    // the tokens of the personas that called.
    let mut needles = vec![Needle {
        value: w.canary.clone(),
        what: format!("the scenario's canary {}", w.canary),
        ex: None,
        secret: false,
    }];
    for ex in w.tool_calls() {
        let tool = ex.tool.as_deref().unwrap_or("a tool");
        for value in &ex.sent_strings {
            if !needles.iter().any(|n| &n.value == value) {
                let what = format!("`{}`, sent to {tool}", crate::client::cut(value, 80));
                needles.push(Needle { value: value.clone(), what, ex: Some(ex), secret: false });
            }
        }
        let persona = ex.persona.as_deref().unwrap_or_default();
        if let Some(token) = w.ctx().profile.tokens.get(persona)
            && !token.is_empty()
            && !needles.iter().any(|n| &n.value == token)
        {
            let what = format!("the bearer token of persona \"{persona}\"");
            needles.push(Needle { value: token.clone(), what, ex: None, secret: true });
        }
    }
    for report in &received {
        for needle in &needles {
            let Some(place) = locate(report, &needle.value) else { continue };
            let tags: Vec<&str> = report.request_ids().collect();
            let mut shown = around(&report.raw, &needle.value);
            if needle.secret {
                // A token found is still never printed.
                shown = shown.replace(&needle.value, "[the token]");
            }
            // The call that sent it, else the call the report is about.
            let ex = needle
                .ex
                .or_else(|| w.tool_calls().find(|ex| ex.request_id().is_some_and(|id| tags.contains(&id))));
            return Err(w.fail_about(
                ex,
                "no value the scenario sent and no token in any error report",
                format!(
                    "{} is in {place} of an error report (request_id tag {}): {shown}",
                    needle.what,
                    if tags.is_empty() { "none".to_owned() } else { tags.join(", ") },
                ),
            ));
        }
    }
    Ok(())
}

/// A value that must not be in any report, and how to name it.
struct Needle<'a> {
    value: String,
    what: String,
    /// The call that sent it, shown in the failure.
    ex: Option<&'a Exchange>,
    secret: bool,
}

/// A window of `text` around `needle`, for the failure message.
fn around(text: &str, needle: &str) -> String {
    let at = text.find(needle).unwrap_or_default();
    let start = text.floor_char_boundary(at.saturating_sub(120));
    let shown = crate::client::cut(&text[start..], 120 + needle.len() + 120);
    format!("…{}…", shown.replace(['\n', '\r'], " "))
}
