//! A finding as files a person keeps (`fuzz --out DIR`): the JSON-RPC transcript of its calls
//! (persona names, never tokens), which `replay` runs again, and a `.feature` scenario made of
//! the suite's own steps, ready to paste into `features/`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cases::Injected;
pub use super::cases::Replay;
use super::report::Finding;
pub use super::report::Step;
use crate::profile::IdMap;

/// What `--out DIR` writes per finding, and what `replay FILE` reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transcript {
    /// The file's format: 1.
    pub chataigne_fuzz_transcript: u32,
    pub clause: String,
    pub tool: String,
    pub detail: String,
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<String>,
    /// The reference choice the finding is a difference from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    pub replay: Replay,
    pub calls: Vec<Step>,
}

impl Transcript {
    pub fn of(f: &Finding) -> Option<Transcript> {
        Some(Transcript {
            chataigne_fuzz_transcript: 1,
            clause: f.clause.to_owned(),
            tool: f.tool.clone(),
            detail: f.detail.clone(),
            seed: f.seed,
            mutation: f.mutation.clone(),
            choice: f.choice.map(str::to_owned),
            replay: f.replay.clone()?,
            calls: f.calls.clone(),
        })
    }

    pub fn load(path: &Path) -> anyhow::Result<Transcript> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let t: Transcript = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a fuzz transcript", path.display()))?;
        anyhow::ensure!(t.chataigne_fuzz_transcript == 1, "{}: unknown transcript format", path.display());
        Ok(t)
    }
}

/// Writes `finding-NN-CLAUSE.json` and `.feature` for each finding that can be replayed;
/// returns the files written.
pub fn write_all(dir: &Path, findings: &[Finding], ids: &IdMap) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut out = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        let Some(t) = Transcript::of(f) else { continue };
        let stem = format!("finding-{:02}-{}", i + 1, f.clause);
        let json = dir.join(format!("{stem}.json"));
        std::fs::write(&json, serde_json::to_string_pretty(&t)? + "\n")
            .with_context(|| format!("cannot write {}", json.display()))?;
        let feature = dir.join(format!("{stem}.feature"));
        std::fs::write(&feature, feature_text(&t, ids))
            .with_context(|| format!("cannot write {}", feature.display()))?;
        out.extend([json, feature]);
    }
    Ok(out)
}

