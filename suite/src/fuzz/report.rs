//! Findings as a person reproduces them: the minimal arguments, the JSON-RPC body, a curl line
//! (token as `$TOKEN`), the answer's summary and request_id, the clause and the seed; printed,
//! and written as JSON with `--report-json`. Tokens are never printed nor stored.

use std::collections::BTreeMap;
use std::io::Write;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::cases::Replay;
use super::observed::{Blocked, Observed, PERSONA};
use crate::client::Exchange;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    pub clause: &'static str,
    pub tool: String,
    /// The persona of the failing call (its token is never written).
    pub persona: String,
    pub arguments: Value,
    /// What the rule says was wrong.
    pub detail: String,
    /// The mutation the arguments carry, if any (a transport probe: its name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutation: Option<String>,
    /// The reference choice this finding is a difference from (`@ext-<choice>`): counted at the
    /// full level only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<&'static str>,
    /// The calls a sequence made before this one, in order: {tool, arguments}.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps_before: Vec<Value>,
    /// The JSON-RPC request body.
    pub request: Value,
    /// The answer, in one line.
    pub response: String,
    pub request_id: Option<String>,
    /// A curl command that sends the request again.
    pub reproduction: String,
    /// Whether proptest's shrinking ran to its end (its step limit included): false for other
    /// clauses the same call broke (reported as found) and when the budget ran out while
    /// shrinking.
    pub shrunk: bool,
    pub seed: u64,
    /// The case, as `replay` runs it again (none for `initialize`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
    /// Every call of the reproduction and its answer: the transcript `--out` writes.
    #[serde(skip)]
    pub calls: Vec<Step>,
}

/// One call of a finding and the answer received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Who called: `replay` takes the token of this persona from the profile.
    pub persona: String,
    pub tool: String,
    pub arguments: Value,
    /// The JSON-RPC request body.
    pub request: Value,
    /// The JSON-RPC answer (tokens masked), or `{"no_answer": why}`.
    pub response: Value,
    /// The replica that took the call, when it was not the endpoint (a profile's `replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The context a reproduction needs.
pub struct Target<'a> {
    pub endpoint: &'a str,
    pub stdio: bool,
    pub protocol_version: Option<String>,
    pub seed: u64,
}

/// The URL `ex` went to, when it is not the endpoint: the replica that took it.
fn replica(target: &Target<'_>, ex: &Exchange) -> Option<String> {
    (!target.stdio && ex.url != target.endpoint).then(|| ex.url.clone())
}

impl Finding {
    /// `secrets` (the profile's tokens) are masked in everything the finding keeps.
    pub fn new(target: &Target<'_>, o: Observed, shrunk: bool, secrets: &[&str]) -> Finding {
        // Built again rather than taken from the exchange, whose copy is cut for display.
        let body = |id: u64, tool: &str, arguments: &Value| {
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": "tools/call",
                "params": { "name": tool, "arguments": arguments },
            })
        };
        let request = body(o.ex.rpc_id.unwrap_or(1), &o.tool, &o.args);
        // A sequence is reproduced step by step (cursors and created IDs differ on another run).
        let mut lines: Vec<String> = o
            .before
            .iter()
            .enumerate()
            .map(|(i, c)| curl(target, &body(i as u64 + 1, &c.tool, &c.args)))
            .collect();
        lines.push(curl(target, &request));
        let mut calls: Vec<Step> = o
            .before
            .iter()
            .enumerate()
            .map(|(i, c)| Step {
                persona: c.persona.clone(),
                tool: c.tool.clone(),
                arguments: c.args.clone(),
                request: body(c.ex.as_ref().and_then(|e| e.rpc_id).unwrap_or(i as u64 + 1), &c.tool, &c.args),
                response: c.ex.as_ref().map_or_else(
                    || json!({ "no_answer": "not sent: the budget ran out" }),
                    |e| answer(e, secrets),
                ),
                url: c.ex.as_ref().and_then(|e| replica(target, e)),
            })
            .collect();
        let request = if o.raw { raw_request(&o.ex) } else { request };
        if o.raw {
            lines = vec![raw_curl(target, &o.ex)];
        }
        calls.push(Step {
            persona: o.persona.clone(),
            tool: o.tool.clone(),
            arguments: o.args.clone(),
            request: request.clone(),
            response: answer(&o.ex, secrets),
            url: replica(target, &o.ex),
        });
        Finding {
            clause: o.fault.clause,
            tool: o.tool,
            persona: o.persona,
            arguments: o.args,
            detail: mask(&o.fault.detail, secrets),
            mutation: o.mutation,
            choice: o.choice,
            steps_before: o.before.iter().map(|c| json!({ "tool": c.tool, "arguments": c.args })).collect(),
            reproduction: lines.join("\n"),
            request,
            response: mask(&o.ex.summary(), secrets),
            request_id: o.ex.request_id().map(str::to_owned),
            shrunk,
            seed: target.seed,
            replay: o.replay,
            calls,
        }
    }
}

