//! The matrices of `crate::matrices` run against the server: one step per rule "for every …",
//! every row checked, and every row that fails named in the one failure (with the first failing
//! exchange as evidence). A row the suite cannot build on this server (no first page to take a
//! cursor from, no order in a state) fails the step: a matrix proves what its rows name.

use std::fmt::Write as _;

use std::collections::HashMap;

use chataigne_contract::envelope::{self, Parsed};
use chataigne_contract::{ErrorCode, ToolName};
use cucumber::{given, then, when};
use serde_json::{Value, json};

use crate::client::Exchange;
use crate::matrices::{self, Check};
use crate::rules;
use crate::world::ConformanceWorld;

/// The rows that failed, with the index in `history` of the first one's exchange.
#[derive(Default)]
struct Misses {
    rows: Vec<String>,
    first: Option<usize>,
}

impl Misses {
    fn add(&mut self, w: &ConformanceWorld, row: String) {
        if self.first.is_none() {
            self.first = w.history.len().checked_sub(1);
        }
        self.rows.push(row);
    }

    fn verdict(self, w: &ConformanceWorld, rows: usize, rule: &str) -> anyhow::Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let mut got = format!("{} of {rows} rows differ:", self.rows.len());
        for row in self.rows.iter().take(40) {
            let _ = write!(got, "\n  - {row}");
        }
        if self.rows.len() > 40 {
            let _ = write!(got, "\n  - … and {} more", self.rows.len() - 40);
        }
        Err(w.fail_about(self.first.and_then(|i| w.history.get(i)), rule, got))
    }
}

/// The last call's outcome in a few words (`rules::bounds::outcome`).
fn outcome(w: &ConformanceWorld) -> String {
    w.last().map_or_else(|_| "no answer".to_owned(), crate::rules::bounds::outcome)
}

fn error_code(w: &ConformanceWorld) -> Option<String> {
    let ex = w.last().ok()?;
    match ex.structured().map(envelope::parse) {
        Some(Ok(Parsed::Error(body))) if ex.is_error() => Some(body.code.as_str().to_owned()),
        _ => None,
    }
}

/// The last call's tool error category, if it was a tool error.
fn error_category(w: &ConformanceWorld) -> Option<String> {
    let ex = w.last().ok()?;
    let category = ex.structured().filter(|_| ex.is_error())?.pointer("/data/error/category")?;
    category.as_str().map(str::to_owned)
}

/// A call through the world, which sends it again once a rate window an earlier run left full
/// has room (`ConformanceWorld::wait_for_rate_window`): the matrix judges access, not the rate.
pub(super) async fn call_patiently(w: &mut ConformanceWorld, tool: &str, args: Value) -> anyhow::Result<()> {
    w.call_tool(tool, args).await.map(drop)
}

/// Rows of a matrix in flight at once. Over a network a matrix is hundreds of round trips one
/// after another; side by side (16: docs/BENCHMARKS.md) they take a few dozen. Rows are independent (refusals, and reads
/// served), and their exchanges are recorded and judged in row order whatever order they came
/// back in, so verdicts and messages do not depend on the concurrency.
const ROWS_AT_ONCE: usize = 16;

/// One row's call: as `persona`, `tool` with `args` (dataset IDs), on a request whose JSON-RPC id
/// is `id(attempt)` when given.
struct RowCall<'a> {
    persona: String,
    tool: String,
    args: Value,
    id: Option<&'a (dyn Fn(u32) -> Value + Sync)>,
}

/// What a row's call came to: every attempt's exchange in order (the last one is the row's
/// answer) and the id of the request answered last; or the session that could not start.
struct RowAnswer {
    exchanges: Vec<Exchange>,
    sent: Option<Value>,
    no_session: bool,
}

