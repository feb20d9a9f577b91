//! The call relation inside a file, kept once a query has worked it out.
//!
//! Which chunks of a file use the names each of its chunks defines depends on the version only,
//! yet finding it is a users-list lookup per defined name of every chunk of the file: the
//! largest share of a warm call's CPU (docs/performance.md, "Where a warm call's CPU goes").
//! An opened version is kept and asked again (by `ctxgate serve` and by each Worker isolate), so
//! the relation of each file a query needed is kept with it.

use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap as HashMap;

/// The call relation inside one file, both ways: the chunks that use each name a chunk defines,
/// and, for each chunk, the definitions whose names it uses. A query asks it for the callers and
/// callees of its few strong chunks; walking every definition of the file for each of them was
/// most of the depth stage's time on a large repository.
#[derive(Debug, Default, PartialEq)]
pub struct CallsInFile {
    /// Each chunk of the file that defines names (ascending), with, for each name it defines (in
    /// [`crate::index::references::defined_names`] order), the chunks of the file that use it,
    /// ascending.
    defines: Vec<(u32, Vec<Vec<u32>>)>,
    /// The chunk `uses` starts at.
    first: u32,
    /// For each chunk from `first`, the (position in `defines`, position of the name) of the
    /// names it uses, ascending, each once.
    uses: Vec<Vec<(u32, u32)>>,
}

impl CallsInFile {
    /// The relation whose definitions are `defines` (as [`CallsInFile::defines`] holds them).
    pub fn new(defines: Vec<(u32, Vec<Vec<u32>>)>) -> Self {
        let all_users = || defines.iter().flat_map(|(_, names)| names.iter().flatten());
        let first = all_users().copied().min().unwrap_or(0);
        let last = all_users().copied().max().unwrap_or(0);
        let mut uses = vec![
            Vec::new();
            if defines.is_empty() {
                0
            } else {
                (last - first) as usize + 1
            }
        ];
        for (d, (_, names)) in defines.iter().enumerate() {
            for (n, users) in names.iter().enumerate() {
                for &u in users {
                    let list: &mut Vec<(u32, u32)> = &mut uses[(u - first) as usize];
                    let at = (d as u32, n as u32);
                    if list.last() != Some(&at) {
                        list.push(at);
                    }
                }
            }
        }
        Self {
            defines,
            first,
            uses,
        }
    }

    /// The callers and callees of each chunk of `strong` (chunks of the file, each once), as
    /// (chunk, position in `strong`): the users of each name a strong chunk defines (but the
    /// chunk itself), and the chunk that defines each name a strong chunk uses. In the order
    /// of a walk over the definitions, then their names, then `strong`, then the users: the
    /// first to reach a chunk is the one whose prior it takes.
    pub fn related(&self, strong: &[u32]) -> Vec<(u32, usize)> {
        // (definition, name, strong position, user position) orders them as that walk does.
        let mut found: Vec<((u32, u32, u32, u32), u32)> = Vec::new();
        for (k, &s) in strong.iter().enumerate() {
            let k = k as u32;
            if let Ok(d) = self.defines.binary_search_by_key(&s, |e| e.0) {
                for (n, users) in self.defines[d].1.iter().enumerate() {
                    let users = users.iter().enumerate().filter(|(_, u)| **u != s);
                    found.extend(users.map(|(i, &u)| ((d as u32, n as u32, k, i as u32), u)));
                }
            }
            let used = s
                .checked_sub(self.first)
                .and_then(|i| self.uses.get(i as usize));
            for &(d, n) in used.into_iter().flatten() {
                let definer = self.defines[d as usize].0;
                if definer != s {
                    found.push(((d, n, k, 0), definer));
                }
            }
        }
        found.sort_unstable_by_key(|f| f.0);
        found
            .into_iter()
            .map(|((_, _, k, _), c)| (c, k as usize))
            .collect()
    }
}

/// Files kept at most: past this, a file's relation is worked out for the call and not kept, so
/// a long-lived isolate's memory stays bounded.
const MAX_KEPT_FILES: usize = 4_096;

