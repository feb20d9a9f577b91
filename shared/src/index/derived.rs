//! Facts about an opened pack that every query reads and no query changes, computed on first
//! use and kept with the pack: copying the import graph to find each file's neighbours was a
//! few percent of a warm query, reading each candidate's file from its chunk record a cache
//! miss per candidate. (The paths' terms and kinds are written with the pack:
//! [`super::path_tables`].)

use crate::graph::ImportGraph;

use super::ChunkRecord;
use super::path_tables::PathTables;

/// Per-file facts, indexed like [`super::IndexPack::files`].
#[derive(Clone, Debug, Default)]
pub struct Derived {
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
    /// The paths' tables of a version whose pack has none (one merged from a base and a
    /// delta), built on first use ([`super::IndexPack::paths`]).
    pub(super) paths: std::sync::OnceLock<PathTables>,
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
    /// Computes the facts of `chunks` and `graph`.
    pub fn of(chunks: &[ChunkRecord], graph: &ImportGraph) -> Self {
        let mut neighbour_files = Vec::new();
        let mut neighbour_ends = Vec::with_capacity(graph.imports.len());
        for ns in graph.neighbours() {
            neighbour_files.extend_from_slice(&ns);
            neighbour_ends.push(neighbour_files.len() as u32);
        }
        neighbour_files.shrink_to_fit();
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
            neighbour_files,
            neighbour_ends,
            chunk_file,
            tokens_total,
            ..Self::default()
        }
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
        let d = Derived::of(&[], &ImportGraph { imports: vec![] });
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
        let d = Derived::of(&[], &graph);
        assert_eq!(d.neighbours(0), &[1, 2]);
        assert_eq!(d.neighbours(1), &[0, 2]);
        assert_eq!(d.neighbours(2), &[0, 1]);
        assert!(d.neighbours(3).is_empty(), "a file past the graph has none");
    }
}
