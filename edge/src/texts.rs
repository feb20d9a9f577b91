//! Chunk texts and the index's lists (term postings, symbol users, and a large dictionary's
//! blocks of terms and names) read by byte range, only for the pieces, terms and names a query
//! uses.
//!
//! A version's texts live in content-addressed segments of up to 4 MiB; loading every segment
//! of a large repository would not fit an isolate (deno: 42 MiB of text). A request plans
//! first ([`ctxgate_core::assemble::plan`]), reads the ranges its plan names in one batch
//! (adjacent chunks of a segment in one read), checks each chunk against the sha256 its
//! version records, and composes; what composing asks beyond the plan is read in another
//! round. Texts stay in a per-process cache under a byte ceiling, so warm requests for the
//! same code read nothing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use ctxgate_core::assemble::{
    AssembleError, Assembled, ChunkSource, QueryOptions, Step, plan as plan_query,
};
use ctxgate_core::catalog::ResolvedBudget;
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::IndexPack;
use ctxgate_core::index::layout::keys;
use ctxgate_core::lists::ListId;

use crate::backend::{BackendError, Projects};
use crate::snapshot::{ObjectCache, Snapshot};
use crate::text_cache::{Held, Item};

/// Two ranges of one segment closer than this are read as one.
const MERGE_GAP: u64 = 16 << 10;

/// Largest single read: a merged range stops growing here.
const MAX_READ: u64 = 1 << 20;

/// Rounds of reading planning, then composing, may each take before the request gives up.
const MAX_ROUNDS: usize = 8;

/// Candidates read along with one that composing found missing.
const MISS_BATCH: usize = 64;

/// The texts and lists one request has read, over the shared cache: a request keeps what it
/// read even when the cache evicts it meanwhile.
pub struct RequestTexts<'a> {
    snap: &'a Snapshot,
    /// The cache beyond this process (the Workers Cache API): ranges are immutable.
    shared: Option<&'a dyn ObjectCache>,
    local: HashMap<u32, Arc<str>>,
    lists: HashMap<ListId, Arc<[u8]>>,
    /// Bytes this request read from storage.
    pub read_bytes: u64,
}

impl ChunkSource for RequestTexts<'_> {
    fn text(&self, _pack: &IndexPack, i: usize) -> Result<Option<String>, AssembleError> {
        let i = i as u32;
        if let Some(t) = self.local.get(&i) {
            return Ok(Some(t.to_string()));
        }
        Ok(self.snap.texts.get(&self.snap.id, i).map(|t| t.to_string()))
    }

    fn list(&self, _pack: &IndexPack, id: ListId) -> Result<Option<Cow<'_, [u8]>>, AssembleError> {
        if let Some(p) = self.lists.get(&id) {
            return Ok(Some(Cow::Borrowed(p)));
        }
        Ok(self
            .snap
            .texts
            .get_list(&self.snap.id, id)
            .map(|p| Cow::Owned(p.to_vec())))
    }
}

/// One thing to read: an item's bytes in a segment.
#[derive(Clone, Copy, Debug)]
struct Want {
    item: Item,
    segment: u32,
    start: u64,
    len: u64,
}

impl<'a> RequestTexts<'a> {
    /// Nothing read yet.
    pub fn new(snap: &'a Snapshot, shared: Option<&'a dyn ObjectCache>) -> Self {
        Self {
            snap,
            shared,
            local: HashMap::new(),
            lists: HashMap::new(),
            read_bytes: 0,
        }
    }

    /// Reads the texts of `chunks` this request does not hold yet.
    pub async fn fetch(
        &mut self,
        backend: &dyn Projects,
        chunks: &[u32],
    ) -> Result<(), BackendError> {
        self.fetch_both(backend, chunks, &[]).await
    }

    /// Reads the texts of `chunks` and the list values `ids` this request does not hold yet,
    /// in one batch of range reads.
    pub async fn fetch_both(
        &mut self,
        backend: &dyn Projects,
        chunks: &[u32],
        ids: &[ListId],
    ) -> Result<(), BackendError> {
        let mut wanted = self.texts_wanted(chunks);
        wanted.extend(self.lists_wanted(ids)?);
        self.read(backend, wanted).await
    }

    /// The reads the texts of `chunks` take: those the process's cache holds are taken from it.
    fn texts_wanted(&mut self, chunks: &[u32]) -> Vec<Want> {
        let snap = self.snap;
        let pack = &snap.pack;
        let mut wanted: Vec<Want> = Vec::new();
        for &i in chunks {
            if (i as usize) >= pack.chunks.len() || self.local.contains_key(&i) {
                continue;
            }
            match snap.texts.get(&snap.id, i) {
                Some(t) => {
                    self.local.insert(i, t);
                }
                None => {
                    let c = &pack.chunks[i as usize];
                    wanted.push(Want {
                        item: Item::Text(i),
                        segment: c.segment,
                        start: u64::from(c.segment_offset),
                        len: c.len(),
                    });
                }
            }
        }
        wanted
    }

    /// The reads the list values `ids` take: those the process's cache holds are taken from it.
    fn lists_wanted(&mut self, ids: &[ListId]) -> Result<Vec<Want>, BackendError> {
        let snap = self.snap;
        let mut wanted: Vec<Want> = Vec::new();
        for &id in ids {
            if self.lists.contains_key(&id) {
                continue;
            }
            if let Some(p) = snap.texts.get_list(&snap.id, id) {
                self.lists.insert(id, p);
                continue;
            }
            let r = snap.pack.list_range(id).ok_or_else(|| {
                BackendError::Corrupt(format!("{id} is not stored outside the pack"))
            })?;
            wanted.push(Want {
                item: Item::List(id),
                segment: r.segment,
                start: r.start,
                len: r.len,
            });
        }
        Ok(wanted)
    }

