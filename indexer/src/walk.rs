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
