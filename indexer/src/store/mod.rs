//! The embedded default store: everything ctxgate keeps, in one data directory.
//!
//! ```text
//! <data dir>/
//!   objects/org/{org}/project/{project}/segments/{sha256}.seg         chunk texts, content-addressed
//!   objects/org/{org}/project/{project}/version/{version}/index.pack  the index (immutable)
//!   objects/org/{org}/project/{project}/version/{version}/manifest.json  written last
//!   meta.db                                                           SQLite: items (pk, sk, data)
//!   locks/{project}.lock                                              one indexer at a time
//! ```
//!
//! Object keys are the S3 keys of the cloud store, and `meta.db` has one table of
//! `(pk, sk, data)` items shaped like the DynamoDB single-table design, so both stores hold the
//! same things under the same names. Objects are written to a temporary file and renamed into
//! place; a version is published by writing its manifest last and then flipping the project's
//! `current_version` in one transaction, so a crash at any point leaves the previous version
//! current and no half version visible.

mod index_store;
mod items;
mod objects;
mod records;

pub use index_store::{IndexStore, ProjectGuard};
pub use items::{ProjectItem, VersionItem};
pub use objects::{Manifest, keys, read_file_range};

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::IndexerError;

/// The organisation that owns everything indexed from the command line.
pub const LOCAL_ORG: &str = "local";

/// An open data directory.
pub struct Store {
    root: PathBuf,
    db: Connection,
}

/// Held while a project is being indexed; dropping it releases the lock.
pub struct ProjectLock {
    _file: File,
}

impl Store {
    /// Opens (creating when needed) the data directory at `root`.
    pub fn open(root: &Path) -> Result<Self, IndexerError> {
        std::fs::create_dir_all(root.join("objects"))
            .map_err(IndexerError::io("create data directory", root))?;
        std::fs::create_dir_all(root.join("locks"))
            .map_err(IndexerError::io("create data directory", root))?;
        let root = root
            .canonicalize()
            .map_err(IndexerError::io("open data directory", root))?;
        let db = Connection::open(root.join("meta.db"))?;
        db.busy_timeout(std::time::Duration::from_secs(30))?;
        // Switching to WAL and creating the table can report "busy" without waiting when two
        // processes create the database at once, so the setup retries on its own.
        let mut attempt = 0;
        loop {
            match setup(&db) {
                Ok(()) => break,
                Err(e) if is_busy(&e) && attempt < 200 => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Self { root, db })
    }

    /// The data directory (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the project's indexing lock, waiting for another process that holds it.
    pub fn lock_project(&self, project: &str) -> Result<ProjectLock, IndexerError> {
        let path = self.root.join("locks").join(format!("{project}.lock"));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(IndexerError::io("open lock", &path))?;
        file.lock().map_err(IndexerError::io("lock", &path))?;
        Ok(ProjectLock { _file: file })
    }

    fn get_item(&self, pk: &str, sk: &str) -> Result<Option<String>, IndexerError> {
        Ok(self
            .db
            .query_row(
                "SELECT data FROM items WHERE pk = ?1 AND sk = ?2",
                params![pk, sk],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn query_items(&self, pk: &str, prefix: &str) -> Result<Vec<String>, IndexerError> {
        let mut stmt = self.db.prepare_cached(
            "SELECT data FROM items WHERE pk = ?1 AND sk >= ?2 AND sk < ?3 ORDER BY sk",
        )?;
        let end = prefix_end(prefix);
        let rows = stmt.query_map(params![pk, prefix, end], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

/// The first string after every string that starts with `prefix`: the open end of a prefix
/// range in SQL.
pub(crate) fn prefix_end(prefix: &str) -> String {
    format!("{prefix}\u{10FFFF}")
}

fn setup(db: &Connection) -> rusqlite::Result<()> {
    db.pragma_update(None, "journal_mode", "WAL")?;
    db.pragma_update(None, "synchronous", "NORMAL")?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS items (
            pk TEXT NOT NULL,
            sk TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (pk, sk)
        ) WITHOUT ROWID;",
    )
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
