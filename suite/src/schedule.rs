//! Which scenarios may run side by side, and in what order. Each scenario declares, from its
//! tags and its steps, the shared server state it touches; the runner lets any number of
//! scenarios run at once as long as no two of them conflict (a readers-writer lock per resource,
//! taken in one global order, so scenarios never deadlock and never wait on a scenario they do
//! not conflict with).
//!
//! Resources:
//! - `server`: taken exclusively by scenarios that change the server as a whole through the
//!   control API (reset, clock, faults, deadlines, memberships); every other scenario shares it.
//!   With no control API nothing takes it exclusively.
//! - `persona:<name>`: taken exclusively by scenarios that exhaust a persona's rate windows
//!   (`@LIM-2`), shared by every scenario acting as that persona (a step naming "every persona"
//!   acts as all of them).
//!
//! Rate windows outlive the scenario that fills them (a minute on the reference), so a lock is
//! not enough: a scenario that *uses* a rate pair (OAuth client, user) after another *exhausted*
//! one of its tools would wait for the window. The [`RatePhase`] plans them apart: a scenario that
//! exhausts windows ([`Needs::exhausts`]) starts only once every scenario of the run that uses
//! one of the exhausted pairs ([`Needs::uses`]) has finished: then the control API's clock is
//! moved past their windows once for the whole phase or, with no clock to move, the burst's
//! verdict counts the run's calls on its pair and tool, all known by then ([`CallLog`]). The
//! parser puts the features that exhaust windows last (`features::FeatureParser`), so the bursts
//! wait on scenarios already running, never on ones not yet started.
//!
//! Orders moved forward are not locked but *claimed* one by one (`Claims`): two scenarios never
//! pick the same order, however they interleave.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// Something scenarios share: the whole server (through the control API) or one persona's rate
/// windows. Ordered, so every scenario takes its locks in the same order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    Server,
    Persona(String),
}

/// What the contract counts calls against (LIM-2): an OAuth client and a user. Personas may
/// share one (`owner`, `noscope` and `other_audience` are all the owner through the console).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pair {
    pub client: String,
    pub user: String,
}

impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.client, self.user)
    }
}

/// A persona of the dataset and the pair its calls count against.
#[derive(Debug, Clone)]
pub struct Persona {
    pub name: String,
    pub pair: Pair,
}

/// The dataset's personas and their pairs.
pub fn personas(dataset: &chataigne_contract::dataset::Dataset) -> Vec<Persona> {
    let pair = |p: &chataigne_contract::dataset::Persona| Pair {
        client: p.client_id.clone(),
        user: p.user_id.clone(),
    };
    dataset.personas.iter().map(|p| Persona { name: p.persona.clone(), pair: pair(p) }).collect()
}

/// One pair's rate window of one tool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Window {
    pub pair: Pair,
    /// `*` when a burst step names no tool this module knows (every tool of the pair, then).
    pub tool: String,
}

/// What a scenario touches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Resource → exclusive?
    pub resources: BTreeMap<Resource, bool>,
    /// The rate windows it fills (a burst until the server refuses, `steps::load`).
    pub exhausts: BTreeSet<Window>,
    /// The pairs it calls as, whatever the tool (a matrix calls every tool).
    pub uses: BTreeSet<Pair>,
}

/// Tags that change the whole server through the control API.
const WHOLE_SERVER_TAG: &str = "needs-control-";

/// How a burst step ends (`steps::load`).
const UNTIL_REFUSED: &str = "again and again, until they are refused";

/// The burst steps of `steps::load`, by how their text starts, and the tool each one calls.
pub const BURST_STEPS: &[(&str, &str)] = &[
    ("they get ", "get_restaurant"),
    ("they send the message ", "send_message"),
    ("they ask to set ", "set_restaurant_status"),
    ("they ask for the analytics of ", "get_analytics"),
];

/// The tool a step calls until the server refuses, if it is a burst step (`*`: one this table
/// does not know yet).
pub fn burst_tool(step: &str) -> Option<&'static str> {
    if !step.contains(UNTIL_REFUSED) {
        return None;
    }
    Some(BURST_STEPS.iter().find(|(start, _)| step.starts_with(start)).map_or("*", |(_, tool)| tool))
}

/// The tag of scenarios that revoke a membership through the control API: they hold the
/// personas of its user, not the whole server.
const MEMBERSHIPS_TAG: &str = "needs-control-memberships";

/// How a step that revokes (or restores) a persona's membership starts: `the membership of "X"
/// in … is revoked`.
pub const REVOKE_STEP: &str = "the membership of \"";

