//! The seam between ranking and selection: the stages that re-order ranked candidates.
//!
//! [`super::rank`] scores candidates from their signals; before selection, a sequence of stages
//! re-orders them: the code that sets a default raised for a question about defaults, the
//! project's history, the code next to strong chunks, file diversity under small budgets, depth
//! around the strongest chunks. Each is a [`Rerank`], run in one place ([`run_stages`]) for both
//! hosts, so a new stage — an embedding re-ranker, an LLM judging the top candidates — plugs in
//! once ([`Rerankers`], carried by `QueryOptions`) and is run by the CLI, `ctxgate serve` and
//! the Worker alike, with the same tuning settings ([`Weights`]).
//!
//! Plugged-in stages run after the stages that score (defaults, history) and before those that
//! shape the list for the budget (neighbours, diversity, depth), so that the shaping applies to
//! their order.

use std::fmt;
use std::sync::Arc;

use crate::index::IndexPack;

use super::{
    Ranked, Weights, boost_defaults, deepen_around_strong_chunks, diversify, rerank_by_history,
    spread_to_neighbours,
};

/// What a stage sees of the request.
pub struct StageInput<'a> {
    /// The index the candidates are chunks of.
    pub pack: &'a IndexPack,
    /// The request as the caller wrote it.
    pub query: &'a str,
    /// The text searched for it (the request, and under `repair` what its error output names).
    pub search_text: &'a str,
    /// The tuning settings as they apply to this request and budget.
    pub weights: &'a Weights,
    /// The tokens the code may take.
    pub budget: u32,
}

/// A stage between ranking and selection. It may change scores, drop candidates or add them
/// (chunks of `input.pack`); `ranked` must be best first when it returns.
pub trait Rerank: Send + Sync {
    /// A short name, for logs and the `Debug` form of the options.
    fn name(&self) -> &'static str;
    /// Re-orders `ranked` for the request `input`.
    fn rerank(&self, input: &StageInput<'_>, ranked: &mut Vec<Ranked>);
}

/// Stages plugged in by a host, run in order between the built-in scoring and shaping stages.
#[derive(Clone, Default)]
pub struct Rerankers(Vec<Arc<dyn Rerank>>);

impl Rerankers {
    /// The stages `stages`, run in this order.
    pub fn new(stages: Vec<Arc<dyn Rerank>>) -> Self {
        Self(stages)
    }

    /// Whether no stage is plugged in.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Rerankers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|s| s.name()))
            .finish()
    }
}

/// A built-in stage: one of the rank module's steps under its name.
struct Builtin(&'static str, fn(&StageInput<'_>, &mut Vec<Ranked>));

impl Rerank for Builtin {
    fn name(&self) -> &'static str {
        self.0
    }
    fn rerank(&self, input: &StageInput<'_>, ranked: &mut Vec<Ranked>) {
        (self.1)(input, ranked);
    }
}

/// The stages that score: the code that sets a default raised for a question about a default
/// ([`boost_defaults`]), the project's commit messages as evidence ([`rerank_by_history`]).
const SCORING: [Builtin; 2] = [
    Builtin("defaults", |i, r| {
        boost_defaults(i.pack, r, i.query, i.weights.defaults)
    }),
    Builtin("history", |i, r| {
        rerank_by_history(i.pack, r, i.search_text, i.weights.history)
    }),
];

/// The stages that shape the list for the budget: the code next to strong chunks
/// ([`spread_to_neighbours`]), more files under small budgets ([`diversify`]), the code around
/// the strongest chunks first ([`deepen_around_strong_chunks`]).
const SHAPING: [Builtin; 3] = [
    Builtin("neighbours", |i, r| {
        spread_to_neighbours(i.pack, r, i.weights, i.budget)
    }),
    Builtin("diversity", |i, r| {
        diversify(
            i.pack,
            r,
            i.weights.file_decay,
            i.weights.decay_exempt,
            i.budget,
        )
    }),
    Builtin("depth", |i, r| {
        deepen_around_strong_chunks(i.pack, r, i.weights, i.budget)
    }),
];

/// Runs the built-in stages and the plugged-in ones (`plugged`) on `ranked`, in their order:
/// defaults, history, the plugged-in stages, neighbours, diversity, depth.
pub fn run_stages(input: &StageInput<'_>, plugged: &Rerankers, ranked: &mut Vec<Ranked>) {
    let scoring = SCORING.iter().map(|s| s as &dyn Rerank);
    let shaping = SHAPING.iter().map(|s| s as &dyn Rerank);
    for stage in scoring
        .chain(plugged.0.iter().map(|s| s.as_ref()))
        .chain(shaping)
    {
        stage.rerank(input, ranked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str);

    impl Rerank for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn rerank(&self, _: &StageInput<'_>, _: &mut Vec<Ranked>) {}
    }

    #[test]
    fn plugged_stages_show_by_name() {
        let r = Rerankers::new(vec![Arc::new(Named("dense")), Arc::new(Named("llm"))]);
        assert_eq!(format!("{r:?}"), r#"["dense", "llm"]"#);
        assert!(!r.is_empty() && Rerankers::default().is_empty());
    }
}
