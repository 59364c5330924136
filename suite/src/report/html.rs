//! The report as one self-contained HTML page (`--html`): the verdict, the clause matrix at a
//! glance, then each failure folded in a `<details>` with its request, response and request_id.
//!
//! The server under test is hostile: everything it said (and everything else) is escaped, and
//! the page's Content-Security-Policy forbids scripts and anything fetched, so markup that
//! slipped through would still do nothing. No script is needed: `<details>` folds by itself.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::render::{failed_scenarios, verdict_lines};
use super::{ClauseResult, LEVELS, Level, Report, ScenarioResult, Status};

/// Text for HTML, in element content and in quoted attributes alike.
pub(crate) fn esc(text: &str) -> String {
    crate::text::escape_markup(text, crate::text::Markup::Html)
}

fn class(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Blocked => "blocked",
        Status::Skipped => "skipped",
        Status::NotRun => "notrun",
    }
}

/// A verdict as a badge: a symbol and a word, so colour is never the only sign.
pub(crate) fn badge(status: Status) -> String {
    let symbol = match status {
        Status::Passed => "✓",
        Status::Failed => "✗",
        Status::Blocked => "⛔",
        Status::Skipped => "↷",
        Status::NotRun => "–",
    };
    format!("<span class=\"badge {}\">{symbol} {}</span>", class(status), status.as_str())
}

const STYLE: &str = r#"
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --soft: #f6f8fa;
  --pass: #1a7f37; --pass-bg: #dafbe1; --fail: #cf222e; --fail-bg: #ffebe9;
  --block: #9a6700; --block-bg: #fff8c5; --skip: #0550ae; --skip-bg: #ddf4ff; --none-bg: #eff2f5; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--soft); color: var(--fg);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 10px; }
.sub { color: var(--muted); margin: 0 0 18px; overflow-wrap: anywhere; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.verdict { border-radius: 8px; padding: 14px 18px; border: 1px solid var(--line); border-left: 6px solid;
  background: var(--bg); }
.verdict.ok { border-left-color: var(--pass); }
.verdict.ko { border-left-color: var(--fail); }
.verdict.stopped { border-left-color: var(--block); }
.verdict .head { font-size: 17px; font-weight: 650; margin: 0; }
.verdict.ok .head { color: var(--pass); }
.verdict.ko .head { color: var(--fail); }
.verdict.stopped .head { color: var(--block); }
.verdict ul { margin: 8px 0 0; padding-left: 20px; color: var(--fg); }
.verdict .jump { margin: 8px 0 0; }
.verdict pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 10px 0 0; }
.counts { display: flex; flex-wrap: wrap; gap: 8px; margin: 14px 0 0; padding: 0; list-style: none; }
.counts li { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 4px 10px; }
.counts b { font-size: 16px; margin-right: 4px; }
.meta { color: var(--muted); margin: 12px 0 0; }
.tiles { display: flex; flex-wrap: wrap; gap: 4px; margin: 0; padding: 0; list-style: none; }
.tiles a { display: block; min-width: 72px; text-align: center; padding: 3px 6px; border-radius: 4px;
  text-decoration: none; font-weight: 600; font-size: 12px; border: 1px solid transparent; }
