//! The native backend: the foundation's data directory (objects on disk, items in SQLite).
//!
//! SQLite write transactions make each ledger update atomic across threads and processes, so
//! `ctxgate serve` and the admin CLI can share one data directory safely.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use ctxgate_core::item_key::{ItemKey, ItemRange};
pub use ctxgate_core::local_roots::LocalRoots;
use ctxgate_core::quota::{Lease, Ledger, Limits, Refusal};
use ctxgate_indexer::IndexerError;
use ctxgate_indexer::embed::Embedder;
use ctxgate_indexer::jobs;
use ctxgate_indexer::pipeline::{IndexOptions, ProjectTarget};
pub use ctxgate_indexer::source::NetworkPolicy;
use ctxgate_indexer::source::{SourceError, SourceSpec, local};
use ctxgate_indexer::store::{ProjectItem, Store};
use serde::Serialize;
use serde::de::DeserializeOwned;

use ctxgate_edge::backend::{
    Accounts, AuditRecord, BackendError, JobGate, JobSummary, KeyRecord, OrgRecord, ProjectInfo,
    Projects, SourceFault, StoredJob,
};
use ctxgate_edge::metrics::Metrics;

pub(crate) mod dense;
mod hooks;
mod runner;

/// Which sources `POST /v1/projects` may index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceAccess {
    /// Which folders (and `file://` git repositories) on this machine.
    pub local: LocalAccess,
    /// Which hosts git and tarball URLs may reach.
    pub network: NetworkPolicy,
}

/// Which paths on this machine a source may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalAccess {
    /// None (`403 source_refused`): a server without `--local-root`, and `ctxgate mcp`'s.
    Refused,
    /// Those inside the operator's roots (`ctxgate serve --local-root`); any other is
    /// `403 source_not_allowed`, whether or not it exists.
    Roots(LocalRoots),
    /// Any: the admin CLI on the operator's own machine.
    Anywhere,
}

impl SourceAccess {
    /// Everything: the admin CLI on its own machine.
    pub const TRUSTED: Self = Self {
        local: LocalAccess::Anywhere,
        network: NetworkPolicy::Open,
    };
}

/// A data directory as the API's backend.
pub struct EmbeddedBackend {
    store: Mutex<Store>,
    root: PathBuf,
    access: SourceAccess,
    index: IndexOptions,
    dense: Option<dense::Dense>,
    /// Where its indexing jobs' durations are counted (`GET /metrics`), when serving.
    metrics: Option<std::sync::Arc<Metrics>>,
    jobs: std::sync::Arc<hooks::JobQueue>,
}

impl EmbeddedBackend {
    /// Opens the data directory at `root`; `access` says which sources `POST /v1/projects`
    /// may index.
    pub fn open(root: &std::path::Path, access: SourceAccess) -> Result<Self, IndexerError> {
        let store = Store::open(root)?;
        Ok(Self {
            root: store.root().to_path_buf(),
            store: Mutex::new(store),
            access,
            index: IndexOptions::default(),
            dense: None,
            metrics: None,
            jobs: std::sync::Arc::default(),
        })
    }

