//! Shared state on Redis (`--redis URL`, or `--redis-cluster URL,...`): the idempotency store,
//! the rate limiter, and the data's change log with the clock (`log`), shared by replicas. Same
//! semantics as in memory: each operation is one Lua script (atomic), keys are HMAC slots or
//! hashes — never a raw idempotency key — and retention and windows follow the server's clock,
//! passed in, not Redis's. Every key of a namespace carries the hash tag `{<namespace>}`, so a
//! script's keys are in one slot on a Redis Cluster too.
//!
//! Redis never holds the server up: one multiplexed async connection (`ConnectionManager`, which
//! reconnects on its own), every call bounded by [`TIMEOUT`], and once a call has failed Redis is
//! left alone for [`COOLDOWN`] (calls fail at once) but for one probe at a time. A Redis that lost
//! its data is noticed through the marker `{<namespace>}:epoch` (see `CLAIM`; docs/DECISIONS.md).
//! Replicas started without `--secret` share the one kept at `{<namespace>}:secret`. Each replica
//! beats in `{<namespace>}:alive`: a running claim whose replica stopped beating (killed mid-call)
//! is taken over instead of blocking its key until it expires.

mod log;

pub use log::{Appended, Batch, Unsent, entry, split};

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{IntoConnectionInfo, RedisResult, Script};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::state::idempotency::{
    Claim, Fingerprint, IN_PROGRESS_RETRY_MS, IdempotencyStore, Owner, RUNNING_TTL, Slot, StoreError,
    StoreFuture, pending,
};
use crate::state::ratelimit::{RateKey, RateLimiter, Verdict, WINDOW_MS};

/// Redis-side expiry of stored results: the retention plus slack for a clock moved forward.
const DONE_TTL_MS: i64 = 25 * 3600 * 1000;
const RETENTION_MS: i64 = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
/// A store that does not answer within this is down, for this call (never a hang).
pub const TIMEOUT: Duration = Duration::from_millis(500);
/// After a call failed, Redis is asked again only this much later, by one call at a time.
pub const COOLDOWN: Duration = Duration::from_secs(1);
/// Redis must answer at start within this, or the server does not start.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes unacknowledged this long (a host gone, a cut network) break the connection so it is
/// rebuilt. A paused Redis process is still acknowledged by its kernel: the connection stays,
/// and what was sent on it runs in order when Redis resumes (a release after its claim).
#[cfg(target_os = "linux")]
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(10);

/// KEYS: the key's record, the epoch marker, the replicas' beats. ARGV: fingerprint, now,
/// retention, running TTL, owner, the epoch this replica knows, a new epoch id, the end of a
/// refusal starting now, this replica's id.
const CLAIM: &str = r"
local function alive(replica)
  if not replica then return true end
  local beat = tonumber(redis.call('HGET', KEYS[3], replica) or '0')
  local t = redis.call('TIME')
  return beat > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local epoch = redis.call('HGET', KEYS[2], 'id')
if epoch ~= ARGV[6] then
  if not epoch then
    -- The marker is gone, and with it every record stored beside it: a new epoch begins.
    epoch = ARGV[7]
    redis.call('HSET', KEYS[2], 'id', epoch)
  end
  -- The epoch this replica knew vanished. Keyed writes are refused from now until the lost
  -- records would have expired, unless a refusal is already set (or was lifted: 0).
  redis.call('HSETNX', KEYS[2], 'until', ARGV[8])
  return {'lost', epoch}
end
if tonumber(ARGV[2]) < tonumber(redis.call('HGET', KEYS[2], 'until') or '0') then
  return {'refused', ''}
end
local e = redis.call('HMGET', KEYS[1], 's', 'f', 'at', 'd')
if e[1] == 'done' and (tonumber(ARGV[2]) - tonumber(e[3])) < tonumber(ARGV[3]) then
  if e[2] == ARGV[1] then return {'replay', e[4]} end
  return {'mismatch', ''}
elseif e[1] == 'running' and alive(redis.call('HGET', KEYS[1], 'r')) then
  if e[2] == ARGV[1] then return {'progress', ''} end
  return {'mismatch', ''}
end
-- Free, expired, or claimed by a replica that stopped beating (killed mid-call): its commit,
-- should it ever arrive, finds another owner and changes nothing (log::COMMIT).
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 's', 'running', 'f', ARGV[1], 'o', ARGV[5], 'r', ARGV[9])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'fresh', ''}
";

