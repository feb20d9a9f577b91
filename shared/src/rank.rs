//! Scoring candidates from several signals, each kept so that every piece can say why it was
//! chosen.
//!
//! Signals, each scaled to 0-1 within a request:
//! - `lexical`: the chunk's BM25 score over code-aware terms;
//! - `file`: the BM25 evidence of the chunk's whole file (its best chunk plus a share of the
//!   rest), so that a chunk in the file the request is about outranks a lucky match elsewhere;
//! - `symbol`: the chunk defines a symbol the request names;
//! - `mention`: the chunk's file is named in the request (a path, a file name, a stack frame);
//! - `path`: the request's words in the chunk's file path (`binding`, `pager`), weighted by
//!   their rarity: a request about "the pager" is about `src/pager.rs` first;
//! - `dense`: the chunk's embedding is among the nearest to the request's ([`crate::dense`];
//!   only when the caller embedded the request), scaled between the weakest and strongest of
//!   those neighbours;
//! - `graph`: the chunk's file imports, or is imported by, a file holding a strong hit
//!   ([`crate::graph`]); it counts only for chunks that match the request themselves;
//! - `history`: the messages of the commits that wrote the chunk's lines resemble the request
//!   ([`crate::index::History`]; only where the index has the project's git history); a
//!   multiplier of the candidates' scores ([`rerank_by_history`]).
//!
//! The score is their weighted sum ([`Weights`]), times the file-kind prior; the graph share is
//! computed from the other signals' scores, so it never feeds on itself. Under small budgets
//! [`diversify`] then lowers each file's further chunks so that more files are reached; at
//! every budget [`deepen_around_strong_chunks`] gives the places those further chunks take to
//! the code next to the strongest chunks first.

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use crate::index::IndexPack;
use crate::intent::QueryAnalysis;
use crate::scratch::Scratch;

mod defaults;
mod depth;
mod history;
mod learned;

pub use learned::features as learned_features;
mod neighbours;
mod signals;
mod stages;

pub use defaults::{boost_defaults, is_question};
pub use depth::deepen_around_strong_chunks;
pub use history::rerank_by_history;
pub use neighbours::spread_to_neighbours;
pub use stages::{Rerank, Rerankers, StageInput, run_stages};

/// Per-signal scores of one candidate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Signals {
    /// Chunk BM25, scaled by the best chunk's.
    #[serde(serialize_with = "small_number")]
    pub lexical: f32,
    /// File BM25, scaled by the best file's.
    #[serde(serialize_with = "small_number")]
    pub file: f32,
    /// 1 when the chunk defines a named symbol, 0.5 for a partial match.
    #[serde(serialize_with = "small_number")]
    pub symbol: f32,
    /// 1 when the chunk uses a symbol the request names (one of its most relevant users:
    /// callers, implementations, call sites).
    #[serde(serialize_with = "small_number")]
    pub reference: f32,
    /// How recently the chunk's file changed in git history (1 for the last commit, halving
    /// every 25 commits; 0 without history). Only chunks with other evidence get it.
    #[serde(serialize_with = "small_number")]
    pub recency: f32,
    /// 1 when the chunk's file is named in the request.
    #[serde(serialize_with = "small_number")]
    pub mention: f32,
    /// Share of the request's term weight (BM25 idf) found in the file's path.
    #[serde(serialize_with = "small_number")]
    pub path: f32,
    /// Best score of an import neighbour's file, scaled by the best file's.
    #[serde(serialize_with = "small_number")]
    pub graph: f32,
    /// Nearness of the chunk's embedding to the request's (0 without dense retrieval).
    #[serde(serialize_with = "small_number")]
    pub dense: f32,
    /// Multiplier for the kind of file: tests and documentation count less unless the intent
    /// asks for them (`test`, `explain`).
    #[serde(serialize_with = "small_number")]
    pub prior: f32,
    /// Multiplier for file diversity under small budgets ([`diversify`]); 1 for a file's best
    /// chunk.
    #[serde(serialize_with = "small_number")]
    pub diversity: f32,
    /// Best score of a strong chunk near it in its file, scaled by the best score
    /// ([`spread_to_neighbours`]).
    #[serde(serialize_with = "small_number")]
    pub neighbour: f32,
    /// Multiplier the learned ranker applied (`rank/learned.rs`); 1 where it is off.
    #[serde(serialize_with = "small_number")]
    pub learned: f32,
    /// How much the messages of the commits that wrote the chunk's lines resemble the request,
    /// scaled by the best candidate's (0 without history; [`rerank_by_history`]).
    #[serde(serialize_with = "small_number")]
    pub history: f32,
}

