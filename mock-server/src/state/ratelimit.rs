//! Rate limits (LIM-2, LIM-3): a window per (client, user, tool), opened by its first call and
//! lasting 60 s on the server's clock. Every call that reaches this check counts. The allowed
//! variants' limiters live here too (calendar minutes, token bucket, sliding log: docs/VARIANTS.md),
//! chosen by `variants::Variants::memory_limiter`.

use std::sync::Mutex;

use crate::state::expiry::Swept;
use crate::state::idempotency::{StoreFuture, ready};

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
    fn hit<'a>(&'a self, key: &'a RateKey, limit: u32, now_ms: i64) -> StoreFuture<'a, Verdict>;
    fn clear(&self) -> StoreFuture<'_, ()>;
}

pub(crate) const WINDOW_MS: i64 = 60_000;

#[derive(Debug, Default)]
pub struct MemoryLimiter {
    windows: Mutex<Swept<RateKey, (i64, u32)>>,
    /// The `calendar-minute-windows` variant: windows start on the minutes of the server's clock
    /// instead of at a pair's first call.
    calendar: bool,
}

impl RateLimiter for MemoryLimiter {
    fn hit<'a>(&'a self, key: &'a RateKey, limit: u32, now_ms: i64) -> StoreFuture<'a, Verdict> {
        ready(Ok(self.hit_now(key, limit, now_ms)))
    }

    fn clear(&self) -> StoreFuture<'_, ()> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner()).clear();
        ready(Ok(()))
    }
}

impl MemoryLimiter {
    /// The `calendar-minute-windows` variant (docs/VARIANTS.md).
    pub fn calendar_minutes() -> MemoryLimiter {
        MemoryLimiter { calendar: true, ..MemoryLimiter::default() }
    }

    fn hit_now(&self, key: &RateKey, limit: u32, now_ms: i64) -> Verdict {
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        // A window that has ended counts nothing any more: forgetting it changes no verdict.
        windows.sweep_if_grown(|(start, _)| now_ms - start < WINDOW_MS);
        let opened = if self.calendar { now_ms - now_ms.rem_euclid(WINDOW_MS) } else { now_ms };
        let (start, count) = windows.map.entry(key.clone()).or_insert((opened, 0));
        if now_ms - *start >= WINDOW_MS {
            (*start, *count) = (opened, 0);
        }
        if *count >= limit {
            return Err((*start + WINDOW_MS - now_ms).max(1) as u64);
        }
        *count += 1;
        Ok(())
    }
}

/// The `token-bucket` variant: per key a bucket of `limit` tokens, refilled continuously at
/// `limit` per 60 s; a call takes one. Tokens are counted in units of 1/60 000 so the refill is
/// exact in integers: a token is `WINDOW_MS` units and every millisecond adds `limit` units.
#[derive(Debug, Default)]
pub struct TokenBucketLimiter {
    /// Key → (units left, when they were counted).
    buckets: Mutex<Swept<RateKey, (i64, i64)>>,
}

impl RateLimiter for TokenBucketLimiter {
    fn hit<'a>(&'a self, key: &'a RateKey, limit: u32, now_ms: i64) -> StoreFuture<'a, Verdict> {
        ready(Ok(self.hit_now(key, limit, now_ms)))
    }

    fn clear(&self) -> StoreFuture<'_, ()> {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner()).clear();
        ready(Ok(()))
    }
}

impl TokenBucketLimiter {
    fn hit_now(&self, key: &RateKey, limit: u32, now_ms: i64) -> Verdict {
        let rate = i64::from(limit.max(1));
        let capacity = rate * WINDOW_MS;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        // A bucket idle for a minute is full again, whatever its limit, like a new one:
        // forgetting it changes no verdict.
        buckets.sweep_if_grown(|(_, at)| now_ms - at < WINDOW_MS);
        let (units, at) = buckets.map.entry(key.clone()).or_insert((capacity, now_ms));
        *units = (*units + (now_ms - *at).max(0) * rate).min(capacity);
        *at = now_ms;
        if *units < WINDOW_MS {
            // Whole milliseconds until one token is back.
            return Err(((WINDOW_MS - *units + rate - 1) / rate).max(1) as u64);
        }
        *units -= WINDOW_MS;
        Ok(())
    }
}

