//! The import graph between a repository's files.
//!
//! The indexer reads each chunk's import statements ([`import_specs`]) and resolves them to the
//! repository's own files ([`ImportGraph::build`]); the pack stores the edges. At query time a
//! file that imports, or is imported by, a strong hit shares some of its score
//! (`rank::Signals::graph`): a change to a function often needs the module it calls or the one
//! that calls it.
//!
//! Resolution is by path conventions, not by a compiler: relative specifiers (`./a`, `from .a`,
//! `mod a;`, `#include "a.h"`) against the importing file's folder, package-style ones
//! (`crate::a::b`, `pkg.mod`, `github.com/x/y/pkg`, `a.b.C`) by the longest path suffix that
//! names a file of the repository. Specifiers naming nothing in the repository (the standard
//! library, third-party packages) are dropped. Wrong edges cost little (a share of a score);
//! missing ones cost nothing more than not having the graph.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Most files one package-style import may fan out to (a Go package's files); beyond that the
/// edge says little about any one of them.
const MAX_FAN_OUT: usize = 12;

/// Files each file imports, resolved to the repository's own files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportGraph {
    /// `imports[f]`: indexes (into the pack's file table) of the files file `f` imports, sorted
    /// and distinct, never `f` itself. Empty for a pack built without a graph.
    pub imports: Vec<Vec<u32>>,
}

impl ImportGraph {
    /// Whether every file it names is one of the first `files` (a decoded pack's check).
    pub fn within(&self, files: usize) -> bool {
        self.imports.len() <= files && self.imports.iter().flatten().all(|&f| (f as usize) < files)
    }

    /// Resolves each file's specifiers against the file table.
    ///
    /// `paths` are the pack's file paths (`/`-separated, relative); `specs[f]` the specifiers
    /// read from file `f` with its language.
    pub fn build(paths: &[&str], specs: &[(String, Vec<String>)]) -> Self {
        let index = PathIndex::new(paths);
        let imports = paths
            .iter()
            .zip(specs)
            .enumerate()
            .map(|(f, (from, (language, specs)))| {
                let mut out: Vec<u32> = specs
                    .iter()
                    .flat_map(|s| index.resolve(from, language, s))
                    .filter(|&t| t as usize != f)
                    .collect();
                out.sort_unstable();
                out.dedup();
                out
            })
            .collect();
        Self { imports }
    }

    /// Files linked to `file` in either direction: what it imports and what imports it.
    pub fn neighbours(&self) -> Vec<Vec<u32>> {
        let mut both: Vec<Vec<u32>> = self.imports.clone();
        for (f, targets) in self.imports.iter().enumerate() {
            for &t in targets {
                if let Some(back) = both.get_mut(t as usize) {
                    back.push(f as u32);
                }
            }
        }
        for n in &mut both {
            n.sort_unstable();
            n.dedup();
        }
        both
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.imports.iter().map(Vec::len).sum()
    }
}