    /// Reads `wanted` in as few ranges as the layout allows, all at once; checks each item and
    /// keeps it here and in the process's cache.
    async fn read(
        &mut self,
        backend: &dyn Projects,
        mut wanted: Vec<Want>,
    ) -> Result<(), BackendError> {
        let snap = self.snap;
        let pack = &snap.pack;
        wanted.sort_unstable_by_key(|w| (w.segment, w.start, w.len));
        let reads = coalesce(&wanted);
        let results = futures_util::future::join_all(
            reads
                .iter()
                .map(|r| read_range(backend, self.shared, &snap.org, &snap.project, pack, r)),
        )
        .await;
        for (r, read) in reads.iter().zip(results) {
            let (mut bytes, mut cached) = read?;
            let items = loop {
                self.read_bytes += bytes.len() as u64;
                let items: Result<Vec<Held>, BackendError> = r
                    .items
                    .iter()
                    .map(|w| check_item(pack, &snap.org, &snap.project, r, &bytes, w))
                    .collect();
                match items {
                    // A damaged copy in the shared cache is not the store's: read the store.
                    Err(BackendError::Corrupt(_)) if cached => {
                        (bytes, cached) =
                            read_range(backend, None, &snap.org, &snap.project, pack, r).await?;
                    }
                    other => break other?,
                }
            };
            for (w, held) in r.items.iter().zip(items) {
                snap.texts.put_item(&snap.id, w.item, held.clone());
                match (w.item, held) {
                    (Item::Text(i), Held::Text(t)) => {
                        self.local.insert(i, t);
                    }
                    (Item::List(id), Held::List(p)) => {
                        self.lists.insert(id, p);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// One read: a byte range of a segment and the items inside it.
struct Read {
    segment: u32,
    start: u64,
    end: u64,
    items: Vec<Want>,
}

/// Groups `sorted` (by segment, then offset) into reads, merging neighbours.
fn coalesce(sorted: &[Want]) -> Vec<Read> {
    let mut out: Vec<Read> = Vec::new();
    for w in sorted {
        let (start, end) = (w.start, w.start + w.len);
        match out.last_mut() {
            Some(r)
                if r.segment == w.segment
                    && start <= r.end + MERGE_GAP
                    && end.max(r.end) - r.start <= MAX_READ =>
            {
                r.end = r.end.max(end);
                r.items.push(*w);
            }
            _ => out.push(Read {
                segment: w.segment,
                start,
                end,
                items: vec![*w],
            }),
        }
    }
    out
}

/// Reads one range (from the shared cache when it has it: the flag says so), once more if the
/// store failed; names the object in every error.
async fn read_range(
    backend: &dyn Projects,
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

/// Item `w` out of the bytes of read `r`, checked against what the version records (a chunk's
/// sha256, a term's postings sum).
fn check_item(
    pack: &IndexPack,
    org: &str,
    project: &str,
    r: &Read,
    bytes: &[u8],
    w: &Want,
) -> Result<Held, BackendError> {
    let key = || keys::segment(org, project, &pack.segments[r.segment as usize]);
    let from = (w.start - r.start) as usize;
    let slice = bytes.get(from..from + w.len as usize);
    match w.item {
        Item::Text(i) => {
            let c = &pack.chunks[i as usize];
            let slice = slice.ok_or_else(|| {
                BackendError::Corrupt(format!("chunk {} is outside `{}`", c.id, key()))
            })?;
            if Sha256Digest::of(slice) != c.sha256 {
                return Err(BackendError::Corrupt(format!(
                    "chunk {} in segment `{}` (bytes {}..{}) fails its checksum",
                    c.id,
                    key(),
                    c.segment_offset,
                    u64::from(c.segment_offset) + c.len()
                )));
            }
            let text = String::from_utf8(slice.to_vec()).map_err(|_| {
                BackendError::Corrupt(format!(
                    "chunk {} in segment `{}` is not UTF-8",
                    c.id,
                    key()
                ))
            })?;
            Ok(Held::Text(Arc::from(text)))
        }
        Item::List(id) => {
            let slice = slice
                .ok_or_else(|| BackendError::Corrupt(format!("{id} is outside `{}`", key())))?;
            pack.verify_list(id, slice).map_err(|e| {
                BackendError::Corrupt(format!(
                    "{id}: {e} in segment `{}` (bytes {}..{})",
                    key(),
                    w.start,
                    w.start + w.len
                ))
            })?;
            Ok(Held::List(Arc::from(slice)))
        }
    }
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
    backend: &dyn Projects,
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
        match plan_query(pack, &texts, query, resolved, options)? {
            Step::Needs(needs) if rounds < MAX_ROUNDS => {
                rounds += 1;
                texts
                    .fetch_both(backend, &needs.texts, &needs.lists)
                    .await?;
            }
            step => break step.ready()?,
        }
    };
    // Cached texts are taken into the request too, so later reads cannot evict them from it.
    texts.fetch(backend, &planned.wanted_texts(pack)).await?;
    let mut rounds = 0;
    loop {
        match planned.compose(pack, &texts)? {
            Step::Needs(needs) if rounds < MAX_ROUNDS => {
                rounds += 1;
                // Composing stops at its first missing text: read what it will ask next along
                // (and the chosen summaries' texts, all at once).
                let mut batch = needs.texts.clone();
                for &i in &needs.texts {
                    batch.extend(planned.following(i, MISS_BATCH));
                }
                texts.fetch_both(backend, &batch, &needs.lists).await?;
            }
            step => return Ok((step.ready()?, texts.read_bytes)),
        }
    }
}
