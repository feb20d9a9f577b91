//! Cutting source files into chunks: the units ctxgate retrieves, counts and cites.
//!
//! A chunk is a contiguous byte range of one file that starts at a line start and ends at a line
//! end, so a prompt can quote it verbatim and cite `path:start-end`. Source in a language with a
//! grammar is cut along its syntax (functions, methods, classes and impls, each with its leading
//! doc comments); definitions too large for one chunk are split at inner boundaries (methods,
//! then statements), and runs of tiny siblings are merged so that no chunk is mostly header.
//! Markdown is cut at headings, and everything else into overlapping line windows.
//!
//! Sizes are measured in bytes here (about four bytes a token in source code), because cutting
//! must be cheap; exact token counts are taken afterwards, once per chunk, by the indexer.
//!
//! Every byte of a file lands in at least one chunk (a property test checks it): a chunk keeps
//! the blank lines that follow it, so that a citation can point at any line.

mod classify;
mod language;
mod lines;
mod markdown;
mod signature;
#[cfg(feature = "syntax")]
mod syntax;

pub use classify::{FileClass, FilterOptions, classify};
pub use language::Language;
pub use lines::LineIndex;
pub use signature::{declaration_line, signature_len};

use serde::{Deserialize, Serialize};

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    /// A free function.
    Function,
    /// A function inside a class, impl or trait.
    Method,
    /// A class.
    Class,
    /// A Rust impl block (or its header when its methods are chunks of their own).
    Impl,
    /// A struct or union.
    Struct,
    /// An enum.
    Enum,
    /// A trait or interface.
    Interface,
    /// A module or namespace.
    Module,
    /// A type alias or definition.
    Type,
    /// Code between definitions (imports, constants, statements), or several small definitions.
    Block,
    /// A Markdown section, from a heading to the next.
    Section,
    /// A window of lines, for files without a grammar.
    Window,
}

impl ChunkKind {
    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            ChunkKind::Function => "function",
            ChunkKind::Method => "method",
            ChunkKind::Class => "class",
            ChunkKind::Impl => "impl",
            ChunkKind::Struct => "struct",
            ChunkKind::Enum => "enum",
            ChunkKind::Interface => "interface",
            ChunkKind::Module => "module",
            ChunkKind::Type => "type",
            ChunkKind::Block => "block",
            ChunkKind::Section => "section",
            ChunkKind::Window => "window",
        }
    }
}

/// One chunk of a file, before it is counted and fingerprinted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkSpan {
    /// First byte.
    pub byte_start: usize,
    /// One past the last byte.
    pub byte_end: usize,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    /// What it holds.
    pub kind: ChunkKind,
    /// The defined symbol, qualified by its container (`Parser::parse`), when there is one.
    pub symbol: Option<String>,
}

/// Size limits for chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkOptions {
    /// A chunk larger than this is split (about 1,500 tokens of code).
    pub max_bytes: usize,
    /// Adjacent chunks smaller than this are merged while the result stays under `max_bytes`.
    pub min_bytes: usize,
    /// Lines per window in the fallback.
    pub window_lines: usize,
    /// Lines shared by consecutive windows, so a reader of one sees the context of the next.
    pub overlap_lines: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        Self {
            max_bytes: 6000,
            min_bytes: 400,
            window_lines: 80,
            overlap_lines: 10,
        }
    }
}

/// Cuts `text` (the contents of a file in `language`) into chunks.
pub fn chunk_text(text: &str, language: Language, opts: &ChunkOptions) -> Vec<ChunkSpan> {
    chunk_with_blanks(text, None, language, opts)
}

/// Cuts `redacted` (a file with its secrets replaced, line for line, as
/// [`crate::secrets::redact_source`] does) like [`chunk_text`], where a line left blank by the
/// redaction is not a blank line between chunks: `original` is the file before it. A chunk
/// citing such lines would claim to quote the secret's lines.
pub fn chunk_redacted(
    redacted: &str,
    original: &str,
    language: Language,
    opts: &ChunkOptions,
) -> Vec<ChunkSpan> {
    chunk_with_blanks(redacted, Some(original), language, opts)
}

