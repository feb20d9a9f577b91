//! How recently each file changed, from the repository's git history (the indexer reads it; a
//! project without history has none and the signal stays 0).
//!
//! Files that changed in the last commits are where work is going on: a request about a bug or
//! a feature is more likely to be about them than about code untouched for years. The
//! indexer walks HEAD's first-parent chain back up to [`WINDOW`] commits and records, per
//! file, how many commits ago it last changed.

use serde::{Deserialize, Serialize};

/// Commits walked back from HEAD.
pub const WINDOW: u32 = 500;

/// Half-life of the signal, in commits: a file changed this many commits ago scores 0.5.
pub const HALF_LIFE: f32 = 25.0;

/// Per file, commits since its last change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Recency {
    /// Commits walked (0: no history).
    commits: u32,
    /// `(file index, commits since its last change)`, by file index.
    ages: Vec<(u32, u32)>,
}

impl Recency {
    /// Whether every file it names is one of the first `files` (a decoded pack's check).
    pub fn within(&self, files: usize) -> bool {
        self.ages.iter().all(|&(f, _)| (f as usize) < files)
    }

    /// From `(file index, age)` pairs over `commits` walked commits.
    pub fn new(commits: u32, mut ages: Vec<(u32, u32)>) -> Self {
        ages.sort_unstable();
        ages.dedup_by_key(|a| a.0);
        Self { commits, ages }
    }

    /// Commits since `file` last changed, if it did within the walked history.
    pub fn age(&self, file: u32) -> Option<u32> {
        let i = self.ages.binary_search_by_key(&file, |a| a.0).ok()?;
        Some(self.ages[i].1)
    }

    /// 0-1: 1 for a file the last commit changed, halving every [`HALF_LIFE`] commits, 0 for
    /// files not changed in the walked history (or without history).
    pub fn score(&self, file: u32) -> f32 {
        self.age(file)
            .map_or(0.0, |age| 0.5f32.powf(age as f32 / HALF_LIFE))
    }

    /// Commits walked.
    pub fn commits(&self) -> u32 {
        self.commits
    }

    /// Files with a known last change.
    pub fn files(&self) -> usize {
        self.ages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_changes_score_higher() {
        let r = Recency::new(100, vec![(3, 0), (1, 25), (2, 99), (1, 30)]);
        assert_eq!(r.age(1), Some(25));
        assert_eq!(r.score(3), 1.0);
        assert!((r.score(1) - 0.5).abs() < 1e-6);
        assert!(r.score(2) < r.score(1));
        assert_eq!(r.score(7), 0.0);
        assert_eq!(Recency::default().score(0), 0.0);
    }
}
