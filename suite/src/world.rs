//! The one cucumber World: the run's shared context, the current persona and its sessions, every
//! exchange of the scenario, and the helpers steps use to call the server and to fail with a
//! message that fits one screen (clauses, expected vs got, request and response, request_id).

use std::collections::HashMap;
use std::fmt::{self, Display};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, anyhow};
use chataigne_contract::dataset::Dataset;
use chataigne_contract::envelope::{self, ErrorBody, Meta, Parsed};
use serde_json::{Value, json};

use crate::client::{Exchange, McpClient};
use crate::context::RunContext;
use crate::control::Control;

/// The state of one scenario. Steps receive it as `&mut ConformanceWorld`.
#[derive(cucumber::World, Default)]
pub struct ConformanceWorld {
    ctx: Option<Arc<RunContext>>,
    /// The scenario's name and the clause IDs among its tags, for failure messages.
    pub scenario: String,
    pub clauses: Vec<String>,
    /// Who "they" are in the steps.
    pub persona: Option<String>,
    clients: HashMap<String, McpClient>,
    /// Every exchange of the scenario, in order; the last one is what `Then` steps look at.
    pub history: Vec<Exchange>,
    /// How many calls the last `concurrently` sent at once (the last ones of `history`).
    pub last_concurrent: usize,
    /// What the judge (`crate::judge`) found on every exchange of the scenario, and how many
    /// exchanges each clause's rules judged (evidence).
    pub tally: crate::judge::Tally,
    /// Codes outside §9 the server answered with, each once per (code, category, retryable),
    /// with a request_id: the runner holds each code to one category and flag across the run.
    pub own_codes: Vec<(String, chataigne_contract::Category, bool, String)>,
    /// The last list call, so "the next page" can repeat it with its cursor.
    pub list: Option<ListCall>,
    /// The pages of the last walk.
    pub walk: Option<Walk>,
    /// The last tools/list answer of the scenario.
    pub tools: Option<Vec<Value>>,
    /// A string unique to this scenario, to prove it is never echoed or logged.
    pub canary: String,
    /// The scenario changed server state: the after hook resets it through the control API.
    pub dirty: bool,
    /// What the MCP client library saw (PROTO-1).
    pub library: Option<LibrarySession>,
    /// Values a step leaves for later steps (`order`: the order last moved, …).
    pub saved: HashMap<String, String>,
    /// The last JSON document fetched outside MCP (e.g. the protected resource metadata).
    pub document: Option<Value>,
    /// Differences from a reference choice (`contract::clauses::CHOICES`) that steps noticed
    /// while the seed-level check passed: (choice slug, what differed). They fail the scenario
    /// at the full level only.
    pub ext_differences: Vec<(String, String)>,
    /// A session of the scenario's own, never given back to the run's pool: it may be ended
    /// (DELETE) or have agreed on a version no other scenario should inherit.
    pub own_session: Option<McpClient>,
    /// Why a step stopped the scenario without a verdict (blocked by ENV-7, out of time), set
    /// where the error is made so the report never reads it from the message.
    pub halt: std::sync::OnceLock<Halt>,
    /// The protocol revision a matrix's rows are sent over, when not the run's: its rows are
    /// then sampled, one per tool and argument (`steps::matrices::sample`).
    pub revision: Option<&'static str>,
    /// When the whole run must end (`--deadline`): no call is sent after it.
    pub deadline: Option<std::time::Instant>,
    /// Bytes of answers held in `history` (see [`HISTORY_BUDGET_BYTES`]).
    retained_bytes: usize,
    /// The locks this scenario holds while it runs (`crate::schedule`).
    pub held: Option<crate::schedule::Held>,
    /// It changes the whole server (control API): it runs alone, and resets the server after.
    pub whole_server: bool,
    /// Records picked by the run's scenarios, so two never pick the same order.
    pub claims: Option<Arc<crate::schedule::Claims>>,
    /// The first error report received at or after the scenario's start (`error_reports`).
    pub reports_from: u64,
    /// The scenario's side of the differential oracle (`crate::oracle`): what it observed,
    /// wrote and created, compared with the reference.
    pub shadow: crate::oracle::Shadow,
    /// When its before hook began and when its locks were granted (the report's timing).
    pub queued_at: Option<std::time::Instant>,
    /// Memberships (user, organization; the server's IDs) it revoked and has not restored.
    pub revoked: Vec<(String, String)>,
    /// Where `history` stood when the scenario last revoked a membership: what came after is
    /// what the revocation must show in.
    pub revoked_at: Option<usize>,
    pub started_at: Option<std::time::Instant>,
}

