//! The data's shared change log on Redis. Every replica keeps the published dataset as its
//! immutable base in memory; every change since (`store::Change`) is one entry of the list
//! `{ns}:log`, in the order replicas apply them. Beside it, the hash `{ns}:state` holds the log's
//! generation (`lineage`, `seq`) and the clock's offset, and `{ns}:ver` the index of the last
//! change of each record a compare-and-set guards.
//!
//! - Catching up (`READ`): the entries past the replica's applied index, in batches, with the
//!   generation and the clock, in one script.
//! - A write (`COMMIT`): appended only if the generation is the one the replica planned on and the
//!   record it guards has not changed since its view (PRE-4); a keyed write's idempotency record
//!   is completed in the same script, so its effect and its stored result appear together.
//! - A reset (`RESET`) starts a new generation: the log is emptied, so catching up never replays
//!   more than the changes since the last reset.
//! - A lost Redis (no `lineage`) is a new lineage: replicas drop back to the dataset, as Redis did.
//! - The control API's faults and deadlines (`CONTROL`): fields of `{ns}:control`, versioned in
//!   `{ns}:state`; `READ` returns them only when their version is not the replica's.

use redis::Script;
use serde_json::Value;

use super::{DONE_TTL_MS, Redis, hex, new_epoch};
use crate::state::idempotency::{Completion, StoreError};
use crate::state::store::Position;

/// KEYS: state, log, ver, control settings. ARGV: lineage, seq, applied, a fresh lineage, batch
/// size, the id of the last entry applied, the version of the control settings the replica holds.
const READ: &str = r"
local st = redis.call('HMGET', KEYS[1], 'lineage', 'seq', 'clock')
local lineage, seq, clock = st[1], st[2] or '0', st[3] or '0'
if not lineage then
  -- Redis lost the log's state (a restart without persistence, FLUSHALL, eviction): a new
  -- lineage, from the dataset, which every replica follows.
  lineage = ARGV[4]
  seq = '0'
  redis.call('DEL', KEYS[2], KEYS[3])
  redis.call('HSET', KEYS[1], 'lineage', lineage, 'seq', 0)
end
local from, diverged = 0, 0
if lineage == ARGV[1] and seq == ARGV[2] then
  from = tonumber(ARGV[3])
  if from > 0 then
    -- The entry the replica applied last must still be there: a failover to a Redis replica
    -- that had not received it yet loses it (and maybe the ones before), and the log then goes
    -- on without them. The replica starts over from this log.
    local last = redis.call('LINDEX', KEYS[2], from - 1)
    if not last or string.sub(last, 1, 16) ~= ARGV[6] then from, diverged = 0, 1 end
  end
end
local entries = redis.call('LRANGE', KEYS[2], from, from + tonumber(ARGV[5]) - 1)
local ctlv, ctl = redis.call('HGET', KEYS[1], 'ctlv') or '0', {}
if ctlv ~= ARGV[7] then ctl = redis.call('HGETALL', KEYS[4]) end
return {lineage, seq, clock, from, entries, diverged, ctlv, ctl}
";

/// KEYS: state, log, ver, the idempotency record (keyed) or state again. ARGV: lineage, seq,
/// applied, change, guarded record or '', keyed '1' or '0', owner, fingerprint, now, result, TTL.
const COMMIT: &str = r"
local st = redis.call('HMGET', KEYS[1], 'lineage', 'seq')
if st[1] ~= ARGV[1] or (st[2] or '0') ~= ARGV[2] then return {'stale', 0} end
if ARGV[5] ~= '' then
  local last = tonumber(redis.call('HGET', KEYS[3], ARGV[5]) or '-1')
  if last >= tonumber(ARGV[3]) then return {'stale', 0} end
end
if ARGV[6] == '1' then
  -- The claim must still be this call's: one taken over (its replica seemed gone) or expired
  -- may have run elsewhere, so this effect is not made.
  local e = redis.call('HMGET', KEYS[4], 's', 'o')
  if e[1] ~= 'running' or e[2] ~= ARGV[7] then return {'unclaimed', 0} end
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[4], 's', 'done', 'f', ARGV[8], 'at', ARGV[9], 'd', ARGV[10])
  redis.call('PEXPIRE', KEYS[4], ARGV[11])
