//! The first half of answering a query: retrieval, ranking and the first selection, which read
//! no chunk text in the common case. A host whose texts live in remote storage reads what the
//! plan says it will want ([`Plan::wanted_texts`]) before composing, in one batch of range reads.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::catalog::{BudgetError, MIN_BUDGET, ResolvedBudget, TokenizerSpec};
use crate::chunk::ChunkKind;
use crate::compose::render;
use crate::compress::{Compression, KeyTerms};
use crate::index::IndexPack;
use crate::intent::QueryAnalysis;
use crate::profile::{PLAN_PIECES, Profile, REPAIR_CONTEXT_PIECES, frame_chunks, repair_task};
use crate::rank::{Ranked, Signals, StageInput, rank, run_stages};
use crate::select::Candidate;

use super::candidates::{Counting, Facts, first_selection, reasons, signatures_only};
use super::estimate::{MAX_SIGNPOSTS, excerpt_room, overhead_total, signpost_room};
use super::retrieve::{add_hot_paths, error_output, retrieve, search_terms, understood};
use super::{AssembleError, ChunkSource, Halt, QueryOptions, SHRINK_TRIES, SIGNATURES_BELOW, Step};

/// Tokens of the summaries section's heading and separators, kept free with the project
/// summary under `plan`.
const SUMMARY_SECTION_SLACK: u32 = 24;

/// Candidates beyond the first selection whose texts [`Plan::wanted_texts`] names, for the
/// rounds that fill the room compression and joined headers give back.
const REFILL_WANTED: usize = 48;

/// What ranking and the first selection decided for one query, before the pieces are read and
/// composed ([`Plan::compose`]). Composing only reads; a plan can be composed again after the
/// reads it lacked were fetched.
pub struct Plan {
    pub(super) resolved: ResolvedBudget,
    pub(super) warnings: Vec<String>,
    pub(super) profile: Profile,
    pub(super) budget: u32,
    pub(super) intent: QueryAnalysis,
    pub(super) framed: Vec<u32>,
    pub(super) error_tokens: Option<u32>,
    pub(super) error_truncated: bool,
    pub(super) task: String,
    pub(super) max_pieces: Option<usize>,
    pub(super) level: Compression,
    pub(super) keys: KeyTerms,
    pub(super) frame_tokens: u32,
    pub(super) task_tokens: u32,
    pub(super) slot: Option<usize>,
    pub(super) repo_tokens: u64,
    pub(super) room: u32,
    /// The piece room less what is kept for signposts.
    pub(super) piece_room: u32,
    /// Room kept for signposts (`signposts.rs`), on top of `piece_room`.
    pub(super) signpost_room: u32,
    /// Room kept for excerpts (`excerpts.rs`), on top of `piece_room`.
    pub(super) excerpt_room: u32,
    /// The request's terms with their inverse document frequency, when excerpts have room.
    pub(super) excerpt_terms: Vec<(String, f32)>,
    pub(super) strategy: String,
    /// Texts the plan read itself (signatures-only mode, counting on the fly).
    pub(super) texts: HashMap<u32, String>,
    /// Signature lengths in bytes, for signatures-only mode.
    pub(super) signatures: HashMap<u32, usize>,
    pub(super) candidates_count: usize,
    /// Every candidate, best first (priority, then pack index).
    pub(super) cands: Vec<Candidate>,
    /// The first selection, best first.
    pub(super) chosen: Vec<Candidate>,
    /// The candidates' scores, tokens and signals, by chunk.
    pub(super) facts: HashMap<u32, Facts>,
    pub(super) scores: Vec<(u32, f32)>,
    /// Excluded chunks that ranked, best first, with their scores.
    pub(super) excluded_ranked: Vec<(u32, f32)>,
    pub(super) excluded: HashSet<u32>,
    pub(super) signatures_sent: HashSet<u32>,
    pub(super) alternatives: usize,
    pub(super) without_summaries: bool,
}

