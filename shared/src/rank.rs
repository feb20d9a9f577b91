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

mod defaults;
mod depth;
mod history;
mod learned;

pub use learned::features as learned_features;
mod neighbours;
mod signals;

pub use defaults::{boost_defaults, is_question};
pub use depth::deepen_around_strong_chunks;
pub use history::rerank_by_history;
pub use neighbours::spread_to_neighbours;

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

/// How much each signal counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Weights {
    /// Weight of [`Signals::lexical`].
    pub lexical: f32,
    /// Weight of [`Signals::file`].
    pub file: f32,
    /// Weight of [`Signals::symbol`].
    pub symbol: f32,
    /// Weight of [`Signals::reference`].
    pub reference: f32,
    /// Weight of [`Signals::recency`].
    pub recency: f32,
    /// Weight of [`Signals::mention`].
    pub mention: f32,
    /// Weight of [`Signals::path`].
    pub path: f32,
    /// Weight of [`Signals::graph`].
    pub graph: f32,
    /// Weight of [`Signals::dense`].
    pub dense: f32,
    /// Share of a file's other chunks' evidence added to its best chunk's.
    pub file_spread: f32,
    /// Multiplier for test files when the intent is not `test`.
    pub test_prior: f32,
    /// Multiplier for documentation when the intent is not `explain`.
    pub doc_prior: f32,
    /// How strongly size counts against a piece when the budget is filled: pieces are taken in
    /// order of `score / tokens^size_penalty` (0 = by score alone).
    pub size_penalty: f32,
    /// Under a small budget a file's k-th best chunk (from 0) has its score multiplied by
    /// `file_decay^k`, so that the budget reaches more files before it takes a second chunk of
    /// one (1 = off; see [`diversify`]).
    pub file_decay: f32,
    /// A file whose best chunk scores at least this share of the best chunk's score is exempt
    /// from [`Self::file_decay`]: a file that certain gets depth (above 1 = none is exempt).
    pub decay_exempt: f32,
    /// How many left-out candidates are tried as their signature in the room left (0 = off; a
    /// count, kept here with the other tuned selection settings).
    pub alternatives: f32,
    /// Weight of [`Signals::neighbour`].
    pub neighbour: f32,
    /// Share of the best score a chunk needs for its neighbours to get the neighbour signal.
    pub neighbour_floor: f32,
    /// How many chunks away, each way in its file, a strong chunk's neighbours are.
    pub neighbour_reach: f32,
    /// The budget (tokens) up to which the neighbour signal is off; it fades in to full weight
    /// at four times that (`rank/neighbours.rs`, `strength_at`).
    pub neighbour_from: f32,
    /// How far the chunks next to a strong chunk go ahead of its file's other further chunks in
    /// the places those take ([`deepen_around_strong_chunks`]; 0 = off).
    pub depth_neighbour: f32,
    /// Share of the best score a chunk needs for its neighbours to go ahead.
    pub depth_floor: f32,
    /// How many chunks away, each way in its file, those neighbours are.
    pub depth_reach: f32,
    /// The share of a strong chunk's depth place that its callers and callees in its file take
    /// ([`deepen_around_strong_chunks`]; 0 = off).
    pub depth_calls: f32,
    /// How much the learned ranker re-scores the candidates under small budgets: a score
    /// becomes `score × exp(learned × trees)` (`rank/learned.rs`; 0 = off), in full up to
    /// [`DIVERSE_UP_TO`], fading out by [`DEEP_FROM`] ([`Weights::at_budget`]).
    pub learned: f32,
    /// The share of the room kept, under small budgets, for signposts: one line of each further
    /// file the pieces leave out (`assemble/signposts.rs`; 0 = off). In full up to
    /// [`DIVERSE_UP_TO`], none from [`DEEP_FROM`].
    pub signposts: f32,
    /// How much the history signal raises a score: `score × (1 + history × signal)`
    /// ([`rerank_by_history`]; 0 = off).
    pub history: f32,
    /// How much a path word's commonness among the repository's paths weakens the path
    /// signal: each word counts `rarity^path_rarity`, where rarity is 1 for a word in one
    /// path and falls to 0 for a word in every path (0 = off, every path word counts in full).
    pub path_rarity: f32,
    /// Multiplier for files set aside from code context ([`crate::path_kind::SetAside`]: built
    /// output, vendored code, seeds and tiny data files) unless the request names them
    /// (1 = off).
    pub set_aside_prior: f32,
    /// How much a request that asks for a default raises the chunks that usually set them
    /// (`rank/defaults.rs`: constant blocks, constructors, functions named for defaults; 1 =
    /// off).
    pub defaults: f32,
    /// The path weight ([`Weights::path`]) for a question ([`is_question`]): a question's
    /// words name what it is about in prose ("how is the token budget enforced?"), and a file
    /// named after one of them is less often the answer than a changed file is in a change
    /// request.
    pub question_path: f32,
    /// Multiplier for documentation when the intent is `explain` (questions, "how does … work")
    /// and the request does not name the file: prose answers a question in words, but the
    /// lines that answer it are in the code.
    pub explain_doc_prior: f32,
    /// [`Weights::explain_doc_prior`] for a question ([`is_question`]).
    pub question_doc_prior: f32,
}

