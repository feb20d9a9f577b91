//! Facts about an opened pack that every query reads and no query changes, computed on first
//! use and kept with the pack: on deno (14.7k files) splitting every path into terms and
//! testing it for test and doc folders was a fifth of a warm query, and copying the import graph
//! to find each file's neighbours a few percent more.

use crate::graph::ImportGraph;

use super::{ChunkRecord, FileEntry};

/// Per-file facts, indexed like [`super::IndexPack::files`].
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// The terms of every path, sorted, concatenated, with their ends: the ids of
    /// `path_terms`. Their own, not the BM25 dictionary's, whose terms may be in blocks outside
    /// the pack ([`crate::index::lists::KeyBlocks`]).
    path_vocabulary: String,
    path_vocabulary_ends: Vec<u32>,
    /// The term ids of each file's path: `path_terms[path_ends[f-1]..path_ends[f]]`.
    path_terms: Vec<u32>,
    path_ends: Vec<u32>,
    /// Whether each file is a test ([`crate::rank::is_test_path`]).
    pub test_file: Vec<bool>,
    /// Whether each file is documentation ([`crate::rank::is_doc_path`]).
    pub doc_file: Vec<bool>,
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
        let mut vocabulary = std::collections::BTreeSet::new();
        for f in files {
            crate::lexical::for_each_term(&f.path, |t| {
                if !vocabulary.contains(t) {
                    vocabulary.insert(t.to_string());
                }
            });
        }
        let mut path_vocabulary = String::new();
        let mut path_vocabulary_ends = Vec::with_capacity(vocabulary.len());
        for t in &vocabulary {
            path_vocabulary.push_str(t);
            path_vocabulary_ends.push(path_vocabulary.len() as u32);
        }
        drop(vocabulary);
        let derived = Self {
            path_vocabulary,
            path_vocabulary_ends,
            ..Self::default()
        };
        let mut path_terms = Vec::new();
        let mut path_ends = Vec::with_capacity(files.len());
        for f in files {
            let start = path_terms.len();
            crate::lexical::for_each_term(&f.path, |t| {
                if let Some(id) = derived.path_term_id(t)
                    && !path_terms[start..].contains(&id)
                {
                    path_terms.push(id);
                }
            });
            path_ends.push(path_terms.len() as u32);
        }
        let mut neighbour_files = Vec::new();
        let mut neighbour_ends = Vec::with_capacity(graph.imports.len());
        for ns in graph.neighbours() {
            neighbour_files.extend_from_slice(&ns);
            neighbour_ends.push(neighbour_files.len() as u32);
        }
        neighbour_files.shrink_to_fit();
        Self {
            path_terms,
            path_ends,
            test_file: files
                .iter()
                .map(|f| crate::rank::is_test_path(&f.path))
                .collect(),
            doc_file: files
                .iter()
                .map(|f| crate::rank::is_doc_path(&f.path))
                .collect(),
            neighbour_files,
            neighbour_ends,
            chunk_file: chunks.iter().map(|c| c.file).collect(),
            tokens_total: chunks.iter().fold(Vec::new(), |mut total, c| {
                if total.len() < c.tokens.len() {
                    total.resize(c.tokens.len(), 0);
                }
                for (t, n) in total.iter_mut().zip(&c.tokens) {
                    *t += u64::from(*n);
                }
                total
            }),
            ..derived
        }
    }

    /// The id of `term` among the terms of the paths ([`Derived::path_terms`]), if a path has
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

    /// The term ids of file `f`'s path (each once, [`Derived::path_term_id`]).
    pub fn path_terms(&self, f: usize) -> &[u32] {
        let start = if f == 0 {
            0
        } else {
            self.path_ends[f - 1] as usize
        };
        let end = self.path_ends.get(f).copied().unwrap_or(0) as usize;
        self.path_terms.get(start..end).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