/// [`call_patiently`] for every row, [`ROWS_AT_ONCE`] at a time, each row through an
/// initialized session of its persona (the run's idle ones first) and its attempts in order.
/// The answers come back in row order; each row's exchanges are recorded then, before it is
/// judged ([`record_row`]).
async fn call_rows(w: &ConformanceWorld, rows: Vec<RowCall<'_>>) -> anyhow::Result<Vec<RowAnswer>> {
    use futures::StreamExt as _;
    w.check_deadline()?;
    let ctx = w.ctx_arc();
    let deadline = w.deadline;
    let revision = w.revision;
    let answers = futures::stream::iter(rows.into_iter().map(|row| call_row(&ctx, row, revision, deadline)))
        .buffered(ROWS_AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    answers.into_iter().collect()
}

async fn call_row(
    ctx: &crate::context::RunContext,
    row: RowCall<'_>,
    revision: Option<&'static str>,
    deadline: Option<std::time::Instant>,
) -> anyhow::Result<RowAnswer> {
    const PATIENCE_MS: u64 = 65_000;
    let pool = pool_key(&row.persona, revision);
    let mut client = match session_over(ctx, &row.persona, revision).await? {
        Ok(client) => client,
        Err(ex) => return Ok(RowAnswer { exchanges: vec![ex], sent: None, no_session: true }),
    };
    let args = ctx.id_map.outbound(&row.args);
    let mut out = RowAnswer { exchanges: Vec::new(), sent: None, no_session: false };
    let mut waited = 0;
    for attempt in 0.. {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        let ex = match row.id {
            Some(id) => {
                let this = id(attempt);
                out.sent = Some(this.clone());
                let body = json!({ "jsonrpc": "2.0", "id": this, "method": "tools/call",
                                   "params": { "name": row.tool, "arguments": args } });
                let mut ex = client.post_raw(serde_json::to_vec(&body)?, None, &[]).await;
                ex.method = "tools/call".to_owned();
                ex.tool = Some(row.tool.clone());
                ex.sent_strings = crate::client::sent_strings(&args);
                ex
            }
            None if revision == Some(STATELESS) => {
                let params = json!({ "name": row.tool, "arguments": args });
                let mut ex = client.request_2026("tools/call", params, &[]).await;
                ex.sent_strings = crate::client::sent_strings(&args);
                ex
            }
            None => client.call_tool(&row.tool, args.clone()).await,
        };
        let wait = crate::rules::rate_wait_ms(&ex);
        out.exchanges.push(ex);
        let Some(ms) = wait else { break };
        let ms = ms.clamp(1, PATIENCE_MS) + 50;
        if waited + ms > PATIENCE_MS {
            break;
        }
        waited += ms;
        let why = format!("rate window of {}/{} full", row.persona, row.tool);
        let wait = std::time::Duration::from_millis(ms);
        let until = deadline.unwrap_or_else(|| std::time::Instant::now() + wait);
        ctx.rate_waits.wait(&why, wait, until).await;
    }
    ctx.give_back(pool, client);
    Ok(out)
}

/// The revision without sessions: each request carries its version (`McpClient::request_2026`).
const STATELESS: &str = "2026-07-28";

/// Where a persona's idle sessions of `revision` wait between rows.
fn pool_key(persona: &str, revision: Option<&str>) -> String {
    match revision {
        None => persona.to_owned(),
        Some(r) => format!("{persona}@{r}"),
    }
}

/// [`session`] over `revision`: one initialized with it (none for the stateless revision).
async fn session_over(
    ctx: &crate::context::RunContext,
    persona: &str,
    revision: Option<&'static str>,
) -> anyhow::Result<Result<crate::client::McpClient, Exchange>> {
    use anyhow::Context as _;
    let Some(revision) = revision else { return session(ctx, persona).await };
    let pooled = ctx.take_session(&pool_key(persona, Some(revision)));
    let mut client = match pooled {
        Some(client) => client,
        None => ctx
            .client(persona)
            .with_context(|| format!("the profile has no token for persona \"{persona}\""))?,
    };
    if revision != STATELESS && !client.is_initialized() {
        let ex = client.initialize_with(revision, &[]).await;
        if !client.is_initialized() {
            return Ok(Err(ex));
        }
    }
    Ok(Ok(client))
}

/// `rows` as a matrix sends them: all of them over the run's revision; over another one
/// (`ConformanceWorld::revision`), the first row of each `key` (a tool and argument): the rule is
/// held on that revision's path, its every edge on the run's.
fn sample<T, K: Eq + std::hash::Hash>(w: &ConformanceWorld, rows: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    if w.revision.is_none() {
        return rows;
    }
    let mut seen = std::collections::HashSet::new();
    rows.into_iter().filter(|r| seen.insert(key(r))).collect()
}

/// The rows of the matrices that follow go over `revision`, when the server serves it (proven by
/// an exchange: `initialize` answered with it, or a stateless call served); otherwise the
/// scenario does not apply. Over stdio a revision changes no request the rows make.
#[given(regex = r"^the rows are sent over protocol revision (\S+)$")]
async fn rows_over_revision(w: &mut ConformanceWorld, revision: String) -> anyhow::Result<()> {
    let Some(revision) = chataigne_contract::PROTOCOL_VERSIONS.iter().copied().find(|v| *v == revision)
    else {
        return Err(w.fail("a revision of the contract's", revision));
    };
    if revision == STATELESS {
        super::transport::serves_2026(w).await?;
    } else {
        if w.ctx().stdio.is_some() {
            return Err(
                w.not_applicable("the server is reached over stdio, where one session speaks one revision")
            );
        }
        let mut client = w.fresh_client()?;
        let ex = client.initialize_with(revision, &[]).await;
        let got = client.protocol_version.clone();
        w.record(ex);
        if got.as_deref() != Some(revision) {
            return Err(w.not_applicable(format!(
                "the server does not serve protocol version {revision} (initialize answered {})",
                got.as_deref().unwrap_or("no version")
            )));
        }
    }
    w.revision = Some(revision);
    Ok(())
}

/// An initialized session of `persona`: one the run kept, or a new one; `Err` the exchange of an
/// initialize that failed.
async fn session(
    ctx: &crate::context::RunContext,
    persona: &str,
) -> anyhow::Result<Result<crate::client::McpClient, Exchange>> {
    use anyhow::Context as _;
    let mut client = match ctx.take_session(persona) {
        Some(client) => client,
        None => ctx
            .client(persona)
            .with_context(|| format!("the profile has no token for persona \"{persona}\""))?,
    };
    if !client.is_initialized() {
        let ex = client.initialize().await;
        if !client.is_initialized() {
            return Ok(Err(ex));
        }
    }
    Ok(Ok(client))
}

/// A cursor matrix row's calls, in order: its first page; if that has a cursor, the changed
/// arguments alone, then with the cursor (arguments in dataset IDs).
async fn call_cursor_row(
    ctx: &crate::context::RunContext,
    persona: &str,
    tool: &str,
    first: &Value,
    changed: &Value,
    deadline: Option<std::time::Instant>,
) -> anyhow::Result<RowAnswer> {
    let mut client = match session(ctx, persona).await? {
        Ok(client) => client,
        Err(ex) => return Ok(RowAnswer { exchanges: vec![ex], sent: None, no_session: true }),
    };
    let mut out = RowAnswer { exchanges: Vec::new(), sent: None, no_session: false };
    let late = || deadline.is_some_and(|d| std::time::Instant::now() >= d);
    if !late() {
        let ex = client.call_tool(tool, ctx.id_map.outbound(first)).await;
        let cursor = page_cursor(&ex);
        out.exchanges.push(ex);
        if let Some(cursor) = cursor
            && !late()
        {
            out.exchanges.push(client.call_tool(tool, ctx.id_map.outbound(changed)).await);
            if !late() {
                let args = ctx.id_map.outbound(&with(changed, "cursor", json!(cursor)));
                out.exchanges.push(client.call_tool(tool, args).await);
            }
        }
    }
    ctx.give_back(persona.to_owned(), client);
    Ok(out)
}

/// The `next_cursor` of a success, as `ConformanceWorld::success` reads it.
fn page_cursor(ex: &Exchange) -> Option<String> {
    let structured = ex.structured().filter(|_| !ex.is_error())?;
    match envelope::parse(structured) {
        Ok(Parsed::Success { meta, .. }) => meta.next_cursor.filter(|c| !c.is_empty()),
        _ => None,
    }
}

/// Record a row's exchanges in the scenario, in order: the last one is the row's answer
/// (`w.last()`). A session that could not start fails the step, as the persona's own would.
fn record_row(w: &mut ConformanceWorld, persona: &str, answer: RowAnswer) -> anyhow::Result<Option<Value>> {
    let no_session = answer.no_session;
    for ex in answer.exchanges {
        w.record(ex);
    }
    if no_session {
        let got = w.last()?.summary();
        return Err(w.fail(format!("initialize to succeed for persona \"{persona}\""), got));
    }
    w.check_deadline()?;
    Ok(answer.sent)
}

fn with(args: &Value, key: &str, value: Value) -> Value {
    let mut args = args.clone();
    args[key] = value;
    args
}

/// PAG-6 for every argument a cursor is bound to: the first page's cursor, sent with that one
/// argument changed, is refused. A change the server would refuse anyway (a conversation asked
/// through a restaurant that does not hold it) needs only a refusal; any other, MCP_CURSOR_INVALID.
#[then("every cursor is refused when one argument it was issued for changes")]
async fn cursor_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    use futures::StreamExt as _;
    let rows = matrices::cursor_rows(w.dataset());
    let mut misses = Misses::default();
    // Rows side by side (`ROWS_AT_ONCE`), each row's calls in order; recorded and judged below
    // in row order.
    w.check_deadline()?;
    let persona = w.persona()?.to_owned();
    let (ctx, deadline) = (w.ctx_arc(), w.deadline);
    let args: Vec<(Value, Value)> = rows
        .iter()
        .map(|row| {
            let size = matrices::page_size(row.tool).unwrap_or("limit");
            (with(&row.base, size, json!(1)), with(&row.changed, size, json!(1)))
        })
        .collect();
    let answers: Vec<anyhow::Result<RowAnswer>> =
        futures::stream::iter(rows.iter().zip(&args).map(|(row, (first, changed))| {
            call_cursor_row(&ctx, &persona, row.tool.as_str(), first, changed, deadline)
        }))
        .buffered(ROWS_AT_ONCE)
        .collect()
        .await;
    for (row, answer) in rows.iter().zip(answers) {
        let tool = row.tool.as_str();
        let name = format!("{tool} with {} changed", row.argument);
        let mut exchanges = answer?;
        if exchanges.no_session {
            record_row(w, &persona, exchanges)?;
            continue;
        }
        let mut calls = std::mem::take(&mut exchanges.exchanges).into_iter();
        let mut next = |w: &mut ConformanceWorld| -> anyhow::Result<()> {
            match calls.next() {
                Some(ex) => {
                    w.record(ex);
                    Ok(())
                }
                // Only the run's deadline leaves a row's calls unsent.
                None => w.check_deadline().and_then(|()| Err(anyhow::anyhow!("a row's call was not sent"))),
            }
        };
        next(w)?;
        let cursor = w.success().ok().and_then(|s| s.meta.next_cursor).filter(|c| !c.is_empty());
        let Some(_) = cursor else {
            misses.add(w, format!("{name}: no cursor to reuse (first page: {})", outcome(w)));
            continue;
        };
        next(w)?;
        // Refused alone: the arguments' own refusal (the same code) is the most a cursor can
        // add; any other answer is not that refusal, and a success serves a foreign page.
        let alone = error_code(w);
        next(w)?;
        match error_code(w) {
            Some(code) if code == ErrorCode::CursorInvalid.as_str() => {}
            Some(code) if alone.as_deref() == Some(code.as_str()) => {}
            _ => {
                let alone = alone.map_or_else(|| "served".to_owned(), |c| format!("refused alone with {c}"));
                misses.add(
                    w,
                    format!("{name}: {} (the changed arguments without the cursor: {alone})", outcome(w)),
                )
            }
        }
    }
    misses.verdict(w, rows.len(), "MCP_CURSOR_INVALID for a cursor reused with any one argument changed")
}

