//! Reading a commit's trees with gix: a folder's subtree, a file's bytes, and whether they
//! could be read at all (a partial clone leaves objects out; a history is someone else's input,
//! so an old version too large to be source is not read).

use gix::ObjectId;

/// A file version larger than this is not read: its file's remaining lines get no writer (the
/// indexed files are smaller; an old version this large is data, or a bomb).
const MAX_BLOB_BYTES: u64 = 16 << 20;

/// The folder `prefix`'s tree in `tree` and in `parent_tree` (the whole trees for the
/// repository's root); `Err` when one cannot be read (a partial clone).
pub(super) fn folder_trees(
    repo: &gix::Repository,
    tree: ObjectId,
    parent_tree: Option<ObjectId>,
    prefix: &str,
) -> Result<(Option<ObjectId>, Option<ObjectId>), ()> {
    if prefix.is_empty() {
        return Ok((Some(tree), parent_tree));
    }
    let sub = |t: Option<ObjectId>| t.map_or(Ok(None), |t| subtree(repo, t, prefix));
    match (sub(Some(tree)), sub(parent_tree)) {
        (Ok(folder), Ok(parent_folder)) => Ok((folder, parent_folder)),
        _ => Err(()),
    }
}

/// The id of the folder `prefix` (`a/b/`) in `tree`, if it is a folder there; `Err` when a
/// tree on the way cannot be read (a partial clone).
fn subtree(repo: &gix::Repository, tree: ObjectId, prefix: &str) -> Result<Option<ObjectId>, ()> {
    let entry = repo
        .find_tree(tree)
        .map_err(drop)?
        .lookup_entry_by_path(prefix.trim_end_matches('/'))
        .map_err(drop)?;
    Ok(entry.and_then(|e| e.mode().is_tree().then(|| e.object_id())))
}

/// The bytes of the blob at `path` in `tree`, if it is a file there.
pub(super) fn blob_at(repo: &gix::Repository, tree: ObjectId, path: &str) -> Blob {
    let Ok(tree) = repo.find_tree(tree) else {
        return Blob::Unreadable;
    };
    match tree.lookup_entry_by_path(path) {
        Ok(Some(entry)) if entry.mode().is_blob() => {
            match repo.find_header(entry.object_id()) {
                Ok(header) if header.size() <= MAX_BLOB_BYTES => {}
                _ => return Blob::Unreadable,
            }
            match repo.find_blob(entry.object_id()) {
                Ok(blob) => Blob::Present(blob.data.clone()),
                Err(_) => Blob::Unreadable,
            }
        }
        Ok(_) => Blob::Absent,
        Err(_) => Blob::Unreadable,
    }
}

/// A path's file in a tree.
pub(super) enum Blob {
    Present(Vec<u8>),
    /// No file there (or not a regular one).
    Absent,
    /// There, but its object cannot be read (a partial clone) or is over [`MAX_BLOB_BYTES`].
    Unreadable,
}
