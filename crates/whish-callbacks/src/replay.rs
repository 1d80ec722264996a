//! The keys this process recorded lately: a delivery whose change is among them is answered
//! 200 before it takes a slot or a database write, so a replayed callback (a captured one sent
//! thousands of times, or the service's own redeliveries) cannot crowd out new ones. A key
//! enters only once its record is confirmed, so the 200 it gives is as true as the first.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

/// How many recent keys are kept.
const RECENT: usize = 16_384;

#[derive(Debug, Default)]
pub(crate) struct Recent {
    keys: Mutex<(HashSet<String>, VecDeque<String>)>,
}

impl Recent {
    /// True when `key` was recorded lately.
    pub(crate) fn seen(&self, key: &str) -> bool {
        self.keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .contains(key)
    }

    /// `key` is recorded (now, or before).
    pub(crate) fn remember(&self, key: String) {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        let (set, order) = &mut *keys;
        if set.insert(key.clone()) {
            order.push_back(key);
            if order.len() > RECENT
                && let Some(old) = order.pop_front()
            {
                set.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_keys_are_bounded_and_the_newest_kept() {
        let r = Recent::default();
        for i in 0..(RECENT + 10) {
            r.remember(format!("k{i}"));
        }
        assert!(!r.seen("k0"));
        assert!(r.seen(&format!("k{}", RECENT + 9)));
        assert!(r.keys.lock().expect("lock").0.len() <= RECENT);
    }
}