/// PAG-6's tool binding for every ordered pair of tools that page: each source's first page
/// (size 1) gives a cursor, sent to every other tool with that tool's own arguments, which must
/// answer MCP_CURSOR_INVALID. The first pages, then the reuses, side by side (`ROWS_AT_ONCE`).
#[then("every cursor is refused by every other tool that pages")]
async fn cursor_tool_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows = matrices::cursor_tool_rows(w.dataset());
    let persona = w.persona()?.to_owned();
    let mut misses = Misses::default();
    let mut sources: Vec<(ToolName, Value)> = Vec::new();
    for row in &rows {
        if !sources.iter().any(|(tool, _)| *tool == row.from) {
            let size = matrices::page_size(row.from).unwrap_or("limit");
            sources.push((row.from, with(&row.from_args, size, json!(1))));
        }
    }
    let firsts = sources
        .iter()
        .map(|(tool, args)| RowCall {
            persona: persona.clone(),
            tool: tool.as_str().to_owned(),
            args: args.clone(),
            id: None,
        })
        .collect();
    let mut cursors: HashMap<ToolName, String> = HashMap::new();
    for ((tool, _), answer) in sources.iter().zip(call_rows(w, firsts).await?) {
        record_row(w, &persona, answer)?;
        match w.success().ok().and_then(|s| s.meta.next_cursor).filter(|c| !c.is_empty()) {
            Some(cursor) => {
                cursors.insert(*tool, cursor);
            }
            None => {
                misses.add(w, format!("{}: no cursor to reuse (first page: {})", tool.as_str(), outcome(w)))
            }
        }
    }
    let reused: Vec<_> = rows.iter().filter_map(|r| cursors.get(&r.from).map(|c| (r, c))).collect();
    let calls = reused
        .iter()
        .map(|(row, cursor)| RowCall {
            persona: persona.clone(),
            tool: row.to.as_str().to_owned(),
            args: with(&row.to_args, "cursor", json!(cursor)),
            id: None,
        })
        .collect();
    for ((row, _), answer) in reused.iter().zip(call_rows(w, calls).await?) {
        record_row(w, &persona, answer)?;
        if error_code(w).as_deref() != Some(ErrorCode::CursorInvalid.as_str()) {
            misses.add(
                w,
                format!("{}'s cursor sent to {}: {}", row.from.as_str(), row.to.as_str(), outcome(w)),
            );
        }
    }
    if rows.is_empty() {
        return Err(w.fail("pairs of tools that page", "none derived from the contract's tools"));
    }
    misses.verdict(
        w,
        rows.len(),
        "MCP_CURSOR_INVALID for a cursor sent to another tool than the one that issued it",
    )
}

