//! Excerpts: the lines of a candidate too large for the room left that match the request best.
//!
//! A question ("what is the default timeout, and where is it set?") is answered by a line or
//! two, often deep inside a function or a block of constants that does not fit whole in the room
//! the better pieces leave. A signature says such a function exists; its best lines say what the
//! question asks. The plan keeps a share of a small budget's room for these
//! (`estimate::excerpt_room`, [`crate::rank::Weights::question_excerpts`]): for the best
//! candidates left out, windows of verbatim lines around each one's strongest matches, each
//! window a piece whose line and byte range are exactly what it shows, so provenance holds and a
//! client can open the file there. What they leave goes back to whole pieces
//! ([`Plan::fill_released`]).

use std::ops::Range;

use crate::compose::{Piece, PieceForm};
use crate::index::IndexPack;
use crate::lexical::for_each_term;

use super::estimate::header_cost;
use super::pieces::{Draft, piece};
use super::plan::Plan;
use super::{ChunkSource, Halt, text_of};

/// Candidates looked at for excerpts, best first: further down, a match is rarely the answer.
const MAX_EXCERPTED: usize = 8;

/// Lines kept on each side of a matching line: its statement's neighbours (the condition above
/// an assignment, the value below a key).
const CONTEXT: usize = 2;

/// Windows per candidate: its best match and one more.
const MAX_WINDOWS: usize = 2;

/// Lines per candidate, all windows together.
const MAX_LINES: usize = 14;

/// Lines a window may grow by to reach the statement its last comment line documents.
const MAX_DOCUMENTED: usize = 4;

/// A line longer than this (in bytes) is data or minified code, never a match worth quoting.
const MAX_LINE_BYTES: usize = 240;

/// What the `(excerpt)` note adds to a piece's header, in tokens.
const NOTE_COST: u32 = 4;

/// Candidates this small (in tokens) are not excerpted: whole, they cost little more.
const WHOLE_BELOW: u32 = 200;

/// Room under which no excerpt is tried: a header and a line or two.
const MIN_ROOM: u32 = 32;

/// The windows of `text` to quote for a request with `terms` (its terms with their inverse
/// document frequency, as the lexical index reads them): line ranges (0-based, end exclusive),
/// in order, around the matching lines whose distinct terms, on the line and within
/// [`CONTEXT`] lines of it, weigh most; none when no line matches. The neighbours count
/// because an answer is often spread over adjacent lines, each naming one of the question's
/// words (`inst.strict = …` above `inst.loose = …`), where a line elsewhere names two common
/// ones.
pub(super) fn windows(text: &str, terms: &[(String, f32)]) -> Vec<Range<usize>> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let weights = line_weights(&lines, terms);
    let mut order: Vec<usize> = (0..lines.len()).filter(|&k| weights[k] > 0.0).collect();
    // Strongest first; an earlier line first among equals (a definition precedes its uses).
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    let Some(&best) = order.first() else {
        return Vec::new();
    };
    let mut out: Vec<Range<usize>> = Vec::new();
    for k in order {
        // A second window only for a match nearly as strong as the best.
        if weights[k] < 0.5 * weights[best] {
            break;
        }
        let w = k.saturating_sub(CONTEXT)..(k + CONTEXT + 1).min(lines.len());
        if out.iter().any(|o| o.contains(&k)) {
            continue;
        }
        let mut merged = out.clone();
        match merged
            .iter_mut()
            .find(|o| w.start <= o.end && o.start <= w.end)
        {
            Some(o) => *o = o.start.min(w.start)..o.end.max(w.end),
            None => merged.push(w),
        }
        let total: usize = merged.iter().map(|r| r.len()).sum();
        if merged.len() > MAX_WINDOWS || total > MAX_LINES {
            continue;
        }
        out = merged;
    }
    for w in &mut out {
        // A comment describes the statement below it: a window that ends in one goes on to that
        // statement ("Maximum number of redirects allowed…" is answered by the assignment
        // under it).
        let mut more = 0;
        while more < MAX_DOCUMENTED && w.end < lines.len() && is_comment(lines[w.end - 1]) {
            w.end += 1;
            more += 1;
        }
        // Blank lines at a window's edges show nothing.
        while w.len() > 1 && lines[w.start].trim().is_empty() {
            w.start += 1;
        }
        while w.len() > 1 && lines[w.end - 1].trim().is_empty() {
            w.end -= 1;
        }
    }
    out.sort_by_key(|w| w.start);
    out
}

