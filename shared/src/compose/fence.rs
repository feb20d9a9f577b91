//! The code fence each quoted block is wrapped in, and the language label it carries.

/// A code fence longer than any run of backticks in `text` (at least three).
///
/// Every block of a prompt is scanned for its fence on every call (about 130 KB at a 32k
/// budget), and a byte-at-a-time loop was 6% of a warm call's CPU natively. Source code has few
/// backticks: eight bytes without one are passed over at once (a word holding none ends any run
/// before it), and only words holding one are looked at byte by byte, so the fence is the same.
pub(super) fn fence_for(text: &str) -> String {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const TICKS: u64 = u64::from_le_bytes([b'`'; 8]);
    let mut longest = 0;
    let mut run = 0;
    let mut step = |b: u8| {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    };
    let mut words = text.as_bytes().chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]) ^ TICKS;
        // Some lane of `w` is zero, i.e. some byte is a backtick (exact for "some").
        if w.wrapping_sub(ONES) & !w & HIGHS == 0 {
            step(0);
        } else {
            word.iter().for_each(|&b| step(b));
        }
    }
    words.remainder().iter().for_each(|&b| step(b));
    "`".repeat((longest + 1).max(3))
}

pub(super) fn fence_language(label: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The fence as a byte-at-a-time scan finds it.
    fn fence_by_bytes(text: &str) -> String {
        let (mut longest, mut run) = (0, 0);
        for b in text.bytes() {
            run = if b == b'`' { run + 1 } else { 0 };
            longest = longest.max(run);
        }
        "`".repeat((longest + 1).max(3))
    }

    #[test]
    fn fence_for_matches_a_byte_scan() {
        for text in [
            "",
            "`",
            "no ticks at all in this line, none\n",
            "```rust\nfn f() {}\n```",
            "1234567````",
            "12345678````````x",
            "a`b``c```d````e`````",
            "´`é`ü```", // multi-byte characters beside backticks
        ] {
            assert_eq!(fence_for(text), fence_by_bytes(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn fence_for_matches_a_byte_scan_on_any_text(text in "[a`\n´]{0,64}") {
            proptest::prop_assert_eq!(fence_for(&text), fence_by_bytes(&text));
        }
    }
}
