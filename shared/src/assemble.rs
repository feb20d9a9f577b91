//! Answering a query from one opened index: retrieval, ranking, selection and composition.
//!
//! Both hosts run this: the CLI over the embedded store and the edge API over whatever backend
//! holds the pack. Chunk texts come through [`ChunkSource`], because the pack stores only where
//! each text lives; the caller decides how to read it (a file range, an object already in
//! memory). Nothing here counts time or touches storage.

use std::collections::HashMap;

use serde::Serialize;

use crate::catalog::{ResolvedBudget, TokenizerSpec};
use crate::chunk::{ChunkKind, signature_len};
use crate::compose::{ComposeError, Piece, PieceForm, fit_with_summaries, render};
use crate::compress::{Compression, KeyTerms};
use crate::index::IndexPack;
use crate::intent::{QueryAnalysis, analyze, entities};
use crate::lexical::{Bm25Params, query_terms};
use crate::profile::{
    PLAN_PIECES, Profile, ProfileReport, REPAIR_CONTEXT_PIECES, frame_chunks, repair_task,
};
use crate::rank::{Signals, Weights, rank};
use crate::select::{Candidate, select_greedy};

/// Below this budget, pieces are signatures only: a few declarations tell a model more than
/// one body.
pub const SIGNATURES_BELOW: u32 = 1000;

/// Under `medium`, a piece scoring at least this share of the best chosen piece stays at
/// `light`: the pieces that carry the answer keep their bodies, the supporting ones keep their
/// signatures.
pub const MEDIUM_KEEP_SHARE: f32 = 0.5;

/// Under `medium` and `aggressive`, how many candidates too large to fit whole are compressed
/// to see whether they fit (each costs a text read and a count).
const SHRINK_TRIES: usize = 64;

/// Room under which no alternative is tried (beyond its header): a signature is rarely smaller.
const MIN_ALTERNATIVE_TOKENS: u32 = 12;

/// Reads the text of chunk `i` of the pack being answered from.
pub trait ChunkSource {
    /// The chunk's exact text.
    fn text(&self, pack: &IndexPack, i: usize) -> Result<String, AssembleError>;
}

/// Why a query could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// The query has no words.
    #[error("the query is empty")]
    EmptyQuery,
    /// A chunk's text could not be read.
    #[error("chunk text unavailable: {0}")]
    Source(String),
    /// The prompt could not be held to the budget.
    #[error(transparent)]
    Compose(#[from] ComposeError),
    /// The `repair` profile was asked for without the error output it answers.
    #[error("the repair profile needs the error output (error_output / --error-file)")]
    ErrorOutputMissing,
}

/// How to search and rank: the tuned defaults unless an experiment overrides them.
#[derive(Clone, Debug, Default)]
pub struct QueryOptions {
    /// Signal weights.
    pub weights: Weights,
    /// BM25 parameters used at query time, whatever the pack was built with.
    pub bm25: Bm25Params,
    /// Paths the client has open or recently edited: they count as mentioned.
    pub hot_paths: Vec<String>,
    /// Chunks already delivered (a continuation): never chosen again.
    pub exclude: Vec<u32>,
    /// Chunks a session already received as a signature: they may come whole, but are not
    /// offered as a signature alternative again.
    pub signatures_sent: Vec<u32>,
    /// How much each piece's text may be reduced.
    pub compression: Compression,
    /// How the budget is spent (`expand` unless asked).
    pub profile: Profile,
    /// The error output a `repair` request answers (ignored by other profiles).
    pub error_output: Option<String>,
    /// Leave summaries out (search pages carry pieces only).
    pub without_summaries: bool,
    /// Dense hits (chunk, 0-1 from [`crate::dense::scaled_hits`]) when the caller embedded the
    /// request; empty otherwise.
    pub dense: Vec<(u32, f32)>,
}

