//! What a reader may rely on after any crash, in any store: every recorded version of a project
//! (the current one included) names only objects that exist and pass their checks — the
//! manifest parses and stays inside its project, the pack has the size and sha256 the manifest
//! records and decodes, every segment's bytes hash to its name. Objects no record names
//! (left by a run cut short) are invisible to readers and are not checked.

use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::IndexPack;
use ctxgate_core::index::layout::{Manifest, keys};
use ctxgate_core::index::open::{layered, open_pack, read_manifest};
use ctxgate_core::item_key::ItemRange;
use ctxgate_indexer::store::{IndexStore, VersionItem};

/// The versions recorded for `project`, each checked whole, and the current one (which must be
/// among them).
pub fn recorded_versions_are_whole(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
) -> (Vec<u64>, Option<u64>) {
    let current = store
        .project(org, project)
        .expect("the project record reads")
        .and_then(|p| p.current_version);
    let range = ItemRange::versions_of(project);
    let recorded: Vec<u64> = store
        .items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX)
        .expect("version records read")
        .iter()
        .map(|d| {
            serde_json::from_str::<VersionItem>(d)
                .expect("a version record parses")
                .version
        })
        .collect();
    if let Some(c) = current {
        assert!(
            recorded.contains(&c),
            "current version {c} has no record ({recorded:?})"
        );
    }
    for &v in &recorded {
        version_is_whole(store, org, project, v);
    }
    (recorded, current)
}

/// Version `version`'s manifest, pack and segments exist and pass their checks (a delta's base's
/// too, and the version opens: base and delta merge); the keys it names.
pub fn version_is_whole(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
    version: u64,
) -> Vec<String> {
    let key = keys::manifest(org, project, version);
    let bytes = store
        .get_object(&key)
        .unwrap_or_else(|e| panic!("version {version} is recorded but {key} is missing: {e}"));
    let manifest = read_manifest(org, project, version, &bytes)
        .unwrap_or_else(|e| panic!("manifest of version {version}: {e}"));
    let pack = objects_are_whole(store, &manifest, version);
    let base = manifest
        .base
        .as_deref()
        .map(|b| objects_are_whole(store, b, version));
    layered(&manifest, base, pack)
        .unwrap_or_else(|e| panic!("version {version} does not open: {e}"));
    let mut named = vec![key];
    named.extend(manifest.objects().into_iter().map(str::to_owned));
    named
}

/// The pack and segments `manifest` names (of version `version`, or of its base) exist and
/// pass their checks; the pack, decoded.
fn objects_are_whole(store: &dyn IndexStore, manifest: &Manifest, version: u64) -> IndexPack {
    let pack = store
        .get_object(&manifest.pack_key)
        .unwrap_or_else(|e| panic!("{} of version {version}: {e}", manifest.pack_key));
    assert_eq!(
        Sha256Digest::of(&pack).to_hex(),
        manifest.pack_sha256,
        "{} does not hash to what its manifest records",
        manifest.pack_key
    );
    let decoded =
        open_pack(manifest, &pack).unwrap_or_else(|e| panic!("version {version}'s pack: {e}"));
    for seg in &manifest.segment_keys {
        let bytes = store
            .get_object(seg)
            .unwrap_or_else(|e| panic!("{seg} of version {version}: {e}"));
        let name = seg
            .rsplit('/')
            .next()
            .unwrap_or("")
            .trim_end_matches(".seg");
        assert_eq!(Sha256Digest::of(&bytes).to_hex(), name, "{seg} is damaged");
    }
    // A whole pack carries its paths' tables, exactly those of its files (readers decode them
    // instead of building them); a delta pack carries none (its reader builds the merged
    // version's).
    if decoded.delta.is_none() {
        let want =
            ctxgate_core::index::path_tables::PathTables::of(&decoded.files, &decoded.chunks);
        assert!(
            decoded.paths.as_ref() == Some(&want),
            "version {version}'s pack lacks its paths' tables or holds others"
        );
    } else {
        assert!(
            decoded.paths.is_none(),
            "version {version}'s delta pack holds paths' tables"
        );
    }
    decoded
}