/// The relations worked out so far, by file.
#[derive(Default)]
pub struct FileCalls {
    files: Mutex<HashMap<u32, Arc<CallsInFile>>>,
}

impl FileCalls {
    /// File `file`'s relation: kept, or worked out by `compute` (and kept while there is room).
    pub fn get_or_compute(
        &self,
        file: u32,
        compute: impl FnOnce() -> CallsInFile,
    ) -> Arc<CallsInFile> {
        let kept = |files: &HashMap<u32, Arc<CallsInFile>>| files.get(&file).cloned();
        if let Some(hit) = kept(&self.files.lock().unwrap_or_else(PoisonError::into_inner)) {
            return hit;
        }
        // Computed without the lock: two threads that both miss compute the same value.
        let value = Arc::new(compute());
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if files.len() < MAX_KEPT_FILES {
            files.entry(file).or_insert_with(|| value.clone());
        }
        value
    }
}

/// A copy starts empty: what is kept is a cache of the version, not part of it.
impl Clone for FileCalls {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for FileCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        write!(f, "FileCalls({n} files)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_worked_out_once_and_kept() {
        let cache = FileCalls::default();
        let mut runs = 0;
        let first = cache.get_or_compute(3, || {
            runs += 1;
            CallsInFile::new(vec![(7, vec![vec![8, 9]])])
        });
        let again = cache.get_or_compute(3, || {
            runs += 1;
            CallsInFile::default()
        });
        assert_eq!(
            (runs, &*first, &*again),
            (1, &CallsInFile::new(vec![(7, vec![vec![8, 9]])]), &*first)
        );
        assert_eq!(format!("{:?}", cache.clone()), "FileCalls(0 files)");
    }

    #[test]
    fn past_the_limit_a_file_is_not_kept() {
        let cache = FileCalls::default();
        for f in 0..MAX_KEPT_FILES as u32 {
            cache.get_or_compute(f, CallsInFile::default);
        }
        let mut runs = 0;
        for _ in 0..2 {
            cache.get_or_compute(u32::MAX, || {
                runs += 1;
                CallsInFile::default()
            });
        }
        assert_eq!(runs, 2);
    }

    /// What [`CallsInFile::related`] must give: the walk over every definition, its names and
    /// the strong chunks in turn.
    fn walk(defines: &[(u32, Vec<Vec<u32>>)], strong: &[u32]) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        for (c, names) in defines {
            for users in names {
                for (k, &s) in strong.iter().enumerate() {
                    if s == *c {
                        out.extend(users.iter().filter(|u| **u != s).map(|&u| (u, k)));
                    } else if users.binary_search(&s).is_ok() {
                        out.push((*c, k));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn related_chunks_come_in_the_walks_order() {
        let defines = vec![
            (10, vec![vec![11, 12], vec![10, 13]]),
            (12, vec![vec![10, 14]]),
            (14, vec![]),
        ];
        let calls = CallsInFile::new(defines.clone());
        for strong in [vec![10], vec![12, 10], vec![13, 14, 11], vec![], vec![99]] {
            assert_eq!(
                calls.related(&strong),
                walk(&defines, &strong),
                "{strong:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn related_is_the_walk(
            raw in proptest::collection::btree_map(
                0u32..40,
                proptest::collection::vec(proptest::collection::btree_set(0u32..40, 0..6), 0..3),
                0..12,
            ),
            strong in proptest::collection::btree_set(0u32..45, 0..6),
        ) {
            let defines: Vec<(u32, Vec<Vec<u32>>)> = raw
                .into_iter()
                .map(|(c, names)| (c, names.into_iter().map(|u| u.into_iter().collect()).collect()))
                .collect();
            // Strong chunks in rank order, not ascending.
            let strong: Vec<u32> = strong.into_iter().rev().collect();
            let calls = CallsInFile::new(defines.clone());
            proptest::prop_assert_eq!(calls.related(&strong), walk(&defines, &strong));
        }
    }
}
