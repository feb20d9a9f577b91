//! Facts about an opened pack that every query reads and no query changes, computed on first
//! use and kept with the pack: on deno (14.7k files) splitting every path into terms and
//! testing it for test and doc folders was a fifth of a warm query, and copying the import graph
//! to find each file's neighbours a few percent more.

use crate::graph::ImportGraph;
use crate::lexical::Bm25Index;

use super::{ChunkRecord, FileEntry};

/// Per-file facts, indexed like [`super::IndexPack::files`].
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// The BM25 term ids of each file's path: `path_terms[path_ends[f-1]..path_ends[f]]`.
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
    /// Computes the facts of `files` against `lexical`'s vocabulary and `graph`.
    pub fn of(
        files: &[FileEntry],
        chunks: &[ChunkRecord],
        lexical: &Bm25Index,
        graph: &ImportGraph,
    ) -> Self {
        let mut path_terms = Vec::new();
        let mut path_ends = Vec::with_capacity(files.len());
        for f in files {
            let start = path_terms.len();
            crate::lexical::for_each_term(&f.path, |t| {
                if let Some(id) = lexical.term_id(t) {
                    let id = id as u32;
                    if !path_terms[start..].contains(&id) {
                        path_terms.push(id);
                    }
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
        }
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

    /// The term ids of file `f`'s path (each once).
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
    use crate::lexical::{Bm25Builder, Bm25Params};

    #[test]
    fn neighbours_are_each_files_imports_both_ways() {
        let graph = ImportGraph {
            imports: vec![vec![1], vec![], vec![0, 1]],
        };
        let lexical = Bm25Builder::default().finish(Bm25Params::default());
        let d = Derived::of(&[], &[], &lexical, &graph);
        assert_eq!(d.neighbours(0), &[1, 2]);
        assert_eq!(d.neighbours(1), &[0, 2]);
        assert_eq!(d.neighbours(2), &[0, 1]);
        assert!(d.neighbours(3).is_empty(), "a file past the graph has none");
    }
}
