//! Vectors by (model, chunk key), in a SQLite file of the data directory: shared by every
//! project and version on the machine, so an unchanged chunk is never embedded twice.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use ctxgate_core::hash::Sha256Digest;
use rusqlite::{Connection, params};

/// The cache.
pub struct VectorCache {
    db: Mutex<Connection>,
}

impl VectorCache {
    /// Opens (creating) the cache at `path`.
    pub fn open(path: &Path) -> Result<Self, rusqlite::Error> {
        if let Some(dir) = path.parent() {
            // A missing folder shows as SQLite's own "unable to open" error below.
            let _ = std::fs::create_dir_all(dir);
        }
        let db = Connection::open(path)?;
        db.busy_timeout(std::time::Duration::from_secs(30))?;
        db.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE IF NOT EXISTS vectors (
                 model TEXT NOT NULL,
                 key BLOB NOT NULL,
                 vector BLOB NOT NULL,
                 PRIMARY KEY (model, key)
             ) WITHOUT ROWID;",
        )?;
        Ok(Self { db: Mutex::new(db) })
    }

    /// An in-memory cache (tests, one-off runs).
    pub fn in_memory() -> Result<Self, rusqlite::Error> {
        Self::open(Path::new(":memory:"))
    }

    /// The cached vectors of `model` among `keys`.
    pub fn get_many(
        &self,
        model: &str,
        keys: &[Sha256Digest],
    ) -> Result<HashMap<Sha256Digest, Vec<f32>>, rusqlite::Error> {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        let mut stmt =
            db.prepare_cached("SELECT vector FROM vectors WHERE model = ?1 AND key = ?2")?;
        let mut out = HashMap::new();
        for key in keys {
            if out.contains_key(key) {
                continue;
            }
            let found: Option<Vec<u8>> = stmt
                .query_row(params![model, &key.0[..]], |r| r.get(0))
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })?;
            if let Some(bytes) = found {
                out.insert(*key, decode(&bytes));
            }
        }
        Ok(out)
    }

    /// Stores `vectors` of `model`, in one transaction.
    pub fn put_many(
        &self,
        model: &str,
        vectors: &[(Sha256Digest, Vec<f32>)],
    ) -> Result<(), rusqlite::Error> {
        let mut db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        let tx = db.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO vectors (model, key, vector) VALUES (?1, ?2, ?3)",
            )?;
            for (key, v) in vectors {
                stmt.execute(params![model, &key.0[..], encode(v)])?;
            }
        }
        tx.commit()
    }
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_per_model() {
        let cache = VectorCache::in_memory().unwrap();
        let k = Sha256Digest::of(b"chunk");
        cache.put_many("a", &[(k, vec![0.5, -1.25, 3.0])]).unwrap();
        assert_eq!(
            cache.get_many("a", &[k]).unwrap()[&k],
            vec![0.5, -1.25, 3.0]
        );
        assert!(
            cache.get_many("b", &[k]).unwrap().is_empty(),
            "models never mix"
        );
    }
}
