//! Reads how recently each file changed from the repository's git history, with gix (no git
//! binary). Only first parents are followed, and a commit whose parent is missing (a shallow
//! clone's boundary) or that has none (the root commit, which "adds" every file) ends the walk:
//! neither says anything about recent work.

use std::collections::HashMap;
use std::path::Path;

use ctxgate_core::source::Origin;
use gix::ObjectId;

/// Paths (relative to `root`, `/`-separated) changed in the last `window` first-parent
/// commits of HEAD, each with how many commits ago it last changed (0: HEAD itself), and the
/// number of commits walked. `None` when `root` is not inside a git work tree, HEAD has no
/// commit, or `root` is not part of HEAD's tree (an untracked folder of another repository).
pub fn last_changes(root: &Path, window: u32) -> Option<(u32, HashMap<String, u32>)> {
    let (repo, prefix) = repository_of(root)?;
    let mut commit = repo.head_commit().ok()?;
    let mut tree = commit.tree_id().ok()?.detach();
    let mut ages: HashMap<String, u32> = HashMap::new();
    let mut walked = 0;
    while walked < window {
        let Some(parent_id) = commit.parent_ids().next().map(|id| id.detach()) else {
            break;
        };
        let Ok(parent) = repo.find_commit(parent_id) else {
            break;
        };
        let Ok(parent_tree) = parent.tree_id().map(|id| id.detach()) else {
            break;
        };
        let mut changed = Vec::new();
        changed_paths(&repo, Some(parent_tree), tree, "", &mut changed);
        for path in changed {
            if let Some(rel) = path.strip_prefix(prefix.as_str()) {
                ages.entry(rel.to_string()).or_insert(walked);
            }
        }
        walked += 1;
        commit = parent;
        tree = parent_tree;
    }
    Some((walked, ages))
}

/// The repository whose HEAD holds the files under `root`, and where `root` is in it: `git_dir`
/// when given (a fetched source's repository, whose HEAD's whole tree the files are), else the
/// work tree around `root` ([`repository_of`]).
pub(crate) fn repository_at(
    root: &Path,
    git_dir: Option<&Path>,
) -> Option<(gix::Repository, String)> {
    match git_dir {
        Some(dir) => Some((gix::open(dir).ok()?, String::new())),
        None => repository_of(root),
    }
}

/// The git work tree `root` is part of, and where `root` is in it (`""` or `a/b/`): `None`
/// when `root` is not inside a work tree, HEAD has no commit, or `root` is not part of HEAD's
/// tree (an untracked folder of another repository, such as a data directory's scratch space).
pub(crate) fn repository_of(root: &Path) -> Option<(gix::Repository, String)> {
    let repo = gix::discover(root).ok()?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    let inside = root.strip_prefix(&workdir).ok()?;
    let mut prefix = String::new();
    for part in inside.components() {
        prefix.push_str(part.as_os_str().to_str()?);
        prefix.push('/');
    }
    let tree = repo.head_commit().ok()?.tree_id().ok()?.detach();
    if !prefix.is_empty() && !tree_has(&repo, tree, prefix.trim_end_matches('/'))? {
        return None;
    }
    Some((repo, prefix))
}

/// The repository a local folder belongs to, for links to its files: the `origin` remote (or
/// the only one), HEAD's commit and the folder's place in the work tree, without credentials.
/// `None` outside a git work tree (see [`repository_of`]).
pub fn origin(root: &Path) -> Option<Origin> {
    let (repo, prefix) = repository_of(root)?;
    let commit = repo.head_commit().ok()?.id().to_hex().to_string();
    let names = repo.remote_names();
    let name = names
        .iter()
        .find(|n| **n == "origin")
        .or_else(|| (names.len() == 1).then(|| names.iter().next()).flatten())
        .map(|n| n.to_string());
    let remote = name
        .and_then(|n| repo.find_remote(n.as_str()).ok())
        .and_then(|r| {
            r.url(gix::remote::Direction::Fetch)
                .map(|u| u.to_bstring().to_string())
        });
    Some(Origin::new(remote.as_deref(), Some(&commit), &prefix))
}

/// Whether `path` (a folder) is in `tree`.
fn tree_has(repo: &gix::Repository, tree: ObjectId, path: &str) -> Option<bool> {
    let mut id = tree;
    for part in path.split('/') {
        let t = repo.find_tree(id).ok()?;
        let decoded = t.decode().ok()?;
        match decoded
            .entries
            .iter()
            .find(|e| e.filename == part.as_bytes())
        {
            Some(e) if e.mode.is_tree() => id = e.oid.to_owned(),
            _ => return Some(false),
        }
    }
    Some(true)
}

/// Files added or modified from `old` to `new` (deletions are not files any more), under
/// `prefix`. Subtrees with the same id on both sides are skipped whole, so a commit costs
/// about as much as the folders it touched. `false` when some tree could not be read (a
/// partial clone): `out` then misses what changed below it.
pub(crate) fn changed_paths(
    repo: &gix::Repository,
    old: Option<ObjectId>,
    new: ObjectId,
    prefix: &str,
    out: &mut Vec<String>,
) -> bool {
    if old == Some(new) {
        return true;
    }
    let Ok(new_tree) = repo.find_tree(new) else {
        return false;
    };
    let Ok(new_entries) = new_tree.decode().map(|t| {
        t.entries
            .iter()
            .map(|e| (e.filename.to_string(), e.mode, e.oid.to_owned()))
            .collect::<Vec<_>>()
    }) else {
        return false;
    };
    let old_entries: Option<HashMap<String, (gix::object::tree::EntryMode, ObjectId)>> = match old {
        None => Some(HashMap::new()),
        Some(id) => repo.find_tree(id).ok().and_then(|t| {
            t.decode().ok().map(|t| {
                t.entries
                    .iter()
                    .map(|e| (e.filename.to_string(), (e.mode, e.oid.to_owned())))
                    .collect()
            })
        }),
    };
    let mut complete = old_entries.is_some();
    let old_entries = old_entries.unwrap_or_default();
    for (name, mode, oid) in new_entries {
        let before = old_entries.get(&name);
        if before.is_some_and(|(_, o)| *o == oid) {
            continue;
        }
        let path = format!("{prefix}{name}");
        if mode.is_tree() {
            let old_sub = before.filter(|(m, _)| m.is_tree()).map(|(_, o)| *o);
            complete &= changed_paths(repo, old_sub, oid, &format!("{path}/"), out);
        } else if mode.is_blob_or_symlink() {
            out.push(path);
        }
    }
    complete
}
