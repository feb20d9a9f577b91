//! How much each ranking signal counts ([`Weights`]), the tuned defaults with what measured
//! them, and how a request's budget and form (a question or a change request) adjust them.

use serde::Serialize;

use super::{Signals, is_question, neighbours, small_budget_strength};

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
    /// Multiplier for a test module inside a source file (Rust's `mod tests`) when the intent
    /// is not `test`: 1 for change requests, whose commits often touch those tests too.
    pub inline_test_prior: f32,
    /// [`Weights::inline_test_prior`] for a question ([`is_question`](super::is_question)): a
    /// question about how the code works is answered by the code, and a test module names the
    /// same words more often than the code it checks.
    pub question_inline_test_prior: f32,
    /// Multiplier for documentation when the intent is not `explain`.
    pub doc_prior: f32,
    /// How strongly size counts against a piece when the budget is filled: pieces are taken in
    /// order of `score / tokens^size_penalty` (0 = by score alone).
    pub size_penalty: f32,
    /// Under a small budget a file's k-th best chunk (from 0) has its score multiplied by
    /// `file_decay^k`, so that the budget reaches more files before it takes a second chunk of
    /// one (1 = off; see [`diversify`](super::diversify)).
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
    /// the places those take ([`deepen_around_strong_chunks`](super::deepen_around_strong_chunks); 0 = off).
    pub depth_neighbour: f32,
    /// Share of the best score a chunk needs for its neighbours to go ahead.
    pub depth_floor: f32,
    /// How many chunks away, each way in its file, those neighbours are.
    pub depth_reach: f32,
    /// The share of a strong chunk's depth place that its callers and callees in its file take
    /// ([`deepen_around_strong_chunks`](super::deepen_around_strong_chunks); 0 = off).
    pub depth_calls: f32,
    /// How much the learned ranker re-scores the candidates under small budgets: a score
    /// becomes `score × exp(learned × trees)` (`rank/learned.rs`; 0 = off), in full up to
    /// [`DIVERSE_UP_TO`](super::DIVERSE_UP_TO), fading out by [`DEEP_FROM`](super::DEEP_FROM) ([`Weights::at_budget`]).
    pub learned: f32,
    /// The share of the room kept, under small budgets, for signposts: one line of each further
    /// file the pieces leave out (`assemble/signposts.rs`; 0 = off). In full up to
    /// [`DIVERSE_UP_TO`](super::DIVERSE_UP_TO), fading out by [`DEEP_FROM`](super::DEEP_FROM)
    /// down to [`Weights::signpost_floor`].
    pub signposts: f32,
    /// The room (tokens) kept for signposts at least over [`DIVERSE_UP_TO`](super::DIVERSE_UP_TO),
    /// where the share of [`Weights::signposts`] fades (0 = none there): a large prompt reaches
    /// more files whole, but not every file a change touches.
    pub signpost_floor: f32,
    /// How much the history signal raises a score: `score × (1 + history × signal)`
    /// ([`rerank_by_history`](super::rerank_by_history); 0 = off).
    pub history: f32,
    /// Multiplier for files set aside from code context ([`crate::path_kind::SetAside`]: built
    /// output, vendored code, seeds and tiny data files) unless the request names them
    /// (1 = off).
    pub set_aside_prior: f32,
    /// How much a request that asks for a default raises the chunks that usually set them
    /// (`rank/defaults.rs`: constant blocks, constructors, functions named for defaults; 1 =
    /// off).
    pub defaults: f32,
    /// The path weight ([`Weights::path`]) for a question ([`is_question`](super::is_question)): a question's
    /// words name what it is about in prose ("how is the token budget enforced?"), and a file
    /// named after one of them is less often the answer than a changed file is in a change
    /// request.
    pub question_path: f32,
    /// Multiplier for documentation when the intent is `explain` (questions, "how does … work")
    /// and the request does not name the file: prose answers a question in words, but the
    /// lines that answer it are in the code.
    pub explain_doc_prior: f32,
    /// [`Weights::explain_doc_prior`] for a question ([`is_question`](super::is_question)).
    pub question_doc_prior: f32,
    /// The share of the room kept, under small budgets, for excerpts: the lines around the best
    /// matches of candidates too large to go in whole (`assemble/excerpts.rs`; 0 = off). Like
    /// [`Weights::signposts`], in full up to [`DIVERSE_UP_TO`](super::DIVERSE_UP_TO), none from
    /// [`DEEP_FROM`](super::DEEP_FROM).
    pub excerpts: f32,
    /// [`Weights::excerpts`] for a question: a question is answered by a few lines, which are
    /// often deep inside a function whose whole text does not fit.
    pub question_excerpts: f32,
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

/// The room (tokens) kept for signposts at least over 8k (see [`Weights::signpost_floor`]):
/// about six of them. Chosen on the 16 commit-train repositories at 32k (0 / 120 / 240 / 480
/// tokens: all-gold 0.946 / 0.960 / 0.960 / 0.964, line recall 0.925 / 0.926 / 0.925 / 0.924);
/// docs/retrieval.md, "Signposts at large budgets".
pub const SIGNPOST_FLOOR: f32 = 120.0;

