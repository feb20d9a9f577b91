//! Where a project's files come from: the one description every host shares.
//!
//! The API registers a source, the indexer fetches it, the scheduled pass re-probes it and the
//! Worker forwards it to the Lambda; all of them read and write this enum's JSON, and the hosted
//! service's safety rests on [`SourceSpec::is_remote`] meaning the same thing everywhere.
//!
//! Where a version's files came from is recorded too: [`Origin`] (the git remote without
//! credentials, the commit, the folder's place in the repository), in the version's manifest,
//! from which [`source_link`] makes a piece's commit-pinned link on GitHub or GitLab.

use serde::{Deserialize, Serialize};

/// Where a project's files come from.
///
/// JSON shape: `{"kind":"local","path":..}` |
/// `{"kind":"git","url":..,"rev":null|"..","credential"?:".."}` | `{"kind":"tarball","url":..}`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceSpec {
    /// A folder on this machine (the CLI, or a server started with local paths allowed).
    Local {
        /// The folder.
        path: String,
    },
    /// A git repository.
    Git {
        /// Any URL git understands: `https://`, `ssh://` or `user@host:path`, `git://`, `file://`.
        url: String,
        /// A full commit id, a branch or a tag; `None` is the remote's `HEAD`.
        #[serde(default)]
        rev: Option<String>,
        /// The name of a credential the operator stored for the project's org, to fetch a
        /// private repository with over http(s): a reference only, the token stays with the
        /// host (see `crate::credential`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        credential: Option<String>,
    },
    /// A `.tar` or `.tar.gz` over HTTP(S), such as a forge's archive download.
    Tarball {
        /// The archive's URL.
        url: String,
    },
}

/// Schemes that reach another machine for git.
const GIT_SCHEMES: &[&str] = &["https", "http", "ssh", "git"];
/// Schemes that reach another machine for a tarball.
const TARBALL_SCHEMES: &[&str] = &["https", "http"];

impl SourceSpec {
    /// How the source is shown to users: the path, the URL, or `url#rev` for a pinned git rev.
    pub fn describe(&self) -> String {
        match self {
            SourceSpec::Local { path } => path.clone(),
            SourceSpec::Git { url, rev: None, .. } => url.clone(),
            SourceSpec::Git {
                url, rev: Some(r), ..
            } => format!("{url}#{r}"),
            SourceSpec::Tarball { url } => url.clone(),
        }
    }

    /// The credential the source names, if any (git sources only).
    pub fn credential(&self) -> Option<&str> {
        match self {
            SourceSpec::Git { credential, .. } => credential.as_deref(),
            _ => None,
        }
    }

    /// Whether the source is fetched over the network rather than read from this machine's disk:
    /// the hosted service refuses the others, which would let a caller read the host's files.
    /// Deliberately narrow: anything it does not recognise as a network URL counts as local.
    pub fn is_remote(&self) -> bool {
        match self {
            SourceSpec::Local { .. } => false,
            SourceSpec::Git { url, .. } => network_url(url, GIT_SCHEMES) || scp_like(url),
            SourceSpec::Tarball { url } => network_url(url, TARBALL_SCHEMES),
        }
    }
}

/// `scheme://host…` with a non-empty host and one of `schemes`.
fn network_url(url: &str, schemes: &[&str]) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    schemes.contains(&scheme.to_ascii_lowercase().as_str()) && !host.is_empty()
}

