//! Which commit wrote each line of the indexed files, read from the repository's first-parent
//! history with gix (no git binary), and what those commits said ([`History`] in the pack).
//!
//! One walk blames every file at once: from the work tree back through HEAD's first parents,
//! each commit's line diff of the files it touched gives the lines it wrote, and the lines it
//! did not write are carried to its parent's numbering. That costs about the history's diffs
//! once, where blaming file by file would walk the history once per file. A merge writes what
//! it merged (first parents only; its message is usually the merged change's title). Lines
//! changed in the work tree and not committed have no writer; nor have lines older than a
//! shallow clone's boundary (a depth-1 clone has no history: the pack then has none).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;

use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::history::words;
use ctxgate_core::index::{ChunkRecord, FileEntry, History};
use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::recency::{changed_paths, repository_at};

mod cache;
mod lines;
mod trees;

use cache::{cache_key, read_cache, write_cache};
use lines::{Pending, lf, line_count, step, work_range};
use trees::{Blob, blob_at, folder_trees};

/// The cached walk's layout and rules; a cache of another version is walked again.
const CACHE_VERSION: u32 = 3;

/// Commits walked back from HEAD at most (the whole history of most repositories: the
/// measurement found the whole history worth more than the last 500 commits).
pub const MAX_COMMITS: u32 = 20_000;

/// Bytes of old and new file versions diffed at most in one walk: a fetched repository is
/// someone else's input, and a small pack can hold a history that takes hours to diff (every
/// commit a one-byte change of a large file). The walk ends there, its remaining lines without a
/// writer. Calibrated on moby (20,000 commits, 13,018 files): docs/retrieval.md.
const MAX_DIFF_BYTES: u64 = 8 << 30;

/// Commits looked at most, walked or passed over (a subfolder passes over the commits that did
/// not touch it, and a monorepo can have millions).
const MAX_VISITS: u32 = 10 * MAX_COMMITS;

/// What the walk from one HEAD found, for one set of paths: kept in the data directory's
/// cache, so that re-indexing edits of the work tree (HEAD unmoved) costs a diff of the changed
/// files instead of the walk, and a later HEAD walks only its new commits ([`splice`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Walk {
    /// [`CACHE_VERSION`] of the code that made it.
    version: u32,
    /// Whether the repository was a shallow clone (a walk cut at its boundary).
    shallow: bool,
    /// HEAD's commit id (hex), the folder's place in the work tree and the commit bound.
    head: String,
    prefix: String,
    max_commits: u32,
    /// The paths walked (full paths in the repository), ascending.
    paths: Vec<String>,
    /// The words of the walked commits' messages, in the order first met.
    vocab: Vec<String>,
    /// Per walked commit (HEAD first), its message's distinct words as indexes into `vocab`:
    /// their document frequencies, and what a later walk that stops here counts of them.
    said: Vec<Vec<u32>>,
    /// The messages of the commits that wrote some line, in the order met.
    writers: Vec<String>,
    /// Per writer, its place in the walk (1: HEAD), ascending.
    depth: Vec<u32>,
    /// Per path, `(first line, end line, writer)` in HEAD's version (0-based, end exclusive),
    /// ascending, disjoint, and adjacent ranges of one writer joined.
    lines: BTreeMap<String, Vec<(u32, u32, u32)>>,
    /// Every line of `paths` got its writer (the walk did not end at the bound or a shallow
    /// boundary first).
    complete: bool,
    /// Nothing but the commit bound, the root or a shallow boundary ended the walk, and no line
    /// was left without a writer because a blob could not be read (or was too large): only
    /// then can a later walk stop at this one's HEAD and take the rest from it.
    exact: bool,
    /// Bytes diffed and commits looked at (at most, for a walk that took the rest from an
    /// earlier one): a later walk stops here only if its own and these stay within the limits
    /// that would have ended the whole walk.
    diffed: u64,
    visits: u32,
}

