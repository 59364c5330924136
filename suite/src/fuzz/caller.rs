//! Calls made on behalf of proptest's synchronous properties: one current-thread runtime, one
//! initialized session, the budget counted on every call, and a rate-limit refusal waited out
//! (bounded) instead of judged: MCP_RATE_LIMITED is the server protecting itself, not a finding.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::budget::Meter;
use crate::client::{Exchange, McpClient};
use crate::context::RunContext;

/// The longest wait for a rate window; a server asking for more is left for another call.
const MAX_RATE_WAIT: Duration = Duration::from_secs(3);
/// Rate-limited retries of one call before it is given up as inconclusive.
const RATE_RETRIES: usize = 2;

pub struct Caller<'a> {
    pub ctx: &'a RunContext,
    pub runtime: &'a tokio::runtime::Runtime,
    client: RefCell<McpClient>,
    /// Sessions of the other personas (the access sweep), opened on their first call.
    others: RefCell<BTreeMap<String, McpClient>>,
    pub meter: RefCell<Meter>,
    /// The persona calls are made as unless another is named.
    pub persona: String,
    /// `CHATAIGNE_FUZZ_TRACE` set: every call and its answer's summary on stderr (no token).
    pub trace: bool,
    /// Tool calls made so far, by persona and tool: what a rate window may already hold.
    pub tally: RefCell<BTreeMap<(String, String), u64>>,
}

impl<'a> Caller<'a> {
    /// An initialized session of `persona`; `Err` is a configuration error (exit code 2).
    pub fn new(
        ctx: &'a RunContext,
        runtime: &'a tokio::runtime::Runtime,
        persona: &str,
        meter: Meter,
    ) -> anyhow::Result<Caller<'a>> {
        let mut client = ctx.client(persona).with_context(|| {
            format!("the profile has no token for persona `{persona}` (the fuzzer calls as the owner)")
        })?;
        let ex = runtime.block_on(client.initialize());
        if !client.is_initialized() {
            bail!("initialize as `{persona}` failed: {}", ex.summary());
        }
        Ok(Caller {
            ctx,
            runtime,
            client: RefCell::new(client),
            others: RefCell::new(BTreeMap::new()),
            meter: RefCell::new(meter),
            persona: persona.to_owned(),
            trace: std::env::var_os("CHATAIGNE_FUZZ_TRACE").is_some(),
            tally: RefCell::new(BTreeMap::new()),
        })
    }

    pub fn spent(&self) -> bool {
        self.meter.borrow().spent()
    }

    /// One tool call, counted; `None` once the budget is spent or while the server keeps
    /// answering MCP_RATE_LIMITED (nothing to judge either way).
    pub fn call(&self, tool: &str, args: &Value) -> Option<Exchange> {
        self.call_as(&self.persona.clone(), tool, args)
    }

    /// Whether the profile has a token for `persona`.
    pub fn can_call_as(&self, persona: &str) -> bool {
        self.ctx.profile.tokens.contains_key(persona)
    }

    /// One tool call as `persona` (its own session, initialized on its first call); `None` as
    /// for [`Caller::call`], or when the persona has no token or cannot initialize.
    pub fn call_as(&self, persona: &str, tool: &str, args: &Value) -> Option<Exchange> {
        if persona != self.persona && !self.others.borrow().contains_key(persona) {
            let mut client = self.ctx.client(persona)?;
            self.meter.borrow_mut().calls += 1;
            self.runtime.block_on(client.initialize());
            if !client.is_initialized() {
                return None;
            }
            self.others.borrow_mut().insert(persona.to_owned(), client);
        }
        for attempt in 0..=RATE_RETRIES {
            if self.spent() {
                return None;
            }
            self.meter.borrow_mut().calls += 1;
            *self.tally.borrow_mut().entry((persona.to_owned(), tool.to_owned())).or_insert(0) += 1;
            let ex = if persona == self.persona {
                let mut client = self.client.borrow_mut();
                self.runtime.block_on(client.call_tool(tool, args.clone()))
            } else {
                let mut others = self.others.borrow_mut();
                let client = others.get_mut(persona)?;
                self.runtime.block_on(client.call_tool(tool, args.clone()))
            };
            if self.trace {
                let who = if persona == self.persona { String::new() } else { format!(" as {persona}") };
                eprintln!("{tool} {args}{who} -> {}", ex.summary());
            }
            let Some(wait) = rate_limited(&ex) else { return Some(ex) };
            if attempt == RATE_RETRIES {
                break;
            }
            // Never past the end of a time budget.
            let wait = wait.min(MAX_RATE_WAIT).min(self.meter.borrow().time_left());
            // Built inside the runtime: a timer needs its reactor.
            self.runtime.block_on(async { tokio::time::sleep(wait).await });
        }
        None
    }

    /// Calls sent at the same time, each through a fresh session of its persona (initialized
    /// side by side first), as the step `N identical calls … at once` sends them. `None`: the
    /// budget cannot pay for them all, a persona has no token or cannot initialize, or an
    /// answer is MCP_RATE_LIMITED (a race half limited says nothing).
    pub fn call_at_once(&self, calls: &[(String, String, Value)]) -> Option<Vec<Exchange>> {
        if self.meter.borrow().calls_left() < 2 * calls.len() as u64 {
            return None;
        }
        let mut clients = Vec::new();
        for (persona, _, _) in calls {
            clients.push(self.ctx.client(persona)?);
        }
        self.meter.borrow_mut().calls += 2 * calls.len() as u64;
        for (persona, tool, _) in calls {
            *self.tally.borrow_mut().entry((persona.clone(), tool.clone())).or_insert(0) += 1;
        }
        let clients = self.runtime.block_on(futures::future::join_all(clients.into_iter().map(
            |mut client| async move {
                client.initialize().await;
                client
            },
        )));
        if !clients.iter().all(McpClient::is_initialized) {
            return None;
        }
        let runs = clients
            .into_iter()
            .zip(calls)
            .map(|(mut client, (_, tool, args))| async move { client.call_tool(tool, args.clone()).await });
        let answers = self.runtime.block_on(futures::future::join_all(runs));
        if self.trace {
            for ((_, tool, args), ex) in calls.iter().zip(&answers) {
                eprintln!("{tool} {args} (at once) -> {}", ex.summary());
            }
        }
        answers.iter().all(|ex| rate_limited(ex).is_none()).then_some(answers)
    }

    /// The bearer token of the persona, for the ENV-6 echo check only (never shown).
    pub fn token(&self) -> Option<&str> {
        self.token_of(&self.persona)
    }

    pub fn token_of(&self, persona: &str) -> Option<&str> {
        self.ctx.profile.tokens.get(persona).map(String::as_str)
    }

    pub fn protocol_version(&self) -> Option<String> {
        self.client.borrow().protocol_version.clone()
    }

    pub fn session_id(&self) -> Option<String> {
        self.client.borrow().session_id.clone()
    }
}

/// How long the server asks to wait, when it refused the call for its rate limit.
fn rate_limited(ex: &Exchange) -> Option<Duration> {
    let error = ex.structured()?.pointer("/data/error")?;
    if error.get("code").and_then(Value::as_str) != Some("MCP_RATE_LIMITED") {
        return None;
    }
    let ms = error.get("retry_after_ms").and_then(Value::as_u64).unwrap_or(1000);
    Some(Duration::from_millis(ms.max(10)))
}
