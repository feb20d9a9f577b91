//! The second half of answering a query: reading the chosen pieces, compressing them, filling
//! the room compression gives back, adding signatures and summaries, and composing the prompt
//! to the budget with an exact count.

use rustc_hash::FxHashMap as HashMap;

use crate::catalog::TokenizerSpec;
use crate::chunk::{ChunkKind, signature_len};
use crate::compose::{Piece, PieceForm, fit_with_summaries};
use crate::compress::{Compression, KeyTerms};
use crate::index::IndexPack;
use crate::profile::{Profile, ProfileReport};
use crate::select::Candidate;

use super::estimate::{declares_its_symbol, header_cost};
use super::plan::Plan;
use super::{
    AssembleError, Assembled, ChunkSource, MEDIUM_KEEP_SHARE, MIN_ALTERNATIVE_TOKENS, SHRINK_TRIES,
};

/// Most excluded chunks named back as already delivered.
const MAX_ALREADY_DELIVERED: usize = 32;

impl Plan {
    /// Reads the planned pieces through `source` and composes the prompt. The guarantee:
    /// `tokens_total` is the exact count of `prompt` (or the documented estimate for models
    /// without a public tokenizer) and never exceeds the budget. A text the source lacks ends
    /// it with [`AssembleError::TextsNeeded`]; the plan can be composed again once it is there.
    pub fn compose(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
    ) -> Result<Assembled, AssembleError> {
        let Plan {
            resolved,
            profile,
            budget,
            intent,
            framed,
            error_tokens,
            error_truncated,
            task,
            max_pieces,
            level,
            keys: key_terms,
            frame_tokens,
            slot,
            repo_tokens,
            room,
            piece_room,
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
            signatures_sent,
            alternatives,
            without_summaries,
            ..
        } = self;
        let (profile, budget, max_pieces, level, frame_tokens, slot, repo_tokens, room, piece_room) = (
            *profile,
            *budget,
            *max_pieces,
            *level,
            *frame_tokens,
            *slot,
            *repo_tokens,
            *room,
            *piece_room,
        );
        let spec = &resolved.tokenizer;
        let mut warnings = self.warnings.clone();
        let mut strategy = self.strategy.clone();
        let best = chosen
            .iter()
            .filter_map(|c| original.get(&c.key).copied())
            .fold(0.0f32, f32::max);
        let mut pieces = Vec::with_capacity(chosen.len());
        let make = |c: &Candidate| -> Result<Piece, AssembleError> {
            let text = match texts.get(&c.key) {
                Some(t) => t.clone(),
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
            p = compressed(p, piece_level(level, score, best, named), key_terms, spec);
            Ok(p)
        };
        let mut planned = 0u32;
        let mut in_prompt: rustc_hash::FxHashSet<u32> = Default::default();
        // Pack indices of `pieces`, in the same order.
        let mut keys: Vec<u32> = Vec::with_capacity(chosen.len());
        for c in chosen {
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
        // The plan keeps its candidates best first. Once no candidate further down is small
        // enough for the room left (and no shrink try is left), a round stops: on a large
        // repository most candidates lie past that point.
        let mut smallest_after: Vec<u32> = vec![u32::MAX; cands.len() + 1];
        for k in (0..cands.len()).rev() {
            smallest_after[k] = smallest_after[k + 1].min(cands[k].tokens);
        }
        for round in 0..JOIN_ROUNDS {
            let room_now = joined_header_room(pack, &pieces, &keys);
            let freed = room_now.saturating_sub(joined_room);
            joined_room = joined_room.max(room_now);
            planned = planned.saturating_sub(freed);
            if freed == 0 && !(round == 0 && level != Compression::None) {
                break;
            }
            for (k, c) in cands.iter().enumerate() {
                let left = piece_room.saturating_sub(planned);
                if tries == 0 && smallest_after[k] > left {
                    break;
                }
                if in_prompt.contains(&c.key) {
                    continue;
                }
                if max_pieces.is_some_and(|m| pieces.len() >= m) {
                    break;
                }
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
        if signatures.is_empty() && max_pieces.is_none() && *alternatives >= 1 {
            let sent = signatures_sent;
            let rest: Vec<&Candidate> = cands
                .iter()
                .filter(|c| !in_prompt.contains(&c.key) && !sent.contains(&c.key))
                .collect();
            for c in rest.into_iter().take(*alternatives) {
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
                let Some(n) = signature_len(&text)
                    .filter(|&n| declares_its_symbol(&text[..n], &pack.chunks[i]))
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
            scores,
            intent,
            repo_tokens,
            room,
            left: room.saturating_sub(planned),
            tokenizer: spec,
            project_first: profile == Profile::Plan,
        });
        let wanted = if *without_summaries || !excluded.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut filled.summaries)
        };
        let composition = fit_with_summaries(pieces, wanted, task, budget, spec)?;
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
        let already_delivered = excluded_ranked
            .iter()
            .filter(|(_, score)| chosen.is_empty() || *score >= floor)
            .take(MAX_ALREADY_DELIVERED)
            .map(|(chunk, _)| *chunk)
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
            error_tokens: *error_tokens,
            error_truncated: *error_truncated,
        };
        Ok(Assembled {
            tokens_total: composition.tokens,
            prompt: composition.prompt,
            pieces: composition.pieces,
            warnings,
            intent: intent.clone(),
            repo_tokens,
            frame_tokens,
            code_tokens,
            strategy,
            summaries: composition.summaries,
            size_class: filled.class,
            candidates: *candidates_count,
            left_out,
            compression_saved_tokens,
            profile,
            chosen,
            already_delivered,
        })
    }
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