.tiles a.passed, .badge.passed { background: var(--pass-bg); color: var(--pass); }
.tiles a.failed, .badge.failed { background: var(--fail-bg); color: var(--fail); }
.tiles a.blocked, .badge.blocked { background: var(--block-bg); color: var(--block); }
.tiles a.skipped, .badge.skipped { background: var(--skip-bg); color: var(--skip); }
.tiles a.notrun, .badge.notrun { background: var(--none-bg); color: var(--muted); }
.tiles a.ext { border-style: dashed; border-color: currentColor; }
.legend { color: var(--muted); font-size: 12.5px; margin: 8px 0 0; }
table { width: 100%; border-collapse: collapse; background: var(--bg); border: 1px solid var(--line); }
th, td { text-align: left; vertical-align: top; padding: 6px 10px; border-bottom: 1px solid var(--line); }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
tr.failed td:first-child { box-shadow: inset 3px 0 var(--fail); }
tr.blocked td:first-child { box-shadow: inset 3px 0 var(--block); }
td.id { white-space: nowrap; font-weight: 650; }
td.what { color: var(--muted); width: 30%; }
.title { color: var(--muted); font-size: 12.5px; }
.badge { display: inline-block; white-space: nowrap; border-radius: 999px; padding: 0 8px; font-size: 12px; font-weight: 600; }
.level { font-size: 12px; color: var(--muted); border: 1px solid var(--line); border-radius: 4px; padding: 0 5px; }
.none { color: var(--muted); }
td.detail { overflow-wrap: anywhere; }
td.detail a { white-space: nowrap; }
details.failure { background: var(--bg); border: 1px solid var(--line); border-radius: 8px; margin: 0 0 10px; }
details.failure > summary { cursor: pointer; padding: 10px 14px 10px 34px; list-style: none; position: relative; }
details.failure > summary::-webkit-details-marker { display: none; }
details.failure > summary::before { content: "▸"; position: absolute; left: 14px; color: var(--muted); }
details.failure[open] > summary::before { content: "▾"; }
details.failure > summary:hover { background: var(--soft); border-radius: 8px; }
details.failure > summary .where { color: var(--muted); font-size: 12.5px; margin-left: 6px; }
details.failure[open] > summary { border-bottom: 1px solid var(--line); }
.body { padding: 12px 16px 14px; }
.step { margin: 0 0 10px; font-weight: 600; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 0 0 12px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.exchange { margin: 0 0 10px; }
.exchange .label { font-weight: 600; font-size: 12.5px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.exchange .label span { text-transform: none; letter-spacing: 0; font-weight: 400; color: var(--fg); margin-left: 6px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; margin: 4px 0 0;
  white-space: pre-wrap; overflow-wrap: anywhere; max-height: 28em; overflow: auto; }
.rid { margin: 8px 0 0; }
.rid code, .ids code { background: var(--fail-bg); color: var(--fg); border-radius: 4px; padding: 1px 5px; }
.ids { color: var(--muted); font-size: 12.5px; margin: 10px 0 0; overflow-wrap: anywhere; }
footer { color: var(--muted); font-size: 12.5px; margin-top: 36px; }
"#;

/// The page around `body`.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\
         <footer>chataigne-conformance {} — one self-contained page: no script, nothing fetched.</footer>\n\
         </main>\n</body>\n</html>\n",
        esc(title),
        esc(env!("CARGO_PKG_VERSION")),
    )
}

/// The page of a run that could not start (exit code 2 before any scenario): the reason.
pub fn html_could_not_start(reason: &str) -> String {
    let body = format!(
        "<h1>Chataigne conformance</h1>\n<p class=\"sub\">The run could not start (exit code 2): nothing was checked.</p>\n\
         <section class=\"verdict stopped\"><p class=\"head\">The run could not start</p><pre>{}</pre></section>\n",
        esc(reason)
    );
    page("Chataigne conformance: the run could not start", &body)
}

