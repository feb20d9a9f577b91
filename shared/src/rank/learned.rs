//! A learned ranker: boosted trees (LightGBM's lambdarank) trained by `scripts/learn-ranker.sh`
//! on the candidates of 16 repositories that are in neither benchmark, shipped as data
//! (`shared/models/learned_trees.json`: data, kept out of `src/`, which tests index as a
//! sample repository) and evaluated here in plain Rust, so it runs wherever ranking runs.
//!
//! It runs under small budgets ([`super::Weights::learned`], 0.5 up to 8k, fading out by 32k):
//! measured in the real pipeline it gained lines on the held-out repositories at every budget
//! but lost files and, from 32k, lines on the visible benchmark; under small budgets the
//! signposts (`assemble/signposts.rs`) hold the files it lets go (docs/retrieval.md, a learned
//! ranker; signposts). With weight `a`, a candidate's score becomes `score × exp(a × trees)`
//! (the factor is the piece's `learned` signal): the trees re-order what ranking found, they
//! find nothing new. The candidate dump carries [`features`] so that the training script checks
//! its own features against these.

use std::sync::OnceLock;

use rustc_hash::FxHashMap as HashMap;
use serde::Deserialize;

use crate::index::IndexPack;

use super::Ranked;

/// One regression tree as flat arrays: split node `n` sends a feature vector `x` to `left[n]`
/// when `x[feature[n]] <= threshold[n]`, else to `right[n]`; a child below 0 is leaf
/// `-child - 1`.
#[derive(Debug, Deserialize)]
struct Tree {
    feature: Vec<u16>,
    threshold: Vec<f64>,
    left: Vec<i32>,
    right: Vec<i32>,
    leaf: Vec<f64>,
}

impl Tree {
    fn value(&self, x: &[f32]) -> f64 {
        let mut n = 0i32;
        // A tree has fewer splits than this; a malformed one cannot loop for ever.
        for _ in 0..=self.feature.len() {
            if n < 0 {
                break;
            }
            let i = n as usize;
            let v = f64::from(x.get(usize::from(self.feature[i])).copied().unwrap_or(0.0));
            n = if v <= self.threshold[i] {
                self.left[i]
            } else {
                self.right[i]
            };
        }
        let leaf = usize::try_from(-(n + 1)).unwrap_or(usize::MAX);
        self.leaf.get(leaf).copied().unwrap_or(0.0)
    }

    fn well_formed(&self, features: usize) -> bool {
        let splits = self.feature.len();
        let child_ok = |c: i32| {
            (c >= 0 && (c as usize) < splits) || (c < 0 && ((-(c + 1)) as usize) < self.leaf.len())
        };
        splits > 0
            && self.threshold.len() == splits
            && self.left.len() == splits
            && self.right.len() == splits
            && self.feature.iter().all(|&f| usize::from(f) < features)
            && self.left.iter().chain(&self.right).all(|&c| child_ok(c))
    }
}

/// The shipped model.
#[derive(Debug, Deserialize)]
struct Model {
    features: Vec<String>,
    trees: Vec<Tree>,
}

/// The features, in the order the model was trained on (`scripts/fusion/ltr.py`, FEATURES).
const FEATURES: [&str; 19] = [
    "lexical",
    "file",
    "symbol",
    "reference",
    "mention",
    "path",
    "graph",
    "prior",
    "score",
    "share",
    "rank",
    "log_tokens",
    "test",
    "doc",
    "file_max_lexical",
    "file_candidates",
    "file_rank",
    "file_share",
    "lines",
];

/// The model, parsed on first use; `None` if it does not match what this code computes (a
/// build with a stale model ranks as if the weight were 0).
fn model() -> Option<&'static Model> {
    static MODEL: OnceLock<Option<Model>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let model: Model =
                serde_json::from_str(include_str!("../../models/learned_trees.json")).ok()?;
            let ok = model.features.iter().map(String::as_str).eq(FEATURES)
                && model.trees.iter().all(|t| t.well_formed(FEATURES.len()));
            ok.then_some(model)
        })
        .as_ref()
}

fn predict(model: &Model, x: &[f32]) -> f64 {
    model.trees.iter().map(|t| t.value(x)).sum()
}

