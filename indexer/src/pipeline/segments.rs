//! Where a version's bytes live besides its pack: chunk texts in content-addressed segments of
//! at most [`SEGMENT_CAP`] bytes (texts an earlier version stored stay where they are), and a
//! large index's postings in segments of their own.

use std::collections::HashMap;

use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::{ChunkRecord, IndexPack};

use crate::IndexerError;
use crate::store::{IndexStore, keys};

/// The most bytes of chunk text in one segment: well under every store's object limit (the
/// Worker's 32 MiB upload, R2, S3 single PUT, the Workers Cache API), and small enough that
/// an isolate reading a segment whole stays far from its memory limit.
pub const SEGMENT_CAP: usize = 4 << 20;

/// Writes each of `buffers` as a content-addressed segment (unless one with its bytes exists)
/// and names it in `segments`: chunk texts and postings alike.
pub(super) fn store_segments(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    buffers: &[impl AsRef<[u8]>],
    segments: &mut Vec<String>,
) -> Result<(), IndexerError> {
    for buffer in buffers {
        let buffer = buffer.as_ref();
        let sha = Sha256Digest::of(buffer).to_hex();
        let key = keys::segment(org, project_id, &sha);
        if !store.has_object(&key)? {
            store.put_object(&key, buffer)?;
            crate::crash::point("after_segment");
        }
        segments.push(sha);
    }
    Ok(())
}

/// An index's lists (term postings, symbol users) up to this size stay in the pack: a small
/// index loads them with it, cheaper than one more read per query. Larger ones go to segments
/// and are read per query term or named symbol, so a reader of a large index holds only their
/// keys; keys taking more than this too go to segments in blocks, of which a reader holds one
/// key per block ([`ctxgate_core::lists::KeyBlocks`]). `CTXGATE_LISTS_INLINE_MAX` (bytes) overrides it, so tests can take the segment path on
/// a small repository.
pub const LISTS_INLINE_MAX: usize = 1 << 20;

pub(super) fn lists_inline_max() -> usize {
    std::env::var("CTXGATE_LISTS_INLINE_MAX")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(LISTS_INLINE_MAX)
}

/// Gives every chunk its segment and offset: a text an earlier version stored keeps its place,
/// the rest (`texts`, `None` for reused chunks) are written to new segments. Segments no chunk
/// names any more are dropped. Returns the segments and the bytes of text written.
pub(super) fn place_texts(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    prev_pack: Option<&IndexPack>,
    chunks: &mut [ChunkRecord],
    texts: &[Option<String>],
) -> Result<(Vec<String>, u64), IndexerError> {
    let mut segments: Vec<String> = prev_pack.map(|p| p.segments.clone()).unwrap_or_default();
    let mut located: HashMap<Sha256Digest, (u32, u32)> = HashMap::new();
    if let Some(p) = prev_pack {
        for c in &p.chunks {
            located
                .entry(c.sha256)
                .or_insert((c.segment, c.segment_offset));
        }
    }
    // New texts go into segments of at most SEGMENT_CAP bytes (a chunk larger than the cap gets
    // a segment of its own), so no object comes near any store's size limit.
    let mut buffers: Vec<Vec<u8>> = Vec::new();
    for (c, text) in chunks.iter_mut().zip(texts) {
        if let Some(&(seg, off)) = located.get(&c.sha256) {
            c.segment = seg;
            c.segment_offset = off;
        } else if let Some(text) = text {
            let full = buffers
                .last()
                .is_none_or(|b| !b.is_empty() && b.len() + text.len() > SEGMENT_CAP);
            if full {
                buffers.push(Vec::new());
            }
            let seg = (segments.len() + buffers.len() - 1) as u32;
            let buffer = buffers.last_mut().expect("a buffer was just ensured");
            // Under SEGMENT_CAP: a fuller buffer was closed before this text.
            let off = u32::try_from(buffer.len())
                .map_err(|_| IndexerError::Corrupt(format!("segment of {} bytes", buffer.len())))?;
            buffer.extend_from_slice(text.as_bytes());
            located.insert(c.sha256, (seg, off));
            c.segment = seg;
            c.segment_offset = off;
        } else {
            return Err(IndexerError::Corrupt(format!(
                "chunk {} has no stored text",
                c.id
            )));
        }
    }
    let stored_bytes = buffers.iter().map(|b| b.len() as u64).sum::<u64>();
    store_segments(store, org, project_id, &buffers, &mut segments)?;
    Ok((prune(segments, chunks), stored_bytes))
}

/// Keeps only the segments still referenced, renumbering the chunks' segment indices.
fn prune(segments: Vec<String>, chunks: &mut [ChunkRecord]) -> Vec<String> {
    let mut used = vec![false; segments.len()];
    for c in chunks.iter() {
        used[c.segment as usize] = true;
    }
    let mut remap = vec![0u32; segments.len()];
    let mut kept = Vec::new();
    for (i, s) in segments.into_iter().enumerate() {
        if used[i] {
            remap[i] = kept.len() as u32;
            kept.push(s);
        }
    }
    for c in chunks.iter_mut() {
        c.segment = remap[c.segment as usize];
    }
    kept
}

/// The segments holding texts of reused chunks (those with no text in `texts`), read whole;
/// `None` for segments no reused chunk needs.
pub(super) fn reused_segments(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    segments: &[String],
    chunks: &[ChunkRecord],
    texts: &[Option<String>],
) -> Result<Vec<Option<Vec<u8>>>, IndexerError> {
    let mut need = vec![false; segments.len()];
    for (c, t) in chunks.iter().zip(texts) {
        if t.is_none() {
            need[c.segment as usize] = true;
        }
    }
    segments
        .iter()
        .zip(need)
        .map(|(s, n)| {
            if n {
                store
                    .get_object(&keys::segment(org, project_id, s))
                    .map(Some)
            } else {
                Ok(None)
            }
        })
        .collect()
}
