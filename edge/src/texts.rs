//! Chunk texts read by byte range, only for the pieces a query may use.
//!
//! A version's texts live in content-addressed segments of up to 4 MiB; loading every segment
//! of a large repository would not fit an isolate (deno: 42 MiB of text). A request plans
//! first ([`ctxgate_core::assemble::plan`]), reads the ranges its plan names in one batch
//! (adjacent chunks of a segment in one read), checks each chunk against the sha256 its
//! version records, and composes; what composing asks beyond the plan is read in another
//! round. Texts stay in a per-process cache under a byte ceiling, so warm requests for the
//! same code read nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ctxgate_core::assemble::{
    AssembleError, Assembled, ChunkSource, QueryOptions, plan as plan_query,
};
use ctxgate_core::catalog::ResolvedBudget;
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::IndexPack;
use ctxgate_core::index::layout::keys;

use crate::backend::{Backend, BackendError};
use crate::state::{ObjectCache, Snapshot};

/// What the cache may hold by default: a fifth of the memory an isolate is held to in the
/// benchmarks (64 MiB), beside the version's resident index.
pub const DEFAULT_CEILING: usize = 8 << 20;

/// Two ranges of one segment closer than this are read as one.
const MERGE_GAP: u64 = 16 << 10;

/// Largest single read: a merged range stops growing here.
const MAX_READ: u64 = 1 << 20;

/// Rounds of reading planning, then composing, may each take before the request gives up.
const MAX_ROUNDS: usize = 8;

/// Candidates read along with one that composing found missing.
const MISS_BATCH: usize = 64;

/// Cache key: the version (org/project/version) and the chunk's index in it.
type Key = (Arc<str>, u32);

/// Chunk texts read so far, shared by every open version, within a byte ceiling; the least
/// recently used go first.
pub struct TextCache {
    inner: Mutex<Lru>,
}

struct Lru {
    map: HashMap<Key, (Arc<str>, u64)>,
    bytes: usize,
    tick: u64,
    ceiling: usize,
}

impl TextCache {
    /// A cache holding at most `ceiling` bytes of text.
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

    fn get(&self, version: &Arc<str>, chunk: u32) -> Option<Arc<str>> {
        let mut lru = self.inner.lock().ok()?;
        lru.tick += 1;
        let tick = lru.tick;
        let entry = lru.map.get_mut(&(version.clone(), chunk))?;
        entry.1 = tick;
        Some(entry.0.clone())
    }

    fn put(&self, version: &Arc<str>, chunk: u32, text: Arc<str>) {
        let Ok(mut lru) = self.inner.lock() else {
            return;
        };
        if text.len() > lru.ceiling {
            return;
        }
        lru.tick += 1;
        let tick = lru.tick;
        let added = text.len();
        if let Some((old, _)) = lru.map.insert((version.clone(), chunk), (text, tick)) {
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

    /// Bytes of text held.
    pub fn bytes(&self) -> usize {
        self.inner.lock().map(|l| l.bytes).unwrap_or(0)
    }
}

/// The texts one request has read, over the shared cache: a request keeps what it read even
/// when the cache evicts it meanwhile.
pub struct RequestTexts<'a> {
    snap: &'a Snapshot,
    /// The cache beyond this process (the Workers Cache API): ranges are immutable.
    shared: Option<&'a dyn ObjectCache>,
    local: HashMap<u32, Arc<str>>,
    /// Bytes this request read from storage.
    pub read_bytes: u64,
}

impl ChunkSource for RequestTexts<'_> {
    fn text(&self, _pack: &IndexPack, i: usize) -> Result<String, AssembleError> {
        let i = i as u32;
        if let Some(t) = self.local.get(&i) {
            return Ok(t.to_string());
        }
        match self.snap.texts.get(&self.snap.id, i) {
            Some(t) => Ok(t.to_string()),
            None => Err(AssembleError::TextsNeeded(vec![i])),
        }
    }
}

