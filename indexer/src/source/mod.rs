//! Where a project's files come from: a local folder, a git URL or a tarball URL.
//!
//! [`fetch`] puts a source's files in a folder the indexer can walk and says which revision it
//! got; [`probe_revision`] asks only for the revision, so the scheduled re-indexer can skip a
//! project whose source has not changed for the price of one small request.
//!
//! Remote sources are hostile input. Git goes through gitoxide (pure Rust: nothing to install in
//! Lambda) and is materialised by walking the commit's tree ourselves; tarballs are unpacked
//! entry by entry. Both write through one [`extract`] gate that refuses absolute paths, `..`,
//! links that resolve outside the root (also through other links), devices and fifos, and holds
//! the size and file-count limits, so a hostile server can neither write outside the work folder
//! nor fill the disk.
//!
//! Everything here blocks (reqwest's blocking client, gitoxide's blocking transport): call it
//! from a plain thread or `tokio::task::spawn_blocking`, never directly on an async executor.
//!
//! The hosted service should accept only [`SourceSpec::is_remote`] sources: a local folder or a
//! `file://` git URL reads the host's own disk. A server that reads folders for its callers
//! admits them under its operator's roots first ([`local::admit`]).

mod extract;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod git;
pub mod local;
mod network;
mod tarball;

pub use ctxgate_core::credential::Credential;
pub use ctxgate_core::source::SourceSpec;
pub use network::{NetworkPolicy, is_public};

use std::path::{Path, PathBuf};

/// How much a source may bring in. The download (git pack or tarball) and the unpacked files are
/// each held to `max_bytes`; every file, folder and link counts towards `max_files`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceLimits {
    /// Bytes of download and of unpacked file contents.
    pub max_bytes: u64,
    /// Entries written (files, folders, links).
    pub max_files: u64,
    /// Which hosts and schemes may be reached.
    pub network: NetworkPolicy,
    /// Commits of a git source's first-parent history fetched with it (at least 1: the commit
    /// itself), read for which commit wrote each line (the `history` ranking signal). A
    /// download that would exceed `max_bytes` with them is fetched again without.
    pub history_commits: u32,
}

/// Commits of history fetched with a git source by default: as many as the history walk reads
/// at most ([`crate::history::MAX_COMMITS`]), and the one below them (a shallow fetch's last
/// commit is its boundary, not walked); the measurement found the whole history worth more
/// than a short window (docs/retrieval.md, "The project's own history").
pub const DEFAULT_HISTORY_COMMITS: u32 = crate::history::MAX_COMMITS + 1;

impl Default for SourceLimits {
    /// 1 GiB and 200,000 entries: above any repository worth a context window, below a full
    /// Lambda `/tmp`. The network is open: the CLI and the operator's jobs name their own URLs.
    fn default() -> Self {
        Self {
            max_bytes: 1 << 30,
            max_files: 200_000,
            network: NetworkPolicy::Open,
            history_commits: DEFAULT_HISTORY_COMMITS,
        }
    }
}

/// A source's files on disk.
///
/// For git and tarballs `root` lies in a temporary folder owned by this value: dropping it
/// deletes the files, so keep it alive while indexing.
#[derive(Debug)]
pub struct Fetched {
    /// The project's root folder.
    pub root: PathBuf,
    /// What was fetched: the commit id for git, the SHA-256 (hex) of the downloaded bytes for a
    /// tarball (equal archives share it), `None` for a local folder.
    pub revision: Option<String>,
    /// What [`probe_revision`] answers for this same content (the commit id, a tarball's strong
    /// ETag): store it and compare it with a later probe to skip an unchanged source.
    pub probe_token: Option<String>,
    /// Entries left out on purpose (links leaving the root, submodules), for the user to see.
    pub warnings: Vec<String>,
    /// For git, the fetched repository (bare, its HEAD the commit `root` holds), where the
    /// files' history is read; `None` for other sources.
    pub git_dir: Option<PathBuf>,
    _dir: Option<tempfile::TempDir>,
}