/// What a step acting as every persona of the dataset says (`steps::matrices`).
pub const EVERY_PERSONA: &str = "every persona";

/// The persona whose membership a `the membership of "X" in … is revoked` step changes.
fn membership_of<'a>(step: &str, personas: &'a [Persona]) -> Option<&'a Persona> {
    let name = step.strip_prefix(REVOKE_STEP)?.split('"').next()?;
    personas.iter().find(|p| p.name == name)
}

/// The persona a `Given the persona "X"` step switches to.
fn switches_to<'a>(step: &str, personas: &'a [Persona]) -> Option<&'a Persona> {
    let name = step.strip_prefix("the persona \"")?.strip_suffix('"')?;
    personas.iter().find(|p| p.name == name)
}

impl Needs {
    /// From a scenario's tags (feature, rule and scenario) and step texts (background first).
    pub fn of(tags: &[String], steps: &[String], personas: &[Persona]) -> Needs {
        let mut needs = Needs::default();
        let exhausts_rates = tags.iter().any(|t| t == "LIM-2");
        let whole_server = tags.iter().any(|t| t.starts_with(WHOLE_SERVER_TAG) && t != MEMBERSHIPS_TAG)
            || steps.iter().any(|s| s.contains("a fresh server state"));
        needs.resources.insert(Resource::Server, whole_server);
        // A matrix step acts as every persona of the dataset (`steps::matrices`).
        let every_persona = steps.iter().any(|s| s.contains(EVERY_PERSONA));
        for persona in personas {
            let quoted = format!("\"{}\"", persona.name);
            if every_persona || steps.iter().any(|s| s.contains(&quoted)) {
                needs.resources.insert(Resource::Persona(persona.name.clone()), exhausts_rates);
                needs.uses.insert(persona.pair.clone());
            }
        }
        // A membership revoked changes what its user may do, whichever persona acts as that user;
        // nothing else (the after hook restores it): those personas alone are held exclusively.
        for revoked in steps.iter().filter_map(|s| membership_of(s, personas)) {
            for persona in personas.iter().filter(|p| p.pair.user == revoked.pair.user) {
                needs.resources.insert(Resource::Persona(persona.name.clone()), true);
            }
        }
        let mut current = None;
        for step in steps {
            current = switches_to(step, personas).or(current);
            if let (Some(tool), Some(persona)) = (burst_tool(step), current) {
                needs.exhausts.insert(Window { pair: persona.pair.clone(), tool: tool.to_owned() });
            }
        }
        needs
    }

    /// It changes the whole server: it runs alone (cucumber's serial phase) and resets after.
    pub fn whole_server(&self) -> bool {
        self.resources.get(&Resource::Server) == Some(&true)
    }

    /// Only the whole server, exclusively: what moving the server's clock takes.
    pub fn whole_server_only() -> Needs {
        Needs { resources: [(Resource::Server, true)].into(), ..Needs::default() }
    }

    /// It uses a pair whose window `other` exhausts.
    pub fn meets(&self, other: &Needs) -> bool {
        other.exhausts.iter().any(|w| self.uses.contains(&w.pair))
    }
}

/// The rate phase of a run: the scenarios that exhaust windows go once every scenario using one
/// of their pairs has finished (see the module's doc).
#[derive(Debug, Default)]
pub struct RatePhase {
    state: Mutex<PhaseState>,
    changed: Notify,
    /// The clock was moved past every window, once for the whole phase.
    cleared: tokio::sync::OnceCell<bool>,
}

#[derive(Debug, Default)]
struct PhaseState {
    /// Every pair some scenario of the run exhausts.
    exhausted: BTreeSet<Pair>,
    /// Scenarios that use an exhausted pair and have not finished, by key.
    pending: HashMap<String, usize>,
}

