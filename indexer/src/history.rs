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
use imara_diff::{Algorithm, Diff, InternedInput};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::recency::{changed_paths, repository_of};

/// The cached walk's layout and rules; a cache of another version is walked again.
const CACHE_VERSION: u32 = 1;

/// Commits walked back from HEAD at most (the whole history of most repositories: the
/// measurement found the whole history worth more than the last 500 commits).
pub const MAX_COMMITS: u32 = 20_000;

/// Lines of one file not yet attributed: `cur` in the numbering of the commit being looked at,
/// starting at line `work` of the work tree's file (0-based).
#[derive(Clone, Debug, PartialEq)]
struct Pending {
    cur: Range<u32>,
    work: u32,
}

/// What the walk from one HEAD found, for one set of paths: kept in the data directory's
/// cache, so that re-indexing edits of the work tree (HEAD unmoved) costs a diff of the changed
/// files instead of the walk.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// Commits walked.
    commits: u32,
    /// Per word, how many walked commits' messages hold it.
    df: BTreeMap<String, u32>,
    /// The messages of the commits that wrote some line, in the order met.
    writers: Vec<String>,
    /// Per path, `(first line, end line, writer)` in HEAD's version (0-based, end exclusive),
    /// ascending and disjoint.
    lines: BTreeMap<String, Vec<(u32, u32, u32)>>,
}