/// The import specifiers of one chunk of `language` source, as written.
///
/// Only the statement forms of each language are read, line by line; an import split over
/// several lines (`use a::{\n b,\n c};`, parenthesised Go imports) is followed.
pub fn import_specs(text: &str, language: &str) -> Vec<String> {
    let mut out = Vec::new();
    match language {
        "rust" => rust_specs(text, &mut out),
        "python" => python_specs(text, &mut out),
        "go" => go_specs(text, &mut out),
        "javascript" | "typescript" | "tsx" | "jsx" => js_specs(text, &mut out),
        "c" | "cpp" => c_specs(text, &mut out),
        "java" => java_specs(text, &mut out),
        _ => {}
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn rust_specs(text: &str, out: &mut Vec<String>) {
    let mut pending = String::new();
    for line in text.lines() {
        let t = line.trim();
        if !pending.is_empty() {
            pending.push_str(t);
            if t.contains(';') {
                expand_rust_use(&std::mem::take(&mut pending), out);
            }
            continue;
        }
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let t = t.strip_prefix("pub(crate) ").unwrap_or(t);
        if let Some(rest) = t.strip_prefix("mod ")
            && let Some(name) = rest.strip_suffix(';')
        {
            out.push(format!("mod:{}", name.trim()));
        } else if let Some(rest) = t.strip_prefix("use ") {
            if rest.contains(';') {
                expand_rust_use(rest, out);
            } else {
                pending.push_str(rest);
            }
        }
    }
}

/// `crate::a::{b, c::D}` → `crate::a::b`, `crate::a::c::D`.
fn expand_rust_use(stmt: &str, out: &mut Vec<String>) {
    let stmt = stmt.split(';').next().unwrap_or("").trim();
    let Some(open) = stmt.find('{') else {
        out.push(stmt.split(" as ").next().unwrap_or(stmt).trim().to_string());
        return;
    };
    let prefix = stmt[..open].trim_end_matches("::").trim();
    let inner = stmt[open + 1..].trim_end_matches('}');
    // Nested groups are rare; their inner names are kept with the outer prefix only.
    for item in inner.split([',', '{', '}']) {
        let item = item.split(" as ").next().unwrap_or("").trim();
        if item.is_empty() || item == "self" {
            out.push(prefix.to_string());
        } else {
            out.push(format!("{prefix}::{item}"));
        }
    }
}

fn python_specs(text: &str, out: &mut Vec<String>) {
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("from ") {
            let mut parts = rest.splitn(2, " import ");
            let module = parts.next().unwrap_or("").trim();
            let names = parts.next().unwrap_or("");
            if module.is_empty() {
                continue;
            }
            out.push(format!("py:{module}"));
            // `from . import a, b` and `from pkg import mod` may name modules.
            for name in names.trim_matches(['(', ')', ' ']).split(',') {
                let name = name.split(" as ").next().unwrap_or("").trim();
                if !name.is_empty() && name != "*" && is_ident(name) {
                    let sep = if module.ends_with('.') { "" } else { "." };
                    out.push(format!("py:{module}{sep}{name}"));
                }
            }
        } else if let Some(rest) = t.strip_prefix("import ") {
            for m in rest.split(',') {
                let m = m.split(" as ").next().unwrap_or("").trim();
                if !m.is_empty() {
                    out.push(format!("py:{m}"));
                }
            }
        }
    }
}

fn go_specs(text: &str, out: &mut Vec<String>) {
    let mut in_block = false;
    for line in text.lines() {
        let t = line.trim();
        if in_block {
            if t.starts_with(')') {
                in_block = false;
            } else if let Some(s) = quoted(t, '"') {
                out.push(format!("go:{s}"));
            }
        } else if let Some(rest) = t.strip_prefix("import") {
            let rest = rest.trim();
            if rest.starts_with('(') {
                in_block = true;
            } else if let Some(s) = quoted(rest, '"') {
                out.push(format!("go:{s}"));
            }
        }
    }
}

fn js_specs(text: &str, out: &mut Vec<String>) {
    for line in text.lines() {
        let t = line.trim();
        let import_like = t.starts_with("import ")
            || t.starts_with("import{")
            || t.starts_with("export ")
            || t.starts_with("} from ")
            || t.contains("require(")
            || t.contains("import(");
        if !import_like {
            continue;
        }
        for key in [" from ", "require(", "import(", "import "] {
            if let Some(at) = t.find(key) {
                let rest = t[at + key.len()..].trim_start();
                if let Some(s) = quoted(rest, '\'').or_else(|| quoted(rest, '"'))
                    && rest.starts_with(['\'', '"'])
                {
                    out.push(format!("js:{s}"));
                }
            }
        }
    }
}

fn c_specs(text: &str, out: &mut Vec<String>) {
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("#include")
            && let Some(s) = quoted(rest.trim(), '"')
        {
            out.push(format!("c:{s}"));
        }
    }
}

fn java_specs(text: &str, out: &mut Vec<String>) {
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("import ") {
            let rest = rest.strip_prefix("static ").unwrap_or(rest);
            if let Some(name) = rest.strip_suffix(';') {
                out.push(format!("java:{}", name.trim()));
            }
        }
    }
}

