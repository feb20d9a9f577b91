//! The extractive summary of one file: what it says it is, and what it exports.
//!
//! Read line by line, per language, without a parser: the leading doc comment (Rust `//!`, a
//! Python module docstring, the first comment block of C-family and Go files that is not a
//! license, a Markdown file's first paragraph), then the declarations a user of the file can
//! reach (Rust `pub` items, Python names without a leading underscore, Go capitalised names,
//! JavaScript/TypeScript `export`s, Java `public` members, C/C++ top-level declarations,
//! Markdown headings). Lines are enough here because only declarations' first lines are kept,
//! and a summary must not depend on chunking settings.

use crate::chunk::{Language, signature_len};

use super::{cap, first_sentence};

/// Longest doc head kept, in bytes.
const DOC_BYTES: usize = 400;
/// Most declarations listed.
const MAX_DECLARATIONS: usize = 40;
/// Longest declaration line kept, in bytes.
const DECLARATION_BYTES: usize = 160;
/// Most bytes of declarations listed.
const DECLARATIONS_BYTES: usize = 2_400;
/// Longest one-line description, in bytes.
const LINE_BYTES: usize = 120;

/// A file's extractive summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extract {
    /// One line for its directory's summary.
    pub line: String,
    /// The summary: the doc head, a blank line, one declaration a line.
    pub text: String,
}

/// Summarizes `text`, the contents of the file at `path` in `language`.
pub fn extract(path: &str, language: Language, text: &str) -> Extract {
    let doc = doc_head(language, text);
    let decls = declarations(language, text);
    let mut out = String::new();
    if let Some(d) = &doc {
        out.push_str(d);
        out.push('\n');
    }
    let mut bytes = 0;
    let mut shown = 0;
    for d in &decls {
        if shown == MAX_DECLARATIONS || bytes + d.text.len() > DECLARATIONS_BYTES {
            break;
        }
        if shown == 0 && doc.is_some() {
            out.push('\n');
        }
        out.push_str(&d.text);
        out.push('\n');
        bytes += d.text.len() + 1;
        shown += 1;
    }
    if shown < decls.len() {
        out.push_str(&format!("… and {} more\n", decls.len() - shown));
    }
    if out.is_empty() {
        out = first_lines(text);
    }
    let names: Vec<&str> = decls
        .iter()
        .filter(|d| !d.nested)
        .filter_map(|d| d.name.as_deref())
        .take(5)
        .collect();
    let line = match (&doc, names.is_empty()) {
        (Some(d), _) => first_sentence(d, LINE_BYTES),
        (None, false) => cap(&format!("defines {}", names.join(", ")), LINE_BYTES),
        (None, true) => {
            let first = first_lines(text);
            cap(first.lines().next().unwrap_or("").trim(), LINE_BYTES)
        }
    };
    let line = if line.is_empty() {
        format!("({})", language.label(path))
    } else {
        line
    };
    Extract { line, text: out }
}

/// The first non-empty lines, for files with neither a doc comment nor declarations.
fn first_lines(text: &str) -> String {
    let mut out = String::new();
    for l in text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(3)
    {
        out.push_str(&cap(l, 100));
        out.push('\n');
    }
    out
}

/// A declaration a user of the file can reach.
struct Declaration {
    /// Its first line(s), joined and capped.
    text: String,
    /// The name it defines, when it could be read.
    name: Option<String>,
    /// Whether it sits inside another (a method), shown indented.
    nested: bool,
}

