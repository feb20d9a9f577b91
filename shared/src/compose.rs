//! Composing the prompt, and the promise that it fits.
//!
//! The prompt is the selected pieces grouped by file (the file of the best piece first), each
//! file's pieces in line order, every piece under a header that cites it (`path:start-end`, and
//! what was left out of a piece that is not its chunk verbatim), followed by the task. [`fit`]
//! counts the whole prompt with the target tokenizer and drops the least relevant pieces until
//! the count is within the budget: the count of the returned prompt is the count a model's
//! tokenizer gives, not a sum of parts.
//!
//! Headers are short on purpose: at small budgets every token of a header is a token of code
//! less. Provenance (kind, symbol, chunk id, sha256) is in the structured piece list that comes
//! with the prompt, where a program reads it; the model needs where the code is, and the code.
//!
//! Whole pieces that continue each other in their file (separated by at most [`MAX_JOIN_GAP`]
//! empty lines, or overlapping) are quoted as one stretch under one header that cites the
//! stretch's lines: the model reads the code as it stands in the file, and the prompt saves a
//! header and a fence per joined piece. The stretch is rebuilt from the pieces' own texts and
//! byte ranges, so it is verbatim.
//!
//! Summaries ([`SummaryPiece`]: overviews of the project, directories and files) come first, in
//! a section of their own marked as not verbatim; they are never pieces, and [`fit_with_summaries`]
//! drops them before any piece.

use serde::Serialize;

use crate::catalog::TokenizerSpec;
use crate::error_code::ErrorCode;

mod fence;
mod join;

use fence::{fence_for, fence_language};
use join::{Join, blocks, joined_header};
pub use join::{MAX_JOIN_GAP, joined};

/// A chunk with everything needed to quote and cite it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    #[serde(serialize_with = "crate::rank::small_number")]
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
    /// Where a person can read it: a link pinned to the indexed commit on the repository's
    /// host (GitHub, GitLab), or `file://` on the indexed folder; filled in by the API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    /// The fenced code block of the prompt the piece is quoted in (0-based, in prompt order).
    /// Pieces that continue each other in their file (nothing but line breaks between them, or
    /// overlapping windows) share one block under one header.
    pub block: u32,
}

/// A summary in the prompt. It is not code from the repository (no line range), so it is never
/// reported among the pieces.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SummaryPiece {
    /// What it covers.
    pub kind: crate::summary::SummaryKind,
    /// The file or directory it covers (`.` for the project).
    pub path: String,
    /// Which summarizer wrote it (`extractive-1`, `llm-1:<model>`).
    pub origin: String,
    /// Its own size in the target model's tokens.
    pub tokens: u32,
    /// For a file, the whole file's size in the target model's tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_tokens: Option<u32>,
    /// The text.
    #[serde(skip)]
    pub text: String,
    /// The count of `text` in the target's base encoding, when the index counted it.
    #[serde(skip)]
    pub base_tokens: Option<u32>,
}

/// The header above one summary.
pub fn summary_header(s: &SummaryPiece) -> String {
    use crate::summary::SummaryKind;
    match s.kind {
        SummaryKind::Project => "### project summary\n".to_string(),
        SummaryKind::Directory => format!("### {}/ (directory summary)\n", s.path),
        SummaryKind::File => match s.file_tokens {
            Some(t) => format!(
                "### {} (file summary; the whole file is {t} tokens)\n",
                s.path
            ),
            None => format!("### {} (file summary)\n", s.path),
        },
    }
}

/// How much of a chunk a piece carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PieceForm {
    /// The whole chunk.
    Full,
    /// Doc comments and declaration only.
    Signature,
    /// One line of the chunk, its declaration: a pointer to a relevant file the budget left
    /// out, not its code.
    Signpost,
    /// The whole chunk without blank lines and whole-line comments (`compression: light`).
    Light,
    /// Light, with function bodies replaced by elision markers (`compression: medium`).
    Medium,
    /// Light, with function bodies cut to their key lines (`compression: aggressive`).
    Aggressive,
    /// A few lines of the chunk, verbatim, around the lines that match the request: where a
    /// chunk too large for the room left answers a question in two lines of its hundred.
    Excerpt,
}

