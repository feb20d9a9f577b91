//! Which language a file is, from its name.

use serde::{Deserialize, Serialize};

/// Languages ctxgate knows. Those with a grammar are chunked by syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// Rust.
    Rust,
    /// Python.
    Python,
    /// Go.
    Go,
    /// JavaScript (and JSX).
    JavaScript,
    /// TypeScript.
    TypeScript,
    /// TypeScript with JSX.
    Tsx,
    /// Java.
    Java,
    /// C.
    C,
    /// C++.
    Cpp,
    /// Markdown, cut at headings.
    Markdown,
    /// Anything else that is text: cut into line windows.
    Other,
}

impl Language {
    /// Guesses from a path's extension or name.
    pub fn from_path(path: &str) -> Self {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("rs") => Language::Rust,
            Some("py" | "pyi") => Language::Python,
            Some("go") => Language::Go,
            Some("js" | "mjs" | "cjs" | "jsx") => Language::JavaScript,
            Some("ts" | "mts" | "cts") => Language::TypeScript,
            Some("tsx") => Language::Tsx,
            Some("java") => Language::Java,
            Some("c" | "h") => Language::C,
            Some("cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp") => {
                Language::Cpp
            }
            Some("md" | "markdown" | "mdx") => Language::Markdown,
            _ => Language::Other,
        }
    }

    /// Whether a tree-sitter grammar is compiled in for it.
    pub fn has_grammar(self) -> bool {
        cfg!(feature = "syntax") && !matches!(self, Language::Markdown | Language::Other)
    }

    /// The label shown in provenance (`rust`, `typescript`...); other files are labelled by
    /// extension.
    pub fn label(self, path: &str) -> String {
        match self {
            Language::Rust => "rust".into(),
            Language::Python => "python".into(),
            Language::Go => "go".into(),
            Language::JavaScript => "javascript".into(),
            Language::TypeScript => "typescript".into(),
            Language::Tsx => "tsx".into(),
            Language::Java => "java".into(),
            Language::C => "c".into(),
            Language::Cpp => "cpp".into(),
            Language::Markdown => "markdown".into(),
            Language::Other => {
                let name = path.rsplit('/').next().unwrap_or(path);
                match name.rsplit_once('.') {
                    Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
                    _ => "text".into(),
                }
            }
        }
    }
}