/// PRE-3 for every (from, to) pair the lifecycle forbids: refused as `the move is refused as
/// against the lifecycle` judges (the exact code is the reference's `transition-code`), the
/// order's status unchanged. One order per starting state, claimed for the run.
#[then("every move the order lifecycle forbids is refused and leaves the order as it was")]
async fn transition_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows = matrices::refused_transitions();
    let restaurant = w.dataset().landmarks.busy_restaurant.clone();
    let mut misses = Misses::default();
    let mut from_states: Vec<&str> = rows.iter().map(|(f, _)| *f).collect();
    from_states.dedup();
    for from in from_states {
        let order = super::writes::order_in_status(w, &restaurant, from).await?;
        for (_, to) in rows.iter().filter(|(f, _)| *f == from) {
            let args = json!({ "restaurant_id": restaurant, "order_id": order, "status": to, "expected_status": from });
            w.dirty = true;
            w.call_tool("update_order_status", args).await?;
            if super::writes::judge_lifecycle_refusal(w).is_err() {
                misses.add(w, format!("{from} → {to}: {}", outcome(w)));
            }
        }
        w.call_tool("get_order", json!({ "restaurant_id": restaurant, "order_id": order })).await?;
        let success = w.success()?;
        let status = w.field(&success.data, "/order/status")?.as_str().unwrap_or_default().to_owned();
        if status != from {
            misses.add(w, format!("{order} was {from} and is now {status} after refused moves"));
        }
    }
    misses.verdict(w, rows.len(), "a refusal of every move the lifecycle forbids, and no effect")
}

/// AUTH-3/4/6 for every tool × persona × restaurant whose first failing check (in AUTH-8's
/// order) is `check`: refused with the code of one of the checks the row fails (the seed orders
/// none of them; the reference's first is `check-order`).
#[then(regex = r"^every tool refuses every persona that the (scope|membership|role) table excludes$")]
async fn refusal_matrix(w: &mut ConformanceWorld, table: String) -> anyhow::Result<()> {
    let check = match table.as_str() {
        "scope" => Check::Scope,
        "membership" => Check::Membership,
        _ => Check::Role,
    };
    let rows: Vec<_> =
        matrices::access_rows(w.dataset()).into_iter().filter(|r| r.fails.first() == Some(&check)).collect();
    let rows = sample(w, rows, |r| r.tool);
    let mut misses = Misses::default();
    let calls = rows
        .iter()
        .map(|r| RowCall {
            persona: r.persona.clone(),
            tool: r.tool.as_str().to_owned(),
            args: r.args.clone(),
            id: None,
        })
        .collect();
    let answers = call_rows(w, calls).await?;
    for (row, answer) in rows.iter().zip(answers) {
        w.use_persona(&row.persona)?;
        if row.tool.kind().is_write() {
            w.dirty = true;
        }
        record_row(w, &row.persona, answer)?;
        let got = error_code(w);
        let allowed: Vec<&str> = row.fails.iter().map(|c| c.code().as_str()).collect();
        match got.as_deref() {
            Some(code) if code == check.code().as_str() => {}
            Some(code) if allowed.contains(&code) => w.ext_difference(
                "check-order",
                format!(
                    "{} calling {} on {}: {code}, where the reference's first failing check gives {}",
                    row.persona,
                    row.tool.as_str(),
                    row.restaurant,
                    check.code()
                ),
            ),
            _ => misses.add(
                w,
                format!(
                    "{} calling {} on {}: {} (expected {})",
                    row.persona,
                    row.tool.as_str(),
                    row.restaurant,
                    outcome(w),
                    allowed.join(" or ")
                ),
            ),
        }
    }
    if rows.is_empty() {
        return Err(w.fail(format!("rows refused by the {table} table"), "none derived from the dataset"));
    }
    let rule = format!("{} ({}) for every call the {table} table refuses", check.code(), check.clause());
    misses.verdict(w, rows.len(), &rule)
}

/// ENV-1 on every read tool: each one called once as the owner on the busy restaurant (the access
/// tables' allowed rows), so every read's success meets the judge's envelope rules.
#[when("they call every read tool once, as the tables allow the owner on the busy restaurant")]
async fn every_read_once(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let busy = w.dataset().landmarks.busy_restaurant.clone();
    let mut tools = std::collections::HashSet::new();
    let rows: Vec<_> = matrices::access_rows(w.dataset())
        .into_iter()
        .filter(|r| {
            r.fails.is_empty() && !r.tool.kind().is_write() && r.persona == "owner" && r.restaurant == busy
        })
        .filter(|r| tools.insert(r.tool))
        .collect();
    if rows.is_empty() {
        return Err(
            w.fail("read tools the owner may call on the busy restaurant", "none derived from the dataset")
        );
    }
    let calls = rows
        .iter()
        .map(|r| RowCall {
            persona: r.persona.clone(),
            tool: r.tool.as_str().to_owned(),
            args: r.args.clone(),
            id: None,
        })
        .collect();
    for answer in call_rows(w, calls).await? {
        record_row(w, "owner", answer)?;
    }
    Ok(())
}

