//! What the pipeline needs from a store, so that one indexing run publishes the same objects and
//! items to the embedded data directory or to S3 and DynamoDB.
//!
//! The interface is synchronous because indexing is CPU-bound work on rayon threads; the AWS
//! store drives its async clients from the calling thread (see `crate::aws`).

use std::path::Path;

use ctxgate_core::index::gc::StoredObject;

use super::{ProjectItem, Store, VersionItem};
use crate::IndexerError;

/// Held while a project is being indexed; dropping it releases the project.
pub struct ProjectGuard(#[allow(dead_code)] Box<dyn Send>);

impl ProjectGuard {
    /// Wraps whatever releases the project when dropped.
    pub fn new(inner: impl Send + 'static) -> Self {
        Self(Box::new(inner))
    }
}

/// Objects (immutable, under S3-style keys) and metadata items (DynamoDB-style) for indexing.
pub trait IndexStore {
    /// Where the store is, for messages (`data dir /x`, `s3://bucket/prefix + table t`).
    fn describe(&self) -> String;
    /// The local folder the store writes into, if it has one: a repository that contains it
    /// is refused, since ctxgate never writes inside a repository it indexes.
    fn local_root(&self) -> Option<&Path>;
    /// A local folder for caches (exact token tables).
    fn cache_root(&self) -> &Path;
    /// Takes the project's indexing lock; `who` names the holder for operators.
    fn lock_project(&self, project: &str, who: &str) -> Result<ProjectGuard, IndexerError>;
    /// The project `id` of `org`.
    fn project(&self, org: &str, id: &str) -> Result<Option<ProjectItem>, IndexerError>;
    /// Creates or updates a project's description (never its current version).
    fn upsert_project(&self, item: &ProjectItem) -> Result<(), IndexerError>;
    /// Records `version` and makes it current if and only if the project's current version is
    /// still `expected`: one conditional write. Returns whether it was published.
    fn publish_version(
        &self,
        org: &str,
        version: &VersionItem,
        expected: Option<u64>,
    ) -> Result<bool, IndexerError>;
    /// The highest version number ever recorded for the project (0 when none).
    fn latest_version(&self, project: &str) -> Result<u64, IndexerError>;
    /// Whether an object exists.
    fn has_object(&self, key: &str) -> Result<bool, IndexerError>;
    /// Writes an object whole: readers see all of it or nothing.
    fn put_object(&self, key: &str, bytes: &[u8]) -> Result<(), IndexerError>;
    /// Writes an object only if no object has that key yet; returns whether it wrote it.
    /// Version objects go through this, so two indexers that both believe they hold a project
    /// (a lease lost to a long pause) can never overwrite each other's version.
    fn put_new_object(&self, key: &str, bytes: &[u8]) -> Result<bool, IndexerError>;
    /// Reads a whole object.
    fn get_object(&self, key: &str) -> Result<Vec<u8>, IndexerError>;

    /// Requests and bytes sent to a remote store so far (S3 requests, S3 bytes uploaded,
    /// DynamoDB requests); `None` for a local store.
    fn traffic(&self) -> Option<(u64, u64, u64)> {
        None
    }

    /// The data of metadata item (`pk`, `sk`).
    fn item(&self, pk: &str, sk: &str) -> Result<Option<String>, IndexerError>;
    /// Writes item (`pk`, `sk`), replacing it.
    fn put_item(&self, pk: &str, sk: &str, data: &str) -> Result<(), IndexerError>;
    /// Reads item (`pk`, `sk`) and replaces it with what `f` returns (`None` leaves it), without
    /// losing a concurrent update: `f` may run again if the item changed meanwhile.
    fn update_item(
        &self,
        pk: &str,
        sk: &str,
        f: &mut dyn FnMut(Option<String>) -> Result<Option<String>, IndexerError>,
    ) -> Result<(), IndexerError>;
    /// Items of `pk` whose sort key starts with `prefix`, in sort-key order (or reversed), at
    /// most `limit`.
    fn items_with_prefix(
        &self,
        pk: &str,
        prefix: &str,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<String>, IndexerError>;

    /// Every project of every organisation (garbage collection over a whole store).
    fn all_projects(&self) -> Result<Vec<ProjectItem>, IndexerError>;
    /// Every object under `prefix`, with its size and modification time.
    fn list_objects(&self, prefix: &str) -> Result<Vec<StoredObject>, IndexerError>;
    /// Deletes an object; one already gone is not an error.
    fn delete_object(&self, key: &str) -> Result<(), IndexerError>;
    /// Deletes item (`pk`, `sk`); one already gone is not an error.
    fn delete_item(&self, pk: &str, sk: &str) -> Result<(), IndexerError>;
}

impl IndexStore for Store {
    fn describe(&self) -> String {
        format!("data dir {}", self.root().display())
    }

    fn local_root(&self) -> Option<&Path> {
        Some(self.root())
    }

    fn cache_root(&self) -> &Path {
        self.root()
    }

    fn lock_project(&self, project: &str, _who: &str) -> Result<ProjectGuard, IndexerError> {
        Ok(ProjectGuard::new(Store::lock_project(self, project)?))
    }

    fn project(&self, org: &str, id: &str) -> Result<Option<ProjectItem>, IndexerError> {
        Store::project(self, org, id)
    }

    fn upsert_project(&self, item: &ProjectItem) -> Result<(), IndexerError> {
        Store::upsert_project(self, item)
    }

    fn publish_version(
        &self,
        org: &str,
        version: &VersionItem,
        expected: Option<u64>,
    ) -> Result<bool, IndexerError> {
        Store::publish_version(self, org, version, expected)
    }

    fn latest_version(&self, project: &str) -> Result<u64, IndexerError> {
        Ok(self.versions(project)?.last().map_or(0, |v| v.version))
    }

    fn has_object(&self, key: &str) -> Result<bool, IndexerError> {
        Ok(Store::has_object(self, key))
    }

    fn put_object(&self, key: &str, bytes: &[u8]) -> Result<(), IndexerError> {
        Store::put_object(self, key, bytes)
    }

    fn put_new_object(&self, key: &str, bytes: &[u8]) -> Result<bool, IndexerError> {
        // The project's file lock already keeps a second indexer out.
        if Store::has_object(self, key) {
            return Ok(false);
        }
        Store::put_object(self, key, bytes)?;
        Ok(true)
    }

    fn get_object(&self, key: &str) -> Result<Vec<u8>, IndexerError> {
        Store::get_object(self, key)
    }

    fn item(&self, pk: &str, sk: &str) -> Result<Option<String>, IndexerError> {
        Store::item(self, pk, sk)
    }

    fn put_item(&self, pk: &str, sk: &str, data: &str) -> Result<(), IndexerError> {
        Store::put_item(self, pk, sk, data)
    }

    fn update_item(
        &self,
        pk: &str,
        sk: &str,
        f: &mut dyn FnMut(Option<String>) -> Result<Option<String>, IndexerError>,
    ) -> Result<(), IndexerError> {
        Store::update_item(self, pk, sk, |old| Ok((f(old)?, ())))
    }

    fn items_with_prefix(
        &self,
        pk: &str,
        prefix: &str,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<String>, IndexerError> {
        Store::items_with_prefix(self, pk, prefix, newest_first, limit)
    }

    fn all_projects(&self) -> Result<Vec<ProjectItem>, IndexerError> {
        Store::all_projects(self)
    }

    fn list_objects(&self, prefix: &str) -> Result<Vec<StoredObject>, IndexerError> {
        Store::list_objects(self, prefix)
    }

    fn delete_object(&self, key: &str) -> Result<(), IndexerError> {
        Store::delete_object(self, key)
    }

    fn delete_item(&self, pk: &str, sk: &str) -> Result<(), IndexerError> {
        Store::delete_item(self, pk, sk)
    }
}
