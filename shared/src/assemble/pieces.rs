//! The second half of answering a query: reading the chosen pieces, compressing them, filling
//! the room compression gives back, adding signatures and summaries, and composing the prompt
//! to the budget with an exact count.

use rustc_hash::FxHashSet;

use crate::catalog::TokenizerSpec;
use crate::chunk::{ChunkKind, signature_len};
use crate::compose::{Piece, PieceForm, SummaryPiece, fit_with_summaries};
use crate::compress::{Compression, KeyTerms};
use crate::index::IndexPack;
use crate::lists::{ListId, ListKind};
use crate::profile::Profile;
use crate::select::Candidate;

use super::estimate::{declares_its_symbol, header_cost};
use super::plan::Plan;
use super::summaries::{Filled, TextAt};
use super::{
    AssembleError, Assembled, ChunkSource, Halt, MEDIUM_KEEP_SHARE, MIN_ALTERNATIVE_TOKENS, Needs,
    SHRINK_TRIES, Step, list_of, text_of,
};

/// The pieces going into the prompt so far, while composing.
pub(super) struct Draft {
    pub(super) pieces: Vec<Piece>,
    /// Pack indices of the pieces made whole, in the order of `pieces` (signposts and the
    /// signature alternatives are not among them).
    keys: Vec<u32>,
    /// Pack indices of every piece.
    pub(super) in_prompt: FxHashSet<u32>,
    /// What the pieces cost as the plan counts them, headers included.
    pub(super) planned: u32,
}

impl Draft {
    /// Adds a piece made whole from chunk `key`, which costs `cost` with its header.
    pub(super) fn push(&mut self, p: Piece, key: u32, cost: u32) {
        self.planned += cost;
        self.pieces.push(p);
        self.keys.push(key);
        self.in_prompt.insert(key);
    }

    /// Adds a piece that carries only part of chunk `key` (a signpost, a signature).
    pub(super) fn push_partial(&mut self, p: Piece, key: u32, cost: u32) {
        self.planned += cost;
        self.pieces.push(p);
        self.in_prompt.insert(key);
    }
}

impl Plan {
    /// Reads the planned pieces through `source` and composes the prompt. The guarantee:
    /// `tokens_total` is the exact count of `prompt` (or the documented estimate for models
    /// without a public tokenizer) and never exceeds the budget. A text the source lacks ends
    /// it with a [`Step::Needs`] naming it (the chosen summaries' lists, all at once); the plan
    /// can be composed again once they are there.
    pub fn compose(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
    ) -> Result<Step<Assembled>, AssembleError> {
        Halt::step(self.composed(pack, source))
    }

    /// [`Self::compose`], stopping with `?` at the first read it lacks or the first failure.
    fn composed(&self, pack: &IndexPack, source: &dyn ChunkSource) -> Result<Assembled, Halt> {
        let best = self
            .chosen
            .iter()
            .filter_map(|c| self.score_of(c.key))
            .fold(0.0f32, f32::max);
        let mut draft = self.first_pieces(pack, source, best)?;
        // Built once: both fills walk the same candidates (O(candidates) on a large index).
        let smallest_after = self.smallest_after();
        self.refill(pack, source, best, &smallest_after, &mut draft)?;
        self.add_excerpts(pack, source, &mut draft)?;
        self.add_signposts(pack, source, &mut draft)?;
        self.fill_released(pack, source, best, &smallest_after, &mut draft)?;
        // Not under `plan`/`repair` (their piece counts are fixed) nor when everything is
        // signatures already.
        if self.signatures.is_empty() && self.max_pieces.is_none() && self.alternatives >= 1 {
            self.add_alternatives(pack, source, &mut draft)?;
        }
        let mut left_out = self.candidates_count.saturating_sub(draft.pieces.len());
        let (filled, wanted) = self.summaries(pack, source, &draft)?;
        let spec = &self.resolved.tokenizer;
        let composition = fit_with_summaries(draft.pieces, wanted, &self.task, self.budget, spec)?;
        let strategy = format!(
            "{}; {}",
            self.strategy,
            filled.describe(composition.summaries.len())
        );
        left_out += composition.dropped;
        Ok(self.assembled(
            pack,
            composition,
            &draft.in_prompt,
            strategy,
            left_out,
            filled.class,
        ))
    }