/// ENV-1: every success of the scenario carries one text a person can read (the judge's rule,
/// `rules::records::no_text`: one prose block, besides any JSON an SDK adds).
#[then("every success carries one text block a person can read, besides any JSON")]
async fn every_success_one_text(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut misses = Misses::default();
    let successes: Vec<Exchange> =
        w.tool_calls().filter(|e| crate::rules::records::applies_tool_success(e)).cloned().collect();
    for ex in &successes {
        if let Some(detail) = crate::rules::records::no_text(ex) {
            misses.add(w, detail);
        }
    }
    if successes.is_empty() {
        return Err(w.fail("successes to read", "none"));
    }
    misses.verdict(w, successes.len(), "one readable text block on every success")
}

/// The other side of the tables: every read a persona's scope, membership and role allow is
/// served (writes that are allowed change state; their scenarios are the hand-written ones).
#[then("every persona is served every read the scope, membership and role tables allow")]
async fn allowed_reads(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows: Vec<_> = matrices::access_rows(w.dataset())
        .into_iter()
        .filter(|r| r.fails.is_empty() && !r.tool.kind().is_write())
        .collect();
    let rows = sample(w, rows, |r| r.tool);
    let mut misses = Misses::default();
    let calls = rows
        .iter()
        .map(|r| RowCall {
            persona: r.persona.clone(),
            tool: r.tool.as_str().to_owned(),
            args: r.args.clone(),
            id: None,
        })
        .collect();
    let answers = call_rows(w, calls).await?;
    for (row, answer) in rows.iter().zip(answers) {
        w.use_persona(&row.persona)?;
        record_row(w, &row.persona, answer)?;
        if outcome(w) != "success" {
            misses.add(
                w,
                format!(
                    "{} calling {} on {}: {}",
                    row.persona,
                    row.tool.as_str(),
                    row.restaurant,
                    outcome(w)
                ),
            );
        }
    }
    if rows.is_empty() {
        return Err(w.fail("reads the tables allow", "none derived from the dataset"));
    }
    misses.verdict(w, rows.len(), "a success for every read the tables allow")
}

/// PRE-3's other side: every step forward of the lifecycle from `accepted` on, from the state the
/// caller saw, is served and shows in the order afterwards. One order walks the rest of the
/// lifecycle (claimed for the run). It starts accepted, not received: received orders are what
/// runs without a reset use up (`RECEIVED_PER_RUN`), while every run leaves accepted ones
/// (PRE-2, PRE-4); the first step, received → accepted, is PRE-2's own scenario.
#[then("every step forward the order lifecycle allows from accepted on is served and shows in the order")]
async fn forward_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows: Vec<_> = matrices::forward_moves().into_iter().skip(1).collect();
    let restaurant = w.dataset().landmarks.busy_restaurant.clone();
    let Some((start, _)) = rows.first() else {
        return Err(w.fail("steps forward in the lifecycle", "none derived from the contract"));
    };
    let order = super::writes::order_in_status(w, &restaurant, start).await?;
    let mut misses = Misses::default();
    for (from, to) in &rows {
        let args =
            json!({ "restaurant_id": restaurant, "order_id": order, "status": to, "expected_status": from });
        w.dirty = true;
        call_patiently(w, "update_order_status", args).await?;
        if outcome(w) != "success" {
            // The walk cannot go on from a state the order did not reach.
            misses.add(w, format!("{from} → {to}: {}", outcome(w)));
            break;
        }
        call_patiently(w, "get_order", json!({ "restaurant_id": restaurant, "order_id": order })).await?;
        let success = w.success()?;
        let status = w.field(&success.data, "/order/status")?.as_str().unwrap_or_default().to_owned();
        if status != *to {
            misses.add(w, format!("{from} → {to} served, and {order} is now {status}"));
            break;
        }
    }
    misses.verdict(w, rows.len(), "every step forward of the lifecycle served, with its effect")
}

/// Every bound of every tool's input schema filed under `clause` (`matrices::bound_rows`): past
/// it, refused for the arguments (a validation error, or MCP's -32602; for an ID, an access
/// refusal too); on it, for reads, served.
/// ENV-3: every write whose free text could outgrow a summary, served with that text at its
/// maximum in three-byte characters (`BoundRow::widest_text`), with a key of this step's own; the
/// summaries are judged like every answer's.
#[when(
    "they make every write whose text could outgrow a summary, with that text at its maximum in three-byte characters"
)]
async fn widest_writes(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows: Vec<_> = matrices::bound_rows(w.dataset()).into_iter().filter(|r| r.widest_text()).collect();
    if rows.is_empty() {
        return Err(w.fail("a write whose text can outgrow 4 KiB", "none derived from the contract"));
    }
    let persona = w.persona()?.to_owned();
    let calls = rows
        .iter()
        .map(|r| {
            let mut args = r.args.clone();
            let key = args["idempotency_key"].as_str().unwrap_or_default().to_owned();
            args["idempotency_key"] = json!(format!("{key}-env3"));
            RowCall { persona: persona.clone(), tool: r.tool.as_str().to_owned(), args, id: None }
        })
        .collect();
    w.dirty = true;
    for answer in call_rows(w, calls).await? {
        record_row(w, &persona, answer)?;
    }
    Ok(())
}