/// The history of the chunks of `files` (a version's files and chunks, in pack order) under
/// `root`, or an empty [`History`] when `root` is not in a git work tree or nothing was
/// attributed. `max_commits` bounds the walk; `cache` is a folder for the walk's result.
pub fn chunk_history(
    root: &Path,
    files: &[FileEntry],
    chunks: &[ChunkRecord],
    max_commits: u32,
    cache: Option<&Path>,
) -> History {
    let Some((repo, prefix)) = repository_of(root) else {
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
    let walk = cache_file
        .as_deref()
        .and_then(read_cache)
        .filter(|w| {
            w.version == CACHE_VERSION
                && w.shallow == shallow
                && w.head == head_id
                && w.prefix == prefix
                && w.max_commits == max_commits
                && w.paths == names
        })
        .unwrap_or_else(|| {
            let mut w = walk(&repo, head, head_tree, &paths, max_commits);
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
        });
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
    let df: HashMap<String, u32> = walk.df.into_iter().collect();
    History::new(walk.commits, &df, &walk.writers, &per_chunk).from_head(head_id)
}

/// HEAD's commit id (hex) for the folder `root`, if it is part of a git work tree's HEAD.
pub fn head_of(root: &Path) -> Option<String> {
    let (repo, _) = repository_of(root)?;
    Some(repo.head_id().ok()?.to_hex().to_string())
}

/// Walks HEAD's first parents until every line of `paths` (full path, lines in HEAD) has its
/// writer, the root or a shallow boundary is reached, or `max_commits` were walked.
fn walk(
    repo: &gix::Repository,
    head: gix::Commit<'_>,
    head_tree: ObjectId,
    paths: &[(String, u32)],
    max_commits: u32,
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
    let mut out = Walk::default();
    let mut commit = head;
    let mut tree = head_tree;
    while out.commits < max_commits && !pending.is_empty() {
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
        let message = commit.message_raw_sloppy().to_string();
        let mut distinct = words(&message);
        distinct.sort_unstable();
        distinct.dedup();
        for w in distinct {
            *out.df.entry(w).or_insert(0) += 1;
        }
        out.commits += 1;
        let mut changed = Vec::new();
        changed_paths(repo, parent_tree, tree, "", &mut changed);
        let writer = out.writers.len() as u32;
        let mut wrote_any = false;
        for path in changed {
            let Some(lines) = pending.remove(&path) else {
                continue;
            };
            // A blob that cannot be read (a partial clone's missing object) leaves the file's
            // remaining lines without a writer rather than giving them to the wrong commit.
            let Blob::Present(after) = blob_at(repo, tree, &path) else {
                continue;
            };
            let before = match parent_tree.map(|t| blob_at(repo, t, &path)) {
                Some(Blob::Unreadable) => continue,
                Some(Blob::Present(before)) => Some(before),
                Some(Blob::Absent) | None => None,
            };
            let (carried, attributed) = match before {
                Some(before) => step(&lines, &before, &after),
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
        if wrote_any {
            out.writers.push(message);
        }
        let (Some(parent), Some(parent_tree)) = (parent, parent_tree) else {
            break;
        };
        commit = parent;
        tree = parent_tree;
    }
    for ranges in out.lines.values_mut() {
        ranges.sort_unstable();
    }
    tracing::info!(
        commits = out.commits,
        writers = out.writers.len(),
        "history: read which commits wrote the indexed lines"
    );
    out
}

/// The cache file's name for a work tree folder: its path and place in the repository hashed.
fn cache_key(root: &Path, prefix: &str) -> String {
    let mut h = Sha256::new();
    h.update(root.to_string_lossy().as_bytes());
    h.update([0]);
    h.update(prefix.as_bytes());
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A cached walk, if one is there and decodes (a damaged or older one is walked again).
fn read_cache(file: &Path) -> Option<Walk> {
    postcard::from_bytes(&std::fs::read(file).ok()?).ok()
}

/// Keeps `walk` for the next index of the same HEAD; a cache that cannot be written only
/// costs the next index the walk again.
fn write_cache(file: &Path, walk: &Walk) {
    let Ok(bytes) = postcard::to_allocvec(walk) else {
        return;
    };
    let Some(dir) = file.parent() else {
        return;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if std::io::Write::write_all(&mut tmp, &bytes).is_ok()
        && let Err(e) = tmp.persist(file)
    {
        tracing::debug!(error = %e.error, "history: the walk's cache was not kept");
    }
}

/// The bytes of the blob at `path` in `tree`, if it is a file there.
fn blob_at(repo: &gix::Repository, tree: ObjectId, path: &str) -> Blob {
    let Ok(tree) = repo.find_tree(tree) else {
        return Blob::Unreadable;
    };
    match tree.lookup_entry_by_path(path) {
        Ok(Some(entry)) if entry.mode().is_blob() => match repo.find_blob(entry.object_id()) {
            Ok(blob) => Blob::Present(blob.data.clone()),
            Err(_) => Blob::Unreadable,
        },
        Ok(_) => Blob::Absent,
        Err(_) => Blob::Unreadable,
    }
}

/// A path's file in a tree.
enum Blob {
    Present(Vec<u8>),
    /// No file there (or not a regular one).
    Absent,
    /// There, but its object cannot be read (a partial clone).
    Unreadable,
}

/// `bytes` with every `\r\n` as `\n` (line numbers unchanged): a work tree checked out with
/// CRLF line ends is the same text as its LF blob.
fn lf(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !bytes.windows(2).any(|w| w == b"\r\n") {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if !(b == b'\r' && bytes.get(i + 1) == Some(&b'\n')) {
            out.push(b);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn line_count(bytes: &[u8]) -> u32 {
    let breaks = bytes.iter().filter(|&&b| b == b'\n').count();
    let last = usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"));
    (breaks + last) as u32
}

fn work_range(p: &Pending) -> Range<u32> {
    p.work..p.work + (p.cur.end - p.cur.start)
}

/// From a commit's version of a file (`after`) back to its parent's (`before`): of the lines
/// still `pending` (in `after`'s numbering), those the change wrote (returned second, in
/// work-tree lines) and those it kept, renumbered as `before`'s (first).
fn step(pending: &[Pending], before: &[u8], after: &[u8]) -> (Vec<Pending>, Vec<Range<u32>>) {
    let input = InternedInput::new(before, after);
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_lines(&input);
    // The after side as regions: kept (with the shift to the before side) or written.
    let mut regions: Vec<(Range<u32>, Option<i64>)> = Vec::new();
    let (mut a, mut b) = (0u32, 0u32);
    for h in diff.hunks() {
        if h.after.start > a {
            regions.push((a..h.after.start, Some(i64::from(b) - i64::from(a))));
        }
        if h.after.end > h.after.start {
            regions.push((h.after.clone(), None));
        }
        a = h.after.end;
        b = h.before.end;
    }
    let after_lines = input.after.len() as u32;
    if after_lines > a {
        regions.push((a..after_lines, Some(i64::from(b) - i64::from(a))));
    }
    let mut carried = Vec::new();
    let mut wrote = Vec::new();
    for p in pending {
        for (region, shift) in &regions {
            let start = p.cur.start.max(region.start);
            let end = p.cur.end.min(region.end);
            if start >= end {
                continue;
            }
            let work = p.work + (start - p.cur.start);
            match shift {
                Some(shift) => carried.push(Pending {
                    cur: (i64::from(start) + shift) as u32..(i64::from(end) + shift) as u32,
                    work,
                }),
                None => wrote.push(work..work + (end - start)),
            }
        }
    }
    (carried, wrote)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_attributes_the_changed_lines_and_renumbers_the_rest() {
        let before = b"a\nb\nc\nd\n";
        let after = b"a\nx\ny\nc\nd\ne\n";
        let pending = vec![Pending { cur: 0..6, work: 0 }];
        let (carried, wrote) = step(&pending, before, after);
        // x, y (lines 1-2) and e (line 5) were written; a, c, d go back to lines 0, 2, 3.
        assert_eq!(wrote, vec![1..3, 5..6]);
        assert_eq!(
            carried,
            vec![
                Pending { cur: 0..1, work: 0 },
                Pending { cur: 2..4, work: 3 },
            ]
        );
        // Only what is still pending is looked at.
        let (carried, wrote) = step(
            &[Pending {
                cur: 3..4,
                work: 10,
            }],
            before,
            after,
        );
        assert_eq!(wrote, Vec::<Range<u32>>::new());
        assert_eq!(
            carried,
            vec![Pending {
                cur: 2..3,
                work: 10
            }]
        );
    }

    #[test]
    fn crlf_line_ends_read_as_lf() {
        assert_eq!(&*lf(b"a\r\nb\r\n"), b"a\nb\n");
        assert_eq!(&*lf(b"a\rb\n"), b"a\rb\n", "a lone CR is text");
        assert!(matches!(lf(b"a\nb"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn line_counts_include_an_unterminated_last_line() {
        assert_eq!(line_count(b""), 0);
        assert_eq!(line_count(b"a\n"), 1);
        assert_eq!(line_count(b"a\nb"), 2);
    }
}