end
local n = redis.call('RPUSH', KEYS[2], ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], ARGV[5], n - 1) end
return {'ok', n}
";

/// KEYS: state, log, ver, control settings. ARGV: a fresh lineage (when Redis has none).
const RESET: &str = r"
redis.call('DEL', KEYS[2], KEYS[3])
if not redis.call('HGET', KEYS[1], 'lineage') then redis.call('HSET', KEYS[1], 'lineage', ARGV[1]) end
redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], 'clock', 0)
redis.call('DEL', KEYS[4])
redis.call('HINCRBY', KEYS[1], 'ctlv', 1)
return 1
";

/// KEYS: state, control settings. ARGV: '1' to remove every fault first, then pairs of a field
/// (`fault:<tool>`, `read_ms`, ...) and its value ('' removes it). The settings' new version.
/// Field by field, as in memory: two replicas setting two tools' faults at once keep both.
const CONTROL: &str = r"
if ARGV[1] == '1' then
  for _, field in ipairs(redis.call('HKEYS', KEYS[2])) do
    if string.sub(field, 1, 6) == 'fault:' then redis.call('HDEL', KEYS[2], field) end
  end
end
for i = 2, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[2], ARGV[i])
  else redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
end
return redis.call('HINCRBY', KEYS[1], 'ctlv', 1)
";

/// KEYS: state. ARGV: ms forward, the largest offset. The new offset, or 0 and the current one.
const ADVANCE: &str = r"
local offset = tonumber(redis.call('HGET', KEYS[1], 'clock') or '0')
if offset + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, offset} end
return {1, redis.call('HINCRBY', KEYS[1], 'clock', ARGV[1])}
";

pub(super) struct Scripts {
    read: Script,
    commit: Script,
    reset: Script,
    advance: Script,
    control: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            read: Script::new(READ),
            commit: Script::new(COMMIT),
            reset: Script::new(RESET),
            advance: Script::new(ADVANCE),
            control: Script::new(CONTROL),
        }
    }
}

/// The log past a replica's position: where it starts (`from`: 0 when the generation is not the
/// replica's, or the log no longer holds what it applied: `diverged`), its entries (at most the
/// batch asked, each `<16 hex digits of id><change as JSON>`), and the clock's offset.
#[derive(Debug)]
pub struct Batch {
    pub lineage: String,
    pub seq: u64,
    pub clock_ms: i64,
    pub from: u64,
    pub entries: Vec<String>,
    pub diverged: bool,
    /// The control API's shared settings (faults, deadlines): their version, and their fields
    /// (`fault:<tool>` → a fault as JSON, `read_ms` → ms, ...) when it is not the version the
    /// replica holds.
    pub control_version: u64,
    pub control: Option<Vec<(String, String)>>,
}

/// An entry of the log: a random id (what `READ` checks a replica's last entry by), then the
/// change.
pub fn entry(change: &str) -> String {
    format!("{:016x}{change}", rand::random::<u64>())
}

/// An entry's id and its change.
pub fn split(entry: &str) -> Option<(&str, &str)> {
    entry.get(..16).zip(entry.get(16..))
}

/// What became of a change sent to the log.
#[derive(Debug, PartialEq, Eq)]
pub enum Appended {
    /// Made: the log holds this many entries, the change last.
    Made(u64),
    /// Not made: the replica's view is behind (another generation, or the guarded record changed).
    Stale,
    /// Not made: the keyed write's claim is no longer this call's.
    Unclaimed,
}

/// Why a change was not sent or not answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Unsent {
    /// Nothing was sent (Redis is being left alone): no effect.
    NotSent,
    /// Sent, and no answer: the change may have been made.
    NoAnswer,
}

impl Redis {
    fn log_keys(&self) -> [String; 3] {
        [self.key("state"), self.key("log"), self.key("ver")]
    }

    fn control_key(&self) -> String {
        self.key("control")
    }

