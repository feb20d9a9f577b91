//! tiktoken's pre-tokenizers, written out as scanners instead of compiled regexes.
//!
//! Every tiktoken encoding first splits text with a regex (letters with their leading space or
//! punctuation, runs of up to three digits, punctuation runs, whitespace rules with a look-ahead)
//! and then byte-pair-merges each piece on its own. Compiling those patterns (Unicode classes,
//! a look-ahead, so `fancy-regex`) costs milliseconds at start-up and its backtracking VM is most
//! of a warm count. This module matches the same patterns by hand: each alternative of a pattern
//! is one function, tried in the pattern's order, with the backtracking its quantifiers allow
//! written out. Character classes come from `regex-syntax`'s own Unicode tables (the tables the
//! regex engines use), merged once into one sorted range list, so both sides classify every
//! character alike. The tests compare the pieces with the regexes themselves on random text in
//! many scripts, on every Unicode scalar value in several contexts, and on real source files.

use std::sync::OnceLock;

use super::Encoding;

/// Character properties the patterns test, as bits.
const UPPER: u8 = 1; // \p{Lu} | \p{Lt}
const LOWER: u8 = 2; // \p{Ll}
const OTHER_LETTER: u8 = 4; // \p{Lm} | \p{Lo}
const MARK: u8 = 8; // \p{M}
const NUMBER: u8 = 16; // \p{N}
const SPACE: u8 = 32; // \s (Unicode White_Space)

const LETTER: u8 = UPPER | LOWER | OTHER_LETTER;

/// Sorted, disjoint `(first, last, bits)` ranges of every scalar value with a property, and the
/// ASCII ones as a table.
struct Classes {
    ascii: [u8; 128],
    ranges: Vec<(u32, u32, u8)>,
}

fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(build_classes)
}

/// The ranges of a Unicode class as `regex-syntax` knows it (parsing a class expression reads
/// its static tables; nothing is compiled).
fn class_ranges(expr: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    let Ok(hir) = regex_syntax::Parser::new().parse(expr) else {
        return Vec::new();
    };
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => class
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        _ => Vec::new(),
    }
}

fn build_classes() -> Classes {
    let sets = [
        (r"[\p{Lu}\p{Lt}]", UPPER),
        (r"\p{Ll}", LOWER),
        (r"[\p{Lm}\p{Lo}]", OTHER_LETTER),
        (r"\p{M}", MARK),
        (r"\p{N}", NUMBER),
        (r"\s", SPACE),
    ];
    // Sweep over range boundaries: +bits at a start, -bits after an end.
    let mut events: Vec<(u32, u8, bool)> = Vec::new();
    for (expr, bit) in sets {
        for (lo, hi) in class_ranges(expr) {
            events.push((lo, bit, true));
            events.push((hi + 1, bit, false));
        }
    }
    events.sort_unstable_by_key(|&(at, _, _)| at);
    let mut counts = [0u32; 8];
    let mut ranges: Vec<(u32, u32, u8)> = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let at = events[i].0;
        while i < events.len() && events[i].0 == at {
            let (_, bit, start) = events[i];
            let slot = bit.trailing_zeros() as usize;
            if start {
                counts[slot] += 1;
            } else {
                counts[slot] = counts[slot].saturating_sub(1);
            }
            i += 1;
        }
        let bits = counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .fold(0u8, |b, (slot, _)| b | (1 << slot));
        let next = events.get(i).map_or(0x11_0000, |e| e.0);
        if bits != 0 && next > at {
            ranges.push((at, next - 1, bits));
        }
    }
    let mut ascii = [0u8; 128];
    for (c, slot) in ascii.iter_mut().enumerate() {
        *slot = lookup(&ranges, c as u32);
    }
    Classes { ascii, ranges }
}

fn lookup(ranges: &[(u32, u32, u8)], c: u32) -> u8 {
    let i = ranges.partition_point(|&(_, hi, _)| hi < c);
    match ranges.get(i) {
        Some(&(lo, _, bits)) if lo <= c => bits,
        _ => 0,
    }
}

