//! Reading the walked files: each one is reused from the previous version (same stat, or same
//! content hash), skipped with a reason, or redacted, chunked and counted afresh.

use std::collections::HashMap;
use std::path::Path;
use std::time::UNIX_EPOCH;

use ctxgate_core::chunk::{ChunkSpan, FileClass, Language, chunk_redacted, chunk_text, classify};
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::{ChunkRecord, FileEntry, FileStat, IndexPack, chunk_id};
use ctxgate_core::summary::file::{Extract, extract};
use rayon::prelude::*;

use super::{IndexOptions, Progress};
use crate::walk::walk;

pub(super) enum Outcome {
    /// Same as before (index into the previous pack's files), possibly with a new stat.
    Reused { prev: usize, stat: FileStat },
    /// Read, and not chunked.
    Skipped { entry: FileEntry },
    /// Read and chunked.
    Fresh {
        entry: FileEntry,
        chunks: Vec<NewChunk>,
        extract: Extract,
    },
    /// Unreadable: left out with a warning.
    Failed { warning: String },
}

pub(super) struct NewChunk {
    pub(super) record: ChunkRecord,
    pub(super) text: String,
}

/// Walks `root` and reads every file it finds (in parallel), against `prev`'s files when the
/// previous version is reusable. Walk warnings and unreadable files go to `warnings`.
pub(super) fn scan(
    root: &Path,
    prev: Option<&IndexPack>,
    opts: &IndexOptions,
    data_dir: &Path,
    progress: &dyn Progress,
    warnings: &mut Vec<String>,
) -> Vec<(String, Outcome)> {
    let prev_by_path: HashMap<&str, usize> = prev
        .map(|p| {
            p.files
                .iter()
                .enumerate()
                .map(|(i, f)| (f.path.as_str(), i))
                .collect()
        })
        .unwrap_or_default();
    let (found, walk_warnings) = walk(root, &opts.walk);
    warnings.extend(walk_warnings);
    progress.start(found.len() as u64);
    let outcomes: Vec<(String, Outcome)> = found
        .par_iter()
        .map(|f| {
            let prev = prev_by_path
                .get(f.rel.as_str())
                .and_then(|&i| prev.map(|p| (i, p)));
            let outcome = process_file(&f.rel, &f.abs, prev, opts, data_dir);
            progress.advance();
            (f.rel.clone(), outcome)
        })
        .collect();
    progress.finish();
    for (_, o) in &outcomes {
        if let Outcome::Failed { warning } = o {
            warnings.push(warning.clone());
        }
    }
    outcomes
}

/// Whether the scan found anything that a new version must hold, and how many files it reused.
pub(super) struct Change {
    /// A new version is needed.
    pub changed: bool,
    /// Files reused from the previous version.
    pub reused: usize,
}

/// Compares the scan with the previous version (`prev` when reusable; `had_previous` whether
/// there was one at all). `summarize_with` is the summarizer asked for when it is a model: a
/// model must summarize the unchanged files it has not summarized yet.
pub(super) fn change(
    outcomes: &[(String, Outcome)],
    had_previous: bool,
    prev: Option<&IndexPack>,
    summarize_with: Option<&str>,
) -> Change {
    let mut changed = !had_previous || prev.is_none();
    let mut reused = 0usize;
    for (_, o) in outcomes {
        match o {
            Outcome::Reused { .. } => reused += 1,
            Outcome::Fresh { .. } | Outcome::Skipped { .. } => changed = true,
            Outcome::Failed { .. } => {}
        }
    }
    if let Some(p) = prev
        && reused != p.files.len()
    {
        changed = true; // files were removed or became unreadable
    }
    if let (Some(p), Some(wanted)) = (prev, summarize_with) {
        changed |= outcomes.iter().any(|(_, o)| match o {
            Outcome::Reused { prev, .. } => {
                p.files[*prev].chunk_count > 0
                    && p.summaries
                        .file(*prev as u32)
                        .is_none_or(|(_, s)| s.origin != wanted)
            }
            _ => false,
        });
    }
    Change { changed, reused }
}

fn stat_of(meta: &std::fs::Metadata) -> FileStat {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    #[cfg(unix)]
    let (ctime_ns, inode) = {
        use std::os::unix::fs::MetadataExt;
        (meta.ctime() * 1_000_000_000 + meta.ctime_nsec(), meta.ino())
    };
    #[cfg(not(unix))]
    let (ctime_ns, inode) = (0, 0);
    FileStat {
        size: meta.len(),
        mtime_ns,
        ctime_ns,
        inode,
    }
}

/// Two seconds: files modified this close to (or after) the previous indexing are re-hashed,
/// since their stat may not show a change made in the same instant.
const RACY_NS: i64 = 2_000_000_000;