fn chunk_with_blanks(
    text: &str,
    original: Option<&str>,
    language: Language,
    opts: &ChunkOptions,
) -> Vec<ChunkSpan> {
    let lines = LineIndex::new(text);
    let ranges: Vec<Draft> = match language {
        Language::Markdown => markdown::sections(text, &lines, opts),
        #[cfg(feature = "syntax")]
        lang if lang.has_grammar() => syntax::chunk(text, lang, &lines, opts)
            .unwrap_or_else(|| windows(text, &lines, 0, text.len(), opts)),
        _ => windows(text, &lines, 0, text.len(), opts),
    };
    let mut spans: Vec<ChunkSpan> = ranges
        .into_iter()
        .filter_map(|d| {
            let (s, e) = trim_to_lines(text, d.start, d.end)?;
            Some(ChunkSpan {
                byte_start: s,
                byte_end: e,
                start_line: lines.line_of(s),
                end_line: lines.line_of(e - 1),
                kind: d.kind,
                symbol: d.symbol,
            })
        })
        .collect();
    let blanks = Blanks::new(text, &lines, original);
    cover_blank_gaps(&blanks, &mut spans);
    spans
}

/// Which stretches of a file are blank lines: in its text, and in the original too when the
/// text is a redaction of it (same lines, other bytes).
struct Blanks<'a> {
    text: &'a str,
    lines: &'a LineIndex,
    original: Option<(&'a str, LineIndex)>,
}

impl<'a> Blanks<'a> {
    fn new(text: &'a str, lines: &'a LineIndex, original: Option<&'a str>) -> Self {
        Self {
            text,
            lines,
            original: original.map(|o| (o, LineIndex::new(o))),
        }
    }

    /// Where a stretch of blank lines from byte `start` (a line start) ends at `end` or before:
    /// `end` when every line between is blank.
    fn blank_until(&self, start: usize, end: usize) -> usize {
        let white = |s: &str| s.bytes().all(|b| b.is_ascii_whitespace());
        if !white(&self.text[start..end]) {
            return start;
        }
        let Some((original, olines)) = &self.original else {
            return end;
        };
        // Line by line in the original: the redaction kept the line numbers.
        let first = self.lines.line_of(start) as usize;
        let last = self.lines.line_of(end - 1) as usize;
        for line in first..=last {
            let (a, b) = (olines.line_start(line), olines.line_end(line));
            if a > b || b > original.len() || !white(&original[a..b]) {
                return self.lines.line_start(line).clamp(start, end);
            }
        }
        end
    }
}

/// Gives each chunk the blank lines between it and the next chunk (the first chunk also the
/// file's leading ones, the last its trailing ones), so that every line of a file is in some
/// chunk. A change often lands on such a line (a definition inserted between two others is
/// anchored there), and two neighbouring chunks quoted together show it anyway: a piece now
/// cites what the prompt quotes. It costs a chunk a token at most (`"\n\n"` is one).
fn cover_blank_gaps(blanks: &Blanks, spans: &mut [ChunkSpan]) {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].byte_start, spans[i].byte_end));
    if let Some(&first) = order.first() {
        let s = &mut spans[first];
        if s.byte_start > 0 && blanks.blank_until(0, s.byte_start) == s.byte_start {
            s.byte_start = 0;
            s.start_line = 1;
        }
    }
    // The chunk that reaches furthest so far: a gap after it is one no chunk covers.
    let mut furthest: Option<usize> = None;
    for (k, &i) in order.iter().enumerate() {
        if furthest.is_none_or(|f| spans[i].byte_end > spans[f].byte_end) {
            furthest = Some(i);
        }
        let Some(f) = furthest else { continue };
        let next = order
            .get(k + 1)
            .map_or(blanks.text.len(), |&j| spans[j].byte_start);
        let end = spans[f].byte_end;
        if end < next {
            let to = blanks.blank_until(end, next);
            if to > end {
                spans[f].byte_end = to;
                spans[f].end_line = blanks.lines.line_of(to - 1);
            }
        }
    }
}