/// The assembled context and how it was chosen.
#[derive(Clone, Debug, Serialize)]
pub struct Assembled {
    /// The pieces in the prompt, in prompt order.
    pub pieces: Vec<Piece>,
    /// The prompt's count with the target tokenizer.
    pub tokens_total: u32,
    /// The prompt.
    pub prompt: String,
    /// What the caller should know.
    pub warnings: Vec<String>,
    /// What the request was understood to be.
    pub intent: QueryAnalysis,
    /// Tokens in the whole index, in the target's tokens.
    pub repo_tokens: u64,
    /// Tokens of the prompt without any code (framing and the query).
    pub frame_tokens: u32,
    /// Tokens given to code pieces.
    pub code_tokens: u32,
    /// How pieces were chosen, then the size strategy that chose the summaries.
    pub strategy: String,
    /// Summaries in the prompt (never among `pieces`: they quote no lines), in prompt order.
    pub summaries: Vec<crate::compose::SummaryPiece>,
    /// The repository's size relative to the room for context.
    pub size_class: crate::summary::SizeClass,
    /// Chunks that matched the query.
    pub candidates: usize,
    /// Relevant chunks that did not fit (a continuation can deliver them).
    pub left_out: usize,
    /// Tokens compression took out of the pieces sent (their counts before, less after).
    pub compression_saved_tokens: u32,
    /// The profile and what it did.
    pub profile: ProfileReport,
    /// Pack indices of the chunks in the prompt (for continuations and audit). A chunk given as
    /// a signature counts: a continuation page does not send it again, whole or not (its token
    /// carries no separate list of signatures; a session does, and may send it whole later).
    #[serde(skip)]
    pub chosen: Vec<u32>,
    /// Pack indices of excluded chunks (the caller already has them) that rank at least as high
    /// as the weakest chosen piece, best first: the caller should reuse them, so they are named
    /// instead of sent again.
    #[serde(skip)]
    pub already_delivered: Vec<u32>,
}

/// Tokens of the summaries section's heading and separators, kept free with the project
/// summary under `plan`.
const SUMMARY_SECTION_SLACK: u32 = 24;

/// Most excluded chunks named back as already delivered.
const MAX_ALREADY_DELIVERED: usize = 32;

