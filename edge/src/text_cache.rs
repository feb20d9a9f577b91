//! The per-process cache of what a version's queries read from storage: chunk texts and the
//! index's lists (term postings, symbol users), within a byte ceiling, least recently used out first. Shared by every open version
//! ([`crate::snapshot::SnapshotCache`] holds it; [`crate::texts`] fills it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ctxgate_core::lists::ListId;

/// What the cache may hold by default: a fifth of the memory an isolate is held to in the
/// benchmarks (64 MiB), beside the version's resident index.
pub const DEFAULT_CEILING: usize = 8 << 20;

/// What the cache holds of a version: a chunk's text, or a list's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Item {
    /// Chunk `i`'s text.
    Text(u32),
    /// A list's value (a term's postings, a name's users, a block of terms or names).
    List(ListId),
}

/// Cache key: the version (org/project/version) and the item in it.
type Key = (Arc<str>, Item);

/// A cached item's bytes.
#[derive(Clone)]
pub(crate) enum Held {
    /// A chunk's text.
    Text(Arc<str>),
    /// A list's value.
    List(Arc<[u8]>),
}

impl Held {
    fn len(&self) -> usize {
        match self {
            Held::Text(t) => t.len(),
            Held::List(p) => p.len(),
        }
    }
}

/// Chunk texts and list values read so far, shared by every open version, within a byte
/// ceiling; the least recently used go first.
pub struct TextCache {
    inner: Mutex<Lru>,
}

struct Lru {
    map: HashMap<Key, (Held, u64)>,
    bytes: usize,
    tick: u64,
    ceiling: usize,
}

impl TextCache {
    /// A cache holding at most `ceiling` bytes.
    pub fn new(ceiling: usize) -> Self {
        Self {
            inner: Mutex::new(Lru {
                map: HashMap::new(),
                bytes: 0,
                tick: 0,
                ceiling,
            }),
        }
    }

    pub(crate) fn get_item(&self, version: &Arc<str>, item: Item) -> Option<Held> {
        let mut lru = self.inner.lock().ok()?;
        lru.tick += 1;
        let tick = lru.tick;
        let entry = lru.map.get_mut(&(version.clone(), item))?;
        entry.1 = tick;
        Some(entry.0.clone())
    }

    pub(crate) fn get(&self, version: &Arc<str>, chunk: u32) -> Option<Arc<str>> {
        match self.get_item(version, Item::Text(chunk))? {
            Held::Text(t) => Some(t),
            Held::List(_) => None,
        }
    }

    pub(crate) fn get_list(&self, version: &Arc<str>, id: ListId) -> Option<Arc<[u8]>> {
        match self.get_item(version, Item::List(id))? {
            Held::List(p) => Some(p),
            Held::Text(_) => None,
        }
    }

    #[cfg(test)]
    fn put(&self, version: &Arc<str>, chunk: u32, text: Arc<str>) {
        self.put_item(version, Item::Text(chunk), Held::Text(text));
    }

    pub(crate) fn put_item(&self, version: &Arc<str>, item: Item, held: Held) {
        let Ok(mut lru) = self.inner.lock() else {
            return;
        };
        if held.len() > lru.ceiling {
            return;
        }
        lru.tick += 1;
        let tick = lru.tick;
        let added = held.len();
        if let Some((old, _)) = lru.map.insert((version.clone(), item), (held, tick)) {
            lru.bytes -= old.len();
        }
        lru.bytes += added;
        if lru.bytes > lru.ceiling {
            // Down to three quarters at once, so a full cache does not sort on every insert.
            let mut by_age: Vec<(u64, Key, usize)> = lru
                .map
                .iter()
                .map(|(k, (t, at))| (*at, k.clone(), t.len()))
                .collect();
            by_age.sort_unstable_by_key(|e| e.0);
            let target = lru.ceiling / 4 * 3;
            for (_, k, len) in by_age {
                if lru.bytes <= target {
                    break;
                }
                lru.map.remove(&k);
                lru.bytes -= len;
            }
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.inner.lock().map(|l| l.bytes).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_to_its_ceiling_and_drops_the_oldest() {
        let cache = TextCache::new(100);
        let v: Arc<str> = Arc::from("org/p/1");
        for i in 0..10u32 {
            cache.put(&v, i, Arc::from("x".repeat(20).as_str()));
        }
        assert!(cache.bytes() <= 100);
        assert!(cache.get(&v, 9).is_some(), "the newest stays");
        assert!(cache.get(&v, 0).is_none(), "the oldest went");
        // A text larger than the whole ceiling is not kept at all.
        cache.put(&v, 11, Arc::from("y".repeat(101).as_str()));
        assert!(cache.get(&v, 11).is_none());
        // Another version's chunk of the same index is another entry.
        let w: Arc<str> = Arc::from("org/p/2");
        assert!(cache.get(&w, 9).is_none());
    }
}