impl Fetched {
    /// Logs [`Self::warnings`] for `project`: what was left out (history, links, submodules)
    /// changes what the index holds, so every host that fetches says it the same way.
    pub fn log_warnings(&self, project: &dyn std::fmt::Display) {
        for warning in &self.warnings {
            tracing::warn!(project = %project, "{warning}");
        }
    }
}

/// Everything that can stop fetching a source.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The download or the unpacked files exceed [`SourceLimits::max_bytes`].
    #[error("{what} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// What grew too large: "the download", "the unpacked files".
        what: &'static str,
        /// The limit in bytes.
        limit: u64,
    },
    /// The source has more entries than [`SourceLimits::max_files`].
    #[error("the source has more than {limit} files")]
    TooManyFiles {
        /// The limit.
        limit: u64,
    },
    /// An archive entry or git tree entry would escape the root or is not a plain file, folder
    /// or link; the whole source is refused.
    #[error("refused entry `{path}`: {why}")]
    UnsafeEntry {
        /// The entry's path as the source gave it.
        path: String,
        /// Why it was refused.
        why: &'static str,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}")]
    Http {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The server could not be reached or the transfer broke.
    #[error("network error for {url}: {message}")]
    Network {
        /// The URL asked.
        url: String,
        /// What went wrong, with its causes.
        message: String,
    },
    /// Git failed (connection, protocol, authentication, object database).
    #[error("git: {0}")]
    Git(String),
    /// The asked revision is not on the remote.
    #[error("`{rev}` is not a commit, branch or tag of {url}")]
    NotFound {
        /// The repository.
        url: String,
        /// The revision asked.
        rev: String,
    },
    /// The revision cannot be asked for as written.
    #[error("revision `{rev}`: {why}")]
    BadRev {
        /// The revision asked.
        rev: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The URL cannot be parsed.
    #[error("`{url}` is not a valid URL: {why}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// Why it was refused.
        why: String,
    },
    /// The source is one this server's [`NetworkPolicy`] does not reach (a private address,
    /// plain HTTP, a path on this machine).
    #[error("{url}: {why}")]
    NotAllowed {
        /// The URL or path given.
        url: String,
        /// Why it was refused.
        why: String,
    },
    /// The URL's scheme is not one this kind of source can fetch.
    #[error("a {kind} source cannot use the `{scheme}` scheme")]
    Unsupported {
        /// The scheme.
        scheme: String,
        /// "git" or "tarball".
        kind: &'static str,
    },
    /// The git server asks for credentials and the source names none.
    #[error(
        "{url} requires authentication: register a credential and name it in the source (\"credential\")"
    )]
    AuthRequired {
        /// The repository.
        url: String,
    },
    /// The git server refused the credential the source names (wrong, expired, or without
    /// access to the repository).
    #[error("{url} refused the credential")]
    CredentialRejected {
        /// The repository.
        url: String,
    },
    /// The source names a credential the project's org does not have.
    #[error("no credential `{name}` in this organisation")]
    CredentialNotFound {
        /// The name the source gives.
        name: String,
    },
    /// The credential store could not be read.
    #[error("reading credential `{name}`: {message}")]
    CredentialStore {
        /// The name the source gives.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The download is not a (gzip-compressed) tar archive, or is corrupt.
    #[error("not a readable tar or tar.gz archive: {0}")]
    BadArchive(String),
    /// The local folder does not exist.
    #[error("folder `{0}` does not exist")]
    Missing(PathBuf),
    /// The local path is not a folder.
    #[error("`{0}` is not a folder")]
    NotADirectory(PathBuf),
    /// The local path cannot name a file (a NUL byte, too long, not UTF-8): decided on its text
    /// alone, which is not repeated (it may be megabytes, or hold control bytes).
    #[error("invalid local path: {0}")]
    BadPath(&'static str),
    /// A file operation on this machine failed.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
}

impl SourceError {
    /// Whether the caller's input is at fault (a 4xx answer, a CLI exit code 2) rather than the
    /// network, the remote's availability or this machine.
    pub fn is_user_error(&self) -> bool {
        match self {
            SourceError::TooLarge { .. }
            | SourceError::TooManyFiles { .. }
            | SourceError::UnsafeEntry { .. }
            | SourceError::NotFound { .. }
            | SourceError::BadRev { .. }
            | SourceError::BadUrl { .. }
            | SourceError::Unsupported { .. }
            | SourceError::NotAllowed { .. }
            | SourceError::BadArchive(_)
            | SourceError::Missing(_)
            | SourceError::NotADirectory(_)
            | SourceError::BadPath(_)
            | SourceError::AuthRequired { .. }
            | SourceError::CredentialRejected { .. }
            | SourceError::CredentialNotFound { .. } => true,
            SourceError::Http { status, .. } => (400..500).contains(status),
            SourceError::Network { .. }
            | SourceError::Git(_)
            | SourceError::Io { .. }
            | SourceError::CredentialStore { .. } => false,
        }
    }

    /// The error with every text it carries scrubbed of `credential`'s token in any form, and
    /// of URL passwords and `Authorization` values whatever they are
    /// ([`ctxgate_core::credential`]): what gitoxide or the HTTP client report can quote a URL
    /// or a request.
    pub fn scrubbed(self, credential: Option<&Credential>) -> Self {
        let clean = |s: String| match credential {
            Some(c) => c.scrub(&s),
            None => ctxgate_core::credential::scrub(&s),
        };
        match self {
            SourceError::Http { url, status } => SourceError::Http {
                url: clean(url),
                status,
            },
            SourceError::Network { url, message } => SourceError::Network {
                url: clean(url),
                message: clean(message),
            },
            SourceError::Git(m) => SourceError::Git(clean(m)),
            SourceError::NotFound { url, rev } => SourceError::NotFound {
                url: clean(url),
                rev,
            },
            SourceError::BadUrl { url, why } => SourceError::BadUrl {
                url: clean(url),
                why: clean(why),
            },
            SourceError::NotAllowed { url, why } => SourceError::NotAllowed {
                url: clean(url),
                why: clean(why),
            },
            SourceError::AuthRequired { url } => SourceError::AuthRequired { url: clean(url) },
            SourceError::CredentialRejected { url } => {
                SourceError::CredentialRejected { url: clean(url) }
            }
            SourceError::CredentialStore { name, message } => SourceError::CredentialStore {
                name,
                message: clean(message),
            },
            SourceError::BadArchive(m) => SourceError::BadArchive(clean(m)),
            other => other,
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| SourceError::Io {
            action,
            path,
            source,
        }
    }
}

/// Puts the source's files on disk; git and tarball sources go to a new temporary folder inside
/// `work_dir`, deleted when the returned [`Fetched`] is dropped. `credential` is the secret the
/// source names, looked up by the caller in the project's org ([`crate::credentials::resolve`]).
pub fn fetch(
    spec: &SourceSpec,
    credential: Option<&Credential>,
    limits: &SourceLimits,
    work_dir: &Path,
) -> Result<Fetched, SourceError> {
    match spec {
        SourceSpec::Local { path } => fetch_local(Path::new(path)),
        SourceSpec::Git { url, rev, .. } => {
            git::fetch(url, rev.as_deref(), credential, limits, work_dir)
        }
        SourceSpec::Tarball { url } => {
            tarball::fetch(url, limits, work_dir).map_err(|e| e.scrubbed(None))
        }
    }
}

/// The source's current revision without downloading it: for git the commit the rev (or `HEAD`)
/// points to on the remote, from the ref advertisement alone (a pinned commit id is answered
/// without asking); for a tarball the strong ETag of an HTTP `HEAD` (`None` when the server gives
/// none); for a local folder `None`, and the caller falls back to the stat-based incremental
/// index.
pub fn probe_revision(
    spec: &SourceSpec,
    credential: Option<&Credential>,
    network: NetworkPolicy,
) -> Result<Option<String>, SourceError> {
    match spec {
        SourceSpec::Local { .. } => Ok(None),
        SourceSpec::Git { url, rev, .. } => {
            git::probe(url, rev.as_deref(), credential, network).map(Some)
        }
        SourceSpec::Tarball { url } => tarball::probe(url, network).map_err(|e| e.scrubbed(None)),
    }
}

fn fetch_local(path: &Path) -> Result<Fetched, SourceError> {
    let root = match std::fs::canonicalize(path) {
        Ok(root) => root,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SourceError::Missing(path.to_path_buf()));
        }
        Err(e) => return Err(SourceError::io("resolving", path)(e)),
    };
    if !root.is_dir() {
        return Err(SourceError::NotADirectory(root));
    }
    Ok(Fetched {
        root,
        revision: None,
        probe_token: None,
        warnings: Vec::new(),
        git_dir: None,
        _dir: None,
    })
}