/// Tuned on the visible retrieval benchmark (`scripts/bench-retrieval.sh`; the grid and its
/// results are in the README). The file signal lowered every score there (it drags in whole
/// large files that match everywhere, such as changelogs), so it is reported but not weighted.
/// Tests and documentation count 0.3 unless the intent asks for them or the request names the
/// file: a request to fix or add something wants the implementation first. (That benchmark's
/// gold is never a test or a document, so its gain there overstates the general one.)
/// A file whose path holds the request's rarer words is likely the one to change (`path` 3: at
/// 8k, line recall 0.643 → 0.685 with the graph on); an import neighbour of a strong file
/// shares 0.3 of its score; under small budgets a file's further chunks decay by 0.9 each, which
/// raised the all-gold-files rate at 8k from 0.81 to 0.86 for 0.03 of line recall.
/// Weight of the dense signal when the caller embedded the request (to be tuned; see the
/// README's dense retrieval section).
pub const DENSE_WEIGHT: f32 = 0.5;

/// Weight of the reference signal, tuned on the visible benchmark (README, "Symbol references"):
/// 0.3 / 0.6 / 1.0 all left line recall within 0.002 of none; 1.0 raised the file recall and
/// all-gold rate at 8k by 0.004-0.005 and the all-gold rate at 32k and 128k by 0.003-0.004.
pub const REFERENCE_WEIGHT: f32 = 1.0;

/// Weight of the recency signal: 0, reported but not weighted. On the visible benchmark with its
/// repositories' history (README, "Recency"), every weight tried (0.1 to 1, added, or as a
/// multiplier of the lexical score) lowered the 32k and 128k scores, and at 8k it traded line
/// recall for files.
pub const RECENCY_WEIGHT: f32 = 0.0;

/// How many of the best candidates left out whole are tried as their signature (a definition's
/// smaller alternative) in the room the chosen pieces leave: 0 by default. Measured (README,
/// "Smaller alternatives"): 16 tries raised 8k file recall and all-gold by 0.002 and left
/// 32k/128k unchanged, but they take the room the file summaries fill afterwards (a large
/// file's summary gave way to three of its signatures), so they stay an option until
/// selection weighs the two against each other.
pub const ALTERNATIVES: f32 = 0.0;

/// The learned ranker's weight under small budgets (see [`Weights::learned`]). Measured with
/// the signposts on (docs/retrieval.md, "Signposts"): at 8k it raised line recall on the 24
/// mined repositories' held-out split (0.742 → 0.778) and on the visible set, with files and
/// all-gold held by the signposts; at 32k and 128k it lost files held out and lines on the
/// visible set, hence the fade.
pub const LEARNED_WEIGHT: f32 = 0.5;

/// The share of a small budget's room kept for signposts (see [`Weights::signposts`]).
/// Measured on the visible benchmark and on the 24 mined repositories: docs/retrieval.md,
/// "Signposts".
pub const SIGNPOSTS: f32 = 0.03;