    /// Candidate `c` as a piece: its text (read now unless the plan read it), cut to its
    /// signature in signatures-only mode, and compressed at the level its score and naming earn.
    pub(super) fn made(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        c: &Candidate,
        best: f32,
    ) -> Result<Piece, Halt> {
        let spec = &self.resolved.tokenizer;
        let text = match self.texts.get(&c.key) {
            Some(t) => t.clone(),
            None => text_of(pack, source, c.key as usize)?,
        };
        let score = self.score_of(c.key).unwrap_or(c.score);
        let tokens = self.tokens_of(c.key).unwrap_or(c.tokens);
        let mut p = piece(pack, c.key as usize, text, tokens, score);
        p.base_tokens = self.slot.map(|s| pack.chunks[c.key as usize].tokens[s]);
        if let Some(&n) = self.signatures.get(&c.key) {
            p = to_signature(p, n, spec);
        }
        // Pieces added because the whole repository fits have no signal: all zeros.
        let why = self.why_of(c.key);
        p.reasoning = Some(why);
        let named = why.mention > 0.0 || why.symbol >= 1.0;
        p = compressed(
            p,
            piece_level(self.level, score, best, named),
            &self.keys,
            spec,
        );
        Ok(p)
    }

    /// The first selection's pieces, made in its order, and what the plan counts them at.
    fn first_pieces(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        best: f32,
    ) -> Result<Draft, Halt> {
        let mut draft = Draft {
            pieces: Vec::with_capacity(self.chosen.len()),
            keys: Vec::with_capacity(self.chosen.len()),
            in_prompt: FxHashSet::default(),
            planned: 0,
        };
        for c in &self.chosen {
            let p = self.made(pack, source, c, best)?;
            let cost = p.tokens + header_cost(pack, c.key as usize);
            draft.push(p, c.key, cost);
        }
        Ok(draft)
    }

    /// Room the plan had counted comes free twice over, and is filled with the next best
    /// candidates: compression cuts the pieces, and pieces that continue each other in their file
    /// share one header in the prompt (`compose::joined`), which pieces added here may do too.
    /// Under `medium` and `aggressive` a candidate too large whole may fit once its bodies are
    /// cut: the first [`SHRINK_TRIES`] such candidates are tried. `smallest_after` is
    /// [`Self::smallest_after`].
    fn refill(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        best: f32,
        smallest_after: &[u32],
        draft: &mut Draft,
    ) -> Result<(), Halt> {
        let mut tries = if self.level >= Compression::Medium {
            SHRINK_TRIES
        } else {
            0
        };
        let mut joined_room = 0u32;
        for round in 0..JOIN_ROUNDS {
            let room_now = joined_header_room(pack, &draft.pieces, &draft.keys);
            let freed = room_now.saturating_sub(joined_room);
            joined_room = joined_room.max(room_now);
            draft.planned = draft.planned.saturating_sub(freed);
            if freed == 0 && !(round == 0 && self.level != Compression::None) {
                break;
            }
            let room = self.piece_room;
            self.fill(pack, source, best, draft, room, smallest_after, &mut tries)?;
        }
        Ok(())
    }

    /// The smallest candidate from each place in the plan's order on: once none further down
    /// is small enough for the room left (and no shrink try is left), [`Self::fill`] stops; on
    /// a large repository most candidates lie past that point.
    fn smallest_after(&self) -> Vec<u32> {
        let mut out = vec![u32::MAX; self.cands.len() + 1];
        for k in (0..self.cands.len()).rev() {
            out[k] = out[k + 1].min(self.cands[k].tokens);
        }
        out
    }