/// A feature with one scenario made of the suite's steps: `the persona`, `they call the tool
/// … with:` (the arguments in the dataset's IDs, as features are written), `they list the next
/// page` for a cursor the server gave, and the outcome the clause wants where a step says it.
pub fn feature_text(t: &Transcript, ids: &IdMap) -> String {
    let mut lines = vec![
        format!("Feature: fuzz finding under {}", t.clause),
        String::new(),
        format!("  # Found by chataigne-conformance fuzz --seed {}; replay its transcript with", t.seed),
        "  # chataigne-conformance replay FILE.json. What was wrong:".to_owned(),
    ];
    lines.extend(wrap(&t.detail).into_iter().map(|l| format!("  #   {l}")));
    match &t.choice {
        Some(choice) => lines.push(format!("  @{} @ext-{choice}", t.clause)),
        None => lines.push(format!("  @{}", t.clause)),
    }
    if let Replay::Transport { probe } = &t.replay {
        lines.push(format!("  Scenario: {} on the transport ({probe})", t.clause));
        lines.extend(super::transport::scenario(probe));
        lines.push(String::new());
        return lines.join("\n");
    }
    lines.push(format!(
        "  Scenario: {} on {} ({})",
        t.clause,
        t.tool,
        t.mutation.as_deref().unwrap_or("valid arguments")
    ));
    if let Some(body) = at_once_body(t, ids) {
        lines.extend(body);
        lines.push(String::new());
        return lines.join("\n");
    }
    let mut persona: Option<&str> = None;
    let mut previous: Option<&Step> = None;
    // Whether the last call was a list step: only then can `they list the next page` follow
    // (a generic call does not start a walk).
    let mut listing = false;
    let last = t.calls.len().saturating_sub(1);
    for (i, step) in t.calls.iter().enumerate() {
        if persona != Some(step.persona.as_str()) {
            lines.push(format!("    Given the persona \"{}\"", step.persona));
            persona = Some(&step.persona);
        }
        let cursor = step.arguments.get("cursor").and_then(Value::as_str);
        let given_cursor = previous
            .filter(|p| p.tool == step.tool)
            .and_then(|p| p.response.pointer("/result/structuredContent/meta/next_cursor"))
            .and_then(Value::as_str);
        let same_but_cursor = previous.is_some_and(|p| {
            let mut a = p.arguments.clone();
            let mut b = step.arguments.clone();
            for v in [&mut a, &mut b] {
                if let Some(o) = v.as_object_mut() {
                    o.remove("cursor");
                }
            }
            a == b
        });
        match (cursor, given_cursor) {
            (Some(c), Some(g)) if listing && c == g && same_but_cursor => {
                lines.push("    When they list the next page".to_owned())
            }
            (Some(c), Some(g)) if listing && same_but_cursor && i == last && t.clause == "PAG-5" => {
                let how = crate::rules::cursors::TAMPERINGS
                    .into_iter()
                    .find(|how| crate::rules::cursors::tamper(g, how) == c)
                    .unwrap_or("flipped in its middle");
                lines.push(format!("    When they list the next page, passing the cursor {how}"))
            }
            _ if list_step(step, ids).is_some()
                && t.calls.get(i + 1).is_some_and(|n| n.arguments.get("cursor").is_some()) =>
            {
                lines.push(format!("    When {}", list_step(step, ids).unwrap_or_default()));
                listing = true;
            }
            _ => {
                listing = false;
                if step.arguments.get("cursor").is_some() {
                    lines.push(
                        "    # The cursor is the one the server gave then: a server that signs its"
                            .to_owned(),
                    );
                    lines.push("    # cursors with a key of its own each start gives another (replay the transcript).".to_owned());
                }
                lines.push(format!("    When they call the tool \"{}\" with:", step.tool));
                let args = serde_json::to_string(&ids.inbound(&step.arguments)).unwrap_or_default();
                // A docstring ends at its delimiter: the other one when the JSON holds it.
                let fence = if args.contains("\"\"\"") { "```" } else { "\"\"\"" };
                lines.push(format!("      {fence}"));
                lines.push(format!("      {args}"));
                lines.push(format!("      {fence}"));
            }
        }
        if i < last {
            lines.extend(between(t, step));
        }
        previous = Some(step);
    }
    lines.extend(outcome(t));
    lines.push(String::new());
    lines.join("\n")
}