/// The whole report as one page.
pub fn html(report: &Report) -> String {
    let failures = failed_scenarios(report);
    let anchors: HashMap<(&str, usize, &str), usize> = failures
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.feature.as_str(), s.line, s.name.as_str()), i))
        .collect();
    let mut body = String::new();
    let _ = writeln!(body, "<h1>Chataigne conformance</h1>");
    let caps = &report.capabilities;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(
        body,
        "<p class=\"sub\"><span class=\"mono\">{}</span> · level {} · suite {}</p>",
        esc(&report.endpoint),
        report.level.as_str(),
        esc(&report.suite_version)
    );

    // The verdict.
    let s = &report.summary;
    let tone = if s.interrupted.is_some() {
        "stopped"
    } else if s.certified {
        "ok"
    } else {
        "ko"
    };
    let mut lines = verdict_lines(report).into_iter();
    let _ = writeln!(body, "<section class=\"verdict {tone}\" id=\"verdict\">");
    if let Some(first) = lines.next() {
        let _ = writeln!(body, "<p class=\"head\">{}</p>", esc(&first));
    }
    let rest: Vec<String> = lines.collect();
    if !rest.is_empty() {
        let _ = writeln!(body, "<ul>");
        for line in rest {
            let _ = writeln!(body, "<li>{}</li>", esc(line.trim()));
        }
        let _ = writeln!(body, "</ul>");
    }
    let findings: Vec<&ClauseResult> = report.clauses.iter().filter(|c| !c.findings.is_empty()).collect();
    let folded = failures.len() + findings.len();
    if folded > 0 {
        let _ = writeln!(
            body,
            "<p class=\"jump\"><a href=\"#failures\">{folded} failure(s) below</a>, each folded: open one for its request, response and request_id.</p>"
        );
    }
    let _ = writeln!(body, "</section>");
    let _ = writeln!(body, "<ul class=\"counts\">");
    for (n, what) in [
        (s.required, "required"),
        (s.passed, "passed"),
        (s.failed, "failed"),
        (s.blocked, "blocked"),
        (s.skipped, "skipped"),
        (s.not_run, "not run"),
    ] {
        let _ = writeln!(body, "<li><b>{n}</b>{what}</li>");
    }
    let _ = writeln!(body, "</ul>");
    let _ = writeln!(
        body,
        "<p class=\"meta\">Control API: {}. Server log: {}. Features: {}.</p>",
        yes_no(caps.control_api),
        yes_no(caps.server_log),
        esc(&report.features)
    );
    if let Some(why) = &report.audit_not_run {
        let _ = writeln!(
            body,
            "<p class=\"meta\">{} Audit of untouched records skipped (not a pass): {}</p>",
            badge(Status::Skipped),
            esc(why)
        );
    }
    if let Some(why) = &report.oracle_not_run {
        let _ = writeln!(
            body,
            "<p class=\"meta\">{} Differential oracle skipped (not a pass): {}</p>",
            badge(Status::Skipped),
            esc(why)
        );
    }
    for e in &report.parse_errors {
        let _ = writeln!(
            body,
            "<p class=\"meta\">{} feature did not parse: {}</p>",
            badge(Status::Failed),
            esc(e)
        );
    }

    // The matrix at a glance.
    let _ = writeln!(body, "<h2 id=\"glance\">Clauses at a glance</h2>\n<ul class=\"tiles\">");
    for c in &report.clauses {
        let status = c.at(report.level);
        let ext = if c.ext() { " ext" } else { "" };
        let _ = writeln!(
            body,
            "<li><a class=\"{}{ext}\" href=\"#clause-{}\" title=\"{}: {} ({} clause)\">{}</a></li>",
            class(status),
            esc(&c.id),
            esc(&c.id),
            esc(status.as_str()),
            c.level,
            esc(&c.id)
        );
    }
    let _ = writeln!(
        body,
        "</ul>\n<p class=\"legend\">Each clause's verdict at the run's level ({}); dashed: an ext clause. {}</p>",
        report.level.as_str(),
        esc(LEVELS)
    );
    // The failures, folded, before the full matrix: they are what a reader comes for.
    if folded > 0 {
        let _ = writeln!(body, "<h2 id=\"failures\">Failures ({folded})</h2>");
        for (i, s) in failures.iter().enumerate() {
            body.push_str(&failure(i, s));
        }
        for c in findings {
            let _ = writeln!(
                body,
                "<details class=\"failure\" id=\"finding-{}\"><summary>{} <b>{}</b>, found on every call <span class=\"where\">{} finding(s)</span></summary>\n<div class=\"body\"><pre>{}</pre></div></details>",
                esc(&c.id),
                badge(Status::Failed),
                esc(&c.id),
                c.findings.len(),
                esc(&c.findings.join("\n"))
            );
        }
    }

    // The matrix in full.
    let _ = writeln!(body, "<h2 id=\"matrix\">Clause matrix</h2>");
    let _ = writeln!(
        body,
        "<table class=\"matrix\">\n<thead><tr><th>clause</th><th>what it requires</th><th>level</th><th>seed verdict</th><th>full verdict</th><th title=\"exchanges judged at the seed level\">evidence</th><th>scenarios</th><th>detail</th></tr></thead>\n<tbody>"
    );
    for c in &report.clauses {
        body.push_str(&matrix_row(c, report.level, &anchors));
    }
    let _ = writeln!(body, "</tbody>\n</table>");

    let head = verdict_lines(report).into_iter().next().unwrap_or_default();
    let verdict = head.split(':').next().unwrap_or_default();
    page(&format!("{verdict} — Chataigne conformance of {}", report.endpoint), &body)
}

