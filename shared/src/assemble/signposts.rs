//! Signposts: under a small budget, one line of each further relevant file the pieces leave out.
//!
//! An 8k prompt holds a dozen files; the file a change also touches is often the thirteenth.
//! Its code does not fit, but the line that declares its best chunk does, and a model (or the
//! agent behind it) that sees `src/cli/args.rs:88 pub fn parse(...)` knows where to look next.
//! The plan keeps a share of a small budget's room for these lines (`estimate::signpost_room`);
//! what they do not use goes back to whole pieces ([`Plan::fill_released`]). A question's
//! signpost is the line that matches it best instead ([`super::excerpts::best_line`]): the line
//! that answers it says why the file is listed.

use rustc_hash::FxHashSet;

use crate::chunk::{ChunkKind, declaration_line};
use crate::compose::{Piece, PieceForm};
use crate::index::IndexPack;

use super::estimate::MAX_SIGNPOSTS;
use super::pieces::{Draft, piece};
use super::plan::Plan;
use super::{ChunkSource, Halt, text_of};

/// A declaration line longer than this (in bytes) is not a signpost: it is minified or
/// generated code, not a pointer.
const MAX_LINE_BYTES: usize = 240;

/// The line of a chunk's text that stands for it: a Markdown section's heading, any other
/// chunk's declaration line.
fn signpost_line(text: &str, kind: ChunkKind) -> Option<(u32, std::ops::Range<usize>)> {
    if kind == ChunkKind::Section {
        let mut at = 0;
        for (k, line) in text.split_inclusive('\n').enumerate() {
            let content = line.trim_end_matches(['\n', '\r']);
            if !content.trim().is_empty() {
                return Some((k as u32, at..at + content.len()));
            }
            at += line.len();
        }
        return None;
    }
    declaration_line(text)
}

/// Cuts a piece to line `k` of its text, at `range`, fixing its provenance.
fn to_signpost(
    mut p: Piece,
    k: u32,
    range: std::ops::Range<usize>,
    spec: &crate::catalog::TokenizerSpec,
) -> Piece {
    // The line without its indentation and trailing blanks, as the prompt lists it.
    let line = &p.text[range.clone()];
    let start = range.start + (line.len() - line.trim_start().len());
    let range = start..(range.start + line.trim_end().len()).max(start);
    p.text = p.text[range.clone()].to_string();
    p.byte_end = p.byte_start + range.end as u64;
    p.byte_start += range.start as u64;
    p.start_line += k;
    p.end_line = p.start_line;
    p.sha256 = crate::hash::Sha256Digest::of(p.text.as_bytes()).to_hex();
    let base = spec.base().count(&p.text);
    p.tokens = spec.scale(base);
    p.form = PieceForm::Signpost;
    p.base_tokens = Some(base);
    p
}

impl Plan {
    /// For each of the best `n` files no piece is from, best file first, the chunk whose line
    /// its signpost would be: the file's best definition among the candidates (a declaration
    /// says more than the file's first import; modules do not count), else its best chunk.
    pub(super) fn signpost_candidates(
        &self,
        pack: &IndexPack,
        in_prompt: &FxHashSet<u32>,
        n: usize,
    ) -> Vec<u32> {
        // Files are told apart by the version's compact chunk-to-file table; a chunk's record
        // (large, a cache miss each on a large repository) is read only for its kind, and only
        // while its file still lacks a definition. This runs twice per answer over every
        // candidate (thousands): reading every record was about 7% of a warm call on deno.
        let chunk_file = &pack.derived().chunk_file;
        let mut seen: FxHashSet<u32> = in_prompt
            .iter()
            .filter_map(|&i| chunk_file.get(i as usize).copied())
            .collect();
        let defines = |key: u32| {
            // A module's first line (`mod tests {`) says little of what the file does.
            !matches!(
                pack.chunks[key as usize].kind,
                ChunkKind::Block | ChunkKind::Window | ChunkKind::Section | ChunkKind::Module
            )
        };
        // The listed files, and beside each its best chunk and its best definition; `open`
        // marks the listed files still lacking a definition (one bit per file), so that most
        // candidates, of files not listed or settled, are passed over by a bit test.
        let mut files: Vec<u32> = Vec::with_capacity(n);
        let mut picks: Vec<(u32, Option<u32>)> = Vec::with_capacity(n);
        let mut open = vec![0u64; pack.files.len().div_ceil(64)];
        let bit = |f: u32| (f as usize / 64, 1u64 << (f % 64));
        let mut lacking = 0usize;
        for c in &self.cands {
            let Some(&file) = chunk_file.get(c.key as usize) else {
                continue;
            };
            let (word, mask) = bit(file);
            let is_open = open.get(word).is_some_and(|w| w & mask != 0);
            if is_open {
                if defines(c.key) {
                    if let Some(k) = files.iter().position(|&f| f == file) {
                        picks[k].1 = Some(c.key);
                    }
                    open[word] &= !mask;
                    lacking -= 1;
                }
            } else if files.len() < n && seen.insert(file) {
                // `seen` holds the listed files too: a settled one is not listed again.
                let definition = defines(c.key).then_some(c.key);
                if definition.is_none() {
                    if let Some(w) = open.get_mut(word) {
                        *w |= mask;
                        lacking += 1;
                    }
                }
                files.push(file);
                picks.push((c.key, definition));
            }
            // Every listed file has its definition and no file can join: nothing can change.
            if files.len() == n && lacking == 0 {
                break;
            }
        }
        picks
            .into_iter()
            .map(|(best, definition)| definition.unwrap_or(best))
            .collect()
    }