impl Walk {
    /// Whether every index in it points where it should (a damaged cache is walked again
    /// rather than trusted).
    fn sound(&self) -> bool {
        let walked = self.said.len() as u32;
        self.depth.len() == self.writers.len()
            && self.depth.windows(2).all(|d| d[0] < d[1])
            && self.depth.iter().all(|&d| (1..=walked).contains(&d))
            && self
                .said
                .iter()
                .flatten()
                .all(|&w| (w as usize) < self.vocab.len())
            && self.lines.values().all(|ranges| {
                ranges
                    .iter()
                    .all(|&(a, b, w)| a < b && (w as usize) < self.writers.len())
                    && ranges.windows(2).all(|r| r[0].1 <= r[1].0)
            })
    }

    /// Records the walk's next commit, with `message`.
    fn record(&mut self, vocab: &mut HashMap<String, u32>, message: &str) {
        let mut distinct = words(message);
        distinct.sort_unstable();
        distinct.dedup();
        let ids = distinct
            .into_iter()
            .map(|w| {
                let next = self.vocab.len() as u32;
                *vocab.entry(w).or_insert_with_key(|w| {
                    self.vocab.push(w.clone());
                    next
                })
            })
            .collect();
        self.said.push(ids);
    }

    /// Per word, how many walked commits' messages hold it.
    fn df(&self) -> HashMap<String, u32> {
        let mut counts = vec![0u32; self.vocab.len()];
        for &w in self.said.iter().flatten() {
            if let Some(c) = counts.get_mut(w as usize) {
                *c += 1;
            }
        }
        self.vocab.iter().cloned().zip(counts).collect()
    }

    /// Sorts each path's ranges and joins adjacent ones of one writer, so that two walks that
    /// found the same writers store the same ranges.
    fn settle(&mut self) {
        for ranges in self.lines.values_mut() {
            ranges.sort_unstable();
            let mut joined: Vec<(u32, u32, u32)> = Vec::with_capacity(ranges.len());
            for &(a, b, w) in ranges.iter() {
                match joined.last_mut() {
                    Some(last) if last.1 == a && last.2 == w => last.1 = b,
                    _ => joined.push((a, b, w)),
                }
            }
            *ranges = joined;
        }
    }
}

/// The history of the chunks of `files` (a version's files and chunks, in pack order) under
/// `root`, or an empty [`History`] when `root` is not in a git work tree (nor `git_dir` given,
/// the repository whose HEAD the files are) or nothing was attributed. `max_commits` bounds the
/// walk; `cache` is a folder for the walk's result.
pub fn chunk_history(
    root: &Path,
    git_dir: Option<&Path>,
    files: &[FileEntry],
    chunks: &[ChunkRecord],
    max_commits: u32,
    cache: Option<&Path>,
) -> History {
    let Some((repo, prefix)) = repository_at(root, git_dir) else {
        return History::default();
    };
    let Ok(head) = repo.head_commit() else {
        return History::default();
    };
    let Ok(head_tree) = head.tree_id().map(|t| t.detach()) else {
        return History::default();
    };
    // HEAD's version of each indexed file (files HEAD lacks have no history).
    let committed: Vec<Option<Vec<u8>>> = files
        .iter()
        .map(|f| {
            if f.skipped.is_some() || f.chunk_count == 0 {
                return None;
            }
            match blob_at(&repo, head_tree, &format!("{prefix}{}", f.path)) {
                Blob::Present(b) => Some(b),
                Blob::Absent | Blob::Unreadable => None,
            }
        })
        .collect();
    let mut paths: Vec<(String, u32)> = files
        .iter()
        .zip(&committed)
        .filter_map(|(f, b)| Some((format!("{prefix}{}", f.path), line_count(b.as_ref()?))))
        .collect();
    paths.sort_unstable();
    let head_id = head.id.to_hex().to_string();
    // An unknown state counts as shallow, so a later readable one walks again.
    let shallow = repo.is_shallow().unwrap_or(true);
    let cache_file = cache.map(|dir| dir.join(format!("{}.bin", cache_key(root, &prefix))));
    let names: Vec<String> = paths.iter().map(|p| p.0.clone()).collect();
    // A cache of this folder's walk: the same HEAD and files are reused as they are; from an
    // earlier HEAD, the walk goes back only until it meets that HEAD.
    let cached = cache_file.as_deref().and_then(read_cache).filter(|w| {
        w.version == CACHE_VERSION
            && w.shallow == shallow
            && w.prefix == prefix
            && w.max_commits == max_commits
    });
    let walk = match cached {
        Some(w) if w.head == head_id && w.paths == names => w,
        cached => {
            // A shallow repository's boundary can move between fetches (a walk from the new
            // HEAD could not see what the kept one saw below it): only a full history is
            // spliced.
            let base = cached.as_ref().filter(|b| b.exact && !b.shallow);
            let mut w = walk(&repo, head, head_tree, &prefix, &paths, max_commits, base);
            w.version = CACHE_VERSION;
            w.shallow = shallow;
            w.head = head_id.clone();
            w.prefix = prefix.clone();
            w.max_commits = max_commits;
            w.paths = names.clone();
            if let Some(file) = &cache_file {
                write_cache(file, &w);
            }
            w
        }
    };
    if walk.writers.is_empty() {
        return History::default();
    }
    // The work tree's lines: as HEAD's where the file is unchanged, else through a diff
    // (uncommitted lines have no writer).
    let written: Vec<Vec<(Range<u32>, u32)>> = files
        .iter()
        .zip(&committed)
        .map(|(f, head_bytes)| {
            let Some(head_bytes) = head_bytes else {
                return Vec::new();
            };
            let Some(ranges) = walk.lines.get(&format!("{prefix}{}", f.path)) else {
                return Vec::new();
            };
            work_tree_lines(root, f, head_bytes, ranges)
        })
        .collect();
    let per_chunk: Vec<Vec<u32>> = chunks
        .iter()
        .map(|c| {
            let Some(ranges) = written.get(c.file as usize) else {
                return Vec::new();
            };
            let lines = c.start_line.saturating_sub(1)..c.end_line;
            // Ascending and disjoint: their ends ascend too.
            let first = ranges.partition_point(|r| r.0.end <= lines.start);
            ranges[first..]
                .iter()
                .take_while(|r| r.0.start < lines.end)
                .map(|r| r.1)
                .collect()
        })
        .collect();
    History::new(
        walk.said.len() as u32,
        &walk.df(),
        &walk.writers,
        &per_chunk,
    )
    .from_head(head_id)
}

