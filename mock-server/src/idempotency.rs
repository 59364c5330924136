//! Idempotency keys (IDEM-1..8): the semantics written once over a store trait, so the in-memory
//! store here and a shared store behave the same. Keys are stored only as a keyed hash of
//! (client, user, tool, key) (IDEM-5, IDEM-8); arguments only as a digest.

use std::sync::{Mutex, MutexGuard};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::expiry::Swept;

/// The stored identity of a key: HMAC of its scope and text, never the raw key.
pub type Slot = [u8; 32];
/// Digest of the arguments other than the key.
pub type Fingerprint = [u8; 32];

/// What a call finds under its key.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// No live entry: the caller now owns the key and must `complete` or `release` it.
    Fresh,
    /// A stored success to replay (IDEM-2).
    Replay(Value),
    /// The key was used with other arguments (IDEM-3).
    Mismatch,
    /// The same call is still running (IDEM-4).
    InProgress { retry_after_ms: u64 },
}

/// The backing store did not answer: MCP_DEPENDENCY_UNAVAILABLE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("backing store unavailable")]
pub struct StoreError;

/// Storage of key states. Implementations make `claim` atomic; `now_ms` is the server's clock,
/// so retention follows it even when the store has its own expiry.
pub trait IdempotencyStore: Send + Sync + std::fmt::Debug {
    fn claim(&self, slot: Slot, fingerprint: Fingerprint, now_ms: i64) -> Result<Claim, StoreError>;
    /// Store a success for 24 h (IDEM-6).
    fn complete(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        data: &Value,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// Forget a claim whose call failed: only successes are stored (IDEM-7).
    fn release(&self, slot: Slot) -> Result<(), StoreError>;
    fn clear(&self) -> Result<(), StoreError>;
}

#[derive(Debug, Clone)]
enum Entry {
    Running { fingerprint: Fingerprint },
    Done { fingerprint: Fingerprint, data: Value, at_ms: i64 },
}

/// Retry hint while a duplicate runs: about the time a write takes here.
pub(crate) const IN_PROGRESS_RETRY_MS: u64 = 250;

/// Independent maps a slot is spread over. A `HashMap` grows by rehashing everything under its
/// lock, which stalled every keyed write for tens of milliseconds once a map held ~100k keys
/// (docs/BENCHMARKS.md); a shard holds 1/16 of the keys and stalls only its own callers.
const SHARDS: usize = 16;

#[derive(Debug, Default)]
pub struct MemoryStore {
    shards: [Mutex<Swept<Slot, Entry>>; SHARDS],
}

impl IdempotencyStore for MemoryStore {
    fn claim(&self, slot: Slot, fingerprint: Fingerprint, now_ms: i64) -> Result<Claim, StoreError> {
        Ok(self.claim_now(slot, fingerprint, now_ms))
    }

    fn complete(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        data: &Value,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut entries = self.shard(&slot);
        entries.map.insert(slot, Entry::Done { fingerprint, data: data.clone(), at_ms: now_ms });
        Ok(())
    }

    fn release(&self, slot: Slot) -> Result<(), StoreError> {
        let mut entries = self.shard(&slot);
        if matches!(entries.map.get(&slot), Some(Entry::Running { .. })) {
            entries.map.remove(&slot);
        }
        Ok(())
    }

    fn clear(&self) -> Result<(), StoreError> {
        for shard in &self.shards {
            shard.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
        Ok(())
    }
}

impl MemoryStore {
    fn shard(&self, slot: &Slot) -> MutexGuard<'_, Swept<Slot, Entry>> {
        // A panic while holding a shard cannot leave an entry half-written: keep serving.
        self.shards[shard_of(slot)].lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap().map.len()).sum()
    }

    fn claim_now(&self, slot: Slot, fingerprint: Fingerprint, now_ms: i64) -> Claim {
        let mut entries = self.shard(&slot);
        let retention = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
        // A running claim is released or completed by its call; only old results expire.
        entries.sweep_if_grown(|e| !matches!(e, Entry::Done { at_ms, .. } if now_ms - at_ms >= retention));
        match entries.map.get(&slot) {
            Some(Entry::Done { at_ms, .. }) if now_ms - at_ms >= retention => {}
            Some(Entry::Done { fingerprint: f, data, .. }) => {
                return if *f == fingerprint { Claim::Replay(data.clone()) } else { Claim::Mismatch };
            }
            Some(Entry::Running { fingerprint: f, .. }) => {
                return if *f == fingerprint {
                    Claim::InProgress { retry_after_ms: IN_PROGRESS_RETRY_MS }
                } else {
                    Claim::Mismatch
                };
            }
            None => {}
        }
        entries.map.insert(slot, Entry::Running { fingerprint });
        Claim::Fresh
    }
}

