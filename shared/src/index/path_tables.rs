//! What every file's path says, as ranking reads it: the terms of the paths with the files that
//! hold each, and each file's kinds (test, documentation, set aside). Written into the pack by
//! the indexer (format 14) so that a reader only decodes them: built on a version's first query
//! they were 40-55% of an isolate's first call natively on the 88M-token monorepo corpus (two
//! passes over 46k paths splitting and stemming every term, a hash table of the terms, three
//! string tests per path), and a Worker's cold first answer waits on that call. A version merged
//! from a base and a delta has none stored (the merge changes the files); its reader builds
//! them on first use with the same function ([`PathTables::of`]).

use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

use crate::path_kind::{
    SetAside, declaration_copies, is_doc_lower, is_test_lower, is_tiny_data, set_aside_by_lower,
};

use super::{ChunkRecord, FileEntry};

/// Path terms and kinds, indexed like [`super::IndexPack::files`]. Stored, they freeze the rules
/// that made them (`lexical::for_each_term`, `path_kind`'s tests): a change to those rules is a
/// new format version, or versions indexed before and after it would rank the same paths
/// differently.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathTables {
    /// The terms of every path, sorted, concatenated, with their ends: the ids of
    /// `term_files`. Their own, not the BM25 dictionary's, whose terms may be in blocks outside
    /// the pack ([`crate::lists::KeyBlocks`]).
    vocabulary: String,
    #[serde(with = "gaps")]
    vocabulary_ends: Vec<u32>,
    /// The files whose path holds each path term, ascending:
    /// `term_files[term_file_ends[t-1]..term_file_ends[t]]`. By term rather than by file: the
    /// path signal looks up the request's few terms, where a list per file made it read the
    /// path of every candidate's file (a cache miss each, on a large repository). Stored as
    /// gaps (a term's files are mostly neighbours: a folder's run), a third of the bytes.
    #[serde(with = "gaps")]
    term_files: Vec<u32>,
    #[serde(with = "gaps")]
    term_file_ends: Vec<u32>,
    /// Whether each file is a test ([`crate::rank::is_test_path`]).
    pub test_file: Vec<bool>,
    /// Whether each file is documentation ([`crate::rank::is_doc_path`]).
    pub doc_file: Vec<bool>,
    /// Why each file is set aside from code context, if it is ([`SetAside`]; stored by the
    /// variant's place in the enum).
    pub set_aside: Vec<Option<SetAside>>,
}