/// Which writer wrote each line of `file`'s work-tree copy under `root`: HEAD's `ranges` where
/// the file is HEAD's (`head_bytes`), else through a diff (uncommitted lines have no writer);
/// none when the file was edited since the scan.
fn work_tree_lines(
    root: &Path,
    f: &FileEntry,
    head_bytes: &[u8],
    ranges: &[(u32, u32, u32)],
) -> Vec<(Range<u32>, u32)> {
    let Ok(current) = std::fs::read(root.join(&f.path)) else {
        return Vec::new();
    };
    if Sha256Digest::of(&current) != f.sha256 {
        // Edited since the scan: its chunks' lines are not these.
        return Vec::new();
    }
    let (current, committed) = (lf(&current), lf(head_bytes));
    if current == committed {
        return ranges.iter().map(|&(a, b, w)| (a..b, w)).collect();
    }
    let all = [Pending {
        cur: 0..line_count(&current),
        work: 0,
    }];
    let (carried, _) = step(&all, &committed, &current);
    let mut out = Vec::new();
    for p in carried {
        for &(a, b, w) in ranges
            .iter()
            .filter(|r| r.0 < p.cur.end && p.cur.start < r.1)
        {
            let (s, e) = (a.max(p.cur.start), b.min(p.cur.end));
            out.push((p.work + (s - p.cur.start)..p.work + (e - p.cur.start), w));
        }
    }
    out.sort_unstable_by_key(|r| r.0.start);
    out
}

/// HEAD's commit id (hex) for the folder `root` (or of `git_dir`, the repository whose HEAD
/// the files are), if it is part of a git work tree's HEAD.
pub fn head_of(root: &Path, git_dir: Option<&Path>) -> Option<String> {
    let (repo, _) = repository_at(root, git_dir)?;
    Some(repo.head_id().ok()?.to_hex().to_string())
}

