//! Garbage collection of old index versions in any store (the data directory, or S3 and
//! DynamoDB): the core's plan ([`ctxgate_core::index::gc::plan`]) applied under the project's
//! indexing lock (a file lock, or the DynamoDB lease the indexer takes), so no publish of the
//! same project runs meanwhile; the plan's grace period protects readers (servers and isolates
//! answering from a version they opened before it was superseded) and uploads in flight.
//!
//! Deletion order: version records, then manifests, then packs, then segments — a crash part
//! way leaves no version visible whose objects are gone, and running it again finishes the job.

use ctxgate_core::index::gc::{GcPolicy, VersionFacts, plan};
use ctxgate_core::index::layout::{Manifest, keys};
use ctxgate_core::item_key::{ItemKey, ItemRange};

use crate::IndexerError;
use crate::store::{IndexStore, ProjectItem, VersionItem};

pub use ctxgate_core::index::gc::GcReport;

/// Collects `project`'s old versions by `policy` at `now_ms`.
pub fn collect_project(
    store: &dyn IndexStore,
    project: &ProjectItem,
    policy: &GcPolicy,
    now_ms: u64,
    dry_run: bool,
) -> Result<GcReport, IndexerError> {
    let (org, id) = (project.org.as_str(), project.id.as_str());
    let _lock = store.lock_project(id, &format!("gc (pid {})", std::process::id()))?;
    // Read again under the lock: an index that finished meanwhile moved the pointer.
    let current = store.project(org, id)?.and_then(|p| p.current_version);
    let mut versions = Vec::new();
    let range = ItemRange::versions_of(id);
    let records = store.items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX)?;
    for raw in records {
        let v: VersionItem = serde_json::from_str(&raw)
            .map_err(|e| IndexerError::Corrupt(format!("version record of {id}: {e}")))?;
        let manifest_key = keys::manifest(org, id, v.version);
        let mut objects = vec![manifest_key.clone()];
        // A version whose manifest is gone (a GC cut short) names nothing more.
        if let Ok(bytes) = store.get_object(&manifest_key) {
            let m: Manifest = serde_json::from_slice(&bytes)
                .map_err(|e| IndexerError::Corrupt(format!("manifest {manifest_key}: {e}")))?;
            objects.extend(m.objects().into_iter().map(str::to_owned));
        }
        versions.push(VersionFacts {
            version: v.version,
            created_ms: u64::try_from(v.created_at_ns / 1_000_000).unwrap_or(0),
            objects,
        });
    }
    let stored = store.list_objects(&format!("{}/", keys::project(org, id)))?;
    let p = plan(current, &versions, &stored, now_ms, policy);
    if !dry_run {
        for v in &p.versions {
            let key = ItemKey::version(id, *v);
            store.delete_item(&key.pk, &key.sk)?;
        }
        crate::crash::point("gc_after_records");
        for key in &p.objects {
            store.delete_object(key)?;
            crate::crash::point("gc_after_object");
        }
    }
    Ok(GcReport {
        org: org.into(),
        project: id.into(),
        name: project.name.clone(),
        current_version: current,
        kept_versions: p.kept_versions,
        deleted_versions: p.versions,
        deleted_objects: p.objects.len(),
        bytes_freed: p.bytes,
        applied: !dry_run,
    })
}

/// Collects every project (of `org` when given).
pub fn collect(
    store: &dyn IndexStore,
    org: Option<&str>,
    policy: &GcPolicy,
    now_ms: u64,
    dry_run: bool,
) -> Result<Vec<GcReport>, IndexerError> {
    let mut projects = store.all_projects()?;
    if let Some(o) = org {
        projects.retain(|p| p.org == o);
    }
    projects
        .iter()
        .map(|p| collect_project(store, p, policy, now_ms, dry_run))
        .collect()
}
