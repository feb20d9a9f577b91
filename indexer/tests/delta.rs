//! A small change is published as a delta over the previous version's base: only the changed
//! files' own index is written, every later delta stays over the same base, and the version
//! opened from base and delta answers exactly as the same files indexed whole.

use std::collections::BTreeMap;
use std::path::Path;

use ctxgate_core::catalog::{BudgetPolicy, Catalog};
use ctxgate_core::compress::Compression;
use ctxgate_core::profile::Profile;
use ctxgate_indexer::assemble::{AssembleRequest, assemble};
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress, index_repo, open_current};
use ctxgate_indexer::store::{LOCAL_ORG, Store, keys};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A module of a few functions that call into other modules.
fn module(n: usize, extra: &str) -> String {
    let mut text = format!("//! Module {n}: parsing and rendering of records.\n\n");
    for f in 0..4 {
        text.push_str(&format!(
            "/// Step {f} of module {n}.\npub fn module_{n}_step_{f}(input: &str) -> usize {{\n    let parsed = crate::m{}::module_{}_step_{}(input);\n    parsed.wrapping_mul({f}) + input.len()\n}}\n\n",
            (n + 1) % 60,
            (n + 1) % 60,
            (f + 1) % 4
        ));
    }
    text.push_str(extra);
    text
}

fn repo(root: &Path) {
    for n in 0..60 {
        write(root, &format!("src/m{n}.rs"), &module(n, ""));
    }
    write(
        root,
        "src/lib.rs",
        &(0..60)
            .map(|n| format!("pub mod m{n};\n"))
            .collect::<String>(),
    );
}

/// Every object of the project with its size.
fn objects(store: &Store, project: &str) -> BTreeMap<String, u64> {
    store
        .list_objects(&format!("{}/", keys::project(LOCAL_ORG, project)))
        .unwrap()
        .into_iter()
        .map(|o| (o.key, o.bytes))
        .collect()
}

/// The prompt `query` assembles over the project of `root` in `store`.
fn prompt(store: &Store, root: &Path, query: &str) -> String {
    prompt_within(store, root, query, 3000)
}

fn prompt_within(store: &Store, root: &Path, query: &str, budget: u32) -> String {
    let req = AssembleRequest {
        budget: Some(budget),
        ..request(root, query)
    };
    assemble(store, &Catalog::builtin(), &req, &NoProgress)
        .unwrap()
        .prompt
}

fn request(root: &Path, query: &str) -> AssembleRequest {
    AssembleRequest {
        repo: root.to_path_buf(),
        query: query.into(),
        budget: Some(3000),
        model: None,
        policy: BudgetPolicy::default(),
        index: IndexOptions::default(),
        hot_paths: Vec::new(),
        compression: Compression::None,
        profile: Profile::Expand,
        error_output: None,
        dense: None,
        rerankers: Default::default(),
    }
}

