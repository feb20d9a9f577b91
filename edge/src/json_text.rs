//! Writing one long string as a JSON string literal, quickly.
//!
//! An answer's prompt is 100+ KB of source code at a 32k budget. serde_json escapes strings a
//! byte at a time through a lookup table, which V8's profiler showed as the largest single
//! share of a warm `/v1/context` in the Worker (wasm has no SIMD here). Source code rarely
//! needs escaping except for quotes, backslashes and line breaks, so this looks at eight bytes
//! at a time for the next byte that does and copies the run before it whole. The output is
//! byte for byte what serde_json writes (a test checks it).

/// Bytes whose every lane is `b`.
const fn lanes(b: u8) -> u64 {
    u64::from_ne_bytes([b; 8])
}

const ONES: u64 = lanes(0x01);
const HIGHS: u64 = lanes(0x80);

/// Whether some byte of `w` is a quote, a backslash or a control character (below 0x20).
fn needs_escape(w: u64) -> bool {
    let below_space = w.wrapping_sub(lanes(0x20)) & !w & HIGHS;
    let quote = w ^ lanes(b'"');
    let backslash = w ^ lanes(b'\\');
    let quote = quote.wrapping_sub(ONES) & !quote & HIGHS;
    let backslash = backslash.wrapping_sub(ONES) & !backslash & HIGHS;
    below_space | quote | backslash != 0
}

/// Appends `text` to `out` as a JSON string literal, quotes included.
pub fn push_json_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + bytes.len() / 16 + 2);
    out.push(b'"');
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let w = u64::from_ne_bytes([
                word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
            ]);
            if !needs_escape(w) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ],
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escape);
        i += 1;
        run = i;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
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
