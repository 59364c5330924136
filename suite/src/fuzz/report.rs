//! Findings as a person reproduces them: the minimal arguments, the JSON-RPC body, a curl line
//! (token as `$TOKEN`), the answer's summary and request_id, the clause and the seed; printed,
//! and written as JSON with `--report-json`. Tokens are never printed nor stored.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;
use serde_json::{Value, json};

use crate::client::Exchange;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    pub clause: &'static str,
    pub tool: String,
    pub arguments: Value,
    /// What the rule says was wrong.
    pub detail: String,
    /// The mutation the arguments carry, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutation: Option<String>,
    /// The JSON-RPC request body.
    pub request: Value,
    /// The answer, in one line.
    pub response: String,
    pub request_id: Option<String>,
    /// A curl command that sends the request again.
    pub reproduction: String,
    /// Whether proptest shrank the input to this one (a property's first failure is shrunk;
    /// other clauses the same call broke are reported as found).
    pub shrunk: bool,
    pub seed: u64,
}

/// The context a reproduction needs.
pub struct Target<'a> {
    pub endpoint: &'a str,
    pub stdio: bool,
    pub protocol_version: Option<String>,
    pub seed: u64,
}

impl Finding {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        target: &Target<'_>,
        clause: &'static str,
        detail: String,
        tool: &str,
        arguments: &Value,
        mutation: Option<String>,
        ex: &Exchange,
        shrunk: bool,
    ) -> Finding {
        // Built again rather than taken from the exchange, whose copy is cut for display.
        let request = json!({
            "jsonrpc": "2.0",
            "id": ex.rpc_id.unwrap_or(1),
            "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        });
        Finding {
            clause,
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            detail,
            mutation,
            reproduction: curl(target, &request),
            request,
            response: ex.summary(),
            request_id: ex.request_id().map(str::to_owned),
            shrunk,
            seed: target.seed,
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

/// Text safe inside single quotes in a POSIX shell.
fn quote(text: &str) -> String {
    text.replace('\'', "'\\''")
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
}

impl FuzzReport {
    pub fn per_clause(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for f in &self.findings {
            *out.entry(f.clause).or_insert(0) += 1;
        }
        out
    }

    pub fn print(&self, console: &mut dyn Write) {
        let _ = writeln!(console, "chataigne-conformance fuzz: seed {}, budget {}", self.seed, self.budget);
        if self.read_only {
            let _ = writeln!(
                console,
                "read-only: no write tool was called (the profile has no control API to reset the server's state)"
            );
        }
        for (i, f) in self.findings.iter().enumerate() {
            let _ = writeln!(console, "\nfinding {} [{}] {}: {}", i + 1, f.clause, f.tool, f.detail);
            if let Some(m) = &f.mutation {
                let _ = writeln!(console, "  mutation: {m}");
            }
            let shrunk = if f.shrunk { "minimal, shrunk" } else { "as found" };
            let _ = writeln!(console, "  arguments ({shrunk}): {}", f.arguments);
            let _ = writeln!(console, "  response: {}", f.response);
            let _ = writeln!(console, "  request_id: {}", f.request_id.as_deref().unwrap_or("(none)"));
            let _ = writeln!(console, "  reproduce: {}", f.reproduction);
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