const COMPLETE: &str = r"
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 's', 'done', 'f', ARGV[1], 'at', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// Only the owner's running claim: a release may arrive for a claim Redis never made, or after
/// another call claimed the key.
const RELEASE: &str = r"
local e = redis.call('HMGET', KEYS[1], 's', 'o')
if e[1] == 'running' and e[2] == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
";

/// KEYS: the replicas' beats. ARGV: this replica's id, how long a beat lasts (ms). Times are
/// Redis's own (`TIME`), the one clock every replica's beat and every claim compare.
const BEAT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], now + tonumber(ARGV[2]))
-- A deployment whose replicas all stopped leaves nothing behind for long.
redis.call('PEXPIRE', KEYS[1], 60000)
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) < now - 60000 then redis.call('HDEL', KEYS[1], all[i]) end
end
return 1
";

/// How often a replica beats, and how long a beat counts: a replica silent for [`BEAT_LIFE`] is
/// gone, and its running claims may be taken over.
pub const BEAT_EVERY: Duration = Duration::from_millis(500);
pub const BEAT_LIFE: Duration = Duration::from_secs(3);

const HIT: &str = r"
local e = redis.call('HMGET', KEYS[1], 'start', 'count')
local now, limit, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local start, count = tonumber(e[1]), tonumber(e[2])
if not start or now - start >= window then start = now; count = 0 end
if count >= limit then return start + window - now end
redis.call('HSET', KEYS[1], 'start', start, 'count', count + 1)
redis.call('PEXPIRE', KEYS[1], window * 2)
return -1
";

pub struct Redis {
    /// One multiplexed connection (one per node on a cluster): concurrent calls are pipelined on
    /// it, none waits for another.
    conn: Conn,
    /// Prefix of every key, `{<namespace>}`: replicas of one deployment share it, separate
    /// servers do not; the braces make it the hash tag, so all of a namespace's keys share a slot.
    namespace: String,
    epoch_key: String,
    alive_key: String,
    /// This replica's id in the beats and in the claims it makes.
    replica: u64,
    /// The epoch marker's id this replica knows: another one in Redis means Redis lost its data.
    epoch: Mutex<String>,
    health: Health,
    claim: Script,
    complete: Script,
    release: Script,
    hit: Script,
    beat: Script,
    log: log::Scripts,
}

