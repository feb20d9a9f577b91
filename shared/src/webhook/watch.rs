//! Whether a push moves what a project indexes.
//!
//! A project follows one git repository at one rev ([`SourceSpec::Git`]): a branch, a tag, a
//! commit, or the remote's `HEAD` (its default branch). A push concerns it when the push's
//! repository is that repository and its ref is the one followed. Repositories are compared by
//! [`repository_key`], which reduces every URL form a forge or a user writes (`https://`,
//! `ssh://`, `git://`, scp-like `git@host:path`, with or without `.git`, a user, a port or a
//! trailing slash) to `host/path`; hosted paths are compared without case, as GitHub and
//! GitLab resolve them.

use crate::source::SourceSpec;

use super::push::Push;

/// What a push means for a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The followed branch or tag moved: index the project again.
    Reindex,
    /// The same repository, but nothing the project follows moved.
    Unwatched(Unwatched),
    /// The push is about another repository (the hook is set on the wrong one).
    OtherRepository,
    /// The project's files do not come from a git repository.
    NotGit,
}

/// Why a push to the project's repository changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unwatched {
    /// Another branch or tag than the one followed.
    OtherRef,
    /// The ref was deleted.
    Deleted,
    /// The project is pinned to a commit, which no push moves.
    PinnedCommit,
}

impl Unwatched {
    /// The reason as answers name it.
    pub fn reason(self) -> &'static str {
        match self {
            Unwatched::OtherRef => "ref_not_watched",
            Unwatched::Deleted => "ref_deleted",
            Unwatched::PinnedCommit => "pinned_to_a_commit",
        }
    }
}

/// What `push` means for a project indexed from `source`.
pub fn verdict(source: &SourceSpec, push: &Push) -> Verdict {
    let SourceSpec::Git { url, rev, .. } = source else {
        return Verdict::NotGit;
    };
    if !same_repository(url, &push.repository_urls) {
        return Verdict::OtherRepository;
    }
    let followed = match rev.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
        None => format!("refs/heads/{}", push.default_branch),
        Some(r) if is_commit_id(r) => return Verdict::Unwatched(Unwatched::PinnedCommit),
        Some(r) if r.starts_with("refs/") => r.to_owned(),
        Some(r) => {
            // A bare name is a branch or a tag, as git resolves it for a fetch.
            let pushed = push.git_ref.as_str();
            if pushed == format!("refs/heads/{r}") || pushed == format!("refs/tags/{r}") {
                pushed.to_owned()
            } else {
                format!("refs/heads/{r}")
            }
        }
    };
    if push.git_ref != followed {
        Verdict::Unwatched(Unwatched::OtherRef)
    } else if push.deleted {
        Verdict::Unwatched(Unwatched::Deleted)
    } else {
        Verdict::Reindex
    }
}

/// Whether `url` (the project's) names the repository of any of `pushed` (the payload's).
pub fn same_repository(url: &str, pushed: &[String]) -> bool {
    let Some(ours) = repository_key(url) else {
        return false;
    };
    pushed
        .iter()
        .filter_map(|u| repository_key(u))
        .any(|theirs| theirs == ours)
}

/// A full commit id (40 hex digits for SHA-1, 64 for SHA-256 repositories).
fn is_commit_id(rev: &str) -> bool {
    matches!(rev.len(), 40 | 64) && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A repository URL reduced to what identifies the repository: `host/path` for a network URL
/// (no scheme, user, port, `.git` or trailing slash; lower case), `file:path` for one on this
/// machine (case kept). `None` for what is not a repository URL.
pub fn repository_key(url: &str) -> Option<String> {
    let url = url.trim();
    if let Some((scheme, rest)) = url.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            return local_key(rest);
        }
        if !matches!(
            scheme.as_str(),
            "https" | "http" | "ssh" | "git" | "git+ssh"
        ) {
            return None;
        }
        let rest = rest.split(['?', '#']).next().unwrap_or("");
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or("");
        // `[::1]:22`: the port follows the bracket; `host:22`: the last colon.
        let host = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => host.split(':').next().unwrap_or(""),
        };
        return network_key(host, path);
    }
    // scp-like `user@host:path` (git treats a colon before any slash this way).
    if let Some((authority, path)) = url.split_once(':')
        && !authority.contains('/')
        && authority.contains('@')
    {
        let host = authority.rsplit('@').next().unwrap_or("");
        return network_key(host, path);
    }
    local_key(url)
}

fn network_key(host: &str, path: &str) -> Option<String> {
    let path = trim_path(path);
    if host.is_empty() || path.is_empty() {
        return None;
    }
    Some(format!("{}/{}", host, path).to_ascii_lowercase())
}

fn local_key(path: &str) -> Option<String> {
    let path = trim_path(path);
    (!path.is_empty()).then(|| format!("file:/{path}"))
}