impl PieceForm {
    /// Whether the piece is only an outline of its chunk (its signature or one line): the
    /// chunk may still be sent whole later, and is not outlined again. A compressed body is the
    /// form the caller asked for, not an outline.
    pub fn is_outline(self) -> bool {
        matches!(self, Self::Signature | Self::Signpost | Self::Excerpt)
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
    /// Summaries in the prompt, in prompt order.
    pub summaries: Vec<SummaryPiece>,
    /// Summaries dropped to keep the promise.
    pub dropped_summaries: usize,
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

impl ComposeError {
    /// The machine-readable code every host reports for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ComposeError::QueryTooLarge { .. } => ErrorCode::QueryTooLarge,
        }
    }
}

/// The header above one piece: where it is, and for a piece that is not its chunk verbatim,
/// what was left out (the model must not take a signature or an elided body for the code).
pub fn piece_header(p: &Piece) -> String {
    let range = format!("### {}:{}-{}", p.path, p.start_line, p.end_line);
    match form_note(p) {
        Some(note) => format!("{range} ({note})\n"),
        None => format!("{range}\n"),
    }
}

/// What a piece leaves out of its chunk, if anything.
fn form_note(p: &Piece) -> Option<String> {
    match p.form {
        PieceForm::Signature => return Some("signature only".to_string()),
        PieceForm::Signpost => return Some("one line; file not shown".to_string()),
        PieceForm::Excerpt => return Some("excerpt".to_string()),
        _ => {}
    }
    let before = p.original_tokens.filter(|&b| b > 0)?;
    let cut = 100.0 * (1.0 - f64::from(p.tokens) / f64::from(before));
    let elided = p.elided_lines.unwrap_or(0);
    let done = match p.form {
        PieceForm::Medium => format!("medium: function bodies elided ({elided} lines)"),
        PieceForm::Aggressive => {
            format!("aggressive: signatures and key lines only ({elided} lines elided)")
        }
        _ => "light: comments and blank lines removed".to_string(),
    };
    Some(format!("{done}, -{cut:.0}%"))
}

/// Renders `pieces` (in any order; best first is assumed for file order) and the task.
pub fn render(pieces: &[Piece], query: &str) -> String {
    render_with_spans(pieces, &[], query).0
}

/// Renders like [`render`], with `summaries` in their own section before the code.
pub fn render_with_summaries(pieces: &[Piece], summaries: &[SummaryPiece], query: &str) -> String {
    render_with_spans(pieces, summaries, query).0
}

/// The heading of the signposts' list, after the code.
const SIGNPOSTS_HEADING: &str = "More relevant files, one line each (not shown above):\n";

/// One signpost in the prompt: where the line is, and the line, quoted inline.
pub fn signpost_entry(p: &Piece) -> String {
    let line = p.text.trim();
    let mut longest = 0;
    let mut run = 0;
    for b in line.bytes() {
        run = if b == b'`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let ticks = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!(
        "- {}:{} {ticks}{pad}{line}{pad}{ticks}\n",
        p.path, p.start_line
    )
}

/// The pieces quoted as code, in their order, and the signposts listed after them.
fn code_and_signposts(pieces: &[Piece]) -> (Vec<&Piece>, Vec<&Piece>) {
    pieces.iter().partition(|p| p.form != PieceForm::Signpost)
}

