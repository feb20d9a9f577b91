//! A version as a base and a delta: the base version's pack, untouched, plus a small pack of
//! what changed, merged when a reader opens the version.
//!
//! Re-indexing one file of a large repository changes bytes all over a whole pack: a changed
//! file's terms reach postings lists across the dictionary, and a file or chunk more shifts
//! every later number. A delta keeps the base's objects as they are (nothing of them is
//! uploaded again) and carries only:
//!
//! - the files that are new or changed, with their chunks, in the delta pack's own tables;
//! - their postings and symbol users, keyed like the base's, but numbered as the merged
//!   version numbers its chunks;
//! - what else changed ([`DeltaFacts`]): the base files the version drops, the import-graph
//!   rows that differ, the directory summaries it drops, the symbol names no longer defined;
//!   the changed directory summaries and the project summary in its summaries; the files'
//!   recency, whole, in its recency.
//!
//! Opening merges the two ([`merge`]): the merged files and chunks are the base's kept ones and
//! the delta's, in path order — the tables a whole re-index would have built (but for the
//! stat of a file touched and not changed, kept as the base saw it) — and
//! the base's postings and users are read as before and mapped to the merged numbers
//! ([`Overlay`]), dropped chunks skipped, the delta's added. A term's document frequency counts
//! both layers' live postings, so BM25 scores as over the version built whole.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::references::defined_names;
use super::summaries::StoredSummaries;
use super::{ChunkRecord, FileEntry, IndexPack};
use crate::graph::ImportGraph;
use crate::lexical::{Bm25Index, LayerPostings, decode_postings, encode_postings};
use crate::lists::KeyedLists;
use crate::summary::{Summaries, Summary};

mod merge;

pub use merge::merge;

/// A dropped chunk or file in a base-to-merged map.
pub const DROPPED: u32 = u32::MAX;

/// What a delta pack changes in its base beyond its own files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaFacts {
    /// The version whose pack this one applies to.
    pub base_version: u64,
    /// Files of the merged version.
    pub files: u32,
    /// Chunks of the merged version.
    pub chunks: u32,
    /// The base's files the version does not keep (changed or deleted), by path, sorted.
    pub removed: Vec<String>,
    /// The base's directory summaries the version does not keep, by path, sorted.
    pub removed_dirs: Vec<String>,
    /// Symbol names the base defines and the version does not, sorted: their base users are
    /// not users any more.
    pub dropped_names: Vec<String>,
    /// Import-graph rows that differ from the base's, in the merged numbering, by file.
    pub graph_rows: Vec<(u32, Vec<u32>)>,
}

/// What a version opened from a base and a delta reads beyond its merged tables.
#[derive(Clone, Debug, PartialEq)]
pub struct Overlay {
    /// Base chunk → merged chunk ([`DROPPED`] for a chunk the version does not keep).
    pub base_chunks: Vec<u32>,
    /// The delta's postings (merged chunk numbers).
    pub postings: KeyedLists,
    /// The delta's symbol users (merged chunk numbers).
    pub references: KeyedLists,
    /// Names whose base users are not users any more, sorted.
    pub dropped_names: Vec<String>,
    /// The delta's segments are numbered after the base's.
    pub segment_offset: u32,
}

impl Overlay {
    /// The base's postings of a term as a layer of the merged version.
    pub fn base_layer<'a>(&'a self, bytes: &'a [u8]) -> LayerPostings<'a> {
        LayerPostings {
            bytes,
            map: Some(&self.base_chunks),
        }
    }

