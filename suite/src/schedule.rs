//! Which scenarios may run side by side. Each scenario declares, from its tags and its steps,
//! the shared server state it touches; the runner lets any number of scenarios run at once as
//! long as no two of them conflict (a readers-writer lock per resource, taken in one global
//! order, so scenarios never deadlock and never wait on a scenario they do not conflict with).
//!
//! Resources:
//! - `server`: taken exclusively by scenarios that change the server as a whole through the
//!   control API (reset, clock, faults, deadlines, memberships); every other scenario shares it.
//!   With no control API nothing takes it exclusively.
//! - `persona:<name>`: taken exclusively by scenarios that exhaust a persona's rate windows
//!   (`@LIM-2`), shared by every scenario acting as that persona (a step naming "every persona"
//!   acts as all of them).
//!
//! Orders moved forward are not locked but *claimed* one by one (`Claims`): two scenarios never
//! pick the same order, however they interleave.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// Something scenarios share: the whole server (through the control API) or one persona's rate
/// windows. Ordered, so every scenario takes its locks in the same order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    Server,
    Persona(String),
}

/// What a scenario touches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Resource → exclusive?
    pub resources: BTreeMap<Resource, bool>,
}

/// Tags that change the whole server through the control API.
const WHOLE_SERVER_TAG: &str = "needs-control-";

impl Needs {
    /// From a scenario's tags (feature, rule and scenario) and step texts.
    pub fn of(tags: &[String], steps: &[String], personas: &[String]) -> Needs {
        let mut resources = BTreeMap::new();
        let exhausts_rates = tags.iter().any(|t| t == "LIM-2");
        let whole_server = tags.iter().any(|t| t.starts_with(WHOLE_SERVER_TAG))
            || steps.iter().any(|s| s.contains("a fresh server state"));
        resources.insert(Resource::Server, whole_server);
        // A matrix step acts as every persona of the dataset (`steps::matrices`).
        let every_persona = steps.iter().any(|s| s.contains("every persona"));
        for persona in personas {
            let quoted = format!("\"{persona}\"");
            if every_persona || steps.iter().any(|s| s.contains(&quoted)) {
                resources.insert(Resource::Persona(persona.clone()), exhausts_rates);
            }
        }
        Needs { resources }
    }

    /// It changes the whole server: it runs alone (cucumber's serial phase) and resets after.
    pub fn whole_server(&self) -> bool {
        self.resources.get(&Resource::Server) == Some(&true)
    }
}

/// The run's locks, one per resource, created on first use.
#[derive(Debug, Default)]
pub struct Locks {
    locks: Mutex<BTreeMap<Resource, Arc<RwLock<()>>>>,
}

/// What a running scenario holds; dropping it lets conflicting scenarios go.
#[derive(Debug, Default)]
pub struct Held {
    _read: Vec<OwnedRwLockReadGuard<()>>,
    _write: Vec<OwnedRwLockWriteGuard<()>>,
}

impl Locks {
    fn lock(&self, resource: &Resource) -> Arc<RwLock<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(resource.clone()).or_default())
    }

    /// Waits until nothing conflicting runs. Locks are taken in name order (a `BTreeMap`), the
    /// same for every scenario, so two scenarios can never wait on each other.
    pub async fn acquire(&self, needs: &Needs) -> Held {
        let mut held = Held::default();
        for (resource, exclusive) in &needs.resources {
            let lock = self.lock(resource);
            if *exclusive {
                held._write.push(lock.write_owned().await);
            } else {
                held._read.push(lock.read_owned().await);
            }
        }
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
        let personas = strings(&["owner", "viewer", "owner_second_client"]);
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
    }

    #[tokio::test]
    async fn an_exclusive_scenario_waits_for_the_shared_ones_and_blocks_new_ones() {
        let locks = Arc::new(Locks::default());
        let shared = Needs { resources: [(Resource::Server, false)].into() };
        let exclusive = Needs { resources: [(Resource::Server, true)].into() };
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
