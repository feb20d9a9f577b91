//! Where the bodies of functions and methods are in a piece's text, by line.
//!
//! This runs at the edge (wasm32, where no grammar is compiled in), so it reads text, not a
//! syntax tree. Brace languages are scanned character by character with their strings, comments
//! and character literals skipped, and a `{` opens a function body when the code before it (back
//! to the previous `;`, `{` or `}`) is a function header: the language's keyword (`fn`, `func`,
//! `function`, `fun`, `def`), an arrow (`=>`), or — where functions have no keyword (C, C++,
//! Java, C#, JS/TS methods) — `name(...)` with no control keyword, `new` or `=` before the
//! parenthesis. Python bodies are the lines indented under a `def` header. Only outermost
//! bodies are reported: a function nested in a body goes with it, and the methods of a class,
//! impl or namespace are bodies of their own.
//!
//! Anything unbalanced (a chunk cut inside a definition) simply yields no body for that brace.

/// The interior lines of one function body: `start..end` are 0-based line indices of the text;
/// the header and (in brace languages) the closing line are outside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Body {
    /// First interior line.
    pub start: usize,
    /// One past the last interior line.
    pub end: usize,
}

/// How a language writes functions, for the languages this module reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// Braces, with a function keyword only (Rust `fn`, Go `func`): no shape rule.
    KeywordOnly(&'static str),
    /// Braces, with an optional keyword and the `name(...) {` shape.
    Braces(Option<&'static str>),
    /// Indentation (Python).
    Indent,
}

impl Family {
    /// The family of a language label, or `None` for languages not read here.
    pub(crate) fn of(language: &str) -> Option<Self> {
        Some(match language {
            "rust" => Family::KeywordOnly("fn"),
            "go" => Family::KeywordOnly("func"),
            "javascript" | "typescript" | "tsx" | "php" => Family::Braces(Some("function")),
            "kotlin" => Family::Braces(Some("fun")),
            "swift" => Family::Braces(Some("func")),
            "scala" => Family::Braces(Some("def")),
            "java" | "c" | "cpp" | "csharp" | "dart" => Family::Braces(None),
            "python" => Family::Indent,
            _ => return None,
        })
    }

    /// The whole-line comment prefix used for elision markers.
    pub(crate) fn comment(self) -> &'static str {
        match self {
            Family::Indent => "#",
            _ => "//",
        }
    }
}

/// The function bodies of `text`, in order and disjoint; `None` when the text holds syntax this
/// reader does not model safely (C++ raw strings).
pub(crate) fn bodies(text: &str, family: Family) -> Option<Vec<Body>> {
    match family {
        Family::Indent => Some(python_bodies(text)),
        _ => brace_bodies(text, family),
    }
}

/// Words that make `name(...) {` a statement, a call or an expression, not a definition.
const NOT_A_DEFINITION: &[&str] = &[
    "if",
    "else",
    "for",
    "while",
    "switch",
    "catch",
    "do",
    "try",
    "finally",
    "synchronized",
    "return",
    "using",
    "lock",
    "foreach",
    "with",
    "when",
    "match",
    "loop",
    "case",
    "select",
    "defer",
    "go",
    "guard",
    "throw",
    "new",
    "await",
    "yield",
    "sizeof",
    "typeof",
    "elif",
    "unless",
    "until",
];

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
}

/// Whether the code before a `{` (comments removed, strings emptied) declares a function.
fn is_function_header(header: &str, family: Family) -> bool {
    let h = header.trim();
    if h.is_empty() {
        return false;
    }
    let keyword = match family {
        Family::KeywordOnly(k) => return words(h).any(|w| w == k),
        Family::Braces(k) => k,
        Family::Indent => return false,
    };
    if keyword.is_some_and(|k| words(h).any(|w| w == k)) || h.ends_with("=>") {
        return true;
    }
    let Some(open) = h.find('(') else {
        return false;
    };
    let before = h[..open].trim_end();
    let named = before
        .chars()
        .last()
        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '>');
    named
        && !before.contains('=')
        && !words(before).any(|w| NOT_A_DEFINITION.contains(&w))
        && h.ends_with(|c: char| {
            c.is_alphanumeric() || c == ')' || c == '_' || c == '>' || c == ']'
        })
}

