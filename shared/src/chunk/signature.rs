//! The signature of a definition: its doc comments and declaration, without the body.
//!
//! A language-neutral reading of a chunk's first lines: comment, attribute and decorator lines,
//! then declaration lines up to the first that opens a body (`{`), ends a Python header (`:`) or
//! ends a declaration (`;`). Used when a budget is too small for bodies.

/// Byte length of the signature prefix of `text`, or `None` when there is no shorter signature.
pub fn signature_len(text: &str) -> Option<usize> {
    let mut end = 0;
    let mut declaration_lines = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        end += line.len();
        if declaration_lines == 0 && is_preamble(t) {
            continue;
        }
        if t.is_empty() {
            continue;
        }
        declaration_lines += 1;
        if t.ends_with('{')
            || t.contains('{')
            || t.ends_with(':')
            || t.ends_with(';')
            || t.ends_with("=>")
        {
            break;
        }
        if declaration_lines >= 8 {
            break;
        }
    }
    (declaration_lines > 0 && end < text.trim_end().len()).then_some(end)
}

fn is_preamble(t: &str) -> bool {
    t.starts_with("//")
        || t.starts_with("/*")
        || t.starts_with('*')
        || t.starts_with("#[")
        || t.starts_with("#!")
        || (t.starts_with('#') && !t.starts_with("#include") && !t.starts_with("#define"))
        || t.starts_with('@')
        || t.starts_with("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(text: &str) -> Option<&str> {
        signature_len(text).map(|n| &text[..n])
    }

    #[test]
    fn signatures() {
        assert_eq!(
            sig(
                "/// Adds.\n#[inline]\npub fn add(a: i32,\n           b: i32) -> i32 {\n    a + b\n}\n"
            ),
            Some("/// Adds.\n#[inline]\npub fn add(a: i32,\n           b: i32) -> i32 {\n")
        );
        assert_eq!(
            sig("@decorator\ndef f(x):\n    return x\n"),
            Some("@decorator\ndef f(x):\n")
        );
        assert_eq!(
            sig("func Run() int {\n\treturn 1\n}\n"),
            Some("func Run() int {\n")
        );
        assert_eq!(sig("fn f() {}\n"), None, "nothing shorter than the whole");
        assert_eq!(sig("// only a comment\n"), None);
    }
}
