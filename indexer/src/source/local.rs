//! Local sources under the operator's roots: the file-system side of
//! [`ctxgate_core::local_roots`] (each prefix of a path canonicalized in turn), and the path
//! each kind of local source reads (a folder's, or a git URL's as gitoxide reads it).
//!
//! What [`admit`] hands back is fetched by its canonical path, never through the links the
//! caller wrote, and a git repository is named by a `file://` URL that gitoxide is checked to
//! read back as that path.

use std::path::Path;

use ctxgate_core::local_roots::{LocalPathError, LocalRoots, Lookup, parse_path};
use gix::bstr::ByteSlice;

use super::{SourceError, SourceSpec};

/// What a source reads from this machine's disk.
enum Reads {
    /// Nothing: a network source, a tarball (fetched over http(s) only), or a git URL
    /// gitoxide cannot parse (refused by the fetch before anything is read).
    Nothing,
    /// This path: a folder, or a git repository by `file://` URL or plain path.
    Path(Vec<u8>),
    /// Something that is not a plain path on this machine (a remote helper such as `ext::`, a
    /// `file://` URL with a host): never admitted under roots.
    Other,
}

fn reads(spec: &SourceSpec) -> Reads {
    if spec.is_remote() {
        return Reads::Nothing;
    }
    match spec {
        SourceSpec::Local { path } => Reads::Path(path.as_bytes().to_vec()),
        SourceSpec::Git { url, .. } => match gix::url::parse(url.as_bytes().as_bstr()) {
            Err(_) => Reads::Nothing,
            Ok(u) if plain_file(&u) => Reads::Path(u.path.to_vec()),
            Ok(_) => Reads::Other,
        },
        SourceSpec::Tarball { .. } => Reads::Nothing,
    }
}

/// A `file://` URL or a plain path: what gitoxide reads as a repository on this machine.
fn plain_file(u: &gix::Url) -> bool {
    u.scheme == gix::url::Scheme::File
        && u.host().is_none()
        && u.user().is_none()
        && u.port.is_none()
}

/// Refuses a local source whose path cannot name a file (a NUL byte, too long, not UTF-8)
/// with [`SourceError::BadPath`]: decided on the text alone, so it comes before any other
/// refusal. Every other source passes.
pub fn check_form(spec: &SourceSpec) -> Result<(), SourceError> {
    match reads(spec) {
        Reads::Path(bytes) => parse_path(&bytes).map(|_| ()).map_err(|e| refusal(spec, e)),
        Reads::Nothing | Reads::Other => Ok(()),
    }
}

/// `spec` as a server that reads local sources only under `roots` should fetch it: a network
/// source (or one that reads no path) unchanged; a folder or a git repository on this machine
/// by its canonical path once [`LocalRoots::resolve`] admitted it. Refusals:
/// [`SourceError::BadPath`] (`source_bad_path`), [`SourceError::NotAllowed`]
/// (`source_not_allowed`, the same whether or not the path exists) and, only for a path inside
/// a root, [`SourceError::Missing`] (`repo_not_found`).
pub fn admit(spec: &SourceSpec, roots: &LocalRoots) -> Result<SourceSpec, SourceError> {
    let given = match reads(spec) {
        Reads::Nothing => return Ok(spec.clone()),
        Reads::Other => return Err(refusal(spec, LocalPathError::NotAllowed)),
        Reads::Path(bytes) => bytes,
    };
    let path = parse_path(&given).map_err(|e| refusal(spec, e))?;
    let resolved = roots.resolve(path, lookup).map_err(|e| refusal(spec, e))?;
    if !resolved.exists {
        // Inside a root (the walk stayed there): whether it exists is the root's to tell. A git
        // repository is not handed to git by a missing path, which git would try with `.git`
        // suffixes of its own.
        return Err(SourceError::Missing(path.to_path_buf()));
    }
    let real = resolved
        .path
        .to_str()
        .ok_or(SourceError::BadPath(
            "the folder's real path is not valid UTF-8",
        ))?
        .to_owned();
    match spec {
        SourceSpec::Local { .. } => Ok(SourceSpec::Local { path: real }),
        SourceSpec::Git {
            rev, credential, ..
        } => {
            let url = format!("file://{real}");
            // Only a URL that gitoxide reads back as exactly the admitted path.
            match gix::url::parse(url.as_bytes().as_bstr()) {
                Ok(u) if plain_file(&u) && u.path == real.as_bytes() => Ok(SourceSpec::Git {
                    url,
                    rev: rev.clone(),
                    credential: credential.clone(),
                }),
                _ => Err(refusal(spec, LocalPathError::NotAllowed)),
            }
        }
        SourceSpec::Tarball { .. } => Ok(spec.clone()),
    }
}

