//! What the extraction targets share: small limits, and the check that nothing was written
//! outside the destination folder.

use std::path::Path;

use ctxgate_indexer::source::{NetworkPolicy, SourceLimits};

/// 1 MiB and 200 entries: enough for every shape of archive, small enough to hit the limits.
pub fn small_limits() -> SourceLimits {
    SourceLimits {
        max_bytes: 1 << 20,
        max_files: 200,
        network: NetworkPolicy::Open,
        history_commits: 1,
    }
}

/// Panics unless `scratch` holds nothing but `dest`, and every link below `dest` resolves inside
/// it.
pub fn assert_contained(scratch: &Path, dest: &Path) {
    for entry in std::fs::read_dir(scratch).expect("scratch folder") {
        let path = entry.expect("an entry").path();
        assert_eq!(path, dest, "extraction wrote {path:?} beside its folder");
    }
    let root = std::fs::canonicalize(dest).expect("destination");
    let mut stack = vec![dest.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a folder") {
            let entry = entry.expect("an entry");
            let path = entry.path();
            let kind = entry.file_type().expect("a file type");
            if kind.is_symlink() {
                let real = std::fs::canonicalize(&path)
                    .unwrap_or_else(|e| panic!("link {path:?} left dangling: {e}"));
                assert!(real.starts_with(&root), "link {path:?} leads to {real:?}");
            } else if kind.is_dir() {
                stack.push(path);
            }
        }
    }
}
