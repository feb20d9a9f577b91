//! Ranking with the vectors a version was published with: the table is read once per process
//! (through the shared object cache, like the pack) and kept under a memory ceiling, and each
//! request embeds only its query.

use std::sync::{Arc, Mutex};

use ctxgate_core::dense::{VectorTable, scaled_hits};
use ctxgate_core::index::layout::VectorsRef;

use super::{DenseSignal, QueryEmbedder};
use crate::backend::{BackendError, Projects};
use crate::snapshot::{ObjectCache, Snapshot};

/// How many nearest chunks become candidates (as the native CLI's).
const CANDIDATES: usize = 100;

/// The Worker's default ceiling for one version's table: an isolate has 128 MB, which the
/// resident pack, the chunk texts read and the answer share.
pub const WORKER_TABLE_CEILING: u64 = 16 << 20;

/// Published vectors and the embedder of queries for them.
pub struct PublishedDense {
    embedder: Arc<dyn QueryEmbedder>,
    /// The largest table loaded, and the most the kept tables take together.
    ceiling: u64,
    /// Tables by object key, most recently used first.
    tables: Mutex<Vec<(String, Arc<VectorTable>)>>,
}

impl PublishedDense {
    /// Queries embedded by `embedder`; tables larger than `ceiling` bytes are skipped.
    pub fn new(embedder: Arc<dyn QueryEmbedder>, ceiling: u64) -> Self {
        Self {
            embedder,
            ceiling,
            tables: Mutex::default(),
        }
    }

    /// The dense signal for `query` over `snap`, whose manifest names `named`.
    pub async fn signal(
        &self,
        projects: &dyn Projects,
        shared: Option<&dyn ObjectCache>,
        snap: &Snapshot,
        named: &VectorsRef,
        query: &str,
    ) -> Result<DenseSignal, BackendError> {
        if let Err(why) = admit(named, self.embedder.model(), self.ceiling) {
            return Ok(DenseSignal::skipped(why));
        }
        let table = self.table(projects, shared, named).await?;
        if table.len() != snap.pack.chunks.len() {
            return Err(BackendError::Corrupt(format!(
                "`{}` holds {} vectors for {} chunks",
                named.key,
                table.len(),
                snap.pack.chunks.len()
            )));
        }
        let vector = self.embedder.embed_query(query).await?;
        Ok(compare(&table, &vector))
    }

    /// The table `named`, from memory or read (and then kept, evicting the least recently
    /// used while the kept ones exceed the ceiling).
    async fn table(
        &self,
        projects: &dyn Projects,
        shared: Option<&dyn ObjectCache>,
        named: &VectorsRef,
    ) -> Result<Arc<VectorTable>, BackendError> {
        if let Ok(mut tables) = self.tables.lock()
            && let Some(i) = tables.iter().position(|(k, _)| *k == named.key)
        {
            let hit = tables.remove(i);
            let table = hit.1.clone();
            tables.insert(0, hit);
            return Ok(table);
        }
        let bytes = match shared {
            Some(cache) => match cache.get(&named.key).await {
                Some(b) => b,
                None => {
                    let b = projects.object(&named.key).await?;
                    cache.put(&named.key, &b).await;
                    b
                }
            },
            None => projects.object(&named.key).await?,
        };
        let table = decoded(named, &bytes)?;
        drop(bytes);
        let table = Arc::new(table);
        if let Ok(mut tables) = self.tables.lock() {
            tables.insert(0, (named.key.clone(), table.clone()));
            let mut total = 0u64;
            tables.retain(|(_, t)| {
                total += t.memory_bytes() as u64;
                total <= self.ceiling
            });
        }
        Ok(table)
    }
}

/// The dense signal of a query's `vector` against `table`. A vector of another size than the
/// table's (the host configured for other dimensions than the indexer was) cannot be compared:
/// the request ranks without it, and the answer says why.
fn compare(table: &VectorTable, vector: &[f32]) -> DenseSignal {
    match table.nearest(vector, CANDIDATES) {
        Ok(nearest) => DenseSignal {
            hits: scaled_hits(&nearest),
            note: None,
        },
        Err(e) => DenseSignal::skipped(format!("dense retrieval skipped: {e}")),
    }
}

