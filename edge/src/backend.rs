//! The storage and quota interfaces every host implements: [`Accounts`] (orgs, keys, quotas,
//! audit) and [`Projects`] (projects and their index objects), apart, so a host can take each
//! from a different place (the Worker over AWS: accounts in Durable Objects, projects from
//! what the Lambda published) without a wrapper that forwards one half by hand.
//!
//! The router asks for records and objects by name; it never knows whether they come from the
//! embedded data directory, Cloudflare bindings or S3 and DynamoDB. Quota arithmetic is the
//! core's ([`ctxgate_core::quota::Ledger`]); a backend's only duty there is to apply it
//! atomically per organisation.

use std::sync::Arc;

use async_trait::async_trait;
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::quota::{Lease, Ledger, Limits, Refusal};
use serde::{Deserialize, Serialize};

/// What a backend can fail with.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The record already exists (creating an org or project twice).
    #[error("{0} already exists")]
    Conflict(String),
    /// A named record does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The request cannot be served by this host (e.g. a local path on a public server).
    #[error("{0}")]
    Refused(String),
    /// The caller's input is wrong (a bad source path, an empty repository).
    #[error("{0}")]
    Invalid(String),
    /// Fetching a project's source failed.
    #[error("{message}")]
    Source {
        /// Machine-readable code (`source_not_allowed`, `source_unreachable`, ...).
        code: ErrorCode,
        /// Whose fault it is, which decides the status.
        fault: SourceFault,
        /// What happened.
        message: String,
    },
    /// Stored data is damaged.
    #[error("stored data is damaged: {0}")]
    Corrupt(String),
    /// The published version was written in an index format this build does not read.
    #[error(
        "{0}; re-index the project (POST /v1/projects/{{id}}/reindex, `ctxgate index`) or publish it again with this version of ctxgate"
    )]
    Outdated(String),
    /// The store failed.
    #[error("storage failed: {0}")]
    Storage(String),
    /// This host's store cannot do what was asked (listing or deleting objects of a store the
    /// indexer owns).
    #[error("{0}")]
    Unsupported(String),
    /// The org's index-job limit refused a job before it started (answered as every other
    /// quota refusal: 429 `quota_exceeded`).
    #[error(
        "the organisation's {} limit ({}) is reached; retry in {} s",
        .0.limit.name(),
        .0.allowed,
        .0.retry_after_s
    )]
    QuotaExceeded(Refusal),
    /// The embedding model or API failed.
    #[error("{message}")]
    Embedding {
        /// Machine-readable code (`embed_unauthorized`, `embed_unreachable`, ...).
        code: ErrorCode,
        /// What happened.
        message: String,
    },
}

/// Whose fault a failed source fetch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFault {
    /// This server's policy forbids the source (a private address, plain HTTP, a local path).
    Refused,
    /// The caller's source is wrong (no such revision, not an archive, too large).
    Invalid,
    /// The remote failed or could not be reached.
    Upstream,
}

/// An organisation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OrgRecord {
    /// Unique name, also its id.
    pub name: String,
    /// Its limits.
    pub limits: Limits,
    /// Models it may use (ids); empty is all.
    #[serde(default)]
    pub allowed_models: Vec<String>,
    /// Whether its requests rank with dense retrieval: each request's query is embedded through
    /// the host's embeddings provider (a call, and its latency and price, per request). Off
    /// unless an admin turns it on; records written before the setting existed read as off.
    #[serde(default)]
    pub dense: bool,
    /// Created, milliseconds since the epoch.
    pub created_ms: u64,
}

/// An API key, stored under its sha256; the key itself is never stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// The owning organisation.
    pub org: String,
    /// The first characters of the key, to tell keys apart in listings.
    pub prefix: String,
    /// Created, milliseconds since the epoch.
    pub created_ms: u64,
}

/// A project as the API shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProjectInfo {
    /// Stable id.
    pub id: String,
    /// Name, unique within the org.
    pub name: String,
    /// Owning organisation.
    pub org: String,
    /// Where it was indexed from.
    pub source: String,
    /// The published version readers see, if any.
    pub current_version: Option<u64>,
}

pub use ctxgate_core::source::SourceSpec;

/// A job record as the indexer stores it (the JSON of `ctxgate_indexer::jobs::JobRecord`, the
/// same in the data directory and in DynamoDB), read for the fields the API shows.
#[derive(Clone, Debug, Deserialize)]
pub struct StoredJob {
    /// The owning organisation.
    pub org: String,
    /// The project id.
    pub project: String,
    /// What the API shows of it.
    #[serde(flatten)]
    pub summary: JobSummary,
}