/// Each line's weight for a request with `terms`: the distinct terms on the line, plus those on
/// it and within [`CONTEXT`] lines of it (0 for a line with none of its own).
fn line_weights(lines: &[&str], terms: &[(String, f32)]) -> Vec<f32> {
    let line_terms: Vec<Vec<bool>> = lines.iter().map(|l| line_terms(l, terms)).collect();
    (0..lines.len())
        .map(|k| {
            if !line_terms[k].iter().any(|&s| s) {
                return 0.0;
            }
            let around = k.saturating_sub(CONTEXT)..(k + CONTEXT + 1).min(lines.len());
            let mut seen = vec![false; terms.len()];
            for j in around {
                for (t, &s) in line_terms[j].iter().enumerate() {
                    seen[t] |= s;
                }
            }
            weight(&line_terms[k], terms) + weight(&seen, terms)
        })
        .collect()
}

/// The line of `text` that matches a request with `terms` best by [`line_weights`] (the earlier
/// among equals, as in [`windows`]), with the byte range of its content (0-based line, without
/// its line break); none when no line matches. A question's signpost shows it: the line that
/// answers says more than the declaration above it.
pub(super) fn best_line(text: &str, terms: &[(String, f32)]) -> Option<(u32, Range<usize>)> {
    // A change request has no excerpt terms: its signposts would scan every line for nothing.
    if terms.is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let weights = line_weights(&lines, terms);
    let mut best: Option<usize> = None;
    for (k, &w) in weights.iter().enumerate() {
        if w > 0.0 && best.is_none_or(|b| w > weights[b]) {
            best = Some(k);
        }
    }
    let k = best?;
    let start: usize = lines[..k].iter().map(|l| l.len()).sum();
    let content = lines[k].trim_end_matches(['\n', '\r']);
    Some((k as u32, start..start + content.len()))
}

/// Whether `line` is a comment (or a line of a doc comment), in the common comment styles.
fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    ["//", "#", "/*", "*", "--", ";", "\"\"\"", "'''"]
        .iter()
        .any(|c| t.starts_with(c))
        && !["#[", "#!", "#include", "#define", "#if", "#end"]
            .iter()
            .any(|c| t.starts_with(c))
}

/// Which of the request's terms `line` holds (none for a line too long to quote).
fn line_terms(line: &str, terms: &[(String, f32)]) -> Vec<bool> {
    let mut seen = vec![false; terms.len()];
    if line.len() > MAX_LINE_BYTES {
        return seen;
    }
    for_each_term(line, |t| {
        if let Some(k) = terms.iter().position(|(q, _)| q == t) {
            seen[k] = true;
        }
    });
    seen
}

/// The summed weight of the terms `seen` marks.
fn weight(seen: &[bool], terms: &[(String, f32)]) -> f32 {
    seen.iter()
        .zip(terms)
        .filter(|(s, _)| **s)
        .map(|(_, (_, idf))| idf.max(0.0))
        .sum()
}

