//! The history signal applied: candidates whose lines were written by commits worded like the
//! request move up ([`crate::index::History`]).

use super::{Ranked, sort_best_first};
use crate::index::IndexPack;

/// Multiplies each candidate's score by `1 + weight × h`, `h` its history score scaled by the
/// best candidate's, and keeps `h` in its signals; `ranked` stays best first. Nothing changes
/// without history, with no query word in its messages, or with `weight` 0.
pub fn rerank_by_history(pack: &IndexPack, ranked: &mut [Ranked], query: &str, weight: f32) {
    if weight <= 0.0 || ranked.is_empty() || pack.history.is_empty() {
        return;
    }
    let chunks: Vec<u32> = ranked.iter().map(|r| r.chunk).collect();
    let scores = pack.history.scores(query, &chunks);
    let best = scores.iter().copied().fold(0.0f32, f32::max);
    if best <= 0.0 || !best.is_finite() {
        return;
    }
    for (r, s) in ranked.iter_mut().zip(scores) {
        let h = s / best;
        r.signals.history = h;
        r.score *= 1.0 + weight * h;
    }
    sort_best_first(ranked);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::History;
    use crate::rank::Signals;
    use std::collections::HashMap;

    fn ranked(chunk: u32, score: f32) -> Ranked {
        Ranked {
            chunk,
            score,
            signals: Signals::default(),
        }
    }

    #[test]
    fn a_chunk_written_by_a_similar_commit_moves_up() {
        let mut pack = crate::index::tests::tiny();
        let messages = vec!["Show choices in the synopsis".to_owned(), "Tidy".to_owned()];
        let df: HashMap<String, u32> = [("show", 1), ("choices", 1), ("synopsis", 1), ("tidy", 1)]
            .into_iter()
            .map(|(w, n)| (w.to_owned(), n))
            .collect();
        pack.history = History::new(5, &df, &messages, &[vec![1], vec![0]]);
        let mut r = vec![ranked(0, 1.0), ranked(1, 0.6)];
        rerank_by_history(
            &pack,
            &mut r,
            "double brackets around choices in the synopsis",
            1.0,
        );
        assert_eq!(r[0].chunk, 1);
        assert_eq!(r[0].signals.history, 1.0);
        assert!((r[0].score - 1.2).abs() < 1e-6);
        assert_eq!(r[1].signals.history, 0.0);
        assert_eq!(r[1].score, 1.0);
        // Off: nothing moves.
        let mut r = vec![ranked(0, 1.0), ranked(1, 0.6)];
        rerank_by_history(&pack, &mut r, "choices synopsis", 0.0);
        assert_eq!((r[0].chunk, r[0].signals.history), (0, 0.0));
    }
}
