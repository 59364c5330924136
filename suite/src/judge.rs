//! The judge: every rule the suite applies to every exchange, as data — its clause, its own level
//! (a seed clause may hold ext rules), which exchanges it applies to, and the check — in one
//! table ([`RULES`]) that the scenarios (`world::record`), the matrices (through the same record)
//! and `fuzz` all run. Nothing stops the checking: every applicable rule runs on every exchange,
//! and only what a report *keeps* of the findings is capped ([`KEPT_PER_CLAUSE`]).
//!
//! The judge also counts evidence: how many exchanges each clause's rules judged, per level.
//! A clause passes only with evidence (`report`), so a run that judged nothing certifies nothing.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::client::Exchange;
use crate::context::Published;
use crate::invariants as inv;
use crate::rules::records::{self, Tenancy};

/// Whether the seed requires a rule, or this project's contract adds it (docs/CONTRACT.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleLevel {
    Seed,
    Ext,
}

/// What a rule sees of an exchange.
#[derive(Clone, Copy)]
pub struct Seen<'a> {
    pub ex: &'a Exchange,
    /// The bearer token the call was made with (never shown; ENV-6 looks for it).
    pub token: Option<&'a str>,
    /// What the server published (output schemas, PROTO-4); `None` where nothing was read.
    pub published: Option<&'a Published>,
    /// Each persona's records of other tenants (`rules::records`); `None` where no dataset is read.
    pub tenancy: Option<&'a Tenancy>,
}

/// One rule of the contract, applied to every exchange it concerns.
pub struct Rule {
    /// Short and stable: what the rule checks, unique in [`RULES`].
    pub name: &'static str,
    pub clause: &'static str,
    pub level: RuleLevel,
    /// For an ext rule of a seed clause: the reference choice it checks (`contract::CHOICES`),
    /// so a finding is a difference counted at the full level only.
    pub choice: Option<&'static str>,
    /// Whether the exchange carries what the rule is about: each such exchange is evidence.
    pub applies: fn(&Seen) -> bool,
    /// What is wrong, if anything (no argument value, text, key or token in it).
    pub check: fn(&Seen) -> Option<String>,
}

use RuleLevel::{Ext, Seed};

