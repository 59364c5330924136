//! Calls made on behalf of proptest's synchronous properties: one current-thread runtime, one
//! initialized session, the budget counted on every call, and a rate-limit refusal waited out
//! (bounded) instead of judged: MCP_RATE_LIMITED is the server protecting itself, not a finding.
//! A call still refused after the retries is judged by LIM-2's rules on a refusal (a finding when
//! one breaks) and is otherwise *blocked*: never a pass (`observed`). A refusal of a tool the
//! fuzzer itself called at least LIM-2's rate in the last window is its own doing: that tool is
//! not called again as that (client, user) until the window has room, and nothing is blocked.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::budget::Meter;
use super::observed::{Observed, Unjudged, Why};
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
    /// What could not be judged, and why.
    pub unjudged: Unjudged,
    /// LIM-2 faults of refusals the retries did not get past, until a property takes them.
    pending: RefCell<Vec<Observed>>,
    /// When each call of the last window left, by (client/user pair, tool): LIM-2 counts there.
    sent: RefCell<HashMap<(String, String), VecDeque<Instant>>>,
    /// (pair, tool) windows the fuzzer's own calls filled, until they have room again.
    full_until: RefCell<HashMap<(String, String), Instant>>,
}

/// LIM-2's window.
const WINDOW: Duration = Duration::from_secs(60);

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
            unjudged: Unjudged::default(),
            pending: RefCell::new(Vec::new()),
            sent: RefCell::new(HashMap::new()),
            full_until: RefCell::new(HashMap::new()),
        })
    }

    /// The (client/user pair, tool) a call of `persona` counts against (LIM-2); the persona's
    /// own name when the dataset does not know it.
    fn window_of(&self, persona: &str, tool: &str) -> (String, String) {
        let pair = self.ctx.dataset.personas.iter().find(|p| p.persona == persona);
        let pair = pair.map_or_else(|| persona.to_owned(), |p| format!("{}/{}", p.client_id, p.user_id));
        (pair, tool.to_owned())
    }

    /// Note a call leaving now; the calls of the window before it.
    fn note_sent(&self, window: &(String, String)) {
        let now = Instant::now();
        let mut sent = self.sent.borrow_mut();
        let calls = sent.entry(window.clone()).or_default();
        while calls.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
            calls.pop_front();
        }
        calls.push_back(now);
    }

    /// Whether the fuzzer itself sent at least LIM-2's rate of `tool` in the last window: a
    /// refusal then is the limit the contract asks for. Until when, if so.
    fn own_window_full(&self, window: &(String, String)) -> Option<Instant> {
        let rate = chataigne_contract::ToolName::parse(&window.1)?.kind().rate_per_minute() as usize;
        let sent = self.sent.borrow();
        let calls = sent.get(window)?;
        let now = Instant::now();
        let recent: Vec<&Instant> = calls.iter().filter(|t| now.duration_since(**t) < WINDOW).collect();
        (recent.len() >= rate).then(|| *recent[recent.len() - rate] + WINDOW)
    }

    pub fn spent(&self) -> bool {
        self.meter.borrow().spent()
    }

    /// One tool call, counted; `None` once the budget is spent or while the server keeps
    /// answering MCP_RATE_LIMITED (the refusal judged by LIM-2's rules, else the call blocked).
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
            let ex = self.runtime.block_on(client.initialize());
            if !client.is_initialized() {
                let reason = format!("initialize as `{persona}` failed: {}", ex.summary());
                self.unjudged.block(Why::NoSession, &format!("session of `{persona}`"), reason);
                return None;
            }
            self.others.borrow_mut().insert(persona.to_owned(), client);
        }
        let window = self.window_of(persona, tool);
        if self.full_until.borrow().get(&window).is_some_and(|until| Instant::now() < *until) {
            return None;
        }
        for attempt in 0..=RATE_RETRIES {
            if self.spent() {
                return None;
            }
            self.meter.borrow_mut().calls += 1;
            self.note_sent(&window);
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
            if let Some(until) = self.own_window_full(&window) {
                // Its own calls filled the window: the refusal is LIM-2 at work, and the tool
                // waits for room while the budget goes to the others.
                self.full_until.borrow_mut().insert(window, until);
                self.judge_refusal(persona, tool, args, &ex);
                return None;
            }
            if attempt == RATE_RETRIES {
                self.gave_up(persona, tool, args, &ex);
                break;
            }
            // Never past the end of a time budget.
            let wait = wait.min(MAX_RATE_WAIT).min(self.meter.borrow().time_left());
            // Built inside the runtime: a timer needs its reactor.
            self.runtime.block_on(async { tokio::time::sleep(wait).await });
        }
        None
    }

    /// A call still refused for its rate after the retries: a refusal that breaks LIM-2's rules
    /// is a finding (kept until a property takes it), one that breaks none but a reference
    /// choice blocks the call; the call is unjudged either way.
    fn gave_up(&self, persona: &str, tool: &str, args: &Value, ex: &Exchange) {
        self.unjudged.count_call();
        if self.judge_refusal(persona, tool, args, ex) {
            let who = format!("{tool} as `{persona}`");
            let reason = format!("still refused for its rate after {RATE_RETRIES} waits ({})", ex.summary());
            self.unjudged.block(Why::RateLimited, &who, reason);
        }
    }

    /// LIM-2's rules on a refusal for the rate, its faults kept until a property takes them;
    /// whether it broke nothing but reference choices (at the seed level, nothing).
    fn judge_refusal(&self, persona: &str, tool: &str, args: &Value, ex: &Exchange) -> bool {
        let faults = super::oracle::rate_refusal(&format!("{tool} as `{persona}`"), ex);
        let only_choices = faults.iter().all(|(_, choice)| choice.is_some());
        let mut pending = self.pending.borrow_mut();
        for (fault, choice) in faults {
            pending.push(Observed { choice, ..Observed::new(fault, persona, tool, args, ex) });
        }
        only_choices
    }

    /// The LIM-2 faults of refusals given up on since the last time.
    pub fn take_pending(&self) -> Vec<Observed> {
        self.pending.take()
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
            let reason = "a session for the calls at once could not be initialized".to_owned();
            self.unjudged.block(Why::NoSession, "calls at once", reason);
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
        if let Some(limited) = answers.iter().find(|ex| rate_limited(ex).is_some()) {
            let what = calls.iter().map(|(_, tool, _)| tool.as_str()).collect::<Vec<_>>().join(", ");
            let reason = format!("calls at once refused for their rate ({})", limited.summary());
            self.unjudged.block(Why::RateLimited, &format!("at once: {what}"), reason);
            for _ in calls {
                self.unjudged.count_call();
            }
            return None;
        }
        Some(answers)
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
    if crate::rules::rate_answer(ex, false) != crate::rate_verdict::Answer::Limited {
        return None;
    }
    let error = ex.structured()?.pointer("/data/error")?;
    let ms = error.get("retry_after_ms").and_then(Value::as_u64).unwrap_or(1000);
    Some(Duration::from_millis(ms.max(10)))
}
