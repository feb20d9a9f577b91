//! The walk kept in the data directory: re-indexing the same HEAD reads it back instead of
//! walking again; a damaged, older or unwritable cache only costs a walk.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::Walk;

/// The cache file's name for a work tree folder: its path and place in the repository hashed.
pub(super) fn cache_key(root: &Path, prefix: &str) -> String {
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
pub(super) fn read_cache(file: &Path) -> Option<Walk> {
    postcard::from_bytes::<Walk>(&std::fs::read(file).ok()?)
        .ok()
        .filter(Walk::sound)
}

/// Keeps `walk` for the next index of the same HEAD; a cache that cannot be written only
/// costs the next index the walk again.
pub(super) fn write_cache(file: &Path, walk: &Walk) {
    let Ok(bytes) = postcard::to_allocvec(walk) else {
        return;
    };
    if let Err(e) = crate::token_tables::write_atomic(file, &bytes) {
        tracing::debug!(error = %e, "history: the walk's cache was not kept");
    }
}