    /// The log past `at`, at most `max` entries, with the generation and the clock.
    pub async fn read_log(&self, at: &Position, max: usize) -> Result<Batch, StoreError> {
        let [state, log, ver] = self.log_keys();
        let mut invocation = self.log.read.key(state);
        invocation
            .key(log)
            .key(ver)
            .key(self.control_key())
            .arg(&at.lineage)
            .arg(at.seq)
            .arg(at.applied)
            .arg(new_epoch())
            .arg(max)
            .arg(&at.last)
            .arg(at.control_version);
        let mut conn = self.conn.clone();
        type Answer = (String, String, String, u64, Vec<String>, u8, String, Vec<(String, String)>);
        let (lineage, seq, clock, from, entries, diverged, control_version, control): Answer =
            self.ask(invocation.invoke_async(&mut conn)).await?;
        let control_version = control_version.parse().map_err(|_| StoreError)?;
        Ok(Batch {
            lineage,
            seq: seq.parse().map_err(|_| StoreError)?,
            clock_ms: clock.parse().map_err(|_| StoreError)?,
            from,
            entries,
            diverged: diverged == 1,
            control: (control_version != at.control_version).then_some(control),
            control_version,
        })
    }

    /// Appends `entry` if the log is still as `at` saw it for the record `guarded`; with `keyed`,
    /// completes its claim with `result` in the same step.
    pub async fn append(
        &self,
        at: &Position,
        entry: &str,
        guarded: Option<&str>,
        keyed: Option<(&Completion, &Value)>,
    ) -> Result<Appended, Unsent> {
        let [state, log, ver] = self.log_keys();
        let record = match keyed {
            Some((c, _)) => self.idem_key(&c.owned.slot),
            None => state.clone(),
        };
        let mut invocation = self.log.commit.key(state);
        invocation
            .key(log)
            .key(ver)
            .key(record)
            .arg(&at.lineage)
            .arg(at.seq)
            .arg(at.applied)
            .arg(entry)
            .arg(guarded.unwrap_or(""));
        match keyed {
            Some((c, result)) => invocation
                .arg("1")
                .arg(c.owned.owner)
                .arg(hex(&c.owned.fingerprint))
                .arg(c.now_ms)
                .arg(result.to_string())
                .arg(DONE_TTL_MS),
            None => invocation.arg("0"),
        };
        let mut conn = self.conn.clone();
        let (verdict, n): (String, u64) = self.ask_sent(invocation.invoke_async(&mut conn)).await?;
        Ok(match verdict.as_str() {
            "ok" => Appended::Made(n),
            "unclaimed" => Appended::Unclaimed,
            _ => Appended::Stale,
        })
    }

    /// A new generation: the log emptied, the clock back to the wall's.
    pub async fn reset_log(&self) -> Result<(), StoreError> {
        let [state, log, ver] = self.log_keys();
        let mut invocation = self.log.reset.key(state);
        invocation.key(log).key(ver).key(self.control_key()).arg(new_epoch());
        let mut conn = self.conn.clone();
        self.ask(invocation.invoke_async::<i64>(&mut conn)).await.map(drop)
    }

    /// Changes the control settings: every fault removed first when `clear_faults`, then each
    /// field set (or removed, with ""). The settings' new version.
    pub async fn set_control(
        &self,
        clear_faults: bool,
        fields: &[(String, String)],
    ) -> Result<u64, StoreError> {
        let mut invocation = self.log.control.key(self.key("state"));
        invocation.key(self.control_key()).arg(if clear_faults { "1" } else { "0" });
        for (field, value) in fields {
            invocation.arg(field).arg(value);
        }
        let mut conn = self.conn.clone();
        self.ask(invocation.invoke_async(&mut conn)).await
    }

    /// Moves the shared clock `ms` forward unless its offset would pass `max`: the new offset,
    /// or `Err` with the offset unchanged.
    pub async fn advance_clock(&self, ms: i64, max: i64) -> Result<Result<i64, i64>, StoreError> {
        let mut invocation = self.log.advance.key(self.key("state"));
        invocation.arg(ms).arg(max);
        let mut conn = self.conn.clone();
        let (moved, offset): (i64, i64) = self.ask(invocation.invoke_async(&mut conn)).await?;
        Ok(if moved == 1 { Ok(offset) } else { Err(offset) })
    }
}
