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
        "python" | "shell" | "bash" | "ruby" | "toml" | "yaml" | "perl" | "r" => Some(Syntax {
            line: Some(("#", &["#!"])),
            blocks: false,
        }),
        "sql" | "lua" | "haskell" => Some(Syntax {
            line: Some(("--", &[])),
            blocks: false,
        }),
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
    let mut out = String::with_capacity(text.len());
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if in_block {
            if t.contains("*/") {
                in_block = false;
                // Code after the block's end on the same line is kept whole.
                if !t.ends_with("*/") {
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
