//! Listing a repository's files.
//!
//! `.gitignore`, `.ignore` and git's exclude files are honoured (the `ignore` crate, as in
//! ripgrep), hidden files and the `.git` folder are skipped, and symbolic links are not followed
//! unless asked, so a link can neither leave the repository nor loop. Problems with single
//! entries become warnings; only an unreadable root is an error.

use std::path::{Path, PathBuf};

/// A file found by the walk.
#[derive(Clone, Debug)]
pub struct Found {
    /// Path relative to the root, `/`-separated.
    pub rel: String,
    /// Absolute path.
    pub abs: PathBuf,
}

/// How to walk.
#[derive(Clone, Debug, Default)]
pub struct WalkOptions {
    /// Follow symbolic links (loops are detected and reported).
    pub follow_links: bool,
    /// Include hidden files and folders (dot-files).
    pub hidden: bool,
    /// Folders never to enter (the data directory, when it lies below the root).
    pub exclude: Vec<PathBuf>,
    /// Which of the files left after the ignore files are indexed.
    pub globs: Globs,
}

/// `--include` / `--exclude` patterns, matched against paths relative to the root after the
/// ignore files have spoken (an include never brings back an ignored file). A pattern without
/// `/` matches any path component (`*.rs`, `node_modules`); one with `/` matches the path from
/// the root or any folder it names (`src/**/*.rs`, `docs/`). `*` stays within a component,
/// `**` crosses them. With includes, only files matching one are kept; an exclude always wins.
#[derive(Clone, Debug, Default)]
pub struct Globs {
    /// Patterns a kept file must match (none: every file).
    pub include: Vec<String>,
    /// Patterns that leave a file out.
    pub exclude: Vec<String>,
}

/// A pattern of [`Globs`] that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("invalid glob `{pattern}`: {reason}")]
pub struct GlobError {
    /// The pattern as given.
    pub pattern: String,
    /// What the parser said.
    pub reason: String,
}

/// [`Globs`] compiled.
pub struct GlobFilter {
    include: Option<(globset::GlobSet, globset::GlobSet)>,
    exclude: (globset::GlobSet, globset::GlobSet),
}

impl Globs {
    /// Compiles the patterns; the first that does not parse is the error.
    pub fn compile(&self) -> Result<GlobFilter, GlobError> {
        let include = if self.include.is_empty() {
            None
        } else {
            Some(compile_set(&self.include)?)
        };
        Ok(GlobFilter {
            include,
            exclude: compile_set(&self.exclude)?,
        })
    }
}

/// Two sets: patterns for a path component, and patterns for the path (each also as the
/// folder it may name, `p/**`).
fn compile_set(patterns: &[String]) -> Result<(globset::GlobSet, globset::GlobSet), GlobError> {
    let glob = |p: &str| {
        globset::GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| GlobError {
                pattern: p.to_string(),
                reason: e.kind().to_string(),
            })
    };
    let (mut names, mut paths) = (
        globset::GlobSetBuilder::new(),
        globset::GlobSetBuilder::new(),
    );
    for raw in patterns {
        let p = raw.trim().trim_start_matches("./").trim_end_matches('/');
        if p.is_empty() {
            return Err(GlobError {
                pattern: raw.clone(),
                reason: "empty pattern".into(),
            });
        }
        if p.contains('/') {
            let p = p.trim_start_matches('/');
            paths.add(glob(p)?);
            paths.add(glob(&format!("{p}/**"))?);
        } else {
            names.add(glob(p)?);
        }
    }
    let build = |b: globset::GlobSetBuilder| {
        b.build().map_err(|e| GlobError {
            pattern: patterns.join(" "),
            reason: e.to_string(),
        })
    };
    Ok((build(names)?, build(paths)?))
}

impl GlobFilter {
    /// Whether the file at `rel` (relative, `/`-separated) is kept.
    pub fn keeps(&self, rel: &str) -> bool {
        let hit = |(names, paths): &(globset::GlobSet, globset::GlobSet)| {
            paths.is_match(rel) || rel.split('/').any(|c| names.is_match(c))
        };
        self.include.as_ref().is_none_or(hit) && !hit(&self.exclude)
    }
}

/// The files of `root`, sorted by relative path, and the warnings met on the way.
pub fn walk(root: &Path, opts: &WalkOptions) -> (Vec<Found>, Vec<String>) {
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    let exclude = opts.exclude.clone();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(!opts.hidden)
        .follow_links(opts.follow_links)
        .require_git(false)
        .git_global(false)
        .filter_entry(move |e| {
            !exclude.iter().any(|x| e.path().starts_with(x)) && e.file_name() != ".git"
        })
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                warnings.push(format!("skipped: {err}"));
                continue;
            }
        };
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_symlink() {
            warnings.push(format!(
                "skipped symbolic link `{}` (use --follow-links to follow links)",
                rel_path(root, entry.path())
            ));
            continue;
        }
        if !ft.is_file() {
            continue;
        }
        let rel = rel_path(root, entry.path());
        files.push(Found {
            rel,
            abs: entry.into_path(),
        });
    }
    match opts.globs.compile() {
        Ok(filter) => files.retain(|f| filter.keeps(&f.rel)),
        // Callers check the patterns first (`Globs::compile`); one that slipped through must
        // not widen what is indexed.
        Err(e) => {
            warnings.push(format!("{e}; no file indexed"));
            files.clear();
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files.dedup_by(|a, b| a.rel == b.rel);
    (files, warnings)
}

fn rel_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(&c.as_os_str().to_string_lossy());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(include: &[&str], exclude: &[&str]) -> GlobFilter {
        Globs {
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
        }
        .compile()
        .unwrap()
    }

    #[test]
    fn globs_match_names_anywhere_and_paths_from_the_root() {
        let all = globs(&[], &[]);
        assert!(all.keeps("src/a.rs"));
        let rs = globs(&["*.rs"], &[]);
        assert!(rs.keeps("src/deep/a.rs") && !rs.keeps("src/a.py"));
        let src = globs(&["src/"], &["*_test.rs", "fixtures"]);
        assert!(src.keeps("src/a.rs"));
        assert!(!src.keeps("lib/a.rs"));
        assert!(!src.keeps("src/a_test.rs"));
        assert!(!src.keeps("src/fixtures/x.rs"));
        let star = globs(&["src/*.rs"], &[]);
        assert!(star.keeps("src/a.rs") && !star.keeps("src/x/a.rs"));
        let deep = globs(&["src/**/*.rs"], &[]);
        assert!(deep.keeps("src/x/y/a.rs") && deep.keeps("src/a.rs"));
        let err = Globs {
            include: vec!["src/[".into()],
            exclude: vec![],
        }
        .compile()
        .err()
        .unwrap();
        assert!(err.to_string().contains("src/["), "{err}");
    }

    #[test]
    fn honours_gitignore_and_skips_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("target/out.rs"), "x").unwrap();
        std::fs::write(root.join("debug.log"), "x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root, root.join("src/loop")).unwrap();
        let (files, warnings) = walk(root, &WalkOptions::default());
        let rels: Vec<_> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, ["src/main.rs"]);
        #[cfg(unix)]
        assert!(
            warnings.iter().any(|w| w.contains("src/loop")),
            "{warnings:?}"
        );
        let (files, warnings) = walk(
            root,
            &WalkOptions {
                follow_links: true,
                ..Default::default()
            },
        );
        assert!(files.iter().any(|f| f.rel == "src/main.rs"));
        #[cfg(unix)]
        assert!(
            warnings.iter().any(|w| w.to_lowercase().contains("loop")),
            "{warnings:?}"
        );
    }
}
