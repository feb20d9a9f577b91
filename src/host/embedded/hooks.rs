//! Push webhooks on the data directory: the webhook and delivery items in SQLite beside the
//! project's others, and re-indexing as a job on this server.
//!
//! A queued job runs what `POST /v1/projects/{id}/reindex` runs, on a blocking thread, after
//! the webhook has been answered. Pushes that arrive while a project's job runs ask for one
//! more run, not one each: a burst of pushes costs at most two indexings, and the last one sees
//! the last push. Only the pushes that start a run or ask for the one more count against the
//! org's `index_jobs_per_hour`; those merged into a run already asked for cost nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctxgate_core::item_key::ItemKey;
use ctxgate_edge::backend::{BackendError, JobGate, ProjectInfo};
use ctxgate_edge::hooks::{HookRecord, Webhooks};
use ctxgate_indexer::source::SourceSpec;

use super::{EmbeddedBackend, decode, encode, shown_target, storage};

/// The projects with a job running, and whether another run was asked for meanwhile.
#[derive(Default)]
pub(super) struct JobQueue {
    running: Mutex<HashMap<String, bool>>,
}

impl JobQueue {
    /// Whether a job submitted for `project_id` now would be merged into a run already asked
    /// for (a job of the project runs, and another run is queued after it).
    fn would_merge(&self, project_id: &str) -> Result<bool, BackendError> {
        let running = self.running.lock().map_err(|_| poisoned())?;
        Ok(running.get(project_id).copied().unwrap_or(false))
    }

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
        jobs: &dyn JobGate,
    ) -> Result<(), BackendError> {
        // Refused now (a `file://` source on a server without local paths), not in the job.
        let spec = self.admit(source)?;
        // Merged into the run already queued: nothing new is done, so nothing is counted. Two
        // pushes racing past this look may both be counted, never neither.
        if self.jobs.would_merge(&project.id)? {
            return Ok(());
        }
        jobs.admit().await?;
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn project() -> ProjectInfo {
        ProjectInfo {
            id: "p1".into(),
            name: "web".into(),
            org: "acme".into(),
            source: "https://example.com/r.git".into(),
            current_version: None,
        }
    }

    /// A push that starts a run, or asks for one more, is a job; one more push while that run
    /// is already asked for is merged into it.
    #[test]
    fn only_pushes_that_add_a_run_are_jobs() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let queue = Arc::new(JobQueue::default());
            let (release, gate) = mpsc::channel::<()>();
            let (ran_tx, ran) = mpsc::channel::<()>();
            let gate = Arc::new(Mutex::new(gate));
            let ran_tx = Arc::new(Mutex::new(ran_tx));
            let job = move || {
                let _ = ran_tx.lock().unwrap().send(());
                let _ = gate.lock().unwrap().recv();
                Err(BackendError::Storage("test job".into()))
            };
            let p = project();
            assert!(
                !queue.would_merge(&p.id).unwrap(),
                "nothing runs: a push starts a job"
            );
            queue.submit(&p, job.clone()).unwrap();
            assert!(
                !queue.would_merge(&p.id).unwrap(),
                "a run, none queued after it: a push queues one"
            );
            queue.submit(&p, job.clone()).unwrap();
            assert!(queue.would_merge(&p.id).unwrap(), "a run is queued: merged");
            assert!(
                !queue.would_merge("p2").unwrap(),
                "another project's pushes are its own"
            );
            // Both runs end; then a push starts a job again.
            release.send(()).unwrap();
            release.send(()).unwrap();
            for _ in 0..200 {
                if queue.running.lock().unwrap().is_empty() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            assert!(queue.running.lock().unwrap().is_empty());
            assert_eq!(ran.try_iter().count(), 2, "two runs for three pushes");
            assert!(!queue.would_merge(&p.id).unwrap());
        });
    }
}