fn is_license(block: &str) -> bool {
    let lower = block.to_ascii_lowercase();
    [
        "copyright",
        "spdx-license",
        "licensed under",
        "all rights reserved",
        "license for the",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The first paragraph of the file's own documentation, capped.
fn doc_head(language: Language, text: &str) -> Option<String> {
    let blocks = match language {
        Language::Markdown => return markdown_head(text),
        Language::Python => {
            if let Some(d) = python_docstring(text) {
                return paragraph(&d);
            }
            leading_comments(text, &["#"], false)
        }
        Language::Rust => leading_comments(text, &["//!"], true),
        Language::Go
        | Language::JavaScript
        | Language::TypeScript
        | Language::Tsx
        | Language::Java
        | Language::C
        | Language::Cpp => leading_comments(text, &["//"], true),
        Language::Other => leading_comments(text, &["#", "//", "--"], true),
    };
    blocks
        .into_iter()
        .filter(|b| !is_license(b))
        .find_map(|b| paragraph(&b))
}

/// The first paragraph of `block`, flattened to one line and capped.
fn paragraph(block: &str) -> Option<String> {
    let para: Vec<&str> = block
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let flat = para.join(" ");
    let flat = flat.trim();
    (!flat.is_empty()).then(|| cap(flat, DOC_BYTES))
}

/// The comment blocks at the top of the file, before any code, markers stripped. Rust keeps
/// only inner doc comments (`//!`, `/*!`): an outer one documents the first item, not the file.
fn leading_comments(text: &str, prefixes: &[&str], c_blocks: bool) -> Vec<String> {
    let rust_inner = prefixes == ["//!"];
    let mut blocks = Vec::new();
    let mut current = String::new();
    let mut lines = text.lines().peekable();
    let mut first = true;
    while let Some(line) = lines.next() {
        let t = line.trim();
        if first && t.starts_with("#!") && !t.starts_with("#![") {
            first = false;
            continue;
        }
        first = false;
        if t.is_empty() {
            if !current.is_empty() {
                blocks.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some(p) = prefixes.iter().find(|p| t.starts_with(**p)) {
            // `///` and `//!` are not `//` comments of a C-family file's head for Rust only.
            let rest = t[p.len()..].strip_prefix(' ').unwrap_or(&t[p.len()..]);
            current.push_str(rest);
            current.push('\n');
            continue;
        }
        let opens = if rust_inner {
            t.starts_with("/*!")
        } else {
            c_blocks && t.starts_with("/*")
        };
        if opens {
            if !current.is_empty() {
                blocks.push(std::mem::take(&mut current));
            }
            let mut body = String::new();
            let mut l = t
                .trim_start_matches("/*")
                .trim_start_matches(['*', '!'])
                .to_string();
            loop {
                let done = l.contains("*/");
                let part = l.split("*/").next().unwrap_or("");
                let part = part.trim().trim_start_matches('*').trim();
                body.push_str(part);
                body.push('\n');
                if done {
                    break;
                }
                match lines.next() {
                    Some(next) => l = next.to_string(),
                    None => break,
                }
            }
            blocks.push(body);
            continue;
        }
        // Rust attributes (`#![...]`) and C-family preprocessor lines may precede the doc.
        if t.starts_with("#![") || (rust_inner && t.starts_with("//")) {
            continue;
        }
        break;
    }
    if !current.is_empty() {
        blocks.push(current);
    }
    blocks
}

/// A Python module docstring: the first statement, when it is a string literal.
fn python_docstring(text: &str) -> Option<String> {
    let mut rest = text;
    loop {
        let t = rest.trim_start();
        if t.starts_with('#') {
            rest = t.split_once('\n').map_or("", |(_, r)| r);
            continue;
        }
        rest = t;
        break;
    }
    let rest = rest.trim_start_matches(['r', 'R', 'u', 'U']);
    let quote = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|q| rest.starts_with(q))?;
    let body = &rest[quote.len()..];
    let end = body.find(quote)?;
    Some(body[..end].to_string())
}

/// A Markdown file's head: its first paragraph of prose (headings, badges and HTML skipped),
/// after the title if there is one.
fn markdown_head(text: &str) -> Option<String> {
    let mut title: Option<&str> = None;
    let mut para: Vec<&str> = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            if !para.is_empty() {
                break;
            }
            continue;
        }
        if in_fence {
            continue;
        }
        if t.is_empty() {
            if !para.is_empty() {
                break;
            }
            continue;
        }
        if let Some(h) = t.strip_prefix('#') {
            if !para.is_empty() {
                break;
            }
            if title.is_none() {
                title = Some(h.trim_start_matches('#').trim());
            }
            continue;
        }
        if para.is_empty() && (t.starts_with("[![") || t.starts_with('<') || t.starts_with("![")) {
            continue;
        }
        para.push(t);
    }
    let body = para.join(" ");
    let head = match (title, body.is_empty()) {
        (Some(t), false) => format!("{t}: {body}"),
        (Some(t), true) => t.to_string(),
        (None, false) => body,
        (None, true) => return None,
    };
    Some(cap(&head, DOC_BYTES))
}

/// The declarations a user of the file can reach, in file order.
fn declarations(language: Language, text: &str) -> Vec<Declaration> {
    let mut out = Vec::new();
    // The enclosing Rust `impl` or public Python class, shown once before its first member.
    let mut container: Option<(String, bool)> = None;
    let mut offset = 0;
    let mut in_block_comment = false;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let t = line.trim();
        if in_block_comment {
            in_block_comment = !t.contains("*/");
            continue;
        }
        if t.starts_with("/*") && !t.contains("*/") {
            in_block_comment = true;
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent == 0 && !t.is_empty() && !t.starts_with('}') && !t.starts_with(')') {
            container = None;
        }
        let kind = classify(language, line, t, indent, &mut container);
        let Some(nested) = kind else { continue };
        if nested
            && let Some((header, shown)) = container.as_mut()
            && !*shown
        {
            *shown = true;
            let header = header.clone();
            out.push(Declaration {
                name: None,
                text: header,
                nested: false,
            });
        }
        let decl = if language == Language::Markdown {
            cap(t, DECLARATION_BYTES)
        } else {
            declaration_text(&text[start..])
        };
        let text = if nested { format!("    {decl}") } else { decl };
        out.push(Declaration {
            name: name_of(language, t),
            text,
            nested,
        });
    }
    out
}

/// Whether the line at `indent` starts a reachable declaration: `Some(nested)`.
fn classify(
    language: Language,
    line: &str,
    t: &str,
    indent: usize,
    container: &mut Option<(String, bool)>,
) -> Option<bool> {
    match language {
        Language::Rust => {
            if indent == 0 && (t.starts_with("impl") || t.starts_with("unsafe impl")) {
                *container = Some((declaration_text(line), false));
                return None;
            }
            let rest = t.strip_prefix("pub ")?;
            let word = rest.split_whitespace().next().unwrap_or("");
            const ITEMS: &[&str] = &[
                "fn", "async", "const", "unsafe", "struct", "enum", "trait", "type", "static",
                "mod", "use", "union", "extern",
            ];
            if !ITEMS.contains(&word) {
                return None;
            }
            Some(indent > 0 && container.is_some())
        }
        Language::Python => {
            let def = t
                .strip_prefix("async def ")
                .or_else(|| t.strip_prefix("def "))
                .or_else(|| t.strip_prefix("class "));
            let name = def?;
            let public = !name.starts_with('_') || name.starts_with("__init__");
            if indent == 0 {
                // The class is listed itself: its members need no header.
                *container =
                    (t.starts_with("class ") && public).then(|| (declaration_text(line), true));
                public.then_some(false)
            } else if indent == 4 && container.is_some() && public {
                // Shown below its class's header.
                Some(true)
            } else {
                None
            }
        }
        Language::Go => {
            if indent > 0 {
                return None;
            }
            let rest = if let Some(r) = t.strip_prefix("func (") {
                r.split_once(')')?.1.trim_start()
            } else {
                t.strip_prefix("func ")
                    .or_else(|| t.strip_prefix("type "))?
            };
            rest.chars()
                .next()
                .filter(char::is_ascii_uppercase)
                .map(|_| false)
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => (indent == 0
            && (t.starts_with("export ") || t.starts_with("module.exports")))
        .then_some(false),
        Language::Java => (indent <= 4 && t.starts_with("public ")).then_some(indent > 0),
        Language::C | Language::Cpp => {
            if indent > 0 || t.is_empty() {
                return None;
            }
            const SKIP: &[&str] = &[
                "#",
                "//",
                "/*",
                "*",
                "}",
                "{",
                "static ",
                "return",
                "using ",
                "namespace",
                "extern \"C\"",
                "template",
                "case ",
                "else",
            ];
            if SKIP.iter().any(|s| t.starts_with(s)) {
                return None;
            }
            let typedef = ["typedef ", "struct ", "class ", "enum ", "union "]
                .iter()
                .any(|k| t.starts_with(k));
            let function = t.contains('(') && !t.contains('=') && !t.ends_with(',');
            (typedef || function).then_some(false)
        }
        Language::Markdown => {
            let level = t.chars().take_while(|&c| c == '#').count();
            ((1..=3).contains(&level) && t[level..].starts_with(' ')).then_some(false)
        }
        Language::Other => None,
    }
}

/// The declaration starting `rest`: its lines up to the body, joined and capped.
fn declaration_text(rest: &str) -> String {
    let end = signature_len(rest).unwrap_or_else(|| rest.find('\n').unwrap_or(rest.len()));
    let joined = rest[..end]
        .lines()
        .take(4)
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let t = joined.trim_end().trim_end_matches('{').trim_end();
    cap(t, DECLARATION_BYTES)
}

/// The name a declaration line defines, when it can be read off.
fn name_of(language: Language, t: &str) -> Option<String> {
    let ident = |s: &str| -> Option<String> {
        let name: String = s
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        (!name.is_empty()).then_some(name)
    };
    match language {
        Language::Markdown => None,
        Language::Go => {
            let rest = match t.strip_prefix("func (") {
                Some(r) => r.split_once(')')?.1,
                None => t
                    .strip_prefix("func ")
                    .or_else(|| t.strip_prefix("type "))?,
            };
            ident(rest)
        }
        _ => {
            const KEYWORDS: &[&str] = &[
                "fn",
                "struct",
                "enum",
                "trait",
                "type",
                "mod",
                "union",
                "def",
                "class",
                "interface",
                "function",
                "const",
                "let",
                "var",
                "static",
                "record",
            ];
            let words: Vec<&str> = t
                .split(|c: char| c.is_whitespace() || c == '(' || c == '<' || c == ':')
                .filter(|w| !w.is_empty())
                .collect();
            if let Some(i) = words.iter().position(|w| KEYWORDS.contains(w)) {
                let mut j = i + 1;
                // `const fn`, `async function*`, `static final`...
                while j < words.len() && (KEYWORDS.contains(&words[j]) || words[j] == "*") {
                    j += 1;
                }
                return words.get(j).and_then(|w| ident(w));
            }
            // C-family and Java methods: the word before the first `(`.
            let before = t.split('(').next()?;
            ident(
                before
                    .rsplit(|c: char| c.is_whitespace() || c == '*' || c == '&')
                    .next()?,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(path: &str, text: &str) -> Extract {
        extract(path, Language::from_path(path), text)
    }

    #[test]
    fn rust_module_doc_and_public_items() {
        let e = sum(
            "src/config.rs",
            "//! Configuration loading.\n//!\n//! Details follow.\n\nuse std::path::Path;\n\n/// Parses.\npub fn parse_config(path: &Path,\n    strict: bool) -> Config {\n    todo!()\n}\n\nfn private() {}\n\npub struct Config {\n    pub text: String,\n}\n\nimpl Config {\n    pub fn new() -> Self {\n        Self { text: String::new() }\n    }\n    fn hidden(&self) {}\n}\n\nimpl Drop for Config {\n    fn drop(&mut self) {}\n}\n",
        );
        assert_eq!(
            e.text,
            "Configuration loading.\n\npub fn parse_config(path: &Path, strict: bool) -> Config\npub struct Config\nimpl Config\n    pub fn new() -> Self\n"
        );
        assert_eq!(e.line, "Configuration loading.");
    }

    #[test]
    fn python_docstring_and_public_names() {
        let e = sum(
            "app/server.py",
            "#!/usr/bin/env python\n\"\"\"Serves pages.\n\nMore.\"\"\"\nimport os\n\ndef _helper():\n    pass\n\nclass Server:\n    def __init__(self, port):\n        self.port = port\n    def start(self):\n        pass\n    def _stop(self):\n        pass\n\nasync def run(x):\n    pass\n",
        );
        assert_eq!(
            e.text,
            "Serves pages.\n\nclass Server:\n    def __init__(self, port):\n    def start(self):\nasync def run(x):\n"
        );
    }

    #[test]
    fn go_skips_license_and_lists_exported() {
        let e = sum(
            "pkg/a.go",
            "// Copyright 2020 The Authors. All rights reserved.\n\n// Package a does things.\npackage a\n\nfunc Run() int {\n\treturn 1\n}\n\nfunc helper() {}\n\nfunc (s *Server) Start(port int) error {\n\treturn nil\n}\n\ntype Server struct {\n}\n",
        );
        assert_eq!(
            e.text,
            "Package a does things.\n\nfunc Run() int\nfunc (s *Server) Start(port int) error\ntype Server struct\n"
        );
        assert_eq!(e.line, "Package a does things.");
    }

    #[test]
    fn typescript_exports_and_names() {
        let e = sum(
            "web/app.ts",
            "import x from 'y';\n\nexport function greet(name: string): string {\n  return name;\n}\nfunction hidden() {}\nexport const VERSION = 3;\n",
        );
        assert_eq!(
            e.text,
            "export function greet(name: string): string\nexport const VERSION = 3;\n"
        );
        assert_eq!(e.line, "defines greet, VERSION");
    }

    #[test]
    fn c_headers_java_and_markdown() {
        let e = sum(
            "lib/buf.h",
            "/* Growable buffers. */\n#ifndef BUF_H\n#define BUF_H\ntypedef struct buf buf;\nbuf *buf_new(size_t cap);\nstatic int local(void);\nint count = 3;\n#endif\n",
        );
        assert_eq!(
            e.text,
            "Growable buffers.\n\ntypedef struct buf buf;\nbuf *buf_new(size_t cap);\n"
        );
        let e = sum(
            "A.java",
            "package a;\n\npublic class A {\n    public int size() {\n        return 0;\n    }\n    private void x() {}\n}\n",
        );
        assert_eq!(e.text, "public class A\n    public int size()\n");
        let e = sum(
            "README.md",
            "# Tool\n\n[![ci](x)](y)\n\nA tool that\ndoes things.\n\n## Usage\n\nRun it.\n",
        );
        assert_eq!(
            e.text,
            "Tool: A tool that does things.\n\n# Tool\n## Usage\n"
        );
        assert_eq!(e.line, "Tool: A tool that does things.");
    }

    #[test]
    fn other_files_and_caps() {
        let e = sum(
            "Cargo.toml",
            "[package]\nname = \"x\"\n\nversion = \"1\"\nedition = \"2024\"\n",
        );
        assert_eq!(e.text, "[package]\nname = \"x\"\nversion = \"1\"\n");
        assert_eq!(e.line, "[package]");
        let e = sum("empty.txt", "\n\n");
        assert_eq!(e.line, "(txt)");
        let many: String = (0..100).map(|i| format!("pub fn f{i}() {{}}\n")).collect();
        let e = sum("m.rs", &many);
        assert!(e.text.ends_with("… and 60 more\n"), "{}", e.text);
        assert_eq!(e, sum("m.rs", &many), "deterministic");
    }
}
