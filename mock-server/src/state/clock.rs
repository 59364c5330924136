//! The server's clock: wall time plus an offset the control API can advance, so idempotency
//! retention, rate windows and timestamps can be tested in seconds instead of days.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// How far ahead of the wall clock the server's clock may be moved: ten years (of 366 days).
pub const MAX_OFFSET_MS: i64 = 10 * 366 * 24 * 3_600_000;

/// Why the clock was not moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Advance {
    #[error("the clock only moves forward")]
    Backward,
    #[error("the clock moves at most ten years ahead in all")]
    TooFar,
}

#[derive(Debug, Default)]
pub struct Clock {
    offset_ms: AtomicI64,
}

impl Clock {
    /// Milliseconds since the epoch, as the server sees them.
    pub fn now_ms(&self) -> i64 {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        wall + self.offset_ms.load(Ordering::Relaxed)
    }

    pub fn now_timestamp(&self) -> String {
        chataigne_contract::time::format_timestamp(self.now_ms().div_euclid(1000))
    }

    /// Move time forward by `ms`; the new offset, or why not. Never backward (retention and
    /// windows assume monotonic time), and at most [`MAX_OFFSET_MS`] ahead in all: past it the
    /// offset would wrap negative, and timestamps leave the years the contract can write.
    pub fn advance_ms(&self, ms: i64) -> Result<i64, Advance> {
        if ms < 0 {
            return Err(Advance::Backward);
        }
        let ahead = |offset: i64| offset.checked_add(ms).filter(|o| *o <= MAX_OFFSET_MS);
        match self.offset_ms.fetch_update(Ordering::Relaxed, Ordering::Relaxed, ahead) {
            Ok(before) => Ok(before + ms),
            Err(_) => Err(Advance::TooFar),
        }
    }

    pub fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }

    /// The shared clock's offset, as Redis holds it (a reset may move it back to 0).
    pub fn set_offset(&self, ms: i64) {
        self.offset_ms.store(ms, Ordering::Relaxed);
    }

    /// The shared clock's offset, unless this clock is ahead already (an older answer).
    pub fn raise_offset(&self, ms: i64) {
        self.offset_ms.fetch_max(ms, Ordering::Relaxed);
    }

    pub fn reset(&self) {
        self.offset_ms.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_bounded_and_never_wraps() {
        let clock = Clock::default();
        assert_eq!(clock.advance_ms(MAX_OFFSET_MS - 1), Ok(MAX_OFFSET_MS - 1));
        assert_eq!(clock.advance_ms(1), Ok(MAX_OFFSET_MS));
        assert_eq!(clock.advance_ms(1), Err(Advance::TooFar));
        assert_eq!(clock.advance_ms(i64::MAX), Err(Advance::TooFar));
        assert_eq!(clock.advance_ms(-1), Err(Advance::Backward));
        assert_eq!(clock.offset_ms(), MAX_OFFSET_MS, "refusals change nothing");
    }
}