fn matrix_row(c: &ClauseResult, level: Level, anchors: &HashMap<(&str, usize, &str), usize>) -> String {
    let passed = c.scenarios.iter().filter(|s| s.status == Status::Passed).count();
    let seed = if c.ext() {
        "<span class=\"none\" title=\"an ext clause counts at the full level only\">—</span>".to_owned()
    } else {
        badge(c.status)
    };
    let mut detail = String::new();
    if let Some(reason) = &c.reason {
        detail.push_str(&esc(reason));
    }
    if let Some(full) = &c.full_reason {
        if !detail.is_empty() {
            detail.push_str("<br>");
        }
        let _ = write!(detail, "full level: {}", esc(full));
    }
    let mut shown: Vec<usize> = c
        .scenarios
        .iter()
        .filter_map(|s| anchors.get(&(s.feature.as_str(), s.line, s.name.as_str())).copied())
        .collect();
    shown.sort_unstable();
    shown.dedup();
    let mut links: Vec<String> =
        shown.iter().map(|i| format!("<a href=\"#failure-{i}\">failure {}</a>", i + 1)).collect();
    if !c.findings.is_empty() {
        links.push(format!("<a href=\"#finding-{}\">found on every call</a>", esc(&c.id)));
    }
    if !links.is_empty() {
        if !detail.is_empty() {
            detail.push_str("<br>");
        }
        detail.push_str(&links.join(" · "));
    }
    let row_status = c.at(level);
    format!(
        "<tr class=\"{}\" id=\"clause-{}\"><td class=\"id\">{}</td><td class=\"what\">{}</td><td><span class=\"level\">{}</span></td><td>{seed}</td><td>{}</td><td class=\"evidence\">{}</td><td>{passed}/{}</td><td class=\"detail\">{detail}</td></tr>\n",
        class(row_status),
        esc(&c.id),
        esc(&c.id),
        esc(&c.title),
        c.level,
        badge(c.full_status),
        c.evidence,
        c.scenarios.len()
    )
}

/// One failed (or blocked) scenario, folded: the step, then what the message says, laid out.
fn failure(i: usize, s: &ScenarioResult) -> String {
    let clauses: Vec<&str> = s
        .tags
        .iter()
        .filter(|t| chataigne_contract::clauses::CLAUSES.iter().any(|c| c.id == t.as_str()))
        .map(String::as_str)
        .collect();
    let status = if s.status == Status::Passed { Status::Failed } else { s.status };
    let mut out = format!(
        "<details class=\"failure\" id=\"failure-{i}\"><summary>{} <b>{}</b><span class=\"where\">{} · {}:{}</span></summary>\n<div class=\"body\">\n",
        badge(status),
        esc(&s.name),
        esc(&clauses.join(", ")),
        esc(&s.feature),
        s.line
    );
    if s.status == Status::Passed {
        let _ = writeln!(
            out,
            "<p class=\"step\">Passes at the seed level; differs from the reference's choices:</p><ul>"
        );
        for d in &s.ext_differences {
            let _ = writeln!(out, "<li>{}</li>", esc(d));
        }
        let _ = writeln!(out, "</ul>");
    } else {
        if !s.ext_choices.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"title\">Checks the reference's choice: {}</p>",
                esc(&s.ext_choices.join(", "))
            );
        }
        if let Some(step) = &s.failed_step {
            let _ = writeln!(out, "<p class=\"step\">{}</p>", esc(step));
        }
        out.push_str(&message(s.message.as_deref().unwrap_or_default()));
    }
    if !s.request_ids.is_empty() {
        let ids: Vec<String> = s.request_ids.iter().map(|id| format!("<code>{}</code>", esc(id))).collect();
        let _ = writeln!(out, "<p class=\"ids\">request_ids of this scenario: {}</p>", ids.join(" "));
    }
    out.push_str("</div></details>\n");
    out
}