/// One call of a batch run at once (`ConformanceWorld::concurrently`).
#[derive(Debug, Clone)]
pub struct Concurrent {
    pub persona: String,
    pub tool: String,
    /// In dataset IDs.
    pub args: Value,
    /// Sent this long after the batch starts.
    pub delay_ms: u64,
}

/// A list call that can be continued with its cursor.
#[derive(Debug, Clone)]
pub struct ListCall {
    pub tool: String,
    /// Arguments in dataset IDs, without `cursor`.
    pub args: Value,
    /// The `data` key holding the items (`orders`, `messages`, …).
    pub key: String,
    pub next_cursor: Option<String>,
}

/// The pages of a walk through a list, items in dataset IDs.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    pub key: String,
    pub pages: Vec<WalkPage>,
}

#[derive(Debug, Clone)]
pub struct WalkPage {
    pub items: Vec<Value>,
    pub next_cursor: Option<String>,
    pub truncated: bool,
    pub structured_bytes: usize,
    pub request_id: String,
}

impl Walk {
    pub fn items(&self) -> impl Iterator<Item = &Value> {
        self.pages.iter().flat_map(|p| &p.items)
    }
}

#[derive(Debug, Clone)]
pub struct LibrarySession {
    pub protocol_version: Option<String>,
    pub tools: Vec<String>,
    pub error: Option<String>,
    /// The requests the library sent (its handshake and the pages of tools/list): the
    /// scenario's evidence, made outside `history`.
    pub exchanges: usize,
}

/// A success, its `data` mapped back to dataset IDs.
#[derive(Debug, Clone)]
pub struct Success {
    pub data: Value,
    pub meta: Meta,
}

// Tokens live in the clients; Debug shows only what a report may show.
impl fmt::Debug for ConformanceWorld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConformanceWorld")
            .field("scenario", &self.scenario)
            .field("clauses", &self.clauses)
            .field("persona", &self.persona)
            .field("exchanges", &self.history.len())
            .field("last", &self.history.last().map(Exchange::summary))
            .finish_non_exhaustive()
    }
}

/// Why a step stopped its scenario without a verdict on the server, set by the step itself
/// ([`ConformanceWorld::halt`]) and read by the collector: never told from a message's wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// The answer's `data` has another shape than the contract's: the clauses are blocked by ENV-7.
    Blocked,
    /// The run's deadline passed before the step could send: skipped, and the run cut short.
    OutOfTime,
    /// What the scenario checks is something the specification lets this server do without
    /// (sessions): skipped with this reason, never passed ([`ConformanceWorld::not_applicable`]).
    NotApplicable(String),
}

/// How a failure message starts when the run's deadline stopped a step (for people: the report
/// knows from [`Halt::OutOfTime`]); the scenario is skipped for that reason.
pub const DEADLINE_PASSED: &str = "the run's deadline passed";

/// How a failure message starts when a step cannot read the state it needs because the answer's
/// `data` has another shape than the contract's (for people: the report knows from
/// [`Halt::Blocked`]); its clauses are blocked by ENV-7, not failed.
pub const BLOCKED_BY_SHAPE: &str = "blocked by ENV-7";

/// The answers a scenario keeps in memory: past it the oldest are dropped (the checks every
/// exchange gets ran when it was recorded), so a server answering megabytes per call cannot
/// grow the runner without bound.
pub const HISTORY_BUDGET_BYTES: usize = 64 << 20;

/// The last answers a scenario always keeps: what its `Then` steps look at.
const KEEP_LAST: usize = 16;

