//! Directory and project summaries, from the files' one-line descriptions and sizes.

use std::collections::BTreeMap;

use super::{cap, thousands};

/// Most entries listed in a directory or the project layout.
const MAX_ENTRIES: usize = 50;
/// Longest README head, in bytes.
const README_BYTES: usize = 600;
/// Most entry points listed.
const MAX_ENTRY_POINTS: usize = 20;

/// What a directory or project summary needs to know of a file.
#[derive(Clone, Copy, Debug)]
pub struct FileFacts<'a> {
    /// Path relative to the repository root, `/`-separated.
    pub path: &'a str,
    /// Its size in tokens.
    pub tokens: u64,
    /// Its one-line description.
    pub line: &'a str,
}

#[derive(Default)]
struct Listing<'a> {
    /// Subdirectory name -> (files, tokens) below it.
    dirs: BTreeMap<&'a str, (u64, u64)>,
    /// Files directly inside.
    files: Vec<(&'a str, u64, &'a str)>,
    /// Files and tokens below, recursively.
    total: (u64, u64),
}

fn listings<'a>(files: &[FileFacts<'a>]) -> BTreeMap<&'a str, Listing<'a>> {
    let mut out: BTreeMap<&'a str, Listing<'a>> = BTreeMap::new();
    for f in files {
        let path = f.path;
        let mut dir_end = 0; // the root
        let mut from = 0;
        while let Some(slash) = path[from..].find('/') {
            let child_end = from + slash;
            let dir = &path[..dir_end];
            let child = &path[if dir_end == 0 { 0 } else { dir_end + 1 }..child_end];
            let l = out.entry(dir).or_default();
            let e = l.dirs.entry(child).or_default();
            e.0 += 1;
            e.1 += f.tokens;
            l.total.0 += 1;
            l.total.1 += f.tokens;
            dir_end = child_end;
            from = child_end + 1;
        }
        let dir = &path[..dir_end];
        let l = out.entry(dir).or_default();
        l.files.push((&path[from..], f.tokens, f.line));
        l.total.0 += 1;
        l.total.1 += f.tokens;
    }
    out
}

fn files_word(n: u64) -> &'static str {
    if n == 1 { "file" } else { "files" }
}

/// The entries of one listing: subdirectories, then files, capped.
fn render_listing(l: &Listing<'_>, out: &mut String) {
    let mut shown = 0usize;
    let mut rest = (0u64, 0u64);
    for (name, (n, t)) in &l.dirs {
        if shown == MAX_ENTRIES {
            rest.0 += n;
            rest.1 += t;
            continue;
        }
        out.push_str(&format!(
            "{name}/  ({n} {}, {} tokens)\n",
            files_word(*n),
            thousands(*t)
        ));
        shown += 1;
    }
    for (name, t, line) in &l.files {
        if shown == MAX_ENTRIES {
            rest.0 += 1;
            rest.1 += t;
            continue;
        }
        out.push_str(&format!("{name}  ({} tokens)", thousands(*t)));
        if !line.is_empty() {
            out.push_str(": ");
            out.push_str(line);
        }
        out.push('\n');
        shown += 1;
    }
    if rest.0 > 0 {
        out.push_str(&format!(
            "… and {} more {} ({} tokens)\n",
            rest.0,
            files_word(rest.0),
            thousands(rest.1)
        ));
    }
}

/// The summary of every directory holding files (the root excepted), sorted by path:
/// `(path, text)`.
pub fn directories(files: &[FileFacts<'_>]) -> Vec<(String, String)> {
    listings(files)
        .iter()
        .filter(|(dir, _)| !dir.is_empty())
        .map(|(dir, l)| {
            let mut text = format!(
                "{} {}, {} tokens\n",
                l.total.0,
                files_word(l.total.0),
                thousands(l.total.1)
            );
            render_listing(l, &mut text);
            (dir.to_string(), text)
        })
        .collect()
}

/// What the project summary is made of.
#[derive(Clone, Copy, Debug)]
pub struct ProjectInputs<'a> {
    /// The project's name.
    pub name: &'a str,
    /// Every indexed file.
    pub files: &'a [FileFacts<'a>],
    /// The README's path and text, when there is one at the root.
    pub readme: Option<(&'a str, &'a str)>,
    /// Manifests that name entry points (`Cargo.toml`, `package.json`, `pyproject.toml`), with
    /// their paths.
    pub manifests: &'a [(&'a str, &'a str)],
}

