//! The one gate through which remote sources write files.
//!
//! Paths are parsed, not trusted: an entry path is a list of plain names (no root, no `..`), and
//! folders are created by us, so nothing is written outside the root. Links are created last,
//! after every file is written, so no file can be written through one; each link target must stay
//! inside the root lexically, and once all links exist each is resolved for real and removed if
//! a chain of links leads outside (`a -> deep/x/..` where `deep/x` is itself a link upwards).
//! Hard links are copied, never linked. Bytes and entries are counted against the limits as they
//! are written.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::{SourceError, SourceLimits};

/// A relative path made only of plain names; the only kind of path the [`Extractor`] writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct SafePath(Vec<String>);

impl SafePath {
    /// Parses a `/`-separated path from an archive or tree; `.` and empty components are
    /// dropped. Refuses absolute paths, `..`, NUL bytes and names that are not UTF-8.
    pub(super) fn parse(raw: &[u8]) -> Result<Self, &'static str> {
        if raw.first() == Some(&b'/') {
            return Err("absolute path");
        }
        if raw.contains(&0) {
            return Err("NUL byte in path");
        }
        let mut parts = Vec::new();
        for part in raw.split(|&b| b == b'/') {
            match part {
                b"" | b"." => {}
                b".." => return Err("`..` in path"),
                name => {
                    let name = std::str::from_utf8(name).map_err(|_| "path is not UTF-8")?;
                    if name.contains('\\') {
                        return Err("backslash in path");
                    }
                    parts.push(name.to_owned());
                }
            }
        }
        Ok(Self(parts))
    }

    /// A path of one more name, itself checked like a component of [`SafePath::parse`].
    pub(super) fn join(&self, name: &[u8]) -> Result<Self, &'static str> {
        let one = Self::parse(name)?;
        if one.0.len() != 1 || name.contains(&b'/') {
            return Err("tree entry name is not a single plain name");
        }
        let mut parts = self.0.clone();
        parts.extend(one.0);
        Ok(Self(parts))
    }

    /// The empty path (the root itself).
    pub(super) fn root() -> Self {
        Self(Vec::new())
    }

    fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    fn parent(&self) -> Option<Self> {
        (!self.0.is_empty()).then(|| Self(self.0[..self.0.len() - 1].to_vec()))
    }

    fn under(&self, root: &Path) -> PathBuf {
        let mut p = root.to_path_buf();
        p.extend(&self.0);
        p
    }

    /// The first name, for finding a single top-level folder.
    fn top(&self) -> Option<&str> {
        self.0.first().map(String::as_str)
    }
}

impl std::fmt::Display for SafePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("/"))
    }
}

/// What to do with a link that would leave the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LinkPolicy {
    /// Refuse the whole source (archives: a hostile archive is refused whole).
    Refuse,
    /// Leave the link out with a warning (git: a repository may hold an absolute link to a
    /// system file, which is nothing to index anyway).
    Skip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Link,
}

/// Writes entries below `root` within the limits.
pub(super) struct Extractor {
    root: PathBuf,
    limits: SourceLimits,
    policy: LinkPolicy,
    bytes: u64,
    entries: u64,
    kinds: HashMap<SafePath, Kind>,
    links: Vec<(SafePath, Vec<u8>)>,
    warnings: Vec<String>,
}