    /// The same backend, counting its indexing jobs into `metrics`.
    pub fn with_metrics(mut self, metrics: std::sync::Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Turns dense retrieval on with `embedder` (loaded by the caller: the local model takes
    /// a moment, and a server should fail at start-up, not on its first request).
    pub fn with_dense(mut self, embedder: std::sync::Arc<dyn Embedder>) -> Self {
        self.dense = Some(dense::Dense {
            embedder,
            tables: Mutex::new(Vec::new()),
        });
        self
    }

    /// The indexer's form of `source`, if this server may index it: a folder or a `file://`
    /// git URL reads this machine's disk, so it is fetched only under the operator's roots, by
    /// its canonical path (a path that cannot name a file is refused first, on its text alone).
    fn admit(&self, source: &SourceSpec) -> Result<SourceSpec, BackendError> {
        if source.is_remote() {
            return Ok(source.clone());
        }
        local::check_form(source).map_err(source_error)?;
        match &self.access.local {
            LocalAccess::Refused => Err(BackendError::Refused(
                "this server does not index local paths (its operator names the folders it may \
                 read with `ctxgate serve --local-root DIR`)"
                    .into(),
            )),
            LocalAccess::Roots(roots) => local::admit(source, roots).map_err(source_error),
            LocalAccess::Anywhere => Ok(source.clone()),
        }
    }

    /// Where `project`'s files come from. Projects registered before sources were remembered
    /// fall back to their shown source when it is a folder on this machine.
    fn registered_source(&self, project: &ProjectInfo) -> Result<SourceSpec, BackendError> {
        let key = ItemKey::source(&project.id);
        if let Some(data) = self.with(|s| s.item(&key.pk, &key.sk))? {
            let r: RegisteredSource = decode(&data).map_err(storage)?;
            return Ok(r.source);
        }
        let path = std::path::Path::new(&project.source);
        if path.is_absolute() && path.is_dir() {
            return Ok(SourceSpec::Local {
                path: project.source.clone(),
            });
        }
        Err(BackendError::Refused(format!(
            "project `{}` was not registered through this server, so its source is unknown here \
             (index it again with `ctxgate index` or the indexer that published it)",
            project.name
        )))
    }

    /// Every registered project whose files are a folder on this machine that this server may
    /// read (under its roots), with that folder's real path: what `ctxgate serve --watch`
    /// watches.
    pub fn local_projects(&self) -> Result<Vec<(ProjectInfo, PathBuf)>, BackendError> {
        let range = ItemRange::sources();
        let registered =
            self.with(|s| s.items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX))?;
        let mut out = Vec::new();
        for data in registered {
            let r: RegisteredSource = decode(&data).map_err(storage)?;
            if !matches!(r.source, SourceSpec::Local { .. }) {
                continue;
            }
            // A folder outside the roots (registered by the operator's CLI, or under a root
            // this server no longer has) is not watched: its re-index would be refused.
            let Ok(SourceSpec::Local { path }) = self.admit(&r.source) else {
                continue;
            };
            if let Some(p) = self.with(|s| s.project(&r.org, &r.id))? {
                out.push((info(p), PathBuf::from(path)));
            }
        }
        Ok(out)
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, IndexerError>,
    ) -> Result<T, BackendError> {
        let store = self
            .store
            .lock()
            .map_err(|_| BackendError::Storage("store lock poisoned".into()))?;
        f(&store).map_err(storage)
    }

    /// `change` applied to `org`'s ledger (a new text, or `None` to leave it) and `record`
    /// appended, in one SQLite transaction.
    fn ledger_and_audit(
        &self,
        org: &str,
        record: &AuditRecord,
        change: impl FnOnce(Option<String>) -> Result<Option<String>, IndexerError>,
    ) -> Result<(), BackendError> {
        let data = encode(record).map_err(storage)?;
        let key = ItemKey::ledger(org);
        let audit = ItemKey::audit(org, record.at_ms, &record.id);
        self.with(|s| {
            s.update_item_and_put(
                &key.pk,
                &key.sk,
                |old| Ok((change(old)?, ())),
                Some((&audit.pk, &audit.sk, &data)),
            )
        })
    }
}

/// A failed fetch, with the indexer's code and whose fault it is.
fn source_error(e: SourceError) -> BackendError {
    let code = ctxgate_indexer::error::source_code(&e);
    let fault = match &e {
        SourceError::NotAllowed { .. } => SourceFault::Refused,
        SourceError::Io { .. } | SourceError::CredentialStore { .. } => {
            return BackendError::Storage(e.to_string());
        }
        e if e.is_user_error() => SourceFault::Invalid,
        _ => SourceFault::Upstream,
    };
    BackendError::Source {
        code,
        fault,
        message: e.to_string(),
    }
}

fn storage(e: IndexerError) -> BackendError {
    match e {
        IndexerError::Corrupt(m) => BackendError::Corrupt(m),
        e if e.is_user_error() => BackendError::Invalid(e.to_string()),
        e => BackendError::Storage(e.to_string()),
    }
}

fn decode<T: DeserializeOwned>(data: &str) -> Result<T, IndexerError> {
    serde_json::from_str(data).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

fn encode<T: Serialize>(v: &T) -> Result<String, IndexerError> {
    serde_json::to_string(v).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

/// The ledger stored as `old` after `change`, or `None` when `change` changed nothing (a lease
/// settled already, or lapsed): nothing to write.
fn changed(
    old: Option<String>,
    change: impl FnOnce(&mut Ledger) -> bool,
) -> Result<Option<String>, IndexerError> {
    let mut ledger: Ledger = old.map(|d| decode(&d)).transpose()?.unwrap_or_default();
    if change(&mut ledger) {
        Ok(Some(encode(&ledger)?))
    } else {
        Ok(None)
    }
}

/// A project's registration as this server remembers it.
#[derive(Serialize, serde::Deserialize)]
struct RegisteredSource {
    org: String,
    id: String,
    name: String,
    source: SourceSpec,
}

/// `org`'s project `name` indexed from `source`: a URL shows as the caller gave it (with a
/// pinned rev), not as the admitted form fetched; a folder shows as the folder indexed.
fn shown_target(org: &str, name: &str, source: &SourceSpec) -> ProjectTarget {
    let mut target = ProjectTarget::named(org, name);
    if !matches!(source, SourceSpec::Local { .. }) {
        target.source = Some(source.describe());
    }
    target
}

/// Milliseconds since the epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn info(p: ProjectItem) -> ProjectInfo {
    ProjectInfo {
        id: p.id,
        name: p.name,
        org: p.org,
        source: p.source,
        current_version: p.current_version,
    }
}

#[async_trait]
impl Accounts for EmbeddedBackend {
    fn now_ms(&self) -> u64 {
        now_ms()
    }

    fn random_bytes(&self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        // The OS generator does not fail on the platforms ctxgate runs on; if it ever did, the
        // zeroed buffer would make keys guessable, so fail loudly instead.
        if let Err(e) = getrandom::fill(&mut buf) {
            panic!("the operating system's random generator failed: {e}");
        }
        buf
    }

    async fn create_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        let data = encode(org).map_err(storage)?;
        let key = ItemKey::org(&org.name);
        if self.with(|s| s.insert_item(&key.pk, &key.sk, &data))? {
            Ok(())
        } else {
            Err(BackendError::Conflict(format!(
                "organisation `{}`",
                org.name
            )))
        }
    }

    async fn org(&self, name: &str) -> Result<Option<OrgRecord>, BackendError> {
        self.with(|s| {
            let key = ItemKey::org(name);
            s.item(&key.pk, &key.sk)?.map(|d| decode(&d)).transpose()
        })
    }

    async fn update_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        let data = encode(org).map_err(storage)?;
        let key = ItemKey::org(&org.name);
        self.with(|s| s.put_item(&key.pk, &key.sk, &data))
    }