/// The project summary: the README's head, the top-level layout with sizes, the entry points.
pub fn project(inputs: &ProjectInputs<'_>) -> String {
    let mut out = String::new();
    match inputs.readme.and_then(|(_, text)| readme_head(text)) {
        Some(head) => out.push_str(&format!("{}: {head}\n\n", inputs.name)),
        None => out.push_str(&format!("{}\n\n", inputs.name)),
    }
    let all = listings(inputs.files);
    if let Some(root) = all.get("") {
        out.push_str(&format!(
            "Layout ({} {}, {} tokens):\n",
            root.total.0,
            files_word(root.total.0),
            thousands(root.total.1)
        ));
        render_listing(root, &mut out);
    }
    let paths: Vec<&str> = inputs.files.iter().map(|f| f.path).collect();
    let entries = entry_points(&paths, inputs.manifests);
    if !entries.is_empty() {
        out.push_str("\nEntry points:\n");
        for e in entries {
            out.push_str(&e);
            out.push('\n');
        }
    }
    out
}

/// The README's first prose paragraphs (headings, badges, HTML and code skipped), capped.
pub fn readme_head(text: &str) -> Option<String> {
    let mut title: Option<&str> = None;
    let mut paras: Vec<String> = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut in_fence = false;
    let mut len = 0;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        let prose = !in_fence
            && !t.is_empty()
            && !t.starts_with('#')
            && !t.starts_with('<')
            && !t.starts_with("[![")
            && !t.starts_with("![")
            && !t.starts_with('|');
        if prose {
            para.push(t);
            len += t.len() + 1;
            continue;
        }
        if !para.is_empty() {
            paras.push(para.join(" "));
            para.clear();
            if paras.len() == 2 || len >= README_BYTES {
                break;
            }
        }
        if !in_fence && title.is_none() && paras.is_empty() {
            title = t
                .strip_prefix('#')
                .map(|h| h.trim_start_matches('#').trim());
        }
    }
    if !para.is_empty() && paras.len() < 2 {
        paras.push(para.join(" "));
    }
    let body = paras.join("\n\n");
    let head = match (title.filter(|t| !t.is_empty()), body.is_empty()) {
        (Some(t), false) => format!("{t}. {body}"),
        (Some(t), true) => t.to_string(),
        (None, false) => body,
        (None, true) => return None,
    };
    Some(cap(&head, README_BYTES))
}

/// Where the project starts: binaries, scripts and modules run directly, from file names and
/// manifests, one description a line, sorted.
pub fn entry_points(paths: &[&str], manifests: &[(&str, &str)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (path, text) in manifests {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let join = |p: &str| {
            let p = p.trim_start_matches("./");
            if dir.is_empty() {
                p.to_string()
            } else {
                format!("{dir}/{p}")
            }
        };
        let name = path.rsplit('/').next().unwrap_or(path);
        match name {
            "Cargo.toml" => {
                let Ok(v) = text.parse::<toml::Table>() else {
                    continue;
                };
                for bin in v
                    .get("bin")
                    .and_then(|b| b.as_array())
                    .into_iter()
                    .flatten()
                {
                    let Some(n) = bin.get("name").and_then(|n| n.as_str()) else {
                        continue;
                    };
                    let p = bin
                        .get("path")
                        .and_then(|p| p.as_str())
                        .map_or_else(|| join(&format!("src/bin/{n}.rs")), join);
                    out.push(format!("Cargo binary `{n}`: {p}"));
                }
            }
            "package.json" => {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
                    continue;
                };
                if let Some(m) = v.get("main").and_then(|m| m.as_str()) {
                    out.push(format!("package.json main: {}", join(m)));
                }
                match v.get("bin") {
                    Some(serde_json::Value::String(b)) => {
                        let n = v.get("name").and_then(|n| n.as_str()).unwrap_or("bin");
                        out.push(format!("package.json bin `{n}`: {}", join(b)));
                    }
                    Some(serde_json::Value::Object(bins)) => {
                        for (n, b) in bins {
                            if let Some(b) = b.as_str() {
                                out.push(format!("package.json bin `{n}`: {}", join(b)));
                            }
                        }
                    }
                    _ => {}
                }
            }
            "pyproject.toml" => {
                let Ok(v) = text.parse::<toml::Table>() else {
                    continue;
                };
                let scripts = v
                    .get("project")
                    .and_then(|p| p.get("scripts"))
                    .and_then(|s| s.as_table());
                for (n, target) in scripts.into_iter().flatten() {
                    if let Some(t) = target.as_str() {
                        out.push(format!("script `{n}`: {t}"));
                    }
                }
            }
            _ => {}
        }
    }
    let mut by_path: Vec<String> = paths
        .iter()
        .filter(|p| is_entry_path(p))
        .map(|p| p.to_string())
        .collect();
    by_path.sort();
    out.sort();
    out.extend(by_path);
    out.dedup();
    out.truncate(MAX_ENTRY_POINTS);
    out
}

