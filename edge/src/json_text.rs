//! Writing an answer's long string and its piece list as JSON, quickly.
//!
//! An answer's prompt is 100+ KB of source code at a 32k budget. serde_json escapes strings a
//! byte at a time through a lookup table, which V8's profiler showed as the largest single
//! share of a warm `/v1/context` in the Worker (wasm has no SIMD here). Source code rarely
//! needs escaping except for quotes, backslashes and line breaks, so this looks at eight bytes
//! at a time for the next byte that does and copies the run before it whole. The output is
//! byte for byte what serde_json writes (a test checks it).
//!
//! The piece list (80-odd pieces at 32k, 75 KB of JSON) was the next share: serde_json escapes
//! every key and every short string (path, ids, links) through the same table, a call each.
//! [`push_pieces`] writes keys as constants and strings through [`push_json_string`]; its output
//! is serde_json's for the same pieces (a test compares them).

use ctxgate_core::compose::{Piece, PieceForm};
use ctxgate_core::rank::{Signals, small_number};

/// Bytes whose every lane is `b`.
const fn lanes(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

const ONES: u64 = lanes(0x01);
const HIGHS: u64 = lanes(0x80);

/// The high bits of the lanes of `w` (read little-endian) that may be a quote, a backslash or a
/// control character (below 0x20): zero when none is, and when some is, the lowest bit set is
/// the first such byte (lanes above it may be flagged falsely by a borrow, never lanes below).
fn escape_lanes(w: u64) -> u64 {
    let below_space = w.wrapping_sub(lanes(0x20)) & !w & HIGHS;
    let quote = w ^ lanes(b'"');
    let backslash = w ^ lanes(b'\\');
    let quote = quote.wrapping_sub(ONES) & !quote & HIGHS;
    let backslash = backslash.wrapping_sub(ONES) & !backslash & HIGHS;
    below_space | quote | backslash
}

/// Appends `text` to `out` as a JSON string literal, quotes included.
pub fn push_json_string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + bytes.len() / 16 + 2);
    out.push(b'"');
    // `run` is where the bytes not yet copied start, `rest` what is not yet scanned.
    let mut run = 0;
    let mut rest = bytes;
    loop {
        let at = match rest.split_first_chunk::<8>() {
            Some((word, tail)) => {
                let flagged = escape_lanes(u64::from_le_bytes(*word));
                if flagged == 0 {
                    rest = tail;
                    continue;
                }
                // Straight to the first byte that needs escaping (code has a line break every
                // few dozen bytes: stepping a byte at a time up to it was most of this loop's
                // time); lanes above it may be flagged falsely, never the first.
                (flagged.trailing_zeros() / 8) as usize
            }
            None => match rest.iter().position(|&b| needs_escape(b)) {
                Some(k) => k,
                None => break,
            },
        };
        let i = bytes.len() - rest.len() + at;
        out.extend_from_slice(&bytes[run..i]);
        push_byte(out, bytes[i]);
        run = i + 1;
        rest = &bytes[run..];
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// Whether JSON needs `b` escaped in a string: a quote, a backslash or a control character.
fn needs_escape(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Appends one byte of a JSON string, escaped as serde_json escapes it.
#[inline]
fn push_byte(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        0x00..=0x1f => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
        _ => out.push(b),
    }
}

/// Appends `pieces` as the JSON array serde_json writes for them.
pub fn push_pieces(out: &mut Vec<u8>, pieces: &[Piece]) -> serde_json::Result<()> {
    out.push(b'[');
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_piece(out, p)?;
    }
    out.push(b']');
    Ok(())
}

/// `,"name":` before every key but the first: keys are constants, never escaped.
fn key(out: &mut Vec<u8>, name: &str) {
    out.push(b',');
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

fn int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// A score or signal, through the same [`small_number`] the derived serializer uses.
fn number(out: &mut Vec<u8>, v: f32) -> serde_json::Result<()> {
    small_number(&v, &mut serde_json::Serializer::new(out))
}

fn form_name(form: PieceForm) -> &'static str {
    match form {
        PieceForm::Full => "full",
        PieceForm::Signature => "signature",
        PieceForm::Signpost => "signpost",
        PieceForm::Light => "light",
        PieceForm::Medium => "medium",
        PieceForm::Aggressive => "aggressive",
        PieceForm::Excerpt => "excerpt",
    }
}

