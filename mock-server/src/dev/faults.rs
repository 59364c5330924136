//! Faults injected per tool through the control API, and the deadlines it can shorten, so
//! timeouts and failures are testable in milliseconds (LIM-4, SEC-2).

use std::collections::BTreeMap;
use std::sync::Mutex;

use chataigne_contract::ErrorCode;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultError {
    /// An unexpected failure: MCP_INTERNAL_ERROR, with nothing of the cause.
    Internal,
    /// A backing store down: MCP_DEPENDENCY_UNAVAILABLE.
    Dependency,
    /// A panic in the tool: the call's boundary turns it into MCP_INTERNAL_ERROR (and an error
    /// report, `crate::reporting`).
    Panic,
}

impl FaultError {
    /// The code the faulty call ends with; a `Panic` panics here, inside the call.
    pub fn raise(self) -> ErrorCode {
        match self {
            FaultError::Internal => ErrorCode::InternalError,
            FaultError::Dependency => ErrorCode::DependencyUnavailable,
            FaultError::Panic => panic!("injected panic"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    pub tool: String,
    /// Delay before the tool runs.
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default)]
    pub error: Option<FaultError>,
    /// Delay after a write's effect is applied, before the answer (LIM-4's "outcome unknown").
    #[serde(default)]
    pub delay_after_effect_ms: u64,
}

#[derive(Debug, Default)]
pub struct Faults {
    by_tool: Mutex<BTreeMap<String, Fault>>,
}

impl Faults {
    pub fn get(&self, tool: &str) -> Option<Fault> {
        self.by_tool.lock().unwrap_or_else(|e| e.into_inner()).get(tool).cloned()
    }

    pub fn set(&self, fault: Fault) {
        self.by_tool.lock().unwrap_or_else(|e| e.into_inner()).insert(fault.tool.clone(), fault);
    }

    pub fn list(&self) -> Vec<Fault> {
        self.by_tool.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect()
    }

    pub fn clear(&self) {
        self.by_tool.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Every fault replaced by these (the settings shared on Redis).
    pub fn replace(&self, faults: Vec<Fault>) {
        *self.by_tool.lock().unwrap_or_else(|e| e.into_inner()) =
            faults.into_iter().map(|f| (f.tool.clone(), f)).collect();
    }
}

/// Deadlines in milliseconds (LIM-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadlines {
    pub read_ms: u64,
    pub analytics_ms: u64,
    pub write_ms: u64,
}

impl Default for Deadlines {
    fn default() -> Self {
        use chataigne_contract::Kind;
        Deadlines {
            read_ms: Kind::Read.deadline_ms(),
            analytics_ms: Kind::Analytics.deadline_ms(),
            write_ms: Kind::Write.deadline_ms(),
        }
    }
}

impl Deadlines {
    pub fn for_kind(&self, kind: chataigne_contract::Kind) -> u64 {
        use chataigne_contract::Kind;
        match kind {
            Kind::Read => self.read_ms,
            Kind::Analytics => self.analytics_ms,
            Kind::Write | Kind::KeyedWrite => self.write_ms,
        }
    }
}
