//! The first half of answering a query: retrieval, ranking and the first selection, which read
//! no chunk text in the common case. A host whose texts live in remote storage reads what the
//! plan says it will want ([`Plan::wanted_texts`]) before composing, in one batch of range reads.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::catalog::{ResolvedBudget, TokenizerSpec};
use crate::chunk::{ChunkKind, signature_len};
use crate::compose::render;
use crate::compress::{Compression, KeyTerms};
use crate::index::IndexPack;
use crate::intent::{QueryAnalysis, analyze, entities};
use crate::lexical::{PostingsError, query_terms};
use crate::profile::{PLAN_PIECES, Profile, REPAIR_CONTEXT_PIECES, frame_chunks, repair_task};
use crate::rank::{Signals, diversify, rank};
use crate::select::{Candidate, select_greedy};

use super::estimate::{declares_its_symbol, header_cost, overhead_total};
use super::{AssembleError, ChunkSource, QueryOptions, SHRINK_TRIES, SIGNATURES_BELOW};

/// Tokens of the summaries section's heading and separators, kept free with the project
/// summary under `plan`.
const SUMMARY_SECTION_SLACK: u32 = 24;

/// How many definitions the signatures-only mode (budgets under [`SIGNATURES_BELOW`]) reads.
const SIGNATURE_CANDIDATES: usize = 300;

/// Candidates beyond the first selection whose texts [`Plan::wanted_texts`] names, for the
/// rounds that fill the room compression and joined headers give back.
const REFILL_WANTED: usize = 48;

/// Candidates always considered for selection, however small the budget.
const MIN_CANDIDATES: usize = 2_048;

/// Beyond [`MIN_CANDIDATES`], candidates are considered until their tokens add up to this many
/// times the room: selection, the refill rounds and the summaries never reach further in
/// practice, and on a large repository a query matches tens of thousands of chunks (deno: 24k
/// for a 32k-token answer), whose per-candidate work was most of a warm query.
const CANDIDATE_DEPTH: u64 = 16;

/// What ranking and the first selection decided for one query, before the pieces are read and
/// composed ([`Plan::compose`]). Composing only reads; a plan can be composed again after the
/// texts it lacked were fetched.
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
    pub(super) slot: Option<usize>,
    pub(super) repo_tokens: u64,
    pub(super) room: u32,
    pub(super) piece_room: u32,
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
    pub(super) original: HashMap<u32, f32>,
    pub(super) piece_tokens: HashMap<u32, u32>,
    pub(super) reasons: HashMap<u32, Signals>,
    pub(super) scores: Vec<(u32, f32)>,
    /// Excluded chunks that ranked, best first, with their scores.
    pub(super) excluded_ranked: Vec<(u32, f32)>,
    pub(super) excluded: HashSet<u32>,
    pub(super) signatures_sent: HashSet<u32>,
    pub(super) alternatives: usize,
    pub(super) without_summaries: bool,
}

/// BM25 hits of `terms`, with the postings the pack does not hold taken from `source`; the
/// terms it lacks make one [`AssembleError::PostingsNeeded`].
fn search(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    terms: &[(String, u16)],
    options: &QueryOptions,
) -> Result<Vec<(u32, f32)>, AssembleError> {
    let mut fetched = Vec::new();
    let mut missing = Vec::new();
    for t in pack.lexical.stored_terms(terms) {
        match source.postings(pack, t) {
            Ok(bytes) => fetched.push((t, bytes)),
            Err(AssembleError::PostingsNeeded(more)) => missing.extend(more),
            Err(e) => return Err(e),
        }
    }
    if !missing.is_empty() {
        return Err(AssembleError::PostingsNeeded(missing));
    }
    let external = |t: u32| fetched.iter().find(|f| f.0 == t).map(|f| &*f.1);
    pack.lexical
        .search_with(terms, options.bm25, &external)
        .map_err(|e| match e {
            PostingsError::Needed(terms) => AssembleError::PostingsNeeded(terms),
            e => AssembleError::Source(e.to_string()),
        })
}