fn refusal(spec: &SourceSpec, e: LocalPathError) -> SourceError {
    match e {
        LocalPathError::Invalid(why) => SourceError::BadPath(why),
        LocalPathError::NotAllowed => SourceError::NotAllowed {
            url: spec.describe(),
            why: e.to_string(),
        },
    }
}

/// What is at `path`: its canonical form, nothing, or a link that does not resolve.
fn lookup(path: &Path) -> Lookup {
    match std::fs::canonicalize(path) {
        Ok(real) => Lookup::Found(real),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::symlink_metadata(path)
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Lookup::Missing,
            // A link to a missing target: where it leads is outside knowledge.
            _ => Lookup::Unresolvable,
        },
        Err(_) => Lookup::Unresolvable,
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    /// `<tmp>/root/app` (a folder), `<tmp>/outside/secret` (a folder), and links in the root to
    /// the app, to outside, and to a missing path outside.
    fn layout() -> (tempfile::TempDir, PathBuf, LocalRoots) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::create_dir_all(base.join("outside/secret")).unwrap();
        symlink(root.join("app"), root.join("alias")).unwrap();
        symlink(base.join("outside"), root.join("escape")).unwrap();
        symlink(base.join("outside/none"), root.join("dangling")).unwrap();
        std::fs::write(root.join("app/file.txt"), "x").unwrap();
        let roots = LocalRoots::new([(root.clone(), root.clone())]);
        (tmp, base, roots)
    }

    fn local(path: impl AsRef<Path>) -> SourceSpec {
        SourceSpec::Local {
            path: path.as_ref().to_str().unwrap().to_owned(),
        }
    }

    fn git(url: String) -> SourceSpec {
        SourceSpec::Git {
            url,
            rev: Some("main".into()),
            credential: None,
        }
    }

    #[test]
    fn folders_inside_are_fetched_by_their_real_path() {
        let (_tmp, base, roots) = layout();
        let app = base.join("root/app").to_str().unwrap().to_owned();
        for given in [base.join("root/app"), base.join("root/alias")] {
            assert_eq!(admit(&local(&given), &roots).unwrap(), local(&app));
        }
        let admitted = admit(
            &git(format!("file://{}", base.join("root/alias").display())),
            &roots,
        );
        assert_eq!(admitted.unwrap(), git(format!("file://{app}")));
        let admitted = admit(&git(base.join("root/app").display().to_string()), &roots);
        assert_eq!(admitted.unwrap(), git(format!("file://{app}")));
        // A file inside is admitted; the fetch says it is not a folder.
        assert!(admit(&local(base.join("root/app/file.txt")), &roots).is_ok());
    }

    #[test]
    fn missing_inside_is_reported_missing() {
        let (_tmp, base, roots) = layout();
        for spec in [
            local(base.join("root/gone")),
            git(format!("file://{}", base.join("root/app/gone").display())),
        ] {
            let err = admit(&spec, &roots).unwrap_err();
            assert!(matches!(err, SourceError::Missing(_)), "{spec:?}: {err}");
        }
    }

    #[test]
    fn outside_is_refused_alike_whether_or_not_it_exists() {
        let (_tmp, base, roots) = layout();
        let b = base.display();
        let specs = [
            local(base.join("outside/secret")),
            local(base.join("outside/none")),
            local(format!("{b}/root/../outside/secret")),
            local(format!("{b}/root/../outside/none")),
            local(base.join("root/escape/secret")),
            local(base.join("root/escape/none")),
            local(base.join("root/dangling")),
            local("relative/app"),
            git(format!("file://{b}/outside/secret")),
            git(format!("file://{b}/root/escape/none")),
            git(format!("file://localhost{b}/root/app")),
            git("ext::sh -c touch% /tmp/pwned".into()),
        ];
        for spec in specs {
            let err = admit(&spec, &roots).unwrap_err();
            let SourceError::NotAllowed { url, why } = &err else {
                panic!("{spec:?}: {err}");
            };
            assert_eq!(url, &spec.describe());
            assert_eq!(why, &LocalPathError::NotAllowed.to_string());
        }
    }

    #[test]
    fn paths_that_name_nothing_are_bad_paths_before_anything_else() {
        let (_tmp, base, roots) = layout();
        for spec in [
            local(format!("{}/root/a\0b", base.display())),
            local("/outside\0"),
            local(format!("/{}", "a".repeat(5000))),
            git(format!("file://{}/root/a\0b", base.display())),
        ] {
            let err = admit(&spec, &roots).unwrap_err();
            assert!(matches!(err, SourceError::BadPath(_)), "{spec:?}: {err}");
            assert!(matches!(check_form(&spec), Err(SourceError::BadPath(_))));
        }
        assert!(check_form(&local("/fine")).is_ok());
        // Network sources pass untouched.
        let remote = git("https://example.com/r.git".into());
        assert_eq!(admit(&remote, &roots).unwrap(), remote);
    }
}