/// Every rule run on every exchange. The level is the rule's: ENV-5 is a seed clause, but a code
/// this project added (MCP_RATE_LIMITED) is held to its row at the full level only.
pub const RULES: &[Rule] = &[
    Rule {
        name: "answer-content-type",
        clause: "PROTO-1",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_protocol(s.ex),
        check: |s| inv::content_type(s.ex),
    },
    Rule {
        name: "ping-answers-empty-result",
        clause: "PROTO-1",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_ping(s.ex),
        check: |s| inv::ping_result(s.ex),
    },
    Rule {
        name: "answer-carries-request-id",
        clause: "PROTO-2",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_protocol(s.ex),
        check: |s| inv::answer_id(s.ex),
    },
    Rule {
        name: "structured-output-matches-published-schema",
        clause: "PROTO-4",
        level: Seed,
        choice: None,
        applies: |s| output_schema_applies(s),
        check: output_schema,
    },
    Rule {
        name: "summary-within-4-kib",
        clause: "ENV-3",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_tool_result(s.ex),
        check: |s| inv::summary_size(s.ex),
    },
    Rule {
        name: "structured-within-128-kib",
        clause: "ENV-3",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_tool_result(s.ex),
        check: |s| inv::structured_size(s.ex),
    },
    Rule {
        name: "request-id-format",
        clause: "ENV-2",
        level: Ext,
        choice: None,
        applies: |s| inv::applies_meta_id(s.ex),
        check: |s| inv::request_id_format(s.ex),
    },
    Rule {
        name: "request-id-header-equals-envelope",
        clause: "ENV-2",
        level: Ext,
        choice: None,
        applies: |s| inv::applies_id_header(s.ex),
        check: |s| inv::request_id_header(s.ex),
    },
    Rule {
        name: "success-envelope-members",
        clause: "ENV-1",
        level: Seed,
        choice: None,
        applies: |s| success_data(s.ex).is_some(),
        check: |s| {
            let missing = crate::rules::envelope::success_missing(s.ex);
            let rid = s.ex.request_id().unwrap_or("no request_id");
            (!missing.is_empty()).then(|| format!("a success without {} ({rid})", missing.join(", ")))
        },
    },
    Rule {
        name: "error-request-ids-match",
        clause: "ENV-4",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_error_id(s.ex),
        check: |s| inv::error_ids_match(s.ex),
    },
    Rule {
        name: "tool-failure-is-a-tool-result",
        clause: "ENV-4",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_rpc_error_for_tool(s.ex),
        check: |s| inv::rpc_error_for_tool(s.ex),
    },
    Rule {
        name: "error-members",
        clause: "ENV-4",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_error(s.ex),
        check: |s| inv::error_members(s.ex),
    },
    Rule {
        name: "category-one-of-nine",
        clause: "ENV-5",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_category(s.ex),
        check: |s| inv::category_known(s.ex),
    },
    Rule {
        name: "seed-code-on-its-row",
        clause: "ENV-5",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_seed_code(s.ex),
        check: |s| inv::code_on_its_row(s.ex),
    },
    Rule {
        name: "code-row-stated-by-idem-4",
        clause: "IDEM-4",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_row_stated_by(s.ex, "IDEM-4"),
        check: |s| inv::code_on_its_row(s.ex),
    },
    Rule {
        name: "code-row-stated-by-idem-3",
        clause: "IDEM-3",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_row_stated_by(s.ex, "IDEM-3"),
        check: |s| inv::code_on_its_row(s.ex),
    },
    Rule {
        name: "code-row-stated-by-auth-3",
        clause: "AUTH-3",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_row_stated_by(s.ex, "AUTH-3"),
        check: |s| inv::code_on_its_row(s.ex),
    },
    Rule {
        name: "code-row-stated-by-pre-2",
        clause: "PRE-2",
        level: Seed,
        choice: None,
        applies: |s| inv::applies_row_stated_by(s.ex, "PRE-2"),
        check: |s| inv::code_on_its_row(s.ex),
    },
    Rule {
        name: "ext-code-on-its-row",
        clause: "ENV-5",
        level: Ext,
        choice: Some("error-codes"),
        applies: |s| inv::applies_ext_code(s.ex),
        check: |s| inv::code_on_its_row(s.ex),
    },
    Rule {
        name: "error-echoes-nothing-sent",
        clause: "ENV-6",
        level: Ext,
        choice: None,
        applies: |s| inv::applies_error(s.ex),
        check: |s| inv::no_echo(s.ex, s.token),
    },
    Rule {
        name: "no-record-of-another-tenant",
        clause: records::FOREIGN,
        level: Seed,
        choice: None,
        applies: |s| s.tenancy.is_some_and(|t| records::applies_tenancy(s.ex, t, records::FOREIGN)),
        check: |s| records::foreign_record(s.ex, s.tenancy?, records::FOREIGN),
    },
    Rule {
        name: "no-record-through-a-revoked-membership",
        clause: records::REVOKED,
        level: Seed,
        choice: None,
        applies: |s| s.tenancy.is_some_and(|t| records::applies_tenancy(s.ex, t, records::REVOKED)),
        check: |s| records::foreign_record(s.ex, s.tenancy?, records::REVOKED),
    },
    Rule {
        name: "no-record-of-another-tenant-through-own-restaurant",
        clause: records::NOT_OWNED,
        level: Seed,
        choice: None,
        applies: |s| s.tenancy.is_some_and(|t| records::applies_tenancy(s.ex, t, records::NOT_OWNED)),
        check: |s| records::foreign_record(s.ex, s.tenancy?, records::NOT_OWNED),
    },
    Rule {
        name: "tool-served-only-with-its-scope",
        clause: records::SCOPE,
        level: Seed,
        choice: None,
        applies: |s| s.tenancy.is_some_and(|t| records::applies_scope(s.ex, t)),
        check: |s| records::served_without_scope(s.ex, s.tenancy?),
    },
    Rule {
        name: "tool-served-only-to-its-role",
        clause: records::ROLE,
        level: Seed,
        choice: None,
        applies: |s| s.tenancy.is_some_and(|t| records::applies_role(s.ex, t)),
        check: |s| records::served_below_role(s.ex, s.tenancy?),
    },
    Rule {
        name: "record-served-is-the-one-addressed",
        clause: records::NOT_OWNED,
        level: Seed,
        choice: None,
        applies: |s| records::applies_addressed(s.ex),
        check: |s| records::addressed_record(s.ex),
    },
    Rule {
        name: "page-size-by-default-and-limit",
        clause: "PAG-1",
        level: Seed,
        choice: None,
        applies: |s| records::applies_page(s.ex),
        check: |s| records::page_size(s.ex),
    },
    Rule {
        name: "next-cursor-not-empty",
        clause: "PAG-3",
        level: Seed,
        choice: None,
        applies: |s| records::applies_next_cursor(s.ex),
        check: |s| records::empty_next_cursor(s.ex),
    },
    Rule {
        name: "page-through-a-cursor-not-empty",
        clause: "PAG-3",
        level: Seed,
        choice: None,
        applies: |s| records::applies_continuation(s.ex),
        check: |s| records::empty_continuation(s.ex),
    },
    Rule {
        name: "success-has-a-text-block",
        clause: "ENV-1",
        level: Seed,
        choice: None,
        applies: |s| records::applies_tool_success(s.ex),
        check: |s| records::no_text(s.ex),
    },
    Rule {
        name: "messages-within-their-limit",
        clause: "PAG-8",
        level: Seed,
        choice: None,
        applies: |s| records::applies_page(s.ex) && s.ex.tool.as_deref() == Some("get_conversation"),
        check: |s| records::message_count(s.ex),
    },
    Rule {
        name: "orders-page-ordered-by-created-at",
        clause: "PAG-4",
        level: Seed,
        choice: None,
        applies: |s| records::applies_page(s.ex),
        check: |s| records::page_order(s.ex),
    },
    Rule {
        name: "page-cut-for-size-holds-fewer",
        clause: "LIM-5",
        level: Seed,
        choice: None,
        applies: |s| records::applies_truncated(s.ex),
        check: |s| records::truncated_in_full(s.ex),
    },
    Rule {
        name: "analytics-totals-add-up",
        clause: "LIM-1",
        level: Seed,
        choice: None,
        applies: |s| records::applies_totals(s.ex),
        check: |s| records::totals_add_up(s.ex),
    },
    Rule {
        name: "state-write-shows-the-state-it-set",
        clause: "PRE-2",
        level: Seed,
        choice: None,
        applies: |s| records::applies_state_write(s.ex),
        check: |s| records::write_shows_its_state(s.ex),
    },
    Rule {
        name: "every-401-challenges-with-the-metadata",
        clause: "AUTH-1",
        level: Seed,
        choice: None,
        applies: |s| !s.ex.stdio && s.ex.status() == Some(401),
        check: |s| {
            crate::rules::transport::bearer_challenge(s.ex)
                .err()
                .map(|m| format!("{}: {}", m.expected, m.got))
        },
    },
    Rule {
        name: "page-holds-each-item-once",
        clause: "PAG-4",
        level: Seed,
        choice: None,
        applies: |s| records::applies_page(s.ex),
        check: |s| records::repeated_item(s.ex),
    },
    Rule {
        name: "list-items-meet-the-filters",
        clause: "PAG-4",
        level: Seed,
        choice: None,
        applies: |s| records::applies_filters(s.ex),
        check: |s| records::filtered_items(s.ex),
    },
    Rule {
        name: "success-data-has-contract-shape",
        clause: "ENV-7",
        level: Ext,
        choice: None,
        applies: |s| success_data(s.ex).is_some(),
        check: |s| {
            let (tool, data) = success_data(s.ex)?;
            let rid = s.ex.request_id().unwrap_or("no request_id");
            crate::shape::check(tool, data).map(|v| format!("{v} ({rid})"))
        },
    },
];

