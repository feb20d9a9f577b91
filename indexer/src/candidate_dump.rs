//! `CTXGATE_DUMP_CANDIDATES=<file>`: every candidate of an `assemble` call with its signals,
//! written as one JSON object, for fitting the ranking weights offline
//! (`scripts/learn-fusion.sh`). A tuning aid like `CTXGATE_RANK_WEIGHTS`, not a supported
//! setting; the prompt is assembled as usual.

use std::path::PathBuf;

use ctxgate_core::assemble::features::candidate_features;
use ctxgate_core::assemble::{ChunkSource, QueryOptions};
use ctxgate_core::index::IndexPack;
use ctxgate_core::rank::Signals;
use serde::Serialize;

use crate::IndexerError;

/// The file the candidates go to, when asked.
pub fn requested() -> Option<PathBuf> {
    std::env::var_os("CTXGATE_DUMP_CANDIDATES")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// What the dump holds: the candidates by their lines, so a script can join them with gold
/// line ranges without reading the index.
#[derive(Serialize)]
struct Dump<'a> {
    wants_tests: bool,
    wants_docs: bool,
    candidates: Vec<Row<'a>>,
}

#[derive(Serialize)]
struct Row<'a> {
    path: &'a str,
    start_line: u32,
    end_line: u32,
    tokens: u32,
    test: bool,
    doc: bool,
    score: f32,
    signals: Signals,
    /// The learned ranker's input for it (`scripts/fusion/ltr.py` checks its own against it).
    features: &'a [f32; 19],
}

/// Ranks `query` and writes every candidate to `to`.
pub fn write(
    to: &PathBuf,
    pack: &IndexPack,
    source: &dyn ChunkSource,
    query: &str,
    options: &QueryOptions,
) -> Result<(), IndexerError> {
    let features = candidate_features(pack, source, query, options)?;
    let candidates = features
        .candidates
        .iter()
        .filter_map(|c| {
            let chunk = pack.chunks.get(c.chunk as usize)?;
            let file = pack.files.get(chunk.file as usize)?;
            Some(Row {
                path: &file.path,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                tokens: chunk.tokens.first().copied().unwrap_or(0),
                test: c.test_file,
                doc: c.doc_file,
                score: c.score,
                signals: c.signals,
                features: &c.trees_input,
            })
        })
        .collect();
    let dump = Dump {
        wants_tests: features.wants_tests,
        wants_docs: features.wants_docs,
        candidates,
    };
    let json = serde_json::to_vec(&dump)
        .map_err(|e| IndexerError::Corrupt(format!("candidate dump: {e}")))?;
    std::fs::write(to, json).map_err(|source| IndexerError::Io {
        action: "write the candidate dump",
        path: to.clone(),
        source,
    })
}
