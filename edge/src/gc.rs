//! Garbage collection of old index versions in the edge's own object store: a Worker's R2 (what
//! `ctxgate project publish` uploads), or the native host's data directory. The plan is the
//! core's ([`ctxgate_core::index::gc::plan`]), the same one `ctxgate gc` applies to the data
//! directory and to S3 + DynamoDB; here the versions are read from the manifests the store
//! holds (a Worker keeps no version records, only each project's current version).
//!
//! No lock is taken: a publish uploads segments, then the pack, then the manifest, and moves the
//! current version last, so everything a publish in flight has written is younger than the
//! grace period and is kept; a superseded version stays for the grace period too, for isolates
//! still answering from it.

use ctxgate_core::index::gc::{GcPolicy, GcReport, VersionFacts, plan};
use ctxgate_core::index::layout::{Manifest, keys};

use crate::backend::{BackendError, Projects};

/// The version a manifest key under `prefix` names (`…/version/0000000003/manifest.json`).
fn manifest_version(prefix: &str, key: &str) -> Option<u64> {
    key.strip_prefix(prefix)?
        .strip_prefix("version/")?
        .strip_suffix("/manifest.json")?
        .parse()
        .ok()
}

/// Collects every project of `org` by `policy` at `now_ms`, project by project.
pub async fn collect_org(
    backend: &dyn Projects,
    org: &str,
    policy: &GcPolicy,
    now_ms: u64,
    dry_run: bool,
) -> Result<Vec<GcReport>, BackendError> {
    let mut reports = Vec::new();
    for project in backend.projects(org).await? {
        let prefix = format!("{}/", keys::project(org, &project.id));
        let stored = backend.list_objects(&prefix).await?;
        let mut versions = Vec::new();
        for object in &stored {
            let Some(version) = manifest_version(&prefix, &object.key) else {
                continue;
            };
            let mut objects = vec![object.key.clone()];
            let mut created_ms = object.modified_ms;
            // A manifest already gone (a collection cut short) names nothing more.
            match backend.object(&object.key).await {
                Ok(bytes) => {
                    let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
                        BackendError::Corrupt(format!("manifest `{}`: {e}", object.key))
                    })?;
                    created_ms = u64::try_from(m.created_at_ns / 1_000_000).unwrap_or(created_ms);
                    objects.extend(m.objects().into_iter().map(str::to_owned));
                }
                Err(BackendError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
            versions.push(VersionFacts {
                version,
                created_ms,
                objects,
            });
        }
        let p = plan(project.current_version, &versions, &stored, now_ms, policy);
        if !dry_run {
            // The plan orders them safely: manifests, then packs, then segments.
            for key in &p.objects {
                backend.delete_object(key).await?;
            }
        }
        reports.push(GcReport {
            org: org.to_string(),
            project: project.id.clone(),
            name: project.name.clone(),
            current_version: project.current_version,
            kept_versions: p.kept_versions,
            deleted_versions: p.versions,
            deleted_objects: p.objects.len(),
            bytes_freed: p.bytes,
            applied: !dry_run,
        });
    }
    Ok(reports)
}

/// The orgs that have objects among `stored` (keys `org/{org}/...`), each once, in order.
pub fn org_names(stored: &[ctxgate_core::index::gc::StoredObject]) -> Vec<String> {
    let mut orgs: Vec<String> = stored
        .iter()
        .filter_map(|o| o.key.strip_prefix("org/")?.split_once('/'))
        .map(|(org, _)| org)
        .filter(|org| !org.is_empty())
        .map(str::to_owned)
        .collect();
    orgs.sort_unstable();
    orgs.dedup();
    orgs
}

/// Collects every org with objects in this host's store (the Worker's scheduled pass: a
/// Worker keeps no list of its orgs, but every published object lies under `org/{org}/`).
/// An org whose collection fails is reported by the caller and does not stop the others.
pub async fn collect_all(
    backend: &dyn Projects,
    policy: &GcPolicy,
    now_ms: u64,
) -> Result<Vec<(String, Result<Vec<GcReport>, BackendError>)>, BackendError> {
    let orgs = org_names(&backend.list_objects("org/").await?);
    let mut out = Vec::with_capacity(orgs.len());
    for org in orgs {
        let reports = collect_org(backend, &org, policy, now_ms, false).await;
        out.push((org, reports));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{manifest_version, org_names};
    use ctxgate_core::index::gc::StoredObject;

    #[test]
    fn every_org_with_objects_is_named_once() {
        let stored = |key: &str| StoredObject {
            key: key.into(),
            bytes: 1,
            modified_ms: 0,
        };
        let objects = [
            stored("org/zeta/project/p/segments/a.seg"),
            stored("org/acme/project/p1/version/0000000001/manifest.json"),
            stored("org/acme/project/p2/segments/b.seg"),
            stored("org//project/x"),
            stored("orgs/other/x"),
            stored("org/bare"),
        ];
        assert_eq!(org_names(&objects), vec!["acme", "zeta"]);
    }

    #[test]
    fn manifest_keys_name_their_version() {
        let prefix = "org/acme/project/p1/";
        assert_eq!(
            manifest_version(
                prefix,
                "org/acme/project/p1/version/0000000003/manifest.json"
            ),
            Some(3)
        );
        for other in [
            "org/acme/project/p1/version/0000000003/index.pack",
            "org/acme/project/p1/segments/ab.seg",
            "org/acme/project/p2/version/0000000003/manifest.json",
            "org/acme/project/p1/version/x/manifest.json",
        ] {
            assert_eq!(manifest_version(prefix, other), None, "{other}");
        }
    }
}