#[then(regex = r"^every input bound filed under ([A-Z]+-[0-9]+) is refused past it and served on it$")]
async fn bound_matrix(w: &mut ConformanceWorld, clause: String) -> anyhow::Result<()> {
    let rows: Vec<_> = matrices::bound_rows(w.dataset()).into_iter().filter(|r| r.clause == clause).collect();
    // Over another revision, one row per tool, argument and outcome (refused, served); no write
    // served: its key is the run's revision's row's, and sent at the same time on two revisions
    // the second is told the first is in progress (IDEM-4), a verdict that would hang on timing.
    let rows = sample(w, rows, |r| (r.tool, r.argument.clone(), r.expect == matrices::Expect::Refused));
    let rows: Vec<_> = rows
        .into_iter()
        .filter(|r| {
            w.revision.is_none() || !(r.tool.kind().is_write() && r.expect == matrices::Expect::Served)
        })
        .collect();
    if rows.is_empty() {
        return Err(w.fail(format!("input bounds filed under {clause}"), "none derived from the contract"));
    }
    let mut misses = Misses::default();
    let reference = ErrorCode::InvalidArguments.as_str();
    let mut other_codes = Vec::new();
    let mut differences: Vec<(&'static str, String)> = Vec::new();
    let persona = w.persona()?.to_owned();
    let calls = rows
        .iter()
        .map(|r| RowCall {
            persona: persona.clone(),
            tool: r.tool.as_str().to_owned(),
            args: r.args.clone(),
            id: None,
        })
        .collect();
    let answers = call_rows(w, calls).await?;
    for (row, answer) in rows.iter().zip(answers) {
        if row.tool.kind().is_write() {
            w.dirty = true;
        }
        record_row(w, &persona, answer)?;
        let held = bound_held(w, row)?;
        // The seed names no code for these refusals; the reference's is MCP_INVALID_ARGUMENTS.
        let code = error_code(w);
        if held && row.expect == matrices::Expect::Refused && code.as_deref() != Some(reference) {
            let got = code.unwrap_or_else(|| "JSON-RPC error -32602".to_owned());
            other_codes.push(format!("{} with {}: {got}", row.tool.as_str(), row.edge));
        }
        if held {
            continue;
        }
        let want = crate::rules::bounds::expected(row);
        let what = format!("{} with {}: {} (expected {want})", row.tool.as_str(), row.edge, outcome(w));
        match seed_or_choice(w, row) {
            Some(choice) => differences.push((choice, what)),
            None => misses.add(w, what),
        }
    }
    for (choice, what) in differences {
        w.ext_difference(choice, what);
    }
    if let Some(first) = other_codes.first() {
        w.ext_difference(
            "error-codes",
            format!(
                "{} of the {} refusals with another code than {reference} (first: {first})",
                other_codes.len(),
                rows.iter().filter(|r| r.expect == matrices::Expect::Refused).count()
            ),
        );
    }
    misses.verdict(w, rows.len(), &format!("every input bound under {clause} held at its edge"))
}

/// The reference choice a bound row checks, if the seed level does not hold this server to it.
fn seed_or_choice(w: &ConformanceWorld, row: &matrices::BoundRow) -> Option<&'static str> {
    crate::rules::bounds::choice(row, w.ctx().published.refuses(row.tool.as_str(), &row.args))
}

/// Whether the last answer is what `row` expects (`rules::bounds::held`).
fn bound_held(w: &ConformanceWorld, row: &matrices::BoundRow) -> anyhow::Result<bool> {
    Ok(crate::rules::bounds::held(row, w.last()?))
}

/// The id kinds a loose implementation gets wrong on a refusal it builds itself (JSON-RPC 2.0
/// §5: the answer's id is the request's, string or number): the `n`th row's, unique in the
/// session (the client's own ids are small positive integers, 0 excepted).
fn varied_id(n: usize, attempt: u32) -> Value {
    let tag = n * 100 + attempt as usize;
    match n % 5 {
        _ if n == 0 && attempt == 0 => json!(0),
        0 | 1 => json!(format!("bound-{tag}")),
        2 => json!(format!("{}", 9_000_000 + tag)),
        3 => json!(-1 - tag as i64),
        _ => json!((1_i64 << 53) - 1 - tag as i64),
    }
}

/// PROTO-2 on the paths a server's own validation answers: every argument of every tool past its
/// bounds under each clause that bounds it (`matrices::bound_rows`, the first refused row of each
/// tool, argument and clause: the values of one argument refused under one clause take one path
/// through a validator, and the bound matrices send them all), each on a request of another id
/// kind, answers that id with its type. Whether it is refused is the bound matrices' to judge,
/// under each row's clause (a server may clamp an ext bound, and then answers from another path:
/// the id must still be there).
#[then("every tool answers every argument past its bounds with the request's own id, whatever its kind")]
async fn bound_ids_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let mut paths = std::collections::HashSet::new();
    let rows: Vec<_> = matrices::bound_rows(w.dataset())
        .into_iter()
        .filter(|r| r.expect == matrices::Expect::Refused)
        .filter(|r| paths.insert((r.tool, r.argument.clone(), r.clause)))
        .collect();
    if rows.is_empty() {
        return Err(w.fail("refused input bounds", "none derived from the contract"));
    }
    let mut misses = Misses::default();
    let persona = w.persona()?.to_owned();
    let ids: Vec<_> = (0..rows.len()).map(|n| move |attempt| varied_id(n, attempt)).collect();
    let calls = rows
        .iter()
        .zip(&ids)
        .map(|(r, id)| RowCall {
            persona: persona.clone(),
            tool: r.tool.as_str().to_owned(),
            args: r.args.clone(),
            id: Some(id as &(dyn Fn(u32) -> Value + Sync)),
        })
        .collect();
    let answers = call_rows(w, calls).await?;
    for (row, answer) in rows.iter().zip(answers) {
        if row.tool.kind().is_write() {
            w.dirty = true;
        }
        let sent = record_row(w, &persona, answer)?;
        let ex = w.last()?;
        let carried = sent.as_ref().is_some_and(|sent| rules::transport::carries_id(ex, sent).is_ok());
        if !carried {
            let got = ex.message().and_then(|m| m.get("id")).map_or("none".to_owned(), Value::to_string);
            let sent = sent.map_or("none".to_owned(), |v| v.to_string());
            misses.add(
                w,
                format!(
                    "{} with {} (id {sent}): {}, answer id {got}",
                    row.tool.as_str(),
                    row.edge,
                    outcome(w)
                ),
            );
        }
    }
    misses.verdict(w, rows.len(), "every answer to an argument past its bounds names the request's id")
}