/// One piece, its fields in [`Piece`]'s order and with its serde attributes (`symbol` is
/// `null` when absent; the other options are left out).
fn push_piece(out: &mut Vec<u8>, p: &Piece) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"path\":");
    push_json_string(out, &p.path);
    key(out, "language");
    push_json_string(out, &p.language);
    for (name, v) in [
        ("start_line", u64::from(p.start_line)),
        ("end_line", u64::from(p.end_line)),
        ("byte_start", p.byte_start),
        ("byte_end", p.byte_end),
    ] {
        key(out, name);
        int(out, v);
    }
    key(out, "kind");
    push_json_string(out, &p.kind);
    key(out, "symbol");
    match &p.symbol {
        Some(s) => push_json_string(out, s),
        None => out.extend_from_slice(b"null"),
    }
    key(out, "chunk_id");
    push_json_string(out, &p.chunk_id);
    key(out, "sha256");
    push_json_string(out, &p.sha256);
    key(out, "tokens");
    int(out, p.tokens);
    key(out, "score");
    number(out, p.score)?;
    key(out, "form");
    out.push(b'"');
    out.extend_from_slice(form_name(p.form).as_bytes());
    out.push(b'"');
    if let Some(v) = p.original_tokens {
        key(out, "original_tokens");
        int(out, v);
    }
    if let Some(v) = p.elided_lines {
        key(out, "elided_lines");
        int(out, v);
    }
    if let Some(s) = &p.reasoning {
        key(out, "reasoning");
        push_signals(out, s)?;
    }
    if let Some(url) = &p.source_url {
        key(out, "source_url");
        push_json_string(out, url);
    }
    key(out, "block");
    int(out, p.block);
    out.push(b'}');
    Ok(())
}

fn push_signals(out: &mut Vec<u8>, s: &Signals) -> serde_json::Result<()> {
    let Signals {
        lexical,
        file,
        symbol,
        reference,
        recency,
        mention,
        path,
        graph,
        dense,
        prior,
        diversity,
        neighbour,
        learned,
        history,
    } = *s;
    out.extend_from_slice(b"{\"lexical\":");
    number(out, lexical)?;
    for (name, v) in [
        ("file", file),
        ("symbol", symbol),
        ("reference", reference),
        ("recency", recency),
        ("mention", mention),
        ("path", path),
        ("graph", graph),
        ("dense", dense),
        ("prior", prior),
        ("diversity", diversity),
        ("neighbour", neighbour),
        ("learned", learned),
        ("history", history),
    ] {
        key(out, name);
        number(out, v)?;
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ours(text: &str) -> String {
        let mut out = Vec::new();
        push_json_string(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn writes_what_serde_json_writes() {
        for text in [
            "",
            "plain",
            "fn main() {\n\tprintln!(\"hi\\n\");\n}\r\n",
            "\u{0}\u{1}\u{8}\u{c}\u{1f}\u{7f} é 漢字 🦀 \"\\",
            "exactly8",
            "0123456\"",
        ] {
            assert_eq!(ours(text), serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    fn piece(text: &str, n: u32, score: f32, all: bool) -> Piece {
        let signals = Signals {
            lexical: score,
            file: 1.0,
            path: 0.25,
            neighbour: score / 3.0,
            learned: 1.5,
            ..Signals::default()
        };
        Piece {
            path: format!("src/{text}.rs"),
            language: "rust".into(),
            start_line: n,
            end_line: n + 7,
            byte_start: u64::from(n) * 40,
            byte_end: u64::MAX,
            kind: "function".into(),
            symbol: all.then(|| text.to_string()),
            chunk_id: format!("c{n}"),
            sha256: "ab".repeat(32),
            text: "never written".into(),
            tokens: n * 3,
            score,
            form: [
                PieceForm::Full,
                PieceForm::Signature,
                PieceForm::Signpost,
                PieceForm::Light,
                PieceForm::Medium,
                PieceForm::Aggressive,
                PieceForm::Excerpt,
            ][n as usize % 7],
            original_tokens: all.then_some(n * 4),
            elided_lines: all.then_some(2),
            reasoning: all.then_some(signals),
            base_tokens: Some(1),
            source_url: all.then(|| format!("https://github.com/o/r/blob/abc/{text}#L{n}")),
            block: n / 2,
        }
    }

    fn pieces_json(pieces: &[Piece]) -> String {
        let mut out = Vec::new();
        push_pieces(&mut out, pieces).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_piece_list_is_what_serde_json_writes() {
        let pieces = vec![
            piece("plain", 1, 1.0, true),
            piece("quote\"back\\slash\n", 2, 0.123_456_79, false),
            piece("é漢🦀", 3, 255.0, true),
            piece("x", 4, 256.0, true),
            piece("y", 5, f32::NAN, true),
            piece("z", 6, -1.0, false),
        ];
        assert_eq!(
            pieces_json(&pieces),
            serde_json::to_string(&pieces).unwrap()
        );
        assert_eq!(pieces_json(&[]), "[]");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn any_piece_list_is_written_as_serde_json_writes_it(
            specs in proptest::collection::vec(("(?s).{0,40}", 0u32..100_000, any::<f32>(), any::<bool>()), 0..8),
        ) {
            let pieces: Vec<Piece> =
                specs.iter().map(|(t, n, s, all)| piece(t, *n, *s, *all)).collect();
            prop_assert_eq!(pieces_json(&pieces), serde_json::to_string(&pieces).unwrap());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(text in "(?s).{0,200}") {
            prop_assert_eq!(ours(&text), serde_json::to_string(&text).unwrap());
        }

        #[test]
        fn code_like_strings_too(text in "[ -~\t\n\r\u{0}-\u{1f}]{0,300}") {
            prop_assert_eq!(ours(&text), serde_json::to_string(&text).unwrap());
        }
    }
}