impl Extractor {
    /// An extractor writing below `root`, which must exist and be empty.
    pub(super) fn new(root: PathBuf, limits: SourceLimits, policy: LinkPolicy) -> Self {
        Self {
            root,
            limits,
            policy,
            bytes: 0,
            entries: 0,
            kinds: HashMap::new(),
            links: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Counts one entry against the file limit, also for entries that are not written.
    pub(super) fn count_entry(&mut self) -> Result<(), SourceError> {
        self.entries += 1;
        if self.entries > self.limits.max_files {
            return Err(SourceError::TooManyFiles {
                limit: self.limits.max_files,
            });
        }
        Ok(())
    }

    /// Room left for file contents.
    pub(super) fn bytes_left(&self) -> u64 {
        self.limits.max_bytes.saturating_sub(self.bytes)
    }

    fn too_large(&self) -> SourceError {
        SourceError::TooLarge {
            what: "the unpacked files",
            limit: self.limits.max_bytes,
        }
    }

    /// Creates a folder (and its parents).
    pub(super) fn dir(&mut self, path: &SafePath) -> Result<(), SourceError> {
        self.parents(path)?;
        if path.is_root() {
            return Ok(());
        }
        match self.kinds.get(path) {
            Some(Kind::Dir) => return Ok(()),
            Some(_) => return Err(unsafe_entry(path, "a folder replaces another entry")),
            None => {}
        }
        let abs = path.under(&self.root);
        std::fs::create_dir(&abs).map_err(SourceError::io("creating folder", &abs))?;
        self.kinds.insert(path.clone(), Kind::Dir);
        Ok(())
    }

    /// Writes a file of `size` bytes (as declared) from `content`, executable or not.
    pub(super) fn file(
        &mut self,
        path: &SafePath,
        size: u64,
        content: &mut dyn Read,
        executable: bool,
    ) -> Result<(), SourceError> {
        if path.is_root() {
            return Err(unsafe_entry(path, "a file entry without a name"));
        }
        if size > self.bytes_left() {
            return Err(self.too_large());
        }
        self.parents(path)?;
        match self.kinds.get(path) {
            None => {}
            // A later entry of the same file wins, as in tar.
            Some(Kind::File) => {
                let abs = path.under(&self.root);
                std::fs::remove_file(&abs).map_err(SourceError::io("replacing", &abs))?;
            }
            Some(_) => return Err(unsafe_entry(path, "a file replaces a folder or a link")),
        }
        let abs = path.under(&self.root);
        let mut out = create_new(&abs, executable)?;
        // Read at most one byte past the declared size: an entry may not grow while written.
        let mut limited = content.take(size.saturating_add(1));
        let mut buf = vec![0u8; 64 * 1024];
        let mut written = 0u64;
        loop {
            let n = match limited.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(SourceError::BadArchive(super::error_chain(&e))),
            };
            written += n as u64;
            if written > size {
                return Err(unsafe_entry(path, "content longer than its declared size"));
            }
            if written > self.bytes_left() {
                return Err(self.too_large());
            }
            out.write_all(&buf[..n])
                .map_err(SourceError::io("writing", &abs))?;
        }
        self.bytes += written;
        self.kinds.insert(path.clone(), Kind::File);
        Ok(())
    }

    /// Records a symbolic link to create at the end, if its target stays inside the root.
    pub(super) fn symlink(&mut self, path: &SafePath, target: &[u8]) -> Result<(), SourceError> {
        if path.is_root() {
            return Err(unsafe_entry(path, "a link entry without a name"));
        }
        if let Err(why) = lexical_target(path, target) {
            return self.refuse_link(path, why);
        }
        self.parents(path)?;
        if self.kinds.contains_key(path) {
            return Err(unsafe_entry(path, "a link replaces another entry"));
        }
        self.kinds.insert(path.clone(), Kind::Link);
        self.links.push((path.clone(), target.to_vec()));
        Ok(())
    }

    /// A hard link to an earlier file of the same source, written as a copy of it.
    pub(super) fn hardlink(
        &mut self,
        path: &SafePath,
        target: &SafePath,
    ) -> Result<(), SourceError> {
        if self.kinds.get(target) != Some(&Kind::File) {
            return Err(unsafe_entry(
                path,
                "hard link to something that is not an earlier file of the archive",
            ));
        }
        let source = target.under(&self.root);
        let size = std::fs::metadata(&source)
            .map_err(SourceError::io("reading", &source))?
            .len();
        let executable = is_executable(&source);
        let mut from = std::fs::File::open(&source).map_err(SourceError::io("reading", &source))?;
        self.file(path, size, &mut from, executable)
    }

    /// Creates the recorded links, then resolves each and removes those that lead outside
    /// `project_root` (the root, or the single top-level folder that becomes the project's root).
    /// Returns the warnings collected.
    pub(super) fn finish(mut self, project_root: &Path) -> Result<Vec<String>, SourceError> {
        let links = std::mem::take(&mut self.links);
        for (path, target) in &links {
            let abs = path.under(&self.root);
            make_symlink(target, &abs)?;
        }
        let canonical_root = std::fs::canonicalize(project_root)
            .map_err(SourceError::io("resolving", project_root))?;
        for (path, _) in &links {
            let abs = path.under(&self.root);
            let escapes = match std::fs::canonicalize(&abs) {
                Ok(real) => !real.starts_with(&canonical_root),
                // Dangling or looping: useless to the index, and it stays that way.
                Err(_) => {
                    std::fs::remove_file(&abs).map_err(SourceError::io("removing", &abs))?;
                    self.warnings
                        .push(format!("left out link `{path}`: its target does not exist"));
                    continue;
                }
            };
            if escapes {
                std::fs::remove_file(&abs).map_err(SourceError::io("removing", &abs))?;
                self.refuse_link(path, "link resolves outside the root through other links")?;
            }
        }
        Ok(self.warnings)
    }

    /// The single top-level folder, if every entry lies inside one (a forge's `repo-abc123/`).
    pub(super) fn single_top_folder(&self) -> Option<PathBuf> {
        let mut top = None;
        for path in self.kinds.keys() {
            let name = path.top()?;
            match top {
                None => top = Some(name),
                Some(t) if t == name => {}
                Some(_) => return None,
            }
        }
        let name = top?;
        let dir = SafePath(vec![name.to_owned()]);
        (self.kinds.get(&dir) == Some(&Kind::Dir)).then(|| dir.under(&self.root))
    }

    fn refuse_link(&mut self, path: &SafePath, why: &'static str) -> Result<(), SourceError> {
        match self.policy {
            LinkPolicy::Refuse => Err(unsafe_entry(path, why)),
            LinkPolicy::Skip => {
                self.warnings.push(format!("left out link `{path}`: {why}"));
                Ok(())
            }
        }
    }

    /// Creates the folders above `path`; none of them may be a file or a pending link.
    fn parents(&mut self, path: &SafePath) -> Result<(), SourceError> {
        let mut ancestors = Vec::new();
        let mut cur = path.parent();
        while let Some(p) = cur {
            if p.is_root() {
                break;
            }
            cur = p.parent();
            ancestors.push(p);
        }
        for dir in ancestors.into_iter().rev() {
            match self.kinds.get(&dir) {
                Some(Kind::Dir) => continue,
                Some(Kind::Link) => {
                    return Err(unsafe_entry(path, "path passes through a symbolic link"));
                }
                Some(Kind::File) => return Err(unsafe_entry(path, "path passes through a file")),
                None => {}
            }
            self.count_entry()?;
            let abs = dir.under(&self.root);
            std::fs::create_dir(&abs).map_err(SourceError::io("creating folder", &abs))?;
            self.kinds.insert(dir, Kind::Dir);
        }
        Ok(())
    }
}

fn unsafe_entry(path: &SafePath, why: &'static str) -> SourceError {
    SourceError::UnsafeEntry {
        path: path.to_string(),
        why,
    }
}

/// Checks that `target`, read from the folder holding `link`, names a place inside the root
/// without leaving it on the way.
fn lexical_target(link: &SafePath, target: &[u8]) -> Result<(), &'static str> {
    if target.is_empty() {
        return Err("empty link target");
    }
    if target.first() == Some(&b'/') {
        return Err("link to an absolute path");
    }
    if target.contains(&0) || target.contains(&b'\\') {
        return Err("link target holds NUL or backslash");
    }
    let mut depth = link.0.len().saturating_sub(1);
    for part in target.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => depth = depth.checked_sub(1).ok_or("link target leaves the root")?,
            _ => depth += 1,
        }
    }
    Ok(())
}

