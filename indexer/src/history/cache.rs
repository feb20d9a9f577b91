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