/// The text between the first pair of `q` quotes at the start of `s`.
fn quoted(s: &str, q: char) -> Option<&str> {
    let s = s.trim_start();
    let rest = s.strip_prefix(q)?;
    let end = rest.find(q)?;
    let inner = &rest[..end];
    (!inner.is_empty()).then_some(inner)
}

fn is_ident(s: &str) -> bool {
    s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The file table, searchable by path and by path suffix.
struct PathIndex<'a> {
    exact: HashMap<&'a str, u32>,
    /// Files by their last path component without extension (`a/b/mod.rs` → `mod`).
    by_stem: HashMap<&'a str, Vec<u32>>,
    /// Files by folder.
    by_dir: HashMap<&'a str, Vec<u32>>,
    paths: &'a [&'a str],
}

impl<'a> PathIndex<'a> {
    fn new(paths: &'a [&'a str]) -> Self {
        let mut exact = HashMap::new();
        let mut by_stem: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut by_dir: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, p) in paths.iter().enumerate() {
            exact.insert(*p, i as u32);
            let (dir, name) = p.rsplit_once('/').unwrap_or(("", p));
            let stem = name.split('.').next().unwrap_or(name);
            by_stem.entry(stem).or_default().push(i as u32);
            by_dir.entry(dir).or_default().push(i as u32);
        }
        Self {
            exact,
            by_stem,
            by_dir,
            paths,
        }
    }

    fn resolve(&self, from: &str, language: &str, spec: &str) -> Vec<u32> {
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        if let Some(name) = spec.strip_prefix("mod:") {
            // `mod a;` in `x/lib.rs`/`x/mod.rs`/`x/main.rs` is `x/a.rs`; in `x/b.rs` it is
            // `x/b/a.rs`.
            let file = from.rsplit('/').next().unwrap_or(from);
            let base = if matches!(file, "lib.rs" | "mod.rs" | "main.rs") {
                dir.to_string()
            } else {
                join(dir, file.trim_end_matches(".rs"))
            };
            return self.first(&[
                format!("{}.rs", join(&base, name)),
                format!("{}/mod.rs", join(&base, name)),
            ]);
        }
        if let Some(s) = spec.strip_prefix("py:") {
            return self.python(dir, s);
        }
        if let Some(s) = spec.strip_prefix("go:") {
            return self.go(s);
        }
        if let Some(s) = spec.strip_prefix("js:") {
            return self.js(dir, s);
        }
        if let Some(s) = spec.strip_prefix("c:") {
            let mut v = self.first(&[join(dir, s)]);
            if v.is_empty() {
                v = self.suffix(s);
            }
            return v;
        }
        if let Some(s) = spec.strip_prefix("java:") {
            return self.suffix(&format!("{}.java", s.replace('.', "/")));
        }
        if language == "rust" {
            return self.rust(from, spec);
        }
        Vec::new()
    }

    fn rust(&self, from: &str, spec: &str) -> Vec<u32> {
        let mut segs: Vec<&str> = spec.split("::").map(str::trim).collect();
        let first = segs.first().copied().unwrap_or("");
        // The crate's source root: the `src` folder above the importing file.
        let root = from
            .rfind("src/")
            .map_or("", |i| &from[..i + 3])
            .trim_end_matches('/');
        let mut base = match first {
            "crate" => {
                segs.remove(0);
                root.to_string()
            }
            "super" | "self" => {
                let mut d = from.rsplit_once('/').map_or("", |(d, _)| d).to_string();
                let file = from.rsplit('/').next().unwrap_or(from);
                if !matches!(file, "mod.rs" | "lib.rs" | "main.rs") {
                    d = join(&d, file.trim_end_matches(".rs"));
                }
                while segs.first() == Some(&"super") {
                    segs.remove(0);
                    d = d.rsplit_once('/').map_or("", |(p, _)| p).to_string();
                }
                if segs.first() == Some(&"self") {
                    segs.remove(0);
                }
                d
            }
            _ => return Vec::new(),
        };
        // Longest prefix of the path that names a module file.
        let mut found = Vec::new();
        let mut dirs = Vec::new();
        for seg in &segs {
            base = join(&base, seg);
            dirs.push(base.clone());
        }
        for d in dirs.iter().rev() {
            found = self.first(&[format!("{d}.rs"), format!("{d}/mod.rs")]);
            if !found.is_empty() {
                break;
            }
        }
        found
    }

    fn python(&self, dir: &str, spec: &str) -> Vec<u32> {
        let dots = spec.chars().take_while(|&c| c == '.').count();
        let module = &spec[dots..];
        let rel = module.replace('.', "/");
        if dots > 0 {
            let mut d = dir.to_string();
            for _ in 1..dots {
                d = d.rsplit_once('/').map_or("", |(p, _)| p).to_string();
            }
            let base = join(&d, &rel);
            return self.first(&[format!("{base}.py"), format!("{base}/__init__.py")]);
        }
        if rel.is_empty() {
            return Vec::new();
        }
        let mut v = self.suffix(&format!("{rel}.py"));
        if v.is_empty() {
            v = self.suffix(&format!("{rel}/__init__.py"));
        }
        v
    }

    fn go(&self, spec: &str) -> Vec<u32> {
        // The package folder: the longest suffix of the import path that is a folder here.
        let parts: Vec<&str> = spec.split('/').collect();
        for start in 0..parts.len() {
            let suffix = parts[start..].join("/");
            let hits: Vec<&str> = self
                .by_dir
                .keys()
                .filter(|d| **d == suffix || d.ends_with(&format!("/{suffix}")))
                .copied()
                .collect();
            if hits.len() == 1 {
                let files: Vec<u32> = self.by_dir[hits[0]]
                    .iter()
                    .copied()
                    .filter(|&f| {
                        let p = self.paths[f as usize];
                        p.ends_with(".go") && !p.ends_with("_test.go")
                    })
                    .collect();
                return if files.len() <= MAX_FAN_OUT {
                    files
                } else {
                    Vec::new()
                };
            }
            if hits.len() > 1 {
                return Vec::new();
            }
        }
        Vec::new()
    }

    fn js(&self, dir: &str, spec: &str) -> Vec<u32> {
        if !spec.starts_with('.') {
            return Vec::new();
        }
        let base = normalize(&join(dir, spec));
        let stripped = ["js", "mjs", "cjs", "jsx"]
            .iter()
            .find_map(|e| base.strip_suffix(&format!(".{e}")))
            .unwrap_or(&base)
            .to_string();
        let mut tries = vec![base.clone()];
        for b in [&base, &stripped] {
            for ext in ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts", "d.ts"] {
                tries.push(format!("{b}.{ext}"));
            }
            for ext in ["ts", "tsx", "js", "jsx"] {
                tries.push(format!("{b}/index.{ext}"));
            }
        }
        self.first(&tries)
    }

    /// The first of `candidates` that is a file here.
    fn first(&self, candidates: &[String]) -> Vec<u32> {
        candidates
            .iter()
            .find_map(|c| self.exact.get(normalize(c).as_str()).copied())
            .into_iter()
            .collect()
    }

    /// The one file whose path ends with `/suffix` (or is `suffix`); none when ambiguous.
    fn suffix(&self, suffix: &str) -> Vec<u32> {
        let name = suffix.rsplit('/').next().unwrap_or(suffix);
        let stem = name.split('.').next().unwrap_or(name);
        let hits: Vec<u32> = self
            .by_stem
            .get(stem)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&f| {
                let p = self.paths[f as usize];
                p == suffix || p.ends_with(&format!("/{suffix}"))
            })
            .collect();
        if hits.len() == 1 { hits } else { Vec::new() }
    }
}

fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() {
        rest.to_string()
    } else if rest.is_empty() {
        dir.to_string()
    } else {
        format!("{dir}/{rest}")
    }
}

/// Resolves `.` and `..` components; a path climbing above the root keeps no `..`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str, &str)]) -> (Vec<String>, ImportGraph) {
        let paths: Vec<&str> = files.iter().map(|f| f.0).collect();
        let specs: Vec<(String, Vec<String>)> = files
            .iter()
            .map(|(_, lang, text)| (lang.to_string(), import_specs(text, lang)))
            .collect();
        (
            paths.iter().map(|p| p.to_string()).collect(),
            ImportGraph::build(&paths, &specs),
        )
    }

    fn edges(files: &[(&str, &str, &str)]) -> Vec<(String, String)> {
        let (paths, g) = graph(files);
        let mut out = Vec::new();
        for (f, ts) in g.imports.iter().enumerate() {
            for &t in ts {
                out.push((paths[f].clone(), paths[t as usize].clone()));
            }
        }
        out
    }

    fn e(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn rust_modules_and_uses() {
        let got = edges(&[
            (
                "src/lib.rs",
                "rust",
                "pub mod config;\nmod util;\nuse crate::config::{Config, load as l};\nuse std::fs;",
            ),
            (
                "src/config.rs",
                "rust",
                "use super::util::trim;\nuse crate::util;",
            ),
            ("src/util/mod.rs", "rust", "mod inner;"),
            (
                "src/util/inner.rs",
                "rust",
                "use crate::{\n  config::Config,\n};",
            ),
        ]);
        assert_eq!(
            got,
            [
                e("src/lib.rs", "src/config.rs"),
                e("src/lib.rs", "src/util/mod.rs"),
                e("src/config.rs", "src/util/mod.rs"),
                e("src/util/mod.rs", "src/util/inner.rs"),
                e("src/util/inner.rs", "src/config.rs"),
            ]
        );
    }

    #[test]
    fn python_relative_and_absolute() {
        let got = edges(&[
            (
                "src/click/__init__.py",
                "python",
                "from .core import Command\nfrom . import types",
            ),
            (
                "src/click/core.py",
                "python",
                "import os\nfrom click.types import ParamType",
            ),
            ("src/click/types.py", "python", "from ._compat import x"),
            ("src/click/_compat.py", "python", ""),
        ]);
        assert_eq!(
            got,
            [
                e("src/click/__init__.py", "src/click/core.py"),
                e("src/click/__init__.py", "src/click/types.py"),
                e("src/click/core.py", "src/click/types.py"),
                e("src/click/types.py", "src/click/_compat.py"),
            ]
        );
    }

    #[test]
    fn go_packages_and_js_relative_imports() {
        let got = edges(&[
            (
                "gin.go",
                "go",
                "import (\n\t\"net/http\"\n\t\"github.com/gin-gonic/gin/binding\"\n)",
            ),
            (
                "binding/form.go",
                "go",
                "import \"github.com/gin-gonic/gin/internal/bytesconv\"",
            ),
            ("binding/form_test.go", "go", ""),
            ("internal/bytesconv/bytesconv.go", "go", ""),
        ]);
        assert_eq!(
            got,
            [
                e("gin.go", "binding/form.go"),
                e("binding/form.go", "internal/bytesconv/bytesconv.go"),
            ]
        );
        let got = edges(&[
            (
                "lib/axios.js",
                "javascript",
                "import utils from './utils.js';\nconst a = require(\"./core/Axios\");\nexport * from './helpers';",
            ),
            ("lib/utils.js", "javascript", "import x from 'lodash';"),
            (
                "lib/core/Axios.js",
                "javascript",
                "import b from '../utils.js'",
            ),
            ("lib/helpers/index.ts", "typescript", ""),
        ]);
        assert_eq!(
            got,
            [
                e("lib/axios.js", "lib/utils.js"),
                e("lib/axios.js", "lib/core/Axios.js"),
                e("lib/axios.js", "lib/helpers/index.ts"),
                e("lib/core/Axios.js", "lib/utils.js"),
            ]
        );
    }

    #[test]
    fn neighbours_are_both_directions_and_unknown_specs_vanish() {
        let (_, g) = graph(&[
            ("a.c", "c", "#include \"b.h\"\n#include <stdio.h>"),
            ("b.h", "c", ""),
            (
                "X.java",
                "java",
                "import java.util.List;\nimport com.acme.B;",
            ),
            ("src/com/acme/B.java", "java", ""),
        ]);
        assert_eq!(g.imports, vec![vec![1], vec![], vec![3], vec![]]);
        assert_eq!(g.neighbours(), vec![vec![1], vec![0], vec![3], vec![2]]);
        assert_eq!(g.edges(), 2);
    }
}
