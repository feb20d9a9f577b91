//! Git repositories through gitoxide: fetch into a throwaway bare repository, then write the
//! commit's tree out through the [`Extractor`] (no worktree checkout: one less feature set, and
//! the same path and link checks as for archives).
//!
//! Without a pinned rev, the remote's `HEAD` commit is fetched with the last
//! [`SourceLimits::history_commits`] commits of its history (a shallow fetch of that depth; the
//! history gives each line its writer, `crate::history`; a download too large with it, or a
//! remote that fails to send it, is fetched again at depth 1, with a warning). A branch or tag (a branch first when both exist, as `git clone
//! --branch` does; or a full `refs/...` name) is looked up in the ref advertisement and fetched
//! the same way by its ref name. A full commit id is asked for directly (protocol v2 servers
//! accept any object id); if the server refuses, all branches and tags are fetched with history
//! and the commit looked up there. The throwaway repository's HEAD is set to the commit.
//! The machine's credential helpers are never asked or prompted: a caller-chosen URL must not
//! reach them. A private repository is fetched with the [`Credential`] its source names (looked
//! up by the host in the project's org), given to gitoxide only when the server answers 401 and
//! sent as HTTP Basic `username:token`, the way git does; it is never written into the URL, and
//! every error leaving this module is scrubbed of it.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::cell::Cell;

use ctxgate_core::credential::Credential;
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::protocol::handshake::Ref;
use gix::remote::Direction;
use gix::remote::fetch::{Shallow, Tags};

use super::extract::{Extractor, LinkPolicy, SafePath};
use super::network::{self, NetworkPolicy};
use super::{Fetched, SourceError, SourceLimits};

/// Where the fetched commit is kept in the throwaway repository.
const FETCHED_REF: &str = "refs/ctxgate/fetched";

/// Fetches `rev` (or `HEAD`) of `url` and writes its files into a new folder in `work_dir`.
pub(super) fn fetch(
    url: &str,
    rev: Option<&str>,
    credential: Option<&Credential>,
    limits: &SourceLimits,
    work_dir: &Path,
) -> Result<Fetched, SourceError> {
    fetch_files(url, rev, credential, limits, work_dir).map_err(|e| e.scrubbed(credential))
}