/// Writes a score or signal to JSON: a whole number up to 255 (most signals of most pieces are
/// 0, the multipliers 1) as an integer, anything else as a float. A response carries a dozen of
/// them per piece, and a float costs a shortest-digits conversion whose 128-bit arithmetic
/// WebAssembly emulates: about 1 ms of a Worker's warm call with every value a float.
pub fn small_number<S: serde::Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && (0.0..=255.0).contains(v) {
        s.serialize_u8(*v as u8)
    } else {
        s.serialize_f32(*v)
    }
}

impl Default for Signals {
    fn default() -> Self {
        Self {
            lexical: 0.0,
            file: 0.0,
            symbol: 0.0,
            reference: 0.0,
            recency: 0.0,
            mention: 0.0,
            path: 0.0,
            graph: 0.0,
            dense: 0.0,
            prior: 1.0,
            diversity: 1.0,
            learned: 1.0,
            neighbour: 0.0,
            history: 0.0,
        }
    }
}

mod weights;

pub use weights::*;

/// Sorts candidates best first: score descending ([`f32::total_cmp`]), then chunk index (each
/// chunk is ranked once, so the order is total).
///
/// Sorted as small keys with their positions, then gathered once: a candidate is about 80
/// bytes, which a radix sort's passes would each move.
pub(crate) fn sort_best_first(ranked: &mut [Ranked]) {
    let mut order: Vec<(u64, u32)> = ranked
        .iter()
        .enumerate()
        .map(|(k, r)| (crate::order::best_first_key(r.score, r.chunk), k as u32))
        .collect();
    crate::order::sort_keys(&mut order, |o| o.0);
    let sorted: Vec<Ranked> = order.iter().map(|&(_, k)| ranked[k as usize]).collect();
    ranked.copy_from_slice(&sorted);
}

/// A scored candidate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ranked {
    /// Chunk index in the pack.
    pub chunk: u32,
    /// Combined score.
    pub score: f32,
    /// Why.
    pub signals: Signals,
}

/// The signals of the chunks a request touched, kept compactly: a large repository has many
/// more chunks than any request has candidates, so nothing here walks every chunk unless the
/// request names a symbol.
struct Touched {
    /// One past the position of each chunk's signals in `signals`, or 0: the thread's array,
    /// zero again when [`Touched::release`] gives it back.
    at: Scratch<u32>,
    /// Chunk indices in the order they were touched.
    chunks: Vec<u32>,
    /// Their files.
    files: Vec<u32>,
    signals: Vec<Signals>,
}