/// Ranks `query`'s candidates in `pack` and makes the first selection within
/// `resolved.budget`. Texts are read only for budgets under [`SIGNATURES_BELOW`] and for
/// encodings the index did not count; a source that lacks them gets
/// [`AssembleError::TextsNeeded`] naming all of them at once.
pub fn plan(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    query: &str,
    resolved: &ResolvedBudget,
    options: &QueryOptions,
) -> Result<Plan, AssembleError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(AssembleError::EmptyQuery);
    }
    let spec = &resolved.tokenizer;
    let mut warnings = resolved.warnings.clone();
    let profile = options.profile;
    let budget = profile.budget(resolved.budget);
    let error_output = match profile {
        Profile::Repair => Some(
            options
                .error_output
                .as_deref()
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .ok_or(AssembleError::ErrorOutputMissing)?,
        ),
        _ => None,
    };
    let mut intent = analyze(query);
    // Under `repair`, what the error output names is searched and ranked like the query's own.
    let mut search_text = query.to_string();
    if let Some(e) = error_output {
        let found = entities(e);
        let named = &mut intent.entities;
        for s in found.strings.iter().chain(&found.symbols) {
            search_text.push('\n');
            search_text.push_str(s);
        }
        for (to, from) in [
            (&mut named.paths, found.paths),
            (&mut named.symbols, found.symbols),
            (&mut named.strings, found.strings),
        ] {
            for x in from {
                if !to.contains(&x) {
                    to.push(x);
                }
            }
        }
        for f in found.frames {
            if !named.frames.contains(&f) {
                named.frames.push(f);
            }
        }
    }
    let terms = query_terms(&search_text);
    let hits = search(pack, source, &terms, options)?;
    for p in &options.hot_paths {
        if !intent.entities.paths.contains(p) {
            intent.entities.paths.push(p.clone());
        }
    }
    let weights = &options.weights;
    let excluded: HashSet<u32> = options.exclude.iter().copied().collect();
    let mut ranked = rank(pack, &hits, &options.dense, &terms, &intent, weights);
    diversify(pack, &mut ranked, weights.file_decay, budget);
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
    let (task, error_tokens, error_truncated) = match error_output {
        Some(e) => {
            let (task, tokens, cut) = repair_task(query, e, budget / 2, spec);
            (task, Some(tokens), cut)
        }
        None => (query.to_string(), None, false),
    };
    let max_pieces = match profile {
        Profile::Plan => Some(PLAN_PIECES),
        Profile::Repair => Some(framed.len() + REPAIR_CONTEXT_PIECES),
        Profile::Expand => None,
    };
    let level = match profile {
        Profile::Plan => options.compression.max(Compression::Medium),
        _ => options.compression,
    };
    let keys = KeyTerms::new(&search_text, &intent.entities);

    let frame_tokens = spec.count(&render(&[], &task));
    let slot = pack.encoding_slot(spec.base());
    let token_of = |i: usize| -> Option<u32> { slot.map(|s| spec.scale(pack.chunks[i].tokens[s])) };
    let repo_tokens: u64 = match (slot, spec) {
        (Some(s), TokenizerSpec::Exact(_)) => pack.derived().tokens_total(s),
        (Some(s), _) => pack
            .chunks
            .iter()
            .map(|c| u64::from(spec.scale(c.tokens[s])))
            .sum(),
        (None, _) => pack.chunks.iter().map(|c| c.len() / 3).sum(),
    };
    let room = budget.saturating_sub(frame_tokens);
    // `plan` keeps room for the project summary at the head of its prompt, and for the section
    // heading and joins around it, which the exact count of the whole prompt includes (without
    // them, pieces that fill their room to the token leave the summary a few tokens short).
    let reserved = match profile {
        Profile::Plan => {
            crate::summary::fill::project_cost(pack, spec).map_or(0, |c| c + SUMMARY_SECTION_SLACK)
        }
        _ => 0,
    }
    .min(room / 2);
    let piece_room = room - reserved;
    let mut strategy;
    let mut texts: HashMap<u32, String> = HashMap::default();
    if scores.is_empty() {
        strategy = "query only: nothing in the repository matches the query".to_string();
        warnings.push(
            "no relevant code found for the query; the prompt carries the query alone (low confidence)"
                .into(),
        );
    } else {
        let dense = if options.dense.is_empty() {
            ""
        } else {
            ", embeddings"
        };
        strategy = format!(
            "ranked by BM25, named symbols and mentioned files{dense} ({} candidates)",
            scores.len()
        );
    }
    // A repository that fits whole goes in whole (matching chunks keep their scores).
    let whole_fits = excluded.is_empty()
        && profile == Profile::Expand
        && repo_tokens <= u64::from(room)
        && repo_tokens + overhead_total(pack) <= u64::from(room);
    if whole_fits && !scores.is_empty() {
        let mut seen = vec![false; pack.chunks.len()];
        for (i, _) in &scores {
            seen[*i as usize] = true;
        }
        scores.extend(
            (0..pack.chunks.len() as u32)
                .filter(|i| !seen[*i as usize])
                .map(|i| (i, 0.0)),
        );
        strategy = "whole repository: it fits in the budget".to_string();
    }
    // Texts this phase needs and the source lacks: asked for together, not one at a time.
    let mut missing: Vec<u32> = Vec::new();
    let read = |i: u32, missing: &mut Vec<u32>| -> Result<Option<String>, AssembleError> {
        match source.text(pack, i as usize) {
            Ok(t) => Ok(Some(t)),
            Err(AssembleError::TextsNeeded(more)) => {
                missing.extend(more);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    };
    // Small budgets get signatures of the best definitions instead of bodies.
    let signatures_only = budget < SIGNATURES_BELOW && !scores.is_empty();
    let mut signatures: HashMap<u32, usize> = HashMap::default();
    if signatures_only {
        let mut kept = Vec::new();
        for &(i, score) in scores.iter().take(SIGNATURE_CANDIDATES) {
            let kind = pack.chunks[i as usize].kind;
            if matches!(
                kind,
                ChunkKind::Block | ChunkKind::Window | ChunkKind::Section
            ) {
                continue;
            }
            let Some(text) = read(i, &mut missing)? else {
                continue;
            };
            if let Some(n) = signature_len(&text)
                .filter(|&n| declares_its_symbol(&text[..n], &pack.chunks[i as usize]))
            {
                signatures.insert(i, n);
            }
            texts.insert(i, text);
            kept.push((i, score));
        }
        if !missing.is_empty() {
            return Err(AssembleError::TextsNeeded(missing));
        }
        if !kept.is_empty() {
            scores = kept;
            strategy = format!(
                "signatures only: the budget is under {SIGNATURES_BELOW} tokens ({} definitions considered)",
                scores.len()
            );
        }
    }
    let candidates_count = scores.len();
    let mut cands = Vec::with_capacity(scores.len());
    let mut original: HashMap<u32, f32> =
        HashMap::with_capacity_and_hasher(scores.len(), Default::default());
    // Counting texts on the fly (an encoding the index did not count) stops once the candidates
    // counted so far could fill the budget several times over: the rest could not be chosen.
    // A text the source lacks is estimated at three bytes a token until it is fetched.
    let mut counted_on_the_fly = 0u64;
    let mut piece_tokens: HashMap<u32, u32> =
        HashMap::with_capacity_and_hasher(scores.len(), Default::default());
    let mut depth = 0u64;
    let mut considered = 0usize;
    for &(i, score) in &scores {
        if cands.len() >= MIN_CANDIDATES && depth > CANDIDATE_DEPTH * u64::from(room) {
            break;
        }
        considered += 1;
        let signature = signatures
            .get(&i)
            .and_then(|&n| texts.get(&i).map(|t| spec.count(&t[..n])));
        let tokens = match signature.or_else(|| token_of(i as usize)) {
            Some(t) => t,
            None => {
                if counted_on_the_fly > 4 * u64::from(room) {
                    break;
                }
                match read(i, &mut missing)? {
                    Some(text) => {
                        let t = spec.count(&text);
                        counted_on_the_fly += u64::from(t);
                        texts.insert(i, text);
                        t
                    }
                    None => {
                        counted_on_the_fly += pack.chunks[i as usize].len() / 3;
                        continue;
                    }
                }
            }
        };
        // Selection plans with each piece's header included, so the budget it fills is real.
        cands.push(Candidate {
            key: i,
            tokens: tokens + header_cost(pack, i as usize),
            score: weights.priority(score.max(f32::MIN_POSITIVE), tokens),
        });
        original.insert(i, score);
        piece_tokens.insert(i, tokens);
        depth += u64::from(tokens);
    }
    if !missing.is_empty() {
        return Err(AssembleError::TextsNeeded(missing));
    }
    // What the candidates' pieces say about why they were chosen, and the files the summaries
    // may follow: the considered candidates only.
    scores.truncate(considered);
    let mut is_candidate = vec![false; pack.chunks.len()];
    for c in &cands {
        if let Some(x) = is_candidate.get_mut(c.key as usize) {
            *x = true;
        }
    }
    let reasons: HashMap<u32, Signals> = ranked
        .iter()
        .filter(|r| is_candidate.get(r.chunk as usize).copied().unwrap_or(false))
        .map(|r| (r.chunk, r.signals))
        .collect();
    drop(ranked);
    // Best first, once: selection, the refill rounds and the alternatives all walk this order,
    // and sorting a sorted list again costs one pass (each full sort of a large repository's
    // candidates was a few milliseconds of a warm query in the Worker).
    cands.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    let mut chosen = select_greedy(cands.clone(), piece_room, 0).chosen;
    if let Some(m) = max_pieces {
        chosen.truncate(m);
    }
    Ok(Plan {
        resolved: resolved.clone(),
        warnings,
        profile,
        budget,
        intent,
        framed,
        error_tokens,
        error_truncated,
        task,
        max_pieces,
        level,
        keys,
        frame_tokens,
        slot,
        repo_tokens,
        room,
        piece_room,
        strategy,
        texts,
        signatures,
        candidates_count,
        cands,
        chosen,
        original,
        piece_tokens,
        reasons,
        scores,
        excluded_ranked,
        excluded,
        signatures_sent: options.signatures_sent.iter().copied().collect(),
        alternatives: weights.alternatives.max(0.0) as usize,
        without_summaries: options.without_summaries,
    })
}

impl Plan {
    /// The chunks whose texts composing will most likely read, most needed first: the first
    /// selection, then the best candidates that could fill room given back, then the best
    /// definitions that could go in as signatures. A host reading texts from remote storage
    /// fetches these in one batch; what composing asks beyond them comes back as
    /// [`AssembleError::TextsNeeded`].
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