fn create_new(abs: &Path, executable: bool) -> Result<std::fs::File, SourceError> {
    let mut options = std::fs::OpenOptions::new();
    // create_new never follows an existing link at the path.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    options.open(abs).map_err(SourceError::io("creating", abs))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_: &Path) -> bool {
    false
}

#[cfg(unix)]
fn make_symlink(target: &[u8], abs: &Path) -> Result<(), SourceError> {
    use std::os::unix::ffi::OsStrExt;
    std::os::unix::fs::symlink(OsStr::from_bytes(target), abs)
        .map_err(SourceError::io("creating link", abs))
}

/// Without unix links the entry is left out; the walker skips links anyway unless asked.
#[cfg(not(unix))]
fn make_symlink(_: &[u8], _: &Path) -> Result<(), SourceError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> SafePath {
        SafePath::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn source_safe_path_parsing() {
        assert_eq!(p("a/./b//c/").to_string(), "a/b/c");
        assert!(SafePath::parse(b"/etc/passwd").is_err());
        assert!(SafePath::parse(b"a/../../b").is_err());
        assert!(SafePath::parse(b"..").is_err());
        assert!(SafePath::parse(b"a\0b").is_err());
        assert!(SafePath::parse(b"a\\..\\b").is_err());
        assert!(p("a").join(b"..").is_err());
        assert!(p("a").join(b"b/c").is_err());
        assert!(p("a").join(b"").is_err());
        assert_eq!(p("a").join(b"b").unwrap().to_string(), "a/b");
    }

    #[test]
    fn source_link_targets_checked_lexically() {
        assert!(lexical_target(&p("a/b/l"), b"../c").is_ok());
        assert!(lexical_target(&p("a/b/l"), b"../../c").is_ok());
        assert!(lexical_target(&p("a/b/l"), b"../../../c").is_err());
        assert!(lexical_target(&p("l"), b"..").is_err());
        assert!(lexical_target(&p("l"), b"x/../..").is_err());
        assert!(lexical_target(&p("l"), b"/etc").is_err());
        assert!(lexical_target(&p("l"), b"").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn source_link_chains_resolved_for_real() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let mut x = Extractor::new(root.clone(), SourceLimits::default(), LinkPolicy::Skip);
        x.dir(&p("deep/deeper")).unwrap();
        x.file(&p("deep/f.txt"), 2, &mut &b"hi"[..], false).unwrap();
        // Each target is inside lexically; together `esc` is root/.. for real.
        x.symlink(&p("esc"), b"deep/deeper/up/..").unwrap();
        x.symlink(&p("deep/deeper/up"), b"../..").unwrap();
        x.symlink(&p("ok"), b"deep/f.txt").unwrap();
        let warnings = x.finish(&root).unwrap();
        assert!(root.join("ok").symlink_metadata().is_ok());
        assert!(root.join("esc").symlink_metadata().is_err());
        assert!(warnings.iter().any(|w| w.contains("`esc`")), "{warnings:?}");
    }
}