/// The table in `bytes`, read for `named`: exactly the size, model and dimensions the
/// manifest says. The ceiling was checked against the manifest's size, so an object of
/// another size is not the one it names (and could be far larger than was admitted).
fn decoded(named: &VectorsRef, bytes: &[u8]) -> Result<VectorTable, BackendError> {
    if bytes.len() as u64 != named.bytes {
        return Err(BackendError::Corrupt(format!(
            "`{}` holds {} bytes, its manifest says {}",
            named.key,
            bytes.len(),
            named.bytes
        )));
    }
    VectorTable::decode(bytes)
        .filter(|t| t.model == named.model && t.dims == named.dims)
        .ok_or_else(|| {
            BackendError::Corrupt(format!(
                "`{}` is not the vector table its manifest names",
                named.key
            ))
        })
}

/// Whether `named` can be used by a host embedding queries with `model` under `ceiling`
/// bytes; if not, the note the answer carries.
fn admit(named: &VectorsRef, model: &str, ceiling: u64) -> Result<(), String> {
    if named.model != model {
        return Err(format!(
            "dense retrieval skipped: this version's vectors were made by `{}`, this host embeds queries with `{model}`",
            named.model
        ));
    }
    if named.bytes > ceiling {
        return Err(format!(
            "dense retrieval skipped: this version's vectors take {:.1} MB, over this host's ceiling of {:.1} MB",
            named.bytes as f64 / 1e6,
            ceiling as f64 / 1e6
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_vector_of_other_dimensions_is_skipped_with_a_note() {
        let mut table = VectorTable::new("openai:a", 2);
        table.push(Some(&[1.0, 0.0])).unwrap();
        table.push(Some(&[0.0, 1.0])).unwrap();
        let hit = compare(&table, &[1.0, 0.1]);
        assert_eq!((hit.hits.first().map(|h| h.0), hit.note), (Some(0), None));
        let skipped = compare(&table, &[1.0, 0.0, 0.0]);
        assert!(skipped.hits.is_empty());
        assert!(skipped.note.is_some_and(|n| n.contains("3 dimensions")));
    }

    #[test]
    fn a_table_is_read_only_as_its_manifest_names_it() {
        let mut table = VectorTable::new("openai:a", 2);
        table.push(Some(&[1.0, 0.0])).unwrap();
        let bytes = table.encode();
        let named = VectorsRef {
            key: "org/o/project/p/vectors/ab.vec".into(),
            bytes: bytes.len() as u64,
            model: "openai:a".into(),
            dims: 2,
        };
        assert_eq!(decoded(&named, &bytes).ok(), Some(table));
        // A manifest that understates the object's size: refused before decoding.
        let understated = VectorsRef {
            bytes: 4,
            ..named.clone()
        };
        let err = decoded(&understated, &bytes).unwrap_err().to_string();
        assert!(
            err.contains("its manifest says 4") && err.contains("ab.vec"),
            "{err}"
        );
        let other_dims = VectorsRef { dims: 3, ..named };
        assert!(matches!(
            decoded(&other_dims, &bytes),
            Err(BackendError::Corrupt(_))
        ));
    }

    #[test]
    fn tables_of_another_model_or_over_the_ceiling_are_skipped_with_a_note() {
        let named = VectorsRef {
            key: "org/o/project/p/vectors/ab.vec".into(),
            bytes: 20 << 20,
            model: "openai:a".into(),
            dims: 8,
        };
        assert_eq!(admit(&named, "openai:a", 32 << 20), Ok(()));
        let why = admit(&named, "openai:a", WORKER_TABLE_CEILING).unwrap_err();
        assert!(why.contains("21.0 MB") && why.contains("16.8 MB"), "{why}");
        let why = admit(&named, "openai:b", 32 << 20).unwrap_err();
        assert!(
            why.contains("`openai:a`") && why.contains("`openai:b`"),
            "{why}"
        );
    }
}
