//! Dense (embedding) retrieval where a host has it: the chunks nearest a query by embedding,
//! for ranking, when the caller's organisation has it on ([`crate::backend::OrgRecord::dense`]).
//!
//! Two sources, tried in order ([`signal`]):
//! - [`published::PublishedDense`]: the version's vectors as the indexer published them (an
//!   object its manifest names), read once per process under a memory ceiling, and the query
//!   embedded by a [`QueryEmbedder`] of the same model — on the Worker an OpenAI-compatible API
//!   ([`provider::EmbeddingsApi`]), natively the server's `--dense` model;
//! - [`DenseRetrieval`]: natively, the data-directory backend embeds a version without
//!   published vectors itself (with a local model or an embeddings API).
//!
//! When neither applies, or the vectors cannot be used here (another model, too large for the
//! isolate), the request ranks without the dense signal and its answer says why.

pub mod provider;
pub mod published;

use std::sync::Arc;

use async_trait::async_trait;

use crate::backend::{BackendError, Projects};
use crate::snapshot::{ObjectCache, Snapshot};

/// Finds the chunks nearest a query by embedding, embedding a version's chunks itself.
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

/// Embeds a request's query (only the query: the chunks' vectors were published).
#[async_trait]
pub trait QueryEmbedder: Send + Sync + 'static {
    /// The model's label as published vectors name it (`openai:{model}` for an API): a query
    /// is only compared with vectors of the same model.
    fn model(&self) -> &str;
    /// The query's vector.
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>, BackendError>;
}

/// The dense evidence of one request: hits for ranking, and a note for the answer's warnings
/// when dense was asked for but could not be used.
#[derive(Debug, Default, PartialEq)]
pub struct DenseSignal {
    /// Chunk index and scaled score.
    pub hits: Vec<(u32, f32)>,
    /// Why the request ranks without the dense signal, when its organisation has it on.
    pub note: Option<String>,
}

impl DenseSignal {
    fn skipped(why: impl Into<String>) -> Self {
        Self {
            hits: Vec::new(),
            note: Some(why.into()),
        }
    }
}

/// Where a host finds dense evidence (the app state's parts).
pub struct Sources<'a> {
    /// Published vectors and a query embedder, where the host has one.
    pub published: Option<&'a published::PublishedDense>,
    /// Embedding versions here, where the host can.
    pub own: Option<&'a dyn DenseRetrieval>,
    /// Where index objects are read.
    pub projects: &'a dyn Projects,
    /// The cache of index objects beyond this process.
    pub shared: Option<&'a dyn ObjectCache>,
}

/// The dense signal for `query` over `snap`, for an organisation with dense `on`: nothing (and
/// no provider call) when it is off.
pub async fn signal(
    from: Sources<'_>,
    on: bool,
    snap: &Arc<Snapshot>,
    query: &str,
) -> Result<DenseSignal, BackendError> {
    if !on {
        return Ok(DenseSignal::default());
    }
    if let (Some(named), Some(published)) = (&snap.vectors, from.published) {
        let got = published
            .signal(from.projects, from.shared, snap, named, query)
            .await?;
        // Vectors this host cannot use may still be made here (natively, by the backend).
        if got.note.is_none() || from.own.is_none() {
            return Ok(got);
        }
    }
    if let Some(d) = from.own {
        return Ok(DenseSignal {
            hits: d.dense_hits(snap.clone(), query).await?,
            note: None,
        });
    }
    Ok(DenseSignal::skipped(match snap.vectors {
        Some(_) => "dense retrieval skipped: this host has no embeddings provider for queries",
        None => "dense retrieval skipped: this version was published without vectors",
    }))
}
