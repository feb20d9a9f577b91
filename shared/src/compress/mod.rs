//! Compression of a piece's text before it goes into a prompt.
//!
//! Three levels of reduction, each starting from `light`:
//! - `light` removes what a model reads past: blank lines and ordinary comments that fill whole
//!   lines. Doc comments (`///`, `//!`, `/** */`, Python docstrings) stay, because they state
//!   what the code is for; a comment after code on the same line stays, because cutting inside
//!   a line needs the language's string rules to be safe.
//! - `medium` also replaces the body of every function and method with one marker line in the
//!   language's comment syntax (`    // … 42 lines elided …`): signatures, doc comments, the
//!   closing brace, and everything outside functions (fields, imports, constants) stay.
//! - `aggressive` keeps, inside those bodies, only the key lines: lines naming a term of the
//!   request (its words, named symbols and error strings) and lines that leave the function
//!   (`return`, `raise`, `throw`, `panic!`, `Err(`); every run of other lines becomes a marker.
//!   The assembler gives it to the most relevant pieces and `medium` to the rest, so that a
//!   request at `aggressive` is never cut less than at `medium`.
//!
//! Lines are only ever removed or replaced by a marker, never edited, so every other line is the
//! repository's own text and the piece's line range still holds. Bodies are found by reading the
//! text ([`bodies`]), which works on the edge without grammars, for Rust, Go, Python, JavaScript,
//! TypeScript, Java, C, C++, C#, Kotlin, Swift, Scala, Dart and PHP; other text (Markdown,
//! configuration, languages not read here) gets `light` at the higher levels. Which pieces of a
//! request get which level is the assembler's decision (`crate::assemble`).

mod bodies;

use serde::Serialize;

use crate::intent::Entities;
use bodies::{Family, bodies};

/// How much a piece's text may be reduced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// The text as indexed.
    #[default]
    None,
    /// Blank lines and whole-line comments removed.
    Light,
    /// Light, and the bodies of lower-value functions elided (signatures kept).
    Medium,
    /// Light, and function bodies cut to their key lines.
    Aggressive,
}

impl Compression {
    /// The names of all levels, for error messages and documentation.
    pub const NAMES: &'static str = "none, light, medium, aggressive";

    /// Parses a level name; `Err` carries the names that are available.
    pub fn from_name(name: &str) -> Result<Self, &'static str> {
        match name {
            "none" => Ok(Self::None),
            "light" => Ok(Self::Light),
            "medium" => Ok(Self::Medium),
            "aggressive" => Ok(Self::Aggressive),
            _ => Err(Self::NAMES),
        }
    }

    /// The level's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Light => "light",
            Self::Medium => "medium",
            Self::Aggressive => "aggressive",
        }
    }
}

/// Whether a string literal may span lines in `text`: a line with an odd number of quotes,
/// triple quotes or backticks (escapes aside), a raw string, or a shell heredoc. Such text is
/// left whole, since a "comment" or blank line inside a string is data. Errs on the safe side.
fn may_span_lines(text: &str, language: &str) -> bool {
    let odd_line = text.lines().any(|line| {
        // Quotes and backticks outside escapes; a triple quote counts 3, so odd stays odd.
        let (mut quotes, mut ticks, mut escaped) = (0u32, 0u32, false);
        for c in line.chars() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quotes += 1,
                '`' => ticks += 1,
                _ => {}
            }
        }
        quotes % 2 == 1 || ticks % 2 == 1 || line.matches("'''").count() % 2 == 1
    });
    let heredoc = matches!(language, "shell" | "bash" | "ruby" | "perl") && text.contains("<<");
    odd_line || heredoc || text.contains("r#\"") || text.contains("R\"(")
}

/// Comment lines that are instructions to a tool, not prose (Go build constraints and
/// directives, lint and type-checker pragmas).
const DIRECTIVES: [&str; 6] = [
    "//go:",
    "// +build",
    "//+build",
    "//nolint",
    "# type:",
    "# noqa",
];