/// The scenarios of the properties across sessions and personas (`races`), in the suite's steps
/// for them (features/idempotency.feature, preconditions.feature, cursors.feature); `None` for
/// the others, written call by call.
fn at_once_body(t: &Transcript, ids: &IdMap) -> Option<Vec<String>> {
    let first = t.calls.first().map_or("owner", |c| c.persona.as_str());
    let given = |p: &str| format!("    Given the persona \"{p}\"");
    let slow =
        |tool: &str| format!("    And the server slows \"{tool}\" by {} ms", super::races::RACE_LATENCY_MS);
    let rst = |r: &str| ids.to_dataset(r);
    let (c1, c2) = (super::races::PRECONDITION_CODES[0], super::races::PRECONDITION_CODES[1]);
    let mut out = Vec::new();
    match &t.replay {
        Replay::Burst(b) => {
            out.push(given(first));
            if b.slowed {
                out.push(slow("create_instruction"));
            }
            let r = rst(&b.restaurant);
            out.push(format!(
                "    When {} identical calls create the instruction \"{}\" in \"{r}\" with the key \"{}\" at once",
                b.calls, b.text, b.key
            ));
            out.push("    Then every call succeeded or was told the operation is in progress".to_owned());
            out.push(format!("    And \"{r}\" has exactly 1 instruction \"{}\"", b.text));
        }
        Replay::Race(r) => {
            let write = t.calls.iter().find(|c| c.tool == "update_order_status")?;
            let arg = |k: &str| write.arguments.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            out.push(given(&write.persona));
            if r.slowed {
                out.push(slow("update_order_status"));
            }
            out.push(format!(
                "    When \"{p}\" and \"{p}\" both move the same \"{}\" order of \"{}\" to \"{}\" at once",
                arg("expected_status"),
                rst(&arg("restaurant_id")),
                arg("status"),
                p = write.persona
            ));
            out.push(format!(
                "    Then exactly one of the two calls succeeded, and the other failed with \"{c1}\" or \"{c2}\""
            ));
        }
        Replay::KeyScope(k) => {
            let r = rst(&k.restaurant);
            let create = format!(
                "    When they create the instruction \"{}\" in \"{r}\" with the key \"{}\"",
                k.text, k.key
            );
            if k.tool.is_some() {
                out.extend([given(first), create]);
                out.push(format!(
                    "    And they create the organization \"{}\" with the key \"{}\"",
                    k.text, k.key
                ));
                out.push("    Then the call succeeds".to_owned());
                out.push("    And the answer is not a replay".to_owned());
                return Some(out);
            }
            out.extend([given(first), create.clone(), given(&k.persona), create]);
            out.push("    Then the call succeeds".to_owned());
            out.push("    And the answer is not a replay".to_owned());
            out.push(format!("    And \"{r}\" has exactly 2 instructions \"{}\"", k.text));
        }
        // Written step by step for the other lists (no step lists their first page).
        Replay::Carried(c) if c.tool != "list_orders" => return None,
        Replay::Carried(c) => {
            let r = rst(c.args.get("restaurant_id").and_then(Value::as_str).unwrap_or_default());
            let limit = c.args.get("limit").and_then(Value::as_u64).unwrap_or(5);
            out.push(given(
                t.calls.iter().find(|s| s.persona != c.persona).map_or("owner", |s| s.persona.as_str()),
            ));
            out.push(format!("    When they list the orders of \"{r}\" with limit {limit}"));
            out.push(format!("    And the persona \"{}\" lists the next page", c.persona));
            out.push("    Then the call fails with \"MCP_CURSOR_INVALID\"".to_owned());
        }
        Replay::Authority(a) if a.tool != "list_orders" => return None,
        Replay::Authority(a) => {
            let r = rst(a.args.get("restaurant_id").and_then(Value::as_str).unwrap_or_default());
            let limit = a.args.get("limit").and_then(Value::as_u64).unwrap_or(5);
            out.push("    Given a fresh server state".to_owned());
            out.push(given(&a.persona));
            out.push(format!("    When they list the orders of \"{r}\" with limit {limit}"));
            out.push("    Then the call succeeds".to_owned());
            out.push(format!(
                "    When the membership of \"{}\" in \"{}\" is revoked",
                a.persona,
                ids.to_dataset(&a.organization)
            ));
            out.push("    And they list the next page".to_owned());
            out.push("    Then the call fails with \"MCP_RESOURCE_FORBIDDEN\"".to_owned());
        }
        Replay::Fault(f) => {
            let step = t.calls.last()?;
            out.push(given(&step.persona));
            let own = f.deadline();
            let error = match f.injected {
                Injected::Timeout => {
                    out.push(format!("    And the server's {own} deadline is 100 ms"));
                    out.push(format!("    And the server slows \"{}\" by 500 ms", f.tool));
                    None
                }
                Injected::Within => {
                    for other in ["read", "analytics", "write"].into_iter().filter(|d| *d != own) {
                        out.push(format!("    And the server's {other} deadline is 100 ms"));
                    }
                    out.push(format!("    And the server slows \"{}\" by 200 ms", f.tool));
                    None
                }
                Injected::Outcome => {
                    out.push(format!("    And the server's {own} deadline is 100 ms"));
                    out.push(format!(
                        "    And the server holds the answers of \"{}\" for 500 ms after their effect",
                        f.tool
                    ));
                    None
                }
                Injected::Internal => Some(("internal", "MCP_INTERNAL_ERROR")),
                Injected::Dependency => Some(("dependency", "MCP_DEPENDENCY_UNAVAILABLE")),
            };
            if let Some((kind, _)) = error {
                out.push(format!(
                    "    And the server fails the next calls of \"{}\" with a \"{kind}\" error",
                    f.tool
                ));
            }
            out.push(format!("    When they call the tool \"{}\" with:", step.tool));
            out.push("      \"\"\"".to_owned());
            out.push(format!(
                "      {}",
                serde_json::to_string(&ids.inbound(&step.arguments)).unwrap_or_default()
            ));
            out.push("      \"\"\"".to_owned());
            match error {
                None if f.injected == Injected::Within => out.push("    Then the call succeeds".to_owned()),
                None if f.injected == Injected::Outcome => {
                    out.push("    Then the call fails with \"MCP_OUTCOME_UNKNOWN\"".to_owned())
                }
                None => out.push("    Then the call fails with \"MCP_TOOL_TIMEOUT\"".to_owned()),
                Some((_, code)) => {
                    out.push(format!("    Then the call fails with \"{code}\""));
                    out.push("    And the error reveals none of these:".to_owned());
                    for row in super::super::rules::INTERNAL_MARKERS.chunks(6) {
                        out.push(format!("      | {} |", row.join(" | ")));
                    }
                }
            }
        }
        Replay::Expiry(e) => {
            let r = rst(&e.restaurant);
            let create = format!(
                "    When they create the instruction \"{}\" in \"{r}\" with the key \"{}\"",
                e.text, e.key
            );
            let again = create.replacen("    When", "    And", 1);
            out.push(given(first));
            out.push(create.clone());
            out.push("    And 23 hours and 3540 seconds pass on the server's clock".to_owned());
            out.push(again.clone());
            out.push("    Then the call succeeds".to_owned());
            out.push("    And the answer is a replay".to_owned());
            out.push("    When 0 hours and 61 seconds pass on the server's clock".to_owned());
            out.push(again);
            out.push("    Then the call succeeds".to_owned());
            out.push("    And the answer is not a replay".to_owned());
            out.push(format!("    And \"{r}\" has exactly 2 instructions \"{}\"", e.text));
        }
        _ => return None,
    }
    Some(out)
}

