//! What the benchmarks share: the corpus (`scripts/bench-corpus.sh`), its queries, percentiles.

pub mod workerd;

use std::path::PathBuf;

/// Questions about the corpus's crates (regex, clap, serde_json, rayon, bstr).
#[allow(dead_code)]
pub const QUERIES: &[&str] = &[
    "how does the lazy DFA handle cache clearing when the cache is full",
    "where are command line arguments validated and conflicts reported",
    "serialize a map with non-string keys to JSON",
    "parallel iterator splitting and work stealing join",
    "find the byte position of a substring quickly with memchr",
];

/// The corpus folder (`CTXGATE_BENCH_CORPUS`, else `target/bench-corpus`); exits with a hint
/// when it has not been built.
#[allow(dead_code)]
pub fn corpus() -> PathBuf {
    let corpus = PathBuf::from(
        std::env::var("CTXGATE_BENCH_CORPUS").unwrap_or_else(|_| "target/bench-corpus".into()),
    );
    if !corpus.is_dir() {
        eprintln!(
            "no corpus at {}: run scripts/bench-corpus.sh first (or the bench's script)",
            corpus.display()
        );
        std::process::exit(1);
    }
    corpus
}

/// The `p` quantile (0-1) of ascending `sorted`, nearest rank.
#[allow(dead_code)]
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
