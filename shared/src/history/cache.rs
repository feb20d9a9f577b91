//! Where summaries are remembered between calls.
//!
//! A summary is a pure function of the summarized messages, their neighbours (chat summaries are
//! context-aware) and the summarizer's version, so that is the key: an unchanged message is never
//! summarized twice, and a new [`super::SUMMARIZER_VERSION`] misses every old entry. The core only
//! defines the interface; hosts decide where entries live (the CLI keeps files under its data
//! directory).

use std::collections::HashMap;

use crate::hash::Sha256Digest;

/// A cache key: what was summarized (and its context), and by which summarizer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SummaryKey {
    /// SHA-256 of the summarized messages and their context.
    pub hash: Sha256Digest,
    /// The summarizer version that produced the entry.
    pub version: String,
}

impl SummaryKey {
    /// A file-system-safe name: `<version>/<hash hex>` (characters other than letters, digits,
    /// `-`, `_` and `.` in the version become `_`).
    pub fn path(&self) -> String {
        let version: String = self
            .version
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{version}/{}", self.hash.to_hex())
    }
}

/// Storage for summaries. Failures are the host's to log: a cache that cannot answer is a miss.
pub trait SummaryCache {
    /// The stored summary, if any.
    fn get(&mut self, key: &SummaryKey) -> Option<String>;
    /// Stores a fresh summary.
    fn put(&mut self, key: &SummaryKey, summary: &str);
}

/// No cache: every summary is computed.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

impl SummaryCache for NoCache {
    fn get(&mut self, _: &SummaryKey) -> Option<String> {
        None
    }
    fn put(&mut self, _: &SummaryKey, _: &str) {}
}

/// An in-memory cache (tests, one server process).
#[derive(Debug, Default, Clone)]
pub struct MemoryCache {
    entries: HashMap<SummaryKey, String>,
}

impl MemoryCache {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl SummaryCache for MemoryCache {
    fn get(&mut self, key: &SummaryKey) -> Option<String> {
        self.entries.get(key).cloned()
    }
    fn put(&mut self, key: &SummaryKey, summary: &str) {
        self.entries.insert(key.clone(), summary.to_string());
    }
}