/// The comment syntax of a language label, as the chunker names languages.
struct Syntax {
    /// Whole-line comment prefix, and the prefixes of its doc forms (kept).
    line: Option<(&'static str, &'static [&'static str])>,
    /// Whether `/* */` blocks exist (`/**` and `/*!` are doc blocks, kept).
    blocks: bool,
}

fn syntax(language: &str) -> Option<Syntax> {
    let c_like = Syntax {
        line: Some(("//", &["///", "//!"])),
        blocks: true,
    };
    match language {
        "rust" | "go" | "javascript" | "typescript" | "tsx" | "java" | "c" | "cpp" | "csharp"
        | "kotlin" | "swift" | "scala" | "dart" | "php" => Some(c_like),
        "python" | "shell" | "bash" | "ruby" | "toml" | "perl" | "r" => Some(Syntax {
            line: Some(("#", &["#!"])),
            blocks: false,
        }),
        "sql" => Some(Syntax {
            line: Some(("--", &[])),
            blocks: false,
        }),
        // Languages whose comments can open blocks with a line-comment prefix (Lua's `--[[`,
        // Haddock's `-- |` docs) or whose `#` lines sit in block scalars (YAML) are left alone.
        _ => None,
    }
}

/// `text` with blank lines and whole-line ordinary comments removed. Text in a language whose
/// comment syntax is not known here (Markdown, plain text) is returned unchanged: its blank
/// lines can carry meaning.
pub fn light(text: &str, language: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let keep = light_keeps(&lines, text, language);
    lines
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(l, _)| *l)
        .collect()
}

/// Which of `lines` (the lines of `text`, newlines included) `light` keeps.
fn light_keeps(lines: &[&str], text: &str, language: &str) -> Vec<bool> {
    let mut keep = vec![true; lines.len()];
    let Some(syntax) = syntax(language) else {
        return keep;
    };
    // Inside a multi-line string a "comment" or blank line is data; without each language's
    // string rules such text is left whole.
    if may_span_lines(text, language) {
        return keep;
    }
    let mut in_block = false;
    for (line, keep) in lines.iter().zip(keep.iter_mut()) {
        let t = line.trim();
        if in_block {
            if let Some(end) = t.find("*/") {
                in_block = false;
                // Code after the block's end on the same line is kept (the line whole).
                *keep = !t[end + 2..].trim().is_empty();
            } else {
                *keep = false;
            }
            continue;
        }
        if t.is_empty() {
            *keep = false;
            continue;
        }
        if syntax.blocks && t.starts_with("/*") && !t.starts_with("/**") && !t.starts_with("/*!") {
            match t[2..].find("*/") {
                // A one-line block comment alone on its line.
                Some(end) if t[2 + end + 2..].trim().is_empty() => {
                    *keep = false;
                    continue;
                }
                Some(_) => {}
                None => {
                    in_block = true;
                    *keep = false;
                    continue;
                }
            }
        }
        if let Some((prefix, docs)) = syntax.line
            && t.starts_with(prefix)
            && !docs.iter().any(|d| t.starts_with(d))
            && !DIRECTIVES.iter().any(|d| t.starts_with(d))
            // A `\` at the end of a C-family line comment continues it onto the next line.
            && !t.ends_with('\\')
        {
            *keep = false;
        }
    }
    keep
}

/// A text cut down by [`medium`] or [`aggressive`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduced {
    /// The text sent.
    pub text: String,
    /// Function bodies that were cut.
    pub bodies: usize,
    /// Lines of the original replaced by markers.
    pub elided_lines: usize,
}

/// The words that make a line worth keeping under `aggressive`: the request's longer words,
/// the symbols it names (their last segment) and its error strings, all lower-cased.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyTerms {
    needles: Vec<String>,
}

/// Words too common to mark a line as relevant.
const COMMON_WORDS: &[&str] = &[
    "about", "after", "also", "been", "before", "could", "does", "doesn't", "each", "from", "have",
    "into", "like", "make", "more", "most", "must", "need", "only", "over", "should", "some",
    "than", "that", "then", "there", "these", "they", "this", "those", "when", "where", "which",
    "while", "will", "with", "without", "would", "what", "self", "true", "false", "none", "null",
    "return", "function", "class",
];

