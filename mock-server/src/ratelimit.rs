//! Rate limits (LIM-2, LIM-3): a window per (client, user, tool), opened by its first call and
//! lasting 60 s on the server's clock. Every call that reaches this check counts.

use std::sync::Mutex;

use crate::expiry::Swept;
use crate::idempotency::StoreError;

/// Who is limited: one window per pair and tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RateKey {
    pub client_id: String,
    pub user_id: String,
    pub tool: &'static str,
}

/// Outcome of counting a call: `Err(retry_after_ms)` once the window is full.
pub type Verdict = Result<(), u64>;

pub trait RateLimiter: Send + Sync + std::fmt::Debug {
    /// Count one call against `limit` per window.
    fn hit(&self, key: &RateKey, limit: u32, now_ms: i64) -> Result<Verdict, StoreError>;
    fn clear(&self) -> Result<(), StoreError>;
}

pub(crate) const WINDOW_MS: i64 = 60_000;

#[derive(Debug, Default)]
pub struct MemoryLimiter {
    windows: Mutex<Swept<RateKey, (i64, u32)>>,
}

impl RateLimiter for MemoryLimiter {
    fn hit(&self, key: &RateKey, limit: u32, now_ms: i64) -> Result<Verdict, StoreError> {
        Ok(self.hit_now(key, limit, now_ms))
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(())
    }
}

impl MemoryLimiter {
    fn hit_now(&self, key: &RateKey, limit: u32, now_ms: i64) -> Verdict {
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        // A window that has ended counts nothing any more: forgetting it changes no verdict.
        windows.sweep_if_grown(|(start, _)| now_ms - start < WINDOW_MS);
        let (start, count) = windows.map.entry(key.clone()).or_insert((now_ms, 0));
        if now_ms - *start >= WINDOW_MS {
            (*start, *count) = (now_ms, 0);
        }
        if *count >= limit {
            return Err((*start + WINDOW_MS - now_ms).max(1) as u64);
        }
        *count += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_per_key() {
        let limiter = MemoryLimiter::default();
        let key = |user: &str, tool| RateKey { client_id: "c".into(), user_id: user.into(), tool };
        for i in 0..3 {
            assert_eq!(limiter.hit_now(&key("a", "t"), 3, i), Ok(()));
        }
        assert_eq!(limiter.hit_now(&key("a", "t"), 3, 10), Err(59_990));
        assert_eq!(limiter.hit_now(&key("b", "t"), 3, 10), Ok(()));
        assert_eq!(limiter.hit_now(&key("a", "u"), 3, 10), Ok(()));
        assert_eq!(limiter.hit_now(&key("a", "t"), 3, 60_000), Ok(()));
    }
}