impl RatePhase {
    /// The phase of a run whose scenarios exhaust `exhausted` (every feature's, before any
    /// filter: a pair too many only makes a burst wait for a scenario that is not there).
    pub fn new(exhausted: impl IntoIterator<Item = Pair>) -> RatePhase {
        let state = PhaseState { exhausted: exhausted.into_iter().collect(), ..PhaseState::default() };
        RatePhase { state: Mutex::new(state), ..RatePhase::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PhaseState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A scenario the run will start (cucumber's `which_scenario`, called as features are
    /// queued, before any burst starts: the bursts' features come last).
    pub fn register(&self, key: &str, needs: &Needs) {
        let mut state = self.state();
        if needs.exhausts.is_empty() && needs.uses.iter().any(|p| state.exhausted.contains(p)) {
            *state.pending.entry(key.to_owned()).or_default() += 1;
        }
    }

    /// A scenario finished (its after hook).
    pub fn finished(&self, key: &str) {
        let mut state = self.state();
        if let Some(n) = state.pending.get_mut(key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                state.pending.remove(key);
            }
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// How many scenarios using an exhausted pair have not finished.
    pub fn pending(&self) -> usize {
        self.state().pending.values().sum()
    }

    /// Waits until every scenario using an exhausted pair has finished, or `deadline` passed.
    pub async fn users_done(&self, deadline: Instant) {
        loop {
            let changed = self.changed.notified();
            if self.pending() == 0 {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, changed).await.is_err() {
                return;
            }
        }
    }

    /// Runs `clear` (moving the server's clock past every window) once for the whole phase;
    /// every burst waits for it. Whether the windows are fresh.
    pub async fn clear_once<F>(&self, clear: impl FnOnce() -> F) -> bool
    where
        F: std::future::Future<Output = bool>,
    {
        *self.cleared.get_or_init(clear).await
    }
}

/// Every `tools/call` of the run, by persona and tool, with when it left, when it came back and
/// what it came to: a burst's verdict counts the run's earlier calls on its pair and tool
/// (`rate_verdict::judge_after`) instead of waiting for them to leave every window.
#[derive(Debug, Default)]
pub struct CallLog {
    state: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    calls: HashMap<(String, String), Vec<Logged>>,
    /// When the server last forgot every window (a reset, the clock moved a window ahead).
    cleared: Option<Instant>,
    /// Every existing record a write of the run named (`ToolName::changes`), as sent and in
    /// lower case without surrounding spaces, whatever the answer: the records `crate::audit`
    /// leaves out.
    touched: HashSet<String>,
    /// When the control API last reset the server's data during the run.
    data_reset: Option<Instant>,
    /// The writes of a state the run sent (`update_order_status`, `set_restaurant_status`), by
    /// the record's ID in lower case without spaces.
    writes: HashMap<String, Vec<WriteSeen>>,
}

/// One write of a record's state the run sent, and what its answer says of its effect.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteSeen {
    /// The ID as sent.
    pub id: String,
    /// The state it asked for (`status`), if it named one.
    pub target: Option<String>,
    pub sent: Instant,
    pub answered: Instant,
    pub outcome: WriteOutcome,
}

/// What an answer says of a write's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// A success: the state is the one asked for.
    Done,
    /// Refused before any effect (a JSON-RPC or transport refusal, or a tool error of a category
    /// that by the contract changed nothing); `conflict`: a precondition's refusal.
    Refused { conflict: bool },
    /// No answer, or one after which the effect may or may not have happened.
    Unknown,
}

/// One call of the log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Logged {
    pub sent: Instant,
    pub answered: Instant,
    pub answer: crate::rate_verdict::Earlier,
}

impl CallLog {
    pub fn record(&self, persona: &str, tool: &str, call: Logged) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.calls.entry((persona.to_owned(), tool.to_owned())).or_default().push(call);
    }

    /// The server forgot every rate window now (the control API reset it or moved its clock a
    /// window ahead): calls sent before count no more.
    pub fn windows_cleared(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).cleared = Some(Instant::now());
    }

    /// A write named record `id` (sent, answered or not).
    pub fn touch(&self, id: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.touched.insert(id.to_owned());
        state.touched.insert(id.trim().to_lowercase());
    }

    /// Whether a write of the run named record `id`.
    pub fn touched(&self, id: &str) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.touched.contains(id) || state.touched.contains(&id.trim().to_lowercase())
    }

    /// The server's data went back to its dataset (the control API's reset).
    pub fn data_reset(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).data_reset = Some(Instant::now());
    }

    /// When the control API last reset the data, if it did.
    pub fn last_data_reset(&self) -> Option<Instant> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).data_reset
    }

    pub fn wrote(&self, write: WriteSeen) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.writes.entry(write.id.trim().to_lowercase()).or_default().push(write);
    }

    /// Every write of the state of record `id` the run sent, whatever case or spaces it was
    /// sent with.
    pub fn writes_of(&self, id: &str) -> Vec<WriteSeen> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.writes.get(&id.trim().to_lowercase()).cloned().unwrap_or_default()
    }

    /// The calls of `tool` as any of `personas` sent before `before` and answered after `since`,
    /// since the windows were last cleared, in the order they were sent.
    pub fn earlier(&self, personas: &[&str], tool: &str, since: Instant, before: Instant) -> Vec<Logged> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Logged> = personas
            .iter()
            .filter_map(|p| state.calls.get(&((*p).to_owned(), tool.to_owned())))
            .flatten()
            .filter(|c| c.sent < before && c.answered > since && state.cleared.is_none_or(|t| c.sent >= t))
            .copied()
            .collect();
        out.sort_by_key(|c| c.sent);
        out
    }
}