/// LIM-5 for every row of `matrices::page_size_rows`: each page of the walk is within 128 KiB or
/// the answer is the failure (`rules::untruncated_page`), a page marked truncated has a
/// `next_cursor`, no item comes twice, and without a filter every record of the dataset comes
/// (a filtered walk is not held to the dataset's statuses: other runs may have moved an order).
#[then(
    "every page the dataset makes too big for 128 KiB is cut and marked truncated, under every filter and for every persona that reaches it, and its walk loses nothing"
)]
async fn page_size_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows = matrices::page_size_rows(w.dataset());
    if rows.is_empty() {
        return Err(w.fail("pages over 128 KiB", "none derived from the dataset"));
    }
    let mut misses = Misses::default();
    for row in &rows {
        w.use_persona(&row.persona)?;
        if let Some(miss) = walk_cut(w, row).await? {
            let what = format!(
                "{} calling {} on {} ({})",
                row.persona,
                row.tool.as_str(),
                row.restaurant,
                row.filter
            );
            misses.add(w, format!("{what}: {miss}"));
        }
    }
    misses.verdict(w, rows.len(), "every page over 128 KiB cut and marked truncated, its walk losing nothing")
}

/// The walk of one size row; `Some`: what was wrong.
async fn walk_cut(w: &mut ConformanceWorld, row: &matrices::SizeRow) -> anyhow::Result<Option<String>> {
    let bound = row.ids.len() + 10;
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut cursor: Option<String> = None;
    for page in 1..=bound {
        let mut args = row.args.clone();
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        call_patiently(w, row.tool.as_str(), args).await?;
        let ex = w.last()?;
        if let Some(detail) = rules::untruncated_page(ex) {
            return Ok(Some(format!("page {page}: {detail}")));
        }
        let limit =
            row.args.get("limit").and_then(Value::as_u64).unwrap_or(chataigne_contract::DEFAULT_LIMIT as u64);
        if let Some(detail) = rules::cut_unmarked(ex, &row.key, limit) {
            return Ok(Some(format!("page {page}: {detail}")));
        }
        if outcome(w) != "success" {
            return Ok(Some(format!("page {page}: {}", outcome(w))));
        }
        let Some(structured) = w.last()?.structured() else {
            return Ok(Some(format!("page {page}: no structured output")));
        };
        let Some(items) = structured.pointer(&format!("/data/{}", row.key)).and_then(Value::as_array) else {
            return Ok(Some(format!("page {page}: no array data.{}", row.key)));
        };
        let truncated = structured.pointer("/meta/truncated").and_then(Value::as_bool) == Some(true);
        let next = structured.pointer("/meta/next_cursor").and_then(Value::as_str).map(str::to_owned);
        if truncated && next.is_none() {
            return Ok(Some(format!("page {page} is marked truncated and has no next_cursor")));
        }
        for item in items {
            let Some(id) = item.get("id").and_then(Value::as_str) else {
                return Ok(Some(format!("page {page}: an item without an id")));
            };
            *seen.entry(w.ctx().id_map.to_dataset(id)).or_default() += 1;
        }
        match next {
            None => break,
            Some(_) if page == bound => return Ok(Some(format!("still a next_cursor after {bound} pages"))),
            Some(c) => cursor = Some(c),
        }
    }
    let twice: Vec<&str> = seen.iter().filter(|(_, n)| **n > 1).map(|(id, _)| id.as_str()).collect();
    if let Some(id) = twice.first() {
        return Ok(Some(format!("{} items came twice ({id} first)", twice.len())));
    }
    if row.filter == "no filter" {
        let lost: Vec<&str> =
            row.ids.iter().filter(|id| !seen.contains_key(*id)).map(String::as_str).collect();
        if let Some(id) = lost.first() {
            return Ok(Some(format!("{} of {} records never came ({id} first)", lost.len(), row.ids.len())));
        }
    }
    Ok(None)
}

/// LIM-6 for every row of `matrices::item_size_rows`: refused with MCP_OUTPUT_TOO_LARGE, or
/// served within 128 KiB (a server's own rendering may be smaller than the dataset's).
#[then(
    "every record the dataset makes too big for 128 KiB is refused as too large to every persona that reaches it"
)]
async fn item_size_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows = matrices::item_size_rows(w.dataset());
    if rows.is_empty() {
        return Err(w.fail("records over 128 KiB", "none derived from the dataset"));
    }
    let mut misses = Misses::default();
    let too_large = ErrorCode::OutputTooLarge.as_str();
    for row in &rows {
        w.use_persona(&row.persona)?;
        call_patiently(w, row.tool.as_str(), row.args.clone()).await?;
        let got = outcome(w);
        // A success within 128 KiB is a smaller rendering of the record, unless the record's
        // text alone is over 128 KiB: then it cannot be the record whole.
        let whole_fits = row.content_bytes <= chataigne_contract::MAX_STRUCTURED_BYTES;
        let miss = match rules::oversized_item(w.last()?) {
            Some(detail) => Some(detail),
            None if got == too_large || (got == "success" && whole_fits) => None,
            None if got == "success" => Some(format!(
                "a success of {} bytes for a record whose text alone is {} bytes: not the record whole (expected {too_large})",
                w.last()?.structured_bytes(),
                row.content_bytes
            )),
            None => Some(format!("{got} (expected {too_large})")),
        };
        if let Some(miss) = miss {
            let what = format!(
                "{} calling {} on {} ({})",
                row.persona,
                row.tool.as_str(),
                row.restaurant,
                row.filter
            );
            misses.add(w, format!("{what}: {miss}"));
        }
    }
    misses.verdict(w, rows.len(), &format!("{too_large} for every record over 128 KiB"))
}

