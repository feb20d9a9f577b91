//! Composing the prompt, and the promise that it fits.
//!
//! The prompt is the selected pieces grouped by file (the file of the best piece first), each
//! file's pieces in line order, every piece under a header that cites it (`path:start-end`, its
//! kind and symbol, its chunk id), followed by the task. [`fit`] counts the whole prompt with the
//! target tokenizer and drops the least relevant pieces until the count is within the budget:
//! the count of the returned prompt is the count a model's tokenizer gives, not a sum of parts.

use serde::Serialize;

use crate::catalog::TokenizerSpec;

/// A chunk with everything needed to quote and cite it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Piece {
    /// Path relative to the repository root.
    pub path: String,
    /// Language label, used for the code fence.
    pub language: String,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// First byte.
    pub byte_start: u64,
    /// One past the last byte.
    pub byte_end: u64,
    /// Kind name (`function`, `window`...).
    pub kind: String,
    /// Defined symbol.
    pub symbol: Option<String>,
    /// Stable chunk id.
    pub chunk_id: String,
    /// sha256 of the text.
    pub sha256: String,
    /// The text, verbatim.
    #[serde(skip)]
    pub text: String,
    /// Its own size in the target model's tokens.
    pub tokens: u32,
    /// Retrieval score.
    pub score: f32,
    /// Whether the piece is the whole chunk, only its signature (small budgets), or the chunk
    /// compressed.
    pub form: PieceForm,
    /// The chunk's own count before compression, when the piece was compressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_tokens: Option<u32>,
    /// Lines of the chunk replaced by elision markers (`medium`, `aggressive`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elided_lines: Option<u32>,
    /// The signals behind the score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<crate::rank::Signals>,
    /// The count of `text` in the target's base encoding, when already known (the index counted
    /// it): the composer then need not count it again.
    #[serde(skip)]
    pub base_tokens: Option<u32>,
}

/// How much of a chunk a piece carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PieceForm {
    /// The whole chunk.
    Full,
    /// Doc comments and declaration only.
    Signature,
    /// The whole chunk without blank lines and whole-line comments (`compression: light`).
    Light,
    /// Light, with function bodies replaced by elision markers (`compression: medium`).
    Medium,
    /// Light, with function bodies cut to their key lines (`compression: aggressive`).
    Aggressive,
}

impl PieceForm {
    /// Whether the piece leaves out code of its chunk (not only comments and blank lines): a
    /// client that received it has not seen the whole chunk.
    pub fn is_partial(self) -> bool {
        matches!(self, Self::Signature | Self::Medium | Self::Aggressive)
    }
}

/// A composed prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct Composition {
    /// The prompt.
    pub prompt: String,
    /// Its count with the target tokenizer (≤ the budget).
    pub tokens: u32,
    /// Pieces in the prompt, in prompt order.
    pub pieces: Vec<Piece>,
    /// Pieces dropped to keep the promise.
    pub dropped: usize,
}

/// Why no prompt fits.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ComposeError {
    /// Even without any code the task alone is larger than the budget.
    #[error(
        "the query alone takes {needed} tokens with its framing, more than the budget of {budget}; \
         raise the budget or shorten the query"
    )]
    QueryTooLarge {
        /// Tokens of the prompt with no pieces.
        needed: u32,
        /// The budget.
        budget: u32,
    },
}

/// The header above one piece.
pub fn piece_header(p: &Piece) -> String {
    let mut what = match &p.symbol {
        Some(s) => format!("{} `{}`", p.kind, s),
        None => p.kind.clone(),
    };
    if let Some(before) = p.original_tokens.filter(|&b| b > 0) {
        let cut = 100.0 * (1.0 - f64::from(p.tokens) / f64::from(before));
        let elided = p.elided_lines.unwrap_or(0);
        let done = match p.form {
            PieceForm::Medium => format!("medium: function bodies elided ({elided} lines)"),
            PieceForm::Aggressive => {
                format!("aggressive: signatures and key lines only ({elided} lines elided)")
            }
            _ => "light: comments and blank lines removed".to_string(),
        };
        what.push_str(&format!(", {done}, -{cut:.0}%"));
    }
    format!(
        "### {}:{}-{} ({what}, chunk {})\n",
        p.path, p.start_line, p.end_line, p.chunk_id
    )
}

/// Renders `pieces` (in any order; best first is assumed for file order) and the task.
pub fn render(pieces: &[Piece], query: &str) -> String {
    render_with_spans(pieces, query).0
}

/// A stretch of the prompt whose base-encoding count is already known.
type KnownSpan = (std::ops::Range<usize>, u32);