/// A connection to one Redis or to a Redis Cluster; both reconnect on their own.
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("namespace", &self.namespace).finish_non_exhaustive()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn new_epoch() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Redis {
    /// Connects and reads (or sets) the epoch marker. A Redis that does not answer within 5 s is
    /// a startup error: a replica that cannot keep the idempotency promise should not serve.
    /// `cluster`: `url` lists some nodes of a Redis Cluster, comma-separated.
    pub async fn connect(url: &str, cluster: bool, namespace: &str) -> anyhow::Result<Redis> {
        let flag = if cluster { "--redis-cluster" } else { "--redis" };
        let mut infos = Vec::new();
        for one in url.split(',').map(str::trim).filter(|u| !u.is_empty()) {
            infos.push(one.into_connection_info().with_context(|| format!("{flag} is not a Redis URL"))?);
        }
        anyhow::ensure!(cluster || infos.len() == 1, "--redis takes one URL (--redis-cluster takes several)");
        anyhow::ensure!(!infos.is_empty(), "{flag} names no Redis");
        // The addresses only: a URL may hold a password.
        let addr = infos.iter().map(|i| i.addr().to_string()).collect::<Vec<_>>().join(",");
        let tcp = redis::io::tcp::TcpSettings::default().set_nodelay(true);
        #[cfg(target_os = "linux")]
        let tcp = tcp.set_user_timeout(TCP_USER_TIMEOUT);
        let namespace = format!("{{{namespace}}}");
        let epoch_key = format!("{namespace}:epoch");
        let start = async {
            let mut conn = if cluster {
                let client = redis::cluster::ClusterClientBuilder::new(infos)
                    .tcp_settings(tcp)
                    .connection_timeout(TIMEOUT)
                    // Retries and redirections (a failover's MOVED) within one bound: a request
                    // given up on by `ask` is not sent again long after.
                    .response_timeout(TIMEOUT)
                    .build()?;
                Conn::Cluster(client.get_async_connection().await?)
            } else {
                let info = infos.remove(0).set_tcp_settings(tcp);
                let client = redis::Client::open(info)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(TIMEOUT))
                    // Each call has its own timeout (`ask`), which also bounds a wait for a reconnection.
                    .set_response_timeout(None)
                    .set_number_of_retries(1)
                    .set_max_delay(COOLDOWN);
                Conn::Single(ConnectionManager::new_with_config(client, config).await?)
            };
            redis::cmd("HSETNX").arg(&epoch_key).arg("id").arg(new_epoch()).exec_async(&mut conn).await?;
            let epoch: String = redis::cmd("HGET").arg(&epoch_key).arg("id").query_async(&mut conn).await?;
            let persistent = if cluster { None } else { persistent(&mut conn).await };
            Ok::<_, redis::RedisError>((conn, epoch, persistent))
        };
        let (conn, epoch, persistent) = tokio::time::timeout(STARTUP_TIMEOUT, start)
            .await
            .map_err(|_| anyhow::anyhow!("Redis at {addr} ({flag}) did not answer within 5 s"))?
            .map_err(|e| anyhow::anyhow!("Redis at {addr} ({flag}) cannot be used: {e}"))?;
        match persistent {
            Some(true) => {}
            Some(false) => tracing::warn!(
                "Redis at {addr} has no persistence (save \"\", appendonly no): if it restarts, the \
                 idempotency records and the data's changes are lost, and keyed writes are refused \
                 for 24 h (README, Redis)"
            ),
            None => tracing::info!(
                "Redis at {addr} does not tell its persistence (CONFIG GET refused, or a cluster)"
            ),
        }
        Ok(Redis {
            conn,
            alive_key: format!("{namespace}:alive"),
            namespace,
            epoch_key,
            replica: rand::random::<u64>() >> 12,
            epoch: Mutex::new(epoch),
            health: Health::new(),
            claim: Script::new(CLAIM),
            complete: Script::new(COMPLETE),
            release: Script::new(RELEASE),
            hit: Script::new(HIT),
            beat: Script::new(BEAT),
            log: log::Scripts::new(),
        })
    }

    /// One beat, at start, before the replica makes any claim (within the startup bound).
    pub async fn beat(&self) -> anyhow::Result<()> {
        let mut invocation = self.beat.key(&self.alive_key);
        invocation.arg(self.replica).arg(BEAT_LIFE.as_millis() as u64);
        let mut conn = self.conn.clone();
        match tokio::time::timeout(STARTUP_TIMEOUT, invocation.invoke_async::<i64>(&mut conn)).await {
            Ok(Ok(_)) => Ok(()),
            _ => anyhow::bail!("Redis (--redis) did not take this replica's first beat within 5 s"),
        }
    }

    /// Beats every [`BEAT_EVERY`] while `self` lives, so that the claims this replica holds are
    /// not taken over; a replica killed stops beating, and its claims free in [`BEAT_LIFE`].
    pub fn beat_forever(self: &std::sync::Arc<Self>) {
        let me = std::sync::Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(BEAT_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let Some(redis) = me.upgrade() else { return };
                let mut invocation = redis.beat.key(&redis.alive_key);
                invocation.arg(redis.replica).arg(BEAT_LIFE.as_millis() as u64);
                let mut conn = redis.conn.clone();
                // Not `ask`: a missed beat is no failure of a call, and must not trip the breaker.
                let _ = tokio::time::timeout(TIMEOUT, invocation.invoke_async::<i64>(&mut conn)).await;
            }
        });
    }

    /// The deployment's secret for cursors and key hashes when no `--secret` was given: the first
    /// replica to ask stores a random one at `<namespace>:secret` (`SET NX`), and every replica
    /// uses the one stored, so replicas on one Redis agree (docs/DECISIONS.md, "Shared state").
    /// Asked at start, within the startup bound; its value is never logged.
    pub async fn shared_secret(&self) -> anyhow::Result<String> {
        let key = self.key("secret");
        let mut conn = self.conn.clone();
        // 256 random bits, as 64 hex digits: the same bytes would work as `--secret`.
        let mine = hex(&rand::random::<[u8; 32]>());
        let mut pipe = redis::pipe();
        pipe.cmd("SET").arg(&key).arg(&mine).arg("NX").ignore().cmd("GET").arg(&key);
        let exchange = pipe.query_async::<(Option<String>,)>(&mut conn);
        let (stored,) = tokio::time::timeout(STARTUP_TIMEOUT, exchange)
            .await
            .map_err(|_| anyhow::anyhow!("Redis (--redis) did not answer within 5 s when asked for {key}"))?
            .map_err(|e| anyhow::anyhow!("Redis (--redis) cannot be used: reading {key}: {e}"))?;
        match stored {
            Some(secret) if !secret.trim().is_empty() => Ok(secret),
            _ => anyhow::bail!("{key} in Redis is empty or gone: set it, or pass --secret"),
        }
    }

    /// Runs one exchange with Redis, within [`TIMEOUT`]; fails at once while Redis is left alone.
    /// Dropping a request that timed out does not cancel it: it still runs in Redis, in order.
    async fn ask<T>(&self, exchange: impl Future<Output = RedisResult<T>>) -> Result<T, StoreError> {
        self.ask_sent(exchange).await.map_err(|_| StoreError)
    }

    /// [`Redis::ask`], telling a request never sent from one sent and not answered.
    async fn ask_sent<T>(&self, exchange: impl Future<Output = RedisResult<T>>) -> Result<T, log::Unsent> {
        if !self.health.admit() {
            return Err(log::Unsent::NotSent);
        }
        match tokio::time::timeout(TIMEOUT, exchange).await {
            Ok(Ok(value)) => {
                self.health.answered();
                Ok(value)
            }
            // The cause may name the server's address: it stays out of answers.
            Ok(Err(_)) | Err(_) => {
                self.health.failed();
                Err(log::Unsent::NoAnswer)
            }
        }
    }

    /// `{<namespace>}:<name>`.
    fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.namespace)
    }

    fn idem_key(&self, slot: &Slot) -> String {
        self.key(&format!("idem:{}", hex(slot)))
    }

    fn rate_key(&self, key: &RateKey) -> String {
        let mut h = Sha256::new();
        for part in [key.client_id.as_str(), key.user_id.as_str(), key.tool] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        self.key(&format!("rate:{}", hex(&h.finalize()[..16])))
    }

    fn known_epoch(&self) -> String {
        self.epoch.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    async fn claim_now(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        owner: Owner,
        now_ms: i64,
    ) -> Result<Claim, StoreError> {
        let mut invocation = self.claim.key(self.idem_key(&slot));
        invocation
            .key(&self.epoch_key)
            .key(&self.alive_key)
            .arg(hex(&fingerprint))
            .arg(now_ms)
            .arg(RETENTION_MS)
            .arg(RUNNING_TTL.as_millis() as i64)
            .arg(owner)
            .arg(self.known_epoch())
            .arg(new_epoch())
            .arg(now_ms + RETENTION_MS)
            .arg(self.replica);
        let mut conn = self.conn.clone();
        let (verdict, data): (String, String) = self.ask(invocation.invoke_async(&mut conn)).await?;
        match verdict.as_str() {
            "fresh" => Ok(Claim::Fresh),
            "replay" => serde_json::from_str(&data).map(Claim::Replay).map_err(|_| StoreError),
            "progress" => Ok(Claim::InProgress { retry_after_ms: IN_PROGRESS_RETRY_MS }),
            "mismatch" => Ok(Claim::Mismatch),
            "lost" => {
                self.lost(data);
                Err(StoreError)
            }
            // "refused": within the refusal that follows a loss.
            _ => Err(StoreError),
        }
    }

    /// Redis no longer holds the epoch this replica knew: it lost its data.
    fn lost(&self, epoch: String) {
        let mut known = self.epoch.lock().unwrap_or_else(|e| e.into_inner());
        if *known != epoch {
            *known = epoch;
            tracing::warn!(
                "Redis lost its data (the epoch marker {ns}:epoch was gone or replaced): keyed writes \
                 are refused for 24 h of server clock, or until an operator lifts it (README, Redis); \
                 replicas started without --secret lost {ns}:secret too: restart them all so they share one again",
                ns = self.namespace
            );
        }
    }

    /// Deletes this namespace's keys of one kind (control API reset).
    async fn delete(&self, kind: &str) -> Result<(), StoreError> {
        let pattern = format!("{}:{kind}:*", self.namespace);
        let mut conn = self.conn.clone();
        self.ask(async move {
            let keys: Vec<String> = redis::cmd("KEYS").arg(&pattern).query_async(&mut conn).await?;
            if !keys.is_empty() {
                redis::cmd("DEL").arg(keys).exec_async(&mut conn).await?;
            }
            Ok(())
        })
        .await
    }
}