/// Slots are HMAC outputs, so any mix of their bytes spreads them evenly.
fn shard_of(slot: &Slot) -> usize {
    slot.iter().fold(0u8, |acc, b| acc ^ b) as usize % SHARDS
}

/// Hashes keys with the server's secret; the raw key never leaves this function.
#[derive(Clone)]
pub struct KeyHasher {
    secret: Vec<u8>,
}

impl std::fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyHasher")
    }
}

impl KeyHasher {
    pub fn new(secret: &[u8]) -> Self {
        KeyHasher { secret: secret.to_vec() }
    }

    /// The slot of a key in its scope (client, user, tool) (IDEM-5).
    pub fn slot(&self, client_id: &str, user_id: &str, tool: &str, key: &str) -> Slot {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("any key length");
        for part in [client_id, user_id, tool, key] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part.as_bytes());
        }
        mac.finalize().into_bytes().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_past_retention_are_forgotten_as_new_keys_arrive() {
        let store = MemoryStore::default();
        let day = 24 * 3600 * 1000;
        // Enough keys for every shard to pass two sweeps' thresholds after the day has passed.
        let (old, total) = (48_000u32, 72_000u32);
        for i in 0..total {
            let mut slot = [0; 32];
            slot[..4].copy_from_slice(&i.to_be_bytes());
            let at = if i < old { 0 } else { day };
            assert_eq!(store.claim_now(slot, [1; 32], at), Claim::Fresh);
            store.complete(slot, [1; 32], &json!({ "i": i }), at).unwrap();
        }
        let len = store.len();
        assert!(len < (total - old) as usize + 1000, "the results of a day ago went, {len} entries left");
        let mut recent = [0; 32];
        recent[..4].copy_from_slice(&(total - 1).to_be_bytes());
        assert_eq!(store.claim_now(recent, [1; 32], day + 1), Claim::Replay(json!({ "i": total - 1 })));
    }

    #[test]
    fn slots_spread_over_the_shards() {
        let h = KeyHasher::new(b"s");
        let mut counts = [0u32; SHARDS];
        for i in 0..1600 {
            let slot = h.slot("cli_a", "usr_a", "send_message", &format!("key-{i}"));
            counts[shard_of(&slot)] += 1;
        }
        // 100 expected per shard; a shard with under half or over twice that is not spreading.
        assert!(counts.iter().all(|&c| (50..200).contains(&c)), "{counts:?}");
    }

    #[test]
    fn lifecycle() {
        let store = MemoryStore::default();
        let (slot, fp, other) = ([1; 32], [2; 32], [3; 32]);
        assert_eq!(store.claim_now(slot, fp, 0), Claim::Fresh);
        assert!(matches!(store.claim_now(slot, fp, 1), Claim::InProgress { .. }));
        assert_eq!(store.claim_now(slot, other, 1), Claim::Mismatch);
        store.complete(slot, fp, &json!({"id": 1}), 10).unwrap();
        assert_eq!(store.claim_now(slot, fp, 20), Claim::Replay(json!({"id": 1})));
        assert_eq!(store.claim_now(slot, other, 20), Claim::Mismatch);
        let day = 24 * 3600 * 1000;
        assert_eq!(store.claim_now(slot, fp, 10 + day - 60_000), Claim::Replay(json!({"id": 1})));
        assert_eq!(store.claim_now(slot, fp, 10 + day + 60_000), Claim::Fresh);
        store.release(slot).unwrap();
        assert_eq!(store.claim_now(slot, other, 10 + day + 60_000), Claim::Fresh);
    }

    #[test]
    fn slots_are_scoped() {
        let h = KeyHasher::new(b"s");
        let base = h.slot("cli_a", "usr_a", "send_message", "key-12345");
        assert_ne!(base, h.slot("cli_b", "usr_a", "send_message", "key-12345"));
        assert_ne!(base, h.slot("cli_a", "usr_b", "send_message", "key-12345"));
        assert_ne!(base, h.slot("cli_a", "usr_a", "create_instruction", "key-12345"));
        // Length-prefixing keeps ("ab","c") and ("a","bc") apart.
        assert_ne!(h.slot("ab", "c", "t", "k"), h.slot("a", "bc", "t", "k"));
    }
}