/// The `sliding-log` variant: per key the instants of the calls counted in the last 60 s; a call
/// is refused while `limit` of them are younger than 60 s. O(limit) memory per busy key.
#[derive(Debug, Default)]
pub struct SlidingLogLimiter {
    logs: Mutex<Swept<RateKey, std::collections::VecDeque<i64>>>,
}

impl RateLimiter for SlidingLogLimiter {
    fn hit<'a>(&'a self, key: &'a RateKey, limit: u32, now_ms: i64) -> StoreFuture<'a, Verdict> {
        ready(Ok(self.hit_now(key, limit, now_ms)))
    }

    fn clear(&self) -> StoreFuture<'_, ()> {
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).clear();
        ready(Ok(()))
    }
}

impl SlidingLogLimiter {
    fn hit_now(&self, key: &RateKey, limit: u32, now_ms: i64) -> Verdict {
        let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        // A log whose newest call is 60 s old counts nothing any more.
        logs.sweep_if_grown(|log| log.back().is_some_and(|last| now_ms - last < WINDOW_MS));
        let log = logs.map.entry(key.clone()).or_default();
        while log.front().is_some_and(|first| now_ms - first >= WINDOW_MS) {
            log.pop_front();
        }
        if log.len() >= limit as usize {
            let oldest = log.front().copied().unwrap_or(now_ms);
            return Err((oldest + WINDOW_MS - now_ms).max(1) as u64);
        }
        log.push_back(now_ms);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

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

    mod variants {
        use super::*;

        fn key(user: &str) -> RateKey {
            RateKey { client_id: "c".into(), user_id: user.into(), tool: "t" }
        }

        /// `limit` calls at `now_ms`: how many passed.
        fn burst(hit: &dyn Fn(i64) -> Verdict, n: u32, now_ms: i64) -> u32 {
            (0..n).filter(|_| hit(now_ms).is_ok()).count() as u32
        }

        #[test]
        fn calendar_windows_start_on_the_minute_and_a_straddle_lets_twice_the_limit_through() {
            let limiter = MemoryLimiter::calendar_minutes();
            let hit = |now| limiter.hit_now(&key("a"), 1000, now);
            // The first call at 10:00:59.000 opens the window of 10:00:00; 1000 pass.
            let minute = 36_000_000;
            assert_eq!(burst(&hit, 1000, minute + 59_000), 1000);
            // The next is refused until the minute ends: 1 s later, not 60 s.
            assert_eq!(hit(minute + 59_000), Err(1_000));
            assert_eq!(hit(minute + 59_999), Err(1));
            // At the boundary a new window: another 1000, so 2000 within 1 s.
            assert_eq!(burst(&hit, 1000, minute + 60_000), 1000);
            assert_eq!(hit(minute + 60_000), Err(60_000));
            // The reference window would have opened at the first call instead.
            let reference = MemoryLimiter::default();
            for _ in 0..1000 {
                assert_eq!(reference.hit_now(&key("a"), 1000, minute + 59_000), Ok(()));
            }
            assert_eq!(reference.hit_now(&key("a"), 1000, minute + 60_000), Err(59_000));
        }

        #[test]
        fn calendar_windows_of_other_keys_are_independent() {
            let limiter = MemoryLimiter::calendar_minutes();
            for _ in 0..3 {
                assert_eq!(limiter.hit_now(&key("a"), 3, 30_000), Ok(()));
            }
            assert_eq!(limiter.hit_now(&key("a"), 3, 30_000), Err(30_000));
            assert_eq!(limiter.hit_now(&key("b"), 3, 30_000), Ok(()));
        }

        #[test]
        fn token_bucket_holds_the_limit_and_refills_one_token_per_limit_th_of_a_minute() {
            let limiter = TokenBucketLimiter::default();
            let hit = |now| limiter.hit_now(&key("a"), 1000, now);
            assert_eq!(burst(&hit, 1000, 0), 1000, "a full bucket: the limit at once");
            // One token comes back every 60 ms at 1000/min.
            assert_eq!(hit(0), Err(60));
            assert_eq!(hit(59), Err(1));
            assert_eq!(hit(60), Ok(()));
            assert_eq!(hit(60), Err(60));
            // Half a minute refills half the bucket.
            assert_eq!(burst(&hit, 1000, 30_060), 500);
            // A long idle time refills it to capacity, not beyond.
            assert_eq!(burst(&hit, 2000, 10 * 60_000), 1000);
            // 500/min: one token per 120 ms; a fraction of a millisecond rounds up.
            let writes = TokenBucketLimiter::default();
            assert_eq!(burst(&|now| writes.hit_now(&key("w"), 500, now), 500, 0), 500);
            assert_eq!(writes.hit_now(&key("w"), 500, 0), Err(120));
            assert_eq!(writes.hit_now(&key("w"), 500, 119), Err(1));
            assert_eq!(writes.hit_now(&key("w"), 500, 120), Ok(()));
            let odd = TokenBucketLimiter::default();
            assert_eq!(odd.hit_now(&key("o"), 7, 0).and(odd.hit_now(&key("o"), 7, 0)), Ok(()));
            for _ in 0..5 {
                assert_eq!(odd.hit_now(&key("o"), 7, 0), Ok(()));
            }
            // 60 000 / 7 = 8571.4 ms per token: retry after 8572.
            assert_eq!(odd.hit_now(&key("o"), 7, 0), Err(8572));
            assert_eq!(odd.hit_now(&key("o"), 7, 8571), Err(1));
            assert_eq!(odd.hit_now(&key("o"), 7, 8572), Ok(()));
        }

        #[test]
        fn sliding_log_refuses_while_the_limit_is_younger_than_exactly_60_s() {
            let limiter = SlidingLogLimiter::default();
            let hit = |now| limiter.hit_now(&key("a"), 3, now);
            assert_eq!(hit(0), Ok(()));
            assert_eq!(hit(20_000), Ok(()));
            assert_eq!(hit(40_000), Ok(()));
            // Refused until the oldest counted call is 60 s old.
            assert_eq!(hit(40_000), Err(20_000));
            assert_eq!(hit(59_999), Err(1));
            assert_eq!(hit(60_000), Ok(()), "the call at 0 is exactly 60 s old");
            assert_eq!(hit(60_000), Err(20_000), "next: the call at 20 000");
            // No boundary to straddle: across any instant at most the limit in 60 s.
            let log = SlidingLogLimiter::default();
            let burst_at = |now| burst(&|t| log.hit_now(&key("b"), 1000, t), 1000, now);
            assert_eq!(burst_at(59_000), 1000);
            assert_eq!(burst_at(60_000), 0);
            assert_eq!(log.hit_now(&key("b"), 1000, 60_000), Err(59_000));
            assert_eq!(burst_at(119_000), 1000);
        }

        #[test]
        fn idle_keys_are_swept_and_live_ones_kept() {
            let buckets = TokenBucketLimiter::default();
            let logs = SlidingLogLimiter::default();
            let calendar = MemoryLimiter::calendar_minutes();
            for i in 0..2048 {
                let k = key(&format!("u{i}"));
                assert_eq!(buckets.hit_now(&k, 10, 0), Ok(()));
                assert_eq!(logs.hit_now(&k, 10, 0), Ok(()));
                assert_eq!(calendar.hit_now(&k, 10, 0), Ok(()));
            }
            // A minute later every key is idle: the next insert past the threshold sweeps them.
            assert_eq!(buckets.hit_now(&key("late"), 10, 120_000), Ok(()));
            assert_eq!(logs.hit_now(&key("late"), 10, 120_000), Ok(()));
            assert_eq!(calendar.hit_now(&key("late"), 10, 120_000), Ok(()));
            assert_eq!(buckets.buckets.lock().unwrap().map.len(), 1);
            assert_eq!(logs.logs.lock().unwrap().map.len(), 1);
            assert_eq!(calendar.windows.lock().unwrap().map.len(), 1);
            // Reset forgets everything.
            buckets.clear().now_or_never().expect("ready").unwrap();
            logs.clear().now_or_never().expect("ready").unwrap();
            assert_eq!(buckets.buckets.lock().unwrap().map.len(), 0);
            assert_eq!(logs.logs.lock().unwrap().map.len(), 0);
        }
    }
}
