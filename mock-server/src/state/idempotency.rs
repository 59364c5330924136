//! Idempotency keys (IDEM-1..8): the semantics written once over a store trait, so the in-memory
//! store here and a shared store behave the same. Keys are stored only as a keyed hash of
//! (client, user, tool, key) (IDEM-5, IDEM-8); arguments only as a digest.

use std::sync::{Mutex, MutexGuard};

use futures::future::{BoxFuture, Either, FutureExt, Ready};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::state::expiry::Swept;

/// The stored identity of a key: HMAC of its scope and text, never the raw key.
pub type Slot = [u8; 32];
/// Digest of the arguments other than the key.
pub type Fingerprint = [u8; 32];
/// Who holds a running claim: random per call, so a release only ever removes its own claim
/// (a claim the store made after its caller gave up must not outlive a release sent for it).
pub type Owner = u64;

/// A key a call now owns: its slot, the fingerprint of its arguments, and the claim's owner.
#[derive(Debug, Clone, Copy)]
pub struct Owned {
    pub slot: Slot,
    pub fingerprint: Fingerprint,
    pub owner: Owner,
}

/// A keyed write's claim, to complete with its result at `now_ms` (the server's clock, as the
/// defects adjust it) in the same step as its effect, where the store can (Redis).
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub owned: Owned,
    pub now_ms: i64,
}

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

/// The backing store did not answer, or cannot be trusted now: MCP_DEPENDENCY_UNAVAILABLE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("backing store unavailable")]
pub struct StoreError;

/// What a store operation returns: ready at once for the in-memory stores (no allocation on
/// their path), a boxed future for a store across the network.
pub type StoreFuture<'a, T> = Either<Ready<Result<T, StoreError>>, BoxFuture<'a, Result<T, StoreError>>>;

/// An answer known at once.
pub fn ready<'a, T: Send + 'a>(result: Result<T, StoreError>) -> StoreFuture<'a, T> {
    Either::Left(futures::future::ready(result))
}

/// An answer that needs I/O.
pub fn pending<'a, T>(
    future: impl std::future::Future<Output = Result<T, StoreError>> + Send + 'a,
) -> StoreFuture<'a, T> {
    Either::Right(future.boxed())
}

/// Storage of key states. Implementations make `claim` atomic; `now_ms` is the server's clock,
/// so retention follows it even when the store has its own expiry.
pub trait IdempotencyStore: Send + Sync + std::fmt::Debug {
    fn claim(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        owner: Owner,
        now_ms: i64,
    ) -> StoreFuture<'_, Claim>;
    /// Store a success for 24 h (IDEM-6).
    fn complete<'a>(
        &'a self,
        slot: Slot,
        fingerprint: Fingerprint,
        data: &'a Value,
        now_ms: i64,
    ) -> StoreFuture<'a, ()>;
    /// Forget `owner`'s claim, if it is still running: only successes are stored (IDEM-7).
    fn release(&self, slot: Slot, owner: Owner) -> StoreFuture<'_, ()>;
    fn clear(&self) -> StoreFuture<'_, ()>;
}

#[derive(Debug, Clone)]
enum Entry {
    Running { fingerprint: Fingerprint, owner: Owner },
    Done { fingerprint: Fingerprint, data: Value, at_ms: i64 },
}

/// How long a running claim survives, in a shared store, a replica that died mid-call: past it
/// the key may be claimed again (Redis sets it; the pipeline's background retries stop then).
pub(crate) const RUNNING_TTL: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Retry hint while a duplicate runs: about the time a write takes here.
pub(crate) const IN_PROGRESS_RETRY_MS: u64 = 250;

/// Independent maps a slot is spread over. A `HashMap` grows by rehashing everything under its
/// lock, which stalled every keyed write for tens of milliseconds once a map held ~100k keys
/// (docs/BENCHMARKS.md); a shard holds 1/16 of the keys and stalls only its own callers.
const SHARDS: usize = 16;

/// Live records (running claims and results younger than 24 h) the in-memory store holds by
/// default, across its shards; `--max-idempotency-records` changes it. A result is ~1 KiB
/// here, and the effect it records (an instruction, a message) about as much in the store, so
/// this bounds what keyed writes can add within a day (docs/RELIABILITY.md).
pub const DEFAULT_CAPACITY: usize = 100_000;

#[derive(Debug, Default)]
struct Shard {
    records: Swept<Slot, Entry>,
    /// While the shard is full: when its oldest result expires, so a refused claim does not walk
    /// the shard again before a sweep can free anything.
    full_until_ms: Option<i64>,
}

/// The in-memory store: at most `capacity` live records, split evenly over 16 shards. When a
/// new key's shard is full of unexpired records, after dropping the expired ones, the claim is
/// refused with [`StoreError`] (MCP_DEPENDENCY_UNAVAILABLE, retryable, before any effect):
/// replays, mismatches and calls in progress are still answered, since they need no room.
#[derive(Debug)]
pub struct MemoryStore {
    shards: [Mutex<Shard>; SHARDS],
    per_shard: usize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::with_capacity(DEFAULT_CAPACITY)
    }
}

