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

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use ctxgate_core::index::history::words;
use ctxgate_core::index::{ChunkRecord, FileEntry, History};
use gix::ObjectId;
use imara_diff::{Algorithm, Diff, InternedInput};

use crate::recency::{changed_paths, repository_of};

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

/// What one file's lines were written by: `(work-tree lines, writer)`, writers numbered in
/// the order met.
type Written = Vec<(Range<u32>, u32)>;

/// The history of the chunks of `files` (a version's files and chunks, in pack order) under
/// `root`, or an empty [`History`] when `root` is not in a git work tree or nothing was
/// attributed. `max_commits` bounds the walk.
pub fn chunk_history(
    root: &Path,
    files: &[FileEntry],
    chunks: &[ChunkRecord],
    max_commits: u32,
) -> History {
    let Some((repo, prefix)) = repository_of(root) else {
        return History::default();
    };
    let mut pending: HashMap<String, Vec<Pending>> = HashMap::new();
    let mut written: HashMap<String, Written> = HashMap::new();
    let Ok(head) = repo.head_commit() else {
        return History::default();
    };
    let Ok(head_tree) = head.tree_id().map(|t| t.detach()) else {
        return History::default();
    };
    // The work tree against HEAD: uncommitted lines have no writer.
    for f in files
        .iter()
        .filter(|f| f.skipped.is_none() && f.chunk_count > 0)
    {
        let Ok(current) = std::fs::read(root.join(&f.path)) else {
            continue;
        };
        let lines = line_count(&current);
        let start = vec![Pending {
            cur: 0..lines,
            work: 0,
        }];
        let full = format!("{prefix}{}", f.path);
        let Some(committed) = blob_at(&repo, head_tree, &full) else {
            continue;
        };
        let (carried, _) = step(&start, &committed, &current);
        if !carried.is_empty() {
            pending.insert(full, carried);
        }
    }
    let mut writers: Vec<String> = Vec::new();
    let mut df: HashMap<String, u32> = HashMap::new();
    let mut commit = head;
    let mut tree = head_tree;
    let mut walked = 0u32;
    while walked < max_commits && !pending.is_empty() {
        let message = commit.message_raw_sloppy().to_string();
        let mut distinct = words(&message);
        distinct.sort_unstable();
        distinct.dedup();
        for w in distinct {
            *df.entry(w).or_insert(0) += 1;
        }
        walked += 1;
        let parent = commit
            .parent_ids()
            .next()
            .map(|id| id.detach())
            .and_then(|id| repo.find_commit(id).ok());
        let parent_tree = parent
            .as_ref()
            .and_then(|p| p.tree_id().ok())
            .map(|t| t.detach());
        let has_parent_ids = commit.parent_ids().next().is_some();
        if has_parent_ids && parent_tree.is_none() {
            // A shallow clone's boundary: what is older is not known.
            break;
        }
        let mut changed = Vec::new();
        changed_paths(&repo, parent_tree, tree, "", &mut changed);
        let writer = writers.len() as u32;
        let mut wrote_any = false;
        for path in changed {
            let Some(lines) = pending.remove(&path) else {
                continue;
            };
            let Some(after) = blob_at(&repo, tree, &path) else {
                pending.insert(path, lines);
                continue;
            };
            let before = parent_tree.and_then(|t| blob_at(&repo, t, &path));
            let (carried, attributed) = match before {
                Some(before) => step(&lines, &before, &after),
                None => (Vec::new(), lines.iter().map(work_range).collect()),
            };
            if !attributed.is_empty() {
                wrote_any = true;
                let out = written.entry(path.clone()).or_default();
                out.extend(attributed.into_iter().map(|r| (r, writer)));
            }
            if !carried.is_empty() {
                pending.insert(path, carried);
            }
        }
        if wrote_any {
            writers.push(message);
        }
        let (Some(parent), Some(parent_tree)) = (parent, parent_tree) else {
            break;
        };
        commit = parent;
        tree = parent_tree;
    }
    if writers.is_empty() {
        return History::default();
    }
    let per_chunk: Vec<Vec<u32>> = chunks
        .iter()
        .map(|c| {
            let Some(f) = files.get(c.file as usize) else {
                return Vec::new();
            };
            let Some(ranges) = written.get(&format!("{prefix}{}", f.path)) else {
                return Vec::new();
            };
            let lines = c.start_line.saturating_sub(1)..c.end_line;
            ranges
                .iter()
                .filter(|(r, _)| r.start < lines.end && lines.start < r.end)
                .map(|&(_, w)| w)
                .collect()
        })
        .collect();
    tracing::info!(
        commits = walked,
        writers = writers.len(),
        "history: read which commits wrote the indexed lines"
    );
    History::new(walked, &df, &writers, &per_chunk)
}

/// The bytes of the blob at `path` in `tree`, if it is a file there.
fn blob_at(repo: &gix::Repository, tree: ObjectId, path: &str) -> Option<Vec<u8>> {
    let tree = repo.find_tree(tree).ok()?;
    let entry = tree.lookup_entry_by_path(path).ok()??;
    if !entry.mode().is_blob() {
        return None;
    }
    Some(repo.find_blob(entry.object_id()).ok()?.data.clone())
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
    fn line_counts_include_an_unterminated_last_line() {
        assert_eq!(line_count(b""), 0);
        assert_eq!(line_count(b"a\n"), 1);
        assert_eq!(line_count(b"a\nb"), 2);
    }
}
