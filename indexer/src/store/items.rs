//! Metadata items: projects and their versions.

use ctxgate_core::item_key::{self, ItemKey, ItemRange};
pub use ctxgate_core::records::{ProjectItem, VersionItem};
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::{Store, prefix_end};
use crate::IndexerError;

fn decode<T: for<'de> Deserialize<'de>>(data: &str) -> Result<T, IndexerError> {
    serde_json::from_str(data).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

fn encode<T: Serialize>(item: &T) -> Result<String, IndexerError> {
    serde_json::to_string(item).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

impl Store {
    /// The project `id` of `org`.
    pub fn project(&self, org: &str, id: &str) -> Result<Option<ProjectItem>, IndexerError> {
        let key = ItemKey::project(org, id);
        self.get_item(&key.pk, &key.sk)?
            .map(|d| decode(&d))
            .transpose()
    }

    /// Every project of every organisation (garbage collection's work list).
    pub fn all_projects(&self) -> Result<Vec<ProjectItem>, IndexerError> {
        let mut stmt = self.db.prepare_cached(
            "SELECT data FROM items WHERE pk >= ?1 AND pk < ?2 \
             AND sk >= ?3 AND sk < ?4 ORDER BY pk, sk",
        )?;
        let (org, project) = (item_key::ORG_PREFIX, item_key::PROJECT_PREFIX);
        let bounds = params![org, prefix_end(org), project, prefix_end(project)];
        let rows = stmt.query_map(bounds, |r| r.get::<_, String>(0))?;
        rows.map(|d| decode(&d?)).collect()
    }

    /// Deletes item (`pk`, `sk`) (garbage collection deletes version records this way).
    pub fn delete_item(&self, pk: &str, sk: &str) -> Result<(), IndexerError> {
        self.db.execute(
            "DELETE FROM items WHERE pk = ?1 AND sk = ?2",
            rusqlite::params![pk, sk],
        )?;
        Ok(())
    }

    /// All projects of `org`.
    pub fn projects(&self, org: &str) -> Result<Vec<ProjectItem>, IndexerError> {
        let range = ItemRange::projects_of(org);
        self.query_items(&range.pk, range.sk_prefix)?
            .iter()
            .map(|d| decode(d))
            .collect()
    }

    /// Creates or updates a project's description (never its current version).
    pub fn upsert_project(&self, item: &ProjectItem) -> Result<(), IndexerError> {
        let ItemKey { pk, sk } = ItemKey::project(&item.org, &item.id);
        let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
        let current = tx
            .query_row(
                "SELECT data FROM items WHERE pk = ?1 AND sk = ?2",
                params![pk, sk],
                |r| r.get::<_, String>(0),
            )
            .optional()?
            .map(|d| decode::<ProjectItem>(&d))
            .transpose()?;
        let mut next = item.clone();
        next.current_version = current.and_then(|c| c.current_version);
        tx.execute(
            "INSERT INTO items (pk, sk, data) VALUES (?1, ?2, ?3)
             ON CONFLICT (pk, sk) DO UPDATE SET data = excluded.data",
            params![pk, sk, encode(&next)?],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Records `version` and makes it current, if and only if the project's current version is
    /// still `expected` (a conditional write, as on DynamoDB). Returns whether it was published.
    pub fn publish_version(
        &self,
        org: &str,
        version: &VersionItem,
        expected: Option<u64>,
    ) -> Result<bool, IndexerError> {
        let ItemKey { pk, sk } = ItemKey::project(org, &version.project);
        let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
        let data: String = tx.query_row(
            "SELECT data FROM items WHERE pk = ?1 AND sk = ?2",
            params![pk, sk],
            |r| r.get(0),
        )?;
        let mut project: ProjectItem = decode(&data)?;
        if project.current_version != expected {
            return Ok(false);
        }
        project.current_version = Some(version.version);
        project.updated_at_ns = version.created_at_ns;
        let record = ItemKey::version(&version.project, version.version);
        tx.execute(
            "INSERT INTO items (pk, sk, data) VALUES (?1, ?2, ?3)",
            params![record.pk, record.sk, encode(version)?],
        )?;
        tx.execute(
            "UPDATE items SET data = ?3 WHERE pk = ?1 AND sk = ?2",
            params![pk, sk, encode(&project)?],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// A version's record.
    pub fn version(
        &self,
        project: &str,
        version: u64,
    ) -> Result<Option<VersionItem>, IndexerError> {
        let key = ItemKey::version(project, version);
        self.get_item(&key.pk, &key.sk)?
            .map(|d| decode(&d))
            .transpose()
    }

    /// All versions of a project, oldest first.
    pub fn versions(&self, project: &str) -> Result<Vec<VersionItem>, IndexerError> {
        let range = ItemRange::versions_of(project);
        self.query_items(&range.pk, range.sk_prefix)?
            .iter()
            .map(|d| decode(d))
            .collect()
    }
}