#[test]
fn a_small_change_is_a_delta_over_the_base_and_answers_as_the_whole_version() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    repo(&root);
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let opts = IndexOptions::default();
    let first = index_repo(&store, &root, &opts, &NoProgress).unwrap();
    let id = first.project.id.clone();
    let v1 = open_current(&store, LOCAL_ORG, &id).unwrap().unwrap();
    assert!(v1.manifest.base.is_none(), "the first version is whole");
    let before = objects(&store, &id);

    // One function added to one file: a delta over version 1.
    let m7 = module(
        7,
        "pub fn quarantine_ledger_entry(id: u64) -> u64 {\n    id ^ 0x5eed\n}\n",
    );
    write(&root, "src/m7.rs", &m7);
    index_repo(&store, &root, &opts, &NoProgress).unwrap();
    let v2 = open_current(&store, LOCAL_ORG, &id).unwrap().unwrap();
    let base = v2.manifest.base.as_deref().expect("a delta");
    assert_eq!(base.version, v1.version);
    let after = objects(&store, &id);
    let written: u64 = after
        .iter()
        .filter(|(k, _)| !before.contains_key(*k))
        .map(|(_, b)| b)
        .sum();
    let whole: u64 = before.values().sum();
    assert!(
        written * 5 < whole,
        "a one-file change wrote {written} bytes beside a whole version's {whole}"
    );
    let edited = v2
        .pack
        .files
        .iter()
        .find(|f| f.path == "src/m7.rs")
        .unwrap();
    assert_eq!(
        edited.sha256,
        ctxgate_core::hash::Sha256Digest::of(m7.as_bytes()),
        "the merged version has the edited file"
    );
    assert_eq!(v2.pack.files.len(), v1.pack.files.len());

    // More changes: a file changed, one deleted, one added: still over version 1.
    write(
        &root,
        "src/m30.rs",
        &module(30, "pub fn late_addition() {}\n"),
    );
    std::fs::remove_file(root.join("src/m41.rs")).unwrap();
    write(
        &root,
        "src/extra/new_module.rs",
        "pub fn brand_new_renderer() -> u8 { 7 }\n",
    );
    index_repo(&store, &root, &opts, &NoProgress).unwrap();
    let v3 = open_current(&store, LOCAL_ORG, &id).unwrap().unwrap();
    assert_eq!(
        v3.manifest.base.as_deref().map(|b| b.version),
        Some(v1.version),
        "a delta is never over a delta"
    );
    assert!(v3.pack.files.iter().all(|f| f.path != "src/m41.rs"));
    assert!(
        v3.pack
            .files
            .iter()
            .any(|f| f.path == "src/extra/new_module.rs")
    );

    // The same files indexed whole, elsewhere: the same tables and the same answers.
    let whole_home = tempfile::tempdir().unwrap();
    let whole_store = Store::open(whole_home.path()).unwrap();
    let forced = IndexOptions {
        force: true,
        ..IndexOptions::default()
    };
    let w = index_repo(&whole_store, &root, &forced, &NoProgress).unwrap();
    let wv = open_current(&whole_store, LOCAL_ORG, &w.project.id)
        .unwrap()
        .unwrap();
    assert!(wv.manifest.base.is_none());
    let shape = |p: &ctxgate_core::index::IndexPack| -> Vec<(String, Vec<String>)> {
        p.files
            .iter()
            .map(|f| {
                let first = f.first_chunk as usize;
                let ids = p.chunks[first..first + f.chunk_count as usize]
                    .iter()
                    .map(|c| c.id.to_string())
                    .collect();
                (f.path.clone(), ids)
            })
            .collect()
    };
    assert_eq!(shape(&v3.pack), shape(&wv.pack));
    assert_eq!(v3.pack.graph, wv.pack.graph);
    for query in [
        "where is the quarantine ledger entry computed",
        "module 30 step 2 parsing",
        "brand new renderer",
    ] {
        // Over 8k the call relation (names' users, base and delta merged) counts too.
        for budget in [3000, 10_000] {
            assert_eq!(
                prompt_within(&store, &root, query, budget),
                prompt_within(&whole_store, &root, query, budget),
                "{query} within {budget}"
            );
        }
    }
    // Nothing was re-indexed by answering.
    let again = open_current(&store, LOCAL_ORG, &id).unwrap().unwrap();
    assert_eq!(again.version, v3.version);

    // Garbage collection keeping only the current version (a delta) deletes versions 1 and 2
    // but not the base's objects the delta names: the version still opens and answers.
    let project = store.project(LOCAL_ORG, &id).unwrap().unwrap();
    let policy = ctxgate_core::index::gc::GcPolicy {
        keep_last: 0,
        keep_younger_than_ms: 0,
        grace_ms: 0,
    };
    let far = u64::MAX / 2;
    let report =
        ctxgate_indexer::gc::collect_project(&store, &project, &policy, far, false).unwrap();
    assert_eq!(
        report.deleted_versions,
        vec![v1.version, v2.version],
        "{report:?}"
    );
    assert!(
        report.deleted_objects > 0,
        "version 2's own objects went: {report:?}"
    );
    let after_gc = open_current(&store, LOCAL_ORG, &id).unwrap().unwrap();
    assert_eq!(shape(&after_gc.pack), shape(&wv.pack));
    let query = "where is the quarantine ledger entry computed";
    assert_eq!(
        prompt(&store, &root, query),
        prompt(&whole_store, &root, query)
    );

    // A forced run publishes whole: the next deltas' base.
    index_repo(&store, &root, &forced, &NoProgress).unwrap();
    let v4 = open_current(&store, LOCAL_ORG, &id).unwrap().unwrap();
    assert!(v4.manifest.base.is_none());
}