/// Where each of `pieces` goes in the report, with its block: the prompt's order, the code by
/// file and block, then the signposts, each a block of its own. Every piece once.
fn report_order(pieces: &[Piece]) -> Vec<(usize, u32)> {
    let (code, signposts): (Vec<(usize, &Piece)>, Vec<(usize, &Piece)>) = pieces
        .iter()
        .enumerate()
        .partition(|(_, p)| p.form != PieceForm::Signpost);
    let mut files: Vec<&str> = Vec::new();
    for (_, p) in &code {
        if !files.contains(&p.path.as_str()) {
            files.push(&p.path);
        }
    }
    let mut order = Vec::with_capacity(pieces.len());
    let mut block = 0u32;
    for f in files {
        let mut ps: Vec<(usize, &Piece)> =
            code.iter().copied().filter(|(_, p)| p.path == f).collect();
        ps.sort_by_key(|(_, p)| (p.start_line, p.end_line));
        let refs: Vec<&Piece> = ps.iter().map(|&(_, p)| p).collect();
        for b in blocks(&refs) {
            order.extend(b.iter().map(|&(k, _)| (ps[k].0, block)));
            block += 1;
        }
    }
    for (k, _) in signposts {
        order.push((k, block));
        block += 1;
    }
    order
}

/// A stretch of the prompt whose base-encoding count is already known.
type KnownSpan = (std::ops::Range<usize>, u32);