/// The pages a step walks before it stops: past it the scenario is blocked
/// ([`ConformanceWorld::cut_walk`]), never passed on a partial count.
pub const MAX_WALK_PAGES: usize = 1000;

/// How every canary starts: what the suite itself wrote carries it.
pub const CANARY_PREFIX: &str = "cnry";

static CANARIES: AtomicU64 = AtomicU64::new(0);

fn new_canary() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(CANARIES.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
    );
    // Letters and digits only, so the canary fits ID patterns and query strings alike.
    format!("{CANARY_PREFIX}{:016x}", h.finish())
}

impl ConformanceWorld {
    /// Called by the before hook: the run's context and the scenario's identity.
    pub fn install(&mut self, ctx: Arc<RunContext>, scenario: &str, tags: &[String]) {
        self.ctx = Some(ctx);
        self.scenario = scenario.to_owned();
        self.clauses =
            tags.iter().filter(|t| chataigne_contract::clauses::find(t).is_some()).cloned().collect();
        self.canary = new_canary();
        self.reports_from = self.ctx().error_reports.as_ref().map_or(0, |c| c.mark());
    }

    /// Refuses to send anything once the run's deadline has passed.
    pub fn check_deadline(&self) -> anyhow::Result<()> {
        match self.deadline {
            Some(deadline) if std::time::Instant::now() >= deadline => {
                let _ = self.halt.set(Halt::OutOfTime);
                Err(anyhow!("{DEADLINE_PASSED} (--deadline): nothing more is sent to the server"))
            }
            _ => Ok(()),
        }
    }

    /// The run context, to share with calls made side by side.
    pub fn ctx_arc(&self) -> Arc<RunContext> {
        Arc::clone(self.ctx.as_ref().expect("the before hook installs the run context"))
    }

    pub fn ctx(&self) -> &RunContext {
        // The before hook installs it before any step; a missing one is a bug of the runner.
        self.ctx.as_deref().expect("the before hook installs the run context")
    }

    pub fn dataset(&self) -> &Dataset {
        &self.ctx().dataset
    }

    pub fn control(&self) -> anyhow::Result<&Control> {
        self.ctx()
            .control
            .as_ref()
            .ok_or_else(|| anyhow!("this step needs the control API: tag the scenario @needs-control-api"))
    }

    /// Make `name` the persona "they" refers to.
    pub fn use_persona(&mut self, name: &str) -> anyhow::Result<()> {
        if self.dataset().persona(name).is_none() {
            let known: Vec<&str> = self.dataset().personas.iter().map(|p| p.persona.as_str()).collect();
            return Err(anyhow!("unknown persona \"{name}\": the dataset has {}", known.join(", ")));
        }
        if !self.ctx().profile.tokens.contains_key(name) {
            return Err(anyhow!("the profile has no token for persona \"{name}\": add it under [tokens]"));
        }
        self.persona = Some(name.to_owned());
        Ok(())
    }

    pub fn persona(&self) -> anyhow::Result<&str> {
        self.persona
            .as_deref()
            .ok_or_else(|| anyhow!("no persona yet: start with `Given the persona \"owner\"`"))
    }

    /// The current persona's session, initialized on first use.
    pub async fn client(&mut self) -> anyhow::Result<&mut McpClient> {
        self.check_deadline()?;
        let persona = self.persona()?.to_owned();
        if !self.clients.contains_key(&persona) {
            let client = match self.ctx().take_session(&persona) {
                Some(client) => client,
                None => self
                    .ctx()
                    .client(&persona)
                    .with_context(|| format!("the profile has no token for persona \"{persona}\""))?,
            };
            self.clients.insert(persona.clone(), client);
        }
        let initialized = self.clients.get(&persona).is_some_and(McpClient::is_initialized);
        if !initialized {
            let mut client = self.clients.remove(&persona).context("client just inserted")?;
            let ex = client.initialize().await;
            let ok = client.is_initialized();
            self.clients.insert(persona.clone(), client);
            if !ok {
                let got = ex.summary();
                self.record(ex);
                return Err(self.fail(format!("initialize to succeed for persona \"{persona}\""), got));
            }
        }
        self.clients.get_mut(&persona).context("client just initialized")
    }