/// A failure message (`ConformanceWorld::fail_about`: expected, got, clauses, the request, the
/// response, the request_id) laid out; lines it does not recognise are shown as they are.
fn message(text: &str) -> String {
    enum Part {
        Fact(&'static str, String),
        Exchange(&'static str, String, Vec<String>),
        RequestId(String),
        Text(Vec<String>),
    }
    let mut parts: Vec<Part> = Vec::new();
    for line in text.lines() {
        let fact = ["expected", "got", "clauses"]
            .into_iter()
            .find_map(|k| line.strip_prefix(k).and_then(|r| r.strip_prefix(": ")).map(|r| (k, r)));
        if let Some((key, value)) = fact {
            parts.push(Part::Fact(key, value.to_owned()));
        } else if let Some(id) = line.strip_prefix("request_id: ") {
            parts.push(Part::RequestId(id.to_owned()));
        } else if let Some(head) = line.strip_prefix("response").filter(|r| r.starts_with(':')) {
            parts.push(Part::Exchange("response", head[1..].trim().to_owned(), Vec::new()));
        } else if let Some(head) =
            line.strip_prefix("request").filter(|r| r.starts_with(": ") || r.starts_with(" as "))
        {
            parts.push(Part::Exchange("request", head.trim_start_matches(':').trim().to_owned(), Vec::new()));
        } else {
            match parts.last_mut() {
                Some(Part::Exchange(_, _, body)) if line.starts_with("  ") => body.push(line[2..].to_owned()),
                Some(Part::Text(lines)) => lines.push(line.to_owned()),
                Some(Part::Fact(_, value)) if !line.starts_with("  ") => {
                    value.push('\n');
                    value.push_str(line);
                }
                _ => parts.push(Part::Text(vec![line.to_owned()])),
            }
        }
    }
    let mut out = String::new();
    let mut facts = String::new();
    let flush = |facts: &mut String, out: &mut String| {
        if !facts.is_empty() {
            let _ = writeln!(out, "<dl class=\"facts\">{facts}</dl>");
            facts.clear();
        }
    };
    for part in parts {
        match part {
            Part::Fact(key, value) => {
                let _ = write!(facts, "<dt>{key}</dt><dd>{}</dd>", esc(&value).replace('\n', "<br>"));
            }
            Part::Exchange(label, head, body) => {
                flush(&mut facts, &mut out);
                let lines: Vec<String> = body.iter().map(|l| pretty_json(l)).collect();
                let pre = if lines.is_empty() {
                    String::new()
                } else {
                    format!("<pre>{}</pre>", esc(&lines.join("\n")))
                };
                let _ = writeln!(
                    out,
                    "<div class=\"exchange {label}\"><div class=\"label\">{label}<span>{}</span></div>{pre}</div>",
                    esc(&head)
                );
            }
            Part::RequestId(id) => {
                flush(&mut facts, &mut out);
                let _ = writeln!(out, "<p class=\"rid\">request_id <code>{}</code></p>", esc(&id));
            }
            Part::Text(lines) => {
                flush(&mut facts, &mut out);
                let _ = writeln!(out, "<pre>{}</pre>", esc(&lines.join("\n")));
            }
        }
    }
    flush(&mut facts, &mut out);
    out
}

/// A body line that is JSON, indented for reading; anything else (headers, cut bodies) as is.
pub(crate) fn pretty_json(line: &str) -> String {
    let trimmed = line.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(trimmed)
    {
        return serde_json::to_string_pretty(&value).unwrap_or_else(|_| line.to_owned());
    }
    line.to_owned()
}

#[cfg(test)]
mod tests;
