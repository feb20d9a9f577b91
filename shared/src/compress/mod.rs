//! Compression of a piece's text before it goes into a prompt.
//!
//! `light` removes what a model reads past: blank lines and ordinary comments that fill whole
//! lines. Doc comments (`///`, `//!`, `/** */`, Python docstrings) stay, because they state what
//! the code is for; a comment after code on the same line stays, because cutting inside a line
//! needs the language's string rules to be safe. Lines are only ever removed, never changed, so
//! every kept line is still the repository's own text and the piece's line range still holds.
//! `medium` and `aggressive` are not built yet.

use serde::Serialize;

/// How much a piece's text may be reduced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// The text as indexed.
    #[default]
    None,
    /// Blank lines and whole-line comments removed.
    Light,
}

impl Compression {
    /// Parses a level name; `Err` carries the names that are available.
    pub fn from_name(name: &str) -> Result<Self, &'static str> {
        match name {
            "none" => Ok(Self::None),
            "light" => Ok(Self::Light),
            _ => Err("none, light (medium and aggressive are not available yet)"),
        }
    }

    /// The level's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Light => "light",
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
    let Some(syntax) = syntax(language) else {
        return text.to_string();
    };
    // Inside a multi-line string a "comment" or blank line is data; without each language's
    // string rules such text is left whole.
    if may_span_lines(text, language) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if in_block {
            if let Some(end) = t.find("*/") {
                in_block = false;
                // Code after the block's end on the same line is kept (the line whole).
                if !t[end + 2..].trim().is_empty() {
                    out.push_str(line);
                }
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if syntax.blocks && t.starts_with("/*") && !t.starts_with("/**") && !t.starts_with("/*!") {
            match t[2..].find("*/") {
                // A one-line block comment alone on its line.
                Some(end) if t[2 + end + 2..].trim().is_empty() => continue,
                Some(_) => {}
                None => {
                    in_block = true;
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
            continue;
        }
        out.push_str(line);
    }
    out
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
        for c in [Compression::None, Compression::Light] {
            assert_eq!(Compression::from_name(c.name()), Ok(c));
        }
        assert!(Compression::from_name("aggressive").is_err());
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