    /// At the end of the scenario: its initialized sessions go back to the run, for the next
    /// scenarios of the same personas.
    pub fn give_back_sessions(&mut self) {
        let Some(ctx) = self.ctx.clone() else { return };
        for (persona, client) in self.clients.drain() {
            if client.is_initialized() {
                ctx.give_back(persona, client);
            }
        }
    }

    /// A new, uninitialized session for the current persona (to initialize it another way).
    pub fn fresh_client(&self) -> anyhow::Result<McpClient> {
        self.check_deadline()?;
        let persona = self.persona()?;
        self.ctx()
            .client(persona)
            .with_context(|| format!("the profile has no token for persona \"{persona}\""))
    }

    /// A new session of the current persona: its `initialize` recorded, and a failure of the step
    /// unless it initialized. Whether `initialize` advertised `capability`, when one is named.
    pub async fn started_client(
        &mut self,
        capability: Option<&str>,
    ) -> anyhow::Result<(McpClient, Option<bool>)> {
        let mut client = self.fresh_client()?;
        let init = client.initialize().await;
        let initialized = client.is_initialized();
        let advertised = capability.and_then(|c| crate::rules::capabilities::advertised(&init, c));
        let got = init.summary();
        self.record(init);
        if !initialized {
            return Err(self.fail("initialize to succeed", got));
        }
        Ok((client, advertised))
    }

    /// Make `client` the current persona's session.
    pub fn keep_client(&mut self, client: McpClient) -> anyhow::Result<()> {
        let persona = self.persona()?.to_owned();
        self.clients.insert(persona, client);
        Ok(())
    }

    /// Forget the persona's session, so the next call initializes again.
    pub fn drop_session(&mut self) {
        if let Some(p) = &self.persona {
            self.clients.remove(p);
        }
    }

    /// `tools/call` as the current persona; `args` in dataset IDs. Never fails for what the
    /// server answered: the `Then` steps judge the exchange.
    pub async fn call_tool(&mut self, tool: &str, args: Value) -> anyhow::Result<&Exchange> {
        let mut waited = 0;
        loop {
            let sent = self.ctx().id_map.outbound(&args);
            let client = self.client().await?;
            let ex = client.call_tool(tool, sent).await;
            self.record(ex);
            if !self.wait_for_rate_window(tool, &mut waited).await? {
                break;
            }
        }
        let persona = self.persona()?.to_owned();
        self.compare_with_reference(&persona, tool, &args).await;
        self.last()
    }

    /// Whether the scenario judges rate limits (LIM-2, LIM-3): its calls take a refusal for its
    /// rate as the answer, never wait it out.
    fn judges_rates(&self) -> bool {
        self.clauses.iter().any(|c| c == "LIM-2" || c == "LIM-3")
    }

    /// After a call: when the last answer refused it for its rate and the scenario does not
    /// judge rates, wait what `retry_after_ms` says (plus a little: windows round) and say to
    /// send it again, as any client would. Within a run no burst fills a window another scenario
    /// needs (`crate::schedule::RatePhase`), so only an earlier run's calls on a server nothing
    /// resets leave one full (a rerun at once). At most a window's length in all (`waited`), with
    /// a countdown on stderr, counted in the report's "waited for rate windows".
    pub async fn wait_for_rate_window(&mut self, tool: &str, waited: &mut u64) -> anyhow::Result<bool> {
        const PATIENCE_MS: u64 = 65_000;
        if self.judges_rates() {
            return Ok(false);
        }
        let wait = self.last().ok().and_then(crate::rules::rate_wait_ms);
        let Some(ms) = wait else { return Ok(false) };
        let ms = ms.clamp(1, PATIENCE_MS) + 50;
        if *waited + ms > PATIENCE_MS {
            return Ok(false);
        }
        *waited += ms;
        let why = format!("rate window of {}/{tool} full", self.persona().unwrap_or("?"));
        let wait = std::time::Duration::from_millis(ms);
        let deadline = self.deadline.unwrap_or_else(|| std::time::Instant::now() + wait);
        self.ctx().rate_waits.wait(&why, wait, deadline).await;
        self.check_deadline()?;
        Ok(true)
    }

