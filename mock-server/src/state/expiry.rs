//! Forgetting what has expired. The in-memory idempotency records and rate windows would
//! otherwise grow with every new key or caller for as long as the server runs; a sweep when a
//! map has doubled since the last one keeps them bounded at amortised O(1) per insert.

use std::collections::HashMap;
use std::hash::Hash;

/// Below this many entries a map is never swept: not worth the walk.
const MIN_SWEEP_LEN: usize = 1024;

#[derive(Debug)]
pub struct Swept<K, V> {
    pub map: HashMap<K, V>,
    /// The length at which the next sweep runs.
    next_sweep: usize,
}

impl<K, V> Default for Swept<K, V> {
    fn default() -> Self {
        Swept { map: HashMap::new(), next_sweep: MIN_SWEEP_LEN }
    }
}

impl<K: Eq + Hash, V> Swept<K, V> {
    /// Call before inserting: drops the entries `live` rejects once the map has grown enough.
    pub fn sweep_if_grown(&mut self, live: impl FnMut(&V) -> bool) {
        if self.map.len() < self.next_sweep {
            return;
        }
        let mut live = live;
        self.map.retain(|_, v| live(v));
        self.next_sweep = (self.map.len() * 2).max(MIN_SWEEP_LEN);
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.next_sweep = MIN_SWEEP_LEN;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_entries_go_once_the_map_has_grown() {
        let mut swept = Swept::<u32, i64>::default();
        for i in 0..MIN_SWEEP_LEN as u32 {
            swept.sweep_if_grown(|at| *at >= 100);
            swept.map.insert(i, if i % 2 == 0 { 0 } else { 100 });
        }
        assert_eq!(swept.map.len(), MIN_SWEEP_LEN, "no sweep before the threshold");
        swept.sweep_if_grown(|at| *at >= 100);
        assert_eq!(swept.map.len(), MIN_SWEEP_LEN / 2, "the expired half is gone");
        assert!(swept.map.values().all(|at| *at == 100));
    }

    #[test]
    fn live_entries_only_move_the_threshold() {
        let mut swept = Swept::<u32, ()>::default();
        for i in 0..(4 * MIN_SWEEP_LEN) as u32 {
            swept.sweep_if_grown(|_| true);
            swept.map.insert(i, ());
        }
        assert_eq!(swept.map.len(), 4 * MIN_SWEEP_LEN, "nothing live is ever dropped");
    }
}
