//! What a fuzz run saw that is not a finding: a call or a probe it could not judge (*blocked*),
//! with a typed reason. The exit code and the reports read the kind and the counts, never the
//! wording: a run with blocked calls and no finding is not a pass (exit code 2).

use std::cell::{Cell, RefCell};

use serde::Serialize;
use serde_json::Value;

use super::cases::Replay;
use crate::client::Exchange;

/// Why something could not be judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// Still refused for its rate after the retries, with a refusal the contract allows.
    RateLimited,
    /// The rate-limit burst met no refusal in its time: too few calls to exceed the rate.
    BurstTooSlow,
    /// A cursor walk stopped at the fuzzer's page cap before its last page.
    WalkCapped,
    /// A page of a cursor walk was not served: the walk could not end.
    WalkFailed,
    /// A session could not be had: `initialize` failed.
    NoSession,
    /// A sequence's first call failed, so the calls it leads to were not sent.
    FirstCallFailed,
    /// A server lists more resources and prompts than a probe reads: the rest is not proven.
    TooManyEntries,
    /// One of the rules' scenarios could not read what it needs (ENV-7's other data shape).
    ScenarioBlocked,
    /// The rules' scenarios could not start at all.
    ScenariosNotRun,
}

/// One reason calls or probes were not judged, and how often it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Blocked {
    pub why: Why,
    /// Where: a tool and persona, a probe, a sequence.
    pub what: String,
    /// What was seen, in one line (no token, no argument value).
    pub reason: String,
    pub times: u64,
}

/// What a run could not judge, filled as it goes.
#[derive(Debug, Default)]
pub struct Unjudged {
    blocked: RefCell<Vec<Blocked>>,
    calls: Cell<u64>,
    /// What judged at least once: a block of it that [`Unjudged::block_unless_judged`] records
    /// is dropped then (a sequence whose first call may be refused for its drawn IDs).
    judged: RefCell<std::collections::BTreeSet<String>>,
}

impl Unjudged {
    /// `what` could not be judged, for `reason`: counted once per (why, what), the first reason kept.
    pub fn block(&self, why: Why, what: &str, reason: String) {
        let mut blocked = self.blocked.borrow_mut();
        match blocked.iter_mut().find(|b| b.why == why && b.what == what) {
            Some(b) => b.times += 1,
            None => blocked.push(Blocked { why, what: what.to_owned(), reason, times: 1 }),
        }
    }

    /// `what` could not be judged this time: blocked unless it judges another time.
    pub fn block_unless_judged(&self, why: Why, what: &str, reason: String) {
        if !self.judged.borrow().contains(what) {
            self.block(why, what, reason);
        }
    }

    /// `what` was judged: the blocks [`Unjudged::block_unless_judged`] recorded for it go.
    pub fn judged(&self, what: &str) {
        if self.judged.borrow_mut().insert(what.to_owned()) {
            self.blocked.borrow_mut().retain(|b| b.what != what || b.why != Why::FirstCallFailed);
        }
    }

    /// A call was made whose answer nothing could judge.
    pub fn count_call(&self) {
        self.calls.set(self.calls.get() + 1);
    }

    pub fn calls(&self) -> u64 {
        self.calls.get()
    }

    pub fn blocked(&self) -> Vec<Blocked> {
        self.blocked.borrow().clone()
    }
}

/// The persona calls are made as: the owner reaches every tool of the home organization.
pub const PERSONA: &str = "owner";

/// One broken rule, seen on one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub clause: &'static str,
    pub detail: String,
    /// The reference choice the rule checks, when it is an ext rule of a seed clause.
    pub choice: Option<&'static str>,
}

impl Fault {
    pub fn new(clause: &'static str, detail: String) -> Fault {
        Fault { clause, detail, choice: None }
    }
}

/// One failure on one call, before it becomes a finding.
#[derive(Debug, Clone)]
pub struct Observed {
    pub fault: Fault,
    /// Who made the failing call.
    pub persona: String,
    pub tool: String,
    pub args: Value,
    pub mutation: Option<String>,
    pub ex: Exchange,
    /// The calls of a sequence before this one.
    pub before: Vec<Call>,
    /// The case that failed, as `replay` runs it again (set by `run_property`).
    pub replay: Option<Replay>,
    /// The request is not a tools/call the finding can build again from `tool` and `args` (a
    /// transport probe): the request is the one the exchange sent, headers and all.
    pub raw: bool,
    /// The reference choice the failure is a difference from: counted at the full level only.
    pub choice: Option<&'static str>,
}

impl Observed {
    pub fn new(fault: Fault, persona: &str, tool: &str, args: &Value, ex: &Exchange) -> Observed {
        Observed {
            choice: fault.choice,
            fault,
            persona: persona.to_owned(),
            tool: tool.to_owned(),
            args: args.clone(),
            mutation: None,
            ex: ex.clone(),
            before: Vec::new(),
            replay: None,
            raw: false,
        }
    }
}

/// One call of a sequence, and its answer (`None`: the budget ran out before it).
#[derive(Debug, Clone)]
pub struct Call {
    pub persona: String,
    pub tool: String,
    pub args: Value,
    pub ex: Option<Exchange>,
}