/// Each candidate's features, as `scripts/fusion/ltr.py` computes them from a candidate dump
/// (`ranked` best first, as ranking returns it before the trees re-score it). The candidate
/// dump carries them too, so that `ltr.py` checks its own against these.
pub fn features(pack: &IndexPack, ranked: &[Ranked]) -> Vec<[f32; 19]> {
    let derived = pack.derived();
    let paths = pack.paths();
    let file_of = |c: u32| {
        derived
            .chunk_file
            .get(c as usize)
            .copied()
            .unwrap_or(u32::MAX)
    };
    let best = ranked
        .first()
        .map_or(1.0, |r| r.score)
        .max(f32::MIN_POSITIVE);
    // Per file: best lexical signal, candidates, best score.
    let mut files: HashMap<u32, (f32, u32, f32)> = HashMap::default();
    for r in ranked {
        let e = files.entry(file_of(r.chunk)).or_insert((0.0, 0, 0.0));
        e.0 = e.0.max(r.signals.lexical);
        e.1 += 1;
        e.2 = e.2.max(r.score);
    }
    let mut seen: HashMap<u32, u32> = HashMap::default();
    let n = ranked.len().max(1) as f32;
    ranked
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let f = file_of(r.chunk);
            let in_file = seen.entry(f).or_insert(0);
            let file_rank = *in_file as f32;
            *in_file += 1;
            let (max_lex, count, file_best) = files.get(&f).copied().unwrap_or_default();
            let chunk = pack.chunks.get(r.chunk as usize);
            let tokens = chunk.and_then(|c| c.tokens.first().copied()).unwrap_or(0);
            let lines = chunk.map_or(1, |c| c.end_line.saturating_sub(c.start_line) + 1);
            let flag =
                |of: &[bool]| f32::from(u8::from(of.get(f as usize).copied().unwrap_or(false)));
            let s = &r.signals;
            [
                s.lexical,
                s.file,
                s.symbol,
                s.reference,
                s.mention,
                s.path,
                s.graph,
                s.prior,
                r.score,
                r.score / best,
                i as f32 / n,
                (tokens as f32).ln_1p(),
                flag(&paths.test_file),
                flag(&paths.doc_file),
                max_lex,
                count as f32,
                file_rank,
                file_best / best,
                lines as f32,
            ]
        })
        .collect()
}

/// Re-scores `ranked` (best first on entry and on return) as `score × exp(weight × trees)`.
pub fn rerank(pack: &IndexPack, ranked: &mut [Ranked], weight: f32) {
    if weight <= 0.0 || ranked.is_empty() {
        return;
    }
    let Some(model) = model() else {
        return;
    };
    let xs = features(pack, ranked);
    for (r, x) in ranked.iter_mut().zip(&xs) {
        let t = predict(model, x);
        let factor = (f64::from(weight) * t).exp().clamp(1e-12, 1e12) as f32;
        r.score *= factor;
        r.signals.learned = factor;
    }
    super::sort_best_first(ranked);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Check {
        x: Vec<f32>,
        y: f64,
    }

    #[derive(Deserialize)]
    struct Checks {
        check: Vec<Check>,
    }

    #[test]
    fn the_shipped_model_loads_and_predicts_as_lightgbm_did() {
        let model = model().expect("the shipped model matches this code's features");
        let checks: Checks =
            serde_json::from_str(include_str!("../../models/learned_trees.json")).unwrap();
        assert!(!checks.check.is_empty());
        for c in &checks.check {
            let got = predict(model, &c.x);
            assert!((got - c.y).abs() < 1e-6, "{got} vs LightGBM's {}", c.y);
        }
    }

    #[test]
    fn malformed_trees_are_refused() {
        let looping = Tree {
            feature: vec![0],
            threshold: vec![0.0],
            left: vec![0],
            right: vec![1],
            leaf: vec![1.0],
        };
        assert!(!looping.well_formed(1), "a child past the splits");
        let fine = Tree {
            feature: vec![0],
            threshold: vec![0.5],
            left: vec![-1],
            right: vec![-2],
            leaf: vec![1.0, 2.0],
        };
        assert!(fine.well_formed(1));
        assert_eq!(fine.value(&[0.2]), 1.0);
        assert_eq!(fine.value(&[0.7]), 2.0);
        assert!(!fine.well_formed(0), "a feature the model does not have");
    }
}