/// Renders like [`render`] and also returns where each piece text with a known count sits.
fn render_with_spans(
    pieces: &[Piece],
    summaries: &[SummaryPiece],
    query: &str,
) -> (String, Vec<KnownSpan>) {
    let mut spans = Vec::new();
    let (code, signposts) = code_and_signposts(pieces);
    let mut files: Vec<(&str, Vec<&Piece>)> = Vec::new();
    for p in code {
        match files.iter_mut().find(|(path, _)| *path == p.path) {
            Some((_, v)) => v.push(p),
            None => files.push((&p.path, vec![p])),
        }
    }
    let size: usize = pieces
        .iter()
        .map(|p| p.text.len() + p.path.len() * 2 + 80)
        .sum();
    let size = size
        + summaries
            .iter()
            .map(|s| s.text.len() + s.path.len() + 80)
            .sum::<usize>();
    let mut out = String::with_capacity(size + query.len() + 64);
    if !summaries.is_empty() {
        out.push_str("# Summaries\n\nOverviews of the repository, not verbatim code.\n");
        for s in summaries {
            out.push('\n');
            out.push_str(&summary_header(s));
            let fence = fence_for(&s.text);
            out.push_str(&fence);
            out.push('\n');
            if let Some(n) = s.base_tokens {
                spans.push((out.len()..out.len() + s.text.len(), n));
            }
            out.push_str(&s.text);
            if !s.text.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&fence);
            out.push('\n');
        }
        out.push('\n');
    }
    if !pieces.is_empty() {
        out.push_str("# Code context\n");
        for (_, mut ps) in files {
            ps.sort_by_key(|p| (p.start_line, p.end_line));
            for block in blocks(&ps) {
                let members: Vec<&Piece> = block.iter().map(|&(k, _)| ps[k]).collect();
                out.push('\n');
                match members.as_slice() {
                    [p] => out.push_str(&piece_header(p)),
                    _ => out.push_str(&joined_header(&members)),
                }
                let mut text = String::new();
                let mut known = Vec::new();
                for (p, (_, join)) in members.iter().zip(&block) {
                    match join {
                        Join::Start | Join::Gap(_) => {
                            if let Join::Gap(n) = join {
                                text.extend(std::iter::repeat_n('\n', *n));
                            }
                            if let Some(n) = p.base_tokens {
                                known.push((text.len()..text.len() + p.text.len(), n));
                            }
                            text.push_str(&p.text);
                        }
                        Join::Skip(k) => text.push_str(&p.text[*k..]),
                        Join::Inside => {}
                    }
                }
                let fence = fence_for(&text);
                out.push_str(&fence);
                out.push_str(fence_language(&members[0].language));
                out.push('\n');
                let at = out.len();
                spans.extend(
                    known
                        .into_iter()
                        .map(|(r, n)| (r.start + at..r.end + at, n)),
                );
                out.push_str(&text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&fence);
                out.push('\n');
            }
        }
        if !signposts.is_empty() {
            out.push('\n');
            out.push_str(SIGNPOSTS_HEADING);
            for p in signposts {
                out.push_str(&signpost_entry(p));
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
/// An unindented `/` is a split point only after a line ending in an ASCII letter or digit (such
/// as a code fence's language tag): o200k's punctuation rule (` ?[^\s\p{L}\p{N}]+[\r\n/]*`)
/// carries a newline that ends a punctuation run (`}`, `;`) on into a following `/`, and no
/// other rule reaches across a newline from a letter or digit. Rust and C-family pieces often
/// start with `//` comments, so this keeps their known counts usable.
fn line_start(text: &str, at: usize) -> bool {
    if at == 0 || text.as_bytes().get(at - 1) != Some(&b'\n') {
        return false;
    }
    let rest = &text[at..];
    let visible = rest.trim_start_matches([' ', '\t']);
    let indented = visible.len() < rest.len();
    let after_word = at >= 2 && text.as_bytes()[at - 2].is_ascii_alphanumeric();
    visible
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && (indented || c != '/' || after_word))
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
        if range.start < from || range.end > prompt.len() {
            continue;
        }
        let Some((inner, n)) = usable_part(prompt, range.clone(), *known, base) else {
            continue;
        };
        total += u64::from(base.count_repeated(&prompt[from..inner.start])) + u64::from(n);
        from = inner.end;
    }
    total += u64::from(base.count_repeated(&prompt[from..]));
    tokenizer.scale(u32::try_from(total).unwrap_or(u32::MAX))
}

/// The part of a known span (`range` of `prompt`, `known` tokens when counted alone) that
/// starts and ends at exact split points of the prompt, with its count. A span whose own ends
/// are split points is used whole. Otherwise (a joined piece followed by an empty line: the
/// line breaks run together) its inner part from its first to its last line start that is a
/// split point is used: a split point of the text alone cuts its count exactly in two, so the
/// inner part's count is the known count less the counts of the short ends cut off.
fn usable_part(
    prompt: &str,
    range: std::ops::Range<usize>,
    known: u32,
    base: crate::tokens::Encoding,
) -> Option<(std::ops::Range<usize>, u32)> {
    let text = &prompt[range.clone()];
    // Inside the text, a line start at least two bytes in is judged on the text's own bytes,
    // which are the prompt's there too.
    let inner = |at: usize| at >= 2 && line_start(text, at);
    let mut start = 0;
    let mut n = known;
    if !line_start(prompt, range.start) {
        start = text
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .find(|&at| at < text.len() && inner(at))?;
        n = n.checked_sub(base.count_repeated(&text[..start]))?;
    }
    let mut end = text.len();
    if !line_start(prompt, range.end) {
        // Not the text's last character (its line ending, when it has one); a text may end
        // without one, in a character of several bytes.
        let last = text.chars().next_back().map_or(0, char::len_utf8);
        end = text[..text.len() - last]
            .rmatch_indices('\n')
            .map(|(i, _)| i + 1)
            .find(|&at| at > start && inner(at))?;
        n = n.checked_sub(base.count_repeated(&text[end..]))?;
    }
    Some((range.start + start..range.start + end, n))
}

/// Composes the prompt from `pieces` (best first) and keeps it within `budget` as counted by
/// `tokenizer`, dropping the least relevant pieces when needed.
pub fn fit(
    pieces: Vec<Piece>,
    query: &str,
    budget: u32,
    tokenizer: &TokenizerSpec,
) -> Result<Composition, ComposeError> {
    fit_with_summaries(pieces, Vec::new(), query, budget, tokenizer)
}

/// Like [`fit`], with `summaries` (most wanted first) before the code: they are dropped, last
/// first, before any piece is.
pub fn fit_with_summaries(
    mut pieces: Vec<Piece>,
    mut summaries: Vec<SummaryPiece>,
    query: &str,
    budget: u32,
    tokenizer: &TokenizerSpec,
) -> Result<Composition, ComposeError> {
    let mut dropped = 0;
    let mut dropped_summaries = 0;
    loop {
        let (prompt, spans) = render_with_spans(&pieces, &summaries, query);
        let tokens = count_prompt(&prompt, &spans, tokenizer);
        if tokens <= budget {
            // The pieces move into their report order: cloned, their texts were the prompt's
            // size again in copies.
            let order = report_order(&pieces);
            let mut slots: Vec<Option<Piece>> = pieces.into_iter().map(Some).collect();
            let order: Vec<Piece> = order
                .into_iter()
                .filter_map(|(k, block)| slots[k].take().map(|p| Piece { block, ..p }))
                .collect();
            return Ok(Composition {
                prompt,
                tokens,
                pieces: order,
                dropped,
                summaries,
                dropped_summaries,
            });
        }
        let excess = tokens - budget;
        if !summaries.is_empty() {
            let mut freed = 0u32;
            while freed < excess {
                let Some(s) = summaries.pop() else { break };
                // Its header and fences too (about three characters a token; the loop re-counts).
                let framing = (summary_header(&s).len() / 3 + 4) as u32;
                freed = freed.saturating_add(s.tokens + framing);
                dropped_summaries += 1;
            }
            continue;
        }
        if pieces.is_empty() {
            return Err(ComposeError::QueryTooLarge {
                needed: tokens,
                budget,
            });
        }
        // Drop the weakest pieces until their own counts cover the excess; the loop re-counts.
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
            // Far apart, so that no two test pieces join unless a test places them to.
            byte_start: u64::from(start) * 100_000,
            byte_end: u64::from(start) * 100_000 + text.len() as u64,
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
            source_url: None,
            block: 0,
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
        let b = out.find("### b.rs:").unwrap();
        let a = out.find("### a.rs:").unwrap();
        assert!(b < a, "the best piece's file comes first");
        assert!(out.find("b1").unwrap() < out.find("b2").unwrap());
        assert!(
            out.contains("\n### b.rs:10-10\n```rust\nfn b2() {}\n```\n"),
            "{out}"
        );
        assert!(!out.contains("abc"), "chunk ids stay out of the prompt");
        assert!(out.ends_with("# Task\n\nwhy?\n"));
    }

    /// Lines `from..=to` (1-based) of `file` as a whole piece with its real byte range.
    fn cut(file: &str, from: u32, to: u32, id: &str) -> Piece {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(file.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let a = starts[from as usize - 1];
        let b = starts.get(to as usize).copied().unwrap_or(file.len());
        let mut p = piece("a.rs", from, &file[a..b], 1.0);
        p.end_line = to;
        p.byte_start = a as u64;
        p.byte_end = b as u64;
        p.chunk_id = id.into();
        p
    }

    /// Each fenced block of `prompt`'s code section with the line range its header cites.
    fn quoted_blocks(prompt: &str) -> Vec<(u32, u32, String)> {
        let mut out = Vec::new();
        let mut lines = prompt.lines();
        while let Some(line) = lines.next() {
            let Some(rest) = line.strip_prefix("### a.rs:") else {
                continue;
            };
            let range = rest.split(' ').next().unwrap();
            let (a, b) = range.split_once('-').unwrap();
            let fence = lines.next().unwrap().trim_end_matches("rust").to_string();
            let mut body = String::new();
            for l in lines.by_ref() {
                if l == fence {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            out.push((a.parse().unwrap(), b.parse().unwrap(), body));
        }
        out
    }

    fn file_lines(file: &str, a: u32, b: u32) -> String {
        file.lines()
            .skip(a as usize - 1)
            .take((b - a + 1) as usize)
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn pieces_that_continue_each_other_share_one_block() {
        let file = "fn a() {\n}\n\nfn b() {\n}\n\n\n\n\n\nfn c() {}\n";
        // a (1-2) and b (4-5) are one empty line apart; c (11) is five away.
        let ps = vec![
            cut(file, 4, 5, "bbb"),
            cut(file, 1, 2, "aaa"),
            cut(file, 11, 11, "ccc"),
        ];
        let t = TokenizerSpec::Exact(Encoding::O200kBase);
        let c = fit(ps.clone(), "q", 10_000, &t).unwrap();
        assert!(
            c.prompt
                .contains("### a.rs:1-5\n```rust\nfn a() {\n}\n\nfn b() {\n}\n```\n"),
            "{}",
            c.prompt
        );
        assert!(
            c.prompt
                .contains("### a.rs:11-11\n```rust\nfn c() {}\n```\n")
        );
        let blocks: Vec<(&str, u32)> = c
            .pieces
            .iter()
            .map(|p| (p.chunk_id.as_str(), p.block))
            .collect();
        assert_eq!(blocks, [("aaa", 0), ("bbb", 0), ("ccc", 1)]);
        assert_eq!(joined(&ps), [0]);
        assert_eq!(t.count(&c.prompt), c.tokens);
    }

    #[test]
    fn overlapping_windows_are_quoted_once() {
        let file: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let ps = vec![
            cut(&file, 1, 6, "w1"),
            cut(&file, 5, 10, "w2"),
            cut(&file, 7, 8, "w3"),
        ];
        let out = render(&ps, "q");
        assert_eq!(quoted_blocks(&out), [(1, 10, file_lines(&file, 1, 10))]);
        assert!(out.contains("\n### a.rs:1-10\n```rust\nline 1\n"), "{out}");
    }

    #[test]
    fn only_whole_pieces_separated_by_line_breaks_join() {
        // A space on the line between: the bytes between are not only line breaks.
        let file = "fn a() {}\n \nfn b() {}\n";
        assert_eq!(
            quoted_blocks(&render(&[cut(file, 1, 1, "a"), cut(file, 3, 3, "b")], "q")).len(),
            2
        );
        // A compressed piece is not its file's bytes.
        let file = "fn a() {}\nfn b() {}\n";
        let mut b = cut(file, 2, 2, "b");
        b.form = PieceForm::Light;
        assert_eq!(
            quoted_blocks(&render(&[cut(file, 1, 1, "a"), b], "q")).len(),
            2
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn every_block_quotes_its_file_verbatim(
            lines in prop::collection::vec(prop::sample::select(vec![
                "", "x", "fn f() {", "}", "  y = 1;", " ", "/// doc", "// note", "    // in", "};", "#[test]",
            ]), 1..40),
            ranges in prop::collection::vec((1u32..40, 0u32..8), 1..10),
            known in any::<bool>(),
            cl100k in any::<bool>(),
        ) {
            let file: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let n = lines.len() as u32;
            let base = if cl100k { Encoding::Cl100kBase } else { Encoding::O200kBase };
            let mut ps = Vec::new();
            for (k, (a, len)) in ranges.into_iter().enumerate() {
                let a = a.min(n);
                let b = (a + len).min(n);
                let mut p = cut(&file, a, b, &format!("c{k}"));
                // Known counts, as the index supplies them: joined blocks must stay exact.
                if known {
                    p.base_tokens = Some(base.count(&p.text));
                }
                ps.push(p);
            }
            let t = TokenizerSpec::Exact(base);
            let c = fit(ps, "q", 100_000, &t).unwrap();
            prop_assert_eq!(t.count(&c.prompt), c.tokens);
            for (a, b, body) in quoted_blocks(&c.prompt) {
                prop_assert_eq!(body, file_lines(&file, a, b));
            }
        }
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
            "### a.rs:3-5 (medium: function bodies elided (9 lines), -75%)\n"
        );
        p.form = PieceForm::Aggressive;
        assert!(
            piece_header(&p)
                .contains("aggressive: signatures and key lines only (9 lines elided), -75%")
        );
        p.form = PieceForm::Light;
        assert!(piece_header(&p).contains("light: comments and blank lines removed, -75%"));
        p.form = PieceForm::Signature;
        p.original_tokens = None;
        assert_eq!(piece_header(&p), "### a.rs:3-5 (signature only)\n");
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

    fn summary(path: &str, text: &str) -> SummaryPiece {
        SummaryPiece {
            kind: crate::summary::SummaryKind::File,
            path: path.into(),
            origin: "extractive-1".into(),
            tokens: Encoding::O200kBase.count(text),
            file_tokens: Some(900),
            text: text.into(),
            base_tokens: None,
        }
    }

    #[test]
    fn summaries_come_first_and_go_first() {
        let t = TokenizerSpec::Exact(Encoding::O200kBase);
        let ps = vec![piece("a.rs", 1, "fn a() {}\n", 2.0)];
        let ss = vec![
            summary("b.rs", "pub fn b()\n"),
            summary("c.rs", &"word ".repeat(200)),
        ];
        let out = render_with_summaries(&ps, &ss, "why?");
        assert!(out.starts_with("# Summaries\n"));
        assert!(out.contains(
            "### b.rs (file summary; the whole file is 900 tokens)\n```\npub fn b()\n```\n"
        ));
        assert!(out.find("# Summaries").unwrap() < out.find("# Code context").unwrap());
        // Over budget: the last summary goes before any piece does.
        let budget = t.count(&render_with_summaries(&ps, &ss[..1], "why?"));
        let c = fit_with_summaries(ps.clone(), ss.clone(), "why?", budget, &t).unwrap();
        assert_eq!(
            (c.pieces.len(), c.summaries.len(), c.dropped_summaries),
            (1, 1, 1)
        );
        assert!(c.tokens <= budget);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn prompt_with_summaries_never_exceeds_budget(
            texts in prop::collection::vec("[ -~\n]{1,300}", 0..12),
            sums in prop::collection::vec("[ -~\n]{1,300}", 0..12),
            budget in 1u32..2000,
            known in any::<bool>(),
        ) {
            let tokenizer = TokenizerSpec::Exact(Encoding::O200kBase);
            let pieces: Vec<Piece> = texts.iter().enumerate()
                .map(|(i, t)| piece(&format!("f{}.rs", i % 3), i as u32 * 10 + 1, t, 50.0 - i as f32))
                .collect();
            let summaries: Vec<SummaryPiece> = sums.iter().enumerate()
                .map(|(i, t)| {
                    let mut s = summary(&format!("d{i}/x.rs"), t);
                    if known {
                        s.base_tokens = Some(Encoding::O200kBase.count(t));
                    }
                    s
                })
                .collect();
            match fit_with_summaries(pieces, summaries, "q", budget, &tokenizer) {
                Ok(c) => {
                    prop_assert!(c.tokens <= budget);
                    prop_assert_eq!(tokenizer.count(&c.prompt), c.tokens);
                    // A piece is dropped only once every summary is.
                    prop_assert!(c.dropped == 0 || c.summaries.is_empty());
                }
                Err(ComposeError::QueryTooLarge { needed, .. }) => prop_assert!(needed > budget),
            }
        }
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
            signposts in any::<bool>(),
        ) {
            let tokenizer = if estimate {
                TokenizerSpec::Estimate { base: Encoding::Cl100kBase, ratio: 1.3 }
            } else {
                TokenizerSpec::Exact(Encoding::O200kBase)
            };
            let pieces: Vec<Piece> = texts.iter().enumerate()
                .map(|(i, t)| {
                    let mut p = piece(&format!("f{}.rs", i % 4), i as u32 * 10 + 1, t, 100.0 - i as f32);
                    // Every third piece a signpost: one line of a file of its own, listed
                    // after the code.
                    if signposts && i % 3 == 2 {
                        p.path = format!("s{i}.rs");
                        p.text = t.lines().next().unwrap_or("x").trim().to_string();
                        p.end_line = p.start_line;
                        p.tokens = tokenizer.count(&p.text);
                        p.form = PieceForm::Signpost;
                    }
                    // Known counts, as the index supplies them, must leave the total exact.
                    if known {
                        p.base_tokens = Some(tokenizer.base().count(&p.text));
                    }
                    p
                })
                .collect();
            match fit(pieces, &query, budget, &tokenizer) {
                Ok(c) => {
                    prop_assert!(c.tokens <= budget);
                    prop_assert_eq!(tokenizer.count(&c.prompt), c.tokens);
                    let listed = c.pieces.iter().any(|p| p.form == PieceForm::Signpost);
                    prop_assert_eq!(listed, c.prompt.contains(SIGNPOSTS_HEADING));
                }
                Err(ComposeError::QueryTooLarge { needed, .. }) => prop_assert!(needed > budget),
            }
        }
    }

    #[test]
    fn a_known_span_followed_by_an_empty_line_keeps_its_inner_part() {
        let base = Encoding::O200kBase;
        let a = "fn a() {\n    1\n}\n";
        // `}\n` then an empty line: the line breaks run together, so `a`'s end is no split point.
        let prompt = format!("```rust\n{a}\n/// b\nfn b() {{}}\n```\n");
        let range = 8..8 + a.len();
        let (inner, n) = usable_part(&prompt, range.clone(), base.count(a), base).unwrap();
        assert_eq!(inner, 8..range.end - 2, "the last line is cut off");
        assert_eq!(n, base.count(&prompt[inner]));
        let spans = [(range, base.count(a))];
        let t = TokenizerSpec::Exact(base);
        assert_eq!(count_prompt(&prompt, &spans, &t), t.count(&prompt));
    }

    #[test]
    fn a_known_span_ending_in_a_wide_character_without_a_line_break_is_counted() {
        // A piece's text need not end with a line break; cutting off its last character must
        // not cut into one of several bytes.
        let base = Encoding::O200kBase;
        let a = "## 输出\n### 输出样式";
        let prompt = format!("x{a}\n\nrest\n");
        let range = 1..1 + a.len();
        let spans = [(range, base.count(a))];
        let t = TokenizerSpec::Exact(base);
        assert_eq!(count_prompt(&prompt, &spans, &t), t.count(&prompt));
    }

    #[test]
    fn slash_lines_split_exactly_only_after_a_word() {
        // After a fence's language tag the newline ends a word: `///` starts a new pre-token.
        assert!(line_start("```rust\n/// doc\n", 8));
        // After punctuation o200k carries the newline on into the slashes: not a split point.
        assert!(!line_start("}\n// note\n", 2));
        assert!(!line_start("```\n// note\n", 4));
        assert!(line_start("}\n    // indented\n", 2));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn known_counts_stay_exact_for_pieces_opening_with_slashes(
            texts in prop::collection::vec("/{1,3}[ -~\n]{0,200}", 1..8),
            language in prop::sample::select(vec!["rust", "", "c"]),
            cl100k in any::<bool>(),
        ) {
            let base = if cl100k { Encoding::Cl100kBase } else { Encoding::O200kBase };
            let tokenizer = TokenizerSpec::Exact(base);
            let pieces: Vec<Piece> = texts.iter().enumerate()
                .map(|(i, t)| {
                    let mut p = piece(&format!("f{}.rs", i % 2), i as u32 * 10 + 1, t, 10.0 - i as f32);
                    p.language = language.to_string();
                    p.base_tokens = Some(base.count(t));
                    p
                })
                .collect();
            let (prompt, spans) = render_with_spans(&pieces, &[], "q");
            prop_assert_eq!(count_prompt(&prompt, &spans, &tokenizer), tokenizer.count(&prompt));
        }
    }
}