/// The text as scalar values with their byte offsets and property bits.
struct Scan<'t> {
    text: &'t str,
    offsets: Vec<usize>,
    chars: Vec<char>,
    bits: Vec<u8>,
}

impl<'t> Scan<'t> {
    fn new(text: &'t str) -> Self {
        let classes = classes();
        let n = text.len();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut chars = Vec::with_capacity(n);
        let mut bits = Vec::with_capacity(n);
        // Most text counted per call (headers, paths, code) is ASCII: a character per byte, so
        // the three arrays fill straight from the bytes, without decoding a character at a time.
        if text.is_ascii() {
            offsets.extend(0..=n);
            chars.extend(text.bytes().map(char::from));
            bits.extend(text.bytes().map(|b| classes.ascii[usize::from(b & 0x7f)]));
            return Self {
                text,
                offsets,
                chars,
                bits,
            };
        }
        for (at, c) in text.char_indices() {
            offsets.push(at);
            chars.push(c);
            bits.push(match classes.ascii.get(c as usize) {
                Some(&b) => b,
                None => lookup(&classes.ranges, c as u32),
            });
        }
        offsets.push(n);
        Self {
            text,
            offsets,
            chars,
            bits,
        }
    }

    fn len(&self) -> usize {
        self.chars.len()
    }

    fn has(&self, i: usize, bits: u8) -> bool {
        self.bits.get(i).is_some_and(|b| b & bits != 0)
    }

    fn is(&self, i: usize, c: char) -> bool {
        self.chars.get(i) == Some(&c)
    }

    fn is_newline(&self, i: usize) -> bool {
        matches!(self.chars.get(i), Some('\r' | '\n'))
    }

    /// `[^\r\n\p{L}\p{N}]`
    fn is_prefix(&self, i: usize) -> bool {
        i < self.len() && !self.is_newline(i) && !self.has(i, LETTER | NUMBER)
    }

    /// `[^\s\p{L}\p{N}]`
    fn is_punct(&self, i: usize) -> bool {
        i < self.len() && !self.has(i, SPACE | LETTER | NUMBER)
    }

    /// End of the run of characters from `i` that satisfy `f`.
    fn run(&self, mut i: usize, f: impl Fn(&Self, usize) -> bool) -> usize {
        while i < self.len() && f(self, i) {
            i += 1;
        }
        i
    }

    fn run_bits(&self, i: usize, bits: u8) -> usize {
        self.run(i, |s, j| s.has(j, bits))
    }

    /// Whether `text` matches at `i` with ASCII letters compared case-insensitively as the
    /// regex crate's `(?i)` does (simple case folding: `s` also matches U+017F LATIN SMALL LETTER
    /// LONG S, `k` the Kelvin sign; the other letters used here fold only to their ASCII case).
    fn matches_folded(&self, i: usize, text: &str) -> bool {
        text.chars().enumerate().all(|(k, want)| {
            let Some(&c) = self.chars.get(i + k) else {
                return false;
            };
            c == want
                || c.to_ascii_lowercase() == want
                || (want == 's' && c == '\u{17F}')
                || (want == 'k' && c == '\u{212A}')
        })
    }

    fn matches_exact(&self, i: usize, text: &str) -> bool {
        text.chars()
            .enumerate()
            .all(|(k, want)| self.chars.get(i + k) == Some(&want))
    }
}

// ----- o200k_base: -----------------------------------------------------------------------------
// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+