impl<'a> RequestTexts<'a> {
    /// No text read yet.
    pub fn new(snap: &'a Snapshot, shared: Option<&'a dyn ObjectCache>) -> Self {
        Self {
            snap,
            shared,
            local: HashMap::new(),
            read_bytes: 0,
        }
    }

    /// Reads the texts of `chunks` this request does not hold yet.
    pub async fn fetch(
        &mut self,
        backend: &dyn Backend,
        chunks: &[u32],
    ) -> Result<(), BackendError> {
        let snap = self.snap;
        let pack = &snap.pack;
        let mut wanted: Vec<u32> = Vec::new();
        for &i in chunks {
            if (i as usize) >= pack.chunks.len() || self.local.contains_key(&i) {
                continue;
            }
            match snap.texts.get(&snap.id, i) {
                Some(t) => {
                    self.local.insert(i, t);
                }
                None => wanted.push(i),
            }
        }
        wanted.sort_unstable_by_key(|&i| {
            let c = &pack.chunks[i as usize];
            (c.segment, c.segment_offset, i)
        });
        wanted.dedup();
        let reads = coalesce(pack, &wanted);
        let results = futures_util::future::join_all(
            reads
                .iter()
                .map(|r| read_range(backend, self.shared, &snap.org, &snap.project, pack, r)),
        )
        .await;
        for (r, read) in reads.iter().zip(results) {
            let (mut bytes, mut cached) = read?;
            let texts = loop {
                self.read_bytes += bytes.len() as u64;
                let texts: Result<Vec<String>, BackendError> = r
                    .chunks
                    .iter()
                    .map(|&i| chunk_text(pack, &snap.org, &snap.project, r, &bytes, i))
                    .collect();
                match texts {
                    // A damaged copy in the shared cache is not the store's: read the store.
                    Err(BackendError::Corrupt(_)) if cached => {
                        (bytes, cached) =
                            read_range(backend, None, &snap.org, &snap.project, pack, r).await?;
                    }
                    other => break other?,
                }
            };
            for (&i, text) in r.chunks.iter().zip(texts) {
                let text: Arc<str> = Arc::from(text);
                snap.texts.put(&snap.id, i, text.clone());
                self.local.insert(i, text);
            }
        }
        Ok(())
    }
}

/// One read: a byte range of a segment and the chunks inside it.
struct Read {
    segment: u32,
    start: u64,
    end: u64,
    chunks: Vec<u32>,
}

/// Groups `sorted` (by segment, then offset) into reads, merging neighbours.
fn coalesce(pack: &IndexPack, sorted: &[u32]) -> Vec<Read> {
    let mut out: Vec<Read> = Vec::new();
    for &i in sorted {
        let c = &pack.chunks[i as usize];
        let (start, end) = (c.segment_offset, c.segment_offset + c.len());
        match out.last_mut() {
            Some(r)
                if r.segment == c.segment
                    && start <= r.end + MERGE_GAP
                    && end.max(r.end) - r.start <= MAX_READ =>
            {
                r.end = r.end.max(end);
                r.chunks.push(i);
            }
            _ => out.push(Read {
                segment: c.segment,
                start,
                end,
                chunks: vec![i],
            }),
        }
    }
    out
}

