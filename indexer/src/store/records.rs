//! Generic items for the records the API keeps (organisations, keys, ledgers, audit), with the
//! operations a DynamoDB table offers: get, put, put-if-absent, an atomic read-modify-write of
//! one item, and a range query on the sort key.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{Store, prefix_end};
use crate::IndexerError;

impl Store {
    /// The data of item (`pk`, `sk`).
    pub fn item(&self, pk: &str, sk: &str) -> Result<Option<String>, IndexerError> {
        Ok(self
            .db
            .query_row(
                "SELECT data FROM items WHERE pk = ?1 AND sk = ?2",
                params![pk, sk],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Writes item (`pk`, `sk`), replacing it.
    pub fn put_item(&self, pk: &str, sk: &str, data: &str) -> Result<(), IndexerError> {
        self.db.execute(
            "INSERT INTO items (pk, sk, data) VALUES (?1, ?2, ?3)
             ON CONFLICT (pk, sk) DO UPDATE SET data = excluded.data",
            params![pk, sk, data],
        )?;
        Ok(())
    }

    /// Writes item (`pk`, `sk`) only if it does not exist; returns whether it was written.
    pub fn insert_item(&self, pk: &str, sk: &str, data: &str) -> Result<bool, IndexerError> {
        let n = self.db.execute(
            "INSERT INTO items (pk, sk, data) VALUES (?1, ?2, ?3) ON CONFLICT (pk, sk) DO NOTHING",
            params![pk, sk, data],
        )?;
        Ok(n == 1)
    }

    /// Reads item (`pk`, `sk`), lets `f` decide its new data (or leave it), and writes it, all
    /// in one write transaction: concurrent updates from any process serialise.
    pub fn update_item<T>(
        &self,
        pk: &str,
        sk: &str,
        f: impl FnOnce(Option<String>) -> Result<(Option<String>, T), IndexerError>,
    ) -> Result<T, IndexerError> {
        self.update_item_and_put(pk, sk, f, None)
    }

    /// [`Store::update_item`], and in the same transaction writes item `also` (`pk`, `sk`,
    /// `data`) whatever `f` decided: both land or neither does (a call's quota settlement and
    /// its audit record, so a crash never books tokens that no audit record explains).
    pub fn update_item_and_put<T>(
        &self,
        pk: &str,
        sk: &str,
        f: impl FnOnce(Option<String>) -> Result<(Option<String>, T), IndexerError>,
        also: Option<(&str, &str, &str)>,
    ) -> Result<T, IndexerError> {
        const UPSERT: &str = "INSERT INTO items (pk, sk, data) VALUES (?1, ?2, ?3)
             ON CONFLICT (pk, sk) DO UPDATE SET data = excluded.data";
        let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
        let old: Option<String> = tx
            .query_row(
                "SELECT data FROM items WHERE pk = ?1 AND sk = ?2",
                params![pk, sk],
                |r| r.get(0),
            )
            .optional()?;
        let (new, out) = f(old)?;
        if let Some(data) = new {
            tx.execute(UPSERT, params![pk, sk, data])?;
        }
        if let Some((pk, sk, data)) = also {
            tx.execute(UPSERT, params![pk, sk, data])?;
            crate::crash::point("before_commit");
        }
        tx.commit()?;
        Ok(out)
    }

    /// Items of `pk` whose sort key starts with `prefix`, in sort-key order (or reversed), at
    /// most `limit`.
    pub fn items_with_prefix(
        &self,
        pk: &str,
        prefix: &str,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<String>, IndexerError> {
        let order = if newest_first { "DESC" } else { "ASC" };
        let mut stmt = self.db.prepare_cached(&format!(
            "SELECT data FROM items WHERE pk = ?1 AND sk >= ?2 AND sk < ?3 ORDER BY sk {order} LIMIT ?4"
        ))?;
        let end = prefix_end(prefix);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map(params![pk, prefix, end, limit], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditional_and_atomic_updates() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(store.insert_item("A", "x", "1").unwrap());
        assert!(!store.insert_item("A", "x", "2").unwrap());
        assert_eq!(store.item("A", "x").unwrap().as_deref(), Some("1"));
        // Concurrent increments from separate connections never lose an update.
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let root = store.root().to_path_buf();
                std::thread::spawn(move || {
                    let s = Store::open(&root).unwrap();
                    for _ in 0..25 {
                        s.update_item("A", "n", |old| {
                            let n: u64 = old.map_or(0, |o| o.parse().unwrap());
                            Ok((Some((n + 1).to_string()), ()))
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(store.item("A", "n").unwrap().as_deref(), Some("200"));
        store.put_item("A", "log#2", "b").unwrap();
        store.put_item("A", "log#1", "a").unwrap();
        assert_eq!(
            store.items_with_prefix("A", "log#", true, 10).unwrap(),
            ["b", "a"]
        );
        assert_eq!(
            store.items_with_prefix("A", "log#", false, 1).unwrap(),
            ["a"]
        );
    }
}
