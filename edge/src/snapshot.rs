//! Opened index versions: a version's pack, opened once per process and checked against its
//! manifest, the few most recently used kept open, and the cache beyond the process
//! ([`ObjectCache`], the Workers Cache API) that immutable objects are read through.

use std::sync::{Arc, Mutex};

use ctxgate_core::index::layout::{Manifest, keys};
use ctxgate_core::index::open::{self, OpenError};
use ctxgate_core::index::{IndexPack, PackError};

use crate::backend::{BackendError, ProjectInfo, Projects};
use crate::text_cache::TextCache;

/// A cache of index objects shared beyond one process — in the Worker, the Workers Cache API of
/// the data centre, so a fresh isolate there loads a version without reading R2 or S3 again.
/// Only objects of published versions pass through it, and those never change (a version is
/// immutable once its manifest names it), so nothing in it can go stale. It is best effort:
/// a miss or a failure only means reading the store.
#[async_trait::async_trait]
pub trait ObjectCache: Send + Sync {
    /// The object stored under `key`, if the cache has it.
    async fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Keeps `bytes` as the object under `key`.
    async fn put(&self, key: &str, bytes: &[u8]);
}

/// One published version: its index resident, its chunk texts read by range as queries need
/// them ([`crate::texts`]).
pub struct Snapshot {
    /// The organisation.
    pub org: String,
    /// The project id.
    pub project: String,
    /// The version.
    pub version: u64,
    /// The pack's sha256 (hex) from its manifest: names caches derived from this version.
    pub pack_sha256: String,
    /// The index.
    pub pack: IndexPack,
    /// The repository and commit it was indexed from, when its manifest says.
    pub origin: Option<ctxgate_core::source::Origin>,
    /// When it was published, milliseconds since the epoch (its manifest's time).
    pub created_ms: u64,
    /// Its chunks' embeddings, when the indexer published them (read only by dense retrieval).
    pub vectors: Option<ctxgate_core::index::layout::VectorsRef>,
    /// `org/project/version`: this version's name in the text cache.
    pub(crate) id: Arc<str>,
    /// The texts read so far (shared by every version this process has open).
    pub(crate) texts: Arc<TextCache>,
}

/// The most recently used versions (a handful: each holds a resident index), and the chunk
/// texts read for them.
pub struct SnapshotCache {
    entries: Mutex<Vec<Arc<Snapshot>>>,
    texts: Arc<TextCache>,
    /// Consulted before the backend for each object, and given what the backend returned.
    shared: Option<Arc<dyn ObjectCache>>,
}

const CACHED_VERSIONS: usize = 4;

/// Parts of a pack read at once.
const PARALLEL_PARTS: usize = 4;

impl Default for SnapshotCache {
    fn default() -> Self {
        Self::with_text_ceiling(crate::text_cache::DEFAULT_CEILING)
    }
}

impl SnapshotCache {
    /// An empty cache of versions that reads index objects through `shared` first and keeps
    /// texts in the same cache as this one.
    pub fn through(&self, shared: Arc<dyn ObjectCache>) -> Self {
        Self {
            entries: Mutex::default(),
            texts: self.texts.clone(),
            shared: Some(shared),
        }
    }

    /// The cache beyond this process, if the host has one.
    pub fn shared(&self) -> Option<&dyn ObjectCache> {
        self.shared.as_deref()
    }

    /// A cache whose chunk texts take at most `ceiling` bytes.
    pub fn with_text_ceiling(ceiling: usize) -> Self {
        Self {
            entries: Mutex::default(),
            texts: Arc::new(TextCache::new(ceiling)),
            shared: None,
        }
    }

    fn get(&self, org: &str, project: &str, version: u64) -> Option<Arc<Snapshot>> {
        let entries = self.entries.lock().ok()?;
        entries
            .iter()
            .find(|s| s.org == org && s.project == project && s.version == version)
            .cloned()
    }

