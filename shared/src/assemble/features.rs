//! Every candidate of a query with its signals, for fitting the ranking weights offline
//! (`scripts/learn-fusion.sh`): the assembled prompt reports only the pieces it chose, and a fit
//! must also see the gold chunks that ranked too low to be chosen.

use crate::intent::Intent;
use crate::rank::{Signals, learned_features, rank};

use super::retrieve::{add_hot_paths, retrieve, search_terms, understood};
use super::{AssembleError, ChunkSource, Halt, QueryOptions};
use crate::index::IndexPack;

/// One candidate as ranking saw it, before file diversity.
#[derive(Clone, Debug, PartialEq)]
pub struct CandidateFeatures {
    /// Pack index of the chunk.
    pub chunk: u32,
    /// Its score under the options' weights.
    pub score: f32,
    /// Its signals (the file-kind prior already applied for the options' weights).
    pub signals: Signals,
    /// Its file is a test ([`crate::rank::is_test_path`]): with `doc_file`, what a fit needs to
    /// recompute the prior for other test/doc weights.
    pub test_file: bool,
    /// Its file is documentation ([`crate::rank::is_doc_path`]).
    pub doc_file: bool,
    /// What the learned ranker reads of it ([`crate::rank::learned_features`]), from this
    /// ranking: the ranker's own input when the options' `learned` weight is 0, as the dumps it
    /// is trained on are made.
    pub trees_input: [f32; 19],
}

/// A query's candidates and what about the query moves the priors.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryFeatures {
    /// The request asks for tests (the test prior does not apply).
    pub wants_tests: bool,
    /// The request asks for an explanation (the doc prior does not apply).
    pub wants_docs: bool,
    /// Every candidate with a positive score, best first.
    pub candidates: Vec<CandidateFeatures>,
}

/// Ranks `query` as [`super::plan`] does (the `repair` profile's error output aside) and
/// returns every candidate instead of a selection. The steps of `plan` that depend on the
/// budget — the regions of strong files and file diversity — are not applied (a dump serves
/// every budget): their signals read 0 here, and a fit simulates them itself. The source holds
/// every list (offline, local files): one it lacks is [`AssembleError::Unread`].
pub fn candidate_features(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    query: &str,
    options: &QueryOptions,
) -> Result<QueryFeatures, AssembleError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(AssembleError::EmptyQuery);
    }
    let (mut intent, search_text) = understood(query, None);
    let terms = search_terms(query, &search_text);
    let retrieved = Halt::step(retrieve(pack, source, &terms, &intent, options))?.ready()?;
    add_hot_paths(&mut intent, options);
    let ranked = rank(
        pack,
        &retrieved.hits,
        &options.dense,
        &retrieved.term_idf,
        &intent,
        &options.weights,
        &retrieved.named,
    );
    let derived = pack.derived();
    let paths = pack.paths();
    let kind = |c: u32, of: &[bool]| {
        derived
            .chunk_file
            .get(c as usize)
            .and_then(|&f| of.get(f as usize))
            .copied()
            .unwrap_or(false)
    };
    let inputs = learned_features(pack, &ranked);
    let candidates = ranked
        .into_iter()
        .zip(inputs)
        .map(|(r, trees_input)| CandidateFeatures {
            chunk: r.chunk,
            score: r.score,
            signals: r.signals,
            test_file: kind(r.chunk, &paths.test_file),
            doc_file: kind(r.chunk, &paths.doc_file),
            trees_input,
        })
        .collect();
    Ok(QueryFeatures {
        wants_tests: intent.intent == Intent::Test,
        wants_docs: intent.intent == Intent::Explain,
        candidates,
    })
}
