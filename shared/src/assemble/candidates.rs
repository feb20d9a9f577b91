//! The candidates the first selection chooses from: the definitions the signatures-only mode
//! reads, each candidate's tokens (from the index's counts, or counted from its text) and
//! priority, and the first selection itself.

use rustc_hash::FxHashMap as HashMap;

use crate::catalog::TokenizerSpec;
use crate::chunk::{ChunkKind, signature_len};
use crate::index::IndexPack;
use crate::rank::{Ranked, Signals, Weights};
use crate::select::{Candidate, select_greedy};

use super::estimate::{declares_its_symbol, header_cost};
use super::{AssembleError, ChunkSource, Halt, SIGNATURES_BELOW};

/// How many definitions the signatures-only mode (budgets under [`SIGNATURES_BELOW`]) reads.
const SIGNATURE_CANDIDATES: usize = 300;

/// Candidates always considered for selection, however small the budget.
const MIN_CANDIDATES: usize = 2_048;

/// Beyond [`MIN_CANDIDATES`], candidates are considered until their tokens add up to this many
/// times the room: selection, the refill rounds and the summaries never reach further in
/// practice, and on a large repository a query matches tens of thousands of chunks (deno: 24k
/// for a 32k-token answer), whose per-candidate work was most of a warm query.
const CANDIDATE_DEPTH: u64 = 16;

/// Chunk `i`'s text, or `None` with `i` noted in `missing` when the source lacks it: the texts
/// a phase needs and the source lacks are asked for together, not one at a time.
fn read(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    i: u32,
    missing: &mut Vec<u32>,
) -> Result<Option<String>, AssembleError> {
    let text = source.text(pack, i as usize)?;
    if text.is_none() {
        missing.push(i);
    }
    Ok(text)
}

/// Small budgets (under [`SIGNATURES_BELOW`]) get signatures of the best definitions instead of
/// bodies: reads the best definitions, keeps the signature lengths of those that declare their
/// symbol, and narrows `scores` to the definitions read. Empty for other budgets.
pub(super) fn signatures_only(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    budget: u32,
    scores: &mut Vec<(u32, f32)>,
    texts: &mut HashMap<u32, String>,
    strategy: &mut String,
) -> Result<HashMap<u32, usize>, Halt> {
    let mut signatures: HashMap<u32, usize> = HashMap::default();
    if budget >= SIGNATURES_BELOW || scores.is_empty() {
        return Ok(signatures);
    }
    let mut missing: Vec<u32> = Vec::new();
    let mut kept = Vec::new();
    for &(i, score) in scores.iter().take(SIGNATURE_CANDIDATES) {
        let kind = pack.chunks[i as usize].kind;
        if matches!(
            kind,
            ChunkKind::Block | ChunkKind::Window | ChunkKind::Section
        ) {
            continue;
        }
        let Some(text) = read(pack, source, i, &mut missing)? else {
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
        return Err(Halt::texts(missing));
    }
    if !kept.is_empty() {
        *scores = kept;
        *strategy = format!(
            "signatures only: the budget is under {SIGNATURES_BELOW} tokens ({} definitions considered)",
            scores.len()
        );
    }
    Ok(signatures)
}

/// What counting the candidates reads: the pack and its texts, the target's tokens and the
/// room the candidates compete for.
pub(super) struct Counting<'a> {
    pack: &'a IndexPack,
    source: &'a dyn ChunkSource,
    spec: &'a TokenizerSpec,
    /// The pack's counts in the target's base encoding, if it holds them.
    slot: Option<usize>,
    room: u32,
    weights: &'a Weights,
}

/// What a piece made of a candidate reports: kept per candidate, in one map, because a large
/// repository's answer considers thousands of candidates and chooses a few dozen (three maps,
/// one per fact, were several percent of a warm call's instructions).
#[derive(Clone, Copy)]
pub(super) struct Facts {
    /// The ranking score.
    pub(super) score: f32,
    /// Tokens without the piece's header.
    pub(super) tokens: u32,
    /// Why it ranked; all zeros for a candidate ranking did not list (the whole repository
    /// fits, a `repair` frame).
    pub(super) why: Signals,
}

