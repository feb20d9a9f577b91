//! Which folders of the server's machine an API caller may name as a local source: only those
//! inside one of the operator's roots (`ctxgate serve --local-root DIR`).
//!
//! A local source (a folder, or a git repository by `file://` URL or path) names a path on the
//! machine that runs the server, so without a rule a caller could index another org's checkout
//! or a home directory, and learn from the errors which paths exist. The rule, in order:
//!
//! 1. the path must be able to name a file at all ([`parse_path`]: UTF-8, no NUL, at most
//!    [`MAX_PATH_BYTES`], no name over [`MAX_NAME_BYTES`]), else [`LocalPathError::Invalid`];
//! 2. it must be absolute, hold no `..`, and start with a root as the operator wrote it or as
//!    it resolves;
//! 3. walking down from the root, every prefix that exists must resolve (symlinks followed)
//!    inside a root and outside the withheld folders (the server's data directory, which holds
//!    its secrets, [`LocalRoots::withholding`]); a link that cannot be resolved (dangling, a
//!    loop, unreadable) is refused too, since where it leads depends on paths outside.
//!
//! Steps 2 and 3 refuse with the one [`LocalPathError::NotAllowed`], and step 3 never looks
//! below a prefix that resolved outside, so the answer is the same for a path that exists and
//! one that does not. Only once the walk has stayed inside does a missing folder say so (the
//! fetch's own `repo_not_found`): existence inside a root is what the root grants.
//!
//! The walk asks a `lookup` about each prefix (the host canonicalizes; the tests pass a table),
//! so the decision is pure and tested here.

use std::path::{Component, Path, PathBuf};

/// The longest local path accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest name within a local path, in bytes (`NAME_MAX` of common file systems).
pub const MAX_NAME_BYTES: usize = 255;

/// Why a local source is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LocalPathError {
    /// The path cannot name a file on any machine (`source_bad_path`, 400).
    #[error("invalid local path: {0}")]
    Invalid(&'static str),
    /// The path is not inside one of the operator's roots, however it is outside
    /// (`source_not_allowed`, 403). The same whether or not the path exists.
    #[error(
        "this server indexes local folders only inside the folders its operator allows \
         (`ctxgate serve --local-root`), as absolute paths without `..`"
    )]
    NotAllowed,
}

/// `bytes` as a path, if it can name a file: UTF-8, not empty, no NUL, at most
/// [`MAX_PATH_BYTES`] bytes and no name longer than [`MAX_NAME_BYTES`]. Decided on the text
/// alone, so it says nothing about the machine.
pub fn parse_path(bytes: &[u8]) -> Result<&Path, LocalPathError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| LocalPathError::Invalid("the path is not valid UTF-8"))?;
    if text.is_empty() {
        return Err(LocalPathError::Invalid("the path is empty"));
    }
    if bytes.contains(&0) {
        return Err(LocalPathError::Invalid("the path contains a NUL byte"));
    }
    if bytes.len() > MAX_PATH_BYTES {
        return Err(LocalPathError::Invalid(
            "the path is longer than 4096 bytes",
        ));
    }
    if text.split('/').any(|name| name.len() > MAX_NAME_BYTES) {
        return Err(LocalPathError::Invalid(
            "a name in the path is longer than 255 bytes",
        ));
    }
    Ok(Path::new(text))
}

/// What the host found at one path of the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Something is there; this is its canonical path (every link resolved).
    Found(PathBuf),
    /// Nothing is there, not even a link.
    Missing,
    /// Something is there that does not resolve: a dangling link, a loop, an unreadable folder
    /// on the way, a file used as a folder.
    Unresolvable,
}

/// A local source's path once admitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The canonical path of the deepest prefix that exists, with the missing names after it:
    /// what the fetch should read (never a path through a link).
    pub path: PathBuf,
    /// Whether the whole path exists.
    pub exists: bool,
}

/// One root: as the operator wrote it (made absolute) and as it resolved when the server
/// started.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LocalRoot {
    written: PathBuf,
    canonical: PathBuf,
}