    /// The users of `name` (its key, [`super::references::name_key`]) in the merged version:
    /// the base's (mapped, unless the name is no longer defined) and the delta's.
    pub fn users(&self, name: &str, base: Vec<u32>, delta: Vec<u32>, chunks: usize) -> Vec<u32> {
        let mut out: Vec<u32> = if self
            .dropped_names
            .binary_search_by(|n| n.as_str().cmp(name))
            .is_ok()
        {
            Vec::new()
        } else {
            base.into_iter()
                .filter_map(|c| self.base_chunks.get(c as usize).copied())
                .filter(|&c| c != DROPPED)
                .collect()
        };
        out.extend(delta.into_iter().filter(|&c| (c as usize) < chunks));
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Whether `a` (the base's) and `b` (the version's) are the same file with the same chunks:
/// then the version keeps the base's records (and its texts, postings and users).
fn same_file(base: &IndexPack, a: &FileEntry, whole: &IndexPack, b: &FileEntry) -> bool {
    let same_entry = a.path == b.path
        && a.sha256 == b.sha256
        && a.language == b.language
        && a.skipped == b.skipped
        && a.chunk_count == b.chunk_count;
    same_entry && {
        let of = |p: &'_ IndexPack, f: &FileEntry| {
            let first = f.first_chunk as usize;
            p.chunks
                .get(first..first + f.chunk_count as usize)
                .map(<[ChunkRecord]>::to_vec)
                .unwrap_or_default()
        };
        let (x, y) = (of(base, a), of(whole, b));
        x.len() == y.len()
            && x.iter().zip(&y).all(|(c, d)| {
                c.id == d.id
                    && c.kind == d.kind
                    && c.symbol == d.symbol
                    && c.start_line == d.start_line
                    && c.end_line == d.end_line
                    && c.byte_start == d.byte_start
                    && c.byte_end == d.byte_end
                    && c.sha256 == d.sha256
                    && c.tokens == d.tokens
            })
    }
}

/// The base file each of the whole version's files is, when the version keeps it as it is (the
/// same entry, chunks and summary); `None` for the delta's files.
fn kept_files(
    base: &IndexPack,
    base_summaries: &Summaries,
    whole: &IndexPack,
    whole_summaries: &Summaries,
) -> Vec<Option<u32>> {
    let by_path: BTreeMap<&str, usize> = base
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), i))
        .collect();
    // A file whose summary was written again (another summarizer) is the delta's too.
    let summary_of = |s: &'_ Summaries| -> BTreeMap<u32, (String, String, Summary)> {
        s.files
            .iter()
            .map(|f| {
                let origin = f.origin.to_string();
                (f.file, (origin, f.line.clone(), f.summary.clone()))
            })
            .collect()
    };
    let (base_sums, whole_sums) = (summary_of(base_summaries), summary_of(whole_summaries));
    whole
        .files
        .iter()
        .enumerate()
        .map(|(f, w)| {
            let b = *by_path.get(w.path.as_str())?;
            let same = same_file(base, &base.files[b], whole, w)
                && base_sums.get(&(b as u32)) == whole_sums.get(&(f as u32));
            same.then_some(b as u32)
        })
        .collect()
}

/// Base file → merged file, from which whole file each kept base file is.
fn base_file_map(base_files: usize, kept: &[Option<u32>]) -> Vec<u32> {
    let mut map = vec![DROPPED; base_files];
    for (f, b) in kept.iter().enumerate() {
        if let Some(b) = b {
            map[*b as usize] = f as u32;
        }
    }
    map
}

/// Import-graph row `b` of the base, in merged numbers (targets dropped with their files).
fn mapped_row(graph: &ImportGraph, b: u32, file_map: &[u32]) -> Vec<u32> {
    let mut row: Vec<u32> = graph
        .imports
        .get(b as usize)
        .map(|r| {
            r.iter()
                .filter_map(|&t| file_map.get(t as usize).copied())
                .filter(|&t| t != DROPPED)
                .collect()
        })
        .unwrap_or_default();
    row.sort_unstable();
    row
}

/// The delta's own tables: its files and chunks, numbered locally, and their segments
/// renumbered; which of the whole version's chunks are the delta's; the whole version's file
/// numbers to the delta's.
struct DeltaTables {
    files: Vec<FileEntry>,
    chunks: Vec<ChunkRecord>,
    delta_chunk: Vec<bool>,
    local_file: BTreeMap<u32, u32>,
    segments: Vec<String>,
    doc_len: Vec<u32>,
}