/// Brace languages: a character scan with strings and comments skipped.
fn brace_bodies(text: &str, family: Family) -> Option<Vec<Body>> {
    if matches!(family, Family::Braces(None)) && text.contains("R\"") {
        return None;
    }
    let rust = family == Family::KeywordOnly("fn");
    let backticks = matches!(
        family,
        Family::KeywordOnly("func") | Family::Braces(Some("function"))
    );
    let mut cur = Cursor {
        chars: text.chars().collect(),
        i: 0,
        line: 0,
    };
    let mut out = Vec::new();
    // Open braces: (line of the `{`, whether it opens an outermost function body).
    let mut stack: Vec<(usize, bool)> = Vec::new();
    let mut inside_function = 0usize;
    let mut header = String::new();
    let n = cur.chars.len();
    while cur.i < n {
        if let Some(stands_for) = cur.skip_non_code(rust, backticks) {
            header.push_str(stands_for);
            continue;
        }
        let c = cur.chars[cur.i];
        match c {
            '\n' => {
                cur.line += 1;
                header.push(' ');
            }
            '{' => {
                let opens = inside_function == 0 && is_function_header(&header, family);
                // Depth inside an outermost function body (0 outside any).
                if opens || inside_function > 0 {
                    inside_function += 1;
                }
                stack.push((cur.line, opens));
                header.clear();
            }
            '}' => {
                if let Some((open, was_function)) = stack.pop() {
                    inside_function = inside_function.saturating_sub(1);
                    if was_function && cur.line > open + 1 {
                        out.push(Body {
                            start: open + 1,
                            end: cur.line,
                        });
                    }
                }
                header.clear();
            }
            ';' => header.clear(),
            _ => header.push(c),
        }
        cur.i += 1;
    }
    out.sort_by_key(|b| b.start);
    Some(out)
}

/// A position in a brace language's text, and its line.
struct Cursor {
    chars: Vec<char>,
    i: usize,
    line: usize,
}

impl Cursor {
    /// Skips the comment, string or character literal that starts here, if one does, and says
    /// what stands for it in a header (nothing for a comment, empty quotes for a literal).
    fn skip_non_code(&mut self, rust: bool, backticks: bool) -> Option<&'static str> {
        let (i, n) = (self.i, self.chars.len());
        let c = self.chars[i];
        let next = self.chars.get(i + 1).copied();
        match c {
            '/' if next == Some('/') => {
                while self.i < n && self.chars[self.i] != '\n' {
                    self.i += 1;
                }
                Some("")
            }
            '/' if next == Some('*') => {
                self.i += 2;
                self.skip_raw(&['*', '/']);
                Some("")
            }
            '"' if self.chars[i..].starts_with(&['"', '"', '"']) => {
                self.i += 3;
                // Triple quotes hold no escapes that matter here.
                self.skip_raw(&['"', '"', '"']);
                Some("\"\"")
            }
            '"' => {
                self.i += 1;
                self.skip(&['"'], rust);
                Some("\"\"")
            }
            'r' if rust
                && (next == Some('"') || next == Some('#'))
                && !self
                    .chars
                    .get(i.wrapping_sub(1))
                    .is_some_and(|p| p.is_alphanumeric() || *p == '_') =>
            {
                // r"..." or r#"..."#: no escapes, ends at `"` and as many `#`.
                let hashes = self.chars[i + 1..]
                    .iter()
                    .take_while(|&&h| h == '#')
                    .count();
                if self.chars.get(i + 1 + hashes) != Some(&'"') {
                    return None;
                }
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                self.i += 2 + hashes;
                self.skip_raw(&close);
                Some("\"\"")
            }
            '`' if backticks => {
                self.i += 1;
                self.skip(&['`'], true);
                Some("\"\"")
            }
            '\'' if rust => {
                // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a), which has no close.
                if next == Some('\\') {
                    self.i += 1;
                    self.skip(&['\''], false);
                } else if self.chars.get(i + 2) == Some(&'\'') {
                    self.i += 3;
                } else {
                    self.i += 1;
                }
                Some("''")
            }
            '\'' => {
                self.i += 1;
                self.skip(&['\''], false);
                Some("''")
            }
            _ => None,
        }
    }

    /// Skips to just past `close` (honouring backslash escapes), counting newlines; a string
    /// that may not span lines also stops at the end of its line.
    fn skip(&mut self, close: &[char], multiline: bool) {
        let n = self.chars.len();
        while self.i < n {
            let c = self.chars[self.i];
            if c == '\\' {
                if self.chars.get(self.i + 1) == Some(&'\n') {
                    self.line += 1;
                }
                self.i += 2;
                continue;
            }
            if c == '\n' {
                self.line += 1;
                if !multiline {
                    self.i += 1;
                    return;
                }
            }
            if self.chars[self.i..].starts_with(close) {
                self.i += close.len();
                return;
            }
            self.i += 1;
        }
    }

    /// Skips to just past `close`, with no escapes, counting newlines.
    fn skip_raw(&mut self, close: &[char]) {
        let n = self.chars.len();
        while self.i < n && !self.chars[self.i..].starts_with(close) {
            if self.chars[self.i] == '\n' {
                self.line += 1;
            }
            self.i += 1;
        }
        self.i += close.len();
    }
}

