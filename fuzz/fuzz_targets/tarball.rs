//! Tarball extraction: any bytes as a tar or gzip-compressed tar, unpacked through the indexer's
//! extraction gate with small limits. Whatever it writes stays inside the folder.
#![no_main]

use ctxgate_fuzz::extract::{assert_contained, small_limits};
use ctxgate_indexer::source::fuzzing::unpack_tarball;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temporary folder");
    let dest = dir.path().join("files");
    std::fs::create_dir(&dest).expect("folder");
    if let Ok((root, _warnings)) = unpack_tarball(data, &dest, &small_limits()) {
        assert!(root.starts_with(&dest), "root {root:?} outside {dest:?}");
    }
    assert_contained(dir.path(), &dest);
});
