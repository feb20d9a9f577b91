//! Choosing pieces within a token budget.
//!
//! For now the value of a piece is its retrieval score and selection is greedy by score: take
//! the best piece that still fits, and keep filling the remainder with smaller ones. Each piece
//! also pays for its provenance header, so a budget is never spent on headers it did not plan.
//! The composer re-counts the final prompt exactly afterwards; selection only has to be close.

/// A piece that could go into the context.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The caller's handle (a chunk index).
    pub key: u32,
    /// Its size in the target model's tokens.
    pub tokens: u32,
    /// How relevant it is; higher is better.
    pub score: f32,
}

/// What selection decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// Chosen candidates, best first.
    pub chosen: Vec<Candidate>,
    /// Tokens the chosen pieces take, headers included.
    pub tokens: u64,
    /// Candidates that were relevant but did not fit.
    pub left_out: usize,
}

/// Picks candidates best-first while they fit in `budget`, each costing its tokens plus
/// `overhead` for its header.
pub fn select_greedy(mut candidates: Vec<Candidate>, budget: u32, overhead: u32) -> Selection {
    candidates.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    let mut remaining = u64::from(budget);
    let mut chosen = Vec::new();
    let mut left_out = 0;
    let mut used = 0u64;
    for c in candidates {
        let cost = u64::from(c.tokens) + u64::from(overhead);
        if cost <= remaining {
            remaining -= cost;
            used += cost;
            chosen.push(c);
        } else {
            left_out += 1;
        }
    }
    Selection {
        chosen,
        tokens: used,
        left_out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn best_first_then_fill() {
        let c = |key, tokens, score| Candidate { key, tokens, score };
        let s = select_greedy(
            vec![c(0, 60, 1.0), c(1, 50, 3.0), c(2, 40, 2.0), c(3, 5, 0.5)],
            101,
            2,
        );
        let keys: Vec<u32> = s.chosen.iter().map(|c| c.key).collect();
        assert_eq!(keys, [1, 2, 3]);
        assert_eq!(s.tokens, 50 + 40 + 5 + 6);
        assert_eq!(s.left_out, 1);
    }

    proptest! {
        #[test]
        fn never_over_budget(tokens in prop::collection::vec((0u32..5000, 0f32..10.0), 0..200), budget in 0u32..20_000, overhead in 0u32..50) {
            let cands = tokens.iter().enumerate().map(|(i, (t, s))| Candidate { key: i as u32, tokens: *t, score: *s }).collect();
            let s = select_greedy(cands, budget, overhead);
            prop_assert!(s.tokens <= u64::from(budget));
        }
    }
}