/// Walks HEAD's first parents until every line of `paths` (full path, lines in HEAD) has its
/// writer, the root or a shallow boundary is reached, or `max_commits` were walked. Under a
/// folder `prefix` (`a/b/`) of the repository, a commit that changed nothing in it is passed
/// over, not counted: the folder's history is the commits that touched it, so a subfolder of a
/// large repository gets as deep a history as a repository of its own. Meeting
/// `base`'s HEAD with the lines left all in `base`'s paths, it takes the rest from `base`
/// instead of walking on ([`splice`]): the same result, the new commits' cost.
fn walk(
    repo: &gix::Repository,
    head: gix::Commit<'_>,
    head_tree: ObjectId,
    prefix: &str,
    paths: &[(String, u32)],
    max_commits: u32,
    base: Option<&Walk>,
) -> Walk {
    let mut pending: HashMap<String, Vec<Pending>> = paths
        .iter()
        .filter(|p| p.1 > 0)
        .map(|(p, n)| {
            (
                p.clone(),
                vec![Pending {
                    cur: 0..*n,
                    work: 0,
                }],
            )
        })
        .collect();
    let base = base.and_then(|b| Some((b, ObjectId::from_hex(b.head.as_bytes()).ok()?)));
    let mut out = Walk {
        exact: true,
        ..Walk::default()
    };
    let mut vocab: HashMap<String, u32> = HashMap::new();
    let mut commit = head;
    let mut tree = head_tree;
    let mut spliced = false;
    let (mut diffed, mut visits) = (0u64, 0u32);
    while (out.said.len() as u32) < max_commits && !pending.is_empty() {
        if diffed > MAX_DIFF_BYTES || visits >= MAX_VISITS {
            tracing::warn!(diffed, visits, "history: the walk's work limit ended it");
            out.exact = false;
            break;
        }
        visits += 1;
        if let Some((b, id)) = base
            && commit.id == id
            && pending.keys().all(|p| b.paths.binary_search(p).is_ok())
            && diffed + b.diffed <= MAX_DIFF_BYTES
            && visits + b.visits < MAX_VISITS
        {
            diffed += b.diffed;
            visits += b.visits;
            splice(&mut out, &mut vocab, &mut pending, b, max_commits);
            spliced = true;
            break;
        }
        let parent = commit
            .parent_ids()
            .next()
            .map(|id| id.detach())
            .and_then(|id| repo.find_commit(id).ok());
        let parent_tree = parent
            .as_ref()
            .and_then(|p| p.tree_id().ok())
            .map(|t| t.detach());
        if commit.parent_ids().next().is_some() && parent_tree.is_none() {
            // A shallow clone's boundary: what is older is not known.
            break;
        }
        let Ok((folder, parent_folder)) = folder_trees(repo, tree, parent_tree, prefix) else {
            // A tree that cannot be read (a partial clone): see below.
            out.exact = false;
            break;
        };
        if !prefix.is_empty() && folder == parent_folder {
            // Nothing changed in the folder.
            let (Some(parent), Some(parent_tree)) = (parent, parent_tree) else {
                break;
            };
            commit = parent;
            tree = parent_tree;
            continue;
        }
        let mut changed = Vec::new();
        let read = match folder {
            Some(folder) => changed_paths(repo, parent_folder, folder, prefix, &mut changed),
            None => true,
        };
        if !read {
            // A tree this commit changed cannot be read (a partial clone): what it wrote, and
            // so where the older lines are, is not known. Lines left get no writer rather than
            // a wrong one.
            out.exact = false;
            break;
        }
        let message = commit.message_raw_sloppy().to_string();
        out.record(&mut vocab, &message);
        let writer = out.writers.len() as u32;
        let wrote_any = attribute(
            repo,
            (tree, parent_tree),
            changed,
            &mut pending,
            &mut out,
            writer,
            &mut diffed,
        );
        if wrote_any {
            out.writers.push(message);
            out.depth.push(out.said.len() as u32);
        }
        let (Some(parent), Some(parent_tree)) = (parent, parent_tree) else {
            break;
        };
        commit = parent;
        tree = parent_tree;
    }
    out.complete = pending.is_empty();
    out.diffed = diffed;
    out.visits = visits;
    out.settle();
    tracing::info!(
        commits = out.said.len(),
        writers = out.writers.len(),
        spliced,
        diffed,
        "history: read which commits wrote the indexed lines"
    );
    out
}

