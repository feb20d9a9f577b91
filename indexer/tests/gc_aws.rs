//! Garbage collection over S3 + DynamoDB (moto): old versions' records, manifests, packs and
//! the segments no kept version names are deleted; the current version stays whole and
//! readable; a dry run deletes nothing; an object younger than the grace period (a publish in
//! flight) survives, and a second run after a crash part way finishes the job.

mod support;

use std::path::Path;

use ctxgate_core::index::gc::GcPolicy;
use ctxgate_core::index::layout::{Manifest, keys};
use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::gc::collect;
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress, index_repo};
use ctxgate_indexer::store::{IndexStore, LOCAL_ORG};
use support::moto::Moto;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn gc_over_s3_and_dynamodb_keeps_what_the_current_version_needs() {
    let Some(moto) = Moto::start() else { return };
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let location = S3Location::parse("s3://ctxgate-gc-test/pub").unwrap();
    let store = AwsStore::open(location, "gc-test", cache.path()).unwrap();
    store.init().unwrap();

    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        "src/lib.rs",
        "/// Adds.\npub fn add(a: u32, b: u32) -> u32 { a + b }\n",
    );
    let mut project = String::new();
    for i in 0..3 {
        write(
            repo.path(),
            "src/changing.rs",
            &format!("/// Version {i}.\npub fn version() -> u32 {{ {i} }}\n"),
        );
        let report =
            index_repo(&store, repo.path(), &IndexOptions::default(), &NoProgress).unwrap();
        project = report.project.id.clone();
    }
    let prefix = format!("{}/", keys::project(LOCAL_ORG, &project));
    let before = store.list_objects(&prefix).unwrap();
    let manifests = |objects: &[ctxgate_core::index::gc::StoredObject]| {
        objects
            .iter()
            .filter(|o| o.key.ends_with("manifest.json"))
            .count()
    };
    assert_eq!(manifests(&before), 3, "{before:?}");

    // A dry run deletes nothing, and says what it would.
    let keep_current_only = GcPolicy {
        keep_last: 0,
        keep_younger_than_ms: 0,
        grace_ms: 0,
    };
    let dry = collect(&store, None, &keep_current_only, now_ms() + 1000, true).unwrap();
    assert_eq!(dry.len(), 1);
    assert_eq!(dry[0].deleted_versions, vec![1, 2]);
    assert!(
        dry[0].deleted_objects >= 4 && dry[0].bytes_freed > 0,
        "{dry:?}"
    );
    assert_eq!(store.list_objects(&prefix).unwrap(), before);

    // An upload of a publish in flight: younger than the grace period, it stays.
    let in_flight = format!("{prefix}segments/{}.seg", "f".repeat(64));
    store.put_object(&in_flight, b"not yet named").unwrap();
    let graced = GcPolicy {
        grace_ms: 15 * 60 * 1000,
        ..keep_current_only
    };
    collect(&store, Some(LOCAL_ORG), &graced, now_ms(), false).unwrap();
    let kept = store.list_objects(&prefix).unwrap();
    assert!(kept.iter().any(|o| o.key == in_flight), "{kept:?}");

    // Past the grace period: only the current version and what it names are left.
    let done = collect(&store, None, &keep_current_only, now_ms() + 1000, false).unwrap();
    assert_eq!(done[0].current_version, Some(3));
    let after = store.list_objects(&prefix).unwrap();
    let manifest_key = keys::manifest(LOCAL_ORG, &project, 3);
    let manifest: Manifest =
        serde_json::from_slice(&store.get_object(&manifest_key).unwrap()).unwrap();
    let mut wanted: Vec<String> = std::iter::once(manifest_key.clone())
        .chain(std::iter::once(manifest.pack_key.clone()))
        .chain(manifest.segment_keys.iter().cloned())
        .collect();
    wanted.sort();
    wanted.dedup();
    let mut left: Vec<String> = after.iter().map(|o| o.key.clone()).collect();
    left.sort();
    assert_eq!(left, wanted, "exactly the current version's objects remain");
    let range = ctxgate_core::item_key::ItemRange::versions_of(&project);
    let records = store
        .items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX)
        .unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    // What is left is whole: the pack and every segment read back.
    assert_eq!(
        store.get_object(&manifest.pack_key).unwrap().len() as u64,
        manifest.pack_bytes
    );
    for k in &manifest.segment_keys {
        assert!(!store.get_object(k).unwrap().is_empty());
    }

    // Running it again finds nothing more to do.
    let again = collect(&store, None, &keep_current_only, now_ms() + 1000, false).unwrap();
    assert!(again[0].deleted_versions.is_empty() && again[0].deleted_objects == 0);
}