/// Whether Redis writes its data to disk (RDB snapshots or AOF); `None` when it will not say
/// (managed services often refuse CONFIG).
async fn persistent(conn: &mut Conn) -> Option<bool> {
    let save: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("save").query_async(conn).await.ok()?;
    let aof: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("appendonly").query_async(conn).await.ok()?;
    Some(!save.get(1)?.trim().is_empty() || aof.get(1)? == "yes")
}

impl IdempotencyStore for Redis {
    fn claim(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        owner: Owner,
        now_ms: i64,
    ) -> StoreFuture<'_, Claim> {
        pending(self.claim_now(slot, fingerprint, owner, now_ms))
    }

    fn complete<'a>(
        &'a self,
        slot: Slot,
        fingerprint: Fingerprint,
        data: &'a Value,
        now_ms: i64,
    ) -> StoreFuture<'a, ()> {
        pending(async move {
            let mut invocation = self.complete.key(self.idem_key(&slot));
            invocation.arg(hex(&fingerprint)).arg(now_ms).arg(data.to_string()).arg(DONE_TTL_MS);
            let mut conn = self.conn.clone();
            self.ask(invocation.invoke_async::<i64>(&mut conn)).await.map(drop)
        })
    }

    fn release(&self, slot: Slot, owner: Owner) -> StoreFuture<'_, ()> {
        pending(async move {
            let mut invocation = self.release.key(self.idem_key(&slot));
            invocation.arg(owner);
            let mut conn = self.conn.clone();
            self.ask(invocation.invoke_async::<i64>(&mut conn)).await.map(drop)
        })
    }

    /// Forgets every record and lifts a refusal after a loss: a reset forgets on purpose.
    fn clear(&self) -> StoreFuture<'_, ()> {
        pending(async move {
            self.delete("idem").await?;
            let mut conn = self.conn.clone();
            self.ask(redis::cmd("HSET").arg(&self.epoch_key).arg("until").arg(0).exec_async(&mut conn)).await
        })
    }
}

