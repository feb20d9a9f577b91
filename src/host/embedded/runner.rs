//! The job runner: one indexing of a project as a job, from the fetch of its source to the
//! job's record (stage, outcome, counts) and the new version, on a blocking thread with its own
//! store connection. What `POST /v1/projects` and a reindex wait for, and what a queued webhook
//! job runs (`hooks.rs`).

use ctxgate_core::local_roots::LocalPathError;
use ctxgate_edge::backend::{BackendError, ProjectInfo};
use ctxgate_indexer::credentials::{self, DataDirCredentials};
use ctxgate_indexer::error::source_code;
use ctxgate_indexer::jobs::{self, JobRecord, JobState, Trigger};
use ctxgate_indexer::pipeline::{NoProgress, ProjectTarget, fetched_origin, index_project};
use ctxgate_indexer::source::{SourceError, SourceLimits, SourceSpec, fetch};
use ctxgate_indexer::store::Store;

use super::{EmbeddedBackend, LocalAccess, info, now_ms, source_error, storage};

impl EmbeddedBackend {
    /// [`Self::run_index`] as one job started by `trigger` (`create`, `reindex`), timed into
    /// the metrics.
    pub(super) async fn index_source(
        &self,
        trigger: &str,
        target: ProjectTarget,
        spec: SourceSpec,
    ) -> Result<ProjectInfo, BackendError> {
        let started = std::time::Instant::now();
        let result = self.run_index(target, spec).await;
        if let Some(m) = &self.metrics {
            let outcome = if result.is_ok() { "ok" } else { "failed" };
            m.index_job(trigger, outcome, started.elapsed().as_secs_f64());
        }
        result
    }

    /// Fetches `spec` and indexes it as `target`, publishing a new version when anything
    /// changed (unchanged files are recognised by size and time or content hash, so a
    /// re-index of an unchanged folder is a stat walk). Readers keep the current version until
    /// the new manifest is written.
    async fn run_index(
        &self,
        target: ProjectTarget,
        spec: SourceSpec,
    ) -> Result<ProjectInfo, BackendError> {
        // Fetching and indexing take seconds: run them off the async workers.
        tokio::task::spawn_blocking(self.indexing(target, spec))
            .await
            .map_err(|e| BackendError::Storage(format!("indexing task failed: {e}")))?
    }

    /// The work of indexing `spec` as `target`, to run on a blocking thread, on its own store
    /// connection: what a request waits for, or a queued job runs (again, when it is asked for
    /// while it runs). The fetched files live in a temporary folder of the data directory,
    /// deleted when the fetch drops.
    pub(super) fn indexing(
        &self,
        target: ProjectTarget,
        spec: SourceSpec,
    ) -> impl Fn() -> Result<ProjectInfo, BackendError> + Send + Sync + 'static {
        let root = self.root.clone();
        let mut opts = self.index.clone();
        if matches!(spec, SourceSpec::Local { .. }) {
            // A folder that holds the data directory is indexed without it (its secrets among
            // the files); fetched sources are unpacked inside it, so only folders.
            opts.walk
                .exclude
                .push(std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone()));
        }
        let limits = SourceLimits {
            network: self.access.network,
            ..SourceLimits::default()
        };
        let roots = match &self.access.local {
            LocalAccess::Roots(roots) => Some(roots.clone()),
            LocalAccess::Refused | LocalAccess::Anywhere => None,
        };
        move || {
            let work = root.join("tmp");
            std::fs::create_dir_all(&work)
                .map_err(|e| BackendError::Storage(format!("creating {}: {e}", work.display())))?;
            let store = Store::open(&root).map_err(storage)?;
            let mut target = target.clone();
            // The job's record, which the console's projects page shows (state, error code).
            let mut job = JobRecord::starting(
                &new_job_id(),
                &target.org,
                &target.id,
                &target.name,
                Trigger::Request,
                now_ms(),
            );
            let _ = jobs::start(&store, &mut job);
            // The org's own credential, read for this fetch only.
            let fetched = credentials::resolve(&DataDirCredentials::new(&root), &target.org, &spec)
                .map_err(|e| (source_code(&e), source_error(e)))
                .and_then(|credential| {
                    fetch(&spec, credential.as_ref(), &limits, &work)
                        .map_err(|e| (source_code(&e), source_error(e)))
                })
                .and_then(|fetched| match (&roots, &spec) {
                    // The folder as the fetch resolved it again: a link swapped in since the
                    // admission cannot take it outside.
                    (Some(roots), SourceSpec::Local { .. }) if !roots.contains(&fetched.root) => {
                        let e = SourceError::NotAllowed {
                            url: spec.describe(),
                            why: LocalPathError::NotAllowed.to_string(),
                        };
                        Err((source_code(&e), source_error(e)))
                    }
                    _ => Ok(fetched),
                });
            let outcome = fetched.and_then(|fetched| {
                job.revision = fetched.revision.clone();
                job.stage = "index".into();
                fetched.log_warnings(&target.id);
                target.origin = fetched_origin(&spec, fetched.revision.as_deref());
                target.git_dir = fetched.git_dir.clone();
                index_project(&store, &target, &fetched.root, &opts, &NoProgress)
                    .map_err(|e| (e.code(), storage(e)))
            });
            job.updated_ms = now_ms();
            match &outcome {
                Ok(report) => {
                    job.stage = "done".into();
                    job.record(report);
                }
                Err((code, e)) => {
                    job.state = JobState::Failed;
                    job.error_code = Some((*code).to_string());
                    job.error = Some(e.to_string());
                }
            }
            let _ = jobs::save(&store, &job);
            let _ = jobs::prune(&store, &target.org, &target.id, KEPT_JOBS);
            outcome.map_err(|(_, e)| e)?;
            let item = store
                .project(&target.org, &target.id)
                .map_err(storage)?
                .ok_or_else(|| BackendError::Corrupt("project vanished after indexing".into()))?;
            Ok(info(item))
        }
    }
}

/// Jobs kept per project (a watched folder re-indexes on every save).
const KEPT_JOBS: usize = 20;

/// A fresh job id: 16 hex digits from the OS generator (a clock-based one if it ever fails:
/// an id only has to be unique among one project's jobs).
fn new_job_id() -> String {
    let mut buf = [0u8; 8];
    if getrandom::fill(&mut buf).is_err() {
        buf = now_ms().to_le_bytes();
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}