/// Ranks `query`'s candidates in `pack` and makes the first selection within
/// `resolved.budget`, which must be at least [`MIN_BUDGET`]. Texts are read only for budgets under
/// [`SIGNATURES_BELOW`](super::SIGNATURES_BELOW) and for
/// encodings the index did not count, and a large index's lists when the pack keeps them in
/// segments; a source that lacks them gets a [`Step::Needs`] naming all a round can ask for
/// (the blocks of keys first, then their values, then texts).
pub fn plan(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    query: &str,
    resolved: &ResolvedBudget,
    options: &QueryOptions,
) -> Result<Step<Plan>, AssembleError> {
    Halt::step(planned(pack, source, query, resolved, options))
}

/// [`plan`], stopping with `?` at the first phase that lacks reads or fails.
fn planned(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    query: &str,
    resolved: &ResolvedBudget,
    options: &QueryOptions,
) -> Result<Plan, Halt> {
    let query = query.trim();
    if query.is_empty() {
        return Err(AssembleError::EmptyQuery.into());
    }
    if resolved.budget < MIN_BUDGET {
        // Named as the caller sent it: the whole budget, and what it needs beside the
        // conversation that took its share ([`ResolvedBudget::history`]).
        return Err(AssembleError::Budget(BudgetError::TooSmall {
            budget: resolved.whole(),
            needed: MIN_BUDGET.saturating_add(resolved.history),
        })
        .into());
    }
    let spec = &resolved.tokenizer;
    let mut warnings = resolved.warnings.clone();
    let profile = options.profile;
    let budget = profile.budget(resolved.budget);
    let error_output = error_output(profile, options)?;
    let (mut intent, search_text) = understood(query, error_output);
    let terms = search_terms(query, &search_text);
    let retrieved = retrieve(pack, source, &terms, &intent, options)?;
    add_hot_paths(&mut intent, options);
    let weights = &options.weights.at_budget(budget).for_query(query);
    let excluded = excluded(options, budget);
    let mut ranked = rank(
        pack,
        &retrieved.hits,
        &options.dense,
        &retrieved.term_idf,
        &intent,
        weights,
        &retrieved.named,
    );
    if let Some(note) = set_aside_note(pack, &retrieved.hits, &ranked) {
        warnings.push(note);
    }
    let stage_input = StageInput {
        pack,
        query,
        search_text: &search_text,
        weights,
        budget,
    };
    run_stages(&stage_input, &options.rerankers, &mut ranked);
    let ordered = ordered(pack, &ranked, &excluded, profile, &intent);
    let mut scores = ordered.scores;
    let framed = ordered.framed;
    let shape = shape(query, error_output, options, budget, spec, framed.len());
    let keys = KeyTerms::new(&search_text, &intent.entities);
    let room = room(pack, spec, profile, budget, &shape.task);
    let mut strategy = strategy(&scores, options, &mut warnings);
    whole_repository(pack, &excluded, profile, &room, &mut scores, &mut strategy);
    let mut texts: HashMap<u32, String> = HashMap::default();
    let signatures = signatures_only(pack, source, budget, &mut scores, &mut texts, &mut strategy)?;
    let candidates_count = scores.len();
    let counting = Counting::new(pack, source, spec, weights, room.slot, room.room);
    let built = counting.candidates(&scores, &signatures, &mut texts)?;
    let mut cands = built.cands;
    let mut facts = built.facts;
    // Why the candidates' pieces were chosen, and the files the summaries may follow: the
    // considered candidates only.
    scores.truncate(built.considered);
    reasons(pack, &ranked, &mut facts);
    drop(ranked);
    let signpost_room = signpost_room(weights, profile, budget, room.piece_room);
    let excerpt_room = excerpt_room(weights, profile, budget, room.piece_room);
    let piece_room = room.piece_room.saturating_sub(signpost_room + excerpt_room);
    let excerpt_terms = if excerpt_room > 0 {
        retrieved.term_idf.clone()
    } else {
        Vec::new()
    };
    let chosen = first_selection(&mut cands, piece_room, shape.max_pieces);
    Ok(Plan {
        resolved: resolved.clone(),
        warnings,
        profile,
        budget,
        intent,
        framed,
        error_tokens: shape.error_tokens,
        error_truncated: shape.error_truncated,
        task: shape.task,
        max_pieces: shape.max_pieces,
        level: shape.level,
        keys,
        frame_tokens: room.frame_tokens,
        task_tokens: room.task_tokens,
        slot: room.slot,
        repo_tokens: room.repo_tokens,
        room: room.room,
        piece_room,
        signpost_room,
        excerpt_room,
        excerpt_terms,
        strategy,
        texts,
        signatures,
        candidates_count,
        cands,
        chosen,
        facts,
        scores,
        excluded_ranked: ordered.excluded_ranked,
        excluded,
        signatures_sent: options.signatures_sent.iter().copied().collect(),
        alternatives: weights.alternatives.max(0.0) as usize,
        without_summaries: options.without_summaries,
    })
}

