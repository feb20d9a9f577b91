//! The new version's files and chunks, in walk order: reused files keep their records (and
//! their texts stay in the segments that hold them), fresh files bring new chunks and texts.

use std::collections::HashMap;

use ctxgate_core::index::{ChunkRecord, FileEntry, IndexPack};
use ctxgate_core::summary::file::Extract;

use super::Skipped;
use super::scan::Outcome;
use crate::IndexerError;

/// The merged files and chunks of a new version.
#[derive(Default)]
pub(super) struct Merged {
    /// Every file, skipped ones included.
    pub files: Vec<FileEntry>,
    /// Every chunk, in file order.
    pub chunks: Vec<ChunkRecord>,
    /// Each chunk's text when it is new, `None` when it was reused.
    pub texts: Vec<Option<String>>,
    /// Files not chunked, and why.
    pub skipped: Vec<Skipped>,
    /// Files read and chunked.
    pub files_chunked: usize,
    /// Files reused from the previous version.
    pub files_reused: usize,
    /// Fresh files' summary extracts, by new file index.
    pub fresh_extracts: HashMap<u32, Extract>,
    /// Reused files' index in the previous version, by new file index.
    pub reused_from: HashMap<u32, u32>,
}

/// Merges the scan's outcomes (unreadable files left out) with `prev_pack`'s records.
pub(super) fn merge(
    outcomes: Vec<(String, Outcome)>,
    prev_pack: Option<&IndexPack>,
) -> Result<Merged, IndexerError> {
    let mut m = Merged {
        files: Vec::with_capacity(outcomes.len()),
        ..Merged::default()
    };
    for (_, outcome) in outcomes {
        let file_idx = m.files.len() as u32;
        match outcome {
            Outcome::Failed { .. } => continue,
            Outcome::Reused { prev, stat } => {
                let pack = prev_pack
                    .ok_or_else(|| IndexerError::Corrupt("reuse without a previous pack".into()))?;
                let mut entry = pack.files[prev].clone();
                entry.stat = stat;
                m.reused_from.insert(file_idx, prev as u32);
                let first = entry.first_chunk as usize;
                entry.first_chunk = m.chunks.len() as u32;
                for c in &pack.chunks[first..first + entry.chunk_count as usize] {
                    let mut c = c.clone();
                    c.file = file_idx;
                    m.chunks.push(c);
                    m.texts.push(None);
                }
                if let Some(reason) = &entry.skipped {
                    m.skipped.push(Skipped {
                        path: entry.path.clone(),
                        reason: reason.clone(),
                    });
                }
                m.files_reused += 1;
                m.files.push(entry);
            }
            Outcome::Skipped { entry } => {
                m.skipped.push(Skipped {
                    path: entry.path.clone(),
                    reason: entry.skipped.clone().unwrap_or_default(),
                });
                let mut entry = entry;
                entry.first_chunk = m.chunks.len() as u32;
                m.files.push(entry);
            }
            Outcome::Fresh {
                mut entry,
                chunks: fresh,
                extract,
            } => {
                m.fresh_extracts.insert(file_idx, extract);
                entry.first_chunk = m.chunks.len() as u32;
                entry.chunk_count = fresh.len() as u32;
                for mut c in fresh {
                    c.record.file = file_idx;
                    m.chunks.push(c.record);
                    m.texts.push(Some(c.text));
                }
                m.files_chunked += 1;
                m.files.push(entry);
            }
        }
    }
    Ok(m)
}

/// A warning for each file skipped because it is not UTF-8 (users expect to hear of those),
/// but one for all of those in folders of seeds, corpora and snapshots, whose binary inputs are
/// expected there ([`ctxgate_core::path_kind::set_aside_by_path`]).
pub(super) fn utf8_warnings(files: &[FileEntry]) -> Vec<String> {
    let not_utf8 = files.iter().filter_map(|f| {
        f.skipped
            .as_ref()
            .filter(|reason| reason.starts_with("not valid UTF-8"))
            .map(|reason| (f, reason))
    });
    let mut warnings = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    for (f, reason) in not_utf8 {
        if ctxgate_core::path_kind::set_aside_by_path(&f.path)
            == Some(ctxgate_core::path_kind::SetAside::Data)
        {
            data.push(&f.path);
        } else {
            warnings.push(format!("skipped `{}`: {reason}", f.path));
        }
    }
    match data.as_slice() {
        [] => {}
        [one] => warnings.push(format!("skipped `{one}`: not valid UTF-8 (a data folder)")),
        [first, ..] => warnings.push(format!(
            "skipped {} files in seed, corpus and snapshot folders that are not valid UTF-8 (`{first}`, …)",
            data.len()
        )),
    }
    warnings
}