/// Renders like [`render`] and also returns where each piece text with a known count sits.
fn render_with_spans(pieces: &[Piece], query: &str) -> (String, Vec<KnownSpan>) {
    let mut spans = Vec::new();
    let mut files: Vec<(&str, Vec<&Piece>)> = Vec::new();
    for p in pieces {
        match files.iter_mut().find(|(path, _)| *path == p.path) {
            Some((_, v)) => v.push(p),
            None => files.push((&p.path, vec![p])),
        }
    }
    let size: usize = pieces
        .iter()
        .map(|p| p.text.len() + p.path.len() * 2 + 80)
        .sum();
    let mut out = String::with_capacity(size + query.len() + 64);
    if !pieces.is_empty() {
        out.push_str("# Code context\n");
        for (path, mut ps) in files {
            ps.sort_by_key(|p| (p.start_line, p.end_line));
            out.push_str("\n## ");
            out.push_str(path);
            out.push('\n');
            for p in ps {
                out.push('\n');
                out.push_str(&piece_header(p));
                let fence = fence_for(&p.text);
                out.push_str(&fence);
                out.push_str(fence_language(&p.language));
                out.push('\n');
                if let Some(n) = p.base_tokens {
                    spans.push((out.len()..out.len() + p.text.len(), n));
                }
                out.push_str(&p.text);
                if !p.text.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&fence);
                out.push('\n');
            }
        }
        out.push('\n');
    }
    out.push_str("# Task\n\n");
    out.push_str(query.trim());
    out.push('\n');
    (out, spans)
}

/// Whether `at` starts a line whose indentation (spaces and tabs) leads to a visible character:
/// an exact split point for encodings that
/// [`Encoding::splits_at_line_starts`](crate::tokens::Encoding::splits_at_line_starts).
///
/// An unindented `/` is excluded: o200k's punctuation rule (` ?[^\s\p{L}\p{N}]+[\r\n/]*`)
/// carries a line-ending newline on into a following `/`.
fn line_start(text: &str, at: usize) -> bool {
    if at == 0 || text.as_bytes().get(at - 1) != Some(&b'\n') {
        return false;
    }
    let rest = &text[at..];
    let visible = rest.trim_start_matches([' ', '\t']);
    let indented = visible.len() < rest.len();
    visible
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && (indented || c != '/'))
}

/// The exact count of `prompt`: known spans that sit between exact split points contribute
/// their known counts, everything else is counted.
fn count_prompt(prompt: &str, spans: &[KnownSpan], tokenizer: &TokenizerSpec) -> u32 {
    let base = tokenizer.base();
    if !base.splits_at_line_starts() {
        return tokenizer.count(prompt);
    }
    let mut total = 0u64;
    let mut from = 0;
    for (range, known) in spans {
        let usable = line_start(prompt, range.start) && line_start(prompt, range.end);
        if !usable || range.start < from {
            continue;
        }
        total += u64::from(base.count(&prompt[from..range.start])) + u64::from(*known);
        from = range.end;
    }
    total += u64::from(base.count(&prompt[from..]));
    tokenizer.scale(u32::try_from(total).unwrap_or(u32::MAX))
}

fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for b in text.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn fence_language(label: &str) -> &str {
    match label {
        "text" => "",
        l if l
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '_') =>
        {
            l
        }
        _ => "",
    }
}