/// git's scp-like form, `user@host:path` (a path or a Windows drive letter has no `user@`).
fn scp_like(url: &str) -> bool {
    url.split_once(':')
        .is_some_and(|(host, path)| host.contains('@') && !host.contains('/') && !path.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(url: &str) -> SourceSpec {
        SourceSpec::Git {
            url: url.into(),
            rev: None,
            credential: None,
        }
    }

    fn tarball(url: &str) -> SourceSpec {
        SourceSpec::Tarball { url: url.into() }
    }

    #[test]
    fn remote_or_local() {
        assert!(git("https://example.com/r.git").is_remote());
        assert!(git("ssh://git@example.com/r.git").is_remote());
        assert!(git("git://example.com/r.git").is_remote());
        assert!(git("git@example.com:o/r.git").is_remote());
        assert!(!git("file:///srv/r.git").is_remote());
        assert!(!git("/srv/r.git").is_remote());
        assert!(!git("./a@b:c").is_remote());
        assert!(!git(r"C:\repos\r").is_remote());
        assert!(!git("https:///no-host").is_remote());
        assert!(
            !SourceSpec::Local {
                path: "/srv".into()
            }
            .is_remote()
        );
        assert!(tarball("https://e/a.tgz").is_remote());
        assert!(tarball("HTTP://e/a.tgz").is_remote());
        assert!(!tarball("file:///etc/a.tgz").is_remote());
        assert!(!tarball("git@e:a.tgz").is_remote());
    }

    #[test]
    fn described_as_users_wrote_it() {
        let pinned = SourceSpec::Git {
            url: "https://h/r.git".into(),
            rev: Some("v1".into()),
            credential: Some("ci".into()),
        };
        // The credential's name is not part of how the source is shown.
        assert_eq!(pinned.describe(), "https://h/r.git#v1");
        assert_eq!(git("https://h/r.git").describe(), "https://h/r.git");
    }

    #[test]
    fn json_shape() {
        let spec: SourceSpec =
            serde_json::from_str(r#"{"kind":"git","url":"https://h/r.git"}"#).unwrap();
        assert_eq!(spec, git("https://h/r.git"));
        assert!(serde_json::from_str::<SourceSpec>(r#"{"kind":"svn","url":"x"}"#).is_err());
        // Records written before credentials parse, and a source without one writes none.
        assert_eq!(
            serde_json::to_string(&git("https://h/r.git")).unwrap(),
            r#"{"kind":"git","url":"https://h/r.git","rev":null}"#
        );
        let private: SourceSpec = serde_json::from_str(
            r#"{"kind":"git","url":"https://h/r.git","credential":"ci-token"}"#,
        )
        .unwrap();
        assert_eq!(private.credential(), Some("ci-token"));
    }
}

// Where an indexed file can be read by a person: the repository a version was indexed from
// ([`Origin`], recorded in its manifest) and, for each piece, a link pinned to that commit
// ([`source_link`]) on the hosts whose URL scheme is known (GitHub, GitLab).
//
// A remote is stored without credentials ([`Origin::new`] drops any user or password in the
// URL), so neither the manifest nor a link can carry one.

/// The repository a version's files came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Origin {
    /// The git remote, without credentials (`https://github.com/acme/app.git`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The commit indexed (full hex id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Where the indexed folder is inside the repository (`""`: its root; else `a/b`), so a
    /// link names the file's path in the repository, not in the folder.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subdir: String,
}

impl Origin {
    /// An origin with `remote` stripped of credentials; a commit that is not hex is dropped.
    pub fn new(remote: Option<&str>, commit: Option<&str>, subdir: &str) -> Self {
        Self {
            remote: remote.map(without_credentials).filter(|r| !r.is_empty()),
            commit: commit
                .filter(|c| c.len() >= 7 && c.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(str::to_ascii_lowercase),
            subdir: subdir.trim_matches('/').to_string(),
        }
    }

    /// The repository's web page (`https://github.com/acme/app`), when the remote is on a host
    /// whose links [`source_link`] knows.
    pub fn web(&self) -> Option<(Forge, String)> {
        let (host, path) = host_and_path(self.remote.as_deref()?)?;
        let forge = Forge::of(&host)?;
        let path = path.trim_end_matches('/').trim_end_matches(".git");
        let ok = !path.is_empty()
            && path.split('/').count() >= 2
            && path
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
        ok.then(|| (forge, format!("https://{host}/{path}")))
    }
}

/// A code host whose file links are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forge {
    /// `github.com` and GitHub Enterprise hosts (`github.` in the name).
    GitHub,
    /// `gitlab.com` and self-managed GitLab (`gitlab.` in the name).
    GitLab,
}

impl Forge {
    fn of(host: &str) -> Option<Self> {
        let h = host.to_ascii_lowercase();
        let labels: Vec<&str> = h.split('.').collect();
        if labels.contains(&"github") {
            Some(Self::GitHub)
        } else if labels.contains(&"gitlab") {
            Some(Self::GitLab)
        } else {
            None
        }
    }
}

/// The commit-pinned web link to lines `start..=end` of `path` (relative to the indexed
/// folder), or `None` when the origin has no commit or no known host.
pub fn source_link(origin: &Origin, path: &str, start: u32, end: u32) -> Option<String> {
    let commit = origin.commit.as_deref()?;
    let (forge, web) = origin.web()?;
    let mut full = String::new();
    if !origin.subdir.is_empty() {
        full.push_str(&origin.subdir);
        full.push('/');
    }
    full.push_str(path.trim_start_matches('/'));
    let full = encode_path(&full);
    Some(match forge {
        Forge::GitHub => format!("{web}/blob/{commit}/{full}#L{start}-L{end}"),
        Forge::GitLab => format!("{web}/-/blob/{commit}/{full}#L{start}-{end}"),
    })
}

/// A URL with any `user:password@` taken out; scp-like remotes (`git@host:path`) keep their
/// user, which is the protocol's, not a secret.
fn without_credentials(url: &str) -> String {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}{tail}")
}

/// The host and the path of a remote (`https://`, `ssh://`, `git://` or `user@host:path`).
fn host_and_path(remote: &str) -> Option<(String, String)> {
    if let Some((_, rest)) = remote.split_once("://") {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = host.split(':').next()?;
        return Some((host.to_string(), path.to_string()));
    }
    // scp-like: `git@github.com:acme/app.git`.
    let (user_host, path) = remote.split_once(':')?;
    let host = user_host.rsplit_once('@').map_or(user_host, |(_, h)| h);
    (!host.is_empty() && !path.starts_with('/')).then(|| (host.to_string(), path.to_string()))
}

/// A repository path as a URL path: each segment percent-encoded where it must be.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod provenance_tests {
    use super::*;

    const C: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn github_and_gitlab_links_are_pinned_to_the_commit() {
        let o = Origin::new(Some("https://github.com/acme/app.git"), Some(C), "");
        assert_eq!(
            source_link(&o, "src/lib.rs", 3, 9).unwrap(),
            format!("https://github.com/acme/app/blob/{C}/src/lib.rs#L3-L9")
        );
        let o = Origin::new(Some("git@gitlab.com:group/sub/app.git"), Some(C), "pkg/");
        assert_eq!(
            source_link(&o, "a b.rs", 1, 2).unwrap(),
            format!("https://gitlab.com/group/sub/app/-/blob/{C}/pkg/a%20b.rs#L1-2")
        );
    }

    #[test]
    fn credentials_never_reach_the_origin_or_a_link() {
        let o = Origin::new(
            Some("https://x-access-token:ghp_secret@github.com/acme/app"),
            Some(C),
            "",
        );
        assert_eq!(o.remote.as_deref(), Some("https://github.com/acme/app"));
        let link = source_link(&o, "f.rs", 1, 1).unwrap();
        assert!(!link.contains("ghp_secret"), "{link}");
    }

    #[test]
    fn no_link_without_a_commit_or_a_known_host() {
        let o = Origin::new(Some("https://example.com/acme/app.git"), Some(C), "");
        assert_eq!(source_link(&o, "f.rs", 1, 1), None);
        let o = Origin::new(Some("https://github.com/acme/app"), None, "");
        assert_eq!(source_link(&o, "f.rs", 1, 1), None);
        let o = Origin::new(Some("https://github.com/acme/app"), Some("HEAD"), "");
        assert_eq!(o.commit, None);
    }
}
