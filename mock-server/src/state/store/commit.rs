//! The store: the data behind one lock, and how it changes. In memory a write plans its change
//! and applies it under the write lock; on Redis (`--redis`) the data is the dataset plus the
//! shared log's changes, which every replica applies in order (`Store::catch_up`), and a write is
//! an entry appended to the log (`Store::commit`, `state::redis::log`).

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use chataigne_contract::dataset::Dataset;

use super::{Change, Data};
use crate::output::Output;
use crate::state::clock::{Advance, Clock, MAX_OFFSET_MS};
use crate::state::idempotency::{Completion, StoreError};
use crate::state::redis::{Appended, Batch, Redis, Unsent, entry, split};

/// What a write planned on the data it read: the change, and the answer once it is made.
#[derive(Debug)]
pub struct Planned {
    pub change: Change,
    pub output: Output,
}

/// Why a write was not made, or may have been.
#[derive(Debug)]
pub enum Failed<E> {
    /// Refused by its plan (a precondition, a missing record): no effect.
    Refused(E),
    /// The shared store could not be asked, or refused the write: no effect.
    Unavailable,
    /// The shared store was asked and did not answer: the write may have been made.
    Unknown,
}

/// Where a replica's data stands in the shared log (`state::redis::log`): the generation it
/// follows (`lineage`, changed only when Redis lost the log; `seq`, one more at each reset) and
/// how many of its entries it applied. Unused in memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    pub lineage: String,
    pub seq: u64,
    pub applied: u64,
    /// The id of the last entry applied ("" before the first).
    pub last: String,
    /// The version of the control API's shared settings this replica holds (`Data::control`).
    pub control_version: u64,
}

/// Entries asked of the log at once when catching up.
const BATCH: usize = 512;
/// Batches one catch-up takes at most (a replica far behind catches up over several calls, and at
/// start, `App::start`, until it is done).
const ROUNDS: usize = 64;
/// Writes that lost a race for their record to another replica's are planned again this often
/// at most (each time on the newer state, where the loser usually fails its precondition).
const ATTEMPTS: usize = 8;

/// The store: one lock over the data. A write plans its change on the data and applies it under
/// the write lock, so its checks and its effect see the same state (compare-and-set, PRE-4).
/// Shared (`--redis`), the data is the dataset plus the log's changes, which every replica
/// applies in order (`catch_up`), and a write is an entry appended to the log (`commit`).
#[derive(Debug)]
pub struct Store {
    data: RwLock<Data>,
    base: Arc<Dataset>,
    synthetic: usize,
    shared: Option<Shared>,
}

#[derive(Debug)]
struct Shared {
    redis: Arc<Redis>,
    clock: Arc<Clock>,
}

impl Store {
    /// The dataset, plus `synthetic` generated orders (0 outside benchmarks).
    pub fn new(dataset: &Dataset, synthetic: usize) -> Store {
        Store {
            data: RwLock::new(Data::load_with(dataset, synthetic)),
            base: Arc::new(dataset.clone()),
            synthetic,
            shared: None,
        }
    }