/// The time a run spent waiting for rate windows, whoever waited (bursts, patient calls, the
/// rate phase): "waited for rate windows: N s" in the report.
#[derive(Debug, Default)]
pub struct Waits {
    /// Waits that overlap count once: the time at least one was under way.
    state: Mutex<WaitState>,
}

#[derive(Debug, Default)]
struct WaitState {
    running: usize,
    since: Option<Instant>,
    total: Duration,
}

/// How often a wait says how long is left.
const COUNTDOWN_EVERY: Duration = Duration::from_secs(5);

impl Waits {
    /// Waits `wait`, saying on stderr what for (`why`) and, every few seconds, how long is
    /// left; stops early at `deadline`.
    pub async fn wait(&self, why: &str, wait: Duration, deadline: Instant) {
        let end = Instant::now() + wait;
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if s.running == 0 {
                s.since = Some(Instant::now());
            }
            s.running += 1;
        }
        loop {
            let left = end.min(deadline).saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            eprintln!("{why}: waiting {} s", left.as_secs_f64().ceil());
            tokio::time::sleep(left.min(COUNTDOWN_EVERY)).await;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.running -= 1;
        if s.running == 0
            && let Some(since) = s.since.take()
        {
            s.total += since.elapsed();
        }
    }

    /// The time spent with at least one wait under way.
    pub fn total(&self) -> Duration {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.total + s.since.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

/// The run's locks, one per resource, created on first use.
#[derive(Debug, Default)]
pub struct Locks {
    locks: Mutex<BTreeMap<Resource, Arc<RwLock<()>>>>,
    fresh: Arc<Mutex<Freshness>>,
}

/// Which scenario last left the server as the dataset publishes it: a whole-server scenario
/// resets the server when it is done, and the next one, if nothing started in between, need not
/// reset it again before it starts (a round trip saved per scenario of the serial phase).
#[derive(Debug, Default)]
struct Freshness {
    /// Scenarios that got their locks so far; each one's number is its place in that count.
    started: u64,
    /// The scenario (by number) whose reset, with the whole server held, came last.
    reset_by: Option<u64>,
}

/// What a running scenario holds; dropping it lets conflicting scenarios go.
#[derive(Debug, Default)]
pub struct Held {
    _read: Vec<OwnedRwLockReadGuard<()>>,
    _write: Vec<OwnedRwLockWriteGuard<()>>,
    /// This scenario's number in [`Freshness::started`].
    number: u64,
    /// It holds the server exclusively ([`Needs::whole_server`]).
    whole_server: bool,
    fresh: Arc<Mutex<Freshness>>,
}

impl Held {
    fn freshness(&self) -> std::sync::MutexGuard<'_, Freshness> {
        self.fresh.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// It reset the server (its after hook): trusted only from a scenario that holds the server
    /// whole, since nothing else ran beside it.
    pub fn reset_done(&self) {
        let mut fresh = self.freshness();
        fresh.reset_by = self.whole_server.then_some(self.number).or(fresh.reset_by);
    }

    /// It holds the whole server, and the last reset was made by the scenario started just
    /// before it: nothing has touched the server since (whole-server scenarios run alone).
    pub fn server_fresh(&self) -> bool {
        let fresh = self.freshness();
        self.whole_server && self.number > 0 && fresh.reset_by == Some(self.number - 1)
    }
}

impl Locks {
    fn lock(&self, resource: &Resource) -> Arc<RwLock<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(resource.clone()).or_default())
    }

    /// Waits until nothing conflicting runs. Locks are taken in name order (a `BTreeMap`), the
    /// same for every scenario, so two scenarios can never wait on each other.
    pub async fn acquire(&self, needs: &Needs) -> Held {
        let mut held =
            Held { fresh: Arc::clone(&self.fresh), whole_server: needs.whole_server(), ..Held::default() };
        for (resource, exclusive) in &needs.resources {
            let lock = self.lock(resource);
            if *exclusive {
                held._write.push(lock.write_owned().await);
            } else {
                held._read.push(lock.read_owned().await);
            }
        }
        let mut fresh = held.freshness();
        fresh.started += 1;
        let number = fresh.started;
        drop(fresh);
        held.number = number;
        held
    }
}