/// One commit's part of the walk: of the `changed` paths still `pending`, the lines it wrote
/// (its tree against its parent's, `trees`) go to `writer` in `out`, the rest stay pending for
/// older commits; whether it wrote any.
fn attribute(
    repo: &gix::Repository,
    (tree, parent_tree): (ObjectId, Option<ObjectId>),
    changed: Vec<String>,
    pending: &mut HashMap<String, Vec<Pending>>,
    out: &mut Walk,
    writer: u32,
    diffed: &mut u64,
) -> bool {
    let mut wrote_any = false;
    for path in changed {
        let Some(lines) = pending.remove(&path) else {
            continue;
        };
        // A blob that cannot be read (a partial clone's missing object) leaves the file's
        // remaining lines without a writer rather than giving them to the wrong commit.
        let Blob::Present(after) = blob_at(repo, tree, &path) else {
            out.exact = false;
            continue;
        };
        let before = match parent_tree.map(|t| blob_at(repo, t, &path)) {
            Some(Blob::Unreadable) => {
                out.exact = false;
                continue;
            }
            Some(Blob::Present(before)) => Some(before),
            Some(Blob::Absent) | None => None,
        };
        let (carried, attributed) = match before {
            Some(before) => {
                *diffed += (before.len() + after.len()) as u64;
                step(&lines, &before, &after)
            }
            None => (Vec::new(), lines.iter().map(work_range).collect()),
        };
        if !attributed.is_empty() {
            wrote_any = true;
            let ranges = out.lines.entry(path.clone()).or_default();
            ranges.extend(attributed.into_iter().map(|r| (r.start, r.end, writer)));
        }
        if !carried.is_empty() {
            pending.insert(path, carried);
        }
    }
    wrote_any
}