/// The JSON-RPC answer of `ex`, tokens masked; `{"no_answer": why}` without one.
pub fn answer(ex: &Exchange, secrets: &[&str]) -> Value {
    match ex.message() {
        Some(m) => {
            let text = mask(&m.to_string(), secrets);
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        }
        None => json!({ "no_answer": mask(&ex.summary(), secrets) }),
    }
}

/// `text` with every secret replaced by `***`.
pub fn mask(text: &str, secrets: &[&str]) -> String {
    secrets.iter().filter(|s| s.len() >= 4).fold(text.to_owned(), |t, s| t.replace(s, "***"))
}

impl Finding {
    /// The server's answer to `initialize` cannot be read: nothing else was called.
    pub fn initialize(target: &Target<'_>, clause: &'static str, detail: &str) -> Finding {
        let request = json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": crate::client::PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "chataigne-conformance", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        // The detail holds the whole exchange; the summary is its first sentence.
        let response = detail.split(" request as ").next().unwrap_or(detail).to_owned();
        Finding {
            clause,
            tool: "initialize".to_owned(),
            persona: PERSONA.to_owned(),
            arguments: Value::Null,
            detail: detail.to_owned(),
            mutation: None,
            choice: None,
            steps_before: Vec::new(),
            reproduction: curl(target, &request),
            request,
            response,
            request_id: None,
            shrunk: false,
            seed: target.seed,
            replay: None,
            calls: Vec::new(),
        }
    }
}

/// A curl line for `request`. The session of the run is gone: a server that keeps sessions
/// wants an `initialize` first (docs/FUZZ.md).
pub fn curl(target: &Target<'_>, request: &Value) -> String {
    if target.stdio {
        return format!("echo '{}' | <the stdio command, after initialize>", quote(&request.to_string()));
    }
    let version = target.protocol_version.as_deref().unwrap_or(crate::client::PROTOCOL_VERSION);
    format!(
        "curl -sS -X POST '{}' -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' -H \"authorization: Bearer $TOKEN\" -H 'mcp-protocol-version: {version}' --data-raw '{}'",
        quote(target.endpoint),
        quote(&request.to_string())
    )
}

/// The body a transport probe sent, as JSON; a body too large to keep, by its size.
fn raw_request(ex: &Exchange) -> Value {
    let kept = ex.request_bytes <= crate::client::SHOWN_BYTES;
    match serde_json::from_str::<Value>(&ex.request_body) {
        Ok(v) if kept => v,
        _ if kept => Value::String(ex.request_body.clone()),
        _ => {
            json!({ "body_bytes": ex.request_bytes, "starts_with": crate::client::cut(&ex.request_body, 120) })
        }
    }
}

/// The request of a transport probe as sent: every header (the token as `$TOKEN`), the body.
fn raw_curl(target: &Target<'_>, ex: &Exchange) -> String {
    if target.stdio {
        return format!("echo '{}' | <the stdio command>", quote(&ex.request_body));
    }
    let mut line = format!("curl -sS -X POST '{}'", quote(&ex.url));
    for (name, value) in &ex.request_headers {
        if name.eq_ignore_ascii_case("authorization") {
            line.push_str(&format!(" -H \"{name}: Bearer $TOKEN\""));
        } else {
            line.push_str(&format!(" -H '{}: {}'", quote(name), quote(value)));
        }
    }
    if ex.request_bytes <= crate::client::SHOWN_BYTES {
        line.push_str(&format!(" --data-raw '{}'", quote(&ex.request_body)));
    } else {
        line.push_str(&format!(
            " --data-binary @body.json  # a body of {} bytes: see the scenario",
            ex.request_bytes
        ));
    }
    line
}

/// Text safe inside single quotes in a POSIX shell.
fn quote(text: &str) -> String {
    text.replace('\'', "'\\''")
}

/// What the scenarios came to, in the fuzz report.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RulesRound {
    /// Why they did not run, when they did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    pub scenarios: usize,
    pub passed: usize,
    pub failed: usize,
    pub blocked: usize,
    pub skipped: usize,
    pub exchanges: usize,
    pub elapsed_ms: u128,
    /// The budget ended before every scenario ran: those left were not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<String>,
}

impl RulesRound {
    pub fn not_run(why: impl Into<String>) -> RulesRound {
        RulesRound { not_run: Some(why.into()), ..RulesRound::default() }
    }
}

/// What a fuzz run came to.
#[derive(Debug, Serialize)]
pub struct FuzzReport {
    pub seed: u64,
    pub budget: String,
    pub calls: u64,
    pub elapsed_ms: u128,
    /// Writes were not fuzzed: the server's state could not be reset afterwards.
    pub read_only: bool,
    pub findings: Vec<Finding>,
    /// What could not be judged, and why: never a pass.
    pub blocked: Vec<Blocked>,
    /// Calls whose answer nothing could judge (a refusal for the rate past the retries).
    pub unjudged_calls: u64,
    /// The rules' scenarios, run first with a time budget (`scenarios`).
    pub rules: RulesRound,
}