/// The folders under which a server indexes local sources for API callers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalRoots {
    roots: Vec<LocalRoot>,
    /// Canonical folders inside a root that are outside all the same (the server's own data
    /// directory, which holds its secrets).
    withheld: Vec<PathBuf>,
}

impl LocalRoots {
    /// The roots, each as `(written, canonical)`: the path the operator gave, made absolute,
    /// and what it resolves to (the host canonicalizes at start-up).
    pub fn new(roots: impl IntoIterator<Item = (PathBuf, PathBuf)>) -> Self {
        Self {
            roots: roots
                .into_iter()
                .map(|(written, canonical)| LocalRoot { written, canonical })
                .collect(),
            withheld: Vec::new(),
        }
    }

    /// The same roots with the canonical folder `folder` and everything below it counted as
    /// outside, wherever it lies.
    pub fn withholding(mut self, folder: PathBuf) -> Self {
        self.withheld.push(folder);
        self
    }

    /// Whether there is no root (local sources are refused altogether).
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The roots' canonical paths.
    pub fn canonical(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.canonical.as_path())
    }

    /// Whether the canonical path `real` is a root or below one (by whole names: `/srv/ab` is
    /// not below `/srv/a`), and not withheld.
    pub fn contains(&self, real: &Path) -> bool {
        self.roots.iter().any(|r| real.starts_with(&r.canonical))
            && !self.withheld.iter().any(|w| real.starts_with(w))
    }

    /// `path` admitted under the roots, or [`LocalPathError::NotAllowed`]; `lookup` is asked
    /// about each prefix below the root, from the top, and never about one below a prefix
    /// that resolved outside every root.
    pub fn resolve(
        &self,
        path: &Path,
        mut lookup: impl FnMut(&Path) -> Lookup,
    ) -> Result<Resolved, LocalPathError> {
        if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            return Err(LocalPathError::NotAllowed);
        }
        let (root, rest) = self
            .roots
            .iter()
            .find_map(|r| {
                let rest = path
                    .strip_prefix(&r.written)
                    .or_else(|_| path.strip_prefix(&r.canonical));
                rest.ok().map(|rest| (r, rest))
            })
            .ok_or(LocalPathError::NotAllowed)?;
        if !self.contains(&root.canonical) {
            return Err(LocalPathError::NotAllowed);
        }
        let names: Vec<Component> = rest.components().collect();
        let mut at = root.canonical.clone();
        for (i, name) in names.iter().enumerate() {
            let next = at.join(name);
            match lookup(&next) {
                Lookup::Found(real) if self.contains(&real) => at = real,
                Lookup::Found(_) | Lookup::Unresolvable => return Err(LocalPathError::NotAllowed),
                // Nothing below a missing name exists: the rest is plain names inside.
                Lookup::Missing => {
                    let path = names[i..].iter().fold(at, |p, n| p.join(n));
                    return Ok(Resolved {
                        path,
                        exists: false,
                    });
                }
            }
        }
        Ok(Resolved {
            path: at,
            exists: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A file system as a table: path → what a lookup finds there (canonical path, or a link
    /// that does not resolve); absent paths are missing.
    struct Disk(HashMap<PathBuf, Lookup>);

    impl Disk {
        fn new(entries: &[(&str, Option<&str>)]) -> Self {
            Self(
                entries
                    .iter()
                    .map(|(p, real)| {
                        let found = match real {
                            Some(r) => Lookup::Found(PathBuf::from(r)),
                            None => Lookup::Unresolvable,
                        };
                        (PathBuf::from(p), found)
                    })
                    .collect(),
            )
        }

        /// Resolves `path` under `roots`, recording every path asked about.
        fn resolve(
            &self,
            roots: &LocalRoots,
            path: &str,
        ) -> (Result<Resolved, LocalPathError>, Vec<PathBuf>) {
            let mut asked = Vec::new();
            let out = roots.resolve(Path::new(path), |p| {
                asked.push(p.to_path_buf());
                self.0.get(p).cloned().unwrap_or(Lookup::Missing)
            });
            (out, asked)
        }
    }

    fn roots() -> LocalRoots {
        // `/home/u/src` is a link to `/data/src`; `/srv/code` is itself.
        LocalRoots::new([
            ("/home/u/src".into(), "/data/src".into()),
            ("/srv/code".into(), "/srv/code".into()),
        ])
    }

    fn disk() -> Disk {
        Disk::new(&[
            ("/data/src/app", Some("/data/src/app")),
            ("/data/src/app/lib", Some("/data/src/app/lib")),
            ("/data/src/app/README.md", Some("/data/src/app/README.md")),
            // Links inside the root: one staying in, one to the other root, two leaving.
            ("/data/src/alias", Some("/data/src/app")),
            ("/data/src/shared", Some("/srv/code/shared")),
            ("/srv/code/shared", Some("/srv/code/shared")),
            ("/data/src/escape", Some("/home/other")),
            ("/data/src/etc", Some("/etc")),
            // A link whose target is missing, and a loop.
            ("/data/src/dangling", None),
            ("/data/src/loop", None),
            // Outside: exists, and a link from outside back into the root.
            ("/home/other", Some("/home/other")),
            ("/home/other/back", Some("/data/src/app")),
        ])
    }

    fn ok(path: &str, exists: bool) -> Result<Resolved, LocalPathError> {
        Ok(Resolved {
            path: path.into(),
            exists,
        })
    }

    #[test]
    fn inside_a_root_resolves_to_the_canonical_path() {
        let (roots, disk) = (roots(), disk());
        for (given, want) in [
            ("/home/u/src/app", "/data/src/app"),
            ("/data/src/app", "/data/src/app"),
            ("/home/u/src/app/lib/", "/data/src/app/lib"),
            ("/home/u/src/./app", "/data/src/app"),
            ("/home/u/src", "/data/src"),
            ("/home/u/src/alias", "/data/src/app"),
            ("/home/u/src/shared", "/srv/code/shared"),
            ("/home/u/src/app/README.md", "/data/src/app/README.md"),
        ] {
            assert_eq!(disk.resolve(&roots, given).0, ok(want, true), "{given}");
        }
        // Missing inside a root: admitted, and the fetch reports it.
        assert_eq!(
            disk.resolve(&roots, "/home/u/src/app/gone/deeper").0,
            ok("/data/src/app/gone/deeper", false)
        );
        assert_eq!(
            disk.resolve(&roots, "/home/u/src/alias/new").0,
            ok("/data/src/app/new", false)
        );
    }

    #[test]
    fn outside_every_root_is_one_refusal_whether_or_not_it_exists() {
        let (roots, disk) = (roots(), disk());
        for given in [
            // Directly: existing and missing.
            "/home/other",
            "/home/nobody",
            "/etc",
            "/",
            // A name that only begins like a root.
            "/srv/code2/app",
            "/home/u/srcx",
            // Through `..`, even when it would come back inside.
            "/home/u/src/../../other",
            "/home/u/src/../src/app",
            "/srv/code/../../home/other",
            "/srv/code/../nowhere",
            // Through a link that leaves, to an existing or a missing path below it.
            "/home/u/src/escape",
            "/home/u/src/escape/back",
            "/home/u/src/escape/missing",
            "/home/u/src/etc/passwd",
            // Links that do not resolve.
            "/home/u/src/dangling",
            "/home/u/src/loop/x",
            // Relative paths.
            "app",
            "./app",
            "home/u/src/app",
        ] {
            let (out, asked) = disk.resolve(&roots, given);
            assert_eq!(out, Err(LocalPathError::NotAllowed), "{given}");
            // Nothing outside is ever looked at.
            assert!(
                asked
                    .iter()
                    .all(|p| p.starts_with("/data/src") || p.starts_with("/srv/code")),
                "{given}: asked about {asked:?}"
            );
        }
    }

    #[test]
    fn the_walk_stops_at_the_first_prefix_that_leaves() {
        let (roots, disk) = (roots(), disk());
        let (out, asked) = disk.resolve(&roots, "/home/u/src/escape/back/lib");
        assert_eq!(out, Err(LocalPathError::NotAllowed));
        assert_eq!(asked, [PathBuf::from("/data/src/escape")]);
    }

    #[test]
    fn a_withheld_folder_is_outside_whether_or_not_it_exists() {
        let roots = roots().withholding("/data/src/app/.ctxgate".into());
        let disk = Disk::new(&[
            ("/data/src/app", Some("/data/src/app")),
            ("/data/src/app/.ctxgate", Some("/data/src/app/.ctxgate")),
            (
                "/data/src/app/.ctxgate/secrets",
                Some("/data/src/app/.ctxgate/secrets"),
            ),
            ("/data/src/data", Some("/data/src/app/.ctxgate")),
        ]);
        for given in [
            "/home/u/src/app/.ctxgate",
            "/home/u/src/app/.ctxgate/secrets",
            "/home/u/src/app/.ctxgate/missing",
            "/home/u/src/data/secrets",
        ] {
            let (out, asked) = disk.resolve(&roots, given);
            assert_eq!(out, Err(LocalPathError::NotAllowed), "{given}");
            // Nothing below the withheld folder is looked at.
            let withheld = Path::new("/data/src/app/.ctxgate");
            assert!(
                asked
                    .iter()
                    .all(|p| !p.starts_with(withheld) || p == withheld),
                "{given}: asked about {asked:?}"
            );
        }
        assert_eq!(
            disk.resolve(&roots, "/home/u/src/app").0,
            ok("/data/src/app", true)
        );
        // A root inside the withheld folder admits nothing.
        let inside = LocalRoots::new([("/d/x".into(), "/d/x".into())]).withholding("/d".into());
        assert_eq!(
            disk.resolve(&inside, "/d/x").0,
            Err(LocalPathError::NotAllowed)
        );
    }

    #[test]
    fn without_roots_nothing_is_admitted() {
        let none = LocalRoots::default();
        assert!(none.is_empty());
        let (out, asked) = disk().resolve(&none, "/data/src/app");
        assert_eq!(out, Err(LocalPathError::NotAllowed));
        assert!(asked.is_empty());
    }

    #[test]
    fn containment_is_by_whole_names() {
        let roots = roots();
        assert!(roots.contains(Path::new("/data/src")));
        assert!(roots.contains(Path::new("/data/src/app/x")));
        assert!(!roots.contains(Path::new("/data/srcx")));
        assert!(!roots.contains(Path::new("/data")));
        assert!(!roots.contains(Path::new("/home/u/src/app")));
    }

    #[test]
    fn paths_that_name_nothing_are_invalid() {
        assert_eq!(parse_path(b"/srv/code/app"), Ok(Path::new("/srv/code/app")));
        let invalid = |bytes: &[u8]| matches!(parse_path(bytes), Err(LocalPathError::Invalid(_)));
        assert!(invalid(b"/srv/code/a\0b"));
        assert!(invalid(b"\0"));
        assert!(invalid(b"/srv/\xff\xfe"));
        assert!(invalid(b""));
        let long = format!("/{}", "a/".repeat(MAX_PATH_BYTES / 2));
        assert!(invalid(long.as_bytes()));
        let long_name = format!("/srv/{}", "n".repeat(MAX_NAME_BYTES + 1));
        assert!(invalid(long_name.as_bytes()));
        let longest_name = format!("/srv/{}", "n".repeat(MAX_NAME_BYTES));
        assert!(parse_path(longest_name.as_bytes()).is_ok());
        let longest: String = (0..MAX_PATH_BYTES)
            .map(|i| if i % 100 == 0 { '/' } else { 'a' })
            .collect();
        assert_eq!(longest.len(), MAX_PATH_BYTES);
        assert!(parse_path(longest.as_bytes()).is_ok());
    }
}