fn fetch_files(
    url: &str,
    rev: Option<&str>,
    credential: Option<&Credential>,
    limits: &SourceLimits,
    work_dir: &Path,
) -> Result<Fetched, SourceError> {
    check_url(url, limits.network, credential)?;
    let dir = super::temp_dir_in(work_dir)?;
    let want = Want::parse(rev)?;
    let auth = Auth::new(credential);
    let by_id = matches!(want, Want::Commit(_));
    let everything = |limits: &SourceLimits| {
        // The server would not hand out the commit by id (an older protocol, or no such
        // commit): take every branch and tag with history and look there.
        fetch_commit(
            url,
            &Want::Everything(rev),
            &auth,
            limits,
            &dir.path().join("full.git"),
        )
    };
    let mut warnings = Vec::new();
    let (repo, commit) =
        match fetch_commit(url, &want, &auth, limits, &dir.path().join("shallow.git")) {
            Ok(found) => found,
            Err(e)
                if limits.history_commits > 1
                    && (matches!(e, SourceError::TooLarge { .. }) || !e.is_user_error()) =>
            {
                // The history is a ranking signal, the files are the index: a download the history
                // made too large, or a remote that failed to send it (a server that cannot pack
                // some old object), is fetched again without it. The failed attempt's objects
                // would hold on to the room the next one needs.
                let why = match e.scrubbed(credential) {
                    SourceError::TooLarge { limit, .. } => {
                        format!("the download exceeds {limit} bytes")
                    }
                    other => other.to_string(),
                };
                let _ = std::fs::remove_dir_all(dir.path().join("shallow.git"));
                let without = SourceLimits {
                    history_commits: 1,
                    ..*limits
                };
                match fetch_commit(url, &want, &auth, &without, &dir.path().join("head.git")) {
                    Ok(found) => {
                        warnings.push(format!(
                            "history left out: fetching {} commits of history failed: {why}",
                            limits.history_commits
                        ));
                        found
                    }
                    // The commit itself is refused by id (not its history): all branches with
                    // their history, as without history asked for.
                    Err(e) if by_id && !e.is_limit() => {
                        let _ = std::fs::remove_dir_all(dir.path().join("head.git"));
                        everything(limits)?
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) if by_id && !e.is_limit() => {
                let _ = std::fs::remove_dir_all(dir.path().join("shallow.git"));
                everything(limits)?
            }
            Err(e) => return Err(e),
        };
    // HEAD names the fetched commit, so the history walk starts there.
    let git_dir = repo.git_dir().to_path_buf();
    if let Err(e) = std::fs::write(git_dir.join("HEAD"), format!("{commit}\n")) {
        warnings.push(format!("history left out: HEAD could not be set: {e}"));
    }
    let root = dir.path().join("files");
    std::fs::create_dir(&root).map_err(SourceError::io("creating folder", &root))?;
    warnings.extend(write_tree(&repo, commit, &root, limits)?);
    let revision = commit.to_hex().to_string();
    Ok(Fetched {
        root,
        revision: Some(revision.clone()),
        probe_token: Some(revision),
        warnings,
        git_dir: Some(git_dir),
        _dir: Some(dir),
    })
}

/// The commit `rev` (or `HEAD`) points to on the remote, from its ref advertisement alone.
pub(super) fn probe(
    url: &str,
    rev: Option<&str>,
    credential: Option<&Credential>,
    policy: NetworkPolicy,
) -> Result<String, SourceError> {
    probe_refs(url, rev, credential, policy).map_err(|e| e.scrubbed(credential))
}

fn probe_refs(
    url: &str,
    rev: Option<&str>,
    credential: Option<&Credential>,
    policy: NetworkPolicy,
) -> Result<String, SourceError> {
    check_url(url, policy, credential)?;
    let want = Want::parse(rev)?;
    if let Want::Commit(id) = want {
        return Ok(id.to_hex().to_string());
    }
    super::ensure_tls_provider();
    let scratch = tempfile::tempdir().map_err(SourceError::io(
        "creating a temporary folder in",
        std::env::temp_dir(),
    ))?;
    let repo = gix::init_bare(scratch.path()).map_err(git_error)?;
    let remote = repo
        .remote_at(url)
        .map_err(|e| bad_url(url, e))?
        .with_fetch_tags(Tags::None)
        .with_refspecs(want.refspecs(), Direction::Fetch)
        .map_err(|_| bad_rev(rev))?;
    let auth = Auth::new(credential);
    let (ref_map, _) = remote
        .connect(Direction::Fetch)
        .map_err(git_error)?
        .with_transport_options(transport_options(policy))
        .with_credentials(|action| Ok(auth.answer(action)))
        .ref_map(gix::progress::Discard, Default::default())
        .map_err(|e| auth.error(url, e))?;
    want.resolve(&ref_map.remote_refs)
        .map(|id| id.to_hex().to_string())
        .ok_or_else(|| not_found(url, rev))
}

/// What to fetch.
enum Want<'a> {
    /// The remote's `HEAD`.
    Head,
    /// A branch, tag or full ref name.
    Name(&'a str),
    /// A full commit id.
    Commit(ObjectId),
    /// All branches and tags with history (the fallback for a commit id).
    Everything(Option<&'a str>),
}

impl<'a> Want<'a> {
    fn parse(rev: Option<&'a str>) -> Result<Self, SourceError> {
        let Some(rev) = rev.map(str::trim) else {
            return Ok(Want::Head);
        };
        if rev.is_empty() {
            return Err(SourceError::BadRev {
                rev: rev.to_owned(),
                why: "empty",
            });
        }
        if rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
            return ObjectId::from_hex(rev.as_bytes())
                .map(Want::Commit)
                .map_err(|_| bad_rev(Some(rev)));
        }
        // gitoxide takes any 4+ hex digits in a refspec for an object id: a short commit id
        // cannot be asked for by prefix over the protocol.
        if rev.len() >= 4 && rev.len() < 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(SourceError::BadRev {
                rev: rev.to_owned(),
                why: "a short commit id; give the full 40-character id",
            });
        }
        Ok(Want::Name(rev))
    }

    /// Fetch refspecs, each storing what it fetched under [`FETCHED_REF`].
    fn refspecs(&self) -> Vec<gix::bstr::BString> {
        let specs: Vec<String> = match self {
            Want::Head => vec![format!("+HEAD:{FETCHED_REF}")],
            Want::Name(name) => {
                let mut specs = vec![
                    format!("+refs/heads/{name}:{FETCHED_REF}/head"),
                    format!("+refs/tags/{name}:{FETCHED_REF}/tag"),
                ];
                if name.starts_with("refs/") {
                    specs.push(format!("+{name}:{FETCHED_REF}/full"));
                }
                specs
            }
            Want::Commit(id) => vec![format!("+{id}:{FETCHED_REF}")],
            Want::Everything(_) => vec![
                "+refs/heads/*:refs/remotes/origin/*".into(),
                "+refs/tags/*:refs/tags/*".into(),
            ],
        };
        specs.into_iter().map(Into::into).collect()
    }

    /// The object the remote's refs say this means (a tag's target for annotated tags).
    fn resolve(&self, refs: &[Ref]) -> Option<ObjectId> {
        let find = |full: &str| {
            refs.iter().find_map(|r| {
                let (name, target, peeled) = r.unpack();
                (name == full.as_bytes()).then(|| peeled.or(target).map(ToOwned::to_owned))?
            })
        };
        match self {
            Want::Head => find("HEAD"),
            Want::Name(name) => {
                let full = name.starts_with("refs/").then_some(*name);
                full.and_then(find)
                    .or_else(|| find(&format!("refs/heads/{name}")))
                    .or_else(|| find(&format!("refs/tags/{name}")))
            }
            Want::Commit(id) => Some(*id),
            Want::Everything(_) => None,
        }
    }

    /// The commit and `commits - 1` of its ancestors (everything for [`Want::Everything`]).
    fn depth(&self, commits: u32) -> Shallow {
        match self {
            Want::Everything(_) => Shallow::NoChange,
            _ => Shallow::DepthAtRemote(NonZeroU32::new(commits).unwrap_or(NonZeroU32::MIN)),
        }
    }
}

/// Fetches what `want` names into a new bare repository at `git_dir`, returning it and the
/// commit id (tags peeled).
fn fetch_commit(
    url: &str,
    want: &Want<'_>,
    auth: &Auth<'_>,
    limits: &SourceLimits,
    git_dir: &Path,
) -> Result<(gix::Repository, ObjectId), SourceError> {
    super::ensure_tls_provider();
    let rev = match want {
        Want::Head => None,
        Want::Name(name) => Some(*name),
        Want::Everything(rev) => *rev,
        Want::Commit(_) => None,
    };
    let shown_rev = || match want {
        Want::Commit(id) => Some(id.to_hex().to_string()),
        _ => rev.map(str::to_owned),
    };
    let repo = gix::init_bare(git_dir).map_err(git_error)?;
    let remote = repo
        .remote_at(url)
        .map_err(|e| bad_url(url, e))?
        .with_fetch_tags(Tags::None)
        .with_refspecs(want.refspecs(), Direction::Fetch)
        .map_err(|_| bad_rev(rev))?;
    let prepare = remote
        .connect(Direction::Fetch)
        .map_err(git_error)?
        .with_transport_options(transport_options(limits.network))
        .with_credentials(|action| Ok(auth.answer(action)))
        .prepare_fetch(gix::progress::Discard, Default::default())
        .map_err(|e| auth.error(url, e))?;
    let target = match want {
        Want::Everything(_) => None,
        _ => Some(
            want.resolve(&prepare.ref_map().remote_refs)
                .ok_or_else(|| not_found(url, shown_rev().as_deref()))?,
        ),
    };
    let prepare = prepare.with_shallow(want.depth(limits.history_commits));

    // The pack is streamed to disk by gitoxide; a watchdog stops it once it outgrows the limit.
    let interrupt = AtomicBool::new(false);
    let over = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let objects = git_dir.join("objects");
    let received = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if folder_size(&objects) > limits.max_bytes {
                    over.store(true, Ordering::Relaxed);
                    interrupt.store(true, Ordering::Relaxed);
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let received = prepare.receive(gix::progress::Discard, &interrupt);
        done.store(true, Ordering::Relaxed);
        received
    });
    let too_large = || SourceError::TooLarge {
        what: "the download",
        limit: limits.max_bytes,
    };
    if over.load(Ordering::Relaxed) || folder_size(&objects) > limits.max_bytes {
        return Err(too_large());
    }
    received.map_err(|e| auth.error(url, e))?;

    let id = match target {
        Some(id) => id,
        None => rev
            .and_then(|r| ObjectId::from_hex(r.as_bytes()).ok())
            .ok_or_else(|| not_found(url, rev))?,
    };
    if !repo.has_object(id) {
        return Err(not_found(url, shown_rev().as_deref()));
    }
    let commit = repo
        .find_object(id)
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| SourceError::BadRev {
            rev: shown_rev().unwrap_or_else(|| "HEAD".into()),
            why: "names an object that is not a commit",
        })?
        .id;
    Ok((repo, commit))
}

