//! The trait a host implements to take push webhooks: where a project's webhook secret and the
//! deliveries it has seen are kept, where the project's registered source is read, and how a
//! re-index is started without waiting for it (a local job natively; a Lambda invocation over
//! AWS). The decisions — signatures, payloads, which pushes a project follows, replay marks —
//! are the core's ([`ctxgate_core::webhook`]); the handlers that apply them are
//! [`crate::routes::webhooks`].
//!
//! Item layout: [`ItemKey::webhook`](ctxgate_core::item_key::ItemKey::webhook) and
//! [`ItemKey::delivery`](ctxgate_core::item_key::ItemKey::delivery), in the store where the
//! host keeps its projects.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::backend::{BackendError, JobGate, ProjectInfo, SourceSpec};

/// A project's push webhook, as stored. The secret is kept so that GitHub's HMAC can be
/// computed; no answer carries it after the one that created it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRecord {
    /// The owning organisation.
    pub org: String,
    /// The project's id.
    pub project: String,
    /// The shared secret (GitHub's HMAC key, GitLab's token).
    pub secret: String,
    /// Created, milliseconds since the epoch.
    pub created_ms: u64,
}

impl std::fmt::Debug for HookRecord {
    /// Never the secret: a record may end up in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRecord")
            .field("org", &self.org)
            .field("project", &self.project)
            .field("secret", &"<redacted>")
            .field("created_ms", &self.created_ms)
            .finish()
    }
}

/// Webhook storage and re-index queueing, for hosts that index (the data directory natively;
/// S3 + DynamoDB with an indexer function). A host without it answers the webhook endpoints
/// with 403 `webhooks_unsupported`.
#[async_trait]
pub trait Webhooks: Send + Sync + 'static {
    /// Project `project`'s webhook, if it has one.
    async fn hook(&self, project: &str) -> Result<Option<HookRecord>, BackendError>;
    /// Stores `hook`, replacing the project's previous one (whose secret stops working).
    async fn put_hook(&self, hook: &HookRecord) -> Result<(), BackendError>;
    /// Deletes project `project`'s webhook; none is not an error.
    async fn delete_hook(&self, project: &str) -> Result<(), BackendError>;
    /// Records that a delivery with `mark` reached project `project`, atomically: `false` when
    /// that mark was recorded before (a replay), and then nothing is written.
    async fn mark_delivery(
        &self,
        project: &str,
        mark: &str,
        at_ms: u64,
    ) -> Result<bool, BackendError>;
    /// Forgets a mark, so that a delivery whose re-index could not be queued can come again.
    async fn forget_delivery(&self, project: &str, mark: &str) -> Result<(), BackendError>;
    /// Where `project`'s files come from, as registered; `None` when this host does not know
    /// (a project published by an indexer elsewhere).
    async fn registered_source(
        &self,
        project: &ProjectInfo,
    ) -> Result<Option<SourceSpec>, BackendError>;
    /// Starts indexing `project` again from `source`, incrementally, and returns without
    /// waiting; readers keep the current version until the new one is published. A job that
    /// starts or is queued is counted through `jobs`; one merged into a job already queued is
    /// not.
    async fn queue_reindex(
        &self,
        project: &ProjectInfo,
        source: &SourceSpec,
        jobs: &dyn JobGate,
    ) -> Result<(), BackendError>;
}