/// The files of `whole` that `kept` does not map to a base file, with their chunks.
fn delta_tables(whole: &IndexPack, kept: &[Option<u32>]) -> Option<DeltaTables> {
    let mut files = Vec::new();
    let mut chunks = Vec::new();
    let mut delta_chunk = vec![false; whole.chunks.len()];
    let mut local_file = BTreeMap::new();
    let mut segment_of: BTreeMap<u32, u32> = BTreeMap::new();
    let mut segments = Vec::new();
    let mut doc_len = Vec::new();
    for (f, w) in whole.files.iter().enumerate() {
        if kept[f].is_some() {
            continue;
        }
        let local = files.len() as u32;
        local_file.insert(f as u32, local);
        let first = w.first_chunk as usize;
        let mut entry = w.clone();
        entry.first_chunk = chunks.len() as u32;
        for (i, c) in whole
            .chunks
            .get(first..first + w.chunk_count as usize)?
            .iter()
            .enumerate()
        {
            delta_chunk[first + i] = true;
            let mut c = c.clone();
            c.file = local;
            let next = segments.len() as u32;
            let seg = *segment_of.entry(c.segment).or_insert(next);
            if seg == next {
                segments.push(whole.segments.get(c.segment as usize)?.clone());
            }
            c.segment = seg;
            chunks.push(c);
            doc_len.push(*whole.lexical.doc_lens().get(first + i)?);
        }
        files.push(entry);
    }
    Some(DeltaTables {
        files,
        chunks,
        delta_chunk,
        local_file,
        segments,
        doc_len,
    })
}

/// The directories the delta drops, and its summaries: the delta's files', the directories
/// whose summary changed, the project's.
fn delta_summaries(
    base_summaries: &Summaries,
    whole_summaries: &Summaries,
    local_file: &BTreeMap<u32, u32>,
) -> (Vec<String>, Summaries) {
    let base_dirs: BTreeMap<&str, &Summary> = base_summaries
        .dirs
        .iter()
        .map(|d| (d.path.as_str(), &d.summary))
        .collect();
    let whole_dirs: HashSet<&str> = whole_summaries
        .dirs
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    let removed_dirs = base_dirs
        .keys()
        .filter(|p| !whole_dirs.contains(*p))
        .map(|p| (*p).to_owned())
        .collect();
    let summaries = Summaries {
        files: whole_summaries
            .files
            .iter()
            .filter_map(|s| {
                let mut s = s.clone();
                s.file = *local_file.get(&s.file)?;
                Some(s)
            })
            .collect(),
        dirs: whole_summaries
            .dirs
            .iter()
            .filter(|d| base_dirs.get(d.path.as_str()) != Some(&&d.summary))
            .cloned()
            .collect(),
        project: whole_summaries.project.clone(),
    };
    (removed_dirs, summaries)
}

/// Names some chunk of `chunks` defines.
fn defined(chunks: &[ChunkRecord]) -> HashSet<String> {
    chunks.iter().flat_map(defined_names).collect()
}