    /// Adds a signpost for each further file, best first, while the room kept for them (and
    /// whatever the pieces left) holds it.
    pub(super) fn add_signposts(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        draft: &mut Draft,
    ) -> Result<(), Halt> {
        if self.signpost_room == 0 {
            return Ok(());
        }
        let spec = &self.resolved.tokenizer;
        let room = self.piece_room + self.signpost_room + self.excerpt_room;
        let mut added = 0;
        for key in self.signpost_candidates(pack, &draft.in_prompt, 2 * MAX_SIGNPOSTS) {
            // The session was pointed to it already (or saw its signature).
            if self.signatures_sent.contains(&key) {
                continue;
            }
            let i = key as usize;
            let left = room.saturating_sub(draft.planned);
            let path = &pack.files[pack.chunks[i].file as usize].path;
            let header = entry_cost(path) + if added == 0 { HEADING_COST } else { 0 };
            if added >= MAX_SIGNPOSTS || left <= header {
                break;
            }
            let text = text_of(pack, source, i)?;
            // A question's excerpt terms are set: its signpost is the line that matches it best
            // (`timeout = 30`, not the `def` above it), else the declaration.
            let line = super::excerpts::best_line(&text, &self.excerpt_terms)
                .or_else(|| signpost_line(&text, pack.chunks[i].kind));
            let Some((k, range)) = line else {
                continue;
            };
            if range.len() > MAX_LINE_BYTES {
                continue;
            }
            let score = self.score_of(key).unwrap_or(0.0);
            let mut p = to_signpost(piece(pack, i, text, 0, score), k, range, spec);
            p.reasoning = Some(self.why_of(key));
            let cost = p.tokens + header;
            if cost <= left {
                draft.push_partial(p, key, cost);
                added += 1;
            }
        }
        Ok(())
    }

    /// Fills the room the signposts did not use with the best whole candidates that fit
    /// (`smallest_after` is [`Self::smallest_after`]).
    pub(super) fn fill_released(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        best: f32,
        smallest_after: &[u32],
        draft: &mut Draft,
    ) -> Result<(), Halt> {
        if self.signpost_room == 0 && self.excerpt_room == 0 {
            return Ok(());
        }
        let room = self.piece_room + self.signpost_room + self.excerpt_room;
        self.fill(pack, source, best, draft, room, smallest_after, &mut 0)
    }
}

/// A conservative guess of what a signpost's entry costs beyond its line, in tokens: `- `, the
/// path at about three characters a token, `:` and the line number, the quotes and the line
/// break. The composer's exact count corrects it.
fn entry_cost(path: &str) -> u32 {
    (path.len() / 3 + 7) as u32
}

/// What the list's heading costs, in tokens (`compose::SIGNPOSTS_HEADING` and its blank line).
const HEADING_COST: u32 = 14;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signpost_is_its_line_trimmed_with_exact_provenance() {
        let text = "    /// Parses.\n    pub fn parse(s: &str) -> u32 {  \r\n        0\n    }\n";
        let (k, range) = signpost_line(text, ChunkKind::Method).expect("a declaration");
        let p = Piece {
            path: "src/p.rs".into(),
            language: "rust".into(),
            start_line: 10,
            end_line: 13,
            byte_start: 1_000,
            byte_end: 1_000 + text.len() as u64,
            kind: "method".into(),
            symbol: Some("parse".into()),
            chunk_id: "c".into(),
            sha256: String::new(),
            text: text.into(),
            tokens: 20,
            score: 1.0,
            form: PieceForm::Full,
            original_tokens: None,
            elided_lines: None,
            reasoning: None,
            base_tokens: None,
            source_url: None,
            block: 0,
        };
        let spec = crate::catalog::TokenizerSpec::Exact(crate::tokens::Encoding::O200kBase);
        let s = to_signpost(p, k, range, &spec);
        assert_eq!(s.text, "pub fn parse(s: &str) -> u32 {");
        assert_eq!((s.start_line, s.end_line), (11, 11));
        let at = (s.byte_start - 1_000) as usize..(s.byte_end - 1_000) as usize;
        assert_eq!(&text[at], s.text, "the bytes cited are the line shown");
        assert_eq!(s.form, PieceForm::Signpost);
        assert_eq!(s.base_tokens, Some(spec.base().count(&s.text)));
    }

    #[test]
    fn a_section_stands_by_its_heading_and_code_by_its_declaration() {
        let md = "\n## Options\n\nText.\n";
        let (k, r) = signpost_line(md, ChunkKind::Section).expect("a heading");
        assert_eq!((k, &md[r]), (1, "## Options"));
        let code = "/// Parses.\n#[must_use]\npub fn parse(s: &str) -> u32 {\n    0\n}\n";
        let (k, r) = signpost_line(code, ChunkKind::Function).expect("a declaration");
        assert_eq!((k, &code[r]), (2, "pub fn parse(s: &str) -> u32 {"));
    }
}
