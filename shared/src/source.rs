//! Where a project's files come from: the one description every host shares.
//!
//! The API registers a source, the indexer fetches it, the scheduled pass re-probes it and the
//! Worker forwards it to the Lambda; all of them read and write this enum's JSON, and the hosted
//! service's safety rests on [`SourceSpec::is_remote`] meaning the same thing everywhere.

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
