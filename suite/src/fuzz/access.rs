//! Valid calls under every persona of the dataset, judged by the access tables
//! (`matrices::access_rows`): a call the scope, membership or role table refuses must be refused
//! (AUTH-3, AUTH-4, AUTH-6, with one of the failing checks' codes), and a refusal of a foreign
//! record must not tell it exists: it is answered with the same code and category as the same
//! call on a record that does not exist (AUTH-4, as `the last two errors are the same but for
//! their request_id` judges it).

use proptest::test_runner::TestRng;
use serde_json::{Value, json};

use super::caller::Caller;
use super::cases::Replay;
pub use super::cases::{AccessCase, Group};
use super::engine::Engine;
use super::observed::{Call, Observed};
use super::oracle::{self, Fault, succeeded};
use super::schema::Tool;
use super::strategy::Case;
use crate::client::Exchange;
use crate::context::RunContext;
use crate::matrices::{self, Check};
use chataigne_contract::codes::ErrorCode;

impl Group {
    pub const ALL: [Group; 5] =
        [Group::Scope, Group::Membership, Group::Role, Group::Revoked, Group::Allowed];
}

/// The rows this server can be called with: personas with a token, tools it publishes (writes
/// only when they are fuzzed), the dataset's IDs mapped to the server's.
pub fn cases(ctx: &RunContext, caller: &Caller<'_>, tools: &[Tool]) -> Vec<AccessCase> {
    matrices::access_rows(&ctx.dataset)
        .into_iter()
        .filter(|r| caller.can_call_as(&r.persona) && tools.iter().any(|t| t.name == r.tool.as_str()))
        .map(|r| {
            // A membership the dataset revokes is none (AUTH-7): its refusal is filed there.
            let revoked = revoked(&ctx.dataset, &r.persona, &r.restaurant);
            let group = match r.fails.first() {
                None => Group::Allowed,
                Some(Check::Scope) => Group::Scope,
                Some(Check::Membership) if revoked => Group::Revoked,
                Some(Check::Membership) => Group::Membership,
                Some(Check::Role) => Group::Role,
            };
            let clause_of =
                |c: &Check| if *c == Check::Membership && revoked { "AUTH-7" } else { c.clause() };
            AccessCase {
                persona: r.persona,
                tool: r.tool.as_str().to_owned(),
                arguments: ctx.id_map.outbound(&r.args),
                refused_by: r.fails.iter().map(|c| clause_of(c).to_owned()).collect(),
                codes: r.fails.iter().map(|c| c.code().as_str().to_owned()).collect(),
                foreign: r.fails.contains(&Check::Membership),
                group,
            }
        })
        .collect()
}

/// Whether `persona` had a membership of `restaurant`'s organization that is revoked.
fn revoked(dataset: &chataigne_contract::dataset::Dataset, persona: &str, restaurant: &str) -> bool {
    let Some(user) = dataset.persona(persona).map(|p| p.user_id.as_str()) else { return false };
    let Some(org) =
        dataset.restaurants.iter().find(|r| r.id == restaurant).map(|r| r.organization_id.as_str())
    else {
        return false;
    };
    dataset.memberships.iter().any(|m| m.user_id == user && m.organization_id == org && m.revoked)
}

/// The rows of `group` in the order the sweep takes them: one of each tool before a second
/// of any, so a defect of one tool is met within a round or two.
pub fn ordered(mut rows: Vec<AccessCase>) -> Vec<AccessCase> {
    let mut rank = std::collections::HashMap::<String, usize>::new();
    let mut keyed: Vec<(usize, usize, AccessCase)> = rows
        .drain(..)
        .enumerate()
        .map(|(i, r)| {
            let n = rank.entry(r.tool.clone()).or_insert(0);
            *n += 1;
            (*n, i, r)
        })
        .collect();
    keyed.sort_by_key(|(n, i, _)| (*n, *i));
    keyed.into_iter().map(|(_, _, r)| r).collect()
}

/// A row of each tool of `group` (at least `cases` rows), the next ones in `ordered` order each round (each row is already
/// minimal: one call, two for an existence check), or the `fixed` one. Returns whether a row
/// failed.
pub fn sweep(
    engine: &Engine<'_>,
    group: Group,
    cases: u32,
    round: u64,
    rng: TestRng,
    fixed: Option<AccessCase>,
) -> bool {
    let replay = |case: &AccessCase| Replay::Access(case.clone());
    let rows = match fixed {
        Some(case) => vec![case],
        None => {
            let rows = ordered(engine.access_rows(group));
            if rows.is_empty() {
                return false;
            }
            // One row of each tool a round (at least `cases`): a defect may spare most tools.
            let tools: std::collections::HashSet<&str> = rows.iter().map(|r| r.tool.as_str()).collect();
            let n = tools.len().max(cases as usize).min(rows.len());
            let start = round as usize * n;
            (start..start + n).map(|i| rows[i % rows.len()].clone()).collect()
        }
    };
    engine.run_rows(rows, rng, &replay, &|case| judge(engine, case))
}

