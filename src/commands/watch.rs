//! `ctxgate serve --watch`: keeps folder projects fresh while the server answers.
//!
//! File events (inotify and its peers, through `notify`) mark the project whose folder they
//! fall in; a project is re-indexed once its folder has been quiet for the debounce interval,
//! so a save that touches ten files, or a `git checkout`, costs one incremental index. Indexing
//! publishes a new version by writing its manifest last, so requests meanwhile are answered
//! from the previous version. Projects registered while the server runs are picked up by a
//! periodic look at the registrations. Each re-index is an index job of the project's org: past
//! its `index_jobs_per_hour` the project waits, still marked, until the hour allows it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::host::embedded::EmbeddedBackend;
use ctxgate_edge::backend::{Accounts, BackendError, ProjectInfo, Projects};
use ctxgate_edge::meter::OrgJobs;
use ctxgate_edge::pointer::PointerCache;
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How often the registrations are read again for projects added while serving.
const REFRESH: Duration = Duration::from_secs(2);

/// A watched project: its folder and the registration it came from.
struct Watched {
    folder: PathBuf,
    project: ProjectInfo,
}

/// Whether a changed path can change an index: the index ignores version-control internals, and
/// the data directory (when it lies inside a folder) changes on every publish.
fn relevant(path: &Path, data_dir: &Path) -> bool {
    !path.starts_with(data_dir) && !path.components().any(|c| c.as_os_str() == ".git")
}

/// Runs until the process ends: watches every registered folder project of `backend`.
/// A new version's pointer is dropped from `pointers`, so the next request answers from it.
pub async fn run(
    backend: Arc<EmbeddedBackend>,
    pointers: Arc<PointerCache>,
    data_dir: PathBuf,
    debounce: Duration,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
    let mut watcher =
        match notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            Ok(event) if !event.kind.is_access() => {
                for p in event.paths {
                    let _ = tx.send(p);
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("file watch error: {e}"),
        }) {
            Ok(w) => w,
            Err(e) => {
                tracing::error!("cannot watch files ({e}); --watch is off");
                return;
            }
        };
    let data_dir = data_dir.canonicalize().unwrap_or(data_dir);
    let mut watched: HashMap<String, Watched> = HashMap::new();
    let mut pending: HashMap<String, Instant> = HashMap::new();
    let mut refresh = tokio::time::interval(REFRESH);
    loop {
        let next_due = pending.values().min().map(|t| *t + debounce);
        tokio::select! {
            _ = refresh.tick() => {
                // A folder newly watched may have changed between its registration and now:
                // one re-index (a stat walk when it did not) closes that gap.
                for id in refresh_watches(&backend, &mut watcher, &mut watched) {
                    pending.insert(id, Instant::now());
                }
            }
            Some(path) = rx.recv() => {
                if !relevant(&path, &data_dir) {
                    continue;
                }
                for (id, w) in &watched {
                    if path.starts_with(&w.folder) {
                        pending.insert(id.clone(), Instant::now());
                    }
                }
            }
            _ = async {
                match next_due {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            } => {
                let now = Instant::now();
                let due: Vec<String> = pending
                    .iter()
                    .filter(|(_, t)| **t + debounce <= now)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in due {
                    pending.remove(&id);
                    if let Some(w) = watched.get_mut(&id) {
                        if let Some(wait) = reindex(&backend, w).await {
                            // Due again once the limit allows (`pending` holds the last change,
                            // due a debounce later).
                            let at = Instant::now() + wait;
                            pending.insert(id.clone(), at.checked_sub(debounce).unwrap_or(at));
                        }
                        pointers.forget(&w.project.org, &w.project.id);
                    }
                }
            }
        }
    }
}

/// Starts watching folders registered since the last look, and stops watching removed ones;
/// returns the ids of the projects it started watching.
fn refresh_watches(
    backend: &EmbeddedBackend,
    watcher: &mut impl Watcher,
    watched: &mut HashMap<String, Watched>,
) -> Vec<String> {
    let projects = match backend.local_projects() {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!("reading registered projects: {e}");
            return Vec::new();
        }
    };
    let mut started = Vec::new();
    let ids: Vec<String> = projects.iter().map(|(p, _)| p.id.clone()).collect();
    watched.retain(|id, w| {
        let keep = ids.contains(id);
        if !keep {
            let _ = watcher.unwatch(&w.folder);
        }
        keep
    });
    for (project, folder) in projects {
        if watched.contains_key(&project.id) {
            continue;
        }
        let folder = folder.canonicalize().unwrap_or(folder);
        match watcher.watch(&folder, RecursiveMode::Recursive) {
            Ok(()) => {
                tracing::info!(project = %project.name, org = %project.org, folder = %folder.display(), "watching");
                started.push(project.id.clone());
                watched.insert(project.id.clone(), Watched { folder, project });
            }
            // A folder that is gone is tried again at the next look.
            Err(e) => {
                tracing::warn!(project = %project.name, "cannot watch {}: {e}", folder.display())
            }
        }
    }
    started
}

/// Re-indexes `w` as a job of its org; how long to wait before trying again when the org's
/// index-job limit refused it.
async fn reindex(backend: &EmbeddedBackend, w: &mut Watched) -> Option<Duration> {
    let before = w.project.current_version;
    let started = std::time::Instant::now();
    let limits = match backend.org(&w.project.org).await {
        Ok(org) => org.map(|o| o.limits).unwrap_or_default(),
        Err(e) => {
            tracing::warn!(project = %w.project.name, org = %w.project.org, "re-index failed: {e}");
            return None;
        }
    };
    let jobs = OrgJobs::new(backend, &w.project.org, limits);
    match backend.reindex_project(&w.project, &jobs).await {
        Ok(after) => {
            let ms = started.elapsed().as_millis();
            if after.current_version != before {
                tracing::info!(
                    project = %after.name, org = %after.org,
                    from = ?before, to = ?after.current_version, ms,
                    "re-indexed: new version published"
                );
            } else {
                tracing::debug!(project = %after.name, ms, "re-indexed: unchanged");
            }
            w.project = after;
            None
        }
        Err(BackendError::QuotaExceeded(r)) => {
            tracing::warn!(
                project = %w.project.name, org = %w.project.org, retry_after_s = r.retry_after_s,
                "re-index waits: the organisation's {} limit ({}) is reached",
                r.limit.name(), r.allowed
            );
            Some(Duration::from_secs(r.retry_after_s))
        }
        Err(e) => {
            tracing::warn!(project = %w.project.name, org = %w.project.org, "re-index failed: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_control_and_data_dir_changes_are_ignored() {
        let data = Path::new("/srv/repo/.ctxgate");
        assert!(relevant(Path::new("/srv/repo/src/main.rs"), data));
        assert!(!relevant(Path::new("/srv/repo/.git/index"), data));
        assert!(!relevant(Path::new("/srv/repo/.ctxgate/objects/x"), data));
    }
}