/// Names how many files that matched the request were set aside from code context
/// ([`crate::path_kind::SetAside`]: built output, vendored code, seeds and tiny data files) and
/// left out for it, by reason; `None` when none was. Most requests match no such file, so the
/// ranked files are looked at only when one did.
fn set_aside_note(pack: &IndexPack, hits: &[(u32, f32)], ranked: &[Ranked]) -> Option<String> {
    let derived = pack.derived();
    let paths = pack.paths();
    let file_of = |c: u32| derived.chunk_file.get(c as usize).copied();
    let mut aside: HashMap<u32, &'static str> = HashMap::default();
    for f in hits.iter().filter_map(|&(c, _)| file_of(c)) {
        if let Some(Some(kind)) = paths.set_aside.get(f as usize) {
            aside.insert(f, kind.reason());
        }
    }
    if aside.is_empty() {
        return None;
    }
    // A named file is ranked like any other: it was not left out. (Only a set-aside file can
    // be in `aside`: the test before the look-up spares thousands of them a call.)
    let is_aside = |f: u32| matches!(paths.set_aside.get(f as usize), Some(Some(_)));
    for f in ranked.iter().filter_map(|r| file_of(r.chunk)) {
        if is_aside(f) {
            aside.remove(&f);
        }
    }
    if aside.is_empty() {
        return None;
    }
    let mut by_reason: std::collections::BTreeMap<&str, usize> = Default::default();
    for reason in aside.values() {
        *by_reason.entry(reason).or_default() += 1;
    }
    let by_reason: Vec<String> = by_reason.iter().map(|(r, n)| format!("{r}: {n}")).collect();
    Some(format!(
        "left out {} matching file(s) set aside from code context ({}); name a file in the request to include it",
        aside.len(),
        by_reason.join(", ")
    ))
}

/// The ranking split for selection: what may be chosen, what the caller already has, and what
/// `repair` puts first.
struct Ordered {
    /// Chunks that may be chosen, best first, with their scores.
    scores: Vec<(u32, f32)>,
    /// Excluded chunks that ranked, best first, with their scores.
    excluded_ranked: Vec<(u32, f32)>,
    /// `repair`'s chunks holding the lines the error names, in its order.
    framed: Vec<u32>,
}

/// Scores in ranking order with the excluded chunks set apart (they are never chosen again, but
/// named back when they rank high) and, under `repair`, the framed chunks moved first.
fn ordered(
    pack: &IndexPack,
    ranked: &[Ranked],
    excluded: &HashSet<u32>,
    profile: Profile,
    intent: &QueryAnalysis,
) -> Ordered {
    let mut scores: Vec<(u32, f32)> = ranked
        .iter()
        .filter(|r| !excluded.contains(&r.chunk))
        .map(|r| (r.chunk, r.score))
        .collect();
    let excluded_ranked: Vec<(u32, f32)> = if excluded.is_empty() {
        Vec::new()
    } else {
        ranked
            .iter()
            .filter(|r| excluded.contains(&r.chunk))
            .map(|r| (r.chunk, r.score))
            .collect()
    };
    // `repair`: the chunks holding the lines the error names go first, in its order.
    let framed: Vec<u32> = match profile {
        Profile::Repair => frame_chunks(pack, &intent.entities.frames)
            .into_iter()
            .filter(|i| !excluded.contains(i))
            .collect(),
        _ => Vec::new(),
    };
    if !framed.is_empty() {
        let top = scores.iter().map(|s| s.1).fold(1.0f32, f32::max) * 4.0;
        scores.retain(|(i, _)| !framed.contains(i));
        for (k, &i) in framed.iter().enumerate().rev() {
            scores.insert(0, (i, top * (1.0 - 0.01 * k as f32)));
        }
    }
    Ordered {
        scores,
        excluded_ranked,
        framed,
    }
}

