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

/// The line of `text` that declares what it holds: the first non-blank line past the leading
/// comments, attributes and decorators, or the first non-blank line when there is no other (a
/// Markdown section's heading reads as a comment here). Its index among the lines of `text`
/// and its byte range without the line ending; `None` for a blank text.
pub fn declaration_line(text: &str) -> Option<(u32, std::ops::Range<usize>)> {
    let mut first = None;
    let mut at = 0;
    for (k, line) in text.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches(['\n', '\r']);
        let range = at..at + content.len();
        at += line.len();
        let t = content.trim();
        if t.is_empty() {
            continue;
        }
        let found = (k as u32, range);
        if !is_preamble(t) {
            return Some(found);
        }
        first.get_or_insert(found);
    }
    first
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

    fn declared(text: &str) -> Option<(u32, &str)> {
        declaration_line(text).map(|(k, r)| (k, &text[r]))
    }

    #[test]
    fn declaration_lines() {
        assert_eq!(
            declared("\n/// Adds.\n#[inline]\npub fn add(a: i32) -> i32 {\n    a\n}\n"),
            Some((3, "pub fn add(a: i32) -> i32 {"))
        );
        assert_eq!(
            declared("@app.route('/')\r\ndef index():\r\n    pass\r\n"),
            Some((1, "def index():"))
        );
        assert_eq!(
            declared("\n## Options\n\nText.\n"),
            Some((3, "Text.")),
            "a heading reads as a comment; the first other line declares"
        );
        assert_eq!(declared("// a\n// b\n"), Some((0, "// a")));
        assert_eq!(declared("\n  \n"), None);
    }
}