/// Writes the commit's tree below `root`; returns the warnings (links and submodules left out).
pub(super) fn write_tree(
    repo: &gix::Repository,
    commit: ObjectId,
    root: &Path,
    limits: &SourceLimits,
) -> Result<Vec<String>, SourceError> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree_id())
        .map_err(git_error)?
        .detach();
    let mut x = Extractor::new(root.to_path_buf(), *limits, LinkPolicy::Skip);
    let mut warnings = Vec::new();
    let mut stack = vec![(SafePath::root(), tree)];
    while let Some((dir, tree_id)) = stack.pop() {
        let tree = repo.find_tree(tree_id).map_err(git_error)?;
        let decoded = tree.decode().map_err(git_error)?;
        for entry in &decoded.entries {
            let name = entry.filename;
            // git itself refuses to check out `.git`; it would only confuse the walker.
            if name.eq_ignore_ascii_case(b".git") {
                warnings.push(format!("left out `{dir}/{name}`: a `.git` entry"));
                continue;
            }
            let path = dir.join(name).map_err(|why| SourceError::UnsafeEntry {
                path: format!("{dir}/{name}"),
                why,
            })?;
            let id = entry.oid.to_owned();
            x.count_entry()?;
            let mode = entry.mode;
            if mode.is_tree() {
                x.dir(&path)?;
                stack.push((path, id));
            } else if mode.is_commit() {
                warnings.push(format!("left out submodule `{path}`"));
            } else {
                let size = repo.find_header(id).map_err(git_error)?.size();
                if size > x.bytes_left() {
                    return Err(SourceError::TooLarge {
                        what: "the unpacked files",
                        limit: limits.max_bytes,
                    });
                }
                let blob = repo.find_blob(id).map_err(git_error)?;
                if mode.is_link() {
                    x.symlink(&path, &blob.data)?;
                } else {
                    x.file(&path, size, &mut &blob.data[..], mode.is_executable())?;
                }
            }
        }
    }
    warnings.extend(x.finish(root)?);
    Ok(warnings)
}