/// What the profile makes of the request.
struct Shape {
    /// The task the prompt states: the query, with the error output under `repair`.
    task: String,
    error_tokens: Option<u32>,
    error_truncated: bool,
    max_pieces: Option<usize>,
    level: Compression,
}

/// The task text, piece limit and compression level the profile sets: `repair` states the error
/// output (in at most half the budget) and keeps to its framed chunks and a few more, `plan` to
/// a few pieces compressed at least to `medium`.
fn shape(
    query: &str,
    error_output: Option<&str>,
    options: &QueryOptions,
    budget: u32,
    spec: &TokenizerSpec,
    framed: usize,
) -> Shape {
    let profile = options.profile;
    let (task, error_tokens, error_truncated) = match error_output {
        Some(e) => {
            let (task, tokens, cut) = repair_task(query, e, budget / 2, spec);
            (task, Some(tokens), cut)
        }
        None => (query.to_string(), None, false),
    };
    let max_pieces = match profile {
        Profile::Plan => Some(PLAN_PIECES),
        Profile::Repair => Some(framed + REPAIR_CONTEXT_PIECES),
        Profile::Expand => None,
    };
    let level = match profile {
        Profile::Plan => options.compression.max(Compression::Medium),
        _ => options.compression,
    };
    Shape {
        task,
        error_tokens,
        error_truncated,
        max_pieces,
        level,
    }
}

/// The prompt's room and the repository's size, in the target's tokens.
struct Room {
    /// Tokens of the prompt without any code.
    frame_tokens: u32,
    /// Tokens of the task alone (the query, and the error output a `repair` answers).
    task_tokens: u32,
    /// The pack's counts in the target's base encoding, if it holds them.
    slot: Option<usize>,
    repo_tokens: u64,
    /// The budget less the frame.
    room: u32,
    /// The room less what `plan` keeps for its project summary.
    piece_room: u32,
}

/// What the frame leaves of the budget for code, and the share of it pieces may fill (`plan`
/// keeps some for its project summary).
fn room(pack: &IndexPack, spec: &TokenizerSpec, profile: Profile, budget: u32, task: &str) -> Room {
    let frame_tokens = spec.count(&render(&[], task));
    let task_tokens = spec.count(task).min(frame_tokens);
    let slot = pack.encoding_slot(spec.base());
    let repo_tokens = repo_tokens(pack, spec, slot);
    let room = budget.saturating_sub(frame_tokens);
    // `plan` keeps room for the project summary at the head of its prompt, and for the section
    // heading and joins around it, which the exact count of the whole prompt includes (without
    // them, pieces that fill their room to the token leave the summary a few tokens short).
    let reserved = match profile {
        Profile::Plan => {
            super::summaries::project_cost(pack, spec).map_or(0, |c| c + SUMMARY_SECTION_SLACK)
        }
        _ => 0,
    }
    .min(room / 2);
    let piece_room = room - reserved;
    Room {
        frame_tokens,
        task_tokens,
        slot,
        repo_tokens,
        room,
        piece_room,
    }
}

/// The repository's token total in the target's tokens, which sizes the summaries and decides
/// whether it fits whole: the index's counts when it has the encoding, else three bytes a token.
fn repo_tokens(pack: &IndexPack, spec: &TokenizerSpec, slot: Option<usize>) -> u64 {
    match (slot, spec) {
        (Some(s), TokenizerSpec::Exact(_)) => pack.derived().tokens_total(s),
        (Some(s), _) => pack
            .chunks
            .iter()
            .map(|c| u64::from(spec.scale(c.tokens[s])))
            .sum(),
        (None, _) => pack.chunks.iter().map(|c| c.len() / 3).sum(),
    }
}