/// Composes the prompt from `pieces` (best first) and keeps it within `budget` as counted by
/// `tokenizer`, dropping the least relevant pieces when needed.
pub fn fit(
    mut pieces: Vec<Piece>,
    query: &str,
    budget: u32,
    tokenizer: &TokenizerSpec,
) -> Result<Composition, ComposeError> {
    let mut dropped = 0;
    loop {
        let (prompt, spans) = render_with_spans(&pieces, query);
        let tokens = count_prompt(&prompt, &spans, tokenizer);
        if tokens <= budget {
            let mut order: Vec<Piece> = Vec::with_capacity(pieces.len());
            // Report pieces in prompt order.
            let mut files: Vec<String> = Vec::new();
            for p in &pieces {
                if !files.contains(&p.path) {
                    files.push(p.path.clone());
                }
            }
            for f in files {
                let mut ps: Vec<Piece> = pieces.iter().filter(|p| p.path == f).cloned().collect();
                ps.sort_by_key(|p| (p.start_line, p.end_line));
                order.extend(ps);
            }
            return Ok(Composition {
                prompt,
                tokens,
                pieces: order,
                dropped,
            });
        }
        if pieces.is_empty() {
            return Err(ComposeError::QueryTooLarge {
                needed: tokens,
                budget,
            });
        }
        // Drop the weakest pieces until their own counts cover the excess; the loop re-counts.
        let excess = tokens - budget;
        let mut freed = 0u32;
        while freed < excess {
            let Some(p) = pieces.pop() else { break };
            freed = freed.saturating_add(p.tokens.max(1));
            dropped += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;
    use proptest::prelude::*;

    fn piece(path: &str, start: u32, text: &str, score: f32) -> Piece {
        Piece {
            path: path.into(),
            language: "rust".into(),
            start_line: start,
            end_line: start + text.lines().count() as u32 - 1,
            byte_start: 0,
            byte_end: text.len() as u64,
            kind: "function".into(),
            symbol: Some("f".into()),
            chunk_id: "abc".into(),
            sha256: String::new(),
            base_tokens: None,
            text: text.into(),
            tokens: Encoding::O200kBase.count(text),
            score,
            form: PieceForm::Full,
            original_tokens: None,
            elided_lines: None,
            reasoning: None,
        }
    }

    #[test]
    fn groups_by_file_in_line_order() {
        let ps = vec![
            piece("b.rs", 10, "fn b2() {}\n", 3.0),
            piece("a.rs", 1, "fn a() {}\n", 2.0),
            piece("b.rs", 1, "fn b1() {}\n", 1.0),
        ];
        let out = render(&ps, "why?");
        let b = out.find("## b.rs").unwrap();
        let a = out.find("## a.rs").unwrap();
        assert!(b < a, "the best piece's file comes first");
        assert!(out.find("b1").unwrap() < out.find("b2").unwrap());
        assert!(out.contains("### b.rs:10-10 (function `f`, chunk abc)"));
        assert!(out.ends_with("# Task\n\nwhy?\n"));
    }

    #[test]
    fn compressed_pieces_say_what_was_done_in_their_header() {
        let mut p = piece("a.rs", 3, "fn f() {\n    // … 9 lines elided …\n}\n", 1.0);
        p.original_tokens = Some(100);
        p.tokens = 25;
        p.form = PieceForm::Medium;
        p.elided_lines = Some(9);
        assert_eq!(
            piece_header(&p),
            "### a.rs:3-5 (function `f`, medium: function bodies elided (9 lines), -75%, chunk abc)\n"
        );
        p.form = PieceForm::Aggressive;
        assert!(
            piece_header(&p)
                .contains("aggressive: signatures and key lines only (9 lines elided), -75%")
        );
        p.form = PieceForm::Light;
        assert!(piece_header(&p).contains("light: comments and blank lines removed, -75%"));
    }

    #[test]
    fn fences_outgrow_backticks_in_code() {
        let out = render(&[piece("a.md", 1, "```\ncode\n```\n", 1.0)], "q");
        assert!(out.contains("````rust\n```\ncode\n```\n````\n"));
    }

    #[test]
    fn odd_language_labels_do_not_break_fences() {
        let mut p = piece("a.x`y", 1, "code\n", 1.0);
        p.language = "x`y".into();
        let out = render(&[p], "q");
        assert!(out.contains("```\ncode\n```\n"), "{out}");
    }

    #[test]
    fn query_too_large_is_an_error() {
        let t = TokenizerSpec::Exact(Encoding::O200kBase);
        let err = fit(vec![], &"word ".repeat(100), 10, &t).unwrap_err();
        assert!(matches!(
            err,
            ComposeError::QueryTooLarge { budget: 10, .. }
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn prompt_never_exceeds_budget(
            texts in prop::collection::vec("[ -~\n]{1,400}", 0..30),
            query in "[ -~]{1,80}",
            budget in 1u32..3000,
            estimate in any::<bool>(),
            known in any::<bool>(),
        ) {
            let tokenizer = if estimate {
                TokenizerSpec::Estimate { base: Encoding::Cl100kBase, ratio: 1.3 }
            } else {
                TokenizerSpec::Exact(Encoding::O200kBase)
            };
            let pieces: Vec<Piece> = texts.iter().enumerate()
                .map(|(i, t)| {
                    let mut p = piece(&format!("f{}.rs", i % 4), i as u32 * 10 + 1, t, 100.0 - i as f32);
                    // Known counts, as the index supplies them, must leave the total exact.
                    if known {
                        p.base_tokens = Some(tokenizer.base().count(t));
                    }
                    p
                })
                .collect();
            match fit(pieces, &query, budget, &tokenizer) {
                Ok(c) => {
                    prop_assert!(c.tokens <= budget);
                    prop_assert_eq!(tokenizer.count(&c.prompt), c.tokens);
                }
                Err(ComposeError::QueryTooLarge { needed, .. }) => prop_assert!(needed > budget),
            }
        }
    }
}