impl KeyTerms {
    /// The key terms of a request and the entities found in it.
    pub fn new(query: &str, entities: &Entities) -> Self {
        let mut needles: Vec<String> = Vec::new();
        let mut push = |s: String| {
            if !s.is_empty() && !needles.contains(&s) {
                needles.push(s);
            }
        };
        for w in query
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map(str::to_lowercase)
            .filter(|w| w.chars().count() >= 4 && !COMMON_WORDS.contains(&w.as_str()))
        {
            push(w);
        }
        for s in &entities.symbols {
            let last = s.rsplit([':', '.']).next().unwrap_or(s);
            if last.chars().count() >= 3 {
                push(last.to_lowercase());
            }
        }
        for s in &entities.strings {
            if s.chars().count() >= 4 {
                push(s.to_lowercase());
            }
        }
        Self { needles }
    }

    /// Whether `line` is a key line: it names a key term or leaves the function.
    fn is_key(&self, line: &str) -> bool {
        let t = line.trim_start();
        let leaves = ["return", "raise", "throw", "yield"].iter().any(|k| {
            t.strip_prefix(k)
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        }) || ["panic!(", "panic(", "bail!(", "Err(", "unreachable!("]
            .iter()
            .any(|k| t.contains(k));
        if leaves {
            return true;
        }
        let lower = line.to_lowercase();
        self.needles.iter().any(|n| lower.contains(n.as_str()))
    }
}

/// Minimum interior lines for a body to be elided under `medium`: one marker for one line saves
/// nothing.
const MIN_ELIDED: usize = 2;

/// `text` at `medium`: [`light`], and the interior of every function body of at least
/// [`MIN_ELIDED`] lines replaced by one marker. `None` when the language is not read here or no
/// body was elided (the caller falls back to `light`).
pub fn medium(text: &str, language: &str) -> Option<Reduced> {
    reduce(text, language, None)
}

/// `text` at `aggressive`: [`light`], and inside function bodies only the lines `keys` marks,
/// each run of other lines (two or more) replaced by a marker. `None` as for [`medium`].
pub fn aggressive(text: &str, language: &str, keys: &KeyTerms) -> Option<Reduced> {
    reduce(text, language, Some(keys))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Keep,
    Drop,
    Elide,
}