/// The candidates counted, in score order, with what the plan keeps of each.
pub(super) struct Candidates {
    pub(super) cands: Vec<Candidate>,
    /// Each candidate's facts; their `why` is filled by [`reasons`].
    pub(super) facts: HashMap<u32, Facts>,
    /// How many of the scores were looked at (the rest lie too deep to be chosen).
    pub(super) considered: usize,
}

impl<'a> Counting<'a> {
    /// What counting needs, from the plan's steps before it.
    pub(super) fn new(
        pack: &'a IndexPack,
        source: &'a dyn ChunkSource,
        spec: &'a TokenizerSpec,
        weights: &'a Weights,
        slot: Option<usize>,
        room: u32,
    ) -> Self {
        Counting {
            pack,
            source,
            spec,
            slot,
            room,
            weights,
        }
    }

    /// The candidates selection plans with, each priced with its header so the budget it fills
    /// is real: `scores` in order, until enough to fill the room many times over.
    pub(super) fn candidates(
        &self,
        scores: &[(u32, f32)],
        signatures: &HashMap<u32, usize>,
        texts: &mut HashMap<u32, String>,
    ) -> Result<Candidates, Halt> {
        let Counting {
            pack,
            source,
            spec,
            slot,
            room,
            weights,
        } = *self;
        let token_of =
            |i: usize| -> Option<u32> { slot.map(|s| spec.scale(pack.chunks[i].tokens[s])) };
        let mut missing: Vec<u32> = Vec::new();
        let mut cands = Vec::with_capacity(scores.len());
        let mut facts: HashMap<u32, Facts> = HashMap::with_capacity_and_hasher(
            scores.len().min(MIN_CANDIDATES * 2),
            Default::default(),
        );
        // Counting texts on the fly (an encoding the index did not count) stops once the
        // candidates counted so far could fill the budget several times over: the rest could not
        // be chosen. A text the source lacks is estimated at three bytes a token until fetched.
        let mut counted_on_the_fly = 0u64;
        let mut depth = 0u64;
        let mut considered = 0usize;
        for &(i, score) in scores {
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
                    match read(pack, source, i, &mut missing)? {
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
            facts.insert(
                i,
                Facts {
                    score,
                    tokens,
                    why: Signals::default(),
                },
            );
            depth += u64::from(tokens);
        }
        if !missing.is_empty() {
            return Err(Halt::texts(missing));
        }
        Ok(Candidates {
            cands,
            facts,
            considered,
        })
    }
}

/// Fills in the candidates' ranking signals, which the pieces report as why they were chosen.
/// A bit per chunk marks the candidates, so the ranked chunks that are not (most of them on a
/// large repository) cost one bit test, not a look-up.
pub(super) fn reasons(pack: &IndexPack, ranked: &[Ranked], facts: &mut HashMap<u32, Facts>) {
    let mut is_candidate = vec![0u64; pack.chunks.len().div_ceil(64)];
    for &k in facts.keys() {
        if let Some(w) = is_candidate.get_mut(k as usize / 64) {
            *w |= 1 << (k % 64);
        }
    }
    let marked = |c: u32| {
        is_candidate
            .get(c as usize / 64)
            .is_some_and(|w| w & (1 << (c % 64)) != 0)
    };
    for r in ranked.iter().filter(|r| marked(r.chunk)) {
        if let Some(f) = facts.get_mut(&r.chunk) {
            f.why = r.signals;
        }
    }
}

/// Sorts the candidates best first, once, and makes the first selection within `piece_room`
/// (at most `max_pieces`): selection, the refill rounds and the alternatives all walk this
/// order, and sorting a sorted list again costs one pass (each full sort of a large
/// repository's candidates was a few milliseconds of a warm query in the Worker).
pub(super) fn first_selection(
    cands: &mut [Candidate],
    piece_room: u32,
    max_pieces: Option<usize>,
) -> Vec<Candidate> {
    // Best first by priority, then pack index: the order of best-first keys.
    crate::order::sort_keys(cands, |c| crate::order::best_first_key(c.score, c.key));
    let mut chosen = select_greedy(cands.to_vec(), piece_room, 0).chosen;
    if let Some(m) = max_pieces {
        chosen.truncate(m);
    }
    chosen
}