    /// The differential oracle on the last exchange (`crate::oracle`): a state-changing call is
    /// replayed to the reference, a read of what the scenario set up is compared with the
    /// reference's; each comparison is evidence for its clause, each difference a finding.
    pub(crate) async fn compare_with_reference(&mut self, persona: &str, tool: &str, args: &Value) {
        let Some(ctx) = self.ctx.clone() else { return };
        if !ctx.oracle.wants(tool) {
            return;
        }
        let Some(ex) = self.history.last() else { return };
        if !self.shadow.needs_answer(tool) {
            self.shadow.observe(persona, tool, args, ex, |id| ctx.id_map.to_dataset(id));
            return;
        }
        let answer = crate::oracle::Answer::of(ex, |v| ctx.id_map.inbound(v));
        let rid = ex.request_id().map(str::to_owned);
        let notes = ctx.oracle.after(&mut self.shadow, persona, tool, args, &answer, rid.as_deref()).await;
        for note in notes {
            self.tally.note(note.clause, crate::judge::RuleLevel::Seed, note.difference);
        }
    }

    /// Any JSON-RPC request as the current persona.
    pub async fn rpc(&mut self, method: &str, params: Value) -> anyhow::Result<&Exchange> {
        let client = self.client().await?;
        let ex = client.request(method, params).await;
        Ok(self.record(ex))
    }

    /// A body sent as is, through the current persona's session.
    pub async fn post_raw(
        &mut self,
        body: Vec<u8>,
        want_answer: bool,
        extra: &[(String, String)],
    ) -> anyhow::Result<&Exchange> {
        let client = self.client().await?;
        let id = want_answer.then(|| client.take_id());
        let ex = client.post_raw(body, id, extra).await;
        Ok(self.record(ex))
    }

    /// Run `calls` at once, each through its own new session, and record their exchanges in
    /// the order given (the last one is then what `Then` steps look at).
    pub async fn concurrently(&mut self, calls: Vec<Concurrent>) -> anyhow::Result<()> {
        self.check_deadline()?;
        self.last_concurrent = calls.len();
        let mut fresh = Vec::new();
        for call in &calls {
            let client = self
                .ctx()
                .client(&call.persona)
                .with_context(|| format!("the profile has no token for persona \"{}\"", call.persona))?;
            fresh.push(client);
        }
        // Initialized side by side: one after another they would cost two round trips each.
        let started = futures::future::join_all(fresh.into_iter().map(|mut client| async move {
            let ex = client.initialize().await;
            (client, ex)
        }))
        .await;
        let mut sessions = Vec::new();
        for ((client, ex), call) in started.into_iter().zip(&calls) {
            if !client.is_initialized() {
                let got = ex.summary();
                self.record(ex);
                return Err(self.fail(format!("initialize to succeed for persona \"{}\"", call.persona), got));
            }
            sessions.push(client);
        }
        let id_map = self.ctx().id_map.clone();
        let runs = sessions.into_iter().zip(calls.clone()).map(|(mut client, call)| {
            let args = id_map.outbound(&call.args);
            async move {
                tokio::time::sleep(std::time::Duration::from_millis(call.delay_ms)).await;
                client.call_tool(&call.tool, args).await
            }
        });
        let answers = futures::future::join_all(runs).await;
        for (ex, call) in answers.into_iter().zip(&calls) {
            self.record(ex);
            self.compare_with_reference(&call.persona, &call.tool, &call.args).await;
        }
        Ok(())
    }