fn success_data(ex: &Exchange) -> Option<(&str, &serde_json::Value)> {
    let tool = ex.tool.as_deref()?;
    if ex.is_error() {
        return None;
    }
    Some((tool, ex.structured()?.get("data")?))
}

/// A tool result of a tool whose outputSchema the server published.
fn output_schema_applies(s: &Seen) -> bool {
    let (Some(tool), Some(published)) = (s.ex.tool.as_deref(), s.published) else { return false };
    s.ex.result().is_some() && published.output_validators.contains_key(tool)
}

/// PROTO-4: the structured output validates against the schema the server published.
fn output_schema(s: &Seen) -> Option<String> {
    let tool = s.ex.tool.as_deref()?;
    let result = s.ex.result()?;
    let rid = s.ex.request_id().unwrap_or("(no request_id)");
    let validator = match s.published?.output_validators.get(tool)? {
        Err(e) => return Some(format!("{tool}: the published outputSchema does not compile: {e}")),
        Ok(v) => v,
    };
    let Some(structured) = result.get("structuredContent") else {
        return Some(format!(
            "{tool} ({rid}): no structuredContent although the tool publishes an outputSchema"
        ));
    };
    let failures = validator.failures(structured);
    (!failures.is_empty()).then(|| format!("{tool} ({rid}): {}", failures.join("; ")))
}