impl IdempotencyStore for MemoryStore {
    fn claim(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        owner: Owner,
        now_ms: i64,
    ) -> StoreFuture<'_, Claim> {
        ready(self.claim_now(slot, fingerprint, owner, now_ms).ok_or(StoreError))
    }

    fn complete<'a>(
        &'a self,
        slot: Slot,
        fingerprint: Fingerprint,
        data: &'a Value,
        now_ms: i64,
    ) -> StoreFuture<'a, ()> {
        self.complete_now(slot, fingerprint, data, now_ms);
        ready(Ok(()))
    }

    fn release(&self, slot: Slot, owner: Owner) -> StoreFuture<'_, ()> {
        self.release_now(slot, owner);
        ready(Ok(()))
    }

    fn clear(&self) -> StoreFuture<'_, ()> {
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            shard.records.clear();
            shard.full_until_ms = None;
        }
        ready(Ok(()))
    }
}

const RETENTION_MS: i64 = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;

/// A running claim is released or completed by its call; only old results expire.
fn live(entry: &Entry, now_ms: i64) -> bool {
    !matches!(entry, Entry::Done { at_ms, .. } if now_ms - at_ms >= RETENTION_MS)
}

impl MemoryStore {
    /// A store holding at most `capacity` live records (at least one per shard).
    pub fn with_capacity(capacity: usize) -> MemoryStore {
        MemoryStore { shards: Default::default(), per_shard: capacity.div_ceil(SHARDS).max(1) }
    }

    /// The live records it holds at most.
    pub fn capacity(&self) -> usize {
        self.per_shard * SHARDS
    }