/// Orders (or any records) already picked by a scenario of this run.
#[derive(Debug, Default)]
pub struct Claims {
    taken: Mutex<HashSet<String>>,
}

impl Claims {
    /// True if `id` was free and is now this caller's.
    pub fn claim(&self, id: &str) -> bool {
        self.taken.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn needs_follow_tags_and_steps() {
        let persona = |name: &str, client: &str, user: &str| Persona {
            name: name.to_owned(),
            pair: Pair { client: client.to_owned(), user: user.to_owned() },
        };
        let personas = [
            persona("owner", "cli_console", "usr_owner"),
            persona("viewer", "cli_console", "usr_viewer"),
            persona("owner_second_client", "cli_second", "usr_owner"),
        ];
        let n = Needs::of(&strings(&["LIM-2"]), &strings(&["Given the persona \"viewer\""]), &personas);
        assert_eq!(n.resources.get(&Resource::Persona("viewer".into())), Some(&true));
        assert_eq!(
            n.resources.get(&Resource::Persona("owner".into())),
            None,
            "owner is not \"owner_second_client\""
        );
        assert_eq!(n.resources.get(&Resource::Server), Some(&false));
        let n = Needs::of(
            &strings(&["needs-control-faults"]),
            &strings(&["Given the persona \"owner\""]),
            &personas,
        );
        assert_eq!(n.resources.get(&Resource::Server), Some(&true));
        assert_eq!(n.resources.get(&Resource::Persona("owner".into())), Some(&false));
        // A burst exhausts its persona's pair for its tool; the owner through the console is
        // another pair than the owner through the second client.
        let burst = Needs::of(
            &strings(&["LIM-2"]),
            &strings(&[
                "the persona \"owner_second_client\"",
                "they get the busy restaurant again and again, until they are refused",
                "the persona \"owner\"",
                "they get the busy restaurant",
            ]),
            &personas,
        );
        let second = personas[2].pair.clone();
        assert_eq!(
            burst.exhausts.iter().collect::<Vec<_>>(),
            [&Window { pair: second.clone(), tool: "get_restaurant".into() }]
        );
        let matrix = Needs::of(&[], &strings(&["every tool refuses every persona"]), &personas);
        assert!(matrix.meets(&burst), "a matrix uses every pair");
        let owner_only = Needs::of(&[], &strings(&["the persona \"owner\""]), &personas);
        assert!(!owner_only.meets(&burst), "the owner's console pair is not the second client's");
    }

    #[tokio::test]
    async fn a_burst_waits_for_the_users_of_its_pair() {
        let pair = Pair { client: "cli_second".into(), user: "usr_owner".into() };
        let phase = Arc::new(RatePhase::new([pair.clone()]));
        let user = Needs { uses: [pair].into(), ..Needs::default() };
        phase.register("matrix", &user);
        phase.register("other", &Needs::default());
        assert_eq!(phase.pending(), 1, "only a user of an exhausted pair is waited for");
        let p2 = Arc::clone(&phase);
        let far = Instant::now() + Duration::from_secs(60);
        let waiting = tokio::spawn(async move { p2.users_done(far).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the burst waits while a user has not finished");
        phase.finished("matrix");
        tokio::time::timeout(Duration::from_secs(1), waiting).await.expect("then it goes").unwrap();
    }

    #[tokio::test]
    async fn an_exclusive_scenario_waits_for_the_shared_ones_and_blocks_new_ones() {
        let locks = Arc::new(Locks::default());
        let shared = Needs { resources: [(Resource::Server, false)].into(), ..Needs::default() };
        let exclusive = Needs::whole_server_only();
        let a = locks.acquire(&shared).await;
        let b = locks.acquire(&shared).await; // shared with shared: no wait
        let l2 = Arc::clone(&locks);
        let waiting = tokio::spawn(async move { l2.acquire(&exclusive).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "exclusive must wait for the shared holders");
        drop((a, b));
        tokio::time::timeout(Duration::from_secs(1), waiting).await.expect("then it runs").unwrap();
    }

    #[test]
    fn a_claim_is_given_once() {
        let claims = Claims::default();
        assert!(claims.claim("ord_1"));
        assert!(!claims.claim("ord_1"));
        assert!(claims.claim("ord_2"), "another record is still free");
    }
}
