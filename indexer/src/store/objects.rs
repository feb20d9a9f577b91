//! Immutable objects under `objects/`, addressed by the same keys as the S3 store.

use std::io::Write;
use std::path::PathBuf;

use super::Store;
use crate::IndexerError;

pub use ctxgate_core::index::layout::{Manifest, keys};

impl Store {
    fn object_path(&self, key: &str) -> PathBuf {
        self.objects_dir().join(key)
    }

    /// Whether an object exists.
    pub fn has_object(&self, key: &str) -> bool {
        self.object_path(key).is_file()
    }

    /// Writes an object atomically (temporary file, fsync, rename): readers see all of it or
    /// nothing.
    pub fn put_object(&self, key: &str, bytes: &[u8]) -> Result<(), IndexerError> {
        let path = self.object_path(key);
        let dir = path
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| self.root.clone());
        std::fs::create_dir_all(&dir).map_err(IndexerError::io("create folder", &dir))?;
        let tmp = dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
        let mut f = std::fs::File::create(&tmp).map_err(IndexerError::io("create", &tmp))?;
        f.write_all(bytes)
            .map_err(IndexerError::io("write", &tmp))?;
        f.sync_all().map_err(IndexerError::io("sync", &tmp))?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(IndexerError::io("publish", &path))?;
        // The rename itself must survive a power loss before anything points at the object.
        #[cfg(unix)]
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Every object whose key starts with `prefix` (a folder of keys), with its size and
    /// modification time; none when the folder does not exist.
    pub fn list_objects(
        &self,
        prefix: &str,
    ) -> Result<Vec<ctxgate_core::index::gc::StoredObject>, IndexerError> {
        let base = self.root.join("objects");
        let mut out = Vec::new();
        let mut stack = vec![base.join(prefix)];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(IndexerError::io("list", &dir)(e)),
            };
            for entry in entries {
                let entry = entry.map_err(IndexerError::io("list", &dir))?;
                let path = entry.path();
                let meta = entry.metadata().map_err(IndexerError::io("stat", &path))?;
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                let Ok(rel) = path.strip_prefix(&base) else {
                    continue;
                };
                let modified_ms = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as u64);
                out.push(ctxgate_core::index::gc::StoredObject {
                    key: rel.to_string_lossy().replace('\\', "/"),
                    bytes: meta.len(),
                    modified_ms,
                });
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Deletes an object; one already gone is not an error (a re-run finishes a GC).
    pub fn delete_object(&self, key: &str) -> Result<(), IndexerError> {
        let path = self.object_path(key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(IndexerError::io("delete", &path)(e)),
        }
    }

    /// Reads a whole object.
    pub fn get_object(&self, key: &str) -> Result<Vec<u8>, IndexerError> {
        let path = self.object_path(key);
        std::fs::read(&path).map_err(IndexerError::io("read", &path))
    }

    /// Reads `len` bytes at `offset` of an object.
    pub fn get_range(&self, key: &str, offset: u64, len: usize) -> Result<Vec<u8>, IndexerError> {
        let path = self.object_path(key);
        read_file_range(&path, offset, len).map_err(IndexerError::io("read", &path))
    }

    /// Up to `len` bytes at `offset` of an object: fewer when the object ends first (a reader
    /// over remote storage checks the length and names a truncated object). A missing object is
    /// [`IndexerError::NotFound`].
    pub fn get_range_upto(
        &self,
        key: &str,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, IndexerError> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.object_path(key);
        let mut f = std::fs::File::open(&path).map_err(IndexerError::io("open", &path))?;
        f.seek(SeekFrom::Start(offset))
            .map_err(IndexerError::io("read", &path))?;
        let mut buf = Vec::with_capacity(len);
        f.take(len as u64)
            .read_to_end(&mut buf)
            .map_err(IndexerError::io("read", &path))?;
        Ok(buf)
    }

    /// The folder objects are stored in (each under its key).
    pub fn objects_dir(&self) -> PathBuf {
        self.root.join("objects")
    }
}

/// Exactly `len` bytes at `offset` of the file at `path`.
pub fn read_file_range(
    path: &std::path::Path,
    offset: u64,
    len: usize,
) -> std::io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; len];
    read_exact_at(&f, &mut buf, offset)?;
    Ok(buf)
}

#[cfg(unix)]
fn read_exact_at(f: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(f: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = f;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}