/// Weight of the neighbour signal (the chunks of a strong chunk's file; [`spread_to_neighbours`]),
/// in full from 128k tokens and off up to 32k. Measured on the visible benchmark
/// (docs/retrieval.md, the regions of strong files): at 128k, line recall 0.900 → 0.935 for 0.003 of file recall;
/// 0.3 to 0.5 with a floor of 0.15 to 0.3 all scored within 0.001 of each other.
pub const NEIGHBOUR_WEIGHT: f32 = 0.3;

/// Share of the best score a chunk needs to lend its file's other chunks the neighbour signal.
pub const NEIGHBOUR_FLOOR: f32 = 0.3;

/// How many chunks away, each way in its file, the neighbour signal reaches: the whole file
/// (reach 1 and 3 earned 0.915 and 0.923 at 128k against 0.935 for the whole file).
pub const NEIGHBOUR_REACH: f32 = 1.0e6;

/// How far a strong chunk's neighbours go ahead of its file's other further chunks
/// ([`deepen_around_strong_chunks`]), in shares of the best score. Measured on the visible
/// benchmark at 8k with the short headers (docs/retrieval.md, depth places):
/// 0.1 changed nothing, 0.2 and 0.3 raised files and lines (LR 0.675 → 0.685 / 0.683 at reach
/// 1), 0.5 and 1 put evidence-less neighbours ahead of matching chunks and lost lines (0.671,
/// 0.643).
pub const DEPTH_NEIGHBOUR: f32 = 0.2;

/// Share of the best score a chunk needs to send its neighbours ahead (0.3 and 0.7 scored a
/// little under 0.5).
pub const DEPTH_FLOOR: f32 = 0.5;

/// How many chunks away, each way in its file, those neighbours are: two (LR 0.693 at 8k
/// against 0.685 for the adjacent ones only; three scored as two).
pub const DEPTH_REACH: f32 = 2.0;

/// The share of a strong chunk's depth place its callers and callees in its file take, from
/// 32k tokens (fading in from 8k). Measured (docs/retrieval.md, callers and callees): 0.75 / 1 /
/// 1.5 / 2 gave 32k line recall 0.890 / 0.891 / 0.884 / 0.883 against 0.884 without.
pub const DEPTH_CALLS: f32 = 1.0;

/// The history signal's weight ([`Weights::history`]): chosen on the held-out repositories in
/// simulation (`scripts/fusion/history_signal.py`: 1 with the damped sum over a chunk's
/// commits, against 0.25-0.5 and the best commit alone), at every budget.
pub const HISTORY_WEIGHT: f32 = 1.0;

/// See [`Weights::path_rarity`]: measured in docs/retrieval.md, "Questions".
pub const PATH_RARITY: f32 = 0.0;

/// See [`Weights::defaults`]: measured in docs/retrieval.md, "Questions".
pub const DEFAULTS_BOOST: f32 = 1.5;

/// See [`Weights::question_path`]: measured in docs/retrieval.md, "Questions".
pub const QUESTION_PATH: f32 = 0.5;

/// See [`Weights::explain_doc_prior`]: measured in docs/retrieval.md, "Questions".
pub const EXPLAIN_DOC_PRIOR: f32 = 1.0;

/// See [`Weights::question_doc_prior`]: measured in docs/retrieval.md, "Questions".
pub const QUESTION_DOC_PRIOR: f32 = 0.5;

/// See [`Weights::set_aside_prior`]: measured in docs/retrieval.md, "Questions".
pub const SET_ASIDE_PRIOR: f32 = 0.0;

/// How many users of a named symbol get the reference signal: the most relevant ones by their
/// own lexical score, so that a symbol used everywhere does not flood the budget.
pub const REFERENCE_USERS: usize = 4;