    fn put(&self, snap: Arc<Snapshot>) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|s| !(s.org == snap.org && s.project == snap.project));
            entries.insert(0, snap);
            entries.truncate(CACHED_VERSIONS);
        }
    }

    /// An object of a published version: from the shared cache when it has it, else from the
    /// store (and then offered to the cache).
    async fn object(&self, backend: &dyn Projects, key: &str) -> Result<Vec<u8>, BackendError> {
        let Some(shared) = &self.shared else {
            return backend.object(key).await;
        };
        if let Some(bytes) = shared.get(key).await {
            return Ok(bytes);
        }
        let bytes = backend.object(key).await?;
        shared.put(key, &bytes).await;
        Ok(bytes)
    }

    /// The pack `manifest` names, decoded from its one object or from its parts, read a few
    /// at a time and decoded in order as they arrive (so neither the whole pack nor more than a
    /// few parts are held beside its decoded form); and the bytes read.
    async fn pack(
        &self,
        backend: &dyn Projects,
        manifest: &Manifest,
        name: &str,
    ) -> Result<(IndexPack, u64), BackendError> {
        // A version stored as a delta: its own (small) pack first, then its base's, decoded
        // with room for the merged tables, so merging needs no second copy of them.
        let (pack, read) = self.one_pack(backend, manifest, name, None).await?;
        let (base, base_read) = match manifest.base.as_deref() {
            Some(b) => {
                let (p, r) = self.one_pack(backend, b, name, Some(&pack)).await?;
                (Some(p), r)
            }
            None => (None, 0),
        };
        let pack = open::layered(manifest, base, pack)
            .map_err(|e| BackendError::Corrupt(e.to_string()))?;
        Ok((pack, base_read + read))
    }

    /// The one pack `manifest` names (a delta's own, without its base; a base with room for
    /// `delta`'s merged tables).
    async fn one_pack(
        &self,
        backend: &dyn Projects,
        manifest: &Manifest,
        name: &str,
        delta: Option<&IndexPack>,
    ) -> Result<(IndexPack, u64), BackendError> {
        let mut opening = match delta {
            Some(d) => open::PackOpening::for_base_of(manifest, d),
            None => open::PackOpening::new(manifest),
        };
        let outdated_or_corrupt = |e: OpenError| match e {
            OpenError::Pack(PackError::Version { found, expected }) => {
                BackendError::Outdated(format!(
                    "version {} of project `{name}` is in index format {found}; this server reads format {expected}",
                    manifest.version
                ))
            }
            e => BackendError::Corrupt(e.to_string()),
        };
        for batch in manifest.pack_objects().chunks(PARALLEL_PARTS) {
            let parts =
                futures_util::future::join_all(batch.iter().map(|key| self.object(backend, key)))
                    .await;
            for part in parts {
                opening.push(&part?).map_err(outdated_or_corrupt)?;
            }
        }
        let read = opening.read();
        Ok((opening.finish().map_err(outdated_or_corrupt)?, read))
    }

    /// The current version of `project`, opened (from the cache when it is there), and the
    /// bytes read from storage to open it (0 when it was open).
    pub async fn open(
        &self,
        backend: &dyn Projects,
        project: &ProjectInfo,
    ) -> Result<(Arc<Snapshot>, u64), BackendError> {
        let org = &project.org;
        let version = project.current_version.ok_or_else(|| {
            BackendError::NotFound(format!("an index of project `{}`", project.name))
        })?;
        if let Some(s) = self.get(org, &project.id, version) {
            return Ok((s, 0));
        }
        let manifest_bytes = self
            .object(backend, &keys::manifest(org, &project.id, version))
            .await?;
        let manifest = open::read_manifest(org, &project.id, version, &manifest_bytes)
            .map_err(|e| BackendError::Corrupt(e.to_string()))?;
        let (pack, pack_read) = self.pack(backend, &manifest, &project.name).await?;
        let read = manifest_bytes.len() as u64 + pack_read;
        let snap = Arc::new(Snapshot {
            org: org.clone(),
            project: project.id.clone(),
            version,
            pack_sha256: manifest.pack_sha256.clone(),
            pack,
            origin: manifest.origin.clone(),
            created_ms: u64::try_from(manifest.created_at_ns / 1_000_000).unwrap_or(0),
            vectors: manifest.vectors.clone(),
            id: Arc::from(format!("{org}/{}/{version}", project.id)),
            texts: self.texts.clone(),
        });
        self.put(snap.clone());
        Ok((snap, read))
    }
}