/// The delta that turns `base` (version `base_version`, its summaries loaded in
/// `base_summaries`) into `whole`, the next version built whole with its lists in the pack
/// (before they are split into segments) and its summaries in `whole_summaries`; `None` when
/// the two cannot be layered (other settings or encodings).
///
/// The delta pack's segments are the whole version's that its chunks name; a writer adds its
/// lists' and summaries' segments after them as for any pack.
pub fn derive(
    base: &IndexPack,
    base_version: u64,
    base_summaries: &Summaries,
    whole: &IndexPack,
    whole_summaries: &Summaries,
) -> Option<IndexPack> {
    if base.meta.settings != whole.meta.settings || base.meta.encodings != whole.meta.encodings {
        return None;
    }
    // The merge interleaves the two file tables by path: both must be in path order.
    let sorted = |p: &IndexPack| p.files.windows(2).all(|w| w[0].path < w[1].path);
    if !sorted(base) || !sorted(whole) {
        return None;
    }
    let kept = kept_files(base, base_summaries, whole, whole_summaries);
    let file_map = base_file_map(base.files.len(), &kept);
    let removed: Vec<String> = base
        .files
        .iter()
        .zip(&file_map)
        .filter(|(_, m)| **m == DROPPED)
        .map(|(f, _)| f.path.clone())
        .collect();

    let DeltaTables {
        files,
        chunks,
        delta_chunk,
        local_file,
        segments,
        doc_len,
    } = delta_tables(whole, &kept)?;

    // Postings of the delta's chunks, in merged numbers.
    let lists = whole.lexical.lists();
    let postings =
        KeyedLists::from_sorted(lists.inline_values().enumerate().filter_map(|(k, v)| {
            let docs: Vec<(u32, u32)> = decode_postings(v)
                .filter(|(d, _)| delta_chunk.get(*d as usize) == Some(&true))
                .collect();
            (!docs.is_empty()).then(|| (lists.key(k).to_owned(), encode_postings(docs)))
        }));
    let (params, _, _) = whole.lexical.clone().into_parts();
    let lexical = Bm25Index::from_parts(params, postings, doc_len);

    // Users: of a name both define, the delta's chunks; of a name only the version defines,
    // every user (the base has no list for it); names only the base defines are dropped.
    let base_defined = defined(&base.chunks);
    let whole_defined = defined(&whole.chunks);
    let users = whole.references.lists();
    let references =
        KeyedLists::from_sorted(users.inline_values().enumerate().filter_map(|(k, v)| {
            let name = users.key(k);
            let all = base_defined.contains(name);
            let chunks: Vec<u32> = crate::lists::decode_ascending(v)
                .into_iter()
                .filter(|&c| !all || delta_chunk.get(c as usize) == Some(&true))
                .collect();
            (!chunks.is_empty()).then(|| (name.to_owned(), crate::lists::encode_ascending(&chunks)))
        }));
    let mut dropped_names: Vec<String> = base_defined.difference(&whole_defined).cloned().collect();
    dropped_names.sort_unstable();

    // Graph rows that differ from the base's mapped ones.
    let graph_rows = whole
        .files
        .iter()
        .enumerate()
        .filter_map(|(f, _)| {
            let row = whole.graph.imports.get(f).cloned().unwrap_or_default();
            let from_base = match kept[f] {
                Some(b) => mapped_row(&base.graph, b, &file_map),
                None => Vec::new(),
            };
            (row != from_base).then_some((f as u32, row))
        })
        .collect();

    let (removed_dirs, summaries) = delta_summaries(base_summaries, whole_summaries, &local_file);
    let summaries = StoredSummaries::store(summaries).ok()?;

    Some(IndexPack {
        meta: whole.meta.clone(),
        files,
        chunks,
        segments,
        lexical,
        summaries,
        graph: ImportGraph::default(),
        references: super::References::from_lists(references),
        recency: whole.recency.clone(),
        history: whole.history.clone(),
        // A reader merges the delta with its base and builds the merged version's tables.
        paths: None,
        delta: Some(DeltaFacts {
            base_version,
            files: whole.files.len() as u32,
            chunks: whole.chunks.len() as u32,
            removed,
            removed_dirs,
            dropped_names,
            graph_rows,
        }),
        overlay: None,
        derived: Default::default(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::merge::interleave;
    use super::*;
    use crate::hash::Sha256Digest;
    use crate::index::build::{ChunkTerms, build};
    use crate::index::{FileStat, Recency, TokenCounts, chunk_id};
    use crate::summary::{DirSummary, FileSummary};

    /// A repository: path → blocks of text (one chunk each).
    pub(crate) type Repo = BTreeMap<String, Vec<String>>;

    fn summary(text: String) -> Summary {
        Summary {
            tokens: vec![text.len() as u32],
            text,
        }
    }

    /// The version of `repo` built whole, as the indexer builds one (lists in the pack), with
    /// its summaries; its chunk texts in the one segment `segment`.
    pub(crate) fn whole(repo: &Repo, segment: &str) -> (IndexPack, Summaries) {
        let mut files = Vec::new();
        let mut chunks = Vec::new();
        let mut terms = Vec::new();
        for (f, (path, blocks)) in repo.iter().enumerate() {
            let text = blocks.join("\n\n");
            files.push(FileEntry {
                path: path.clone(),
                sha256: Sha256Digest::of(text.as_bytes()),
                stat: FileStat {
                    size: text.len() as u64,
                    mtime_ns: 0,
                    ctime_ns: 0,
                    inode: 0,
                },
                language: "rust".into(),
                skipped: None,
                first_chunk: chunks.len() as u32,
                chunk_count: blocks.len() as u32,
            });
            for (i, b) in blocks.iter().enumerate() {
                let sha = Sha256Digest::of(b.as_bytes());
                let symbol = b
                    .strip_prefix("fn ")
                    .and_then(|r| r.split('(').next())
                    .map(compact_str::CompactString::from);
                chunks.push(ChunkRecord {
                    id: chunk_id(path, &sha, i as u32),
                    file: f as u32,
                    kind: crate::chunk::ChunkKind::Function,
                    symbol,
                    start_line: i as u32 + 1,
                    end_line: i as u32 + 1,
                    byte_start: 0,
                    byte_end: b.len() as u32,
                    sha256: sha,
                    tokens: TokenCounts::new(&[b.len() as u32]).unwrap(),
                    segment: 0,
                    segment_offset: 0,
                });
                terms.push(ChunkTerms::extract(b, path, "rust"));
            }
        }
        let built = build(&files, &chunks, terms);
        let mut dirs: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for path in repo.keys() {
            if let Some((dir, name)) = path.rsplit_once('/') {
                dirs.entry(dir.to_owned())
                    .or_default()
                    .push(name.to_owned());
            }
        }
        let summaries = Summaries {
            files: repo
                .iter()
                .enumerate()
                .map(|(f, (path, blocks))| FileSummary {
                    file: f as u32,
                    origin: crate::summary::EXTRACTIVE.into(),
                    line: format!("{path} has {} blocks", blocks.len()),
                    summary: summary(format!("{path}: {}", blocks[0])),
                })
                .collect(),
            dirs: dirs
                .into_iter()
                .map(|(path, names)| DirSummary {
                    summary: summary(format!("{path}: {}", names.join(", "))),
                    path,
                })
                .collect(),
            project: Some(summary(format!("{} files", repo.len()))),
        };
        let ages = (0..files.len() as u32)
            .map(|f| (f, (f * 7 + repo.len() as u32) % 13))
            .collect();
        // As the indexer writes a whole pack: with its paths' tables.
        let paths = Some(crate::index::path_tables::PathTables::of(&files, &chunks));
        let pack = IndexPack {
            paths,
            files,
            chunks,
            segments: vec![segment.to_owned()],
            lexical: built.lexical,
            summaries: StoredSummaries::store(summaries.clone()).unwrap(),
            graph: built.graph,
            references: built.references,
            recency: Recency::new(20, ages),
            ..crate::index::tests::tiny()
        };
        (pack, summaries)
    }

    /// A repository of `n` files from `seed`, and an edit of it: files changed, added, removed.
    pub(crate) fn repos(seed: u64, n: usize) -> (Repo, Repo) {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m.max(1)
        };
        let words = [
            "alpha", "beta", "gamma", "delta", "parse", "render", "config", "token",
        ];
        let block = |next: &mut dyn FnMut(u64) -> u64| {
            let name = format!("{}_{}", words[next(8) as usize], next(30));
            let calls: Vec<String> = (0..3)
                .map(|_| format!("{}_{}()", words[next(8) as usize], next(30)))
                .collect();
            format!(
                "fn {name}() {{\nuse crate::d{}::m{};\n{}\n}}",
                next(3),
                next(12),
                calls.join(";\n")
            )
        };
        let mut base = Repo::new();
        for i in 0..n {
            let path = format!("src/d{}/m{}.rs", next(3), i);
            let blocks = (0..1 + next(3)).map(|_| block(&mut next)).collect();
            base.insert(path, blocks);
        }
        let mut edited = base.clone();
        for _ in 0..1 + next(3) {
            let keys: Vec<String> = edited.keys().cloned().collect();
            match next(4) {
                0 if keys.len() > 1 => {
                    edited.remove(&keys[next(keys.len() as u64) as usize]);
                }
                1 => {
                    let path = format!("src/d{}/m{}.rs", next(4), 12 + next(3));
                    edited.insert(path, vec![block(&mut next)]);
                }
                _ => {
                    let k = &keys[next(keys.len() as u64) as usize];
                    let b = block(&mut next);
                    if let Some(blocks) = edited.get_mut(k) {
                        blocks.push(b);
                    }
                }
            }
        }
        (base, edited)
    }

    /// Base, the delta to the edit (through its bytes) and the edit built whole.
    pub(crate) fn layered(seed: u64, n: usize) -> (IndexPack, IndexPack, IndexPack) {
        let (a, b) = repos(seed, n);
        let (base, base_sums) = whole(&a, "base");
        let (next, next_sums) = whole(&b, "next");
        let delta = derive(&base, 1, &base_sums, &next, &next_sums).unwrap();
        let delta = IndexPack::decode(&delta.encode().unwrap()).unwrap();
        let base_read = IndexPack::decode(&base.encode().unwrap()).unwrap();
        (base_read, delta, next)
    }

    #[test]
    fn merging_a_delta_rebuilds_the_whole_version_tables() {
        let mut edges = 0;
        let mut removed = 0;
        for seed in 0..40 {
            let (base, delta, next) = layered(seed, 12);
            let facts = delta.delta.clone().unwrap();
            edges += next.graph.edges();
            removed += facts.removed.len() + facts.graph_rows.len();
            assert!(
                delta.files.len() < next.files.len() || next.files.len() <= 2,
                "seed {seed}"
            );
            let merged = merge(base, delta).unwrap();
            assert_eq!(facts.files as usize, next.files.len());
            let strip = |p: &IndexPack| -> Vec<ChunkRecord> {
                p.chunks
                    .iter()
                    .map(|c| ChunkRecord {
                        segment: 0,
                        ..c.clone()
                    })
                    .collect()
            };
            assert_eq!(merged.files, next.files, "seed {seed}");
            assert_eq!(strip(&merged), strip(&next), "seed {seed}");
            assert_eq!(merged.graph, next.graph, "seed {seed}");
            assert_eq!(merged.recency, next.recency, "seed {seed}");
            // The merged version has no stored path tables; the ones its reader builds are the
            // whole version's.
            assert!(merged.paths.is_none() && next.paths.is_some());
            assert_eq!(merged.paths(), next.paths.as_ref().unwrap(), "seed {seed}");
            assert_eq!(merged.lexical.doc_lens(), next.lexical.doc_lens());
            // Every chunk's segment is the one its text is in: kept chunks the base's, the
            // changed files' the new version's.
            for (m, c) in merged.chunks.iter().enumerate() {
                let name = &merged.segments[c.segment as usize];
                let overlay = merged.overlay.as_deref().unwrap();
                let from_base = overlay.base_chunks.contains(&(m as u32));
                assert_eq!(name, if from_base { "base" } else { "next" }, "seed {seed}");
            }
            let loaded = merged.summaries.load(|_| Err(()), |_| ()).unwrap();
            let expected = next.summaries.inlined().unwrap();
            assert_eq!(loaded, expected, "seed {seed}");
        }
        assert!(
            edges > 40 && removed > 40,
            "the cases exercise the graph: {edges} {removed}"
        );
    }

    proptest::proptest! {
        #[test]
        fn interleaving_in_place_is_a_merge(
            keep in proptest::collection::vec(proptest::bool::ANY, 0..40),
            order in proptest::collection::vec(proptest::bool::ANY, 0..60),
        ) {
            let base: Vec<u32> = (0..keep.len() as u32).collect();
            let kept: Vec<u32> = base.iter().copied().filter(|&i| keep[i as usize]).collect();
            // A merged sequence with exactly the kept entries from the base.
            let mut from_base: Vec<bool> = order.clone();
            let mut trues = from_base.iter().filter(|b| **b).count();
            while trues < kept.len() {
                from_base.push(true);
                trues += 1;
            }
            while trues > kept.len() {
                let at = from_base.iter().rposition(|b| *b).unwrap();
                from_base.remove(at);
                trues -= 1;
            }
            let delta: Vec<u32> =
                (0..from_base.iter().filter(|b| !**b).count() as u32).map(|d| 1000 + d).collect();
            let (mut k, mut d) = (kept.iter(), delta.iter());
            let naive: Vec<u32> = from_base
                .iter()
                .map(|&b| if b { *k.next().unwrap() } else { *d.next().unwrap() })
                .collect();
            let mut got = base.clone();
            interleave(&mut got, &keep, delta, &from_base);
            proptest::prop_assert_eq!(got, naive);
        }
    }

    #[test]
    fn a_summary_written_again_makes_its_file_the_deltas() {
        let (a, b) = repos(11, 10);
        let (base, base_sums) = whole(&a, "base");
        let (next, mut next_sums) = whole(&b, "next");
        // An unchanged file (the same in both) summarized again, by another summarizer.
        let kept = kept_files(&base, &base_sums, &next, &next_sums);
        let f = kept.iter().position(Option::is_some).unwrap();
        let s = next_sums
            .files
            .iter_mut()
            .find(|s| s.file == f as u32)
            .unwrap();
        s.origin = "model".into();
        s.summary.text = "written again".into();
        let mut next = next;
        next.summaries = StoredSummaries::store(next_sums.clone()).unwrap();
        let delta = derive(&base, 1, &base_sums, &next, &next_sums).unwrap();
        assert!(delta.files.iter().any(|d| d.path == next.files[f].path));
        let merged = merge(base, delta).unwrap();
        let loaded = merged.summaries.load(|_| Err(()), |_| ()).unwrap();
        assert_eq!(loaded, next_sums);
    }

    #[test]
    fn a_delta_refuses_what_does_not_merge() {
        let (base, delta, _) = layered(3, 8);
        assert!(merge(base.clone(), base.clone()).is_err(), "not a delta");
        let mut wrong = delta.clone();
        if let Some(d) = &mut wrong.delta {
            d.removed.clear();
        }
        if !delta.delta.as_ref().unwrap().removed.is_empty() {
            assert!(
                merge(base.clone(), wrong).is_err(),
                "a path both kept and changed"
            );
        }
        let mut count = delta.clone();
        if let Some(d) = &mut count.delta {
            d.chunks += 1;
        }
        assert!(merge(base.clone(), count).is_err());
        // Counts no pack holds are refused before anything is sized by them.
        let mut huge = delta.clone();
        if let Some(d) = &mut huge.delta {
            d.files = u32::MAX;
            d.chunks = u32::MAX;
        }
        assert!(merge(base.clone(), huge).is_err());
        // Another encoding: the base's chunks would lack its counts.
        let mut encodings = delta.clone();
        encodings
            .meta
            .encodings
            .push(crate::tokens::Encoding::Cl100kBase);
        assert!(merge(base.clone(), encodings).is_err());
        // Files that do not tile their chunk table.
        let mut overlapping = delta;
        if let Some(f) = overlapping.files.first_mut() {
            f.first_chunk += 1;
        }
        assert!(merge(base, overlapping).is_err());
    }
}
