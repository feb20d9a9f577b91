//! Retrieval: what the query asks for (under `repair`, with what its error output names), the
//! BM25 hits of its terms and the users of the symbols it names, with the blocks of keys and
//! the values the pack does not hold read through the source: every block in one round, then
//! every value in one more.

use std::borrow::Cow;

use crate::index::IndexPack;
use crate::index::references::name_key;
use crate::intent::{QueryAnalysis, analyze, entities};
use crate::lexical::{Searched, query_terms, widen_question};
use crate::lists::{Found, ListError, ListId, ListKind};
use crate::profile::Profile;
use crate::rank::is_question;

use super::{AssembleError, ChunkSource, Halt, QueryOptions};

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

/// The terms to search for `query`, whose search text is `search_text` ([`understood`]): its
/// own terms, and for a question the code words its English words stand for
/// ([`widen_question`]).
pub(super) fn search_terms(query: &str, search_text: &str) -> Vec<(String, u16)> {
    let terms = query_terms(search_text);
    if is_question(query) {
        widen_question(&terms)
    } else {
        terms
    }
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

/// The values (or blocks) `ids` the pack keeps in segments, from `source`; the ones it lacks
/// make one [`Halt::Needs`].
pub(super) fn fetched_lists<'s>(
    pack: &IndexPack,
    source: &'s dyn ChunkSource,
    ids: impl IntoIterator<Item = ListId>,
) -> Result<FetchedLists<'s>, Halt> {
    let mut ids: Vec<ListId> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut fetched = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        if !pack.must_read(id) {
            continue;
        }
        match source.list(pack, id)? {
            Some(bytes) => fetched.push((id, bytes)),
            None => missing.push(id),
        }
    }
    if missing.is_empty() {
        Ok(fetched)
    } else {
        Err(Halt::lists(missing))
    }
}

/// Both results, or the failure of either; the reads both lack make one [`Halt::Needs`], so a
/// host reads them in one round.
fn both<A, B>(a: Result<A, Halt>, b: Result<B, Halt>) -> Result<(A, B), Halt> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(Halt::Needs(mut a)), Err(Halt::Needs(b))) => {
            a.add(b);
            Err(Halt::Needs(a))
        }
        (Err(e @ Halt::Failed(_)), _) | (_, Err(e @ Halt::Failed(_))) => Err(e),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

/// `keys` among the lists of `kind`, with the blocks of keys the pack keeps in segments read
/// through `source`.
fn find_keys(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    kind: ListKind,
    keys: &[&str],
) -> Result<Vec<Option<Found>>, Halt> {
    let lists = pack.lists(kind);
    let blocks_kind = kind.key_blocks().unwrap_or(kind);
    let block_id = |key: u32| ListId {
        kind: blocks_kind,
        key,
        at: None,
    };
    let ids = keys.iter().filter_map(|k| lists.block_for(k)).map(block_id);
    let fetched = fetched_lists(pack, source, ids)?;
    let block = |b: u32| fetched.iter().find(|f| f.0.key == b).map(|f| &*f.1);
    keys.iter()
        .map(|k| {
            lists.find_in(k, &block).map_err(|e| match e {
                ListError::BlocksNeeded(b) => Halt::lists(b.into_iter().map(block_id).collect()),
                ListError::Block { block } => {
                    AssembleError::Source(format!("{} does not decode", block_id(block))).into()
                }
                e => AssembleError::Source(e.to_string()).into(),
            })
        })
        .collect()
}

/// The values of the keys `found` among the lists of `kind` the pack keeps in segments, from
/// `source`.
fn fetched_values<'s>(
    pack: &IndexPack,
    source: &'s dyn ChunkSource,
    kind: ListKind,
    found: &[Option<Found>],
) -> Result<FetchedLists<'s>, Halt> {
    let lists = pack.lists(kind);
    let ids = found
        .iter()
        .flatten()
        .filter(|f| lists.must_read_found(f))
        .map(|f| lists.id(kind, f));
    fetched_lists(pack, source, ids)
}

