//! A version's embeddings, made while it is indexed so that they are published with it: every
//! host can then rank with them by embedding only the query.
//!
//! A chunk is embedded once. Its vector is looked up, by what it depends on (path, symbol,
//! text) and the model, first in the previous version's published table (its rows copied as
//! stored), then in the vector cache of the indexer's cache folder (a warm Lambda container
//! keeps it); only what neither holds goes to the provider. A provider failure fails the run before the pack or the
//! manifest is written, so no version without its vectors is ever published.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use ctxgate_core::assemble::{AssembleError, ChunkSource};
use ctxgate_core::dense::VectorTable;
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::IndexPack;
use ctxgate_core::lists::ListId;

use super::OpenVersion;
use crate::IndexerError;
use crate::embed::cache::VectorCache;
use crate::embed::{EmbedReport, Embedder, Reuse, embedding_key, vectors_for};
use crate::progress::NoProgress;
use crate::store::{IndexStore, keys};

/// The vectors of every chunk of `pack`, reusing `previous`'s published ones.
pub(super) fn embed_version(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
    pack: &IndexPack,
    previous: Option<&OpenVersion>,
    embedder: &dyn Embedder,
) -> Result<(VectorTable, EmbedReport), IndexerError> {
    let cache = VectorCache::open(&store.cache_root().join("cache/vectors.sqlite"))
        .map_err(crate::embed::EmbedError::from)?;
    let reuse = match previous {
        Some(prev) => published_vectors(store, prev, embedder.model()),
        None => None,
    };
    let source = StoredSegments {
        store,
        org,
        project,
        read: RefCell::default(),
    };
    Ok(vectors_for(
        pack,
        &source,
        embedder,
        &cache,
        reuse.as_ref(),
        &NoProgress,
    )?)
}

/// Whether `previous` lacks vectors of `model`: a run that changed nothing must still publish
/// a version when embedding was turned on (or its model changed) since.
pub(super) fn missing(previous: &OpenVersion, model: &str) -> bool {
    previous
        .manifest
        .vectors
        .as_ref()
        .is_none_or(|v| v.model != model)
}

/// `prev`'s published vectors of `model` by what each depends on, kept as stored (`i8`); none
/// when it has no table of that model, or its table cannot be read (then they are embedded
/// again).
fn published_vectors(store: &dyn IndexStore, prev: &OpenVersion, model: &str) -> Option<Reuse> {
    let named = prev
        .manifest
        .vectors
        .as_ref()
        .filter(|v| v.model == model)?;
    let table = match store.get_object(&named.key) {
        Ok(bytes) => VectorTable::decode(&bytes),
        Err(e) => {
            tracing::warn!(
                "previous vectors `{}` unreadable, embedding again: {e}",
                named.key
            );
            None
        }
    };
    let table = table.filter(|t| t.model == model && t.len() == prev.pack.chunks.len())?;
    let keys = prev.pack.chunks.iter().map(|c| {
        embedding_key(
            &prev.pack.files[c.file as usize].path,
            c.symbol.as_deref(),
            &c.sha256,
        )
    });
    Some(Reuse::new(table, keys))
}

/// Chunk texts read from the version's stored segments, each segment once (the store of any
/// host: S3 for the Lambda), and only for the chunks that must be embedded.
struct StoredSegments<'a> {
    store: &'a dyn IndexStore,
    org: &'a str,
    project: &'a str,
    read: RefCell<HashMap<u32, Vec<u8>>>,
}

impl ChunkSource for StoredSegments<'_> {
    fn text(&self, pack: &IndexPack, i: usize) -> Result<Option<String>, AssembleError> {
        let c = &pack.chunks[i];
        let mut read = self.read.borrow_mut();
        if let std::collections::hash_map::Entry::Vacant(slot) = read.entry(c.segment) {
            let name = pack
                .segments
                .get(c.segment as usize)
                .ok_or_else(|| AssembleError::Source(format!("chunk {} names no segment", c.id)))?;
            let bytes = self
                .store
                .get_object(&keys::segment(self.org, self.project, name))
                .map_err(|e| AssembleError::Source(e.to_string()))?;
            slot.insert(bytes);
        }
        let segment = &read[&c.segment];
        let start = c.segment_offset as usize;
        let bytes = segment
            .get(start..start + c.len() as usize)
            .ok_or_else(|| {
                AssembleError::Source(format!("chunk {} is outside its segment", c.id))
            })?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| AssembleError::Source(format!("chunk {} is not UTF-8", c.id)))
    }

    fn list(&self, _: &IndexPack, _: ListId) -> Result<Option<Cow<'_, [u8]>>, AssembleError> {
        Err(AssembleError::Source(
            "embedding reads chunk texts only".into(),
        ))
    }
}

/// The object a table is stored as, and the manifest's note of it.
pub(super) fn stored(
    org: &str,
    project: &str,
    table: &VectorTable,
) -> (Vec<u8>, ctxgate_core::index::layout::VectorsRef) {
    let bytes = table.encode();
    let key = keys::vectors(org, project, &Sha256Digest::of(&bytes).to_hex());
    let named = ctxgate_core::index::layout::VectorsRef {
        key,
        bytes: bytes.len() as u64,
        model: table.model.clone(),
        dims: table.dims,
    };
    (bytes, named)
}