fn judge(engine: &Engine<'_>, case: &AccessCase) -> Vec<Observed> {
    let caller = &engine.caller;
    let Some(tool) = engine.tool(&case.tool) else { return Vec::new() };
    let Some(ex) = caller.call_as(&case.persona, &case.tool, &case.arguments) else { return Vec::new() };
    let observed = |fault: Fault, args: &Value, ex: &Exchange, before: Vec<Call>| Observed {
        before,
        ..Observed::new(fault, &case.persona, &case.tool, args, ex)
    };
    // Every rule of a single call first: the arguments are valid.
    let single = Case { args: case.arguments.clone(), target: None };
    let faults = oracle::judge(caller.ctx, tool, &single, &ex, caller.token_of(&case.persona));
    if !faults.is_empty() {
        return faults.into_iter().map(|f| observed(f, &case.arguments, &ex, Vec::new())).collect();
    }
    let Some(first) = case.refused_by.first() else { return allowed(case, &ex) };
    let clause = clause(first);
    if succeeded(&ex) {
        let detail = format!(
            "{} served persona `{}`, whom the access tables refuse ({}): {}",
            case.tool,
            case.persona,
            case.refused_by.join(", "),
            ex.summary()
        );
        return vec![observed(Fault::new(clause, detail), &case.arguments, &ex, Vec::new())];
    }
    let Some(code) = oracle::error_code(&ex).map(str::to_owned) else { return Vec::new() };
    if code == "MCP_RATE_LIMITED" {
        return Vec::new();
    }
    if !case.codes.contains(&code) {
        let detail = format!(
            "{} as persona `{}`: refused with {code}, not {} ({})",
            case.tool,
            case.persona,
            case.codes.join(" or "),
            case.refused_by.join(", ")
        );
        return vec![observed(Fault::new(clause, detail), &case.arguments, &ex, Vec::new())];
    }
    let scope = chataigne_contract::ToolName::parse(&case.tool).map(|t| t.scope());
    if let Some(scope) =
        scope.filter(|s| code == ErrorCode::ScopeRequired.as_str() && !crate::rules::names_scope(&ex, s))
    {
        // AUTH-3, `the error names the required scope "…"`.
        let detail = format!(
            "{} as persona `{}`: refused with {code} without naming the required scope {scope}",
            case.tool, case.persona
        );
        return vec![observed(Fault::new("AUTH-3", detail), &case.arguments, &ex, Vec::new())];
    }
    if !case.foreign {
        return Vec::new();
    }
    // AUTH-4: the same call on a record that does not exist must be refused alike.
    let Some(absent) = nonexistent(&case.arguments).filter(|a| tool.accepts(a)) else { return Vec::new() };
    let Some(other) = caller.call_as(&case.persona, &case.tool, &absent) else { return Vec::new() };
    let before = vec![Call {
        persona: case.persona.clone(),
        tool: case.tool.clone(),
        args: case.arguments.clone(),
        ex: Some(ex.clone()),
    }];
    let faults = oracle::judge(
        caller.ctx,
        tool,
        &Case { args: absent.clone(), target: None },
        &other,
        caller.token_of(&case.persona),
    );
    if !faults.is_empty() {
        return faults.into_iter().map(|f| observed(f, &absent, &other, before.clone())).collect();
    }
    let seen = |ex: &Exchange| {
        let error = ex.structured().and_then(|s| s.pointer("/data/error"));
        ["code", "category", "retryable"]
            .map(|k| error.and_then(|e| e.get(k)).cloned().unwrap_or(Value::Null))
    };
    if seen(&ex) != seen(&other) {
        let show = |v: [Value; 3]| format!("code {}, category {}, retryable {}", v[0], v[1], v[2]);
        let detail = format!(
            "{} as persona `{}`: a record of another tenant is refused with {}, one that does not exist with {}: the refusal tells which exists",
            case.tool,
            case.persona,
            show(seen(&ex)),
            show(seen(&other))
        );
        return vec![observed(Fault::new("AUTH-4", detail), &absent, &other, before)];
    }
    Vec::new()
}

/// A row every table allows: refused for access, one of the tables is wrong. The scope's code
/// names the scope table (AUTH-3); another refusal for access is filed under AUTH-6, as the
/// allowed side of the tables is in `matrices.feature` (the membership and role refusals share
/// a code). Any other answer is judged by the rules of a single call only: an allowed write is
/// shaped to meet its precondition, and a server may refuse for reasons of its own.
fn allowed(case: &AccessCase, ex: &Exchange) -> Vec<Observed> {
    let error = ex.structured().and_then(|s| s.pointer("/data/error"));
    let category = error.and_then(|e| e.get("category")).and_then(Value::as_str);
    if !matches!(category, Some("authorization" | "authentication")) {
        return Vec::new();
    }
    let code = oracle::error_code(ex).unwrap_or("(no code)");
    let clause = if code == ErrorCode::ScopeRequired.as_str() { "AUTH-3" } else { "AUTH-6" };
    let detail = format!(
        "{} refused persona `{}` with {code}, whom the scope, membership and role tables allow",
        case.tool, case.persona
    );
    vec![Observed::new(Fault::new(clause, detail), &case.persona, &case.tool, &case.arguments, ex)]
}

/// The `&'static` name of an AUTH clause the tables file under.
pub(super) fn clause(name: &str) -> &'static str {
    ["AUTH-3", "AUTH-4", "AUTH-6", "AUTH-7"].into_iter().find(|c| *c == name).unwrap_or("AUTH-4")
}

/// The arguments with the restaurant (or, without one, the organization) replaced by an ID of
/// the same prefix that names nothing.
fn nonexistent(args: &Value) -> Option<Value> {
    let member = ["restaurant_id", "organization_id"]
        .into_iter()
        .find(|m| args.get(*m).is_some_and(Value::is_string))?;
    let id = args[member].as_str()?;
    let prefix = id.split_once('_').map_or("x", |(p, _)| p);
    let mut out = args.clone();
    out[member] = json!(format!("{prefix}_doesnotexist"));
    Some(out)
}
