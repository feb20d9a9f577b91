//! Dense (embedding) retrieval where a host has it: the chunks nearest a query by embedding,
//! for ranking. Its own small trait, held by the app state beside the backend: natively the
//! data-directory backend implements it (with a local model or an embeddings API); the Worker
//! has none yet, and a request then ranks without the dense signal.

use std::sync::Arc;

use async_trait::async_trait;

use crate::backend::BackendError;
use crate::snapshot::Snapshot;

/// Finds the chunks nearest a query by embedding.
#[async_trait]
pub trait DenseRetrieval: Send + Sync + 'static {
    /// The chunks of `snap` nearest to `query`, scaled for ranking
    /// ([`ctxgate_core::dense::scaled_hits`]); none when this host's model is off.
    async fn dense_hits(
        &self,
        snap: Arc<Snapshot>,
        query: &str,
    ) -> Result<Vec<(u32, f32)>, BackendError>;
}