fn process_file(
    rel: &str,
    abs: &Path,
    prev: Option<(usize, &IndexPack)>,
    opts: &IndexOptions,
    data_dir: &Path,
) -> Outcome {
    let meta = match std::fs::metadata(abs) {
        Ok(m) => m,
        Err(e) => {
            return Outcome::Failed {
                warning: format!("skipped `{rel}`: cannot read metadata: {e}"),
            };
        }
    };
    let stat = stat_of(&meta);
    if let Some((i, pack)) = prev {
        let f = &pack.files[i];
        if f.stat == stat && stat.mtime_ns.max(stat.ctime_ns) < pack.meta.indexed_at_ns - RACY_NS {
            return Outcome::Reused { prev: i, stat };
        }
    }
    let language = Language::from_path(rel);
    let label = language.label(rel);
    let skipped_entry = |sha, reason: String| FileEntry {
        path: rel.to_string(),
        sha256: sha,
        stat,
        language: label.as_str().into(),
        skipped: Some(reason),
        first_chunk: 0,
        chunk_count: 0,
    };
    if stat.size > opts.filter.max_file_bytes {
        let reason = format!(
            "too large ({} bytes > {})",
            stat.size, opts.filter.max_file_bytes
        );
        return Outcome::Skipped {
            entry: skipped_entry(Sha256Digest([0; 32]), reason),
        };
    }
    let bytes = match std::fs::read(abs) {
        Ok(b) => b,
        Err(e) => {
            return Outcome::Failed {
                warning: format!("skipped `{rel}`: cannot read: {e}"),
            };
        }
    };
    let sha = Sha256Digest::of(&bytes);
    if let Some((i, pack)) = prev
        && pack.files[i].sha256 == sha
    {
        return Outcome::Reused { prev: i, stat };
    }
    let class = classify(rel, &bytes, &opts.filter);
    if class != FileClass::Text {
        let reason = class.reason().unwrap_or_default();
        return Outcome::Skipped {
            entry: skipped_entry(sha, reason),
        };
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Outcome::Skipped {
            entry: skipped_entry(sha, "not valid UTF-8".into()),
        };
    };
    // Secrets are never stored, embedded or returned: chunks, counts and summaries are made
    // from the redacted text (same lines, so line numbers still point into the file).
    // Lines the redaction left blank are not blank lines a chunk may take in (it would cite
    // the secret's lines), so the chunker sees the original's blank lines too.
    let redacted = match ctxgate_core::secrets::redact_source(&text) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(redacted) => Some(redacted),
    };
    let (text, spans) = match redacted {
        None => {
            let spans = chunk_text(&text, language, &opts.chunk);
            (text, spans)
        }
        Some(redacted) => {
            let spans = chunk_redacted(&redacted, &text, language, &opts.chunk);
            (redacted, spans)
        }
    };
    // Tables are loaded only when something is counted: an unchanged re-index never pays.
    for &e in &opts.encodings {
        crate::token_tables::install(data_dir, e);
    }
    let extract = extract(rel, language, &text);
    let chunks = new_chunks(rel, &text, spans, opts);
    Outcome::Fresh {
        entry: FileEntry {
            path: rel.to_string(),
            sha256: sha,
            stat,
            language: label.into(),
            skipped: None,
            first_chunk: 0,
            chunk_count: 0,
        },
        chunks,
        extract,
    }
}

/// The chunks of `rel` that `spans` cut from `text`, each with its id (by content and its
/// ordinal among equal ones) and its token counts.
fn new_chunks(rel: &str, text: &str, spans: Vec<ChunkSpan>, opts: &IndexOptions) -> Vec<NewChunk> {
    let mut ordinals: HashMap<Sha256Digest, u32> = HashMap::new();
    spans
        .into_iter()
        .map(|s| {
            let body = &text[s.byte_start..s.byte_end];
            let csha = Sha256Digest::of(body.as_bytes());
            let ordinal = ordinals.entry(csha).or_insert(0);
            let id = chunk_id(rel, &csha, *ordinal);
            *ordinal += 1;
            NewChunk {
                record: ChunkRecord {
                    id,
                    file: 0,
                    kind: s.kind,
                    symbol: s.symbol.map(Into::into),
                    start_line: s.start_line,
                    end_line: s.end_line,
                    // `classify` refuses files of 4 GiB or more.
                    byte_start: u32::try_from(s.byte_start).unwrap_or(u32::MAX),
                    byte_end: u32::try_from(s.byte_end).unwrap_or(u32::MAX),
                    sha256: csha,
                    tokens: opts.encodings.iter().map(|e| e.count(body)).collect(),
                    segment: 0,
                    segment_offset: 0,
                },
                text: body.to_string(),
            }
        })
        .collect::<Vec<_>>()
}
