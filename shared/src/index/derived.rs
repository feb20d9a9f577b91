//! Facts about an opened pack that every query reads and no query changes, computed on first
//! use and kept with the pack: on deno (14.7k files) splitting every path into terms and
//! testing it for test and doc folders was a fifth of a warm query, and copying the import graph
//! to find each file's neighbours a few percent more.

use rustc_hash::FxHashMap as HashMap;

use crate::graph::ImportGraph;
use crate::path_kind::{
    SetAside, declaration_copies, is_doc_lower, is_test_lower, is_tiny_data, set_aside_by_lower,
};

use super::{ChunkRecord, FileEntry};

/// Per-file facts, indexed like [`super::IndexPack::files`].
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// The terms of every path, sorted, concatenated, with their ends: the ids of
    /// `term_files`. Their own, not the BM25 dictionary's, whose terms may be in blocks outside
    /// the pack ([`crate::lists::KeyBlocks`]).
    path_vocabulary: String,
    path_vocabulary_ends: Vec<u32>,
    /// The files whose path holds each path term, ascending:
    /// `term_files[term_file_ends[t-1]..term_file_ends[t]]`. By term rather than by file: the
    /// path signal looks up the request's few terms, where a list per file made it read the
    /// path of every candidate's file (a cache miss each, on a large repository).
    term_files: Vec<u32>,
    term_file_ends: Vec<u32>,
    /// Whether each file is a test ([`crate::rank::is_test_path`]).
    pub test_file: Vec<bool>,
    /// Whether each file is documentation ([`crate::rank::is_doc_path`]).
    pub doc_file: Vec<bool>,
    /// Why each file is set aside from code context, if it is ([`SetAside`]).
    pub set_aside: Vec<Option<SetAside>>,
    /// Each file's import neighbours in either direction ([`ImportGraph::neighbours`]), flat:
    /// `neighbour_files[neighbour_ends[f-1]..neighbour_ends[f]]` — one vector per file cost
    /// an allocation per file in every isolate ([`Derived::neighbours`] reads it).
    neighbour_files: Vec<u32>,
    neighbour_ends: Vec<u32>,
    /// Each chunk's file, indexed like [`super::IndexPack::chunks`]: ranking reads it for every
    /// candidate several times, and a chunk record is large enough that each read missed the
    /// cache.
    pub chunk_file: Vec<u32>,
    /// The repository's tokens in each counted encoding (a sum over every chunk, which every
    /// query reported).
    tokens_total: Vec<u64>,
    /// The call relation inside each file a query has needed ([`super::file_calls`]).
    pub calls: super::file_calls::FileCalls,
    /// Which chunks are part of a test module inside a source file, on a version's first
    /// question (`rank::signals` says how): asked for every candidate of every question, it was
    /// a tenth of a warm call on deno.
    in_test_module: std::sync::OnceLock<ChunkBits>,
    /// Which chunks may hold defaults (`rank::defaults` says how), on a version's first
    /// question about defaults.
    holds_defaults: std::sync::OnceLock<ChunkBits>,
}

/// One yes or no per chunk, indexed like [`super::IndexPack::chunks`].
#[derive(Clone, Debug, Default)]
pub struct ChunkBits(Vec<u64>);

impl ChunkBits {
    /// `yes(c)` for each of the `chunks` chunks.
    pub fn from_fn(chunks: usize, yes: impl Fn(usize) -> bool) -> Self {
        let mut words = vec![0u64; chunks.div_ceil(64)];
        for c in (0..chunks).filter(|&c| yes(c)) {
            words[c / 64] |= 1 << (c % 64);
        }
        Self(words)
    }

    /// Chunk `c`'s answer (no for a chunk past the end).
    pub fn get(&self, c: usize) -> bool {
        self.0.get(c / 64).is_some_and(|w| w & (1 << (c % 64)) != 0)
    }
}

