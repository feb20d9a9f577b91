//! Dense retrieval on the native host: the model loaded once, each open version's vectors
//! embedded (or read from the cache) the first time a query needs them.

use std::sync::Mutex;

use async_trait::async_trait;
use ctxgate_core::dense::VectorTable;
use ctxgate_edge::backend::BackendError;
use ctxgate_edge::dense::DenseRetrieval;
use ctxgate_indexer::embed::{EmbedError, Embedder, pack_vectors, query_hits};
use ctxgate_indexer::pipeline::NoProgress;

use super::EmbeddedBackend;

/// Dense retrieval on this server: the model, loaded once, and each open version's vectors.
pub(super) struct Dense {
    pub(super) embedder: std::sync::Arc<dyn Embedder>,
    pub(super) tables: Mutex<Vec<(VersionKey, std::sync::Arc<VectorTable>)>>,
}

/// Organisation, project id and version.
type VersionKey = (String, String, u64);

/// Versions whose vector tables stay in memory (as many as the snapshot cache keeps).
const DENSE_TABLES: usize = 4;

/// The tenant's error for `e`; the provider's own answer goes to the log only.
pub(crate) fn embed_error(e: EmbedError) -> BackendError {
    tracing::warn!("{e}");
    BackendError::Embedding {
        code: e.code(),
        message: e.public_message(),
    }
}

#[async_trait]
impl DenseRetrieval for EmbeddedBackend {
    async fn dense_hits(
        &self,
        snap: std::sync::Arc<ctxgate_edge::state::Snapshot>,
        query: &str,
    ) -> Result<Vec<(u32, f32)>, BackendError> {
        let Some(dense) = &self.dense else {
            return Ok(Vec::new());
        };
        let key = (snap.org.clone(), snap.project.clone(), snap.version);
        let cached = dense
            .tables
            .lock()
            .ok()
            .and_then(|t| t.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()));
        let embedder = dense.embedder.clone();
        let root = self.root.clone();
        let texts = ctxgate_indexer::assemble::SegmentFiles {
            objects: self.with(|s| Ok(s.objects_dir()))?,
            org: snap.org.clone(),
            project: snap.project.clone(),
        };
        let query = query.to_string();
        // Embedding is CPU work (a whole version's chunks the first time): off the async threads.
        let (table, hits) = tokio::task::spawn_blocking(move || {
            let table = match cached {
                Some(t) => t,
                None => {
                    let (t, _) = pack_vectors(
                        &root,
                        &snap.pack,
                        &snap.pack_sha256,
                        &texts,
                        embedder.as_ref(),
                        &NoProgress,
                    )?;
                    std::sync::Arc::new(t)
                }
            };
            let hits = query_hits(embedder.as_ref(), &table, &query)?;
            Ok::<_, EmbedError>((table, hits))
        })
        .await
        .map_err(|e| BackendError::Storage(format!("embedding task failed: {e}")))?
        .map_err(embed_error)?;
        if let Ok(mut tables) = dense.tables.lock()
            && !tables.iter().any(|(k, _)| *k == key)
        {
            if tables.len() >= DENSE_TABLES {
                tables.remove(0);
            }
            tables.push((key, table.clone()));
        }
        Ok(hits)
    }
}