impl Default for Weights {
    fn default() -> Self {
        Self {
            lexical: 1.0,
            file: 0.0,
            symbol: 0.3,
            reference: REFERENCE_WEIGHT,
            recency: RECENCY_WEIGHT,
            mention: 1.0,
            path: 3.0,
            graph: 0.3,
            dense: DENSE_WEIGHT,
            file_spread: 0.3,
            test_prior: 0.3,
            doc_prior: 0.3,
            size_penalty: 0.0,
            file_decay: 0.9,
            decay_exempt: 2.0,
            alternatives: ALTERNATIVES,
            neighbour: NEIGHBOUR_WEIGHT,
            neighbour_floor: NEIGHBOUR_FLOOR,
            neighbour_reach: NEIGHBOUR_REACH,
            neighbour_from: neighbours::NEIGHBOURS_FROM as f32,
            depth_neighbour: DEPTH_NEIGHBOUR,
            depth_floor: DEPTH_FLOOR,
            depth_reach: DEPTH_REACH,
            depth_calls: DEPTH_CALLS,
            learned: LEARNED_WEIGHT,
            signposts: SIGNPOSTS,
            history: HISTORY_WEIGHT,
            path_rarity: PATH_RARITY,
            set_aside_prior: SET_ASIDE_PRIOR,
            defaults: DEFAULTS_BOOST,
            question_path: QUESTION_PATH,
            explain_doc_prior: EXPLAIN_DOC_PRIOR,
            question_doc_prior: QUESTION_DOC_PRIOR,
        }
    }
}

impl Weights {
    /// The order in which a piece of `tokens` tokens with `score` is considered for the budget.
    pub fn priority(&self, score: f32, tokens: u32) -> f32 {
        if self.size_penalty == 0.0 {
            score
        } else {
            score / ((tokens + 50) as f32).powf(self.size_penalty)
        }
    }

    /// The combined score.
    pub fn score(&self, s: &Signals) -> f32 {
        self.base(s) + s.prior * self.graph * s.graph
    }

    /// The score without the graph's share.
    fn base(&self, s: &Signals) -> f32 {
        s.prior
            * (self.lexical * s.lexical
                + self.file * s.file
                + self.symbol * s.symbol
                + self.reference * s.reference
                + self.recency * s.recency
                + self.mention * s.mention
                + self.path * s.path
                + self.dense * s.dense)
    }

    /// These weights as they apply to `query`: a question ([`is_question`]) takes
    /// [`Weights::question_path`] for its path weight and [`Weights::question_doc_prior`] for
    /// documentation.
    pub fn for_query(&self, query: &str) -> Self {
        if is_question(query) {
            Self {
                path: self.question_path,
                explain_doc_prior: self.question_doc_prior,
                ..*self
            }
        } else {
            *self
        }
    }

    /// These weights as they apply to a `budget`: the learned ranker fades out between
    /// [`DIVERSE_UP_TO`] and [`DEEP_FROM`], like file diversity.
    pub fn at_budget(&self, budget: u32) -> Self {
        Self {
            learned: self.learned * small_budget_strength(budget),
            ..*self
        }
    }