/// Answers `query` from `pack` within `resolved.budget`, counted by `resolved.tokenizer`.
///
/// The guarantee: `tokens_total` is the exact count of `prompt` (or the documented estimate
/// for models without a public tokenizer) and never exceeds the budget.
pub fn assemble(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    query: &str,
    resolved: &ResolvedBudget,
    options: &QueryOptions,
) -> Result<Assembled, AssembleError> {
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
    let hits = pack.lexical.search_with(&terms, options.bm25);
    for p in &options.hot_paths {
        if !intent.entities.paths.contains(p) {
            intent.entities.paths.push(p.clone());
        }
    }
    let weights = &options.weights;
    let excluded: std::collections::HashSet<u32> = options.exclude.iter().copied().collect();
    let mut ranked = rank(pack, &hits, &options.dense, &terms, &intent, weights);
    crate::rank::diversify(pack, &mut ranked, weights.file_decay, budget);
    let reasons: HashMap<u32, Signals> = ranked.iter().map(|r| (r.chunk, r.signals)).collect();
    let mut scores: Vec<(u32, f32)> = ranked
        .iter()
        .filter(|r| !excluded.contains(&r.chunk))
        .map(|r| (r.chunk, r.score))
        .collect();
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
    let repo_tokens: u64 = match slot {
        Some(s) => pack
            .chunks
            .iter()
            .map(|c| u64::from(spec.scale(c.tokens[s])))
            .sum(),
        None => pack.chunks.iter().map(|c| c.len() / 3).sum(),
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
    let mut texts: HashMap<u32, String> = HashMap::new();
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
    // Small budgets get signatures of the best definitions instead of bodies.
    let signatures_only = budget < SIGNATURES_BELOW && !scores.is_empty();
    let mut signatures: HashMap<u32, usize> = HashMap::new();
    if signatures_only {
        let mut kept = Vec::new();
        for &(i, score) in scores.iter().take(300) {
            let kind = pack.chunks[i as usize].kind;
            if matches!(
                kind,
                ChunkKind::Block | ChunkKind::Window | ChunkKind::Section
            ) {
                continue;
            }
            let text = source.text(pack, i as usize)?;
            if let Some(n) = signature_len(&text)
                .filter(|&n| declares_its_symbol(&text[..n], &pack.chunks[i as usize]))
            {
                signatures.insert(i, n);
            }
            texts.insert(i, text);
            kept.push((i, score));
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
    let mut original: HashMap<u32, f32> = HashMap::new();
    // Counting texts on the fly (an encoding the index did not count) stops once the candidates
    // counted so far could fill the budget several times over: the rest could not be chosen.
    let mut counted_on_the_fly = 0u64;
    let mut piece_tokens: HashMap<u32, u32> = HashMap::new();
    for &(i, score) in &scores {
        let signature = signatures
            .get(&i)
            .and_then(|&n| texts.get(&i).map(|t| spec.count(&t[..n])));
        let tokens = match signature.or_else(|| token_of(i as usize)) {
            Some(t) => t,
            None => {
                if counted_on_the_fly > 4 * u64::from(room) {
                    break;
                }
                let text = source.text(pack, i as usize)?;
                let t = spec.count(&text);
                counted_on_the_fly += u64::from(t);
                texts.insert(i, text);
                t
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
    }
    let mut chosen = select_greedy(cands.clone(), piece_room, 0).chosen;
    if let Some(m) = max_pieces {
        chosen.truncate(m);
    }
    let best = chosen
        .iter()
        .filter_map(|c| original.get(&c.key).copied())
        .fold(0.0f32, f32::max);
    let mut pieces = Vec::with_capacity(chosen.len());
    let mut make = |c: &Candidate| -> Result<Piece, AssembleError> {
        let text = match texts.remove(&c.key) {
            Some(t) => t,
            None => source.text(pack, c.key as usize)?,
        };
        let score = original.get(&c.key).copied().unwrap_or(c.score);
        let tokens = piece_tokens.get(&c.key).copied().unwrap_or(c.tokens);
        let mut p = piece(pack, c.key as usize, text, tokens, score);
        p.base_tokens = slot.map(|s| pack.chunks[c.key as usize].tokens[s]);
        if let Some(&n) = signatures.get(&c.key) {
            p = to_signature(p, n, spec);
        }
        // Pieces added because the whole repository fits have no signal: all zeros.
        let why = reasons.get(&c.key).copied().unwrap_or_default();
        p.reasoning = Some(why);
        let named = why.mention > 0.0 || why.symbol >= 1.0;
        p = compressed(p, piece_level(level, score, best, named), &keys, spec);
        Ok(p)
    };
    let mut planned = 0u32;
    let mut in_prompt: std::collections::HashSet<u32> = std::collections::HashSet::new();
    // Pack indices of `pieces`, in the same order.
    let mut keys: Vec<u32> = Vec::with_capacity(chosen.len());
    for c in &chosen {
        let p = make(c)?;
        planned += p.tokens + header_cost(pack, c.key as usize);
        pieces.push(p);
        keys.push(c.key);
        in_prompt.insert(c.key);
    }
    // Room the plan had counted comes free twice over, and is filled with the next best
    // candidates: compression cuts the pieces, and pieces that continue each other in their file
    // share one header in the prompt (`compose::joined`), which pieces added here may do too.
    // Under `medium` and `aggressive` a candidate too large whole may fit once its bodies are
    // cut: the first [`SHRINK_TRIES`] such candidates are tried.
    let mut tries = if level >= Compression::Medium {
        SHRINK_TRIES
    } else {
        0
    };
    let mut joined_room = 0u32;
    // The candidates best first, sorted once for every round.
    let mut by_score: Vec<&Candidate> = cands.iter().collect();
    by_score.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    for round in 0..JOIN_ROUNDS {
        let room_now = joined_header_room(pack, &pieces, &keys);
        let freed = room_now.saturating_sub(joined_room);
        joined_room = joined_room.max(room_now);
        planned = planned.saturating_sub(freed);
        if freed == 0 && !(round == 0 && level != Compression::None) {
            break;
        }
        for &c in &by_score {
            if in_prompt.contains(&c.key) {
                continue;
            }
            if max_pieces.is_some_and(|m| pieces.len() >= m) {
                break;
            }
            let left = piece_room.saturating_sub(planned);
            if c.tokens > left {
                if tries == 0 {
                    continue;
                }
                tries -= 1;
            }
            let p = make(c)?;
            let cost = p.tokens + header_cost(pack, c.key as usize);
            if cost <= left {
                planned += cost;
                pieces.push(p);
                keys.push(c.key);
                in_prompt.insert(c.key);
            }
        }
    }
    // Smaller alternatives: the best candidates still left out (too large whole for the room
    // left) go in as their signature, doc comment and declaration, while it fits: a model that
    // sees a relevant function's signature knows it exists and how to call it. Not under
    // `plan`/`repair` (their piece counts are fixed) nor when everything is signatures already.
    if signatures.is_empty() && max_pieces.is_none() && weights.alternatives >= 1.0 {
        let sent: std::collections::HashSet<u32> =
            options.signatures_sent.iter().copied().collect();
        let mut rest: Vec<&Candidate> = cands
            .iter()
            .filter(|c| !in_prompt.contains(&c.key) && !sent.contains(&c.key))
            .collect();
        rest.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        for c in rest.into_iter().take(weights.alternatives as usize) {
            let i = c.key as usize;
            let left = piece_room.saturating_sub(planned);
            let header = header_cost(pack, i);
            if left <= header + MIN_ALTERNATIVE_TOKENS {
                break;
            }
            if matches!(
                pack.chunks[i].kind,
                ChunkKind::Block | ChunkKind::Window | ChunkKind::Section
            ) {
                continue;
            }
            let text = source.text(pack, i)?;
            let Some(n) =
                signature_len(&text).filter(|&n| declares_its_symbol(&text[..n], &pack.chunks[i]))
            else {
                continue;
            };
            let score = original.get(&c.key).copied().unwrap_or(c.score);
            let tokens = piece_tokens.get(&c.key).copied().unwrap_or(c.tokens);
            let mut p = piece(pack, i, text, tokens, score);
            p.base_tokens = slot.map(|s| pack.chunks[i].tokens[s]);
            p = to_signature(p, n, spec);
            p.reasoning = Some(reasons.get(&c.key).copied().unwrap_or_default());
            let cost = p.tokens + header;
            if cost <= left {
                planned += cost;
                pieces.push(p);
                in_prompt.insert(c.key);
            }
        }
    }
    let mut left_out = candidates_count.saturating_sub(pieces.len());
    // Summaries fill what the pieces left; a continuation page (the caller has the first) or a
    // caller that wants pieces only gets none.
    let mut filled = crate::summary::fill(&crate::summary::fill::FillInput {
        pack,
        pieces: &pieces,
        scores: &scores,
        intent: &intent,
        repo_tokens,
        room,
        left: room.saturating_sub(planned),
        tokenizer: spec,
        project_first: profile == Profile::Plan,
    });
    let wanted = if options.without_summaries || !excluded.is_empty() {
        Vec::new()
    } else {
        std::mem::take(&mut filled.summaries)
    };
    let composition = fit_with_summaries(pieces, wanted, &task, budget, spec)?;
    strategy = format!(
        "{strategy}; {}",
        filled.describe(composition.summaries.len())
    );
    left_out += composition.dropped;
    // The pieces' pack indices, by chunk id (only the pieces made here: hashing every chunk id
    // of a large index cost more than the rest of this mapping).
    let key_of: HashMap<&str, u32> = in_prompt
        .iter()
        .map(|&i| (pack.chunks[i as usize].id.as_str(), i))
        .collect();
    let chosen: Vec<u32> = composition
        .pieces
        .iter()
        .filter_map(|p| key_of.get(p.chunk_id.as_str()).copied())
        .collect();
    let floor = chosen
        .iter()
        .filter_map(|i: &u32| original.get(i).copied())
        .fold(f32::INFINITY, f32::min);
    let already_delivered = ranked
        .iter()
        .filter(|r| excluded.contains(&r.chunk) && (chosen.is_empty() || r.score >= floor))
        .take(MAX_ALREADY_DELIVERED)
        .map(|r| r.chunk)
        .collect();
    let summary_tokens: u32 = composition.summaries.iter().map(|s| s.tokens).sum();
    let code_tokens = composition
        .tokens
        .saturating_sub(frame_tokens)
        .saturating_sub(summary_tokens);
    let compression_saved_tokens = composition
        .pieces
        .iter()
        .filter_map(|p| p.original_tokens.map(|o| o.saturating_sub(p.tokens)))
        .sum();
    if profile == Profile::Repair && framed.is_empty() {
        warnings.push(
            "no stack frame of the error output names a line in the repository; pieces were chosen by its words"
                .into(),
        );
    }
    let profile = ProfileReport {
        name: profile,
        budget,
        max_pieces,
        project_summary: composition
            .summaries
            .iter()
            .find(|s| s.kind == crate::summary::SummaryKind::Project)
            .map(|s| s.text.clone()),
        frame_pieces: (profile == Profile::Repair).then_some(framed.len()),
        error_frames: match profile {
            Profile::Repair => intent.entities.frames.clone(),
            _ => Vec::new(),
        },
        error_tokens,
        error_truncated,
    };
    Ok(Assembled {
        tokens_total: composition.tokens,
        prompt: composition.prompt,
        pieces: composition.pieces,
        warnings,
        intent,
        repo_tokens,
        frame_tokens,
        code_tokens,
        strategy,
        summaries: composition.summaries,
        size_class: filled.class,
        candidates: candidates_count,
        left_out,
        compression_saved_tokens,
        profile,
        chosen,
        already_delivered,
    })
}

/// A conservative guess of a piece's header and fence in tokens (about three characters a
/// token); the composer's exact count corrects any error.
fn header_cost(pack: &IndexPack, i: usize) -> u32 {
    let c = &pack.chunks[i];
    let path = pack.files[c.file as usize].path.len();
    let symbol = c.symbol.as_ref().map_or(0, String::len);
    ((2 * path + symbol + 80) / 3) as u32
}

/// A conservative guess of what a piece costs in the header of a block it joins: its lines,
/// its chunk id and a separator (an id of 24 hex digits is 12-18 tokens).
const JOINED_ENTRY_COST: u32 = 24;

/// Rounds of filling the room joined headers give back (each added piece may join too).
const JOIN_ROUNDS: usize = 3;

/// The header room the plan counted for pieces that the prompt quotes in the block of an
/// earlier piece of their file. `keys[k]` is the pack index of `pieces[k]`.
fn joined_header_room(pack: &IndexPack, pieces: &[Piece], keys: &[u32]) -> u32 {
    crate::compose::joined(pieces)
        .into_iter()
        .filter_map(|k| keys.get(k))
        .map(|&i| header_cost(pack, i as usize).saturating_sub(JOINED_ENTRY_COST))
        .sum()
}

fn overhead_total(pack: &IndexPack) -> u64 {
    (0..pack.chunks.len())
        .map(|i| u64::from(header_cost(pack, i)))
        .sum()
}

fn piece(pack: &IndexPack, i: usize, text: String, tokens: u32, score: f32) -> Piece {
    let c = &pack.chunks[i];
    let f = &pack.files[c.file as usize];
    Piece {
        path: f.path.clone(),
        language: f.language.clone(),
        start_line: c.start_line,
        end_line: c.end_line,
        byte_start: c.byte_start,
        byte_end: c.byte_end,
        kind: c.kind.name().to_string(),
        symbol: c.symbol.clone(),
        chunk_id: c.id.clone(),
        sha256: c.sha256.to_hex(),
        text,
        tokens,
        score: if score <= f32::MIN_POSITIVE {
            0.0
        } else {
            score
        },
        form: PieceForm::Full,
        original_tokens: None,
        elided_lines: None,
        reasoning: None,
        base_tokens: None,
        block: 0,
    }
}

/// The level one piece gets when the request asked for `requested`. Pieces the user named
/// (their file or symbol) are never cut inside: they stay at `light`. A piece is of *high value*
/// when it scores at least [`MEDIUM_KEEP_SHARE`] of the best chosen piece. Under `medium`, high
/// value pieces stay at `light` and the others have their bodies elided; under `aggressive`,
/// high-value pieces keep the key lines of their bodies and the others have their bodies
/// elided, so that every piece is cut at least as much as under `medium`.
fn piece_level(requested: Compression, score: f32, best: f32, named: bool) -> Compression {
    let high = score >= MEDIUM_KEEP_SHARE * best;
    match requested {
        Compression::Medium | Compression::Aggressive if named => Compression::Light,
        Compression::Medium if high => Compression::Light,
        Compression::Aggressive if !high => Compression::Medium,
        other => other,
    }
}

/// The piece compressed at `level`, recounted; unchanged when compression saves no token.
/// `medium` and `aggressive` fall back to `light` for text they do not read (Markdown, other
/// languages) or that has no function body to cut.
fn compressed(mut p: Piece, level: Compression, keys: &KeyTerms, spec: &TokenizerSpec) -> Piece {
    use crate::compress::{aggressive, light, medium};
    if level == Compression::None || p.form != PieceForm::Full {
        return p;
    }
    let reduced = match level {
        Compression::Medium => medium(&p.text, &p.language).map(|r| (r, PieceForm::Medium)),
        Compression::Aggressive => {
            aggressive(&p.text, &p.language, keys).map(|r| (r, PieceForm::Aggressive))
        }
        Compression::None | Compression::Light => None,
    };
    let (text, form, elided) = match reduced {
        Some((r, form)) => (r.text, form, Some(r.elided_lines as u32)),
        None => (light(&p.text, &p.language), PieceForm::Light, None),
    };
    if text == p.text {
        return p;
    }
    let tokens = spec.count(&text);
    if tokens >= p.tokens {
        return p;
    }
    p.original_tokens = Some(p.tokens);
    p.tokens = tokens;
    p.sha256 = crate::hash::Sha256Digest::of(text.as_bytes()).to_hex();
    p.text = text;
    p.form = form;
    p.elided_lines = elided;
    p.base_tokens = None;
    p
}

/// Whether the signature cut from a chunk declares one of the names the chunk defines: a later
/// part of a definition split across chunks starts with body statements, which
/// [`signature_len`] would otherwise take for a declaration.
fn declares_its_symbol(signature: &str, chunk: &crate::index::ChunkRecord) -> bool {
    let signature = signature.to_lowercase();
    crate::index::references::defined_names(chunk).any(|name| signature.contains(name.as_str()))
}

/// Cuts a piece down to its signature, fixing its provenance.
fn to_signature(mut p: Piece, len: usize, spec: &TokenizerSpec) -> Piece {
    p.text.truncate(len);
    p.byte_end = p.byte_start + len as u64;
    p.end_line = p.start_line + p.text.trim_end_matches('\n').matches('\n').count() as u32;
    p.sha256 = crate::hash::Sha256Digest::of(p.text.as_bytes()).to_hex();
    p.tokens = spec.count(&p.text);
    p.form = PieceForm::Signature;
    p.base_tokens = None;
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_high_value_pieces_keep_their_bodies() {
        use Compression::*;
        assert_eq!(piece_level(Medium, 10.0, 10.0, false), Light);
        assert_eq!(piece_level(Medium, 5.0, 10.0, false), Light);
        assert_eq!(piece_level(Medium, 4.9, 10.0, false), Medium);
        assert_eq!(piece_level(Medium, 1.0, 10.0, true), Light);
        assert_eq!(piece_level(Aggressive, 10.0, 10.0, false), Aggressive);
        assert_eq!(piece_level(Aggressive, 4.9, 10.0, false), Medium);
        assert_eq!(piece_level(Aggressive, 1.0, 10.0, true), Light);
        assert_eq!(piece_level(Light, 1.0, 10.0, false), Light);
        assert_eq!(piece_level(None, 1.0, 10.0, true), None);
    }
}