/// The path without surrounding slashes, a trailing `.git` or a trailing `/.git`.
fn trim_path(path: &str) -> &str {
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    path.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(git_ref: &str, urls: &[&str]) -> Push {
        Push {
            repository_urls: urls.iter().map(|u| u.to_string()).collect(),
            git_ref: git_ref.into(),
            default_branch: "main".into(),
            after: "a".repeat(40),
            deleted: false,
        }
    }

    fn git(url: &str, rev: Option<&str>) -> SourceSpec {
        SourceSpec::Git {
            url: url.into(),
            rev: rev.map(String::from),
            credential: None,
        }
    }

    #[test]
    fn every_url_form_of_one_repository_has_one_key() {
        let forms = [
            "https://github.com/Acme/Web.git",
            "https://github.com/acme/web",
            "https://github.com/acme/web/",
            "http://github.com/acme/web.git",
            "https://user:token@github.com/acme/web.git",
            "https://github.com:443/acme/web",
            "ssh://git@github.com/acme/web.git",
            "ssh://git@github.com:22/acme/web.git",
            "git://github.com/acme/web.git",
            "git@github.com:acme/web.git",
            "git@github.com:/acme/web",
        ];
        for f in forms {
            assert_eq!(
                repository_key(f).as_deref(),
                Some("github.com/acme/web"),
                "{f}"
            );
        }
        for other in [
            "https://github.com/acme/web2",
            "https://gitlab.com/acme/web",
            "https://github.com/acme",
            "https://github.com/other/web",
        ] {
            assert_ne!(
                repository_key(other).as_deref(),
                Some("github.com/acme/web")
            );
        }
        assert_eq!(repository_key("https:///nohost"), None);
        assert_eq!(repository_key("ftp://h/r"), None);
        assert_eq!(repository_key(""), None);
    }

    #[test]
    fn local_repositories_compare_by_path_with_case() {
        assert_eq!(
            repository_key("file:///srv/Repo/").as_deref(),
            Some("file:/srv/Repo")
        );
        assert_eq!(
            repository_key("/srv/Repo.git"),
            repository_key("file:///srv/Repo")
        );
        assert_ne!(repository_key("/srv/repo"), repository_key("/srv/Repo"));
        assert_ne!(
            repository_key("/srv/repo"),
            repository_key("https://srv/repo")
        );
    }

    #[test]
    fn the_followed_ref_decides() {
        let urls = [
            "https://github.com/acme/web.git",
            "git@github.com:acme/web.git",
        ];
        let head = git("git@github.com:acme/web", None);
        assert_eq!(
            verdict(&head, &push("refs/heads/main", &urls)),
            Verdict::Reindex
        );
        assert_eq!(
            verdict(&head, &push("refs/heads/dev", &urls)),
            Verdict::Unwatched(Unwatched::OtherRef)
        );
        assert_eq!(
            verdict(&head, &push("refs/tags/main", &urls)),
            Verdict::Unwatched(Unwatched::OtherRef)
        );
        let dev = git("https://github.com/acme/web", Some("dev"));
        assert_eq!(
            verdict(&dev, &push("refs/heads/dev", &urls)),
            Verdict::Reindex
        );
        assert_eq!(
            verdict(&dev, &push("refs/heads/main", &urls)),
            Verdict::Unwatched(Unwatched::OtherRef)
        );
        let tag = git("https://github.com/acme/web", Some("v1"));
        assert_eq!(
            verdict(&tag, &push("refs/tags/v1", &urls)),
            Verdict::Reindex
        );
        let full = git("https://github.com/acme/web", Some("refs/heads/dev"));
        assert_eq!(
            verdict(&full, &push("refs/heads/dev", &urls)),
            Verdict::Reindex
        );
        let pinned = git("https://github.com/acme/web", Some(&"b".repeat(40)));
        assert_eq!(
            verdict(&pinned, &push("refs/heads/main", &urls)),
            Verdict::Unwatched(Unwatched::PinnedCommit)
        );
        let mut deleted = push("refs/heads/main", &urls);
        deleted.deleted = true;
        assert_eq!(
            verdict(&head, &deleted),
            Verdict::Unwatched(Unwatched::Deleted)
        );
    }

    #[test]
    fn another_repository_or_source_kind_is_named() {
        let head = git("https://github.com/acme/web", None);
        assert_eq!(
            verdict(
                &head,
                &push("refs/heads/main", &["https://github.com/acme/api.git"])
            ),
            Verdict::OtherRepository
        );
        assert_eq!(
            verdict(&head, &push("refs/heads/main", &[])),
            Verdict::OtherRepository
        );
        let tarball = SourceSpec::Tarball {
            url: "https://github.com/acme/web/archive/main.tar.gz".into(),
        };
        assert_eq!(
            verdict(
                &tarball,
                &push("refs/heads/main", &["https://github.com/acme/web"])
            ),
            Verdict::NotGit
        );
    }
}