/// `they list the orders of "ID" with limit N`: a list step, so `they list the next page` can
/// follow it (a generic call does not start a walk).
fn list_step(step: &Step, ids: &IdMap) -> Option<String> {
    let what = match step.tool.as_str() {
        "list_orders" => "orders",
        "list_conversations" => "conversations",
        _ => return None,
    };
    let args = step.arguments.as_object()?;
    if args.keys().any(|k| k != "restaurant_id" && k != "limit") {
        return None;
    }
    let restaurant = ids.to_dataset(args.get("restaurant_id")?.as_str()?);
    Some(match args.get("limit").and_then(Value::as_u64) {
        Some(n) => format!("they list the {what} of \"{restaurant}\" with limit {n}"),
        None => format!("they list the {what} of \"{restaurant}\""),
    })
}

/// After a call before the last one: nothing but the idempotency sequence's first call, which
/// must succeed for the replay to mean anything.
fn between(t: &Transcript, _step: &Step) -> Vec<String> {
    match &t.replay {
        Replay::Idempotency { .. } if t.clause == "IDEM-2" => vec!["    Then the call succeeds".to_owned()],
        _ => Vec::new(),
    }
}

/// The Then steps of the last call: what the clause wants, where a step of the suite says it.
fn outcome(t: &Transcript) -> Vec<String> {
    let then = |s: &str| format!("    Then {s}");
    let and = |s: &str| format!("    And {s}");
    if let Replay::Bound(_) = &t.replay {
        // The matrix's step for the clause holds this row with the others.
        return vec![then(&format!(
            "every input bound filed under {} is refused past it and served on it",
            t.clause
        ))];
    }
    let refused = matches!(&t.replay, Replay::Call { case, .. } if case.target.is_some());
    if let (Replay::UnknownTool(_), "PROTO-2") = (&t.replay, t.clause.as_str()) {
        return vec![then("the answer is the JSON-RPC error -32602")];
    }
    match t.clause.as_str() {
        "PROTO-2" => vec![then("the server answered without a server error")],
        "PROTO-4" => {
            vec![then("every structured output seen validates against the tool's published outputSchema")]
        }
        "ENV-1" => vec![then("the call succeeds"), and("the result has one text block a person can read")],
        "ENV-2" => vec![
            then("every request_id seen has the contract's format"),
            and("the request_ids seen are all different"),
        ],
        "ENV-3" => vec![then("every text summary and structured output seen is within the contract's sizes")],
        "ENV-4" => vec![
            then("the result is flagged as an error"),
            and("the error carries a code, a category, a retryable flag, a message and a request_id"),
        ],
        "ENV-5" => vec![then("every error seen has its code's category and retryable flag")],
        "IDEM-2" => vec![then("the answer is a replay"), and("the data is the same as the first call's")],
        "IDEM-3" => vec![then("the call fails with \"MCP_IDEMPOTENCY_MISMATCH\"")],
        "PAG-5" | "PAG-6" => vec![then("the call fails with \"MCP_CURSOR_INVALID\"")],
        "PRE-2" if t.detail.contains("was not refused") => {
            vec![then(
                "the call fails with \"MCP_EXPECTED_STATE_MISMATCH\" or \"ORDER_STATUS_PRECONDITION_FAILED\"",
            )]
        }
        "AUTH-3" | "AUTH-4" | "AUTH-6" => match &t.replay {
            Replay::Access(_) if t.calls.len() == 2 => {
                vec![
                    then("the result is flagged as an error"),
                    and("the last two errors are the same but for their request_id"),
                ]
            }
            Replay::Access(a) => {
                let codes: Vec<String> = a.codes.iter().take(2).map(|c| format!("\"{c}\"")).collect();
                vec![then(&format!("the call fails with {}", codes.join(" or ")))]
            }
            _ => vec![then("the result is flagged as an error")],
        },
        "LIM-5" => vec![then("the page is marked truncated")],
        "LIM-6" => vec![then("the call fails with \"MCP_OUTPUT_TOO_LARGE\"")],
        "ABS-2" | "PRE-3" | "PRE-1" | "IDEM-1" | "LIM-1" | "LIM-7" | "PAG-2" => {
            vec![then("the result is flagged as an error")]
        }
        _ if refused => vec![then("the result is flagged as an error")],
        _ => vec![
            format!("    # No step of the suite states this oracle ({}): replay the transcript.", t.clause),
            then("the server answered without a server error"),
        ],
    }
}