impl StoredJob {
    /// The newest of `records` (JSON) that is `project`'s; records that do not parse are
    /// skipped (a newer indexer may write states this build does not know).
    pub fn newest_of<'a>(
        records: impl IntoIterator<Item = &'a str>,
        project: &ProjectInfo,
    ) -> Option<JobSummary> {
        records
            .into_iter()
            .filter_map(|r| serde_json::from_str::<StoredJob>(r).ok())
            .filter(|j| j.org == project.org && j.project == project.id)
            .map(|j| j.summary)
            .max_by(|a, b| a.started_ms.cmp(&b.started_ms).then(a.id.cmp(&b.id)))
    }
}

/// Where an indexing job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobPhase {
    /// Waiting for an indexer to take it.
    Queued,
    /// Being fetched or indexed.
    Running,
    /// Done: a new version was published.
    Published,
    /// Done: nothing had changed, the current version stands.
    UpToDate,
    /// Stopped with an error (`error_code`); the previous version stands.
    Failed,
}

/// A project's indexing job as the API shows it (never a source's credential).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobSummary {
    /// Job id.
    pub id: String,
    /// Where it is.
    pub state: JobPhase,
    /// What started it (`request`, `schedule`, ...).
    pub trigger: String,
    /// The step it is in or stopped at (`fetch`, `index`, `publish`, `done`).
    pub stage: String,
    /// The version it published or found current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Machine-readable error code, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Started, milliseconds since the epoch.
    pub started_ms: u64,
    /// Last update, milliseconds since the epoch.
    pub updated_ms: u64,
}

/// One call, as audited: ids and counts, never content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditRecord {
    /// Request id.
    pub id: String,
    /// When, milliseconds since the epoch.
    pub at_ms: u64,
    /// Endpoint.
    pub endpoint: String,
    /// Project id, when one was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The client's session id, when it gave one (sessions are read back from here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Which of the org's keys called ([`crate::extract::auth::key_id`]): a session belongs to
    /// one key, so two clients of an org that pick the same session id do not share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Chunk ids delivered.
    #[serde(default)]
    pub chunks: Vec<String>,
    /// Those of `chunks` sent only as an outline, a signature or a signpost (a session still
    /// lacks their bodies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signature_only: Vec<String>,
    /// The budget the call was held to (conversation included), for assembling calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u32>,
    /// The model named or routed to, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The assembly profile (`plan`, `expand`, `repair`), for assembling calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The intent detected in the query (`bug_fix`, `explain`, ...): a label, never the query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Tokens reserved.
    pub tokens_reserved: u64,
    /// Tokens charged.
    pub tokens_used: u64,
    /// HTTP status of the answer.
    pub status: u16,
}

/// What [`Admission::reserve_for_project`] found: the project, and the reservation for a call on
/// its published version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "found", rename_all = "snake_case")]
pub enum ProjectAdmission {
    /// The org has no project by that id or name; nothing was reserved.
    NotFound,
    /// The project has no published version yet; nothing was reserved.
    NotIndexed {
        /// The project.
        project: ProjectInfo,
    },
    /// The project's current version, and the reservation (or the limit that refused it).
    Reserved {
        /// The project.
        project: ProjectInfo,
        /// Its current version.
        version: u64,
        /// The lease, or why the ledger refused one.
        outcome: Result<Lease, Refusal>,
    },
}

/// The project of `org` whose id or name is `key`: ids first, so a name can never shadow an id.
pub fn pick_project(projects: Vec<ProjectInfo>, key: &str) -> Option<ProjectInfo> {
    find_project(&projects, key).cloned()
}

/// [`pick_project`] over borrowed projects.
pub fn find_project<'a>(projects: &'a [ProjectInfo], key: &str) -> Option<&'a ProjectInfo> {
    let mut by_name = None;
    for p in projects {
        if p.id == key {
            return Some(p);
        }
        if by_name.is_none() && p.name == key {
            by_name = Some(p);
        }
    }
    by_name
}

/// `len` bytes of `bytes` from `offset`, fewer where it ends first: what a range read of a
/// whole object yields.
pub fn range_of(bytes: &[u8], offset: u64, len: u64) -> &[u8] {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let end = start
        .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
        .min(bytes.len());
    &bytes[start..end]
}