/// The tables' allowed side for writes, without an effect: every state change a persona's scope,
/// membership and role allow gets as far as its precondition. The arguments name a state the
/// record is not in, so a server that let the persona through answers with the precondition's
/// conflict; a refusal for access there is the table broken. (Writes that create records are
/// left to the hand-written scenarios: their effect would change what others list.)
#[then("every persona gets to the precondition of every state change the tables allow")]
async fn allowed_state_changes(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let rows: Vec<_> = matrices::access_rows(w.dataset())
        .into_iter()
        .filter(|r| r.fails.is_empty() && r.tool.kind().is_write() && r.args.get("expected_status").is_some())
        .collect();
    if rows.is_empty() {
        return Err(w.fail("state changes the tables allow", "none derived from the dataset"));
    }
    let mut misses = Misses::default();
    for row in &rows {
        w.use_persona(&row.persona)?;
        w.dirty = true;
        call_patiently(w, row.tool.as_str(), row.args.clone()).await?;
        let category = error_category(w);
        if category.as_deref() != Some("conflict") {
            misses.add(
                w,
                format!(
                    "{} calling {} on {}: {} (expected the precondition's conflict)",
                    row.persona,
                    row.tool.as_str(),
                    row.restaurant,
                    outcome(w)
                ),
            );
        }
    }
    misses.verdict(w, rows.len(), "every state change the tables allow reaches its precondition")
}

/// LIM-4 for every tool (`matrices::deadline_rows`), each kind held to its own deadline: every
/// tool slowed by 250 ms, in two passes with some deadlines shortened to 100 ms and the others at
/// the contract's. Pass 1 shortens read and analytics, pass 2 read and write: every tool is past
/// its deadline in one pass (a read answers MCP_TOOL_TIMEOUT, a write MCP_OUTCOME_UNKNOWN, never a
/// success) and every two kinds are apart in one (the one within its deadline succeeds: analytics
/// held to the read deadline, or every tool to one deadline, are seen). Needs a fresh server
/// state: the writes' effects happen.
#[then("every tool past the deadline of its kind answers its timeout, never a success")]
async fn deadline_matrix(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    use chataigne_contract::Kind;
    const DEADLINE_MS: u64 = 100;
    const SLOWER_MS: u64 = 250;
    // The deadlines shortened in each pass; the writes' pass last, so that their late effects
    // are waited for once.
    const PASSES: [&[&str]; 2] = [&["read", "analytics"], &["read", "write"]];
    let rows = matrices::deadline_rows(w.dataset());
    if rows.is_empty() {
        return Err(w.fail("tools with a deadline", "none derived from the contract"));
    }
    let restaurant = w.dataset().landmarks.busy_restaurant.clone();
    // Every pass's arguments first: finding an order lists orders, which will be slowed. A keyed
    // write gets a key per pass; the restaurant's status goes back and forth (pass 1 sets it).
    let mut passes = Vec::new();
    for pass in 0..PASSES.len() {
        let mut calls = Vec::new();
        for row in &rows {
            calls.push(match &row.args {
                Some(args) => {
                    let mut args = args.clone();
                    if let Some(key) = args.get("idempotency_key").and_then(Value::as_str) {
                        args["idempotency_key"] = json!(format!("{key}-pass{}", pass + 1));
                    }
                    if pass % 2 == 1 && row.tool == ToolName::SetRestaurantStatus {
                        let (status, expected) = (args["status"].clone(), args["expected_status"].clone());
                        args["status"] = expected;
                        args["expected_status"] = status;
                    }
                    args
                }
                None => {
                    let order = super::writes::order_in_status(w, &restaurant, "received").await?;
                    json!({ "restaurant_id": restaurant, "order_id": order, "status": "accepted", "expected_status": "received" })
                }
            });
        }
        passes.push(calls);
    }
    w.dirty = true;
    let control = w.control()?.clone();
    let faults = rows
        .iter()
        .map(|row| control.add_fault(json!({ "tool": row.tool.as_str(), "latency_ms": SLOWER_MS })));
    futures::future::try_join_all(faults).await?;
    let persona = w.persona()?.to_owned();
    let mut misses = Misses::default();
    for (short, calls) in PASSES.iter().zip(passes) {
        let mut deadlines = serde_json::Map::new();
        for (name, kind) in [("read", Kind::Read), ("analytics", Kind::Analytics), ("write", Kind::Write)] {
            let ms = if short.contains(&name) { DEADLINE_MS } else { kind.deadline_ms() };
            deadlines.insert(format!("{name}_ms"), json!(ms));
        }
        control.set_deadlines(Value::Object(deadlines)).await?;
        // Every row's call side by side (`ROWS_AT_ONCE`): the rows wait out their deadlines
        // together, not one after another.
        let row_calls = rows
            .iter()
            .zip(calls)
            .map(|(row, args)| RowCall {
                persona: persona.clone(),
                tool: row.tool.as_str().to_owned(),
                args,
                id: None,
            })
            .collect();
        for (row, answer) in rows.iter().zip(call_rows(w, row_calls).await?) {
            let tool = row.tool.as_str();
            record_row(w, &persona, answer)?;
            let got = outcome(w);
            let past = short.contains(&row.deadline);
            let want = if past { row.expect.as_str() } else { "success" };
            if got != want {
                let got = if got == "success" { "a success".to_owned() } else { got };
                let when = if past { "past" } else { "within" };
                let shortened = short.join(" and ");
                misses.add(
                    w,
                    format!(
                        "{tool} {when} its {} deadline ({shortened} shortened to {DEADLINE_MS} ms, \
                         every tool {SLOWER_MS} ms slower): {got} (expected {want})",
                        row.deadline,
                    ),
                );
            }
        }
    }
    // A write answered at its deadline still runs once its latency is over, and its effect
    // lands then, SLOWER_MS after it was sent: wait for the last one, with 150 ms to spare, so
    // that the reset after the scenario is not followed by an effect (seen: a restaurant paused
    // under the next scenarios). The answers came at the deadline, so the rest is what is left.
    if rows.iter().any(|r| r.tool.kind().is_write()) {
        tokio::time::sleep(std::time::Duration::from_millis(SLOWER_MS - DEADLINE_MS + 150)).await;
    }
    control.clear_faults().await?;
    let judged = rows.len() * PASSES.len();
    misses.verdict(
        w,
        judged,
        "every tool past its deadline answers its kind's timeout, and within it a success",
    )
}