/// The detail in comment lines of at most about 90 characters.
fn wrap(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for word in text.split_whitespace() {
        let line = out.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + word.len() > 90 {
            out.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use cucumber::World as _;
    use cucumber::gherkin::{Feature, GherkinEnv};
    use serde_json::json;

    use super::*;
    use crate::fuzz::cases::*;
    use crate::fuzz::schema::{Mutation, Target};
    use crate::fuzz::strategy::Case;
    use crate::world::ConformanceWorld;

    fn step(tool: &str, arguments: Value, response: Value) -> Step {
        let request = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": tool, "arguments": arguments } });
        Step { persona: "owner".to_owned(), tool: tool.to_owned(), arguments, request, response, url: None }
    }

    fn transcript(clause: &str, replay: Replay, calls: Vec<Step>) -> Transcript {
        Transcript {
            chataigne_fuzz_transcript: 1,
            clause: clause.to_owned(),
            tool: calls.last().map(|s| s.tool.clone()).unwrap_or_default(),
            detail: "what was wrong, with \"quotes\" and a \"\"\" fence".to_owned(),
            seed: 7,
            mutation: None,
            choice: None,
            replay,
            calls,
        }
    }

    /// Every step of the generated scenarios is one the suite defines, matched by exactly one
    /// step definition (cucumber's own lookup), and the text parses as Gherkin.
    #[test]
    fn generated_scenarios_use_only_the_suites_steps() {
        let args = json!({ "limit": 51 });
        let call = |clause: &str, target: Option<Target>, calls: Vec<Step>| {
            let case = Case { args: args.clone(), target };
            transcript(
                clause,
                Replay::Call { persona: "owner".to_owned(), tool: "list_organizations".to_owned(), case },
                calls,
            )
        };
        let limit = Some(Target { field: "limit".to_owned(), mutation: Mutation::AboveMaximum(0) });
        let page = |cursor: Option<&str>, next: &str| {
            let mut a = json!({ "restaurant_id": "rst_central", "limit": 20 });
            if let Some(c) = cursor {
                a["cursor"] = json!(c);
            }
            step(
                "list_orders",
                a,
                json!({ "result": { "structuredContent": { "meta": { "next_cursor": next } } } }),
            )
        };
        let cursor: CursorCase = serde_json::from_value(json!({
            "tool": "list_orders", "args": {}, "page": 0, "position": 0, "replacement": 0
        }))
        .expect("a cursor case");
        let access = AccessCase {
            persona: "waiter".to_owned(),
            tool: "get_restaurant".to_owned(),
            arguments: json!({ "restaurant_id": "rst_rival" }),
            refused_by: vec!["AUTH-4".to_owned()],
            codes: vec!["MCP_RESOURCE_FORBIDDEN".to_owned()],
            foreign: true,
            group: super::super::access::Group::Membership,
        };
        let leak = vec![
            step("get_restaurant", json!({ "restaurant_id": "rst_rival" }), json!({})),
            step("get_restaurant", json!({ "restaurant_id": "rst_doesnotexist" }), json!({})),
        ];
        let keyed = json!({ "name": "a \"\"\" b", "idempotency_key": "k-123456789" });
        let idem = Replay::Idempotency {
            tool: "create_organization".to_owned(),
            case: Case { args: keyed.clone(), target: None },
            persona: None,
        };
        let next = json!({ "result": { "structuredContent": { "meta": { "next_cursor": "c1" } } } });
        let all = [
            call("PAG-2", limit, vec![step("list_organizations", args.clone(), json!({}))]),
            call("PROTO-4", None, vec![step("list_organizations", args.clone(), json!({}))]),
            call("ENV-1", None, vec![step("list_organizations", args.clone(), json!({}))]),
            call("ENV-4", None, vec![step("list_organizations", args.clone(), json!({}))]),
            call("AUTH-5", None, vec![step("list_organizations", args.clone(), json!({}))]),
            transcript(
                "PAG-5",
                Replay::Cursor(cursor.clone()),
                vec![page(None, "c1"), page(Some("c1"), "c2"), page(Some("c2x"), "c3")],
            ),
            transcript("PAG-4", Replay::Cursor(cursor), vec![page(None, "c1"), page(Some("c1"), "c2")]),
            // A cursor reused after a generic call: no `next page` step (no walk started).
            transcript(
                "PAG-6",
                Replay::UnknownTool(UnknownCase { name: "list_orders".to_owned() }),
                vec![
                    step(
                        "list_orders",
                        json!({ "restaurant_id": "rst_central", "limit": 1, "channel": "phone" }),
                        next.clone(),
                    ),
                    step(
                        "list_orders",
                        json!({ "restaurant_id": "rst_central", "limit": 1, "channel": "web" }),
                        next.clone(),
                    ),
                    step(
                        "list_orders",
                        json!({ "restaurant_id": "rst_central", "limit": 1, "channel": "web", "cursor": "c1" }),
                        json!({}),
                    ),
                ],
            ),
            transcript("AUTH-4", Replay::Access(access.clone()), leak),
            transcript(
                "AUTH-4",
                Replay::Access(access),
                vec![step("get_restaurant", json!({ "restaurant_id": "rst_rival" }), json!({}))],
            ),
            transcript(
                "IDEM-2",
                idem.clone(),
                vec![
                    step("create_organization", keyed.clone(), json!({})),
                    step("create_organization", keyed.clone(), json!({})),
                ],
            ),
            transcript("IDEM-3", idem, vec![step("create_organization", keyed.clone(), json!({}))]),
            transcript(
                "LIM-5",
                Replay::Largest(LargestCase {
                    tool: "list_orders".to_owned(),
                    args: json!({ "restaurant_id": "rst_x", "limit": 50 }),
                }),
                vec![step("list_orders", json!({ "restaurant_id": "rst_x", "limit": 50 }), json!({}))],
            ),
            transcript(
                "LIM-6",
                Replay::Largest(LargestCase { tool: "get_transcript".to_owned(), args: json!({}) }),
                vec![step(
                    "get_transcript",
                    json!({ "restaurant_id": "rst_x", "transcript_id": "trn_x" }),
                    json!({}),
                )],
            ),
            transcript(
                "IDEM-4",
                Replay::Burst(BurstCase {
                    restaurant: "rst_central".to_owned(),
                    text: "fuzz burst 0000abcd".to_owned(),
                    key: "fuzz-burst-0000abcd".to_owned(),
                    calls: 5,
                    slowed: true,
                }),
                vec![step("create_instruction", json!({}), json!({}))],
            ),
            transcript(
                "PRE-4",
                Replay::Race(RaceCase { order: crate::fuzz::strategy::Pick(0), calls: 5, slowed: true }),
                vec![
                    step("get_order", json!({}), json!({})),
                    step(
                        "update_order_status",
                        json!({ "restaurant_id": "rst_central", "order_id": "ord_1", "status": "accepted", "expected_status": "received" }),
                        json!({}),
                    ),
                ],
            ),
            transcript(
                "IDEM-5",
                Replay::KeyScope(ScopeCase {
                    tool: None,
                    restaurant: "rst_central".to_owned(),
                    text: "fuzz scope 0000abcd 0".to_owned(),
                    key: "fuzz-scope-0000abcd-0".to_owned(),
                    persona: "owner_second_client".to_owned(),
                }),
                vec![step("create_instruction", json!({}), json!({}))],
            ),
            transcript(
                "PAG-6",
                Replay::Carried(CarryCase {
                    tool: "list_orders".to_owned(),
                    args: json!({ "restaurant_id": "rst_central", "limit": 5 }),
                    persona: "manager".to_owned(),
                }),
                vec![step("list_orders", json!({}), json!({}))],
            ),
            transcript(
                "SEC-2",
                Replay::Fault(FaultCase {
                    tool: "get_order".to_owned(),
                    args: json!({}),
                    injected: Injected::Internal,
                    deadline: None,
                }),
                vec![step(
                    "get_order",
                    json!({ "restaurant_id": "rst_central", "order_id": "ord_1" }),
                    json!({}),
                )],
            ),
            transcript(
                "LIM-4",
                Replay::Fault(FaultCase {
                    tool: "get_order".to_owned(),
                    args: json!({}),
                    injected: Injected::Timeout,
                    deadline: None,
                }),
                vec![step(
                    "get_order",
                    json!({ "restaurant_id": "rst_central", "order_id": "ord_1" }),
                    json!({}),
                )],
            ),
            transcript(
                "IDEM-6",
                Replay::Expiry(ExpiryCase {
                    restaurant: "rst_central".to_owned(),
                    text: "fuzz expiry 0000abcd".to_owned(),
                    key: "fuzz-expiry-0000abcd".to_owned(),
                }),
                vec![step("create_instruction", json!({}), json!({}))],
            ),
            transcript(
                "PAG-7",
                Replay::Authority(AuthorityCase {
                    persona: "staff".to_owned(),
                    tool: "list_orders".to_owned(),
                    args: json!({ "restaurant_id": "rst_central", "limit": 5 }),
                    user: "usr_staff".to_owned(),
                    organization: "org_home".to_owned(),
                }),
                vec![step("list_orders", json!({}), json!({}))],
            ),
        ];
        // Every probe of the transport family, as a finding's scenario.
        let probes = [
            "id 0",
            "id \"7\"",
            "id -7",
            "id 9007199254740991",
            "id \"fuzz-\u{e9}\"",
            "notification",
            "version 1999-01-01",
            "version 2025-11-25",
            "catalogue",
            "version header 1999-01-01",
            "mirror served",
            "mirror no Mcp-Name header",
            "mirror an MCP-Protocol-Version header naming another version",
            "origin null",
            "origin https://attacker.example",
            "host attacker.example",
            "no token",
            "other audience",
            "body 1048577",
            "body 1048576",
            "jsonrpc missing",
            "jsonrpc 1.0",
            "params missing",
            "extra member",
        ];
        let mut all = all.to_vec();
        for probe in probes {
            let mut t = transcript(
                "PROTO-1",
                Replay::Transport { probe: probe.to_owned() },
                vec![step("initialize", json!({}), json!({}))],
            );
            t.choice = (probe == "version 2025-11-25").then(|| "protocol-versions".to_owned());
            all.push(t);
        }
        let steps = ConformanceWorld::collection();
        for t in &all {
            let text = feature_text(t, &IdMap::default());
            let feature =
                Feature::parse(&text, GherkinEnv::default()).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let scenario = feature.scenarios.first().unwrap_or_else(|| panic!("no scenario in\n{text}"));
            assert!(scenario.tags.contains(&t.clause), "{text}");
            if t.clause == "PAG-6" && !matches!(t.replay, Replay::Carried(_)) {
                assert!(!text.contains("next page"), "a next page without a walk: {text}");
            }
            for s in &scenario.steps {
                let found = steps.find(s).unwrap_or_else(|e| panic!("ambiguous step `{}`: {e:?}", s.value));
                assert!(found.is_some(), "no step of the suite matches `{}` in\n{text}", s.value);
            }
            let docstrings: Vec<Value> = scenario
                .steps
                .iter()
                .filter_map(|s| s.docstring.as_deref())
                .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
                .collect();
            if !matches!(t.replay, Replay::Transport { .. }) {
                assert!(docstrings.iter().all(|d| t.calls.iter().any(|c| &c.arguments == d)), "{text}");
            }
        }
    }
}