    /// `tools/call` whose `arguments` are given as JSON text, sent byte for byte (to control
    /// the order of their keys); IDs are not mapped.
    pub async fn call_tool_text(&mut self, tool: &str, arguments: &str) -> anyhow::Result<&Exchange> {
        let client = self.client().await?;
        let id = client.take_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{},"arguments":{arguments}}}}}"#,
            Value::String(tool.to_owned())
        );
        let mut ex = client.post_raw(body.into_bytes(), Some(id), &[]).await;
        ex.method = "tools/call".to_owned();
        ex.tool = Some(tool.to_owned());
        self.record(ex);
        if let Ok(args) = serde_json::from_str::<Value>(arguments) {
            let persona = self.persona()?.to_owned();
            self.compare_with_reference(&persona, tool, &args).await;
        }
        self.last()
    }

    /// A tools/call whose JSON-RPC id is `id` (a string, 0, a negative or a large integer: the
    /// kinds a loose implementation gets wrong), over HTTP. The answer is the one the POST
    /// brings back; `rules::carries_id` then says whether it names `id`.
    pub async fn call_tool_with_id(
        &mut self,
        tool: &str,
        args: Value,
        id: Value,
    ) -> anyhow::Result<&Exchange> {
        let dataset_args = args;
        let args = self.ctx().id_map.outbound(&dataset_args);
        let sent = crate::client::sent_strings(&args);
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": { "name": tool, "arguments": args } });
        let client = self.client().await?;
        let mut ex = client.post_raw(serde_json::to_vec(&body)?, None, &[]).await;
        ex.method = "tools/call".to_owned();
        ex.tool = Some(tool.to_owned());
        ex.sent_strings = sent;
        self.record(ex);
        let persona = self.persona()?.to_owned();
        self.compare_with_reference(&persona, tool, &dataset_args).await;
        self.last()
    }

    /// Keep `ex` as the last exchange, after the judge ran every rule that applies to it
    /// (`crate::judge::RULES`: PROTO-1/2/4, ENV-2..7, each at its own level), however many
    /// findings came before.
    pub fn record(&mut self, ex: Exchange) -> &Exchange {
        let ctx = self.ctx.clone();
        let token =
            ex.persona.as_deref().and_then(|p| ctx.as_ref()?.profile.tokens.get(p)).map(String::as_str);
        let seen = crate::judge::Seen {
            ex: &ex,
            token,
            published: ctx.as_ref().map(|c| &c.published),
            tenancy: ctx.as_ref().map(|c| &c.tenancy),
        };
        self.tally.judge(&seen, Some(self.history.len()));
        if let Some((code, category, retryable)) = crate::invariants::code_of_its_own(&ex)
            && !self.own_codes.iter().any(|(c, k, r, _)| *c == code && *k == category && *r == retryable)
        {
            let rid = ex.request_id().unwrap_or("no request_id").to_owned();
            self.own_codes.push((code, category, retryable, rid));
        }
        self.retained_bytes += ex.response().map_or(0, |r| r.body_bytes);
        self.history.push(ex);
        self.keep_within_budget();
        self.history.last().expect("just pushed")
    }

    fn keep_within_budget(&mut self) {
        if self.retained_bytes <= HISTORY_BUDGET_BYTES {
            return;
        }
        let old = self.history.len().saturating_sub(KEEP_LAST);
        for ex in &mut self.history[..old] {
            if self.retained_bytes <= HISTORY_BUDGET_BYTES {
                break;
            }
            if let Ok(r) = &mut ex.outcome
                && r.message.is_some()
            {
                self.retained_bytes -= r.body_bytes.min(self.retained_bytes);
                r.forget("answer dropped from memory: the scenario's answers exceeded 64 MiB");
            }
        }
    }

    pub fn last(&self) -> anyhow::Result<&Exchange> {
        self.history.last().ok_or_else(|| anyhow!("no request was sent yet in this scenario"))
    }

    /// The tools/call exchanges of the scenario.
    pub fn tool_calls(&self) -> impl Iterator<Item = &Exchange> {
        self.history.iter().filter(|e| e.tool.is_some())
    }

    /// Every request_id seen in the scenario's answers.
    pub fn request_ids(&self) -> Vec<String> {
        self.history.iter().filter_map(|e| e.request_id()).map(str::to_owned).collect()
    }

    /// A failure about the last exchange.
    pub fn fail(&self, expected: impl Display, got: impl Display) -> anyhow::Error {
        self.fail_about(self.history.last(), expected, got)
    }

    /// A failure about a given exchange: everything needed to understand it on one screen.
    pub fn fail_about(
        &self,
        ex: Option<&Exchange>,
        expected: impl Display,
        got: impl Display,
    ) -> anyhow::Error {
        let clauses = if self.clauses.is_empty() { "(none)".to_owned() } else { self.clauses.join(", ") };
        let exchange = ex.map(Exchange::describe).unwrap_or_else(|| "no request sent".to_owned());
        anyhow!("expected: {expected}\ngot: {got}\nclauses: {clauses}\n{exchange}")
    }

    /// The last call's success, or a failure saying what came instead.
    pub fn success(&self) -> anyhow::Result<Success> {
        let ex = self.last()?;
        let Some(structured) = ex.structured() else {
            return Err(self.fail("a tool success with structuredContent", ex.summary()));
        };
        if ex.is_error() {
            return Err(self.fail("a tool success", ex.summary()));
        }
        match envelope::parse(structured) {
            Ok(Parsed::Success { data, meta }) => {
                Ok(Success { data: self.ctx().id_map.inbound(&data), meta })
            }
            Ok(Parsed::Error(body)) => Err(self.fail("a tool success", format!("tool error {}", body.code))),
            Err(e) => Err(self.fail("a success envelope {data, meta}", format!("a malformed envelope: {e}"))),
        }
    }

    /// The last call's tool error (isError with an error envelope), or a failure.
    pub fn tool_error(&self) -> anyhow::Result<ErrorBody> {
        let ex = self.last()?;
        let Some(structured) = ex.structured() else {
            return Err(self.fail("a tool error with structuredContent", ex.summary()));
        };
        match envelope::parse(structured) {
            Ok(Parsed::Error(body)) if ex.is_error() => Ok(body),
            Ok(Parsed::Error(_)) => Err(self.fail("isError: true on an error", "isError missing or false")),
            Ok(Parsed::Success { .. }) => Err(self.fail("a tool error", ex.summary())),
            Err(e) => {
                Err(self
                    .fail("an error envelope {data: {error}, meta}", format!("a malformed envelope: {e}")))
            }
        }
    }

    /// Note that the server made another choice than the reference where the seed allows it:
    /// the scenario still passes at the seed level, and fails at the full level with `what`.
    pub fn ext_difference(&mut self, choice: &str, what: impl Display) {
        debug_assert!(chataigne_contract::clauses::find_choice(choice).is_some(), "unknown choice {choice}");
        let rid = self.history.last().and_then(|e| e.request_id()).unwrap_or("no request_id");
        self.ext_differences.push((choice.to_owned(), format!("{what} ({rid})")));
    }

    /// The value at `pointer` (e.g. `/order/status`) of a success's `data`; when absent, an error
    /// that blocks the scenario's clauses on ENV-7 rather than failing them.
    pub fn field<'a>(&self, data: &'a Value, pointer: &str) -> anyhow::Result<&'a Value> {
        data.pointer(pointer).ok_or_else(|| self.blocked(pointer))
    }

    /// End the scenario as skipped, with `why`: what it checks is something the specification
    /// lets this server do without (sessions, an event stream of its own).
    pub fn not_applicable(&self, why: impl Display) -> anyhow::Error {
        let why = why.to_string();
        let _ = self.halt.set(Halt::NotApplicable(why.clone()));
        anyhow!("not applicable: {why}")
    }

    /// The error of [`Self::field`]: names the path the contract's shape has.
    pub fn blocked(&self, pointer: &str) -> anyhow::Error {
        let path = format!("data{}", pointer.replace('/', "."));
        let tool = self.history.last().and_then(|e| e.tool.clone()).unwrap_or_else(|| "tool".to_owned());
        let exchange = self.history.last().map(Exchange::describe).unwrap_or_default();
        let _ = self.halt.set(Halt::Blocked);
        anyhow!(
            "{BLOCKED_BY_SHAPE}: the {tool} answer has no `{path}` (the contract's data shape, see ENV-7)\n{exchange}"
        )
    }

    /// A walk that reached [`MAX_WALK_PAGES`] with a `next_cursor` still given: what it counted
    /// is not complete, so the scenario is blocked with the reason, never passed.
    pub fn cut_walk(&self, what: impl Display) -> anyhow::Error {
        let exchange = self.history.last().map(Exchange::describe).unwrap_or_default();
        let _ = self.halt.set(Halt::Blocked);
        anyhow!(
            "blocked: {what}: still a next_cursor after {MAX_WALK_PAGES} pages, so the walk is not complete \
             and proves nothing\n{exchange}"
        )
    }

    /// A check that could not look at everything it must: blocked with `why`, never passed.
    pub fn not_all_checked(&self, why: impl Display) -> anyhow::Error {
        let _ = self.halt.set(Halt::Blocked);
        anyhow!("blocked: {why}")
    }

    /// `the busy restaurant` → its dataset ID; `"ord_x"` → `ord_x` (with `CANARY` replaced).
    pub fn landmark(&self, phrase: &str) -> anyhow::Result<String> {
        let phrase = phrase.trim();
        if let Some(lit) = phrase.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            return Ok(self.expand(lit));
        }
        let key = phrase.strip_prefix("the ").unwrap_or(phrase).replace([' ', '-'], "_");
        let landmarks = serde_json::to_value(&self.dataset().landmarks)?;
        if let Some(id) = landmarks.get(&key).and_then(Value::as_str) {
            return Ok(id.to_owned());
        }
        let known: Vec<String> = landmarks
            .as_object()
            .map(|o| o.keys().map(|k| format!("the {}", k.replace('_', " "))).collect())
            .unwrap_or_default();
        Err(anyhow!("unknown landmark \"{phrase}\": the dataset names {}", known.join(", ")))
    }

    /// Replace `CANARY` in a literal with the scenario's canary.
    pub fn expand(&self, text: &str) -> String {
        text.replace("CANARY", &self.canary)
    }

    /// The restaurant an order, conversation, transcript or instruction belongs to.
    pub fn restaurant_of(&self, id: &str) -> anyhow::Result<String> {
        let d = self.dataset();
        let found = d
            .orders
            .iter()
            .find(|o| o.id == id)
            .map(|o| &o.restaurant_id)
            .or_else(|| d.conversations.iter().find(|c| c.id == id).map(|c| &c.restaurant_id))
            .or_else(|| d.transcripts.iter().find(|t| t.id == id).map(|t| &t.restaurant_id))
            .or_else(|| d.instructions.iter().find(|i| i.id == id).map(|i| &i.restaurant_id));
        found.cloned().ok_or_else(|| anyhow!("{id} is in no restaurant of the dataset"))
    }

    /// The persona's token, to prove it is never echoed.
    pub fn token(&self) -> Option<&str> {
        self.persona.as_deref().and_then(|p| self.ctx().profile.tokens.get(p)).map(String::as_str)
    }
}

