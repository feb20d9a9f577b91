//! Retrieval: what the query asks for (under `repair`, with what its error output names), and
//! the BM25 hits of its terms, with the postings the pack does not hold read through the source.

use crate::index::IndexPack;
use crate::intent::{QueryAnalysis, analyze, entities};
use crate::lexical::PostingsError;
use crate::profile::Profile;

use super::{AssembleError, ChunkSource, QueryOptions};

/// `repair` answers an error output, so it cannot go without one (trimmed, not empty); the
/// other profiles ignore it.
pub(super) fn error_output(
    profile: Profile,
    options: &QueryOptions,
) -> Result<Option<&str>, AssembleError> {
    Ok(match profile {
        Profile::Repair => Some(
            options
                .error_output
                .as_deref()
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .ok_or(AssembleError::ErrorOutputMissing)?,
        ),
        _ => None,
    })
}

/// The query's intent and the text to search: under `repair`, what the error output names is
/// searched and ranked like the query's own, so its entities merge into both.
pub(super) fn understood(query: &str, error_output: Option<&str>) -> (QueryAnalysis, String) {
    let mut intent = analyze(query);
    let mut search_text = query.to_string();
    if let Some(e) = error_output {
        let found = entities(e);
        let named = &mut intent.entities;
        for s in found.strings.iter().chain(&found.symbols) {
            search_text.push('\n');
            search_text.push_str(s);
        }
        for (to, from) in [
            (&mut named.paths, found.paths),
            (&mut named.symbols, found.symbols),
            (&mut named.strings, found.strings),
        ] {
            for x in from {
                if !to.contains(&x) {
                    to.push(x);
                }
            }
        }
        for f in found.frames {
            if !named.frames.contains(&f) {
                named.frames.push(f);
            }
        }
    }
    (intent, search_text)
}

/// Paths the client has open or recently edited count as mentioned.
pub(super) fn add_hot_paths(intent: &mut QueryAnalysis, options: &QueryOptions) {
    for p in &options.hot_paths {
        if !intent.entities.paths.contains(p) {
            intent.entities.paths.push(p.clone());
        }
    }
}

/// BM25 hits of `terms`, with the postings the pack does not hold taken from `source`; the
/// terms it lacks make one [`AssembleError::PostingsNeeded`].
pub(super) fn search(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    terms: &[(String, u16)],
    options: &QueryOptions,
) -> Result<Vec<(u32, f32)>, AssembleError> {
    let mut fetched = Vec::new();
    let mut missing = Vec::new();
    for t in pack.lexical.stored_terms(terms) {
        match source.postings(pack, t) {
            Ok(bytes) => fetched.push((t, bytes)),
            Err(AssembleError::PostingsNeeded(more)) => missing.extend(more),
            Err(e) => return Err(e),
        }
    }
    if !missing.is_empty() {
        return Err(AssembleError::PostingsNeeded(missing));
    }
    let external = |t: u32| fetched.iter().find(|f| f.0 == t).map(|f| &*f.1);
    pack.lexical
        .search_with(terms, options.bm25, &external)
        .map_err(|e| match e {
            PostingsError::Needed(terms) => AssembleError::PostingsNeeded(terms),
            e => AssembleError::Source(e.to_string()),
        })
}