impl PathTables {
    /// The tables of `files`, whose chunks are `chunks` (tiny data files are told by their
    /// tokens).
    pub fn of(files: &[FileEntry], chunks: &[ChunkRecord]) -> Self {
        // Two passes over the paths (the terms with how many files hold each, then each term's
        // files placed) rather than one that keeps every (term, file) pair: a reader that
        // builds these does so at its memory's high-water mark. Terms are found by hash in both
        // passes (a tree and a binary search over the sorted terms were a sixth of it) and
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
        let mut vocabulary = String::new();
        let mut vocabulary_ends = Vec::with_capacity(sorted.len());
        let mut term_file_ends = Vec::with_capacity(sorted.len());
        // Each provisional id's place in the sorted vocabulary: the term's id.
        let mut final_id = vec![0u32; holders.len()];
        let mut at = 0u32;
        for (id, (t, p)) in sorted.into_iter().enumerate() {
            vocabulary.push_str(t);
            vocabulary_ends.push(vocabulary.len() as u32);
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
        // Let go of the terms' hash table before the kinds' tests allocate their own.
        drop(next);
        drop(final_id);
        drop(provisional);
        let (test_file, doc_file, set_aside) = path_kinds(files, chunks);
        Self {
            vocabulary,
            vocabulary_ends,
            term_files,
            term_file_ends,
            test_file,
            doc_file,
            set_aside,
        }
    }

    /// The id of `term` among the terms of the paths ([`PathTables::files_with_term`]), if a
    /// path has it.
    pub fn term_id(&self, term: &str) -> Option<u32> {
        let ends = &self.vocabulary_ends;
        let term_at = |i: usize| self.vocabulary.get(entry(ends, i)).unwrap_or_default();
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

    /// The files whose path holds path term `term` ([`PathTables::term_id`]), ascending.
    pub fn files_with_term(&self, term: u32) -> &[u32] {
        self.term_files
            .get(entry(&self.term_file_ends, term as usize))
            .unwrap_or_default()
    }

    /// Why tables decoded from a pack of `files` files cannot be read as they are, if they
    /// cannot: readers index the kinds by file and the lists by their ends directly.
    pub(super) fn check(&self, files: usize) -> Result<(), String> {
        if self.test_file.len() != files
            || self.doc_file.len() != files
            || self.set_aside.len() != files
        {
            return Err(format!("path kinds for other than {files} files"));
        }
        let ascending_within = |ends: &[u32], len: usize| {
            ends.windows(2).all(|w| w[0] <= w[1]) && ends.last().is_none_or(|&e| e as usize == len)
        };
        if self.term_file_ends.len() != self.vocabulary_ends.len()
            || !ascending_within(&self.vocabulary_ends, self.vocabulary.len())
            || !ascending_within(&self.term_file_ends, self.term_files.len())
        {
            return Err("path terms whose ends do not fit their lists".into());
        }
        if self.term_files.iter().any(|&f| f as usize >= files) {
            return Err("a path term names a missing file".into());
        }
        // The lookup is a binary search over the terms, and the path signal counts a term
        // once per file: both need strictly ascending order.
        let mut last: Option<&str> = None;
        for i in 0..self.vocabulary_ends.len() {
            let term = self
                .vocabulary
                .get(entry(&self.vocabulary_ends, i))
                .ok_or("a path term cut inside a character")?;
            if last.is_some_and(|l| l >= term) {
                return Err("path terms out of order".into());
            }
            last = Some(term);
            let t = i as u32;
            if !self.files_with_term(t).windows(2).all(|w| w[0] < w[1]) {
                return Err("a path term's files out of order".into());
            }
        }
        Ok(())
    }
}

/// Entry `i`'s range in a list cut at `ends` (empty past the end).
fn entry(ends: &[u32], i: usize) -> std::ops::Range<usize> {
    let start = match i.checked_sub(1) {
        Some(p) => ends.get(p).copied().unwrap_or(0) as usize,
        None => 0,
    };
    start..ends.get(i).map_or(start, |&e| e as usize)
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

/// `#[serde(with = "gaps")]` for a `Vec<u32>` whose neighbours are close: each value stored as
/// its difference from the one before (zigzag, so a list may restart lower), which postcard
/// writes as a varint of a byte or two instead of up to five.
mod gaps {
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    /// The most values reserved up front whatever a (damaged) length claims.
    const MAX_RESERVE: usize = 8 << 20;

    /// Writes each value as its zigzag difference from the one before.
    pub fn serialize<S: Serializer>(values: &[u32], s: S) -> Result<S::Ok, S::Error> {
        let mut last = 0i64;
        s.collect_seq(values.iter().map(|&v| {
            let d = i64::from(v) - last;
            last = i64::from(v);
            ((d << 1) ^ (d >> 63)) as u64
        }))
    }

    /// Reads what [`serialize`] wrote, refusing a sum outside a `u32`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        struct Gaps;
        impl<'de> Visitor<'de> for Gaps {
            type Value = Vec<u32>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sequence of gaps")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u32>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_RESERVE));
                let mut last = 0i64;
                while let Some(z) = seq.next_element::<u64>()? {
                    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
                    last = last
                        .checked_add(d)
                        .filter(|v| u32::try_from(*v).is_ok())
                        .ok_or_else(|| A::Error::custom("a gap past the range of a u32"))?;
                    out.push(last as u32);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Gaps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file at `path` in `language`, without chunks.
    pub(crate) fn file_of(path: &str, language: &str) -> FileEntry {
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
        let p = PathTables::of(&files, &[]);
        let files_of = |t: &str| p.term_id(t).map(|id| p.files_with_term(id));
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
        assert!(p.files_with_term(u32::MAX).is_empty());
        // The vocabulary is strictly ascending: the term lookup is a binary search over it.
        let ends = &p.vocabulary_ends;
        let terms: Vec<&str> = (0..ends.len())
            .map(|i| &p.vocabulary[entry(ends, i)])
            .collect();
        assert!(terms.windows(2).all(|w| w[0] < w[1]), "{terms:?}");
        assert_eq!(p.check(files.len()), Ok(()));
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
        let p = PathTables::of(&files, &[]);
        for (i, f) in files.iter().enumerate() {
            assert_eq!(
                p.test_file[i],
                crate::path_kind::is_test_path(&f.path),
                "{}",
                f.path
            );
            assert_eq!(
                p.doc_file[i],
                crate::path_kind::is_doc_path(&f.path),
                "{}",
                f.path
            );
        }
        assert_eq!(
            p.set_aside,
            [
                None,
                Some(SetAside::Vendored),
                Some(SetAside::Data),
                None,
                Some(SetAside::Generated)
            ]
        );
        assert!(p.test_file[0] && p.doc_file[0] && !p.test_file[3]);
    }

    #[test]
    fn tables_round_trip_through_postcard_and_gaps_restart_lower() {
        let files: Vec<FileEntry> = (0..300)
            .map(|i| file_of(&format!("src/m{}/file_{i}.rs", i % 7), "rust"))
            .collect();
        let p = PathTables::of(&files, &[]);
        let bytes = postcard::to_allocvec(&p).unwrap();
        let back: PathTables = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, p);
        // A list that goes down (each term's files restart) and values near both ends.
        let values = vec![5, 3, 3, u32::MAX, 0, 70_000, 1];
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct V(#[serde(with = "gaps")] Vec<u32>);
        let bytes = postcard::to_allocvec(&V(values.clone())).unwrap();
        assert_eq!(postcard::from_bytes::<V>(&bytes).unwrap(), V(values));
        // A gap past a u32 is refused, not wrapped.
        let over = postcard::to_allocvec(&vec![u64::from(u32::MAX) * 2 + 2]).unwrap();
        assert!(postcard::from_bytes::<V>(&over).is_err());
    }

    #[test]
    fn tables_that_do_not_fit_their_files_are_refused() {
        let files = [file_of("src/a.rs", "rust"), file_of("src/b.rs", "rust")];
        let p = PathTables::of(&files, &[]);
        assert_eq!(p.check(2), Ok(()));
        assert!(p.check(1).is_err(), "kinds for other than the files");
        let mut bad = p.clone();
        if let Some(f) = bad.term_files.first_mut() {
            *f = 9;
        }
        assert!(bad.check(2).is_err(), "a missing file");
        let mut bad = p.clone();
        bad.term_file_ends.pop();
        assert!(bad.check(2).is_err(), "ends for other than the terms");
        let mut bad = p.clone();
        if let Some(e) = bad.vocabulary_ends.last_mut() {
            *e += 1;
        }
        assert!(bad.check(2).is_err(), "past the vocabulary");
        // The same terms in descending order.
        let mut bad = p.clone();
        let terms: Vec<String> = (0..p.vocabulary_ends.len())
            .map(|i| p.vocabulary[entry(&p.vocabulary_ends, i)].to_string())
            .collect();
        bad.vocabulary.clear();
        bad.vocabulary_ends.clear();
        for t in terms.iter().rev() {
            bad.vocabulary.push_str(t);
            bad.vocabulary_ends.push(bad.vocabulary.len() as u32);
        }
        assert!(
            terms.len() > 1 && bad.check(2).is_err(),
            "terms out of order"
        );
        // "src" is in both paths: its two files, swapped.
        let mut bad = p.clone();
        let src = bad.term_id("src").unwrap() as usize;
        let at = entry(&bad.term_file_ends, src).start;
        bad.term_files.swap(at, at + 1);
        assert!(bad.check(2).is_err(), "a term's files out of order");
    }
}