/// Derived data is a cache: two packs are equal whatever either has computed.
impl PartialEq for Derived {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Derived {
    /// Computes the facts of `files` and `graph`.
    pub fn of(files: &[FileEntry], chunks: &[ChunkRecord], graph: &ImportGraph) -> Self {
        // Two passes over the paths (the terms with how many files hold each, then each term's
        // files placed) rather than one that keeps every (term, file) pair: this is built on an
        // isolate's first query, at its memory's high-water mark. Terms are found by hash in
        // both passes (a tree and a binary search over the sorted terms were a sixth of it) and
        // sorted once, between them; a folder's terms are split once for the run of its files
        // ([`path_term_ids`]).
        let mut provisional: HashMap<String, u32> = HashMap::default();
        // How many files hold each term, by provisional id (the order terms were met).
        let mut holders: Vec<u32> = Vec::new();
        let mut folder = FolderTerms::default();
        let mut ids: Vec<u32> = Vec::new();
        for file in files {
            path_term_ids(&file.path, &mut folder, &mut ids, |t| {
                Some(match provisional.get(t) {
                    Some(&id) => id,
                    None => {
                        let id = holders.len() as u32;
                        provisional.insert(t.to_string(), id);
                        holders.push(0);
                        id
                    }
                })
            });
            for &id in &ids {
                holders[id as usize] += 1;
            }
        }
        let mut sorted: Vec<(&str, u32)> = provisional
            .iter()
            .map(|(t, &id)| (t.as_str(), id))
            .collect();
        sorted.sort_unstable();
        let mut path_vocabulary = String::new();
        let mut path_vocabulary_ends = Vec::with_capacity(sorted.len());
        let mut term_file_ends = Vec::with_capacity(sorted.len());
        // Each provisional id's place in the sorted vocabulary: the term's id.
        let mut final_id = vec![0u32; holders.len()];
        let mut at = 0u32;
        for (id, (t, p)) in sorted.into_iter().enumerate() {
            path_vocabulary.push_str(t);
            path_vocabulary_ends.push(path_vocabulary.len() as u32);
            at += holders[p as usize];
            term_file_ends.push(at);
            final_id[p as usize] = id as u32;
        }
        drop(holders);
        // Each term's next free place, from its start: files go in ascending.
        let mut next: Vec<u32> = std::iter::once(0)
            .chain(term_file_ends.iter().copied())
            .take(term_file_ends.len())
            .collect();
        let mut term_files = vec![0u32; at as usize];
        let mut folder = FolderTerms::default();
        for (f, file) in files.iter().enumerate() {
            path_term_ids(&file.path, &mut folder, &mut ids, |t| {
                provisional.get(t).map(|&p| final_id[p as usize])
            });
            for &id in &ids {
                let slot = &mut next[id as usize];
                term_files[*slot as usize] = f as u32;
                *slot += 1;
            }
        }
        drop(next);
        drop(provisional);
        let mut neighbour_files = Vec::new();
        let mut neighbour_ends = Vec::with_capacity(graph.imports.len());
        for ns in graph.neighbours() {
            neighbour_files.extend_from_slice(&ns);
            neighbour_ends.push(neighbour_files.len() as u32);
        }
        neighbour_files.shrink_to_fit();
        let (test_file, doc_file, set_aside) = path_kinds(files, chunks);
        // Each chunk's file and the repository's tokens in one pass over the chunk records
        // (large records: each read is a cache miss on a large repository).
        let mut chunk_file = Vec::with_capacity(chunks.len());
        let mut tokens_total: Vec<u64> = Vec::new();
        for c in chunks {
            chunk_file.push(c.file);
            if tokens_total.len() < c.tokens.len() {
                tokens_total.resize(c.tokens.len(), 0);
            }
            for (t, n) in tokens_total.iter_mut().zip(&c.tokens) {
                *t += u64::from(*n);
            }
        }
        Self {
            term_files,
            term_file_ends,
            test_file,
            doc_file,
            set_aside,
            neighbour_files,
            neighbour_ends,
            chunk_file,
            tokens_total,
            path_vocabulary,
            path_vocabulary_ends,
            ..Self::default()
        }
    }

