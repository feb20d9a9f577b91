//! The AWS store against moto, on what its interface promises: conditional publishing,
//! no lost concurrent updates, paged queries past DynamoDB's 1 MB pages, DynamoDB's item size
//! limit, and multipart uploads.

mod support;

use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::store::{IndexStore, ProjectItem, VersionItem};
use support::moto::Moto;

fn version(project: &str, v: u64) -> VersionItem {
    VersionItem {
        project: project.into(),
        version: v,
        manifest_key: format!("org/o/project/{project}/version/{v}/manifest.json"),
        files: 1,
        chunks: 1,
        created_at_ns: v as i64,
    }
}

#[test]
fn the_aws_store_keeps_its_promises() {
    let Some(moto) = Moto::start() else { return };
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let location = S3Location::parse("s3://ctxgate-store-test/p").unwrap();
    let store = AwsStore::open(location.clone(), "store-test", cache.path()).unwrap();
    let report = store.init().unwrap();
    assert!(report.bucket_created && report.table_created);
    assert!(!store.init().unwrap().table_created, "init is idempotent");

    // Publishing is conditional on the version the run started from.
    let project = ProjectItem {
        id: "p1".into(),
        org: "o".into(),
        name: "one".into(),
        source: "/src".into(),
        current_version: None,
        updated_at_ns: 0,
    };
    store.upsert_project(&project).unwrap();
    assert!(store.publish_version("o", &version("p1", 1), None).unwrap());
    assert!(
        !store.publish_version("o", &version("p1", 2), None).unwrap(),
        "a run that started before version 1 may not publish over it"
    );
    assert!(
        store
            .publish_version("o", &version("p1", 2), Some(1))
            .unwrap()
    );
    assert!(
        !store
            .publish_version("o", &version("p1", 2), Some(2))
            .unwrap(),
        "a version number is never recorded twice"
    );
    store.upsert_project(&project).unwrap();
    let p = store.project("o", "p1").unwrap().unwrap();
    assert_eq!(
        p.current_version,
        Some(2),
        "describing a project never moves its version"
    );
    assert_eq!(store.latest_version("p1").unwrap(), 2);
    assert!(
        !store
            .publish_version("o", &version("ghost", 1), None)
            .is_ok_and(|ok| ok)
    );

    // Optimistic updates from several threads lose nothing.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let s = AwsStore::open(location.clone(), "store-test", cache.path()).unwrap();
                for _ in 0..10 {
                    s.update_item("COUNTER", "n", &mut |old| {
                        let n: u64 = old.map_or(0, |o| o.parse().unwrap());
                        Ok(Some((n + 1).to_string()))
                    })
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(store.item("COUNTER", "n").unwrap().as_deref(), Some("40"));

    // 12 items of 300 KB: several 1 MB query pages, all returned in order; a 400 KB item is
    // refused before it is sent.
    let big = "x".repeat(300 * 1024);
    for i in 0..12 {
        store
            .put_item("BIG", &format!("item#{i:02}"), &big)
            .unwrap();
    }
    let all = store
        .items_with_prefix("BIG", "item#", false, usize::MAX)
        .unwrap();
    assert_eq!(all.len(), 12);
    assert_eq!(
        store
            .items_with_prefix("BIG", "item#", true, 5)
            .unwrap()
            .len(),
        5
    );
    let too_big = "x".repeat(401 * 1024);
    assert!(store.put_item("BIG", "huge", &too_big).is_err());

    // Conditional writes never overwrite, small or multipart.
    assert!(
        store
            .put_new_object("org/o/project/p1/v.pack", b"first")
            .unwrap()
    );
    assert!(
        !store
            .put_new_object("org/o/project/p1/v.pack", b"second")
            .unwrap()
    );
    assert_eq!(
        store.get_object("org/o/project/p1/v.pack").unwrap(),
        b"first"
    );

    // A 20 MiB object goes up in parts and comes back whole.
    let object: Vec<u8> = (0..20u32 << 20).map(|i| (i % 251) as u8).collect();
    store
        .put_object("org/o/project/p1/big.bin", &object)
        .unwrap();
    assert!(store.has_object("org/o/project/p1/big.bin").unwrap());
    assert!(!store.has_object("org/o/project/p1/none.bin").unwrap());
    assert_eq!(
        store.get_object("org/o/project/p1/big.bin").unwrap(),
        object
    );
    let other: Vec<u8> = vec![7; 17 << 20];
    assert!(
        !store
            .put_new_object("org/o/project/p1/big.bin", &other)
            .unwrap()
    );
    assert_eq!(
        store.get_object("org/o/project/p1/big.bin").unwrap(),
        object
    );
    let (requests, bytes_up, _) = store.traffic().snapshot();
    assert!(requests >= 5, "create + 3 parts + complete");
    assert!(bytes_up >= object.len() as u64);
}
