//! The extraction of remote sources without the network, for the fuzz targets in `fuzz/`: a
//! tarball's bytes and a git commit's tree go through the same [`super::extract`] gate as a
//! real fetch. Built only with the `fuzzing` feature.

use std::path::{Path, PathBuf};

use super::{SourceError, SourceLimits};

/// The gitoxide the indexer links, so a fuzz target writes objects with the same types.
pub use gix;

/// Unpacks a tar or gzip-compressed tar below `dest` (an empty folder), as a tarball source is
/// unpacked; returns the project root and the warnings.
pub fn unpack_tarball(
    bytes: &[u8],
    dest: &Path,
    limits: &SourceLimits,
) -> Result<(PathBuf, Vec<String>), SourceError> {
    super::tarball::unpack(bytes, dest, limits)
}

/// Writes the tree of `commit` in `repo` below `root` (an empty folder), as a git source is
/// materialised; returns the warnings.
pub fn write_git_tree(
    repo: &gix::Repository,
    commit: gix::ObjectId,
    root: &Path,
    limits: &SourceLimits,
) -> Result<Vec<String>, SourceError> {
    super::git::write_tree(repo, commit, root, limits)
}