/// The code of a Python line without its trailing comment (quotes on the line honoured).
fn python_code(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => return &line[..i],
            _ => {}
        }
    }
    line
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The triple-quote string a line leaves open, given the one open before it.
fn python_string_after(line: &str, open: Option<&'static str>) -> Option<&'static str> {
    let mut open = open;
    let mut rest = line;
    loop {
        match open {
            Some(d) => match rest.find(d) {
                Some(at) => {
                    rest = &rest[at + 3..];
                    open = None;
                }
                None => return open,
            },
            None => {
                let code = python_code(rest);
                let first = ["\"\"\"", "'''"]
                    .into_iter()
                    .filter_map(|d| code.find(d).map(|at| (at, d)))
                    .min();
                match first {
                    Some((at, d)) => {
                        rest = &rest[at + 3..];
                        open = Some(d);
                    }
                    None => return None,
                }
            }
        }
    }
}

/// Python: a `def` header (up to the line whose brackets balance and which ends with `:`), and
/// the lines indented deeper than it. A one-line docstring right under the header stays outside
/// the body, as a doc comment does in brace languages.
fn python_bodies(text: &str) -> Vec<Body> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut string: Option<&'static str> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if string.is_some() {
            string = python_string_after(line, string);
            i += 1;
            continue;
        }
        let t = line.trim_start();
        if !(t.starts_with("def ") || t.starts_with("async def ")) {
            string = python_string_after(line, None);
            i += 1;
            continue;
        }
        // The header: brackets balanced and a final `:`.
        let mut depth = 0i32;
        let mut end = None;
        for (j, l) in lines.iter().enumerate().skip(i).take(40) {
            let code = python_code(l).trim_end();
            for c in code.chars() {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
            }
            if depth <= 0 {
                end = code.ends_with(':').then_some(j);
                break;
            }
        }
        let Some(header_end) = end else {
            i += 1;
            continue;
        };
        let indent = indent_of(line);
        let mut start = header_end + 1;
        if let Some(doc) = lines.get(start) {
            let d = doc
                .trim_start()
                .trim_start_matches(['r', 'u', 'b', 'R', 'U', 'B']);
            let one_line = ["\"\"\"", "'''"]
                .iter()
                .any(|q| d.starts_with(q) && d.matches(q).count() >= 2);
            if one_line && indent_of(doc) > indent {
                start += 1;
            }
        }
        let mut last = None;
        let mut k = header_end + 1;
        let mut inner: Option<&'static str> = None;
        while k < lines.len() {
            let l = lines[k];
            if inner.is_none() && !l.trim().is_empty() && indent_of(l) <= indent {
                break;
            }
            inner = python_string_after(l, inner);
            if !l.trim().is_empty() {
                last = Some(k);
            }
            k += 1;
        }
        if let Some(last) = last
            && last >= start
        {
            out.push(Body {
                start,
                end: last + 1,
            });
        }
        i = last.map_or(header_end + 1, |l| l + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body lines of `text`, joined.
    fn body_lines(text: &str, language: &str) -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let family = Family::of(language).unwrap();
        bodies(text, family)
            .unwrap()
            .iter()
            .map(|b| lines[b.start..b.end].join("\n"))
            .collect()
    }

    #[test]
    fn rust_functions_and_methods_not_impls() {
        let src = "impl Foo {\n    /// Doc.\n    pub fn a(&self) -> u32 {\n        let s = \"}\";\n        let c = '{';\n        1\n    }\n    fn b<'a>(x: &'a str) {\n        if x.is_empty() {\n            return;\n        }\n    }\n}\n";
        assert_eq!(
            body_lines(src, "rust"),
            [
                "        let s = \"}\";\n        let c = '{';\n        1",
                "        if x.is_empty() {\n            return;\n        }"
            ]
        );
    }

    #[test]
    fn rust_raw_strings_and_one_liners() {
        let src = "fn a() -> &'static str {\n    r#\"{ \"}\" \"#\n}\nfn b() { 1 }\n";
        assert_eq!(body_lines(src, "rust"), ["    r#\"{ \"}\" \"#"]);
    }

    #[test]
    fn go_functions_with_receivers() {
        let src = "func (s *Server) Run(ctx context.Context) error {\n\tmsg := `}`\n\treturn nil\n}\n\ntype T struct {\n\tA int\n}\n";
        assert_eq!(body_lines(src, "go"), ["\tmsg := `}`\n\treturn nil"]);
    }

    #[test]
    fn javascript_functions_methods_and_arrows() {
        let src = "class A {\n  render(x) {\n    if (x) {\n      return 1;\n    }\n    return 2;\n  }\n}\nconst f = async (a) => {\n  return a;\n};\nfunction g() {\n  return '}';\n}\nif (ready) {\n  go();\n  go();\n}\n";
        assert_eq!(
            body_lines(src, "javascript"),
            [
                "    if (x) {\n      return 1;\n    }\n    return 2;",
                "  return a;",
                "  return '}';"
            ]
        );
    }

    #[test]
    fn typescript_methods_with_types() {
        let src = "export class Store {\n  private items: Map<string, number> = new Map();\n  get(key: string): number | undefined {\n    const v = this.items.get(key);\n    return v;\n  }\n}\n";
        assert_eq!(
            body_lines(src, "typescript"),
            ["    const v = this.items.get(key);\n    return v;"]
        );
    }

    #[test]
    fn java_and_c_methods_not_control_blocks() {
        let src = "public class A {\n  @Override\n  public int f(int x) throws IOException {\n    for (int i = 0; i < x; i++) {\n      x++;\n    }\n    return x;\n  }\n  Runnable r = () -> {\n    run();\n  };\n}\n";
        assert_eq!(
            body_lines(src, "java"),
            ["    for (int i = 0; i < x; i++) {\n      x++;\n    }\n    return x;"]
        );
        let c = "static int\nmain(int argc, char **argv)\n{\n    int a[] = {1, 2};\n    return a[0];\n}\nstruct s {\n    int x;\n};\n";
        assert_eq!(
            body_lines(c, "c"),
            ["    int a[] = {1, 2};\n    return a[0];"]
        );
    }

    #[test]
    fn python_defs_keep_one_line_docstrings() {
        let src = "class A:\n    def f(self, x):\n        \"\"\"Doc.\"\"\"\n        y = x\n\n        return y\n\n    async def g(\n        self,\n    ) -> int:\n        s = \"\"\"\nnot code:\n\"\"\"\n        return 1\n\ndef h(): return 2\nx = 1\n";
        assert_eq!(
            body_lines(src, "python"),
            [
                "        y = x\n\n        return y",
                "        s = \"\"\"\nnot code:\n\"\"\"\n        return 1"
            ]
        );
    }

    #[test]
    fn unbalanced_text_yields_what_closes() {
        let src = "fn a() {\n    x();\n    y();\n";
        assert!(body_lines(src, "rust").is_empty());
        let src = "    }\n}\nfn b() {\n    x();\n    y();\n}\n";
        assert_eq!(body_lines(src, "rust"), ["    x();\n    y();"]);
    }
}