/// The strategy text the answer reports, which says how pieces were chosen; a query nothing
/// matches also gets a warning, as it goes out alone.
fn strategy(scores: &[(u32, f32)], options: &QueryOptions, warnings: &mut Vec<String>) -> String {
    if scores.is_empty() {
        warnings.push(
            "no relevant code found for the query; the prompt carries the query alone (low confidence)"
                .into(),
        );
        "query only: nothing in the repository matches the query".to_string()
    } else {
        let dense = if options.dense.is_empty() {
            ""
        } else {
            ", embeddings"
        };
        format!(
            "ranked by BM25, named symbols and mentioned files{dense} ({} candidates)",
            scores.len()
        )
    }
}

/// The chunks never chosen again: those the caller has. Under [`SIGNATURES_BELOW`] every piece is
/// a signature, so a chunk already sent as an outline could only come as one again: it counts
/// as delivered there (else a continuation page would repeat the page before it for ever).
fn excluded(options: &QueryOptions, budget: u32) -> HashSet<u32> {
    let mut excluded: HashSet<u32> = options.exclude.iter().copied().collect();
    if budget < SIGNATURES_BELOW {
        excluded.extend(options.signatures_sent.iter().copied());
    }
    excluded
}

/// A repository that fits whole, headers included, goes in whole (matching chunks keep their
/// scores): only under `expand`, and not when chunks are excluded (a continuation page, a
/// session's later call): it would add them again.
fn whole_repository(
    pack: &IndexPack,
    excluded: &HashSet<u32>,
    profile: Profile,
    room: &Room,
    scores: &mut Vec<(u32, f32)>,
    strategy: &mut String,
) {
    let whole_fits = excluded.is_empty()
        && profile == Profile::Expand
        && room.repo_tokens <= u64::from(room.room)
        && room.repo_tokens + overhead_total(pack) <= u64::from(room.room);
    if whole_fits && !scores.is_empty() {
        add_the_rest(pack, scores);
        *strategy = "whole repository: it fits in the budget".to_string();
    }
}

/// Adds every chunk that did not match, at score zero, after those that did.
fn add_the_rest(pack: &IndexPack, scores: &mut Vec<(u32, f32)>) {
    let mut seen = vec![false; pack.chunks.len()];
    for (i, _) in scores.iter() {
        seen[*i as usize] = true;
    }
    scores.extend(
        (0..pack.chunks.len() as u32)
            .filter(|i| !seen[*i as usize])
            .map(|i| (i, 0.0)),
    );
}

impl Plan {
    /// Candidate `key`'s ranking score, if it is a candidate.
    pub(super) fn score_of(&self, key: u32) -> Option<f32> {
        self.facts.get(&key).map(|f| f.score)
    }

    /// Candidate `key`'s tokens without its header, if it is a candidate.
    pub(super) fn tokens_of(&self, key: u32) -> Option<u32> {
        self.facts.get(&key).map(|f| f.tokens)
    }

    /// Why candidate `key` ranked: all zeros for a chunk ranking did not list.
    pub(super) fn why_of(&self, key: u32) -> Signals {
        self.facts.get(&key).map(|f| f.why).unwrap_or_default()
    }

