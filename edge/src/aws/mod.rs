//! Reading what the batch indexer publishes to AWS: index objects from S3 and project records
//! from DynamoDB, over SigV4-signed HTTP (the `aws-sigv4` crate signs; the host sends), so the
//! Worker needs no SDK, tokio or socket.
//!
//! [`PublishedProjects`] is the [`crate::backend::Projects`] half: projects and objects come
//! from AWS, where the indexer put them; organisations, keys, quotas and audit stay with the
//! host's own [`crate::backend::Accounts`] (in the Worker, Durable Objects: an atomic quota
//! reservation at the edge costs no round trip to a region). The item layout is the core's ([`ctxgate_core::item_key`]): a project is
//! [`ItemKey::project`](ctxgate_core::item_key::ItemKey::project) with its JSON in `data` and the published version in the
//! `current_version` attribute, which the indexer flips in one conditional transaction after
//! every object is uploaded, so a reader never sees a half-published version. `POST
//! /v1/projects` registers git and tarball sources for the indexer's scheduled pass
//! ([`register`]).

mod backend;
mod register;
mod request;

pub use backend::{HttpClient, HttpResponse, PublishedProjects};
pub use request::{AwsConfig, SignedRequest};

use std::sync::Arc;

use crate::hooks::Webhooks;

/// The "S3 + DynamoDB" store as both hosts serve it (`ctxgate serve --store` and the Worker with
/// `CTXGATE_STORE`): what the batch indexer published, read through `client`, and the same as
/// the push webhooks when a push can start indexing (`config` names the indexer function).
pub fn published_store<C: HttpClient>(
    client: C,
    config: AwsConfig,
) -> (Arc<PublishedProjects<C>>, Option<Arc<dyn Webhooks>>) {
    let indexes = config.indexer_function.is_some();
    let projects = Arc::new(PublishedProjects::new(client, config));
    let webhooks = indexes.then(|| projects.clone() as Arc<dyn Webhooks>);
    (projects, webhooks)
}