/// Organisations, keys, quotas and audit: what the edge keeps itself (in the Worker, Durable
/// Objects, so an atomic quota reservation costs no round trip to a region).
#[async_trait]
pub trait Accounts: Send + Sync + 'static {
    /// Milliseconds since the epoch (hosts differ: the system clock, `Date.now()`).
    fn now_ms(&self) -> u64;
    /// `n` random bytes from the host's CSPRNG.
    fn random_bytes(&self, n: usize) -> Vec<u8>;

    /// Creates an organisation; `Conflict` if it exists.
    async fn create_org(&self, org: &OrgRecord) -> Result<(), BackendError>;
    /// An organisation by name.
    async fn org(&self, name: &str) -> Result<Option<OrgRecord>, BackendError>;
    /// Replaces an organisation's limits and allowed models.
    async fn update_org(&self, org: &OrgRecord) -> Result<(), BackendError>;
    /// Stores a key's record under its hash.
    async fn put_key(&self, key_hash: &str, key: &KeyRecord) -> Result<(), BackendError>;
    /// The record of the key with this hash.
    async fn key(&self, key_hash: &str) -> Result<Option<KeyRecord>, BackendError>;

    /// Applies [`Ledger::reserve`] atomically to `org`'s ledger.
    async fn reserve(
        &self,
        org: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<Result<Lease, Refusal>, BackendError>;
    /// Applies [`Ledger::settle`] atomically to `org`'s ledger.
    async fn settle(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
    ) -> Result<(), BackendError>;
    /// Applies [`Ledger::admit_index_job`] atomically to `org`'s ledger.
    async fn admit_index_job(
        &self,
        org: &str,
        limits: &Limits,
        now_ms: u64,
    ) -> Result<Result<(), Refusal>, BackendError>;
    /// `org`'s ledger as stored.
    async fn ledger(&self, org: &str) -> Result<Ledger, BackendError>;
    /// Appends one audit record for `org`.
    async fn append_audit(&self, org: &str, record: &AuditRecord) -> Result<(), BackendError>;
    /// Settles a call's lease and appends its audit record: one round trip on hosts where each
    /// costs one (the Worker's Durable Object), two calls elsewhere. Both are attempted; the
    /// first error is returned.
    async fn settle_and_audit(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> Result<(), BackendError> {
        let settled = self.settle(org, lease_id, used, now_ms).await;
        let audited = self.append_audit(org, record).await;
        settled.and(audited)
    }
    /// Books a call that reserved nothing (its org has no limits; [`Ledger::book`], under the
    /// record's id) and appends its audit record: one round trip where
    /// [`Self::settle_and_audit`] is one. Elsewhere a reservation settled at once, which
    /// counts the same.
    async fn book_and_audit(
        &self,
        org: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> Result<(), BackendError> {
        let reserved = self
            .reserve(org, &Limits::default(), &record.id, used, now_ms)
            .await;
        let settled = self
            .settle_and_audit(org, &record.id, used, now_ms, record)
            .await;
        reserved.map(|_| ()).and(settled)
    }
    /// `org`'s newest audit records, newest first.
    async fn audit(&self, org: &str, limit: usize) -> Result<Vec<AuditRecord>, BackendError>;
}

/// Where a host counts an index job at the moment it starts or queues one (after its own checks
/// of the request, before any work), so that a refused request or a job merged into one
/// already queued costs nothing.
#[async_trait]
pub trait JobGate: Send + Sync {
    /// Counts one job; [`BackendError::QuotaExceeded`] when the org's limit refuses it, and
    /// then the job must not start.
    async fn admit(&self) -> Result<(), BackendError>;
}

/// Admits every job without counting it: the operator's own CLI on its own data directory
/// (`ctxgate project add|reindex`), which no org's quota governs.
pub struct Unmetered;

#[async_trait]
impl JobGate for Unmetered {
    async fn admit(&self) -> Result<(), BackendError> {
        Ok(())
    }
}

/// Projects and the objects of their published indexes: what an indexer writes (the data
/// directory, R2, or S3 and DynamoDB read through [`crate::aws`]).
#[async_trait]
pub trait Projects: Send + Sync + 'static {
    /// `org`'s projects.
    async fn projects(&self, org: &str) -> Result<Vec<ProjectInfo>, BackendError>;
    /// Registers a project for `org` and indexes it (hosts that cannot index refuse); the job
    /// is counted through `jobs` once the request is found acceptable.
    async fn create_project(
        &self,
        org: &str,
        name: &str,
        source: &SourceSpec,
        jobs: &dyn JobGate,
    ) -> Result<ProjectInfo, BackendError>;
    /// Indexes `project` again from where it was registered, publishing a new version when
    /// its files changed, while readers keep the current one. Hosts that index answer with
    /// the project as it is now; hosts that queue the work answer at once (the version moves
    /// later); hosts that cannot index refuse. The job is counted through `jobs`.
    async fn reindex_project(
        &self,
        project: &ProjectInfo,
        jobs: &dyn JobGate,
    ) -> Result<ProjectInfo, BackendError> {
        let _ = (project, jobs);
        Err(BackendError::Refused(
            "this host does not index sources: publish a new version from an indexer".into(),
        ))
    }
    /// The newest indexing job of `project`, where this host keeps job records (hosts that
    /// never index answer `None`).
    async fn last_job(&self, project: &ProjectInfo) -> Result<Option<JobSummary>, BackendError> {
        let _ = project;
        Ok(None)
    }
    /// Records a project whose index was published by an indexer elsewhere (the batch side
    /// writes objects; this makes them known to the API), replacing any record of that id.
    async fn put_project(&self, project: &ProjectInfo) -> Result<(), BackendError>;
    /// An object of a published index (an S3-style key under `org/{org}/`).
    async fn object(&self, key: &str) -> Result<Vec<u8>, BackendError>;
    /// `len` bytes of the object `key` from `offset`: chunk texts are read this way, only the
    /// pieces a query chose. An object shorter than the range yields fewer bytes (the caller
    /// checks). Hosts whose store reads byte ranges override this; the default reads the whole
    /// object.
    async fn object_range(
        &self,
        key: &str,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, BackendError> {
        Ok(range_of(&self.object(key).await?, offset, len).to_vec())
    }
    /// Stores an object an indexer published elsewhere (objects are immutable once a manifest
    /// names them; writing the same key again replaces it with the same bytes).
    async fn put_object(&self, key: &str, bytes: Vec<u8>) -> Result<(), BackendError>;
    /// Whether the object `key` is stored: a publisher skips content-addressed segments an
    /// earlier version already uploaded. Hosts that can ask without reading it override this.
    async fn has_object(&self, key: &str) -> Result<bool, BackendError> {
        match self.object(key).await {
            Ok(_) => Ok(true),
            Err(BackendError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Every object whose key starts with `prefix`, for garbage collection. Hosts that do not
    /// own their store (the Worker over the indexer's S3) refuse.
    async fn list_objects(
        &self,
        prefix: &str,
    ) -> Result<Vec<ctxgate_core::index::gc::StoredObject>, BackendError> {
        Err(BackendError::Unsupported(format!(
            "this host cannot list the objects under `{prefix}`: collect its store where it is written (`ctxgate gc --store`)"
        )))
    }
    /// Deletes object `key` (one already gone is not an error), for garbage collection.
    async fn delete_object(&self, key: &str) -> Result<(), BackendError> {
        Err(BackendError::Unsupported(format!(
            "this host cannot delete `{key}`: collect its store where it is written (`ctxgate gc --store`)"
        )))
    }
}

/// Finding a project and reserving quota for a call on it, the first step of every metered
/// call.
#[async_trait]
pub trait Admission: Send + Sync + 'static {
    /// Finds `org`'s project `key` (id or name) and, when it has a published version, reserves
    /// `tokens` for a call on it ([`Accounts::reserve`]).
    async fn reserve_for_project(
        &self,
        org: &str,
        key: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<ProjectAdmission, BackendError>;
}

/// Admission in two calls, the project list then the ledger: for hosts whose projects and
/// accounts live apart. A host that holds both in one place (the Worker's Durable Object without
/// AWS) implements [`Admission`] itself in one round trip.
pub struct TwoCalls {
    /// Where the ledger is.
    pub accounts: Arc<dyn Accounts>,
    /// Where the projects are.
    pub projects: Arc<dyn Projects>,
}

#[async_trait]
impl Admission for TwoCalls {
    async fn reserve_for_project(
        &self,
        org: &str,
        key: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<ProjectAdmission, BackendError> {
        let Some(project) = pick_project(self.projects.projects(org).await?, key) else {
            return Ok(ProjectAdmission::NotFound);
        };
        let Some(version) = project.current_version else {
            return Ok(ProjectAdmission::NotIndexed { project });
        };
        let outcome = self
            .accounts
            .reserve(org, limits, lease_id, tokens, now_ms)
            .await?;
        Ok(ProjectAdmission::Reserved {
            project,
            version,
            outcome,
        })
    }
}
