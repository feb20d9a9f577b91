//! Records a host read recently, reused for a while instead of read again.
//!
//! The Worker reads an API key and its organisation on every request; both change rarely, and
//! each read is a round trip to KV or a Durable Object. An isolate remembers what it read for a
//! time the caller chooses, which bounds how stale an answer can be.

/// At most this many records are remembered (memory stays bounded whatever keys callers
/// present).
const CACHE_ENTRIES: usize = 1_024;

/// Records read recently, each with when it was read.
pub struct Recent<V> {
    ttl_ms: u64,
    entries: std::sync::Mutex<std::collections::HashMap<String, (V, u64)>>,
}

impl<V: Clone> Recent<V> {
    /// Nothing remembered yet; a record is reused for `ttl_ms` after it was read.
    pub fn new(ttl_ms: u64) -> Self {
        Self {
            ttl_ms,
            entries: Default::default(),
        }
    }

    /// The record remembered under `name`, unless it is older than the time to live.
    pub fn get(&self, name: &str, now_ms: u64) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        let (v, at) = entries.get(name)?;
        (now_ms.saturating_sub(*at) < self.ttl_ms).then(|| v.clone())
    }

    /// Remembers `v` as read at `now_ms`; when full, expired records go first, then all.
    pub fn remember(&self, name: &str, v: &V, now_ms: u64) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= CACHE_ENTRIES {
                let ttl = self.ttl_ms;
                entries.retain(|_, (_, at)| now_ms.saturating_sub(*at) < ttl);
                if entries.len() >= CACHE_ENTRIES {
                    entries.clear();
                }
            }
            entries.insert(name.to_string(), (v.clone(), now_ms));
        }
    }

    /// Drops `name`, after a change made through this isolate (it shows at once here).
    pub fn forget(&self, name: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_reused_until_its_time_is_up() {
        let r = Recent::new(1_000);
        r.remember("k", &7, 10_000);
        assert_eq!(r.get("k", 10_000), Some(7));
        assert_eq!(r.get("k", 10_999), Some(7));
        assert_eq!(r.get("k", 11_000), None);
        assert_eq!(r.get("other", 10_000), None);
    }

    #[test]
    fn a_forgotten_record_is_read_again() {
        let r = Recent::new(1_000);
        r.remember("k", &1, 0);
        r.forget("k");
        assert_eq!(r.get("k", 0), None);
    }

    #[test]
    fn memory_stays_bounded_and_fresh_records_survive_a_sweep() {
        let r = Recent::new(1_000);
        for i in 0..CACHE_ENTRIES - 1 {
            r.remember(&format!("old{i}"), &i, 0);
        }
        r.remember("fresh", &1, 5_000);
        // Full: the sweep drops the expired ones and keeps the fresh one.
        r.remember("new", &2, 5_000);
        assert_eq!(r.get("fresh", 5_000), Some(1));
        assert_eq!(r.get("new", 5_000), Some(2));
        assert!(r.entries.lock().map(|e| e.len()).unwrap_or(usize::MAX) <= 2);
        // Full of fresh records: everything goes, the newest stays.
        for i in 0..CACHE_ENTRIES + 10 {
            r.remember(&format!("n{i}"), &i, 6_000);
        }
        assert!(r.entries.lock().map(|e| e.len()).unwrap_or(usize::MAX) <= CACHE_ENTRIES);
        assert_eq!(
            r.get(&format!("n{}", CACHE_ENTRIES + 9), 6_000),
            Some(CACHE_ENTRIES + 9)
        );
    }
}
