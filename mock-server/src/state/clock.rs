//! The server's clock: wall time plus an offset the control API can advance, so idempotency
//! retention, rate windows and timestamps can be tested in seconds instead of days.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

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

    /// Move time forward (never backward: retention and windows assume monotonic time).
    pub fn advance_ms(&self, ms: i64) {
        self.offset_ms.fetch_add(ms.max(0), Ordering::Relaxed);
    }

    pub fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }

    pub fn reset(&self) {
        self.offset_ms.store(0, Ordering::Relaxed);
    }
}