impl FuzzReport {
    pub fn per_clause(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for f in &self.findings {
            *out.entry(f.clause).or_insert(0) += 1;
        }
        out
    }

    /// Nothing was judged: no call made, or every call made unjudged.
    pub fn nothing_judged(&self) -> bool {
        let rules_judged = self.rules.passed + self.rules.failed > 0;
        !rules_judged && (self.calls == 0 || self.unjudged_calls >= self.calls)
    }

    /// As a run's (`report::Report::exit_code`): 1 with `counted` findings; 2 without one when
    /// something was blocked or nothing was judged (no verdict); 0 otherwise.
    pub fn exit_code(&self, counted: usize) -> u8 {
        if counted > 0 {
            1
        } else if !self.blocked.is_empty() || self.nothing_judged() {
            2
        } else {
            0
        }
    }

    pub fn print(&self, console: &mut dyn Write) {
        let _ = writeln!(console, "chataigne-conformance fuzz: seed {}, budget {}", self.seed, self.budget);
        if self.read_only {
            let _ = writeln!(
                console,
                "read-only: no write tool was called (the profile has no control API to reset the server's state)"
            );
        }
        match &self.rules.not_run {
            Some(why) => {
                let _ = writeln!(console, "the rules' scenarios did not run first: {why}");
            }
            None => {
                let r = &self.rules;
                let _ = writeln!(
                    console,
                    "the rules' scenarios first: {} in {:.1} s, {} passed, {} failed, {} blocked, {} skipped ({} exchanges){}",
                    r.scenarios,
                    r.elapsed_ms as f64 / 1000.0,
                    r.passed,
                    r.failed,
                    r.blocked,
                    r.skipped,
                    r.exchanges,
                    r.cut_short.as_deref().map(|c| format!("; {c}")).unwrap_or_default()
                );
            }
        }
        for (i, f) in self.findings.iter().enumerate() {
            // The detail names the tool.
            let _ = writeln!(console, "\nfinding {} [{}] {}", i + 1, f.clause, f.detail);
            if f.persona != PERSONA {
                let _ = writeln!(console, "  persona: {}", f.persona);
            }
            if let Some(m) = &f.mutation {
                let _ = writeln!(console, "  mutation: {m}");
            }
            if let Some(c) = f.choice {
                let _ = writeln!(
                    console,
                    "  reference choice: {c} (a difference: counted at the full level only)"
                );
            }
            let shrunk = if f.shrunk { "shrunk" } else { "as found" };
            for step in &f.steps_before {
                let _ = writeln!(
                    console,
                    "  after: {} {}",
                    step["tool"].as_str().unwrap_or_default(),
                    step["arguments"]
                );
            }
            let _ = writeln!(console, "  arguments ({shrunk}): {}", f.arguments);
            let _ = writeln!(console, "  response: {}", f.response);
            let _ = writeln!(console, "  request_id: {}", f.request_id.as_deref().unwrap_or("(none)"));
            let _ = writeln!(console, "  reproduce: {}", f.reproduction);
        }
        for b in &self.blocked {
            let _ = writeln!(console, "\nblocked ({:?}, {}x) {}: {}", b.why, b.times, b.what, b.reason);
        }
        let per: Vec<String> = self.per_clause().iter().map(|(c, n)| format!("{c}: {n}")).collect();
        let rate = self.calls as f64 / (self.elapsed_ms.max(1) as f64 / 1000.0);
        let _ = writeln!(
            console,
            "\n{} calls in {:.1} s ({rate:.0} calls/s), {} finding(s){}{}; seed {} (--seed {} reproduces this run)",
            self.calls,
            self.elapsed_ms as f64 / 1000.0,
            self.findings.len(),
            if per.is_empty() { "" } else { ": " },
            per.join(", "),
            self.seed,
            self.seed
        );
        if !self.blocked.is_empty() || self.unjudged_calls > 0 || self.nothing_judged() {
            let _ = writeln!(
                console,
                "NOT A PASS: {} call(s) unjudged, {} blocked reason(s){}",
                self.unjudged_calls,
                self.blocked.len(),
                if self.nothing_judged() { "; nothing was judged" } else { "" }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reproduction_quotes_the_body_and_names_no_token() {
        let target =
            Target { endpoint: "http://127.0.0.1:1/mcp", stdio: false, protocol_version: None, seed: 1 };
        let line = curl(&target, &json!({ "params": { "arguments": { "text": "l'addition" } } }));
        assert!(line.contains("l'\\''addition"), "{line}");
        assert!(line.contains("Bearer $TOKEN"), "{line}");
    }
}
