//! Every chunk's terms for the core's index build ([`ctxgate_core::index::build`]), extracted
//! in parallel: new chunks from their texts in hand, reused ones from their segments.

use ctxgate_core::index::build::ChunkTerms;
use ctxgate_core::index::{ChunkRecord, FileEntry};
use rayon::prelude::*;

use crate::IndexerError;

/// The terms of each of `chunks`: `texts[i]` when it is new, else its bytes in
/// `reused_segments` (see [`super::segments::reused_segments`]).
pub(super) fn chunk_terms(
    files: &[FileEntry],
    chunks: &[ChunkRecord],
    texts: &[Option<String>],
    reused_segments: &[Option<Vec<u8>>],
) -> Result<Vec<ChunkTerms>, IndexerError> {
    chunks
        .par_iter()
        .zip(texts.par_iter())
        .map(|(c, t)| {
            let file = &files[c.file as usize];
            let text = match t {
                Some(t) => t.as_str(),
                None => reused_segments[c.segment as usize]
                    .as_deref()
                    .and_then(|b| {
                        b.get(
                            c.segment_offset as usize
                                ..(u64::from(c.segment_offset) + c.len()) as usize,
                        )
                    })
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .ok_or_else(|| {
                        IndexerError::Corrupt(format!("chunk {} has no stored text", c.id))
                    })?,
            };
            Ok(ChunkTerms::extract(text, &file.path, &file.language))
        })
        .collect()
}
