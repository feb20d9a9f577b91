//! Retrieval: what the query asks for (under `repair`, with what its error output names), and
//! the BM25 hits of its terms, with the postings the pack does not hold read through the source.

use std::borrow::Cow;

use crate::index::IndexPack;
use crate::index::lists::{ListError, ListId, ListKind};
use crate::intent::{QueryAnalysis, analyze, entities};
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

/// Lists read from segments, each with its id; borrowed from the source where it can.
pub(super) type FetchedLists<'s> = Vec<(ListId, Cow<'s, [u8]>)>;

/// The values of `ids` the pack keeps in segments, from `source`; the ones it lacks make one
/// [`AssembleError::ListsNeeded`].
pub(super) fn fetched_lists<'s>(
    pack: &IndexPack,
    source: &'s dyn ChunkSource,
    ids: impl IntoIterator<Item = ListId>,
) -> Result<FetchedLists<'s>, AssembleError> {
    let mut fetched = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        if !pack.must_read(id) {
            continue;
        }
        match source.list(pack, id) {
            Ok(bytes) => fetched.push((id, bytes)),
            Err(AssembleError::ListsNeeded(more)) => missing.extend(more),
            Err(e) => return Err(e),
        }
    }
    if missing.is_empty() {
        Ok(fetched)
    } else {
        Err(AssembleError::ListsNeeded(missing))
    }
}

/// The most BM25 hits ranking considers. A common word matches tens of thousands of chunks of
/// a large repository (22.7k for a 32k query on an 88M-token one), and every later step —
/// ranking's signals, diversity, the candidates' order — went over all of them; far fewer
/// than this can ever be chosen, and a chunk named by a symbol, a path or a mention is a
/// candidate whatever its BM25 rank.
pub const MAX_LEXICAL_HITS: usize = 4096;

/// The best [`MAX_LEXICAL_HITS`] BM25 hits of `terms`, with the postings the pack does not
/// hold taken from `source`; the terms it lacks make one [`AssembleError::ListsNeeded`].
pub(super) fn search(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    terms: &[(String, u16)],
    options: &QueryOptions,
) -> Result<Vec<(u32, f32)>, AssembleError> {
    let ids = pack
        .lexical
        .stored_terms(terms)
        .into_iter()
        .map(|key| ListId {
            kind: ListKind::Postings,
            key,
        });
    let fetched = fetched_lists(pack, source, ids)?;
    let external = |t: u32| fetched.iter().find(|f| f.0.key == t).map(|f| &*f.1);
    pack.lexical
        .search_with(terms, options.bm25, &external, MAX_LEXICAL_HITS)
        .map_err(|e| match e {
            ListError::Needed(terms) => AssembleError::ListsNeeded(
                terms
                    .into_iter()
                    .map(|key| ListId {
                        kind: ListKind::Postings,
                        key,
                    })
                    .collect(),
            ),
            e => AssembleError::Source(e.to_string()),
        })
}

/// The users of each symbol the request names, for the reference signal (none when its weight
/// is 0), with the lists the pack keeps in segments taken from `source`.
pub(super) fn named_users(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    analysis: &QueryAnalysis,
    options: &QueryOptions,
) -> Result<Vec<(String, Vec<u32>)>, AssembleError> {
    if options.weights.reference == 0.0 {
        return Ok(Vec::new());
    }
    let names = crate::rank::named_symbols(analysis);
    let refs = &pack.references;
    let ids = names
        .iter()
        .filter_map(|n| refs.name_id(n))
        .map(|key| ListId {
            kind: ListKind::References,
            key,
        });
    let fetched = fetched_lists(pack, source, ids)?;
    let external = |k: u32| fetched.iter().find(|f| f.0.key == k).map(|f| &*f.1);
    names
        .into_iter()
        .map(|name| match refs.users_with(&name, &external) {
            Ok(users) => Ok((name, users)),
            Err(key) => Err(AssembleError::ListsNeeded(vec![ListId {
                kind: ListKind::References,
                key,
            }])),
        })
        .collect()
}