    /// The chunks whose texts composing will most likely read, most needed first: the first
    /// selection, then the best candidates that could fill room given back, then the best
    /// definitions that could go in as signatures. A host reading texts from remote storage
    /// fetches these in one batch; what composing asks beyond them comes back as a
    /// [`Step::Needs`].
    pub fn wanted_texts(&self, pack: &IndexPack) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut seen: HashSet<u32> = HashSet::default();
        for c in &self.chosen {
            if !self.texts.contains_key(&c.key) && seen.insert(c.key) {
                out.push(c.key);
            }
        }
        // Best first, as the plan keeps them.
        let rest: Vec<&Candidate> = self
            .cands
            .iter()
            .filter(|c| !seen.contains(&c.key))
            .collect();
        // Under `medium` and `aggressive` composing also tries the first oversized candidates
        // compressed ([`SHRINK_TRIES`]).
        let refill_count = if self.level >= Compression::Medium {
            REFILL_WANTED + SHRINK_TRIES
        } else {
            REFILL_WANTED
        };
        let refill = rest.iter().take(refill_count);
        let definitions = rest
            .iter()
            .filter(|c| {
                !self.signatures_sent.contains(&c.key)
                    && !matches!(
                        pack.chunks[c.key as usize].kind,
                        ChunkKind::Block | ChunkKind::Window | ChunkKind::Section
                    )
            })
            .take(self.alternatives);
        for c in refill.chain(definitions) {
            if !self.texts.contains_key(&c.key) && seen.insert(c.key) {
                out.push(c.key);
            }
        }
        if self.signpost_room > 0 {
            let chosen: HashSet<u32> = self.chosen.iter().map(|c| c.key).collect();
            for key in self.signpost_candidates(pack, &chosen, 2 * MAX_SIGNPOSTS) {
                // `add_signposts` skips what the caller was given as an outline already.
                if !self.texts.contains_key(&key)
                    && !self.signatures_sent.contains(&key)
                    && seen.insert(key)
                {
                    out.push(key);
                }
            }
        }
        out
    }

    /// Up to `n` candidates that follow chunk `i` in priority order: what composing will read
    /// next after asking for `i`, so a host fetches them in the same round.
    pub fn following(&self, i: u32, n: usize) -> Vec<u32> {
        let at = self
            .cands
            .iter()
            .position(|c| c.key == i)
            .map_or(0, |p| p + 1);
        self.cands.iter().skip(at).take(n).map(|c| c.key).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source with no text: the refusals below come before any read.
    struct Nothing;

    impl ChunkSource for Nothing {
        fn text(&self, _: &IndexPack, _: usize) -> Result<Option<String>, AssembleError> {
            Err(AssembleError::Source("no text".into()))
        }
        fn list(
            &self,
            _: &IndexPack,
            _: crate::lists::ListId,
        ) -> Result<Option<std::borrow::Cow<'_, [u8]>>, AssembleError> {
            Err(AssembleError::Source("no list".into()))
        }
    }

    #[test]
    fn a_budget_too_small_is_named_as_sent_with_the_conversation_it_shares() {
        let resolved = ResolvedBudget {
            budget: 100,
            history: 0,
            tokenizer: TokenizerSpec::Exact(crate::tokens::Encoding::O200kBase),
            model: None,
            window: None,
            warnings: Vec::new(),
        };
        let pack = crate::index::tests::tiny();
        let refused =
            |r: &ResolvedBudget| match plan(&pack, &Nothing, "x", r, &QueryOptions::default()) {
                Err(AssembleError::Budget(BudgetError::TooSmall { budget, needed })) => {
                    (budget, needed)
                }
                other => panic!("{:?}", other.map(|_| ())),
            };
        // Alone, 40 tokens is too small for any code.
        let alone = ResolvedBudget {
            budget: 40,
            ..resolved.clone()
        };
        assert_eq!(refused(&alone), (40, MIN_BUDGET));
        // 100 tokens of which a conversation took 60: the caller sent 100 and needs 64 beside
        // the conversation.
        assert_eq!(refused(&resolved.after_history(60)), (100, MIN_BUDGET + 60));
    }

    #[test]
    fn outlines_count_as_delivered_only_where_every_piece_is_a_signature() {
        let options = QueryOptions {
            exclude: vec![1],
            signatures_sent: vec![2],
            ..QueryOptions::default()
        };
        let sorted = |b: u32| {
            let mut v: Vec<u32> = excluded(&options, b).into_iter().collect();
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(SIGNATURES_BELOW - 1), vec![1, 2]);
        assert_eq!(sorted(SIGNATURES_BELOW), vec![1]);
    }
}