    /// These weights with some changed by `spec`, `name=value` pairs separated by commas
    /// (`graph=0.3,path=0.5`): for tuning experiments, not a supported setting.
    pub fn with_overrides(mut self, spec: &str) -> Result<Self, String> {
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` is not name=value"))?;
            let v: f32 = value
                .trim()
                .parse()
                .map_err(|_| format!("`{value}` is not a number"))?;
            let slot = match name.trim() {
                "lexical" => &mut self.lexical,
                "file" => &mut self.file,
                "symbol" => &mut self.symbol,
                "reference" => &mut self.reference,
                "recency" => &mut self.recency,
                "mention" => &mut self.mention,
                "path" => &mut self.path,
                "graph" => &mut self.graph,
                "dense" => &mut self.dense,
                "file_spread" => &mut self.file_spread,
                "test_prior" => &mut self.test_prior,
                "doc_prior" => &mut self.doc_prior,
                "size_penalty" => &mut self.size_penalty,
                "file_decay" => &mut self.file_decay,
                "decay_exempt" => &mut self.decay_exempt,
                "alternatives" => &mut self.alternatives,
                "neighbour" => &mut self.neighbour,
                "neighbour_floor" => &mut self.neighbour_floor,
                "neighbour_reach" => &mut self.neighbour_reach,
                "neighbour_from" => &mut self.neighbour_from,
                "depth_neighbour" => &mut self.depth_neighbour,
                "depth_floor" => &mut self.depth_floor,
                "depth_reach" => &mut self.depth_reach,
                "depth_calls" => &mut self.depth_calls,
                "learned" => &mut self.learned,
                "signposts" => &mut self.signposts,
                "history" => &mut self.history,
                "path_rarity" => &mut self.path_rarity,
                "set_aside_prior" => &mut self.set_aside_prior,
                "defaults" => &mut self.defaults,
                "question_path" => &mut self.question_path,
                "explain_doc_prior" => &mut self.explain_doc_prior,
                "question_doc_prior" => &mut self.question_doc_prior,
                other => return Err(format!("unknown weight `{other}`")),
            };
            *slot = v;
        }
        Ok(self)
    }
}

/// Sorts candidates best first: score descending ([`f32::total_cmp`]), then chunk index (each
/// chunk is ranked once, so the order is total).
pub(crate) fn sort_best_first(ranked: &mut [Ranked]) {
    ranked.sort_unstable_by_key(|r| crate::order::best_first_key(r.score, r.chunk));
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
    /// Position of each chunk's signals in `signals`, or [`Touched::NONE`].
    at: Vec<u32>,
    /// Chunk indices in the order they were touched.
    chunks: Vec<u32>,
    /// Their files.
    files: Vec<u32>,
    signals: Vec<Signals>,
}

impl Touched {
    const NONE: u32 = u32::MAX;

    fn new(chunk_file: &'_ [u32]) -> Self {
        Self {
            at: vec![Self::NONE; chunk_file.len()],
            chunks: Vec::new(),
            files: Vec::new(),
            signals: Vec::new(),
        }
    }

    /// The signals of chunk `c` (in file `file`), touching it.
    fn touch(&mut self, c: u32, file: u32) -> &mut Signals {
        let slot = &mut self.at[c as usize];
        if *slot == Self::NONE {
            *slot = self.signals.len() as u32;
            self.chunks.push(c);
            self.files.push(file);
            self.signals.push(Signals::default());
        }
        &mut self.signals[*slot as usize]
    }

    /// The signals of chunk `c` when it was touched.
    fn get(&self, c: u32) -> Option<&Signals> {
        match self.at.get(c as usize) {
            Some(&slot) if slot != Self::NONE => self.signals.get(slot as usize),
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
    let mut touched = Touched::new(&derived.chunk_file);
    let evidence = signals::touch_lexical(&mut touched, pack, hits);
    signals::touch_dense(&mut touched, &derived.chunk_file, dense);
    signals::set_file(&mut touched, &evidence, weights);
    let mentioned = signals::mentioned_files(pack, analysis);
    signals::touch_mentioned(&mut touched, pack, &mentioned);
    let wanted = signals::wanted_symbols(analysis);
    signals::touch_symbols(&mut touched, pack, &wanted);
    // References: the most relevant users of each named symbol.
    if weights.reference != 0.0 {
        signals::touch_references(&mut touched, pack, named);
    }
    signals::set_priors(&mut touched, derived, &mentioned, analysis, weights);
    // Path: the share of the request's term weight in each file's path.
    if weights.path != 0.0 {
        signals::set_path(&mut touched, pack, term_idf, weights.path_rarity);
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
    learned::rerank(pack, &mut ranked, weights.learned);
    ranked
}

/// The candidates with a positive score, best first (ties by chunk index).
fn best_first(touched: &Touched, weights: &Weights) -> Vec<Ranked> {
    // Sorted as small keys, then built in order: moving whole candidates about in the sort was
    // a tenth of a warm query on a large repository.
    let mut order: Vec<(u64, f32)> = touched
        .chunks
        .iter()
        .zip(&touched.signals)
        .map(|(&c, s)| (weights.score(s), c))
        .filter(|o| o.0 > 0.0)
        .map(|(score, c)| (crate::order::best_first_key(score, c), score))
        .collect();
    order.sort_unstable_by_key(|o| o.0);
    order
        .into_iter()
        .filter_map(|(key, score)| {
            let chunk = crate::order::id_of(key);
            let signals = *touched.get(chunk)?;
            Some(Ranked {
                chunk,
                score,
                signals,
            })
        })
        .collect()
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
    decay_by_file(ranked, decay, exempt, |c| {
        pack.chunks.get(c as usize).map(|chunk| chunk.file)
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