/// The answers given to gitoxide's credential requests, and what they tell about a failure.
struct Auth<'c> {
    credential: Option<&'c Credential>,
    /// The server asked for credentials (answered 401).
    asked: Cell<bool>,
    /// The server refused the credential given.
    rejected: Cell<bool>,
}

impl<'c> Auth<'c> {
    fn new(credential: Option<&'c Credential>) -> Self {
        Self {
            credential,
            asked: Cell::new(false),
            rejected: Cell::new(false),
        }
    }

    /// gitoxide's request for credentials (`Get` after a 401; `Erase` when the server refused
    /// them, `Store` when it took them): the credential for a `Get`, nothing else.
    fn answer(
        &self,
        action: gix::credentials::helper::Action,
    ) -> Option<gix::credentials::protocol::Outcome> {
        use gix::credentials::helper::Action;
        match action {
            Action::Get(context) => {
                self.asked.set(true);
                let c = self.credential?;
                Some(gix::credentials::protocol::Outcome {
                    identity: gix::sec::identity::Account {
                        username: c.username.clone(),
                        password: c.token.clone(),
                        oauth_refresh_token: None,
                    },
                    next: context.into(),
                })
            }
            Action::Erase(_) => {
                self.rejected.set(true);
                None
            }
            Action::Store(_) => None,
        }
    }

    /// A transfer's error, named for what the credential exchange showed.
    fn error(&self, url: &str, e: impl std::error::Error) -> SourceError {
        let url = url.to_owned();
        if self.rejected.get() {
            SourceError::CredentialRejected { url }
        } else if self.asked.get() && self.credential.is_none() {
            SourceError::AuthRequired { url }
        } else {
            git_error(e)
        }
    }
}

/// HTTP transport options that hold every connection to `policy` (see [`network`]).
fn transport_options(policy: NetworkPolicy) -> Box<dyn std::any::Any> {
    use gix::protocol::transport::client::blocking_io::http;
    let backend = http::reqwest::Options {
        configure_client: Some(Box::new(move |builder| {
            Ok(network::configure(policy, builder))
        })),
        configure_request: None,
    };
    Box::new(http::Options {
        backend: Some(std::sync::Arc::new(std::sync::Mutex::new(backend))),
        ..Default::default()
    })
}

