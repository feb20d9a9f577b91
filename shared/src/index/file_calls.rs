//! The call relation inside a file, kept once a query has worked it out.
//!
//! Which chunks of a file use the names each of its chunks defines depends on the version only,
//! yet finding it is a users-list lookup per defined name of every chunk of the file: the
//! largest share of a warm call's CPU (docs/performance.md, "Where a warm call's CPU goes").
//! An opened version is kept and asked again (by `ctxgate serve` and by each Worker isolate), so
//! the relation of each file a query needed is kept with it.

use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap as HashMap;

/// Each chunk of a file that defines names, with, for each name it defines (in
/// [`crate::index::references::defined_names`] order), the chunks of the same file that use it,
/// ascending.
pub type CallsInFile = Vec<(u32, Vec<Vec<u32>>)>;

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
            vec![(7, vec![vec![8, 9]])]
        });
        let again = cache.get_or_compute(3, || {
            runs += 1;
            Vec::new()
        });
        assert_eq!(
            (runs, &*first, &*again),
            (1, &vec![(7, vec![vec![8, 9]])], &*first)
        );
        assert_eq!(format!("{:?}", cache.clone()), "FileCalls(0 files)");
    }

    #[test]
    fn past_the_limit_a_file_is_not_kept() {
        let cache = FileCalls::default();
        for f in 0..MAX_KEPT_FILES as u32 {
            cache.get_or_compute(f, Vec::new);
        }
        let mut runs = 0;
        for _ in 0..2 {
            cache.get_or_compute(u32::MAX, || {
                runs += 1;
                Vec::new()
            });
        }
        assert_eq!(runs, 2);
    }
}