/// Installs rustls' ring provider as the process default once: reqwest is built without its own
/// provider (no aws-lc C build), and both our client and gitoxide's HTTP transport use it.
pub(crate) fn ensure_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another part of the process installed one first, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A new temporary folder inside `work_dir`.
fn temp_dir_in(work_dir: &Path) -> Result<tempfile::TempDir, SourceError> {
    tempfile::Builder::new()
        .prefix("ctxgate-source-")
        .tempdir_in(work_dir)
        .map_err(SourceError::io("creating a temporary folder in", work_dir))
}

/// An error and its causes on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = c.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_spec_json_shapes() {
        let cases = [
            (
                r#"{"kind":"local","path":"/src"}"#,
                SourceSpec::Local {
                    path: "/src".into(),
                },
            ),
            (
                r#"{"kind":"git","url":"https://h/r.git","rev":"v1"}"#,
                SourceSpec::Git {
                    url: "https://h/r.git".into(),
                    rev: Some("v1".into()),
                    credential: None,
                },
            ),
            (
                r#"{"kind":"tarball","url":"https://h/a.tgz"}"#,
                SourceSpec::Tarball {
                    url: "https://h/a.tgz".into(),
                },
            ),
        ];
        for (json, spec) in cases {
            assert_eq!(serde_json::from_str::<SourceSpec>(json).unwrap(), spec);
            let back: SourceSpec =
                serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
            assert_eq!(back, spec);
        }
        let no_rev: SourceSpec =
            serde_json::from_str(r#"{"kind":"git","url":"https://h/r.git"}"#).unwrap();
        assert_eq!(
            no_rev,
            SourceSpec::Git {
                url: "https://h/r.git".into(),
                rev: None,
                credential: None,
            }
        );
        assert!(serde_json::from_str::<SourceSpec>(r#"{"kind":"svn","url":"x"}"#).is_err());
    }

    #[test]
    fn source_local_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "x").unwrap();
        let spec = SourceSpec::Local {
            path: dir.path().display().to_string(),
        };
        let got = fetch(&spec, None, &SourceLimits::default(), dir.path()).unwrap();
        assert_eq!(got.root, std::fs::canonicalize(dir.path()).unwrap());
        assert_eq!(got.revision, None);
        assert_eq!(
            probe_revision(&spec, None, NetworkPolicy::Open).unwrap(),
            None
        );

        let file = SourceSpec::Local {
            path: dir.path().join("f.txt").display().to_string(),
        };
        let err = fetch(&file, None, &SourceLimits::default(), dir.path()).unwrap_err();
        assert!(matches!(err, SourceError::NotADirectory(_)), "{err}");
        assert!(err.is_user_error());

        let missing = SourceSpec::Local {
            path: dir.path().join("nope").display().to_string(),
        };
        let err = fetch(&missing, None, &SourceLimits::default(), dir.path()).unwrap_err();
        assert!(matches!(err, SourceError::Missing(_)), "{err}");
    }

    #[test]
    fn source_user_errors() {
        let http = |status| SourceError::Http {
            url: "u".into(),
            status,
        };
        assert!(http(404).is_user_error());
        assert!(!http(503).is_user_error());
        assert!(!SourceError::Git("x".into()).is_user_error());
    }
}