/// Refuses schemes gitoxide could be made to run commands with (`ext::`, remote helpers),
/// network URLs `policy` does not let through, and a credential for anything but http(s), the
/// only transport it is sent over.
fn check_url(
    url: &str,
    policy: NetworkPolicy,
    credential: Option<&Credential>,
) -> Result<(), SourceError> {
    let parsed = gix::url::parse(url.as_bytes().as_bstr()).map_err(|e| bad_url(url, e))?;
    if credential.is_some()
        && !matches!(
            parsed.scheme,
            gix::url::Scheme::Http | gix::url::Scheme::Https
        )
    {
        return Err(SourceError::BadUrl {
            url: url.to_owned(),
            why: "a credential is sent over https (or http) only".into(),
        });
    }
    if parsed.password().is_some() {
        return Err(SourceError::BadUrl {
            url: url.to_owned(),
            why: "a password in the URL would be shown wherever the URL is; register a \
                  credential and name it in the source instead"
                .into(),
        });
    }
    match parsed.scheme {
        // A path on this machine: whether it may be read is the caller's call
        // ([`super::SourceSpec::is_remote`]), not the network policy's.
        gix::url::Scheme::File => Ok(()),
        gix::url::Scheme::Git
        | gix::url::Scheme::Ssh
        | gix::url::Scheme::Http
        | gix::url::Scheme::Https => network::check_url_host(
            policy,
            url,
            parsed.scheme.as_str(),
            parsed.host(),
            parsed.port,
        ),
        other => Err(SourceError::Unsupported {
            scheme: other.as_str().to_owned(),
            kind: "git",
        }),
    }
}