/// A rule an exchange broke.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub rule: &'static str,
    pub clause: &'static str,
    pub level: RuleLevel,
    pub choice: Option<&'static str>,
    pub detail: String,
}

/// Every rule `seen` breaks, and the clauses (with levels) whose rules judged it.
pub fn judge(seen: &Seen) -> (Vec<(&'static str, RuleLevel)>, Vec<Broken>) {
    let mut judged = Vec::new();
    let mut broken = Vec::new();
    for rule in RULES.iter().filter(|r| (r.applies)(seen)) {
        if !judged.contains(&(rule.clause, rule.level)) {
            judged.push((rule.clause, rule.level));
        }
        if let Some(detail) = (rule.check)(seen) {
            broken.push(Broken {
                rule: rule.name,
                clause: rule.clause,
                level: rule.level,
                choice: rule.choice,
                detail,
            });
        }
    }
    (judged, broken)
}

/// What a report keeps of one clause's findings at one level: the rest are counted.
pub const KEPT_PER_CLAUSE: usize = 20;

/// Evidence and findings of one clause.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClauseTally {
    /// Exchanges (or run-wide facts) its seed rules judged, then its ext rules.
    pub judged_seed: u64,
    pub judged_ext: u64,
    /// How many judgements found it broken, per level.
    pub broken_seed: u64,
    pub broken_ext: u64,
    /// The first findings, with their level and, in a scenario, the exchange's index in its
    /// history.
    #[serde(skip)]
    pub kept: Vec<(RuleLevel, String, Option<usize>)>,
}

impl ClauseTally {
    /// Exchanges judged by the rules that count at `full` (every rule) or at the seed level.
    pub fn judged(&self, full: bool) -> u64 {
        self.judged_seed + if full { self.judged_ext } else { 0 }
    }

    pub fn broken(&self, full: bool) -> u64 {
        self.broken_seed + if full { self.broken_ext } else { 0 }
    }
}

/// Evidence per clause: what the judge (and the run-wide rules) judged, and what broke.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub clauses: BTreeMap<&'static str, ClauseTally>,
}

impl Tally {
    /// Judge `seen` and count it; `at` is the exchange's place in its scenario's history.
    pub fn judge(&mut self, seen: &Seen, at: Option<usize>) -> Vec<Broken> {
        let (judged, broken) = judge(seen);
        for (clause, level) in judged {
            let c = self.clauses.entry(clause).or_default();
            match level {
                Seed => c.judged_seed += 1,
                Ext => c.judged_ext += 1,
            }
        }
        for b in &broken {
            self.count_broken(b.clause, b.level, b.detail.clone(), at);
        }
        broken
    }

    /// A judgement made outside the table (a run-wide rule: request_ids unique in the run, one
    /// category per code of the server's own): `broken` carries what was wrong.
    pub fn note(&mut self, clause: &'static str, level: RuleLevel, broken: Option<String>) {
        let c = self.clauses.entry(clause).or_default();
        match level {
            Seed => c.judged_seed += 1,
            Ext => c.judged_ext += 1,
        }
        if let Some(detail) = broken {
            self.count_broken(clause, level, detail, None);
        }
    }

    fn count_broken(&mut self, clause: &'static str, level: RuleLevel, detail: String, at: Option<usize>) {
        let c = self.clauses.entry(clause).or_default();
        match level {
            Seed => c.broken_seed += 1,
            Ext => c.broken_ext += 1,
        }
        if c.kept.iter().filter(|(l, _, _)| *l == level).count() < KEPT_PER_CLAUSE {
            c.kept.push((level, detail, at));
        }
    }

    /// Add another tally's counts (a scenario's into the run's); what is kept stays capped.
    pub fn merge(&mut self, other: &Tally) {
        for (clause, o) in &other.clauses {
            let c = self.clauses.entry(clause).or_default();
            c.judged_seed += o.judged_seed;
            c.judged_ext += o.judged_ext;
            c.broken_seed += o.broken_seed;
            c.broken_ext += o.broken_ext;
            for k in &o.kept {
                if c.kept.iter().filter(|(l, _, _)| *l == k.0).count() < KEPT_PER_CLAUSE {
                    c.kept.push(k.clone());
                }
            }
        }
    }

    pub fn get(&self, clause: &str) -> Option<&ClauseTally> {
        self.clauses.get(clause)
    }
}

#[cfg(test)]
mod tests;