/// A step argument: a JSON literal (`5`, `"web"`, `["a"]`), else a landmark phrase.
pub fn value_of(world: &ConformanceWorld, text: &str) -> anyhow::Result<Value> {
    let text = text.trim();
    if text.starts_with("the ") {
        return world.landmark(text).map(Value::String);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(s)) => Ok(Value::String(world.expand(&s))),
        Ok(v) => Ok(v),
        Err(_) => Err(anyhow!("`{text}` is neither JSON nor a landmark like \"the busy restaurant\"")),
    }
}

/// `limit 5 and channel "web"` → `[("limit", 5), ("channel", "web")]`.
pub fn filters_of(world: &ConformanceWorld, text: &str) -> anyhow::Result<Vec<(String, Value)>> {
    text.split(" and ")
        .map(|part| {
            let part = part.trim();
            if part == "the last cursor" {
                let cursor = world
                    .list
                    .as_ref()
                    .and_then(|l| l.next_cursor.clone())
                    .ok_or_else(|| anyhow!("no cursor was received yet"))?;
                return Ok(("cursor".to_owned(), Value::String(cursor)));
            }
            let (field, value) =
                part.split_once(' ').ok_or_else(|| anyhow!("`{part}` is not `<argument> <value>`"))?;
            Ok((field.to_owned(), value_of(world, value)?))
        })
        .collect()
}