/// Weight of the neighbour signal (the chunks of a strong chunk's file; [`spread_to_neighbours`](super::spread_to_neighbours)),
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
/// ([`deepen_around_strong_chunks`](super::deepen_around_strong_chunks)), in shares of the best score. Measured on the visible
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

/// See [`Weights::defaults`]: measured in docs/retrieval.md, "Questions".
pub const DEFAULTS_BOOST: f32 = 1.5;

/// See [`Weights::question_path`]: measured in docs/retrieval.md, "Questions".
pub const QUESTION_PATH: f32 = 0.5;

/// See [`Weights::explain_doc_prior`]: measured in docs/retrieval.md, "Questions".
pub const EXPLAIN_DOC_PRIOR: f32 = 1.0;

/// See [`Weights::question_doc_prior`]: measured in docs/retrieval.md, "Questions".
pub const QUESTION_DOC_PRIOR: f32 = 0.5;

/// See [`Weights::question_excerpts`]: measured in docs/retrieval.md, "Questions".
pub const QUESTION_EXCERPTS: f32 = 0.25;

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
            inline_test_prior: 1.0,
            question_inline_test_prior: 0.3,
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
            signpost_floor: SIGNPOST_FLOOR,
            history: HISTORY_WEIGHT,
            set_aside_prior: SET_ASIDE_PRIOR,
            defaults: DEFAULTS_BOOST,
            question_path: QUESTION_PATH,
            explain_doc_prior: EXPLAIN_DOC_PRIOR,
            question_doc_prior: QUESTION_DOC_PRIOR,
            excerpts: 0.0,
            question_excerpts: QUESTION_EXCERPTS,
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
    pub(super) fn base(&self, s: &Signals) -> f32 {
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

    /// These weights as they apply to `query`: a question ([`is_question`](super::is_question)) takes
    /// [`Weights::question_path`] for its path weight, [`Weights::question_doc_prior`] for
    /// documentation, [`Weights::question_excerpts`] for the excerpts' room and
    /// [`Weights::question_inline_test_prior`] for test modules.
    pub fn for_query(&self, query: &str) -> Self {
        if is_question(query) {
            Self {
                path: self.question_path,
                explain_doc_prior: self.question_doc_prior,
                excerpts: self.question_excerpts,
                inline_test_prior: self.question_inline_test_prior,
                ..*self
            }
        } else {
            *self
        }
    }

    /// These weights as they apply to a `budget`: the learned ranker fades out between
    /// [`DIVERSE_UP_TO`](super::DIVERSE_UP_TO) and [`DEEP_FROM`](super::DEEP_FROM), like file diversity.
    pub fn at_budget(&self, budget: u32) -> Self {
        Self {
            learned: self.learned * small_budget_strength(budget),
            ..*self
        }
    }

    /// The defaults changed by a tuning `spec` when one is set (`CTXGATE_RANK_WEIGHTS` on every
    /// host), and why a malformed one was ignored.
    pub fn tuned(spec: Option<&str>) -> (Self, Option<String>) {
        let w = Self::default();
        match spec.map(str::trim).filter(|s| !s.is_empty()) {
            None => (w, None),
            Some(spec) => match w.with_overrides(spec) {
                Ok(t) => (t, None),
                Err(e) => (w, Some(format!("CTXGATE_RANK_WEIGHTS ignored: {e}"))),
            },
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
                "inline_test_prior" => &mut self.inline_test_prior,
                "question_inline_test_prior" => &mut self.question_inline_test_prior,
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
                "signpost_floor" => &mut self.signpost_floor,
                "history" => &mut self.history,
                "set_aside_prior" => &mut self.set_aside_prior,
                "defaults" => &mut self.defaults,
                "question_path" => &mut self.question_path,
                "explain_doc_prior" => &mut self.explain_doc_prior,
                "question_doc_prior" => &mut self.question_doc_prior,
                "excerpts" => &mut self.excerpts,
                "question_excerpts" => &mut self.question_excerpts,
                other => return Err(format!("unknown weight `{other}`")),
            };
            *slot = v;
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuning_spec_changes_only_what_it_names_and_a_bad_one_is_ignored_with_the_reason() {
        assert_eq!(Weights::tuned(None), (Weights::default(), None));
        assert_eq!(Weights::tuned(Some("  ")), (Weights::default(), None));
        let (w, why) = Weights::tuned(Some("path=0.5,question_excerpts=0"));
        assert!(why.is_none());
        assert_eq!((w.path, w.question_excerpts), (0.5, 0.0));
        assert_eq!(w.lexical, Weights::default().lexical);
        let (w, why) = Weights::tuned(Some("nope=1"));
        assert_eq!(w, Weights::default());
        assert!(why.is_some_and(|m| m.contains("unknown weight `nope`")));
    }

    #[test]
    fn a_question_gets_its_own_path_weight_and_excerpts_and_a_change_request_none() {
        let w = Weights::default();
        let q = w.for_query("where is the default timeout set?");
        assert_eq!((q.path, q.excerpts), (w.question_path, w.question_excerpts));
        let c = w.for_query("fix the timeout in the client");
        assert_eq!((c.path, c.excerpts), (w.path, 0.0));
    }
}