fn reduce(text: &str, language: &str, keys: Option<&KeyTerms>) -> Option<Reduced> {
    let family = Family::of(language)?;
    let found = bodies(text, family)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let light = light_keeps(&lines, text, language);
    let mut fate: Vec<Fate> = light
        .iter()
        .map(|&k| if k { Fate::Keep } else { Fate::Drop })
        .collect();
    let found: Vec<_> = found
        .into_iter()
        .filter(|b| b.end <= lines.len() && (keys.is_some() || b.end - b.start >= MIN_ELIDED))
        .collect();
    for b in &found {
        for i in b.start..b.end {
            let key = keys.is_some_and(|k| light[i] && k.is_key(lines[i]));
            fate[i] = if key { Fate::Keep } else { Fate::Elide };
        }
    }
    // A marker for a single line saves nothing: the line stays (or goes, as `light` decides).
    let mut i = 0;
    while i < fate.len() {
        let run = fate[i..].iter().take_while(|f| **f == Fate::Elide).count();
        if run == 1 {
            fate[i] = if light[i] { Fate::Keep } else { Fate::Drop };
        }
        i += run.max(1);
    }
    let cut = found
        .iter()
        .filter(|b| fate[b.start..b.end].contains(&Fate::Elide))
        .count();
    let comment = family.comment();
    let mut out = String::with_capacity(text.len());
    let mut elided_lines = 0;
    let mut i = 0;
    while i < lines.len() {
        match fate[i] {
            Fate::Keep => out.push_str(lines[i]),
            Fate::Drop => {}
            Fate::Elide => {
                let run = fate[i..].iter().take_while(|f| **f == Fate::Elide).count();
                let first = lines[i..i + run]
                    .iter()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or(&lines[i]);
                let indent = &first[..first.len() - first.trim_start().len()];
                out.push_str(indent);
                out.push_str(&format!("{comment} … {run} lines elided …\n"));
                elided_lines += run;
                i += run;
                continue;
            }
        }
        i += 1;
    }
    (elided_lines > 0).then_some(Reduced {
        text: out,
        bodies: cut,
        elided_lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rust_comments_and_blank_lines_go_doc_comments_stay() {
        let src = "/// Adds.\nfn add(a: u32) -> u32 {\n    // a note\n\n    /* block\n       more */\n    a + 1 // trailing stays\n}\n";
        assert_eq!(
            light(src, "rust"),
            "/// Adds.\nfn add(a: u32) -> u32 {\n    a + 1 // trailing stays\n}\n"
        );
    }

    #[test]
    fn python_keeps_shebang_and_strings() {
        let src = "#!/usr/bin/env python3\n# comment\nx = '# not a comment'\n\n\ndef f():\n    \"\"\"Doc.\"\"\"\n    return x\n";
        assert_eq!(
            light(src, "python"),
            "#!/usr/bin/env python3\nx = '# not a comment'\ndef f():\n    \"\"\"Doc.\"\"\"\n    return x\n"
        );
    }

    #[test]
    fn code_after_a_block_end_is_kept() {
        let src = "/* start\n end */ int x = 1;\nint y;\n";
        assert_eq!(light(src, "c"), " end */ int x = 1;\nint y;\n");
        let src = "/* a\n end */ x = 1; /* n */\ny;\n";
        assert_eq!(light(src, "c"), " end */ x = 1; /* n */\ny;\n");
    }

    #[test]
    fn text_that_may_hold_multi_line_strings_is_left_whole() {
        for (src, lang) in [
            ("let s = `\n// inside\n`;\n", "javascript"),
            ("s = \"\"\"\n# inside\n\n\"\"\"\n", "python"),
            ("let s = r#\"\n// inside\n\"#;\n", "rust"),
            ("cat <<EOF\n# inside\nEOF\n", "shell"),
            ("let s = \"a\n// inside\";\n", "rust"),
        ] {
            assert_eq!(light(src, lang), src, "{lang}");
        }
    }

    #[test]
    fn directives_and_continued_comments_stay() {
        let src = "//go:build linux\n// plain\npackage x\n";
        assert_eq!(light(src, "go"), "//go:build linux\npackage x\n");
        let src = "// continued \\\nint x;\n";
        assert_eq!(light(src, "c"), src);
    }

    #[test]
    fn unknown_languages_are_untouched() {
        let src = "# Title\n\nSome text.\n";
        assert_eq!(light(src, "markdown"), src);
    }

    #[test]
    fn names_round_trip() {
        for c in [
            Compression::None,
            Compression::Light,
            Compression::Medium,
            Compression::Aggressive,
        ] {
            assert_eq!(Compression::from_name(c.name()), Ok(c));
        }
        assert!(Compression::from_name("extreme").is_err());
    }

    fn keys(query: &str) -> KeyTerms {
        KeyTerms::new(query, &crate::intent::entities(query))
    }

    #[test]
    fn medium_rust_keeps_signatures_and_items_outside_functions() {
        let src = "/// A store.\npub struct Store {\n    items: Vec<u32>,\n}\n\nimpl Store {\n    /// Adds one.\n    pub fn add(&mut self, x: u32) -> usize {\n        // remember it\n        self.items.push(x);\n        self.items.len()\n    }\n\n    fn one(&self) -> u32 {\n        1\n    }\n}\n";
        let r = medium(src, "rust").unwrap();
        assert_eq!(
            r.text,
            "/// A store.\npub struct Store {\n    items: Vec<u32>,\n}\nimpl Store {\n    /// Adds one.\n    pub fn add(&mut self, x: u32) -> usize {\n        // … 3 lines elided …\n    }\n    fn one(&self) -> u32 {\n        1\n    }\n}\n"
        );
        assert_eq!((r.bodies, r.elided_lines), (1, 3));
    }

    #[test]
    fn medium_python_uses_hash_markers_and_keeps_docstrings() {
        let src = "class Client:\n    timeout = 5\n\n    def get(self, url):\n        \"\"\"Fetches url.\"\"\"\n        # retry loop\n        r = self.session.get(url)\n        r.raise_for_status()\n        return r.json()\n";
        assert_eq!(
            medium(src, "python").unwrap().text,
            "class Client:\n    timeout = 5\n    def get(self, url):\n        \"\"\"Fetches url.\"\"\"\n        # … 4 lines elided …\n"
        );
    }

    #[test]
    fn medium_go_and_typescript() {
        let go = "// Run starts the server.\nfunc (s *Server) Run() error {\n\tln, err := net.Listen(\"tcp\", s.addr)\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn s.serve(ln)\n}\n";
        assert_eq!(
            medium(go, "go").unwrap().text,
            // Go's doc comments are plain `//` lines: `light` drops them like any comment.
            "func (s *Server) Run() error {\n\t// … 5 lines elided …\n}\n"
        );
        let ts = "export class Cache {\n  private map = new Map<string, string>();\n  get(key: string): string | undefined {\n    const hit = this.map.get(key);\n    return hit;\n  }\n}\n";
        assert_eq!(
            medium(ts, "typescript").unwrap().text,
            "export class Cache {\n  private map = new Map<string, string>();\n  get(key: string): string | undefined {\n    // … 2 lines elided …\n  }\n}\n"
        );
        let js =
            "function load(path) {\n  const text = read(path);\n  return JSON.parse(text);\n}\n";
        assert_eq!(
            medium(js, "javascript").unwrap().text,
            "function load(path) {\n  // … 2 lines elided …\n}\n"
        );
    }

    #[test]
    fn aggressive_keeps_key_lines_and_exits() {
        let src = "fn load(path: &str) -> Result<Config, Error> {\n    let text = read(path)?;\n    let lines = text.lines();\n    let mut n = 0;\n    for l in lines {\n        n += 1;\n    }\n    if n == 0 {\n        return Err(Error::Empty);\n    }\n    let cfg = parse_config(&text);\n    validate(&cfg);\n    check(&cfg);\n    Ok(cfg)\n}\n";
        let r = aggressive(src, "rust", &keys("why does `parse_config` fail")).unwrap();
        assert_eq!(
            r.text,
            "fn load(path: &str) -> Result<Config, Error> {\n    // … 7 lines elided …\n        return Err(Error::Empty);\n    }\n    let cfg = parse_config(&text);\n    // … 3 lines elided …\n}\n"
        );
        let py = "def handler(event):\n    body = event['body']\n    data = json.loads(body)\n    if 'user' not in data:\n        raise KeyError('user missing')\n    user = data['user']\n    save(user)\n    log(user)\n";
        assert_eq!(
            aggressive(py, "python", &keys("user missing"))
                .unwrap()
                .text,
            "def handler(event):\n    # … 2 lines elided …\n    if 'user' not in data:\n        raise KeyError('user missing')\n    user = data['user']\n    save(user)\n    log(user)\n"
        );
    }

    #[test]
    fn text_without_functions_or_language_falls_back() {
        assert_eq!(medium("# Title\n\nSome text.\n", "markdown"), None);
        assert_eq!(medium("const X: u32 = 1;\n", "rust"), None);
        assert_eq!(aggressive("a = 1\n", "python", &KeyTerms::default()), None);
    }

    proptest! {
        /// Output lines are input lines in order, or markers.
        #[test]
        fn medium_and_aggressive_keep_lines_or_mark(lines in proptest::collection::vec("[ a-z(){};\"'/]{0,14}", 0..30), lang in prop::sample::select(vec!["rust", "python", "go", "javascript", "java"])) {
            let src: String = lines.iter().map(|l| format!("{l}\n")).collect();
            for out in [medium(&src, lang), aggressive(&src, lang, &keys("alpha"))].into_iter().flatten() {
                let mut rest = src.split_inclusive('\n');
                for kept in out.text.split_inclusive('\n') {
                    if kept.contains(" lines elided …") {
                        continue;
                    }
                    prop_assert!(rest.any(|l| l == kept), "{kept:?} is not a line of the input in order");
                }
            }
        }
    }

    proptest! {
        /// Only whole lines are removed: the result is a subsequence of the input's lines.
        #[test]
        fn removes_whole_lines_only(lines in proptest::collection::vec("[ a-z/*#\"!{};]{0,12}", 0..30)) {
            let src: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let out = light(&src, "rust");
            let mut rest = src.split_inclusive('\n');
            for kept in out.split_inclusive('\n') {
                prop_assert!(rest.any(|l| l == kept), "{kept:?} is not a line of the input in order");
            }
        }
    }
}