    /// The same, its changes shared on Redis with every replica of the namespace, and the clock's
    /// offset with them.
    pub fn shared(dataset: &Dataset, synthetic: usize, redis: Arc<Redis>, clock: Arc<Clock>) -> Store {
        Store { shared: Some(Shared { redis, clock }), ..Store::new(dataset, synthetic) }
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Data> {
        // A poisoned lock only means a panic elsewhere; the data itself stays consistent because
        // every write completes before it releases the lock.
        self.data.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Data> {
        self.data.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Applies the changes other replicas made since this one last looked, and takes the shared
    /// clock's offset; at once in memory. Err: Redis did not answer, or the log is longer than
    /// one call catches up with ([`ROUNDS`] batches; what was applied stays, the next call goes
    /// on from there).
    pub async fn catch_up(&self) -> Result<(), StoreError> {
        let Some(shared) = &self.shared else { return Ok(()) };
        for _ in 0..ROUNDS {
            let at = self.read().position.clone();
            let batch = shared.redis.read_log(&at, BATCH).await?;
            let full = batch.entries.len() == BATCH;
            let changes = batch
                .entries
                .iter()
                .map(|entry| {
                    let (id, change) = split(entry).ok_or(())?;
                    Ok((id.to_owned(), serde_json::from_str::<Change>(change).map_err(drop)?))
                })
                .collect::<Result<Vec<_>, ()>>()
                .map_err(|()| {
                    // Written by a newer server (a change this one does not know): never skipped,
                    // or this replica would answer from other data than the rest.
                    tracing::error!("the shared log holds a change this server cannot read: upgrade it");
                    StoreError
                })?;
            // Back to the dataset first (a reset, a lost log): built off the lock and off the
            // runtime's threads, since with `--synthetic-orders` it takes seconds.
            let fresh = if at.lineage != batch.lineage || at.seq != batch.seq || batch.diverged {
                let (base, synthetic) = (self.base.clone(), self.synthetic);
                let built = tokio::task::spawn_blocking(move || Data::load_with(&base, synthetic));
                Some(built.await.map_err(|_| StoreError)?)
            } else {
                None
            };
            // Not taken: another task moved this replica meanwhile; ask again from where it is.
            if self.take(batch, changes, &shared.clock, fresh) && !full {
                return Ok(());
            }
        }
        Err(StoreError)
    }

    /// Applies a batch read from the log, unless another task has moved this replica past it or
    /// to a newer generation meanwhile; whether it was taken. `fresh`: the dataset loaded anew,
    /// for a batch that starts a generation over.
    fn take(&self, batch: Batch, changes: Vec<(String, Change)>, clock: &Clock, fresh: Option<Data>) -> bool {
        // Declared before the guard: the data replaced is dropped after the lock is released.
        let mut replaced = None;
        let mut data = self.write();
        let at = &data.position;
        let same = batch.lineage == at.lineage && batch.seq == at.seq;
        // An older generation's answer, overtaken by a reset another task applied: dropped.
        let older = batch.lineage == at.lineage && batch.seq < at.seq;
        let rebuild = !same || batch.diverged;
        if older || (!rebuild && batch.from > at.applied) || (rebuild && (batch.from != 0 || fresh.is_none()))
        {
            return false;
        }
        if let (true, Some(fresh)) = (rebuild, fresh) {
            // A reset, a Redis that lost the log or a failover that lost its end: back to the
            // dataset, then the log as it is.
            if batch.diverged {
                tracing::warn!(
                    "the shared log lost changes this replica had applied (a failover?): starting over from it"
                );
            }
            // The control settings outlive a reset, not a Redis that lost everything.
            let lost = data.position.lineage != batch.lineage;
            let control = if lost {
                (0, Vec::new())
            } else {
                (data.position.control_version, std::mem::take(&mut data.control))
            };
            replaced = Some(std::mem::replace(&mut *data, fresh));
            data.position = Position {
                lineage: batch.lineage,
                seq: batch.seq,
                applied: 0,
                last: String::new(),
                control_version: control.0,
            };
            data.control = control.1;
            clock.set_offset(batch.clock_ms);
        } else {
            clock.raise_offset(batch.clock_ms);
        }
        if let Some(control) = batch.control
            && batch.control_version > data.position.control_version
        {
            data.control = control;
            data.position.control_version = batch.control_version;
        }
        let skip = (data.position.applied - batch.from) as usize;
        for (id, change) in changes.into_iter().skip(skip) {
            data.apply(&change);
            data.position.applied += 1;
            data.position.last = id;
        }
        drop(data);
        drop(replaced);
        true
    }

    /// Makes the change `plan` decides on the current data, and answers its output. `keyed`: the
    /// claim of a keyed write, whose result a shared store keeps with the effect, in one step.
    pub async fn commit<E>(
        &self,
        keyed: Option<Completion>,
        plan: impl Fn(&Data) -> Result<Planned, E>,
    ) -> Result<Output, Failed<E>> {
        self.commit_from(false, keyed, plan).await
    }

    /// [`Store::commit`] for a caller that has just caught up (the pipeline, before a tool's
    /// checks): its first plan is made on the data as it is, without asking Redis again. A view
    /// behind by then loses only a race: the guarded record's compare-and-set sends it round.
    pub async fn commit_current<E>(
        &self,
        keyed: Option<Completion>,
        plan: impl Fn(&Data) -> Result<Planned, E>,
    ) -> Result<Output, Failed<E>> {
        self.commit_from(true, keyed, plan).await
    }

    async fn commit_from<E>(
        &self,
        current: bool,
        keyed: Option<Completion>,
        plan: impl Fn(&Data) -> Result<Planned, E>,
    ) -> Result<Output, Failed<E>> {
        let Some(shared) = &self.shared else { return self.commit_here(plan) };
        for attempt in 0..ATTEMPTS {
            if attempt > 0 || !current {
                self.catch_up().await.map_err(|_| Failed::Unavailable)?;
            }
            let (planned, at) = {
                let data = self.read();
                (plan(&data).map_err(Failed::Refused)?, data.position.clone())
            };
            let change = serde_json::to_string(&planned.change).map_err(|_| Failed::Unavailable)?;
            let entry = entry(&change);
            let guarded = planned.change.guarded_record();
            let completion = keyed.as_ref().map(|c| (c, &planned.output.data));
            match shared.redis.append(&at, &entry, guarded, completion).await {
                Ok(Appended::Made(length)) => {
                    self.applied_own(&at, length, &entry[..16], &planned.change);
                    return Ok(Output { stored: keyed.is_some(), ..planned.output });
                }
                Ok(Appended::Stale) => continue,
                Ok(Appended::Unclaimed) | Err(Unsent::NotSent) => return Err(Failed::Unavailable),
                Err(Unsent::NoAnswer) => return Err(Failed::Unknown),
            }
        }
        // Lost the race every time: nothing was made.
        Err(Failed::Unavailable)
    }

    /// After this replica's change became entry `length - 1`: applied now if it follows what the
    /// replica holds, else the next catch-up brings it with the entries before it.
    fn applied_own(&self, at: &Position, length: u64, id: &str, change: &Change) {
        let mut data = self.write();
        let p = &data.position;
        if p.lineage == at.lineage && p.seq == at.seq && p.applied + 1 == length {
            data.apply(change);
            data.position.applied = length;
            data.position.last = id.to_owned();
        }
    }

    /// Applies a change to this replica's data alone, outside any log (the suite's oracle seeds
    /// its reference with the state a run observed).
    pub fn apply_here(&self, change: &Change) {
        self.write().apply(change);
    }

    fn commit_here<E>(&self, plan: impl Fn(&Data) -> Result<Planned, E>) -> Result<Output, Failed<E>> {
        let mut data = self.write();
        let planned = plan(&data).map_err(Failed::Refused)?;
        data.apply(&planned.change);
        Ok(planned.output)
    }

    /// Back to the dataset: here, or for every replica (a new generation of the log, the shared
    /// clock back to the wall's). Err: Redis did not answer, nothing changed.
    pub async fn reset(&self) -> Result<(), StoreError> {
        match &self.shared {
            None => {
                *self.write() = Data::load_with(&self.base, self.synthetic);
                Ok(())
            }
            Some(shared) => {
                shared.redis.reset_log().await?;
                self.catch_up().await
            }
        }
    }

    /// Changes the control API's shared settings on Redis (see `Redis::set_control`), then
    /// catches up with them; in memory, nothing to share.
    pub async fn set_control(
        &self,
        clear_faults: bool,
        fields: &[(String, String)],
    ) -> Result<(), StoreError> {
        let Some(shared) = &self.shared else { return Ok(()) };
        shared.redis.set_control(clear_faults, fields).await?;
        // Made: a catch-up that fails now is made by the next call.
        let _ = self.catch_up().await;
        Ok(())
    }

    /// Moves the clock forward by `ms`, for every replica when shared: the new offset, or why not.
    pub async fn advance_clock(&self, clock: &Clock, ms: i64) -> Result<Result<i64, Advance>, StoreError> {
        let Some(shared) = &self.shared else { return Ok(clock.advance_ms(ms)) };
        if ms < 0 {
            return Ok(Err(Advance::Backward));
        }
        match shared.redis.advance_clock(ms, MAX_OFFSET_MS).await? {
            Ok(offset) => {
                shared.clock.raise_offset(offset);
                Ok(Ok(offset))
            }
            Err(_) => Ok(Err(Advance::TooFar)),
        }
    }
}

#[cfg(test)]
mod tests {
    use chataigne_contract::dataset::generate;

    use super::*;

    /// How a replica takes a batch of the shared log: in order, skipping what it applied, never
    /// an answer older than what it holds, and from the dataset again after a reset or when the
    /// log no longer holds what it applied (a failover that lost its end).
    #[test]
    fn a_replica_takes_the_log_in_order_and_starts_over_when_it_must() {
        let store = Store::new(&generate(), 0);
        let clock = Clock::default();
        let status =
            |s: &str| Change::RestaurantStatus { restaurant_id: "rst_central".into(), status: s.into() };
        let batch = |seq: u64, from: u64, statuses: &[&str], diverged: bool| {
            let entries = statuses.iter().map(|s| (format!("{s:0>16}"), status(s))).collect::<Vec<_>>();
            let batch = Batch {
                lineage: "L".into(),
                seq,
                clock_ms: 7,
                from,
                entries: Vec::new(),
                diverged,
                control_version: 0,
                control: None,
            };
            (batch, entries)
        };
        let check =
            |seq: u64, from: u64, statuses: &[&str], diverged: bool, taken: bool, now: (&str, u64)| {
                let (b, entries) = batch(seq, from, statuses, diverged);
                let fresh = Some(Data::load(&generate()));
                assert_eq!(store.take(b, entries, &clock, fresh), taken, "{seq} {from} {statuses:?}");
                let data = store.read();
                let at = (data.restaurant("rst_central").unwrap().status.as_str(), data.position.applied);
                assert_eq!(at, now, "{seq} {from} {statuses:?}");
            };
        let open = store.read().restaurant("rst_central").unwrap().status.clone();
        check(0, 0, &["paused", "open"], false, true, ("open", 2));
        check(0, 1, &["open", "paused"], false, true, ("paused", 3));
        check(0, 5, &["open"], false, false, ("paused", 3));
        check(1, 0, &["closing"], false, true, ("closing", 1));
        check(0, 0, &["paused", "open", "paused", "open"], false, false, ("closing", 1));
        check(1, 0, &[], true, true, (open.as_str(), 0));
        assert_eq!(clock.offset_ms(), 7);
        assert_eq!(store.read().position.last, "");
    }
}