/// Piece `p` (its chunk whole) cut to the lines `w` of its text, its provenance fixed.
fn cut(mut p: Piece, w: &Range<usize>, spec: &crate::catalog::TokenizerSpec) -> Piece {
    let mut at = 0usize;
    let mut start = 0usize;
    let mut end = p.text.len();
    for (k, line) in p.text.split_inclusive('\n').enumerate() {
        if k == w.start {
            start = at;
        }
        at += line.len();
        if k + 1 == w.end {
            end = at;
            break;
        }
    }
    p.text = p.text[start..end].to_string();
    p.byte_start += start as u64;
    p.byte_end = p.byte_start + p.text.len() as u64;
    p.start_line += w.start as u32;
    p.end_line = p.start_line + (w.len() as u32).saturating_sub(1);
    p.sha256 = crate::hash::Sha256Digest::of(p.text.as_bytes()).to_hex();
    let base = spec.base().count(&p.text);
    p.tokens = spec.scale(base);
    p.base_tokens = Some(base);
    p.form = PieceForm::Excerpt;
    p
}

impl Plan {
    /// For the best candidates not in the prompt, best first, that are too large to be cheap
    /// whole: their windows ([`windows`]), while the room kept for excerpts (and what the pieces
    /// left) holds them.
    pub(super) fn add_excerpts(
        &self,
        pack: &IndexPack,
        source: &dyn ChunkSource,
        draft: &mut Draft,
    ) -> Result<(), Halt> {
        if self.excerpt_room == 0 || self.excerpt_terms.is_empty() {
            return Ok(());
        }
        let spec = &self.resolved.tokenizer;
        let room = self.piece_room + self.excerpt_room;
        let rest: Vec<_> = self
            .cands
            .iter()
            .filter(|c| !draft.in_prompt.contains(&c.key) && !self.signatures_sent.contains(&c.key))
            .take(MAX_EXCERPTED)
            .collect();
        for c in rest {
            let left = room.saturating_sub(draft.planned);
            if left < MIN_ROOM || self.max_pieces.is_some_and(|m| draft.pieces.len() >= m) {
                break;
            }
            // A small candidate is worth more whole: the room excerpts leave goes back to whole
            // pieces ([`Plan::fill_released`]).
            if c.tokens <= WHOLE_BELOW {
                continue;
            }
            let i = c.key as usize;
            let header = header_cost(pack, i);
            let text = text_of(pack, source, i)?;
            let score = self.score_of(c.key).unwrap_or(c.score);
            let why = self.why_of(c.key);
            let cuts: Vec<Piece> = windows(&text, &self.excerpt_terms)
                .iter()
                .map(|w| {
                    let mut p = cut(piece(pack, i, text.clone(), 0, score), w, spec);
                    p.reasoning = Some(why);
                    p
                })
                .collect();
            let cost: u32 = cuts.iter().map(|p| p.tokens + header + NOTE_COST).sum();
            if cuts.is_empty() || cost > left {
                continue;
            }
            for p in cuts {
                let one = p.tokens + header + NOTE_COST;
                draft.push_partial(p, c.key, one);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[(&str, f32)]) -> Vec<(String, f32)> {
        words.iter().map(|(w, f)| (w.to_string(), *f)).collect()
    }

    #[test]
    fn a_window_surrounds_the_line_with_the_rarest_terms() {
        let text: String = (0..30)
            .map(|k| match k {
                5 => "    let timeout = other();\n".to_string(),
                20 => "    const DEFAULT_TIMEOUT: u64 = 30;\n".to_string(),
                _ => format!("    step_{k}();\n"),
            })
            .collect();
        let w = windows(&text, &terms(&[("default", 3.0), ("timeout", 1.0)]));
        // The line naming both terms leads; the one naming only the common one is weaker than
        // half of it, so it gets no window of its own.
        assert_eq!(w, vec![18..23]);
    }

    #[test]
    fn neighbouring_lines_that_share_the_question_weigh_together() {
        let mut lines: Vec<String> = (0..40).map(|k| format!("x{k} = {k}\n")).collect();
        lines[5] = "inst.strict = () => clone(never())\n".into();
        lines[6] = "inst.loose = () => clone(unknown())\n".into();
        lines[20] = "const object = make()\n".into();
        lines[30] = "schema.extra = []\n".into();
        let text: String = lines.concat();
        let t = terms(&[
            ("strict", 2.0),
            ("loos", 2.0),
            ("object", 2.5),
            ("schema", 1.5),
            ("extra", 1.5),
        ]);
        // Each of lines 5 and 6 weighs less than line 20 or line 30 alone; their window holds
        // both, and it comes first.
        assert_eq!(windows(&text, &t), vec![3..8, 28..33]);
    }

    #[test]
    fn two_strong_matches_get_two_windows_and_blank_edges_are_trimmed() {
        let mut lines: Vec<String> = (0..40).map(|k| format!("x{k} = {k}\n")).collect();
        lines[3] = "\n".into();
        lines[5] = "redirect_limit = 30\n".into();
        lines[30] = "max_redirect = 30\n".into();
        let text: String = lines.concat();
        let w = windows(&text, &terms(&[("redirect", 2.0)]));
        assert_eq!(w, vec![4..8, 28..33]);
    }

    #[test]
    fn a_window_ending_in_a_comment_reaches_the_statement_it_documents() {
        let mut lines: Vec<String> = (0..30).map(|k| format!("x{k} = {k}\n")).collect();
        lines[10] = "    # Maximum number of redirects allowed.\n".into();
        lines[11] = "    # See TooManyRedirects.\n".into();
        lines[12] = "    # Defaults to 30.\n".into();
        lines[13] = "    # (the constant)\n".into();
        lines[14] = "    self.cap = LIMIT\n".into();
        let text: String = lines.concat();
        let w = windows(&text, &terms(&[("redirect", 2.0), ("many", 1.0)]));
        assert_eq!(w, vec![9..15]);
        assert!(is_comment("  // note") && is_comment(" * doc") && !is_comment("#[test]"));
    }

    #[test]
    fn the_best_line_is_the_strongest_match_with_its_content_range() {
        let text = "def get(url, **kw):\n    \"\"\"Fetch.\"\"\"\n    timeout = kw.get(\"t\", DEFAULT)  \r\n    return send(url, timeout)\n";
        let t = terms(&[("timeout", 2.0), ("default", 1.0), ("send", 0.5)]);
        // Line 2 holds two of the terms (3) and sees all three around it (3.5); line 3 holds
        // `send` and `timeout` (2.5) and sees the same three: line 2 leads, 6.5 to 6.
        let (k, range) = best_line(text, &t).expect("a match");
        assert_eq!(k, 2);
        assert_eq!(&text[range], "    timeout = kw.get(\"t\", DEFAULT)  ");
        assert!(best_line("fn a() {}\n", &t).is_none());
        assert!(best_line(text, &[]).is_none());
    }

    #[test]
    fn no_match_no_window_and_long_lines_never_match() {
        let long = format!("timeout {}\n", "x".repeat(300));
        assert!(windows(&long, &terms(&[("timeout", 1.0)])).is_empty());
        assert!(windows("fn a() {}\n", &terms(&[("timeout", 1.0)])).is_empty());
    }

    #[test]
    fn a_cut_keeps_exact_provenance() {
        let text = "fn a() {\n    one();\n    two();\n}\n".to_string();
        let p = Piece {
            path: "a.rs".into(),
            language: "rust".into(),
            start_line: 10,
            end_line: 13,
            byte_start: 100,
            byte_end: 100 + text.len() as u64,
            kind: "function".into(),
            symbol: Some("a".into()),
            chunk_id: "c".into(),
            sha256: String::new(),
            text: text.clone(),
            tokens: 0,
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
        let c = cut(p, &(1..3), &spec);
        assert_eq!(c.text, "    one();\n    two();\n");
        assert_eq!((c.start_line, c.end_line), (11, 12));
        assert_eq!(c.byte_start, 109);
        assert_eq!(&text[9..9 + c.text.len()], c.text);
        assert_eq!(c.form, PieceForm::Excerpt);
        assert!(c.tokens > 0);
    }
}