/// The identifiers `text` (a chunk of a file in `language`) uses: the identifier leaves of its
/// syntax tree where the language has a grammar (names in comments and strings are not uses),
/// identifier-shaped words otherwise. Names shorter than three characters are left out (loop
/// variables, `id`, `fs`: too common to point anywhere).
pub fn identifiers(text: &str, language: Language) -> Vec<String> {
    #[cfg(feature = "syntax")]
    if language.has_grammar()
        && let Some(names) = syntax::identifiers(text, language)
    {
        return names;
    }
    let _ = language;
    // Runs of word characters; a run that starts with a digit (`0xff`, `12abc`) is a number.
    let mut names = Vec::new();
    let mut run: Option<usize> = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        let word = c.is_alphanumeric() || c == '_';
        match (run, word) {
            (None, true) => run = Some(i),
            (Some(s), false) => {
                let name = &text[s..i];
                if name.chars().count() >= 3 && !name.starts_with(|c: char| c.is_numeric()) {
                    names.push(name.to_string());
                }
                run = None;
            }
            _ => {}
        }
    }
    names
}

/// A chunk before trimming.
#[derive(Clone, Debug)]
pub(crate) struct Draft {
    pub start: usize,
    pub end: usize,
    pub kind: ChunkKind,
    pub symbol: Option<String>,
}

/// Shrinks `[start, end)` to whole lines without leading or trailing blank lines; `None` when
/// nothing but whitespace is left.
fn trim_to_lines(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let slice = &bytes[start..end];
    let first = slice.iter().position(|b| !b.is_ascii_whitespace())? + start;
    let last = slice.iter().rposition(|b| !b.is_ascii_whitespace())? + start;
    // Back to the start of the first line, unless that crosses `start` (a window cut mid-line).
    let line_start = bytes[start..first]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(start, |p| start + p + 1);
    // On to the end of the last line, including its newline when inside the range.
    let line_end = bytes[last..end]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(end, |p| last + p + 1);
    Some((line_start, line_end))
}

/// Overlapping windows of lines over `[start, end)`; a line longer than `max_bytes` (minified
/// code) is cut at character boundaries.
pub(crate) fn windows(
    text: &str,
    lines: &LineIndex,
    start: usize,
    end: usize,
    opts: &ChunkOptions,
) -> Vec<Draft> {
    let mut out = Vec::new();
    let first_line = lines.line_of(start) as usize; // 1-based
    let last_line = lines.line_of(end.saturating_sub(1).max(start)) as usize;
    let mut line = first_line;
    loop {
        let w_start = lines.line_start(line).max(start);
        let mut w_last = (line + opts.window_lines - 1).min(last_line);
        // Keep windows under max_bytes by taking fewer lines.
        while w_last > line && lines.line_end(w_last).min(end) - w_start > opts.max_bytes {
            w_last = line + (w_last - line) / 2;
        }
        let w_end = lines.line_end(w_last).min(end);
        if w_end - w_start > opts.max_bytes {
            split_bytes(text, w_start, w_end, opts.max_bytes, &mut out);
        } else if w_end > w_start {
            out.push(Draft {
                start: w_start,
                end: w_end,
                kind: ChunkKind::Window,
                symbol: None,
            });
        }
        if w_last >= last_line {
            break;
        }
        // The next window repeats the last `overlap_lines` lines, but always moves forward.
        line = (w_last + 1)
            .saturating_sub(opts.overlap_lines)
            .max(line + 1);
    }
    out
}

fn split_bytes(text: &str, start: usize, end: usize, max: usize, out: &mut Vec<Draft>) {
    let mut s = start;
    while s < end {
        let mut e = (s + max).min(end);
        while e < end && !text.is_char_boundary(e) {
            e -= 1;
        }
        if e <= s {
            e = (s + 1..=end)
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(end);
        }
        out.push(Draft {
            start: s,
            end: e,
            kind: ChunkKind::Window,
            symbol: None,
        });
        s = e;
    }
}

#[cfg(test)]
mod tests;