    fn shard(&self, slot: &Slot) -> MutexGuard<'_, Shard> {
        // A panic while holding a shard cannot leave an entry half-written: keep serving.
        self.shards[shard_of(slot)].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records held now, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).records.map.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `None`: the slot's shard is full of live records.
    pub fn claim_now(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        owner: Owner,
        now_ms: i64,
    ) -> Option<Claim> {
        let mut shard = self.shard(&slot);
        shard.records.sweep_if_grown(|e| live(e, now_ms));
        match shard.records.map.get(&slot) {
            Some(Entry::Done { at_ms, .. }) if now_ms - at_ms >= RETENTION_MS => {
                // Reusing an expired record's room: the shard does not grow.
                shard.records.map.insert(slot, Entry::Running { fingerprint, owner });
                return Some(Claim::Fresh);
            }
            Some(Entry::Done { fingerprint: f, data, .. }) => {
                return Some(if *f == fingerprint { Claim::Replay(data.clone()) } else { Claim::Mismatch });
            }
            Some(Entry::Running { fingerprint: f, .. }) => {
                return Some(if *f == fingerprint {
                    Claim::InProgress { retry_after_ms: IN_PROGRESS_RETRY_MS }
                } else {
                    Claim::Mismatch
                });
            }
            None => {}
        }
        if shard.records.map.len() >= self.per_shard && !self.make_room(&mut shard, now_ms) {
            return None;
        }
        shard.records.map.insert(slot, Entry::Running { fingerprint, owner });
        Some(Claim::Fresh)
    }

    pub fn complete_now(&self, slot: Slot, fingerprint: Fingerprint, data: &Value, now_ms: i64) {
        // The claim already holds this slot's room: storing the result never needs more.
        let mut shard = self.shard(&slot);
        shard.records.map.insert(slot, Entry::Done { fingerprint, data: data.clone(), at_ms: now_ms });
    }

    fn release_now(&self, slot: Slot, owner: Owner) {
        let mut shard = self.shard(&slot);
        if matches!(shard.records.map.get(&slot), Some(Entry::Running { owner: o, .. }) if *o == owner) {
            shard.records.map.remove(&slot);
        }
    }

    /// Drops the shard's expired records; false if it is still full. A full shard is walked
    /// again only once its oldest result can have expired.
    fn make_room(&self, shard: &mut Shard, now_ms: i64) -> bool {
        if shard.full_until_ms.is_some_and(|until| now_ms < until) {
            return false;
        }
        shard.records.map.retain(|_, e| live(e, now_ms));
        if shard.records.map.len() < self.per_shard {
            shard.full_until_ms = None;
            return true;
        }
        // Running claims become results no older than now when they complete.
        let oldest = shard
            .records
            .map
            .values()
            .filter_map(|e| match e {
                Entry::Done { at_ms, .. } => Some(*at_ms),
                Entry::Running { .. } => None,
            })
            .min()
            .unwrap_or(now_ms);
        shard.full_until_ms = Some(oldest + RETENTION_MS);
        tracing::warn!(
            capacity = self.capacity(),
            "idempotency store full of unexpired records: new keyed writes refused as MCP_DEPENDENCY_UNAVAILABLE"
        );
        false
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

    const OWNER: Owner = 1;

    impl MemoryStore {
        fn claim_ok(&self, slot: Slot, fingerprint: Fingerprint, now_ms: i64) -> Claim {
            self.claim_now(slot, fingerprint, OWNER, now_ms).expect("room for a new key")
        }

        /// Through the trait, as the pipeline calls it.
        fn try_claim(&self, slot: Slot, fingerprint: Fingerprint, now_ms: i64) -> Result<Claim, StoreError> {
            self.claim(slot, fingerprint, OWNER, now_ms).now_or_never().expect("in memory: ready at once")
        }
    }

    fn slot_of(i: u32) -> Slot {
        let mut slot = [0; 32];
        slot[..4].copy_from_slice(&i.to_be_bytes());
        slot
    }

    #[test]
    fn a_full_store_refuses_new_keys_but_still_answers_known_ones() {
        let store = MemoryStore::with_capacity(SHARDS * 4);
        let day = RETENTION_MS;
        // Fill every shard with results stored at 0.
        let mut stored = Vec::new();
        let mut i = 0;
        while stored.len() < store.capacity() {
            let slot = slot_of(i);
            i += 1;
            // `None`: this slot's shard is full already; others are not yet.
            if let Some(claim) = store.claim_now(slot, [1; 32], OWNER, 0) {
                assert_eq!(claim, Claim::Fresh);
                store.complete_now(slot, [1; 32], &json!({ "i": i }), 0);
                stored.push(slot);
            }
        }
        assert_eq!(store.len(), store.capacity());
        // Every new key is refused now, whatever its shard, and nothing is added.
        for j in 0..256 {
            assert_eq!(store.try_claim(slot_of(1_000_000 + j), [1; 32], 10), Err(StoreError));
        }
        assert_eq!(store.len(), store.capacity());
        // Keys already held need no room: replay, mismatch.
        assert!(matches!(store.try_claim(stored[0], [1; 32], 10), Ok(Claim::Replay(_))));
        assert_eq!(store.try_claim(stored[0], [2; 32], 10), Ok(Claim::Mismatch));
        // A full shard is not walked again before its oldest result can expire.
        assert!(store.shards.iter().all(|s| s.lock().unwrap().full_until_ms.is_some()));
        // Once the day has passed, expired results are swept first and new keys fit again.
        let fresh =
            (0..256).filter(|j| store.try_claim(slot_of(3_000_000 + j), [1; 32], day).is_ok()).count();
        assert_eq!(fresh, store.capacity(), "every shard emptied of the day-old results, then refilled");
        assert_eq!(store.len(), store.capacity());
    }

    #[test]
    fn running_claims_count_against_the_capacity_and_release_frees_them() {
        let store = MemoryStore::with_capacity(SHARDS);
        let slot = slot_of(7);
        let mate = (8..).map(slot_of).find(|s| shard_of(s) == shard_of(&slot)).unwrap();
        assert_eq!(store.claim_now(slot, [1; 32], OWNER, 0), Some(Claim::Fresh));
        assert_eq!(store.claim_now(mate, [1; 32], OWNER, 0), None, "one record per shard");
        store.release_now(slot, OWNER);
        assert_eq!(store.claim_now(mate, [1; 32], OWNER, 0), Some(Claim::Fresh));
        // Completing never fails, full or not: the effect has happened.
        store.complete_now(mate, [1; 32], &json!(1), 0);
        store.clear().now_or_never().expect("ready").unwrap();
        assert!(store.is_empty());
        assert_eq!(store.claim_now(slot, [1; 32], OWNER, 0), Some(Claim::Fresh));
    }

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
            assert_eq!(store.claim_ok(slot, [1; 32], at), Claim::Fresh);
            store.complete_now(slot, [1; 32], &json!({ "i": i }), at);
        }
        let len = store.len();
        assert!(len < (total - old) as usize + 1000, "the results of a day ago went, {len} entries left");
        let mut recent = [0; 32];
        recent[..4].copy_from_slice(&(total - 1).to_be_bytes());
        assert_eq!(store.claim_ok(recent, [1; 32], day + 1), Claim::Replay(json!({ "i": total - 1 })));
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
        assert_eq!(store.claim_ok(slot, fp, 0), Claim::Fresh);
        assert!(matches!(store.claim_ok(slot, fp, 1), Claim::InProgress { .. }));
        assert_eq!(store.claim_ok(slot, other, 1), Claim::Mismatch);
        store.complete_now(slot, fp, &json!({"id": 1}), 10);
        assert_eq!(store.claim_ok(slot, fp, 20), Claim::Replay(json!({"id": 1})));
        assert_eq!(store.claim_ok(slot, other, 20), Claim::Mismatch);
        let day = 24 * 3600 * 1000;
        assert_eq!(store.claim_ok(slot, fp, 10 + day - 60_000), Claim::Replay(json!({"id": 1})));
        assert_eq!(store.claim_ok(slot, fp, 10 + day + 60_000), Claim::Fresh);
        // Only the claim's owner releases it: a stale release for another call changes nothing.
        store.release_now(slot, OWNER + 1);
        assert_eq!(store.claim_ok(slot, other, 10 + day + 60_000), Claim::Mismatch);
        store.release_now(slot, OWNER);
        assert_eq!(store.claim_ok(slot, other, 10 + day + 60_000), Claim::Fresh);
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