/// Ends a walk that met `base`'s HEAD with `pending` lines (in that HEAD's numbering, all in
/// `base`'s paths) as walking on would have: each line's writer is the one `base` found, the
/// walk would have stopped after the deepest of them (or where `base` stopped, if some line has
/// none there), and not beyond `max_commits` in all; what that walk would have counted of the
/// commits' words is `base`'s first commits'. Needs an exact `base` (no unreadable blob): a
/// line it lost to one would have ended the walk at another place.
fn splice(
    out: &mut Walk,
    vocab: &mut HashMap<String, u32>,
    pending: &mut HashMap<String, Vec<Pending>>,
    base: &Walk,
    max_commits: u32,
) {
    let walked = out.said.len() as u32;
    let room = max_commits.saturating_sub(walked);
    // Each pending line's writer in `base`, in this walk's lines.
    let mut found: Vec<(&str, Range<u32>, u32)> = Vec::new();
    let mut unresolved = false;
    for (path, lines) in pending.iter() {
        let ranges = base.lines.get(path).map_or(&[][..], Vec::as_slice);
        for p in lines {
            let mut covered = 0;
            let first = ranges.partition_point(|r| r.1 <= p.cur.start);
            for &(a, b, w) in ranges[first..].iter().take_while(|r| r.0 < p.cur.end) {
                let (s, e) = (a.max(p.cur.start), b.min(p.cur.end));
                if s >= e {
                    continue;
                }
                let work = p.work + (s - p.cur.start);
                found.push((path, work..work + (e - s), w));
                covered += e - s;
            }
            unresolved |= covered < p.cur.end - p.cur.start;
        }
    }
    let deepest = found
        .iter()
        .filter_map(|f| base.depth.get(f.2 as usize))
        .max()
        .copied()
        .unwrap_or(0);
    let end = if unresolved {
        base.said.len() as u32
    } else {
        deepest
    }
    .min(room);
    // The writers kept, in the order the walk would have met them (`base`'s order).
    let mut kept: Vec<u32> = found
        .iter()
        .map(|f| f.2)
        .filter(|&w| base.depth.get(w as usize).is_some_and(|&d| d <= end))
        .collect();
    kept.sort_unstable();
    kept.dedup();
    let first = out.writers.len() as u32;
    for &w in &kept {
        out.writers.push(base.writers[w as usize].clone());
        out.depth.push(walked + base.depth[w as usize]);
    }
    let mut cut = false;
    for (path, lines, w) in found {
        match kept.binary_search(&w) {
            Ok(i) => out.lines.entry(path.to_owned()).or_default().push((
                lines.start,
                lines.end,
                first + i as u32,
            )),
            Err(_) => cut = true,
        }
    }
    for ids in base.said.iter().take(end as usize) {
        let next = out.said.len();
        out.said.push(Vec::with_capacity(ids.len()));
        for &i in ids {
            let word = &base.vocab[i as usize];
            let id = match vocab.get(word) {
                Some(&id) => id,
                None => {
                    let id = out.vocab.len() as u32;
                    vocab.insert(word.clone(), id);
                    out.vocab.push(word.clone());
                    id
                }
            };
            out.said[next].push(id);
        }
    }
    if !unresolved && !cut {
        pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the git CLI in `dir` with a fixed identity; its output, trimmed.
    fn git_in(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Writes `text` to `rel` under `dir`, making its folders.
    fn write_in(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// A repository made with the git CLI: `commits` commits of random edits to four files
    /// (two rewritten a third of the way, one added half-way, one deleted near the end),
    /// returning the folder and each commit's id.
    fn random_history(seed: u64, commits: usize) -> (tempfile::TempDir, Vec<ObjectId>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let git = |args: &[&str]| git_in(dir.path(), args);
        git(&["init", "-q"]);
        let mut state = seed;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as usize) % n.max(1)
        };
        let words = [
            "parser", "render", "cache", "theme", "width", "error", "config",
        ];
        let mut files: Vec<Vec<String>> = (0..4)
            .map(|f| (0..12).map(|l| format!("f{f} line {l}")).collect())
            .collect();
        let mut ids = Vec::new();
        for c in 0..commits {
            for (f, lines) in files.iter_mut().enumerate() {
                // A rewrite of `a` and `b`: later walks stop there, before the root.
                if c == commits / 3 && f < 2 {
                    *lines = (0..10).map(|l| format!("c{c} rewritten {l}")).collect();
                    continue;
                }
                if c > 0 && next(3) != 0 {
                    continue;
                }
                for _ in 0..=next(3) {
                    let at = next(lines.len() + 1);
                    match next(3) {
                        0 => lines.insert(at, format!("c{c} new {}", next(1000))),
                        1 if at < lines.len() => {
                            lines.remove(at);
                        }
                        _ if at < lines.len() => lines[at] = format!("c{c} changed {f}"),
                        _ => lines.push("}".to_owned()),
                    }
                }
            }
            // `d` exists from the middle on; `c` is gone near the end.
            for (f, lines) in files.iter().enumerate() {
                let path = dir.path().join(format!("{}.txt", ["a", "b", "c", "d"][f]));
                let live = match f {
                    2 => c + 3 < commits,
                    3 => c >= commits / 2,
                    _ => true,
                };
                if live {
                    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
                } else if path.exists() {
                    std::fs::remove_file(&path).expect("remove");
                }
            }
            git(&["add", "-A"]);
            let message = format!("{} the {} {c}", words[next(7)], words[next(7)]);
            git(&["commit", "-q", "--allow-empty", "-m", &message]);
            let id = git(&["rev-parse", "HEAD"]);
            ids.push(ObjectId::from_hex(id.as_bytes()).expect("hex id"));
        }
        (dir, ids)
    }

    /// The indexable files of `commit` with their line counts, as `chunk_history` lists them.
    fn paths_at(repo: &gix::Repository, commit: ObjectId, except: &[&str]) -> Vec<(String, u32)> {
        let tree = repo
            .find_commit(commit)
            .expect("commit")
            .tree_id()
            .expect("tree")
            .detach();
        ["a.txt", "b.txt", "c.txt", "d.txt"]
            .into_iter()
            .filter(|p| !except.contains(p))
            .filter_map(|p| match blob_at(repo, tree, p) {
                Blob::Present(b) => Some((p.to_owned(), line_count(&b))),
                _ => None,
            })
            .collect()
    }

    /// A walk without what it cost (a walk that took the rest from an earlier one counts the
    /// earlier one's whole cost, an upper bound of what walking on would have cost).
    fn found(mut w: Walk) -> Walk {
        w.diffed = 0;
        w.visits = 0;
        w
    }

    fn walk_at(
        repo: &gix::Repository,
        commit: ObjectId,
        paths: &[(String, u32)],
        max_commits: u32,
        base: Option<&Walk>,
    ) -> Walk {
        let c = repo.find_commit(commit).expect("commit");
        let tree = c.tree_id().expect("tree").detach();
        let mut w = walk(repo, c, tree, "", paths, max_commits, base);
        w.head = commit.to_hex().to_string();
        w.paths = paths.iter().map(|p| p.0.clone()).collect();
        w
    }

    #[test]
    fn a_walk_from_an_earlier_walk_finds_what_the_whole_walk_finds() {
        for seed in [1u64, 7, 42] {
            let (dir, ids) = random_history(seed, 24);
            let repo = gix::open(dir.path()).expect("repository");
            let head = *ids.last().expect("commits");
            let mut spliced_once = false;
            // Earlier HEADs; the same HEAD with fewer files; bounds that cut the walk short,
            // the earlier walk's bound, or neither.
            for (from, except, bound) in [
                (ids.len() - 2, &[][..], MAX_COMMITS),
                (ids.len() / 2, &[], MAX_COMMITS),
                (3, &[], MAX_COMMITS),
                (0, &[], MAX_COMMITS),
                (ids.len() - 1, &["b.txt"][..], MAX_COMMITS),
                (ids.len() - 6, &[], 9),
                (ids.len() / 2, &[], 14),
                (ids.len() - 3, &["a.txt"], 4),
            ] {
                let paths = paths_at(&repo, head, except);
                let whole = walk_at(&repo, head, &paths, bound, None);
                let earlier = paths_at(&repo, ids[from], &[]);
                let base = walk_at(&repo, ids[from], &earlier, bound, None);
                let again = walk_at(&repo, head, &paths, bound, Some(&base));
                assert!(again.diffed >= whole.diffed && again.visits >= whole.visits);
                assert_eq!(
                    found(again),
                    found(whole.clone()),
                    "seed {seed}, from commit {from}, bound {bound}"
                );
                assert!(whole.sound());
                // The earlier walk was used: its messages, marked, show up.
                let mut marked = base;
                for m in &mut marked.writers {
                    m.insert_str(0, "earlier ");
                }
                let with_marked = walk_at(&repo, head, &paths, bound, Some(&marked));
                spliced_once |= with_marked
                    .writers
                    .iter()
                    .any(|m| m.starts_with("earlier "));
            }
            assert!(
                spliced_once,
                "seed {seed}: no walk stopped at the earlier HEAD"
            );
        }
    }

    #[test]
    fn an_earlier_walk_off_the_first_parent_line_is_not_used() {
        let (dir, ids) = random_history(3, 6);
        let repo = gix::open(dir.path()).expect("repository");
        let paths = paths_at(&repo, ids[2], &[]);
        let mut base = walk_at(
            &repo,
            ids[5],
            &paths_at(&repo, ids[5], &[]),
            MAX_COMMITS,
            None,
        );
        // A later commit is not met walking back from an earlier one.
        for m in &mut base.writers {
            m.insert_str(0, "later ");
        }
        let walked = walk_at(&repo, ids[2], &paths, MAX_COMMITS, Some(&base));
        assert_eq!(walked, walk_at(&repo, ids[2], &paths, MAX_COMMITS, None));
    }

    /// A subfolder's walk counts only the commits that touched it: commits elsewhere in the
    /// repository neither use up the bound nor count in the words' frequencies.
    #[test]
    fn a_subfolder_walks_only_the_commits_that_touched_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let git = |args: &[&str]| git_in(dir.path(), args);
        let write = |rel: &str, text: &str| write_in(dir.path(), rel, text);
        git(&["init", "-q"]);
        write("sub/a.txt", "a\nb\nc\n");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "parser one"]);
        let mut ids = Vec::new();
        for i in 0..5 {
            write("top.txt", &format!("{i}\n"));
            git(&["add", "-A"]);
            git(&["commit", "-qm", &format!("elsewhere {i}")]);
            ids.push(git(&["rev-parse", "HEAD"]));
        }
        write("sub/a.txt", "a\nB\nc\n");
        git(&["commit", "-qam", "render two"]);
        write("top.txt", "last\n");
        git(&["commit", "-qam", "elsewhere last"]);
        let head = git(&["rev-parse", "HEAD"]);
        let repo = gix::open(dir.path()).expect("repository");
        let at = |id: &str| ObjectId::from_hex(id.as_bytes()).expect("hex");
        let c = repo.find_commit(at(&head)).expect("commit");
        let tree = c.tree_id().expect("tree").detach();
        let paths = vec![("sub/a.txt".to_owned(), 3)];
        let w = walk(&repo, c.clone(), tree, "sub/", &paths, 2, None);
        assert_eq!(w.said.len(), 2, "the two commits that touched sub/");
        assert!(w.complete);
        assert_eq!(w.writers, ["render two\n", "parser one\n"]);
        assert_eq!(w.lines["sub/a.txt"], vec![(0, 1, 1), (1, 2, 0), (2, 3, 1)]);
        // The same bound spent on the whole repository's commits does not reach the first.
        let whole = walk(&repo, c.clone(), tree, "", &paths, 2, None);
        assert!(!whole.complete);
        // From an earlier walk of the subfolder (its HEAD a commit elsewhere), the same result.
        let mid = repo.find_commit(at(&ids[2])).expect("commit");
        let mid_tree = mid.tree_id().expect("tree").detach();
        let mut base = walk(&repo, mid, mid_tree, "sub/", &paths, 2, None);
        base.head = ids[2].clone();
        base.paths = vec!["sub/a.txt".to_owned()];
        let again = walk(&repo, c, tree, "sub/", &paths, 2, Some(&base));
        assert_eq!(found(again), found(w));
    }

    /// A tree a commit changed that cannot be read (a partial clone) ends the walk: the lines
    /// left get no writer, not the writer of whatever older commit can be read.
    #[test]
    fn an_unreadable_tree_ends_the_walk() {
        let dir = tempfile::tempdir().expect("temp dir");
        let git = |args: &[&str]| git_in(dir.path(), args);
        let write = |rel: &str, text: &str| write_in(dir.path(), rel, text);
        git(&["init", "-q"]);
        write("sub/a.txt", "a\nb\nc\n");
        write("top.txt", "0\n");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "one"]);
        write("sub/a.txt", "a\nB\nc\n");
        git(&["commit", "-qam", "two"]);
        write("top.txt", "1\n");
        git(&["commit", "-qam", "three"]);
        let head = git(&["rev-parse", "HEAD"]);
        // `sub` as "two" left it (and "three" kept it): its tree object goes missing.
        let sub = git(&["rev-parse", "HEAD:sub"]);
        std::fs::remove_file(
            dir.path()
                .join(".git/objects")
                .join(&sub[..2])
                .join(&sub[2..]),
        )
        .expect("a loose tree object");
        let repo = gix::open(dir.path()).expect("repository");
        let c = repo
            .find_commit(ObjectId::from_hex(head.as_bytes()).expect("hex"))
            .expect("commit");
        let tree = c.tree_id().expect("tree").detach();
        let w = walk(
            &repo,
            c,
            tree,
            "",
            &[("sub/a.txt".to_owned(), 3)],
            MAX_COMMITS,
            None,
        );
        assert!(!w.exact && !w.complete, "{w:?}");
        assert!(
            !w.writers.iter().any(|m| m.starts_with("one")),
            "line 2 is not given to the first commit: {w:?}"
        );
    }

    #[test]
    fn a_damaged_cache_is_not_sound() {
        let mut w = Walk {
            vocab: vec!["parser".into()],
            said: vec![vec![0]],
            writers: vec!["parser".into()],
            depth: vec![1],
            ..Walk::default()
        };
        w.lines.insert("a".into(), vec![(0, 3, 0)]);
        assert!(w.sound());
        w.lines.insert("b".into(), vec![(0, 3, 1)]);
        assert!(!w.sound(), "a writer that is not there");
        w.lines
            .insert("b".into(), vec![(4, 9, 0), (6, 8, 0), (0, 2, 0)]);
        assert!(!w.sound(), "ranges out of order, overlapping");
        w.lines.remove("b");
        w.depth = vec![2];
        assert!(!w.sound(), "a writer deeper than the walk");
    }
}