    /// The id of `term` among the terms of the paths ([`Derived::files_with_path_term`]), if a path has
    /// it.
    pub fn path_term_id(&self, term: &str) -> Option<u32> {
        let ends = &self.path_vocabulary_ends;
        let term_at = |i: usize| {
            let start = if i == 0 { 0 } else { ends[i - 1] as usize };
            self.path_vocabulary
                .get(start..ends[i] as usize)
                .unwrap_or_default()
        };
        let (mut lo, mut hi) = (0usize, ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match term_at(mid).cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// [`Derived::in_test_module`]'s bits, computed by `compute` the first time.
    pub fn in_test_module(&self, compute: impl FnOnce() -> ChunkBits) -> &ChunkBits {
        self.in_test_module.get_or_init(compute)
    }

    /// [`Derived::holds_defaults`]'s bits, computed by `compute` the first time.
    pub fn holds_defaults(&self, compute: impl FnOnce() -> ChunkBits) -> &ChunkBits {
        self.holds_defaults.get_or_init(compute)
    }

    /// The repository's tokens in the encoding of slot `slot` ([`super::IndexPack::encoding_slot`]).
    pub fn tokens_total(&self, slot: usize) -> u64 {
        self.tokens_total.get(slot).copied().unwrap_or(0)
    }

    /// File `f`'s import neighbours in either direction, sorted (none for a file past the
    /// graph).
    pub fn neighbours(&self, f: usize) -> &[u32] {
        let start = match f.checked_sub(1) {
            Some(p) => self.neighbour_ends.get(p).copied().unwrap_or(0) as usize,
            None => 0,
        };
        let end = self.neighbour_ends.get(f).copied().unwrap_or(0) as usize;
        self.neighbour_files.get(start..end).unwrap_or_default()
    }

    /// The files whose path holds path term `term` ([`Derived::path_term_id`]), ascending.
    pub fn files_with_path_term(&self, term: u32) -> &[u32] {
        let t = term as usize;
        let start = match t.checked_sub(1) {
            Some(p) => self.term_file_ends.get(p).copied().unwrap_or(0) as usize,
            None => 0,
        };
        let end = self.term_file_ends.get(t).copied().unwrap_or(0) as usize;
        self.term_files.get(start..end).unwrap_or_default()
    }
}

/// The last folder whose terms were split, and their ids (each once).
#[derive(Default)]
struct FolderTerms {
    folder: String,
    ids: Vec<u32>,
}

/// The ids `id_of` gives the terms of `path`, each once, into `ids`: its folder's (kept in
/// `last` for the files after it in the same folder: a large repository's paths are mostly
/// folders, split again for every file) and its name's. A term never spans a `/`, so the terms
/// of the folder and of the name are those of the whole path.
fn path_term_ids(
    path: &str,
    last: &mut FolderTerms,
    ids: &mut Vec<u32>,
    mut id_of: impl FnMut(&str) -> Option<u32>,
) {
    let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
    if last.folder != folder {
        last.folder.clear();
        last.folder.push_str(folder);
        last.ids.clear();
        crate::lexical::for_each_term(folder, |t| {
            if let Some(id) = id_of(t)
                && !last.ids.contains(&id)
            {
                last.ids.push(id);
            }
        });
    }
    ids.clear();
    ids.extend_from_slice(&last.ids);
    crate::lexical::for_each_term(name, |t| {
        if let Some(id) = id_of(t)
            && !ids.contains(&id)
        {
            ids.push(id);
        }
    });
}

/// Each file's kinds by its path: test, documentation, and why it is set aside ([`SetAside`]:
/// by its path, as a declaration copy of a source in the tree, or as a tiny data file, its
/// tokens in the first counted encoding). Each path is lowercased once for all three.
fn path_kinds(
    files: &[FileEntry],
    chunks: &[ChunkRecord],
) -> (Vec<bool>, Vec<bool>, Vec<Option<SetAside>>) {
    let copies = declaration_copies(files.iter().map(|f| f.path.as_str()));
    let mut test_file = Vec::with_capacity(files.len());
    let mut doc_file = Vec::with_capacity(files.len());
    let mut set_aside = Vec::with_capacity(files.len());
    let mut lower = String::new();
    for (f, copy) in files.iter().zip(copies) {
        lower.clear();
        lower.push_str(&f.path);
        lower.make_ascii_lowercase();
        test_file.push(is_test_lower(&lower));
        doc_file.push(is_doc_lower(&lower));
        set_aside.push(set_aside_by_lower(&lower).or_else(|| {
            let tokens = || -> u32 {
                let first = f.first_chunk as usize;
                let last = first.saturating_add(f.chunk_count as usize);
                chunks
                    .get(first..last.min(chunks.len()))
                    .unwrap_or_default()
                    .iter()
                    .map(|c| c.tokens.first().copied().unwrap_or(0))
                    .sum()
            };
            if copy {
                Some(SetAside::Generated)
            } else if f.skipped.is_none()
                && is_tiny_data(
                    lower.rsplit('/').next().unwrap_or(&lower),
                    &f.language,
                    tokens,
                )
            {
                Some(SetAside::Data)
            } else {
                None
            }
        }));
    }
    (test_file, doc_file, set_aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_bits_answer_per_chunk_across_words_and_no_past_the_end() {
        let yes = |c: usize| c.is_multiple_of(3) || c == 64 || c == 129;
        let bits = ChunkBits::from_fn(130, yes);
        for c in 0..130 {
            assert_eq!(bits.get(c), yes(c), "chunk {c}");
        }
        assert!(!bits.get(130) && !bits.get(10_000));
        assert!(!ChunkBits::from_fn(0, |_| true).get(0));
    }

    #[test]
    fn question_flags_are_computed_once_per_version() {
        let d = Derived::of(&[], &[], &ImportGraph { imports: vec![] });
        let calls = std::cell::Cell::new(0);
        for _ in 0..3 {
            let bits = d.in_test_module(|| {
                calls.set(calls.get() + 1);
                ChunkBits::from_fn(4, |c| c == 2)
            });
            assert!(bits.get(2) && !bits.get(1));
        }
        assert_eq!(calls.get(), 1);
        assert!(
            d.holds_defaults(|| ChunkBits::from_fn(4, |c| c == 1))
                .get(1)
        );
    }

    #[test]
    fn neighbours_are_each_files_imports_both_ways() {
        let graph = ImportGraph {
            imports: vec![vec![1], vec![], vec![0, 1]],
        };
        let d = Derived::of(&[], &[], &graph);
        assert_eq!(d.neighbours(0), &[1, 2]);
        assert_eq!(d.neighbours(1), &[0, 2]);
        assert_eq!(d.neighbours(2), &[0, 1]);
        assert!(d.neighbours(3).is_empty(), "a file past the graph has none");
    }

    /// A file at `path` in `language`, without chunks.
    fn file_of(path: &str, language: &str) -> FileEntry {
        FileEntry {
            path: path.to_string(),
            sha256: crate::hash::Sha256Digest::of(path.as_bytes()),
            stat: crate::index::FileStat {
                size: 0,
                mtime_ns: 0,
                ctime_ns: 0,
                inode: 0,
            },
            language: language.into(),
            skipped: None,
            first_chunk: 0,
            chunk_count: 0,
        }
    }

    #[test]
    fn each_path_term_lists_its_files_once_in_order() {
        let file = |path: &str| file_of(path, "rust");
        let files = [
            file("src/parser/parser.rs"),
            file("tests/parser.rs"),
            file("src/lib.rs"),
        ];
        let d = Derived::of(&files, &[], &ImportGraph::default());
        let files_of = |t: &str| d.path_term_id(t).map(|id| d.files_with_path_term(id));
        assert_eq!(
            files_of("parser"),
            Some(&[0, 1][..]),
            "once per file, ascending"
        );
        assert_eq!(files_of("src"), Some(&[0, 2][..]));
        let mut tests = Vec::new();
        crate::lexical::for_each_term("tests", |t| tests.push(t.to_string()));
        assert_eq!(files_of(&tests[0]), Some(&[1][..]), "`{}`", tests[0]);
        assert_eq!(files_of("absent"), None);
        assert!(d.files_with_path_term(u32::MAX).is_empty());
        // The vocabulary is strictly ascending: the term lookup is a binary search over it.
        let ends = &d.path_vocabulary_ends;
        let terms: Vec<&str> = (0..ends.len())
            .map(|i| {
                let start = if i == 0 { 0 } else { ends[i - 1] as usize };
                &d.path_vocabulary[start..ends[i] as usize]
            })
            .collect();
        assert!(terms.windows(2).all(|w| w[0] < w[1]), "{terms:?}");
    }

    #[test]
    fn a_paths_term_ids_are_those_of_the_whole_path_with_its_folder_kept() {
        let mut interned: Vec<String> = Vec::new();
        let mut intern = |t: &str| -> u32 {
            match interned.iter().position(|x| x == t) {
                Some(i) => i as u32,
                None => {
                    interned.push(t.to_string());
                    interned.len() as u32 - 1
                }
            }
        };
        let paths = [
            "README.md",
            "src/parser/parser.rs",
            "src/parser/lexerParser.rs",
            "src/lib.rs",
            "src/parser/x/y_z.rs",
            "src/parser/mod.rs",
            "top_level",
            "a/b/",
            "ünï/cödé.rs",
        ];
        let mut folder = FolderTerms::default();
        let mut ids = Vec::new();
        for path in paths {
            path_term_ids(path, &mut folder, &mut ids, |t| Some(intern(t)));
            let mut got = ids.clone();
            got.sort_unstable();
            let mut want = Vec::new();
            crate::lexical::for_each_term(path, |t| want.push(intern(t)));
            want.sort_unstable();
            want.dedup();
            assert_eq!(got, want, "{path}");
        }
    }

    #[test]
    fn path_kinds_are_those_of_each_path_whatever_its_case() {
        let files = [
            file_of("Tests/X.MD", "markdown"),
            file_of("Vendor/a.js", "javascript"),
            file_of("fuzz/CASE_1", "text"),
            file_of("src/Lib.rs", "rust"),
            file_of("Docs/Guide.HTML", "html"),
        ];
        let d = Derived::of(&files, &[], &ImportGraph::default());
        for (i, f) in files.iter().enumerate() {
            assert_eq!(
                d.test_file[i],
                crate::path_kind::is_test_path(&f.path),
                "{}",
                f.path
            );
            assert_eq!(
                d.doc_file[i],
                crate::path_kind::is_doc_path(&f.path),
                "{}",
                f.path
            );
        }
        assert_eq!(
            d.set_aside,
            [
                None,
                Some(SetAside::Vendored),
                Some(SetAside::Data),
                None,
                Some(SetAside::Generated)
            ]
        );
        assert!(d.test_file[0] && d.doc_file[0] && !d.test_file[3]);
    }
}