/// Bytes of the files below `dir` (the pack being received); missing entries count as empty.
fn folder_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_size(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

fn git_error(e: impl std::error::Error) -> SourceError {
    SourceError::Git(super::error_chain(&e))
}

fn bad_url(url: &str, e: impl std::fmt::Display) -> SourceError {
    SourceError::BadUrl {
        url: url.to_owned(),
        why: e.to_string(),
    }
}

fn bad_rev(rev: Option<&str>) -> SourceError {
    SourceError::BadRev {
        rev: rev.unwrap_or("HEAD").to_owned(),
        why: "not a valid branch, tag or ref name",
    }
}

fn not_found(url: &str, rev: Option<&str>) -> SourceError {
    SourceError::NotFound {
        url: url.to_owned(),
        rev: rev.unwrap_or("HEAD").to_owned(),
    }
}

impl SourceError {
    /// A limit tripped: no point in fetching more to try again.
    fn is_limit(&self) -> bool {
        matches!(
            self,
            SourceError::TooLarge { .. } | SourceError::TooManyFiles { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{SourceSpec, fetch as fetch_source, probe_revision};
    use std::process::Command;

    /// Runs `git` in `dir` with a fixed identity; returns its trimmed output.
    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A repository with two commits on `main`, a tag `v1` (annotated) on the first, and a
    /// branch `old` on the first.
    struct Fixture {
        _dir: tempfile::TempDir,
        repo: std::path::PathBuf,
        url: String,
        first: String,
        second: String,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("origin");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::create_dir(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/lib.rs"), "// one\n").unwrap();
        std::fs::write(repo.join("README.md"), "# r\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "one"]);
        let first = git(&repo, &["rev-parse", "HEAD"]);
        git(&repo, &["tag", "-a", "v1", "-m", "v1"]);
        git(&repo, &["branch", "old"]);
        std::fs::write(repo.join("src/lib.rs"), "// two\n").unwrap();
        git(&repo, &["commit", "-q", "-am", "two"]);
        let second = git(&repo, &["rev-parse", "HEAD"]);
        let url = format!("file://{}", repo.display());
        Fixture {
            _dir: dir,
            repo,
            url,
            first,
            second,
        }
    }

    fn spec(url: &str, rev: Option<&str>) -> SourceSpec {
        SourceSpec::Git {
            url: url.to_owned(),
            rev: rev.map(str::to_owned),
            credential: None,
        }
    }

    fn lib_rs(f: &Fetched) -> String {
        std::fs::read_to_string(f.root.join("src/lib.rs")).unwrap()
    }

    #[test]
    fn source_git_shallow_head() {
        let fx = fixture();
        let work = tempfile::tempdir().unwrap();
        let got = fetch_source(
            &spec(&fx.url, None),
            None,
            &SourceLimits::default(),
            work.path(),
        )
        .unwrap();
        assert_eq!(lib_rs(&got), "// two\n");
        assert_eq!(
            std::fs::read_to_string(got.root.join("README.md")).unwrap(),
            "# r\n"
        );
        assert_eq!(got.revision.as_deref(), Some(fx.second.as_str()));
        assert_eq!(got.probe_token, got.revision);
        assert!(!got.root.join(".git").exists());

        // With its history (both commits), HEAD set to the fetched commit.
        let git_dir = got
            .git_dir
            .clone()
            .expect("a git source names its repository");
        let repo = gix::open(&git_dir).unwrap();
        let first = ObjectId::from_hex(fx.first.as_bytes()).unwrap();
        assert!(repo.has_object(first), "the parent commit came with it");
        assert_eq!(repo.head_id().unwrap().to_hex().to_string(), fx.second);

        // One commit of history: the parent commit was not downloaded.
        let limits = SourceLimits {
            history_commits: 1,
            ..SourceLimits::default()
        };
        let got = fetch_source(&spec(&fx.url, None), None, &limits, work.path()).unwrap();
        assert_eq!(lib_rs(&got), "// two\n");
        let git_dir = got.git_dir.clone().unwrap();
        let repo = gix::open(&git_dir).unwrap();
        assert!(!repo.has_object(first), "a shallow fetch has no history");
        assert!(git_dir.join("shallow").exists());
        assert_eq!(repo.head_id().unwrap().to_hex().to_string(), fx.second);
    }

    #[test]
    fn source_git_history_too_large_is_left_out() {
        let fx = fixture();
        // A second file large enough that the commit's history outgrows the limit the commit
        // alone fits in.
        let big: String = (0..4000)
            .map(|i| format!("line {i} of the old text\n"))
            .collect();
        std::fs::write(fx.repo.join("old.txt"), &big).unwrap();
        git(&fx.repo, &["add", "-A"]);
        git(&fx.repo, &["commit", "-q", "-m", "three"]);
        git(&fx.repo, &["rm", "-q", "old.txt"]);
        git(&fx.repo, &["commit", "-q", "-m", "four"]);
        let work = tempfile::tempdir().unwrap();
        let alone = fetch_source(
            &spec(&fx.url, None),
            None,
            &SourceLimits {
                history_commits: 1,
                ..SourceLimits::default()
            },
            work.path(),
        )
        .unwrap();
        let size = folder_size(&alone.git_dir.clone().unwrap().join("objects"));
        let limits = SourceLimits {
            max_bytes: size + 2048,
            ..SourceLimits::default()
        };
        let got = fetch_source(&spec(&fx.url, None), None, &limits, work.path()).unwrap();
        assert_eq!(lib_rs(&got), "// two\n");
        assert!(
            got.warnings
                .iter()
                .any(|w| w.starts_with("history left out")),
            "{:?}",
            got.warnings
        );
        let repo = gix::open(got.git_dir.clone().unwrap()).unwrap();
        let first = ObjectId::from_hex(fx.first.as_bytes()).unwrap();
        assert!(!repo.has_object(first));
    }

    #[test]
    fn source_git_pinned_revisions() {
        let fx = fixture();
        let work = tempfile::tempdir().unwrap();
        let limits = SourceLimits::default();
        for rev in [
            fx.first.as_str(),
            "old",
            "v1",
            "refs/tags/v1",
            "refs/heads/old",
        ] {
            let got = fetch_source(&spec(&fx.url, Some(rev)), None, &limits, work.path()).unwrap();
            assert_eq!(lib_rs(&got), "// one\n", "{rev}");
            assert_eq!(got.revision.as_deref(), Some(fx.first.as_str()), "{rev}");
        }
        let got = fetch_source(&spec(&fx.url, Some("main")), None, &limits, work.path()).unwrap();
        assert_eq!(got.revision.as_deref(), Some(fx.second.as_str()));

        // A commit id is fetched directly (here at depth 1), without the fallback that takes
        // every branch with its whole history.
        let second = ObjectId::from_hex(fx.second.as_bytes()).unwrap();
        let first = ObjectId::from_hex(fx.first.as_bytes()).unwrap();
        let (repo, commit) = fetch_commit(
            &fx.url,
            &Want::Commit(second),
            &Auth::new(None),
            &SourceLimits {
                history_commits: 1,
                ..limits
            },
            &work.path().join("by-id.git"),
        )
        .unwrap();
        assert_eq!(commit, second);
        assert!(!repo.has_object(first));
    }

    #[test]
    fn source_git_missing_revisions() {
        let fx = fixture();
        let work = tempfile::tempdir().unwrap();
        let limits = SourceLimits::default();
        let absent = "0123456789abcdef0123456789abcdef01234567";
        for rev in ["no-such-branch", absent] {
            let err =
                fetch_source(&spec(&fx.url, Some(rev)), None, &limits, work.path()).unwrap_err();
            assert!(matches!(err, SourceError::NotFound { .. }), "{rev}: {err}");
            assert!(err.is_user_error());
        }
        let err = probe_revision(
            &spec(&fx.url, Some("no-such-branch")),
            None,
            NetworkPolicy::Open,
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
        let err =
            fetch_source(&spec(&fx.url, Some("abc1234")), None, &limits, work.path()).unwrap_err();
        assert!(matches!(err, SourceError::BadRev { .. }), "{err}");
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    }

    #[test]
    fn source_git_probe_follows_the_remote() {
        let fx = fixture();
        assert_eq!(
            probe_revision(&spec(&fx.url, None), None, NetworkPolicy::Open)
                .unwrap()
                .as_deref(),
            Some(fx.second.as_str())
        );
        assert_eq!(
            probe_revision(&spec(&fx.url, Some("v1")), None, NetworkPolicy::Open)
                .unwrap()
                .as_deref(),
            Some(fx.first.as_str()),
            "an annotated tag probes as its commit"
        );
        assert_eq!(
            probe_revision(&spec(&fx.url, Some(&fx.first)), None, NetworkPolicy::Open)
                .unwrap()
                .as_deref(),
            Some(fx.first.as_str())
        );
        std::fs::write(fx.repo.join("new.txt"), "3").unwrap();
        git(&fx.repo, &["add", "new.txt"]);
        git(&fx.repo, &["commit", "-q", "-m", "three"]);
        let third = git(&fx.repo, &["rev-parse", "HEAD"]);
        assert_ne!(third, fx.second);
        assert_eq!(
            probe_revision(&spec(&fx.url, None), None, NetworkPolicy::Open)
                .unwrap()
                .as_deref(),
            Some(third.as_str())
        );
    }

    #[cfg(unix)]
    #[test]
    fn source_git_links_inside_kept_outside_left_out() {
        let fx = fixture();
        std::os::unix::fs::symlink("src/lib.rs", fx.repo.join("inside")).unwrap();
        std::os::unix::fs::symlink("../../../etc/passwd", fx.repo.join("src/up")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", fx.repo.join("absolute")).unwrap();
        git(&fx.repo, &["add", "-A"]);
        git(&fx.repo, &["commit", "-q", "-m", "links"]);
        let work = tempfile::tempdir().unwrap();
        let got = fetch_source(
            &spec(&fx.url, None),
            None,
            &SourceLimits::default(),
            work.path(),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(got.root.join("inside")).unwrap(),
            "// two\n"
        );
        assert!(got.root.join("src/up").symlink_metadata().is_err());
        assert!(got.root.join("absolute").symlink_metadata().is_err());
        assert_eq!(got.warnings.len(), 2, "{:?}", got.warnings);
    }

    /// The test server of `tests/private_git/`: `git http-backend` behind HTTP Basic auth.
    struct AuthServer {
        child: std::process::Child,
        url: String,
        _root: tempfile::TempDir,
    }

    impl Drop for AuthServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn auth_server(fx: &Fixture, token: &str) -> AuthServer {
        use std::io::BufRead;
        let root = tempfile::tempdir().unwrap();
        let bare = root.path().join("private.git");
        git(
            root.path(),
            &["clone", "-q", "--bare", &fx.url, bare.to_str().unwrap()],
        );
        let token_file = root.path().join("token");
        std::fs::write(&token_file, token).unwrap();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/private_git/git_http_auth.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .arg(root.path())
            .arg("x-access-token")
            .arg(&token_file)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("listening ").expect("port line");
        let url = format!("http://127.0.0.1:{port}/private.git");
        // Drain the request log so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in out.lines() {});
        AuthServer {
            child,
            url,
            _root: root,
        }
    }

    #[test]
    fn source_git_private_repositories_take_their_credential() {
        let fx = fixture();
        let token = "ghp_unit0secret0token42";
        let server = auth_server(&fx, token);
        let work = tempfile::tempdir().unwrap();
        let limits = SourceLimits::default();
        let right = Credential::new(None, token).unwrap();
        let wrong = Credential::new(None, "ghp_not0the0token").unwrap();

        let err = fetch_source(&spec(&server.url, None), None, &limits, work.path()).unwrap_err();
        assert!(matches!(err, SourceError::AuthRequired { .. }), "{err}");
        let err = probe_revision(&spec(&server.url, None), None, NetworkPolicy::Open).unwrap_err();
        assert!(matches!(err, SourceError::AuthRequired { .. }), "{err}");
        let err =
            fetch_source(&spec(&server.url, None), Some(&wrong), &limits, work.path()).unwrap_err();
        assert!(
            matches!(err, SourceError::CredentialRejected { .. }),
            "{err}"
        );
        assert!(err.is_user_error());
        assert!(!err.to_string().contains("ghp_not0the0token"), "{err}");

        let got =
            fetch_source(&spec(&server.url, None), Some(&right), &limits, work.path()).unwrap();
        assert_eq!(lib_rs(&got), "// two\n");
        assert_eq!(got.revision.as_deref(), Some(fx.second.as_str()));
        let probed = probe_revision(
            &spec(&server.url, Some("v1")),
            Some(&right),
            NetworkPolicy::Open,
        )
        .unwrap();
        assert_eq!(probed.as_deref(), Some(fx.first.as_str()));
        // By commit id, which may take the fallback's second connection.
        let got = fetch_source(
            &spec(&server.url, Some(&fx.first)),
            Some(&right),
            &limits,
            work.path(),
        )
        .unwrap();
        assert_eq!(lib_rs(&got), "// one\n");

        // A token is never put in the URL, where every message would show it.
        let in_url = server
            .url
            .replace("http://", &format!("http://x-access-token:{token}@"));
        let err = fetch_source(&spec(&in_url, None), None, &limits, work.path()).unwrap_err();
        assert!(matches!(err, SourceError::BadUrl { .. }), "{err}");
        assert!(!err.to_string().contains(token), "{err}");
        // Nor sent over anything but http(s).
        let err =
            fetch_source(&spec(&fx.url, None), Some(&right), &limits, work.path()).unwrap_err();
        assert!(matches!(err, SourceError::BadUrl { .. }), "{err}");
    }

    #[test]
    fn source_git_limits_and_urls() {
        let fx = fixture();
        let work = tempfile::tempdir().unwrap();
        let few = SourceLimits {
            max_bytes: 1 << 30,
            max_files: 2,
            network: NetworkPolicy::Open,
            ..SourceLimits::default()
        };
        let err = fetch_source(&spec(&fx.url, None), None, &few, work.path()).unwrap_err();
        assert!(
            matches!(err, SourceError::TooManyFiles { limit: 2 }),
            "{err}"
        );
        let tiny = SourceLimits {
            max_bytes: 8,
            max_files: 100,
            network: NetworkPolicy::Open,
            ..SourceLimits::default()
        };
        let err = fetch_source(&spec(&fx.url, None), None, &tiny, work.path()).unwrap_err();
        assert!(
            matches!(
                err,
                SourceError::TooLarge {
                    what: "the download",
                    ..
                }
            ),
            "{err}"
        );

        // Zeros pack small but unpack large: the files' own limit trips.
        std::fs::write(fx.repo.join("zeros.bin"), vec![0u8; 200_000]).unwrap();
        git(&fx.repo, &["add", "zeros.bin"]);
        git(&fx.repo, &["commit", "-q", "-m", "zeros"]);
        let small = SourceLimits {
            max_bytes: 50_000,
            max_files: 100,
            network: NetworkPolicy::Open,
            ..SourceLimits::default()
        };
        let err = fetch_source(&spec(&fx.url, None), None, &small, work.path()).unwrap_err();
        assert!(
            matches!(
                err,
                SourceError::TooLarge {
                    what: "the unpacked files",
                    ..
                }
            ),
            "{err}"
        );

        for url in ["ext::sh -c touch% /tmp/pwned", "foo://host/repo"] {
            let err = fetch_source(&spec(url, None), None, &few, work.path()).unwrap_err();
            assert!(
                matches!(err, SourceError::Unsupported { .. }),
                "{url}: {err}"
            );
        }
        // HTTP(S) go through gitoxide's reqwest transport (TLS with the ring provider): a server
        // that is not git, or not TLS, is a clean git error, not a panic.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                use std::io::{Read, Write};
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        for scheme in ["http", "https"] {
            let url = format!("{scheme}://{addr}/r.git");
            let err = fetch_source(&spec(&url, None), None, &few, work.path()).unwrap_err();
            assert!(matches!(err, SourceError::Git(_)), "{url}: {err}");
            let err = probe_revision(&spec(&url, None), None, NetworkPolicy::Open).unwrap_err();
            assert!(matches!(err, SourceError::Git(_)), "{url}: {err}");
        }

        let missing = format!("file://{}/nothing-here", work.path().display());
        let err = fetch_source(&spec(&missing, None), None, &few, work.path()).unwrap_err();
        assert!(matches!(err, SourceError::Git(_)), "{err}");
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    }
}
