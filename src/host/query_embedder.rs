//! The native server's [`QueryEmbedder`]: its `--dense` model (local or an embeddings API,
//! the indexer's own clients), run off the async threads, so `ctxgate serve` ranks with the
//! vectors a version was published with exactly as the Worker does.

use std::sync::Arc;

use async_trait::async_trait;
use ctxgate_edge::backend::BackendError;
use ctxgate_edge::dense::QueryEmbedder;
use ctxgate_indexer::embed::Embedder;

/// An [`Embedder`] embedding one query at a time.
pub struct NativeQueryEmbedder(pub Arc<dyn Embedder>);

#[async_trait]
impl QueryEmbedder for NativeQueryEmbedder {
    fn model(&self) -> &str {
        self.0.model()
    }

    async fn embed_query(&self, query: &str) -> Result<Vec<f32>, BackendError> {
        let embedder = self.0.clone();
        let query = query.to_owned();
        tokio::task::spawn_blocking(move || embedder.embed(&[&query]))
            .await
            .map_err(|e| BackendError::Storage(format!("embedding task failed: {e}")))?
            .map_err(super::embedded::dense::embed_error)?
            .pop()
            .ok_or_else(|| BackendError::Embedding {
                code: ctxgate_core::error_code::ErrorCode::EmbedBadAnswer,
                message: "no vector for the query".into(),
            })
    }
}