/// The most BM25 hits ranking considers. A common word matches tens of thousands of chunks of
/// a large repository (22.7k for a 32k query on an 88M-token one), and every later step —
/// ranking's signals, diversity, the candidates' order — went over all of them; far fewer
/// than this can ever be chosen, and a chunk named by a symbol, a path or a mention is a
/// candidate whatever its BM25 rank.
pub const MAX_LEXICAL_HITS: usize = 4096;

/// What retrieval found for a query.
pub(super) struct Retrieved {
    /// The best [`MAX_LEXICAL_HITS`] BM25 hits.
    pub hits: Vec<(u32, f32)>,
    /// The query's terms the index holds, with their idf, in query order.
    pub term_idf: Vec<(String, f32)>,
    /// The users of each symbol the request names, for the reference signal (none when its
    /// weight is 0).
    pub named: Vec<(String, Vec<u32>)>,
}

/// The BM25 hits of `terms` and the users of the symbols `analysis` names, with the blocks of
/// keys and the values the pack does not hold taken from `source`: what it lacks makes one
/// [`Halt::Needs`] for the blocks of every term and name, then one for their values.
pub(super) fn retrieve(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    terms: &[(String, u16)],
    analysis: &QueryAnalysis,
    options: &QueryOptions,
) -> Result<Retrieved, Halt> {
    let names = if options.weights.reference == 0.0 {
        Vec::new()
    } else {
        crate::rank::named_symbols(analysis)
    };
    let name_keys: Vec<String> = names.iter().map(|n| name_key(n)).collect();
    let term_keys: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
    let name_keys: Vec<&str> = name_keys.iter().map(String::as_str).collect();
    let overlay = pack.overlay.as_deref();
    // A version opened from a base and a delta looks every key up in both, in the same rounds.
    let delta_keys = |kind: ListKind, keys: &[&str]| match overlay {
        Some(_) => find_keys(pack, source, kind.in_delta(), keys),
        None => Ok(vec![None; keys.len()]),
    };
    let ((terms_found, names_found), (delta_terms, delta_names)) = both(
        both(
            find_keys(pack, source, ListKind::Postings, &term_keys),
            find_keys(pack, source, ListKind::References, &name_keys),
        ),
        both(
            delta_keys(ListKind::Postings, &term_keys),
            delta_keys(ListKind::References, &name_keys),
        ),
    )?;
    let ((postings, users), (delta_postings, delta_users)) = both(
        both(
            fetched_values(pack, source, ListKind::Postings, &terms_found),
            fetched_values(pack, source, ListKind::References, &names_found),
        ),
        both(
            fetched_values(pack, source, ListKind::DeltaPostings, &delta_terms),
            fetched_values(pack, source, ListKind::DeltaReferences, &delta_names),
        ),
    )?;
    let (searched, term_idf) = search_found(
        pack,
        terms,
        (&terms_found, &delta_terms),
        (&postings, &delta_postings),
        options,
    )?;
    let term_idf = term_idf
        .iter()
        .zip(terms)
        .filter(|(held, _)| **held)
        .zip(searched.idf)
        .map(|((_, t), idf)| (t.0.clone(), idf))
        .collect();
    let external = |k: u32| users.iter().find(|f| f.0.key == k).map(|f| &*f.1);
    let delta_external = |k: u32| delta_users.iter().find(|f| f.0.key == k).map(|f| &*f.1);
    let named = names
        .into_iter()
        .zip(name_keys.iter().zip(names_found.iter().zip(&delta_names)))
        .map(|(name, (key, (found, delta)))| {
            let base = match found {
                None => Vec::new(),
                Some(f) => pack
                    .references
                    .users_of(f, &external)
                    .map_err(|k| needed(pack, ListKind::References, vec![k], &names_found))?,
            };
            let Some(o) = overlay else {
                return Ok((name, base));
            };
            let delta = match delta {
                None => Vec::new(),
                Some(f) => crate::index::References::users_in(&o.references, f, &delta_external)
                    .map_err(|k| needed(pack, ListKind::DeltaReferences, vec![k], &delta_names))?,
            };
            Ok((name, o.users(key, base, delta, pack.chunks.len())))
        })
        .collect::<Result<_, Halt>>()?;
    Ok(Retrieved {
        hits: searched.hits,
        term_idf,
        named,
    })
}

