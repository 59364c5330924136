//! The cases a fuzz run replays, as data: what each property drew (the arguments of a call, a
//! sequence, a race, a burst), and [`Replay`], the failing case a finding keeps. Below every
//! property, so the report, the transcript and the properties all read them without a circle.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::strategy::{Case, Pick};

/// The failing case, as the property that found it runs it again: the same calls (values the
/// server made, such as cursors, taken from its answers again) and the same oracles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Replay {
    Call {
        persona: String,
        tool: String,
        case: Case,
    },
    Cursor(CursorCase),
    Idempotency {
        tool: String,
        case: Case,
        /// Who writes; none: the fuzzer's persona (and transcripts written before it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        persona: Option<String>,
    },
    Precondition(PreCase),
    Access(AccessCase),
    UnknownTool(UnknownCase),
    CursorBinding(BindingCase),
    /// A probe of the transport family, by name (`fuzz::transport`).
    Transport {
        probe: String,
    },
    Largest(LargestCase),
    Carried(CarryCase),
    Burst(BurstCase),
    Race(RaceCase),
    KeyScope(ScopeCase),
    Authority(AuthorityCase),
    Fault(FaultCase),
    Expiry(ExpiryCase),
    /// A burst until refused for the rate, and the pairs that must not be slowed (`rates`).
    Rates(RateCase),
    /// A row of the bounds matrix (`rows`).
    Bound(BoundCase),
}

/// Rows by the first check they fail (AUTH-8's order), or allowed: one property each, so a
/// defect in one table is met within a few draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Scope,
    Membership,
    Role,
    /// A membership the dataset revokes (AUTH-7).
    Revoked,
    Allowed,
}

/// One row of the tables: `persona` calls `tool` with `arguments` (the server's IDs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessCase {
    pub persona: String,
    pub tool: String,
    pub arguments: Value,
    /// The clauses of the checks the row fails, AUTH-8's order first (empty: allowed).
    pub refused_by: Vec<String>,
    /// The codes a refusal may carry: one per failing check.
    pub codes: Vec<String>,
    /// The row fails the membership table: its refusal is compared with a nonexistent record's.
    pub foreign: bool,
    pub group: Group,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CursorCase {
    pub(super) tool: String,
    pub(super) args: Value,
    pub(super) page: Pick,
    pub(super) position: Pick,
    pub(super) replacement: Pick,
    /// Who walks (the same walk under every persona the tables let list it); none: the owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) persona: Option<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PreCase {
    pub(super) order: Pick,
    pub(super) wrong: Pick,
    pub(super) terminal: Pick,
    pub(super) target: Pick,
    /// Who moves the order, among those the tables allow (0: the fuzzer's persona). Transcripts
    /// written before it have none.
    #[serde(default)]
    pub(super) who: Pick,
}

/// A tool name that is not published: a published one with one character changed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UnknownCase {
    pub name: String,
}

/// One argument a cursor is bound to (`matrices::cursor_rows`), the server's IDs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BindingCase {
    pub tool: String,
    pub argument: String,
    /// The page-size member, set to 1 so the first page has a cursor.
    pub size: String,
    pub base: Value,
    pub changed: Value,
}

/// A call on the dataset's record that makes the biggest answer of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LargestCase {
    pub tool: String,
    pub args: Value,
}

/// A cursor of the owner's `list_orders`, reused by `persona`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarryCase {
    pub tool: String,
    /// The first page's arguments (the server's IDs), `limit` 5 as in the features.
    pub args: Value,
    pub persona: String,
}

/// Identical keyed writes at once: `create_instruction` in the busy restaurant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstCase {
    pub restaurant: String,
    pub text: String,
    pub key: String,
    pub calls: usize,
    /// The tool was slowed by the control API while the calls ran.
    pub slowed: bool,
}

/// Racing moves of one order of the busy restaurant, from the status it has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaceCase {
    pub order: Pick,
    pub calls: usize,
    pub slowed: bool,
}

/// A keyed write of the owner's, then the same call with the same key by `persona`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeCase {
    pub restaurant: String,
    pub text: String,
    pub key: String,
    pub persona: String,
    /// The other keyed tool the owner reuses the key on (`create_organization`, which any user
    /// may call: `The same key for another tool is another key`); none: `persona` reuses it on
    /// `create_instruction`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// A walk of `persona`'s whose membership ends between two pages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorityCase {
    pub persona: String,
    pub tool: String,
    /// The first page's arguments (the server's IDs).
    pub args: Value,
    /// The membership revoked, in the server's IDs.
    pub user: String,
    pub organization: String,
}

/// What the control API does to one read while it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Injected {
    /// The read deadline shortened to 100 ms and the tool slowed by 500 ms (LIM-4).
    Timeout,
    /// The tool fails with an `internal` error (SEC-2).
    Internal,
    /// The tool fails with a `dependency` error (SEC-2).
    Dependency,
    /// A keyed write: the write deadline shortened to 100 ms and its answer held 500 ms after its
    /// effect (LIM-4's MCP_OUTCOME_UNKNOWN).
    Outcome,
    /// Every other kind's deadline shortened to 100 ms and the tool slowed by 200 ms: within its
    /// own deadline, it must not time out (a tool held to another kind's deadline).
    Within,
}

/// A read of one order while the control API injects a fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultCase {
    pub tool: String,
    pub args: Value,
    pub injected: Injected,
    /// The deadline of the tool's kind (`read`, `analytics`, `write`); none: `read`, or `write`
    /// for [`Injected::Outcome`] (transcripts written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
}

impl FaultCase {
    /// The control API's name of the deadline the tool is held to.
    pub fn deadline(&self) -> &str {
        match (&self.deadline, self.injected) {
            (Some(d), _) => d,
            (None, Injected::Outcome) => "write",
            (None, _) => "read",
        }
    }
}

/// A keyed write made again just before and just after 24 hours on the server's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpiryCase {
    pub restaurant: String,
    pub text: String,
    pub key: String,
}

/// A burst's pair, and the calls that follow it once it is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateCase {
    pub persona: String,
    pub tool: String,
    pub args: Value,
    /// (persona, tool, arguments): the same persona on another tool, other personas on the tool.
    pub others: Vec<(String, String, Value)>,
    /// Calls of the pair the run made before the burst.
    pub prior: u64,
}

/// A row of the bounds matrix (`matrices::bound_rows`), found again by tool and edge: what it
/// expects and its clause are the matrix's, not the transcript's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundCase {
    pub tool: String,
    pub edge: String,
    /// The row's arguments, in the server's IDs.
    pub args: Value,
}