impl RateLimiter for Redis {
    fn hit<'a>(&'a self, key: &'a RateKey, limit: u32, now_ms: i64) -> StoreFuture<'a, Verdict> {
        pending(async move {
            let mut invocation = self.hit.key(self.rate_key(key));
            invocation.arg(now_ms).arg(limit).arg(WINDOW_MS);
            let mut conn = self.conn.clone();
            let retry: i64 = self.ask(invocation.invoke_async(&mut conn)).await?;
            Ok(if retry < 0 { Ok(()) } else { Err(retry.max(1) as u64) })
        })
    }

    fn clear(&self) -> StoreFuture<'_, ()> {
        pending(self.delete("rate"))
    }
}

/// Whether Redis is worth asking: a circuit breaker on one atomic. Up, every call asks; after a
/// failure, calls fail at once for [`COOLDOWN`]; then one call probes, and its answer decides.
#[derive(Debug)]
struct Health {
    origin: Instant,
    /// 0 while up; else the instant (ms after `origin`, from 1) before which nobody asks.
    down_until: AtomicU64,
}

impl Health {
    fn new() -> Health {
        Health { origin: Instant::now(), down_until: AtomicU64::new(0) }
    }

    fn now(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64 + 1
    }

    fn admit(&self) -> bool {
        let until = self.down_until.load(Ordering::Acquire);
        if until == 0 {
            return true;
        }
        let now = self.now();
        // The caller that moves the mark probes; the others keep failing fast meanwhile.
        let probe_ends = now + (TIMEOUT + COOLDOWN).as_millis() as u64;
        now >= until
            && self
                .down_until
                .compare_exchange(until, probe_ends, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    fn answered(&self) {
        if self.down_until.swap(0, Ordering::AcqRel) != 0 {
            tracing::info!("Redis answers again");
        }
    }

    fn failed(&self) {
        let until = self.now() + COOLDOWN.as_millis() as u64;
        if self.down_until.swap(until, Ordering::AcqRel) == 0 {
            tracing::warn!(
                timeout_ms = TIMEOUT.as_millis() as u64,
                "Redis did not answer: keyed writes refused (MCP_DEPENDENCY_UNAVAILABLE) and rate \
                 checks skipped; Redis is asked again in 1 s"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_a_failure_calls_fail_fast_then_one_probe_at_a_time() {
        let health = Health::new();
        assert!(health.admit() && health.admit(), "up: everyone asks");
        health.failed();
        assert!(!health.admit(), "within the cooldown nobody asks");
        // Past the cooldown: the first caller probes, the next one does not.
        health.down_until.store(1, Ordering::Release);
        assert!(health.admit());
        assert!(!health.admit(), "one probe at a time");
        health.answered();
        assert!(health.admit() && health.admit(), "the probe was answered: up again");
    }
}