/// List keys `keys` of `kind` that a lookup found missing, among the keys `found`: one
/// [`Halt::Needs`] for their values.
fn needed(pack: &IndexPack, kind: ListKind, keys: Vec<u32>, found: &[Option<Found>]) -> Halt {
    let lists = pack.lists(kind);
    Halt::lists(
        found
            .iter()
            .flatten()
            .filter(|f| keys.contains(&f.key))
            .map(|f| lists.id(kind, f))
            .collect(),
    )
}

/// The BM25 hits of `terms`, whose keys were `found` in the base and in a version's delta,
/// with the values read from segments for each; and, for each term, whether the version holds
/// it (a term only dropped chunks held is not in the version).
fn search_found(
    pack: &IndexPack,
    terms: &[(String, u16)],
    (terms_found, delta_terms): (&[Option<Found>], &[Option<Found>]),
    (postings, delta_postings): (&FetchedLists<'_>, &FetchedLists<'_>),
    options: &QueryOptions,
) -> Result<(Searched, Vec<bool>), Halt> {
    let external = |t: u32| postings.iter().find(|f| f.0.key == t).map(|f| &*f.1);
    match pack.overlay.as_deref() {
        None => {
            let searched: Vec<(Found, u16)> = terms_found
                .iter()
                .zip(terms)
                .filter_map(|(f, t)| Some(((*f)?, t.1)))
                .collect();
            let searched = pack
                .lexical
                .search_found(&searched, options.bm25, &external, MAX_LEXICAL_HITS)
                .map_err(|e| match e {
                    ListError::Needed(keys) => needed(pack, ListKind::Postings, keys, terms_found),
                    e => AssembleError::Source(e.to_string()).into(),
                })?;
            let held: Vec<bool> = terms_found.iter().map(Option::is_some).collect();
            Ok((searched, held))
        }
        Some(o) => {
            let delta_external =
                |t: u32| delta_postings.iter().find(|f| f.0.key == t).map(|f| &*f.1);
            let mut layered = Vec::new();
            let mut held = Vec::new();
            for ((base, delta), t) in terms_found.iter().zip(delta_terms).zip(terms) {
                let mut layers = Vec::new();
                if let Some(f) = base {
                    let bytes = pack
                        .lexical
                        .lists()
                        .value_of(f, &external)
                        .map_err(|k| needed(pack, ListKind::Postings, vec![k], terms_found))?;
                    layers.push(o.base_layer(bytes));
                }
                if let Some(f) = delta {
                    let bytes = o
                        .postings
                        .value_of(f, &delta_external)
                        .map_err(|k| needed(pack, ListKind::DeltaPostings, vec![k], delta_terms))?;
                    layers.push(crate::lexical::LayerPostings { bytes, map: None });
                }
                held.push(!layers.is_empty());
                if !layers.is_empty() {
                    layered.push((t.1, layers));
                }
            }
            let (searched, live) =
                pack.lexical
                    .search_layers(&layered, options.bm25, MAX_LEXICAL_HITS);
            // A term only dropped chunks held is not in the version.
            let mut live = live.into_iter();
            for h in held.iter_mut().filter(|h| **h) {
                *h = live.next().unwrap_or(false);
            }
            Ok((searched, held))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexical::{Bm25Builder, Bm25Params, query_terms};

    /// Lists kept in memory as the segments of a pack whose lists all begin at segment 0,
    /// holding only the ids fetched so far, as a host that reads by range does.
    struct Parts {
        parts: Vec<Vec<u8>>,
        fetched: Vec<ListId>,
    }

    impl ChunkSource for Parts {
        fn text(&self, _: &IndexPack, _: usize) -> Result<Option<String>, AssembleError> {
            Ok(None)
        }

        fn list(
            &self,
            pack: &IndexPack,
            id: ListId,
        ) -> Result<Option<Cow<'_, [u8]>>, AssembleError> {
            if !self.fetched.contains(&id) {
                return Ok(None);
            }
            let lists = pack.lists(id.kind);
            let r = lists.range_of(&id).expect("stored");
            let part = &self.parts[r.segment as usize];
            let bytes = &part[r.start as usize..(r.start + r.len) as usize];
            lists
                .verify_of(&id, bytes)
                .map_err(|e| AssembleError::Source(e.to_string()))?;
            Ok(Some(Cow::Owned(bytes.to_vec())))
        }
    }

    #[test]
    fn both_asks_for_what_either_lacks_in_one_round_and_a_failure_wins() {
        let lists = |key| {
            Halt::lists(vec![ListId {
                kind: ListKind::Postings,
                key,
                at: None,
            }])
        };
        let failed = || Err(Halt::Failed(AssembleError::EmptyQuery));
        match both::<(), ()>(Err(lists(1)), Err(lists(2))) {
            Err(Halt::Needs(n)) => {
                let keys: Vec<u32> = n.lists.iter().map(|l| l.key).collect();
                assert_eq!(keys, [1, 2]);
            }
            other => panic!("{other:?}"),
        }
        for (a, b) in [(Err(lists(1)), failed()), (failed(), Err(lists(1)))] {
            assert!(matches!(
                both::<(), ()>(a, b),
                Err(Halt::Failed(AssembleError::EmptyQuery))
            ));
        }
        assert!(matches!(
            both(Ok(()), Err::<(), _>(lists(1))),
            Err(Halt::Needs(_))
        ));
        assert!(matches!(both(Ok(1), Ok(2)), Ok((1, 2))));
    }

    /// 600 documents: each its own word, one word in every tenth, one in every.
    fn pack() -> IndexPack {
        let mut b = Bm25Builder::default();
        for i in 0..600u32 {
            let mut terms = vec![(format!("w{i:03}"), 1), ("every".to_string(), 2)];
            if i % 10 == 0 {
                terms.push(("tenth".to_string(), 1));
            }
            terms.sort();
            b.add(&terms);
        }
        IndexPack {
            lexical: b.finish(Bm25Params::default()),
            ..crate::index::tests::tiny()
        }
    }

    #[test]
    fn terms_in_blocks_are_read_block_first_and_score_the_same() {
        let whole = pack();
        let mut split = pack();
        let parts = split.lexical.split_postings(512, 0, 0);
        assert!(split.lexical.lists().keys_stored());
        let terms = query_terms("w001 w599 tenth every nowhere");
        let analysis = crate::intent::analyze("w001 w599 tenth every nowhere");
        let options = QueryOptions::default();
        let mut source = Parts {
            parts,
            fetched: Vec::new(),
        };
        let mut rounds: Vec<Vec<ListId>> = Vec::new();
        let got = loop {
            match retrieve(&split, &source, &terms, &analysis, &options) {
                Err(Halt::Needs(n)) if rounds.len() < 3 => {
                    assert!(n.texts.is_empty(), "retrieval reads no text");
                    source.fetched.extend(&n.lists);
                    rounds.push(n.lists);
                }
                other => break other.unwrap(),
            }
        };
        // First every block the terms fall in (named by block), then every value.
        assert_eq!(rounds.len(), 2, "{rounds:?}");
        let lists = split.lexical.lists();
        let mut blocks: Vec<u32> = terms.iter().filter_map(|t| lists.block_for(&t.0)).collect();
        blocks.sort_unstable();
        blocks.dedup();
        assert!(blocks.len() > 1, "the terms fall in several blocks");
        assert!(
            rounds[0]
                .iter()
                .all(|id| id.kind == ListKind::PostingsKeys && id.at.is_none())
        );
        let named: Vec<u32> = rounds[0].iter().map(|id| id.key).collect();
        assert_eq!(named, blocks);
        assert!(
            rounds[1]
                .iter()
                .all(|id| id.kind == ListKind::Postings && id.at.is_some())
        );
        let expected = retrieve(&whole, &source, &terms, &analysis, &options).unwrap();
        assert_eq!(
            rounds[1].len(),
            expected.term_idf.len(),
            "the terms the index holds"
        );
        assert!(expected.term_idf.len() >= 3, "{terms:?}");
        assert_eq!(got.hits, expected.hits);
        assert_eq!(got.term_idf, expected.term_idf);
    }

    #[test]
    fn a_damaged_block_is_refused_naming_it() {
        let mut split = pack();
        let mut parts = split.lexical.split_postings(512, 0, 0);
        let terms = query_terms("w001");
        let lists = split.lexical.lists();
        let b = lists.block_for("w001").unwrap();
        let r = lists.block_index().range(b).unwrap();
        parts[r.segment as usize][r.start as usize] ^= 1;
        let id = ListId {
            kind: ListKind::PostingsKeys,
            key: b,
            at: None,
        };
        let source = Parts {
            parts,
            fetched: vec![id],
        };
        let analysis = crate::intent::analyze("w001");
        let err = retrieve(&split, &source, &terms, &analysis, &QueryOptions::default())
            .err()
            .unwrap();
        assert!(
            matches!(err, Halt::Failed(AssembleError::Source(ref m)) if m.contains("checksum")),
            "{err:?}"
        );
    }

    /// Lists read by range from segments by their number in the version (a merged version's
    /// delta lists numbered after the base's), every id served.
    struct Segments(Ranges);

    impl ChunkSource for Segments {
        fn text(&self, _: &IndexPack, _: usize) -> Result<Option<String>, AssembleError> {
            Ok(None)
        }

        fn list(
            &self,
            pack: &IndexPack,
            id: ListId,
        ) -> Result<Option<Cow<'_, [u8]>>, AssembleError> {
            let r = pack.list_range(id).expect("stored");
            let part = &self.0[&r.segment];
            let bytes = &part[r.start as usize..(r.start + r.len) as usize];
            pack.verify_list(id, bytes)
                .map_err(|e| AssembleError::Source(e.to_string()))?;
            Ok(Some(Cow::Owned(bytes.to_vec())))
        }
    }

    type Ranges = std::collections::BTreeMap<u32, Vec<u8>>;

    /// Moves `pack`'s postings and references to segments after its own (their bytes by their
    /// number in a version whose first `offset` segments are another pack's).
    fn split_lists(pack: &mut IndexPack, offset: u32) -> Ranges {
        let first = pack.segments.len() as u32;
        let mut parts = pack.lexical.split_postings(64, 0, first);
        let next = first + parts.len() as u32;
        parts.extend(pack.references.split(64, 0, next));
        pack.segments
            .resize(first as usize + parts.len(), "list".into());
        parts
            .into_iter()
            .enumerate()
            .map(|(k, p)| (offset + first + k as u32, p))
            .collect()
    }

    /// Retrieval over `pack`, reading what it lacks from `source` round by round.
    fn retrieved(pack: &IndexPack, source: &Segments, query: &str) -> Retrieved {
        let terms = query_terms(query);
        let analysis = crate::intent::analyze(query);
        retrieve(pack, source, &terms, &analysis, &QueryOptions::default()).unwrap()
    }

    #[test]
    fn a_version_in_layers_retrieves_what_the_whole_version_does() {
        use crate::index::delta::{merge, tests::layered};
        let queries = [
            "alpha_3 parse config",
            "fn render_12() token",
            "beta gamma delta",
            "why does parse_7 call config_2",
        ];
        let mut hits = 0;
        for seed in 0..30 {
            for split in [false, true] {
                let (mut base, mut delta, mut next) = layered(seed, 14);
                let mut parts = Ranges::new();
                let mut whole_parts = Ranges::new();
                if split {
                    // Every list in segments, keys in blocks: read by range, the delta's after
                    // the base's.
                    parts = split_lists(&mut base, 0);
                    let base_segments = base.segments.len() as u32;
                    parts.extend(split_lists(&mut delta, base_segments));
                    whole_parts = split_lists(&mut next, 0);
                }
                let merged = merge(base, delta).unwrap();
                for q in queries {
                    let got = retrieved(&merged, &Segments(parts.clone()), q);
                    let want = retrieved(&next, &Segments(whole_parts.clone()), q);
                    assert_eq!(got.hits, want.hits, "seed {seed} split {split} {q}");
                    assert_eq!(got.term_idf, want.term_idf, "seed {seed} {q}");
                    assert_eq!(got.named, want.named, "seed {seed} {q}");
                    hits += got.hits.len() + got.named.iter().map(|n| n.1.len()).sum::<usize>();
                }
            }
        }
        assert!(hits > 1000, "the queries find something: {hits}");
    }
}