    async fn put_key(&self, key_hash: &str, key: &KeyRecord) -> Result<(), BackendError> {
        let data = encode(key).map_err(storage)?;
        self.with(|s| {
            let by_hash = ItemKey::api_key(key_hash);
            s.put_item(&by_hash.pk, &by_hash.sk, &data)?;
            // Listed under the org too, by prefix only.
            let listed = ItemKey::listed_key(&key.org, &key.prefix, key_hash);
            s.put_item(&listed.pk, &listed.sk, &data)
        })
    }

    async fn key(&self, key_hash: &str) -> Result<Option<KeyRecord>, BackendError> {
        self.with(|s| {
            let by_hash = ItemKey::api_key(key_hash);
            s.item(&by_hash.pk, &by_hash.sk)?
                .map(|d| decode(&d))
                .transpose()
        })
    }

    async fn reserve(
        &self,
        org: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<Result<Lease, Refusal>, BackendError> {
        let key = ItemKey::ledger(org);
        self.with(|s| {
            s.update_item(&key.pk, &key.sk, |old| {
                let mut ledger: Ledger = old.map(|d| decode(&d)).transpose()?.unwrap_or_default();
                match ledger.reserve(limits, lease_id, tokens, now_ms) {
                    Ok(lease) => Ok((Some(encode(&ledger)?), Ok(lease))),
                    Err(refusal) => Ok((None, Err(refusal))),
                }
            })
        })
    }

    async fn settle(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
    ) -> Result<(), BackendError> {
        let key = ItemKey::ledger(org);
        self.with(|s| {
            s.update_item(&key.pk, &key.sk, |old| {
                Ok((changed(old, |l| l.settle(lease_id, used, now_ms))?, ()))
            })
        })
    }

    /// The settlement and the audit record in one SQLite transaction: a crash between them
    /// cannot book tokens without their record (tests/crash_serve.rs).
    async fn settle_and_audit(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> Result<(), BackendError> {
        self.ledger_and_audit(org, record, |old| {
            changed(old, |l| l.settle(lease_id, used, now_ms))
        })
    }

    /// The booking and the audit record in one SQLite transaction, as a settlement is.
    async fn book_and_audit(
        &self,
        org: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> Result<(), BackendError> {
        self.ledger_and_audit(org, record, |old| {
            changed(old, |l| {
                l.book(&record.id, used, now_ms);
                true
            })
        })
    }

    async fn admit_index_job(
        &self,
        org: &str,
        limits: &Limits,
        now_ms: u64,
    ) -> Result<Result<(), Refusal>, BackendError> {
        let key = ItemKey::ledger(org);
        self.with(|s| {
            s.update_item(&key.pk, &key.sk, |old| {
                let mut ledger: Ledger = old.map(|d| decode(&d)).transpose()?.unwrap_or_default();
                match ledger.admit_index_job(limits, now_ms) {
                    Ok(()) => Ok((Some(encode(&ledger)?), Ok(()))),
                    Err(refusal) => Ok((None, Err(refusal))),
                }
            })
        })
    }

    async fn ledger(&self, org: &str) -> Result<Ledger, BackendError> {
        let key = ItemKey::ledger(org);
        self.with(|s| {
            Ok(s.item(&key.pk, &key.sk)?
                .map(|d| decode(&d))
                .transpose()?
                .unwrap_or_default())
        })
    }

    async fn append_audit(&self, org: &str, record: &AuditRecord) -> Result<(), BackendError> {
        let data = encode(record).map_err(storage)?;
        let key = ItemKey::audit(org, record.at_ms, &record.id);
        self.with(|s| s.put_item(&key.pk, &key.sk, &data))
    }

    async fn audit(&self, org: &str, limit: usize) -> Result<Vec<AuditRecord>, BackendError> {
        let range = ItemRange::audit_of(org);
        self.with(|s| {
            s.items_with_prefix(&range.pk, range.sk_prefix, true, limit)?
                .iter()
                .map(|d| decode(d))
                .collect()
        })
    }
}

#[async_trait]
impl Projects for EmbeddedBackend {
    async fn projects(&self, org: &str) -> Result<Vec<ProjectInfo>, BackendError> {
        Ok(self
            .with(|s| s.projects(org))?
            .into_iter()
            .map(info)
            .collect())
    }

    async fn create_project(
        &self,
        org: &str,
        name: &str,
        source: &SourceSpec,
        jobs: &dyn JobGate,
    ) -> Result<ProjectInfo, BackendError> {
        let spec = self.admit(source)?;
        let target = shown_target(org, name, source);
        if self
            .projects(org)
            .await?
            .iter()
            .any(|p| p.id == target.id && p.current_version.is_some())
        {
            return Err(BackendError::Conflict(format!(
                "project `{name}` (re-index it with `POST /v1/projects/{}/reindex` or \
                 `ctxgate project reindex --org {org} {name}`)",
                target.id
            )));
        }
        let registered = encode(&RegisteredSource {
            org: org.into(),
            id: target.id.clone(),
            name: name.into(),
            source: source.clone(),
        })
        .map_err(storage)?;
        jobs.admit().await?;
        let info = self.index_source("create", target.clone(), spec).await?;
        // Remembered only once indexed, so a failed registration leaves nothing to re-index.
        let key = ItemKey::source(&target.id);
        self.with(|s| s.put_item(&key.pk, &key.sk, &registered))?;
        Ok(info)
    }

    async fn reindex_project(
        &self,
        project: &ProjectInfo,
        jobs: &dyn JobGate,
    ) -> Result<ProjectInfo, BackendError> {
        let source = self.registered_source(project)?;
        let spec = self.admit(&source)?;
        jobs.admit().await?;
        self.index_source(
            "reindex",
            shown_target(&project.org, &project.name, &source),
            spec,
        )
        .await
    }

    async fn last_job(&self, project: &ProjectInfo) -> Result<Option<JobSummary>, BackendError> {
        let jobs = self.with(|s| jobs::list(s, Some(&project.org), usize::MAX))?;
        let records: Vec<String> = jobs
            .iter()
            .filter(|j| j.project == project.id)
            .filter_map(|j| serde_json::to_string(j).ok())
            .collect();
        Ok(StoredJob::newest_of(
            records.iter().map(String::as_str),
            project,
        ))
    }

    async fn put_project(&self, project: &ProjectInfo) -> Result<(), BackendError> {
        let item = ProjectItem {
            id: project.id.clone(),
            org: project.org.clone(),
            name: project.name.clone(),
            source: project.source.clone(),
            current_version: project.current_version,
            updated_at_ns: (self.now_ms() as i64).saturating_mul(1_000_000),
        };
        let data = encode(&item).map_err(storage)?;
        let key = ItemKey::project(&project.org, &project.id);
        self.with(|s| s.put_item(&key.pk, &key.sk, &data))
    }

    async fn object(&self, key: &str) -> Result<Vec<u8>, BackendError> {
        self.with(|s| s.get_object(key))
    }

    async fn object_range(
        &self,
        key: &str,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, BackendError> {
        match self.with(|s| Ok(s.has_object(key)))? {
            true => self.with(|s| s.get_range_upto(key, offset, len as usize)),
            false => Err(BackendError::NotFound(format!("object `{key}`"))),
        }
    }

    async fn put_object(&self, key: &str, bytes: Vec<u8>) -> Result<(), BackendError> {
        self.with(|s| s.put_object(key, &bytes))
    }

    async fn has_object(&self, key: &str) -> Result<bool, BackendError> {
        self.with(|s| Ok(s.has_object(key)))
    }

    async fn list_objects(
        &self,
        prefix: &str,
    ) -> Result<Vec<ctxgate_core::index::gc::StoredObject>, BackendError> {
        self.with(|s| s.list_objects(prefix))
    }

    async fn delete_object(&self, key: &str) -> Result<(), BackendError> {
        self.with(|s| s.delete_object(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgate_indexer::jobs::{JobRecord, JobState, Trigger};

    /// The edge reads the indexer's job records (here and from DynamoDB) as [`StoredJob`]: the
    /// JSON of a [`JobRecord`] must decode, with its state and error code.
    #[test]
    fn the_edge_reads_the_indexers_job_records() {
        let project = ProjectInfo {
            id: "p1".into(),
            name: "web".into(),
            org: "acme".into(),
            source: "https://example.com/r.git".into(),
            current_version: None,
        };
        let mut old = JobRecord::starting("j1", "acme", "p1", "web", Trigger::Schedule, 10);
        old.state = JobState::Published;
        let mut new = JobRecord::starting("j2", "acme", "p1", "web", Trigger::Request, 20);
        new.state = JobState::Failed;
        new.error_code = Some("source_rev_not_found".into());
        let other = JobRecord::starting("j3", "beta", "p1", "web", Trigger::Request, 30);
        let records: Vec<String> = [old, new, other]
            .iter()
            .map(|j| serde_json::to_string(j).unwrap())
            .collect();
        let job = StoredJob::newest_of(records.iter().map(String::as_str), &project).unwrap();
        assert_eq!(job.id, "j2", "the newest of the project's own org");
        assert_eq!(job.state, ctxgate_edge::backend::JobPhase::Failed);
        assert_eq!(job.error_code.as_deref(), Some("source_rev_not_found"));
        assert_eq!(job.trigger, "request");
    }
}
