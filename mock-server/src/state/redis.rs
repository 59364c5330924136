//! Shared state on Redis (`--redis URL`): the idempotency store and the rate limiter, so several
//! replicas behind one address behave as one server. Same semantics as in memory: each operation
//! is one Lua script (atomic), keys are HMAC slots or hashes — never a raw idempotency key — and
//! retention and windows follow the server's clock, passed in, not Redis's.

use std::sync::Mutex;
use std::time::Duration;

use redis::Script;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::state::idempotency::{
    Claim, Fingerprint, IN_PROGRESS_RETRY_MS, IdempotencyStore, Slot, StoreError,
};
use crate::state::ratelimit::{RateKey, RateLimiter, Verdict, WINDOW_MS};

/// How long a running claim survives a replica that died mid-call.
const RUNNING_TTL_MS: i64 = 10 * 60 * 1000;
/// Redis-side expiry of stored results: the retention plus slack for a clock moved forward.
const DONE_TTL_MS: i64 = 25 * 3600 * 1000;
/// A store that does not answer within this is down (never a hang).
const TIMEOUT: Duration = Duration::from_millis(500);

const CLAIM: &str = r"
local e = redis.call('HMGET', KEYS[1], 's', 'f', 'at', 'd')
if e[1] == 'done' and (tonumber(ARGV[2]) - tonumber(e[3])) < tonumber(ARGV[3]) then
  if e[2] == ARGV[1] then return {'replay', e[4]} end
  return {'mismatch', ''}
elseif e[1] == 'running' then
  if e[2] == ARGV[1] then return {'progress', ''} end
  return {'mismatch', ''}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 's', 'running', 'f', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'fresh', ''}
";

const COMPLETE: &str = r"
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 's', 'done', 'f', ARGV[1], 'at', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

const RELEASE: &str = r"
if redis.call('HGET', KEYS[1], 's') == 'running' then redis.call('DEL', KEYS[1]) end
return 1
";

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

/// One connection, reopened after any failure.
pub struct Redis {
    client: redis::Client,
    conn: Mutex<Option<redis::Connection>>,
    /// Prefix of every key: replicas of one deployment share it, separate servers do not.
    namespace: String,
    claim: Script,
    complete: Script,
    release: Script,
    hit: Script,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("namespace", &self.namespace).finish_non_exhaustive()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Redis {
    pub fn new(url: &str, namespace: &str) -> anyhow::Result<Redis> {
        Ok(Redis {
            client: redis::Client::open(url)?,
            conn: Mutex::new(None),
            namespace: namespace.to_owned(),
            claim: Script::new(CLAIM),
            complete: Script::new(COMPLETE),
            release: Script::new(RELEASE),
            hit: Script::new(HIT),
        })
    }

    /// Runs `f` on the connection; a failure drops it so the next call reconnects.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let conn = self.client.get_connection_with_timeout(TIMEOUT).map_err(|_| StoreError)?;
            conn.set_read_timeout(Some(TIMEOUT)).map_err(|_| StoreError)?;
            conn.set_write_timeout(Some(TIMEOUT)).map_err(|_| StoreError)?;
            *guard = Some(conn);
        }
        let conn = guard.as_mut().ok_or(StoreError)?;
        f(conn).map_err(|e| {
            // The cause may name the server's address: it stays out of logs and answers.
            let _ = e;
            *guard = None;
            StoreError
        })
    }

    fn idem_key(&self, slot: &Slot) -> String {
        format!("{}:idem:{}", self.namespace, hex(slot))
    }

    fn rate_key(&self, key: &RateKey) -> String {
        let mut h = Sha256::new();
        for part in [key.client_id.as_str(), key.user_id.as_str(), key.tool] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        format!("{}:rate:{}", self.namespace, hex(&h.finalize()[..16]))
    }

    /// Deletes every key of this namespace (control API reset).
    fn delete_namespace(&self) -> Result<(), StoreError> {
        let pattern = format!("{}:*", self.namespace);
        self.with(|conn| {
            let keys: Vec<String> = redis::cmd("KEYS").arg(&pattern).query(conn)?;
            if !keys.is_empty() {
                redis::cmd("DEL").arg(keys).query::<()>(conn)?;
            }
            Ok(())
        })
    }
}

impl IdempotencyStore for Redis {
    fn claim(&self, slot: Slot, fingerprint: Fingerprint, now_ms: i64) -> Result<Claim, StoreError> {
        let retention = chataigne_contract::IDEMPOTENCY_RETENTION_SECS as i64 * 1000;
        let (verdict, data): (String, String) = self.with(|conn| {
            self.claim
                .key(self.idem_key(&slot))
                .arg(hex(&fingerprint))
                .arg(now_ms)
                .arg(retention)
                .arg(RUNNING_TTL_MS)
                .invoke(conn)
        })?;
        Ok(match verdict.as_str() {
            "fresh" => Claim::Fresh,
            "replay" => Claim::Replay(serde_json::from_str(&data).map_err(|_| StoreError)?),
            "progress" => Claim::InProgress { retry_after_ms: IN_PROGRESS_RETRY_MS },
            _ => Claim::Mismatch,
        })
    }

    fn complete(
        &self,
        slot: Slot,
        fingerprint: Fingerprint,
        data: &Value,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.with(|conn| {
            self.complete
                .key(self.idem_key(&slot))
                .arg(hex(&fingerprint))
                .arg(now_ms)
                .arg(data.to_string())
                .arg(DONE_TTL_MS)
                .invoke::<i64>(conn)
        })
        .map(drop)
    }

    fn release(&self, slot: Slot) -> Result<(), StoreError> {
        self.with(|conn| self.release.key(self.idem_key(&slot)).invoke::<i64>(conn)).map(drop)
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.delete_namespace()
    }
}

impl RateLimiter for Redis {
    fn hit(&self, key: &RateKey, limit: u32, now_ms: i64) -> Result<Verdict, StoreError> {
        let retry: i64 = self.with(|conn| {
            self.hit.key(self.rate_key(key)).arg(now_ms).arg(limit).arg(WINDOW_MS).invoke(conn)
        })?;
        Ok(if retry < 0 { Ok(()) } else { Err(retry.max(1) as u64) })
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.delete_namespace()
    }
}