thread_local! {
    /// [`Touched::at`] between requests.
    static TOUCHED_AT: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Touched {
    /// Room for `expected` chunks (the hits that will be touched first): grown by doubling,
    /// the signals were copied over and over.
    fn new(chunk_file: &'_ [u32], expected: usize) -> Self {
        Self {
            at: Scratch::take(&TOUCHED_AT, chunk_file.len()),
            chunks: Vec::with_capacity(expected),
            files: Vec::with_capacity(expected),
            signals: Vec::with_capacity(expected),
        }
    }

    /// The signals of chunk `c` (in file `file`), touching it.
    fn touch(&mut self, c: u32, file: u32) -> &mut Signals {
        let slot = &mut self.at.entries()[c as usize];
        if *slot == 0 {
            self.chunks.push(c);
            self.files.push(file);
            self.signals.push(Signals::default());
            *slot = self.signals.len() as u32;
        }
        let at = *slot as usize - 1;
        &mut self.signals[at]
    }

    /// Gives the position array back, every entry zero again.
    fn release(mut self) {
        let at = self.at.entries();
        for &c in &self.chunks {
            at[c as usize] = 0;
        }
        self.at.cleared();
    }

    /// The signals of chunk `c` when it was touched.
    fn get(&self, c: u32) -> Option<&Signals> {
        match self.at.get(c as usize) {
            Some(slot) if slot != 0 => self.signals.get(slot as usize - 1),
            _ => None,
        }
    }
}

/// The symbols a request names, as the symbol and reference signals compare them
/// ([`crate::index::references::name_key`]).
pub fn named_symbols(analysis: &QueryAnalysis) -> Vec<String> {
    signals::wanted_symbols(analysis)
}

/// Scores the chunks of `pack` for a request whose search terms the index holds are `term_idf`
/// (each with its BM25 idf, in query order), with BM25 hits `hits`
/// (chunk, score), dense hits `dense` (chunk, 0-1 from [`crate::dense::scaled_hits`]) and the
/// users of each symbol it names (`named`, from [`named_symbols`]), best first.
pub fn rank(
    pack: &IndexPack,
    hits: &[(u32, f32)],
    dense: &[(u32, f32)],
    term_idf: &[(String, f32)],
    analysis: &QueryAnalysis,
    weights: &Weights,
    named: &[(String, Vec<u32>)],
) -> Vec<Ranked> {
    let derived = pack.derived();
    let mut touched = Touched::new(&derived.chunk_file, hits.len() + dense.len());
    let evidence = signals::touch_lexical(&mut touched, pack, hits);
    signals::touch_dense(&mut touched, &derived.chunk_file, dense);
    signals::set_file(&mut touched, &evidence, weights);
    evidence.release(&touched.files);
    let mentioned = signals::mentioned_files(pack, analysis);
    let named_doc = signals::touch_mentioned(&mut touched, pack, &mentioned);
    let wanted = signals::wanted_symbols(analysis);
    signals::touch_symbols(&mut touched, pack, &wanted);
    // References: the most relevant users of each named symbol.
    if weights.reference != 0.0 {
        signals::touch_references(&mut touched, pack, named);
    }
    signals::set_priors(
        &mut touched,
        pack,
        derived,
        &mentioned,
        &named_doc,
        analysis,
        weights,
    );
    // Path: the share of the request's term weight in each file's path.
    if weights.path != 0.0 {
        signals::set_path(&mut touched, pack, term_idf);
    }
    // Recency of the file, for chunks that already have evidence (reported even when its
    // weight is 0).
    if pack.recency.files() > 0 {
        signals::set_recency(&mut touched, pack);
    }
    // Graph: files next to a strong file share its best score.
    if weights.graph != 0.0 && !pack.graph.imports.is_empty() {
        signals::set_graph(&mut touched, pack, weights);
    }
    let mut ranked = best_first(&touched, weights);
    touched.release();
    learned::rerank(pack, &mut ranked, weights.learned);
    ranked
}

/// The candidates with a positive score, best first (ties by chunk index).
fn best_first(touched: &Touched, weights: &Weights) -> Vec<Ranked> {
    // Sorted as small keys, then built in order: moving whole candidates about in the sort was
    // a tenth of a warm query on a large repository.
    let mut order: Vec<u64> = Vec::with_capacity(touched.chunks.len());
    order.extend(
        touched
            .chunks
            .iter()
            .zip(&touched.signals)
            .map(|(&c, s)| (weights.score(s), c))
            .filter(|o| o.0 > 0.0)
            .map(|(score, c)| crate::order::best_first_key(score, c)),
    );
    crate::order::sort_keys(&mut order, |&k| k);
    // Sized up front: a filtered collect grows by doubling, copying the candidates built so far
    // (thousands on a large repository) each time.
    let mut ranked = Vec::with_capacity(order.len());
    ranked.extend(order.into_iter().filter_map(|key| {
        let chunk = crate::order::id_of(key);
        let signals = *touched.get(chunk)?;
        Some(Ranked {
            chunk,
            score: crate::order::score_of(key),
            signals,
        })
    }));
    ranked
}

/// At or under this budget [`diversify`] applies [`Weights::file_decay`] in full.
pub const DIVERSE_UP_TO: u32 = 8_000;
/// At or over this budget [`diversify`] leaves the order alone.
pub const DEEP_FROM: u32 = 32_000;

/// Spreads a small budget over more files: a file's k-th best chunk (from 0) has its score
/// multiplied by `decay^k`. A budget that holds a few pieces is better spent on the best chunk
/// of each likely file than on the second chunk of the first (a change often touches several
/// files); a large one reaches those files anyway and gains from depth. Between
/// [`DIVERSE_UP_TO`] and [`DEEP_FROM`] the decay fades out, linearly in log2 of the budget.
/// The multiplier is kept in each candidate's [`Signals::diversity`]. `ranked` stays best first.
pub fn diversify(pack: &IndexPack, ranked: &mut [Ranked], decay: f32, exempt: f32, budget: u32) {
    let decay = decay_at(decay, budget);
    // Each chunk's file from the derived table: a chunk record is large enough that reading
    // one per candidate missed the cache each time.
    let chunk_file = &pack.derived().chunk_file;
    decay_by_file(ranked, decay, exempt, |c| {
        chunk_file.get(c as usize).copied()
    });
}

/// The decay [`diversify`] applies for `budget` tokens.
fn decay_at(decay: f32, budget: u32) -> f32 {
    1.0 - (1.0 - decay.clamp(0.0, 1.0)) * small_budget_strength(budget)
}

/// How much the small-budget steps count at `budget` tokens: 1 up to [`DIVERSE_UP_TO`], 0 from
/// [`DEEP_FROM`], linear in log2 of the budget between.
pub(crate) fn small_budget_strength(budget: u32) -> f32 {
    let span = (f64::from(DEEP_FROM) / f64::from(DIVERSE_UP_TO)).log2();
    let depth = (f64::from(DEEP_FROM) / f64::from(budget.max(1))).log2() / span;
    depth.clamp(0.0, 1.0) as f32
}

fn decay_by_file(
    ranked: &mut [Ranked],
    decay: f32,
    exempt: f32,
    file_of: impl Fn(u32) -> Option<u32>,
) {
    if decay >= 1.0 {
        return;
    }
    let best = ranked.iter().map(|r| r.score).fold(0.0f32, f32::max);
    let mut taken: HashMap<u32, (i32, bool)> = HashMap::default();
    for r in ranked.iter_mut() {
        let Some(file) = file_of(r.chunk) else {
            continue;
        };
        let (k, certain) = taken
            .entry(file)
            .or_insert((0, best > 0.0 && r.score >= exempt * best));
        let factor = if *certain { 1.0 } else { decay.powi(*k) };
        r.signals.diversity = factor;
        r.score *= factor;
        *k += 1;
    }
    sort_best_first(ranked);
}

pub use crate::path_kind::{is_doc_path, is_test_path};

/// Whether a repository path is the one the request names (`src/a.rs`, `a.rs`, `./src/a.rs`).
fn path_matches(repo_path: &str, named: &str) -> bool {
    let named = named.trim_start_matches("./").trim_start_matches('/');
    if named.is_empty() {
        return false;
    }
    repo_path == named || repo_path.ends_with(&format!("/{named}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::references::name_key;

    #[test]
    fn paths_match_by_suffix_only_at_component_boundaries() {
        assert!(path_matches("src/context.go", "context.go"));
        assert!(path_matches("src/context.go", "./src/context.go"));
        assert!(!path_matches("src/mycontext.go", "context.go"));
        assert_eq!(name_key("HttpClient::send"), "send");
        assert_eq!(name_key("a.b.c"), "c");
    }

    #[test]
    fn small_budgets_reach_more_files_and_large_ones_keep_the_order() {
        assert_eq!(decay_at(0.9, 4_000), 0.9);
        assert_eq!(decay_at(0.9, DIVERSE_UP_TO), 0.9);
        assert_eq!(decay_at(0.9, DEEP_FROM), 1.0);
        assert_eq!(decay_at(0.9, 128_000), 1.0);
        let mid = decay_at(0.9, 16_000);
        assert!(mid > 0.9 && mid < 1.0, "{mid}");

        // Chunks 0-2 are in file 0, chunk 3 in file 1.
        let ranked = |scores: [f32; 4]| -> Vec<Ranked> {
            scores
                .iter()
                .enumerate()
                .map(|(i, &score)| Ranked {
                    chunk: i as u32,
                    score,
                    signals: Signals::default(),
                })
                .collect()
        };
        let file_of = |c: u32| Some(u32::from(c == 3));
        let mut r = ranked([1.0, 0.95, 0.9, 0.88]);
        decay_by_file(&mut r, 0.9, 2.0, file_of);
        let order: Vec<u32> = r.iter().map(|x| x.chunk).collect();
        // File 1's only chunk passes file 0's second and third.
        assert_eq!(order, vec![0, 3, 1, 2]);
        assert_eq!(r[2].signals.diversity, 0.9);
        assert!((r[3].score - 0.9 * 0.81).abs() < 1e-6);

        let mut kept = ranked([1.0, 0.95, 0.9, 0.88]);
        decay_by_file(&mut kept, decay_at(0.9, 64_000), 2.0, file_of);
        assert_eq!(kept, ranked([1.0, 0.95, 0.9, 0.88]));

        // A file whose best chunk is the best of all keeps its depth when exempt.
        let mut deep = ranked([1.0, 0.95, 0.9, 0.88]);
        decay_by_file(&mut deep, 0.9, 0.95, file_of);
        assert_eq!(deep, ranked([1.0, 0.95, 0.9, 0.88]));
        // ... and only such a file: here file 1 (0.88 of the best) is under the share.
        let file_of_three = |c: u32| Some(u32::from(c >= 2));
        let mut mixed = ranked([1.0, 0.95, 0.9, 0.88]);
        decay_by_file(&mut mixed, 0.9, 0.95, file_of_three);
        let order: Vec<u32> = mixed.iter().map(|x| x.chunk).collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert!((mixed[3].score - 0.88 * 0.9).abs() < 1e-6);
    }
}