    /// Adds the best candidates not in the prompt that fit in `room` (less what the draft
    /// holds), whole or, while `tries` last, compressed. `smallest_after` is
    /// [`Self::smallest_after`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fill(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        best: f32,
        draft: &mut Draft,
        room: u32,
        smallest_after: &[u32],
        tries: &mut usize,
    ) -> Result<(), Halt> {
        for (k, c) in self.cands.iter().enumerate() {
            let left = room.saturating_sub(draft.planned);
            if *tries == 0 && smallest_after[k] > left {
                break;
            }
            if draft.in_prompt.contains(&c.key) {
                continue;
            }
            if self.max_pieces.is_some_and(|m| draft.pieces.len() >= m) {
                break;
            }
            if c.tokens > left {
                if *tries == 0 {
                    continue;
                }
                *tries -= 1;
            }
            let p = self.made(pack, source, c, best)?;
            let cost = p.tokens + header_cost(pack, c.key as usize);
            if cost <= left {
                draft.push(p, c.key, cost);
            }
        }
        Ok(())
    }

    /// Smaller alternatives: the best candidates still left out (too large whole for the room
    /// left) go in as their signature, doc comment and declaration, while it fits: a model that
    /// sees a relevant function's signature knows it exists and how to call it.
    fn add_alternatives(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        draft: &mut Draft,
    ) -> Result<(), Halt> {
        let spec = &self.resolved.tokenizer;
        let sent = &self.signatures_sent;
        let rest: Vec<&Candidate> = self
            .cands
            .iter()
            .filter(|c| !draft.in_prompt.contains(&c.key) && !sent.contains(&c.key))
            .collect();
        for c in rest.into_iter().take(self.alternatives) {
            let i = c.key as usize;
            let left = self.piece_room.saturating_sub(draft.planned);
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
            let text = text_of(pack, source, i)?;
            let Some(n) =
                signature_len(&text).filter(|&n| declares_its_symbol(&text[..n], &pack.chunks[i]))
            else {
                continue;
            };
            let score = self.score_of(c.key).unwrap_or(c.score);
            let tokens = self.tokens_of(c.key).unwrap_or(c.tokens);
            let mut p = piece(pack, i, text, tokens, score);
            p.base_tokens = self.slot.map(|s| pack.chunks[i].tokens[s]);
            p = to_signature(p, n, spec);
            p.reasoning = Some(self.why_of(c.key));
            let cost = p.tokens + header;
            if cost <= left {
                draft.push_partial(p, c.key, cost);
            }
        }
        Ok(())
    }

    /// Summaries fill what the pieces left; a continuation page (the caller has the first) or a
    /// caller that wants pieces only gets none. The summaries chosen, and those to compose with
    /// their texts (those the source has not read yet are one [`Halt::Needs`]).
    fn summaries(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        draft: &Draft,
    ) -> Result<(Filled, Vec<SummaryPiece>), Halt> {
        let mut filled = super::summaries::fill(&super::summaries::FillInput {
            pack,
            pieces: &draft.pieces,
            scores: &self.scores,
            intent: &self.intent,
            repo_tokens: self.repo_tokens,
            room: self.room,
            left: self.room.saturating_sub(draft.planned),
            tokenizer: &self.resolved.tokenizer,
            project_first: self.profile == Profile::Plan,
        });
        let wanted = if self.without_summaries || !self.excluded.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut filled.summaries)
        };
        let mut missing = Needs::default();
        let mut pieces = Vec::with_capacity(wanted.len());
        for (mut piece, at) in wanted {
            match summary_text(pack, source, at) {
                Ok(text) => piece.text = text,
                Err(Halt::Needs(n)) => missing.add(n),
                Err(e) => return Err(e),
            }
            pieces.push(piece);
        }
        if !missing.is_empty() {
            return Err(Halt::Needs(missing));
        }
        Ok((filled, pieces))
    }
}

/// A chosen summary's text: from the pack, or read through `source`.
fn summary_text(pack: &IndexPack, source: &dyn ChunkSource, at: TextAt) -> Result<String, Halt> {
    let k = match at {
        TextAt::Project => {
            return Ok(pack
                .summaries
                .project
                .as_ref()
                .map(|p| p.text.clone())
                .unwrap_or_default());
        }
        TextAt::Stored(k) => k,
    };
    let id = ListId {
        kind: ListKind::SummaryTexts,
        key: k,
        at: None,
    };
    let bytes = match pack.summaries.text_inline(k) {
        Some(b) => std::borrow::Cow::Borrowed(b),
        None => list_of(pack, source, id)?,
    };
    String::from_utf8(bytes.into_owned())
        .map_err(|_| AssembleError::Source(format!("{id} is not UTF-8")).into())
}

/// A conservative guess of what a piece costs in the block it joins beyond its own text: the
/// header cites the stretch, not its members, so only the empty lines between them (at most
/// [`crate::compose::MAX_JOIN_GAP`]).
const JOINED_ENTRY_COST: u32 = 2;

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

pub(super) fn piece(pack: &IndexPack, i: usize, text: String, tokens: u32, score: f32) -> Piece {
    let c = &pack.chunks[i];
    let f = &pack.files[c.file as usize];
    Piece {
        path: f.path.clone(),
        language: f.language.to_string(),
        start_line: c.start_line,
        end_line: c.end_line,
        byte_start: u64::from(c.byte_start),
        byte_end: u64::from(c.byte_end),
        kind: c.kind.name().to_string(),
        symbol: c.symbol.as_deref().map(str::to_string),
        chunk_id: c.id.to_string(),
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
        source_url: None,
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
    // The count in the base encoding is kept: the prompt's exact count then takes it instead
    // of counting the compressed text a second time.
    let base = spec.base().count(&text);
    let tokens = spec.scale(base);
    if tokens >= p.tokens {
        return p;
    }
    p.original_tokens = Some(p.tokens);
    p.tokens = tokens;
    p.sha256 = crate::hash::Sha256Digest::of(text.as_bytes()).to_hex();
    p.text = text;
    p.form = form;
    p.elided_lines = elided;
    p.base_tokens = Some(base);
    p
}

/// Cuts a piece down to its signature, fixing its provenance.
fn to_signature(mut p: Piece, len: usize, spec: &TokenizerSpec) -> Piece {
    p.text.truncate(len);
    p.byte_end = p.byte_start + len as u64;
    p.end_line = p.start_line + p.text.trim_end_matches('\n').matches('\n').count() as u32;
    p.sha256 = crate::hash::Sha256Digest::of(p.text.as_bytes()).to_hex();
    let base = spec.base().count(&p.text);
    p.tokens = spec.scale(base);
    p.form = PieceForm::Signature;
    p.base_tokens = Some(base);
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