const O200K_UPPERISH: u8 = UPPER | OTHER_LETTER | MARK;
const O200K_LOWERISH: u8 = LOWER | OTHER_LETTER | MARK;

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?`, greedy: the end after it.
fn o200k_contraction(s: &Scan, i: usize) -> usize {
    if !s.is(i, '\'') {
        return i;
    }
    for tail in ["s", "t", "re", "ve", "m", "ll", "d"] {
        if s.matches_folded(i + 1, tail) {
            return i + 1 + tail.chars().count();
        }
    }
    i
}

/// The optional leading `[^\r\n\p{L}\p{N}]?`, greedy: with it first, then without.
fn optional_prefix(s: &Scan, i: usize) -> impl Iterator<Item = usize> {
    let with = s.is_prefix(i).then_some(i + 1);
    with.into_iter().chain([i])
}

fn o200k_words_lower(s: &Scan, i: usize) -> Option<usize> {
    for a in optional_prefix(s, i) {
        let upper_end = s.run_bits(a, O200K_UPPERISH);
        // `U*` gives back characters until `L+` can start (greedy, then backtracking).
        for start in (a..=upper_end).rev() {
            if s.has(start, O200K_LOWERISH) {
                let end = s.run_bits(start, O200K_LOWERISH);
                return Some(o200k_contraction(s, end));
            }
        }
    }
    None
}

fn o200k_words_upper(s: &Scan, i: usize) -> Option<usize> {
    for a in optional_prefix(s, i) {
        let upper_end = s.run_bits(a, O200K_UPPERISH);
        if upper_end > a {
            let end = s.run_bits(upper_end, O200K_LOWERISH);
            return Some(o200k_contraction(s, end));
        }
    }
    None
}

fn digits(s: &Scan, i: usize, max: usize) -> Option<usize> {
    let mut end = i;
    while end < s.len() && end - i < max && s.has(end, NUMBER) {
        end += 1;
    }
    (end > i).then_some(end)
}

/// ` ?[^\s\p{L}\p{N}]+` followed by a run of `tail` characters.
fn punctuation(s: &Scan, i: usize, tail: impl Fn(char) -> bool) -> Option<usize> {
    let starts = s.is(i, ' ').then_some(i + 1).into_iter().chain([i]);
    for a in starts {
        let end = s.run(a, Scan::is_punct);
        if end > a {
            return Some(s.run(end, |s, j| tail(s.chars[j])));
        }
    }
    None
}

/// `\s*[\r\n]+` (`multi`) or `\s*[\r\n]`: the whitespace run up to its last line break.
fn spaces_to_newline(s: &Scan, i: usize, multi: bool) -> Option<usize> {
    let space_end = s.run_bits(i, SPACE);
    for start in (i..=space_end).rev() {
        if s.is_newline(start) {
            return Some(if multi {
                s.run(start, Scan::is_newline)
            } else {
                start + 1
            });
        }
    }
    None
}

/// `\s+(?!\S)`: a whitespace run not followed by a visible character, so a run before a word
/// leaves its last space to the word.
fn spaces_not_before_text(s: &Scan, i: usize) -> Option<usize> {
    let space_end = s.run_bits(i, SPACE);
    (i + 1..=space_end)
        .rev()
        .find(|&end| end == s.len() || s.has(end, SPACE))
}

fn spaces(s: &Scan, i: usize) -> Option<usize> {
    let end = s.run_bits(i, SPACE);
    (end > i).then_some(end)
}

fn o200k(s: &Scan, i: usize) -> Option<usize> {
    o200k_words_lower(s, i)
        .or_else(|| o200k_words_upper(s, i))
        .or_else(|| digits(s, i, 3))
        .or_else(|| punctuation(s, i, |c| matches!(c, '\r' | '\n' | '/')))
        .or_else(|| spaces_to_newline(s, i, true))
        .or_else(|| spaces_not_before_text(s, i))
        .or_else(|| spaces(s, i))
}

// ----- cl100k_base: ----------------------------------------------------------------------------
// '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
// |\s++$|\s*[\r\n]|\s+(?!\S)|\s

fn contraction(s: &Scan, i: usize, folded: bool) -> Option<usize> {
    if !s.is(i, '\'') {
        return None;
    }
    ["s", "d", "m", "t", "ll", "ve", "re"]
        .into_iter()
        .find_map(|tail| {
            let hit = if folded {
                s.matches_folded(i + 1, tail)
            } else {
                s.matches_exact(i + 1, tail)
            };
            hit.then(|| i + 1 + tail.chars().count())
        })
}

/// `[^\r\n\p{L}\p{N}]?+\p{L}++`: possessive, but the prefix and letters are disjoint, so this
/// is the plain greedy reading.
fn cl100k_word(s: &Scan, i: usize) -> Option<usize> {
    let a = if s.is_prefix(i) { i + 1 } else { i };
    let end = s.run_bits(a, LETTER);
    (end > a).then_some(end)
}

/// `\s++$`: a whitespace run that ends the text.
fn trailing_spaces(s: &Scan, i: usize) -> Option<usize> {
    let end = s.run_bits(i, SPACE);
    (end > i && end == s.len()).then_some(end)
}

fn one_space(s: &Scan, i: usize) -> Option<usize> {
    s.has(i, SPACE).then_some(i + 1)
}

fn cl100k(s: &Scan, i: usize) -> Option<usize> {
    contraction(s, i, true)
        .or_else(|| cl100k_word(s, i))
        .or_else(|| digits(s, i, 3))
        .or_else(|| punctuation(s, i, |c| matches!(c, '\r' | '\n')))
        .or_else(|| trailing_spaces(s, i))
        .or_else(|| spaces_to_newline(s, i, false))
        .or_else(|| spaces_not_before_text(s, i))
        .or_else(|| one_space(s, i))
}

// ----- p50k_base, r50k_base (GPT-2): ---------------------------------------------------------
// '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s

/// ` ?` then a run of `bits` (the space is given back only when the run cannot start, and a
/// space is never in the run).
fn spaced_run(s: &Scan, i: usize, bits: u8) -> Option<usize> {
    let a = if s.is(i, ' ') { i + 1 } else { i };
    let end = s.run_bits(a, bits);
    (end > a).then_some(end)
}

fn gpt2(s: &Scan, i: usize) -> Option<usize> {
    contraction(s, i, false)
        .or_else(|| spaced_run(s, i, LETTER))
        .or_else(|| spaced_run(s, i, NUMBER))
        .or_else(|| punctuation(s, i, |_| false))
        .or_else(|| trailing_spaces(s, i))
        .or_else(|| spaces_not_before_text(s, i))
        .or_else(|| one_space(s, i))
}

/// Calls `piece` with each pre-token of `text`, in order, exactly as `encoding`'s tiktoken
/// regex finds them (a character no alternative matches is skipped, as `find_iter` skips it;
/// the patterns cover every character, so none is).
pub fn for_each_piece(encoding: Encoding, text: &str, mut piece: impl FnMut(&str)) {
    let s = Scan::new(text);
    let next: fn(&Scan, usize) -> Option<usize> = match encoding {
        Encoding::O200kBase | Encoding::O200kHarmony => o200k,
        Encoding::Cl100kBase => cl100k,
        Encoding::P50kBase | Encoding::R50kBase => gpt2,
    };
    let mut i = 0;
    while i < s.len() {
        match next(&s, i) {
            Some(end) if end > i => {
                piece(&s.text[s.offsets[i]..s.offsets[end]]);
                i = end;
            }
            _ => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The pre-tokenizer pattern of each encoding, as tiktoken-rs compiles it.
    pub(super) fn pattern(encoding: Encoding) -> &'static str {
        match encoding {
            Encoding::O200kBase | Encoding::O200kHarmony => concat!(
                r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                "|",
                r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                "|",
                r"\p{N}{1,3}",
                "|",
                r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
                "|",
                r"\s*[\r\n]+",
                "|",
                r"\s+(?!\S)",
                "|",
                r"\s+",
            ),
            Encoding::Cl100kBase => {
                "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s"
            }
            Encoding::P50kBase | Encoding::R50kBase => {
                "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s"
            }
        }
    }

    fn regex(e: Encoding) -> &'static fancy_regex::Regex {
        static R: [OnceLock<fancy_regex::Regex>; 5] = [const { OnceLock::new() }; 5];
        R[e as usize].get_or_init(|| fancy_regex::Regex::new(pattern(e)).unwrap())
    }

    fn by_regex(e: Encoding, text: &str) -> Vec<String> {
        regex(e)
            .find_iter(text)
            .map(|m| m.unwrap().as_str().to_string())
            .collect()
    }

    fn by_scanner(e: Encoding, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_piece(e, text, |p| out.push(p.to_string()));
        out
    }

    const ENCODINGS: [Encoding; 3] = [
        Encoding::O200kBase,
        Encoding::Cl100kBase,
        Encoding::R50kBase,
    ];

    #[test]
    fn splits_like_the_regex_on_known_text() {
        let texts = [
            "fn main() {\n    let x: Vec<u32> = (0..100_000).collect(); // I'll count\n\n\n\t}\r\n",
            "It's DON'T we've WE'VE he'LL 'S 'ſ x'ſ 12345 3.14159 ===== ---->>>  \u{a0}trailing   \n",
            "Größe naïve café 東京は晴れ 🙂👍🏽 Привет мир عربى ok?!\n    \n",
            "ǅemal ʰa ÉCOLE École e\u{301}te\u{301} ab\u{903}c ٣٤٥ Ⅻ ½ \u{2003}x\u{3000}y\u{85}z\u{2028}",
            "a  b   c\n\n  d \r\n\r\n  \t e//f/ /g\r\n/\n",
            "   ",
            "\n",
            "x ",
            "",
            "'",
            "'s",
            "CamelCaseHTTPServer getHTTPResponse XMLHttpRequest ABC'S",
        ];
        for e in Encoding::ALL {
            for t in texts {
                assert_eq!(by_scanner(e, t), by_regex(e, t), "{e}: {t:?}");
            }
        }
    }

    #[test]
    fn classifies_every_scalar_value_like_the_regex() {
        // Each character alone and between letters, spaces and digits: any class difference
        // changes a split in one of these.
        let mut mismatches = Vec::new();
        for c in (0u32..0x11_0000).filter_map(char::from_u32) {
            for e in ENCODINGS {
                for t in [
                    format!("{c}"),
                    format!("a{c}b"),
                    format!(" {c}{c} A"),
                    format!("1{c}2 {c}\n"),
                    format!("'{c}x"),
                ] {
                    if by_scanner(e, &t) != by_regex(e, &t) {
                        mismatches.push((e, c as u32));
                    }
                }
            }
            if mismatches.len() > 20 {
                break;
            }
        }
        assert!(mismatches.is_empty(), "{mismatches:x?}");
    }

    #[test]
    fn splits_like_the_regex_on_this_repository() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = 0;
        for dir in ["src", "src/tokens", "src/chunk", "src/summary"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(text) = std::fs::read_to_string(entry.path()) else {
                    continue;
                };
                for e in ENCODINGS {
                    assert_eq!(
                        by_scanner(e, &text),
                        by_regex(e, &text),
                        "{e}: {:?}",
                        entry.path()
                    );
                }
                files += 1;
            }
        }
        assert!(files > 10, "{files}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn splits_like_the_regex(text in "([ \\t\\r\\n]{1,4}|\u{a0}|\u{2003}|\u{85}|[a-zA-Z]{1,6}|[A-Z]{1,3}|[0-9]{1,5}|'[sStTdDmMlLvVrReE]{0,2}|\u{17f}|[!-/:-@\\[-`{-~]{1,3}|[ÀÉÖßàéöÿ]|[ǅǈʰʲ]|[東京晴]|[\u{300}\u{301}\u{903}]|[٣½Ⅻ]|[🙂👍🏽]|\\PC){0,40}") {
            for e in Encoding::ALL {
                prop_assert_eq!(by_scanner(e, &text), by_regex(e, &text), "{}", e);
            }
        }
    }
}