/// Reads one range (from the shared cache when it has it: the flag says so), once more if the
/// store failed; names the object in every error.
async fn read_range(
    backend: &dyn Backend,
    shared: Option<&dyn ObjectCache>,
    org: &str,
    project: &str,
    pack: &IndexPack,
    r: &Read,
) -> Result<(Vec<u8>, bool), BackendError> {
    let sha = pack
        .segments
        .get(r.segment as usize)
        .ok_or_else(|| BackendError::Corrupt(format!("segment #{} is not listed", r.segment)))?;
    let key = keys::segment(org, project, sha);
    let len = r.end - r.start;
    let cached = format!("{key}?bytes={}-{}", r.start, r.end);
    if let Some(shared) = shared
        && let Some(bytes) = shared.get(&cached).await
        && bytes.len() as u64 == len
    {
        return Ok((bytes, true));
    }
    let mut tries = 0;
    let bytes = loop {
        tries += 1;
        match backend.object_range(&key, r.start, len).await {
            Ok(b) => break b,
            Err(BackendError::NotFound(_)) => {
                return Err(BackendError::Corrupt(format!(
                    "segment `{key}` that this version names is missing"
                )));
            }
            Err(BackendError::Storage(m)) if tries < 2 => {
                warn(&format!("retrying a range of `{key}`: {m}"));
            }
            Err(BackendError::Storage(m)) => {
                return Err(BackendError::Storage(format!(
                    "reading bytes {}..{} of segment `{key}` failed twice: {m}",
                    r.start, r.end
                )));
            }
            Err(e) => return Err(e),
        }
    };
    if bytes.len() as u64 != len {
        return Err(BackendError::Corrupt(format!(
            "segment `{key}` is truncated: bytes {}..{} were asked, {} came back",
            r.start,
            r.end,
            bytes.len()
        )));
    }
    if let Some(shared) = shared {
        shared.put(&cached, &bytes).await;
    }
    Ok((bytes, false))
}

/// Chunk `i`'s text out of the bytes of read `r`, checked against its recorded sha256.
fn chunk_text(
    pack: &IndexPack,
    org: &str,
    project: &str,
    r: &Read,
    bytes: &[u8],
    i: u32,
) -> Result<String, BackendError> {
    let c = &pack.chunks[i as usize];
    let key = || keys::segment(org, project, &pack.segments[r.segment as usize]);
    let from = (c.segment_offset - r.start) as usize;
    let slice = bytes
        .get(from..from + c.len() as usize)
        .ok_or_else(|| BackendError::Corrupt(format!("chunk {} is outside `{}`", c.id, key())))?;
    if Sha256Digest::of(slice) != c.sha256 {
        return Err(BackendError::Corrupt(format!(
            "chunk {} in segment `{}` (bytes {}..{}) fails its checksum",
            c.id,
            key(),
            c.segment_offset,
            c.segment_offset + c.len()
        )));
    }
    String::from_utf8(slice.to_vec()).map_err(|_| {
        BackendError::Corrupt(format!(
            "chunk {} in segment `{}` is not UTF-8",
            c.id,
            key()
        ))
    })
}

/// Notes a retried read where the host shows logs (stderr natively, the console in workerd).
fn warn(message: &str) {
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("ctxgate: {message}");
    #[cfg(target_arch = "wasm32")]
    worker::console_warn!("ctxgate: {message}");
}

/// Answers `query` from `snap`: plans, reads the texts the plan wants in one batch, composes,
/// and reads again what composing found missing. Returns the answer and the bytes read.
pub async fn answer(
    backend: &dyn Backend,
    shared: Option<&dyn ObjectCache>,
    snap: &Snapshot,
    query: &str,
    resolved: &ResolvedBudget,
    options: &QueryOptions,
) -> Result<(Assembled, u64), crate::error::ApiError> {
    let mut texts = RequestTexts::new(snap, shared);
    let pack = &snap.pack;
    let mut rounds = 0;
    let planned = loop {
        match plan_query(pack, &texts, query, resolved, options) {
            Err(AssembleError::TextsNeeded(more)) if rounds < MAX_ROUNDS => {
                rounds += 1;
                texts.fetch(backend, &more).await?;
            }
            other => break other?,
        }
    };
    // Cached texts are taken into the request too, so later reads cannot evict them from it.
    texts.fetch(backend, &planned.wanted_texts(pack)).await?;
    let mut rounds = 0;
    loop {
        match planned.compose(pack, &texts) {
            Err(AssembleError::TextsNeeded(more)) if rounds < MAX_ROUNDS => {
                rounds += 1;
                // Composing stops at its first missing text: read what it will ask next along.
                let mut batch = more.clone();
                for &i in &more {
                    batch.extend(planned.following(i, MISS_BATCH));
                }
                texts.fetch(backend, &batch).await?;
            }
            other => return Ok((other?, texts.read_bytes)),
        }
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
