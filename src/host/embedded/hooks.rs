//! Push webhooks on the data directory: the webhook and delivery items in SQLite beside the
//! project's others, and re-indexing as a job on this server.
//!
//! A queued job runs what `POST /v1/projects/{id}/reindex` runs, on a blocking thread, after
//! the webhook has been answered. Pushes that arrive while a project's job runs ask for one
//! more run, not one each: a burst of pushes costs at most two indexings, and the last one sees
//! the last push.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctxgate_core::item_key::ItemKey;
use ctxgate_edge::backend::{BackendError, ProjectInfo};
use ctxgate_edge::hooks::{HookRecord, Webhooks};
use ctxgate_indexer::source::SourceSpec;

use super::{EmbeddedBackend, decode, encode, shown_target, storage};

/// The projects with a job running, and whether another run was asked for meanwhile.
#[derive(Default)]
pub(super) struct JobQueue {
    running: Mutex<HashMap<String, bool>>,
}

impl JobQueue {
    /// Runs `job` for `project` on a blocking thread, unless a job of that project is running:
    /// then that job runs once more when it ends.
    fn submit(
        self: &Arc<Self>,
        project: &ProjectInfo,
        job: impl Fn() -> Result<ProjectInfo, BackendError> + Send + Sync + 'static,
    ) -> Result<(), BackendError> {
        {
            let mut running = self.running.lock().map_err(|_| poisoned())?;
            if let Some(again) = running.get_mut(&project.id) {
                *again = true;
                return Ok(());
            }
            running.insert(project.id.clone(), false);
        }
        let (queue, id, job) = (self.clone(), project.id.clone(), Arc::new(job));
        tokio::spawn(async move {
            loop {
                let run = job.clone();
                match tokio::task::spawn_blocking(move || run()).await {
                    Ok(Ok(p)) => tracing::info!(
                        project = %p.id, version = ?p.current_version, "push re-index done"
                    ),
                    Ok(Err(e)) => tracing::warn!(project = %id, "push re-index failed: {e}"),
                    Err(e) => tracing::warn!(project = %id, "push re-index task failed: {e}"),
                }
                let Ok(mut running) = queue.running.lock() else {
                    return;
                };
                match running.get_mut(&id) {
                    Some(again) if *again => *again = false,
                    _ => {
                        running.remove(&id);
                        return;
                    }
                }
            }
        });
        Ok(())
    }
}

fn poisoned() -> BackendError {
    BackendError::Storage("job queue lock poisoned".into())
}

/// What a delivery item holds: when it came (the mark is its key).
#[derive(serde::Serialize)]
struct Seen {
    at_ms: u64,
}

#[async_trait]
impl Webhooks for EmbeddedBackend {
    async fn hook(&self, project: &str) -> Result<Option<HookRecord>, BackendError> {
        let key = ItemKey::webhook(project);
        self.with(|s| s.item(&key.pk, &key.sk)?.map(|d| decode(&d)).transpose())
    }

    async fn put_hook(&self, hook: &HookRecord) -> Result<(), BackendError> {
        let data = encode(hook).map_err(storage)?;
        let key = ItemKey::webhook(&hook.project);
        self.with(|s| s.put_item(&key.pk, &key.sk, &data))
    }

    async fn delete_hook(&self, project: &str) -> Result<(), BackendError> {
        let key = ItemKey::webhook(project);
        self.with(|s| s.delete_item(&key.pk, &key.sk))
    }

    async fn mark_delivery(
        &self,
        project: &str,
        mark: &str,
        at_ms: u64,
    ) -> Result<bool, BackendError> {
        let data = encode(&Seen { at_ms }).map_err(storage)?;
        let key = ItemKey::delivery(project, mark);
        self.with(|s| s.insert_item(&key.pk, &key.sk, &data))
    }

    async fn forget_delivery(&self, project: &str, mark: &str) -> Result<(), BackendError> {
        let key = ItemKey::delivery(project, mark);
        self.with(|s| s.delete_item(&key.pk, &key.sk))
    }

    async fn registered_source(
        &self,
        project: &ProjectInfo,
    ) -> Result<Option<SourceSpec>, BackendError> {
        match EmbeddedBackend::registered_source(self, project) {
            Ok(source) => Ok(Some(source)),
            Err(BackendError::Refused(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn queue_reindex(
        &self,
        project: &ProjectInfo,
        source: &SourceSpec,
    ) -> Result<(), BackendError> {
        // Refused now (a `file://` source on a server without local paths), not in the job.
        let spec = self.admit(source)?;
        let index = self.indexing(shown_target(&project.org, &project.name, source), spec);
        // Timed into the metrics as the request-started jobs are, with trigger `push`.
        let metrics = self.metrics.clone();
        let job = move || {
            let started = std::time::Instant::now();
            let result = index();
            if let Some(m) = &metrics {
                let outcome = if result.is_ok() { "ok" } else { "failed" };
                m.index_job("push", outcome, started.elapsed().as_secs_f64());
            }
            result
        };
        self.jobs.submit(project, job)
    }
}