fn is_entry_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let depth = parts.len();
    let name = parts[depth - 1];
    let parent = if depth > 1 { parts[depth - 2] } else { "" };
    match name {
        "main.rs" => parent == "src" && depth <= 4,
        "main.go" => depth == 1 || (depth <= 3 && parts[0] == "cmd"),
        "__main__.py" => depth <= 3,
        "main.py" | "manage.py" | "app.py" => depth == 1,
        "main.c" | "main.cc" | "main.cpp" => depth <= 2,
        "index.js" | "index.ts" | "main.js" | "main.ts" => {
            depth == 1 || (depth == 2 && parent == "src")
        }
        "Main.java" => true,
        _ => {
            name.ends_with(".rs")
                && parent == "bin"
                && (3..=5).contains(&depth)
                && parts[depth - 3] == "src"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f<'a>(path: &'a str, tokens: u64, line: &'a str) -> FileFacts<'a> {
        FileFacts { path, tokens, line }
    }

    #[test]
    fn directory_listings() {
        let files = [
            f("README.md", 40, "Sample: A sample project."),
            f("src/config.rs", 400, "Configuration."),
            f("src/net/http.rs", 1200, "defines get"),
            f("src/net/tls.rs", 800, ""),
            f("src/render.rs", 100, "defines render_page"),
        ];
        let dirs = directories(&files);
        let names: Vec<&str> = dirs.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["src", "src/net"]);
        assert_eq!(
            dirs[0].1,
            "4 files, 2,500 tokens\nnet/  (2 files, 2,000 tokens)\nconfig.rs  (400 tokens): Configuration.\nrender.rs  (100 tokens): defines render_page\n"
        );
        assert_eq!(
            dirs[1].1,
            "2 files, 2,000 tokens\nhttp.rs  (1,200 tokens): defines get\ntls.rs  (800 tokens)\n"
        );
        let many: Vec<String> = (0..60).map(|i| format!("d/f{i:02}.rs")).collect();
        let facts: Vec<FileFacts> = many.iter().map(|p| f(p, 10, "")).collect();
        let dirs = directories(&facts);
        assert!(
            dirs[0].1.ends_with("… and 10 more files (100 tokens)\n"),
            "{}",
            dirs[0].1
        );
    }

    #[test]
    fn project_summary() {
        let files = [
            f("README.md", 40, ""),
            f("cmd/tool/main.go", 300, "defines main"),
            f("src/main.rs", 200, ""),
            f("pkg/__main__.py", 20, ""),
        ];
        let readme = "# Tool\n\n[![ci](b)](c)\n\nTool does\nthings.\n\n```sh\nrun\n```\n\nSecond para.\n\nThird para.\n";
        let cargo =
            "[package]\nname = \"tool\"\n\n[[bin]]\nname = \"tool-cli\"\npath = \"src/cli.rs\"\n";
        let npm = r#"{"name": "t", "main": "./lib/index.js", "bin": {"t": "bin/t.js"}}"#;
        let text = project(&ProjectInputs {
            name: "tool",
            files: &files,
            readme: Some(("README.md", readme)),
            manifests: &[("Cargo.toml", cargo), ("web/package.json", npm)],
        });
        assert_eq!(
            text,
            "tool: Tool. Tool does things.\n\nSecond para.\n\nLayout (4 files, 560 tokens):\ncmd/  (1 file, 300 tokens)\npkg/  (1 file, 20 tokens)\nsrc/  (1 file, 200 tokens)\nREADME.md  (40 tokens)\n\nEntry points:\nCargo binary `tool-cli`: src/cli.rs\npackage.json bin `t`: web/bin/t.js\npackage.json main: web/lib/index.js\ncmd/tool/main.go\npkg/__main__.py\nsrc/main.rs\n"
        );
        assert_eq!(readme_head(""), None);
        assert_eq!(readme_head("plain text\n").as_deref(), Some("plain text"));
    }

    #[test]
    fn bad_manifests_are_ignored() {
        assert!(
            entry_points(&[], &[("Cargo.toml", "not [ toml"), ("package.json", "{")]).is_empty()
        );
        assert_eq!(
            entry_points(
                &[],
                &[("pyproject.toml", "[project.scripts]\nx = \"x.cli:main\"\n")]
            ),
            ["script `x`: x.cli:main"]
        );
    }
}
