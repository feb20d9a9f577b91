//! Recency from git history: what `last_changes` reads from a real repository made with the
//! `git` CLI, and what the index and `reasoning` carry.

#[allow(dead_code)]
#[path = "support/repo.rs"]
mod repo;

use ctxgate_indexer::recency::last_changes;
use repo::{git, write};

fn history() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    write(root, "a.rs", "fn read_stream() {}\n");
    write(root, "b.rs", "fn parse_header() {}\n");
    write(root, "sub/c.rs", "fn parse_body() {}\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "first"]);
    write(root, "b.rs", "fn parse_header() { header(); }\n");
    git(root, &["commit", "-qam", "second"]);
    write(root, "sub/c.rs", "fn parse_body() { body(); }\n");
    write(root, "sub/d.rs", "fn flush_body() {}\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "third"]);
    std::fs::remove_file(root.join("a.rs")).unwrap();
    git(root, &["commit", "-qam", "fourth: a deletion"]);
    dir
}

#[test]
fn ages_count_commits_back_from_head() {
    let dir = history();
    let (walked, ages) = last_changes(dir.path(), 500).expect("a git work tree");
    // The root commit ends the walk: it "adds" everything and says nothing about recent work.
    assert_eq!(walked, 3);
    assert_eq!(ages.get("sub/c.rs"), Some(&1));
    assert_eq!(ages.get("sub/d.rs"), Some(&1));
    assert_eq!(ages.get("b.rs"), Some(&2));
    assert_eq!(ages.get("a.rs"), None, "deleted");
    assert_eq!(ages.len(), 3, "{ages:?}");
    // A window shorter than the history.
    let (walked, ages) = last_changes(dir.path(), 1).unwrap();
    assert_eq!(walked, 1);
    assert!(ages.is_empty(), "HEAD only deleted a file: {ages:?}");
}

#[test]
fn a_subfolder_sees_its_own_paths() {
    let dir = history();
    let (_, ages) = last_changes(&dir.path().join("sub"), 500).unwrap();
    assert_eq!(ages.get("c.rs"), Some(&1));
    assert_eq!(ages.len(), 2, "{ages:?}");
}

#[test]
fn no_history_outside_a_repository_or_in_an_untracked_folder() {
    let plain = tempfile::tempdir().unwrap();
    write(plain.path(), "x.rs", "fn x() {}\n");
    assert!(last_changes(plain.path(), 500).is_none());
    let dir = history();
    write(dir.path(), "untracked/y.rs", "fn y() {}\n");
    assert!(last_changes(&dir.path().join("untracked"), 500).is_none());
}

#[test]
fn the_index_carries_recency_into_each_pieces_reasoning() {
    use ctxgate_core::catalog::{BudgetPolicy, Catalog};
    use ctxgate_core::compress::Compression;
    use ctxgate_core::profile::Profile;
    use ctxgate_indexer::assemble::{AssembleRequest, assemble};
    use ctxgate_indexer::pipeline::{IndexOptions, NoProgress};
    use ctxgate_indexer::store::Store;

    let dir = history();
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let req = AssembleRequest {
        repo: dir.path().to_path_buf(),
        query: "parse the header and the body".into(),
        budget: Some(2000),
        model: None,
        policy: BudgetPolicy::default(),
        index: IndexOptions::default(),
        hot_paths: Vec::new(),
        compression: Compression::None,
        profile: Profile::Expand,
        error_output: None,
        dense: None,
        rerankers: Default::default(),
    };
    let report = assemble(&store, &Catalog::builtin(), &req, &NoProgress).unwrap();
    let recency = |path: &str| {
        report
            .pieces
            .iter()
            .find(|p| p.path == path)
            .map(|p| p.reasoning.unwrap().recency)
            .unwrap_or_else(|| panic!("{path} selected"))
    };
    // c.rs changed one commit before b.rs's last change: it scores higher; both above 0.
    assert!(recency("sub/c.rs") > recency("b.rs"), "{report:?}");
    assert!(recency("b.rs") > 0.0);
}

/// A folder's origin, for links to its files: the `origin` remote without its credentials,
/// HEAD's commit, and where the folder is in the work tree; and the manifest of the version
/// indexed from it carries the same.
#[test]
fn origin_names_the_remote_commit_and_subfolder_without_credentials() {
    use ctxgate_indexer::pipeline::{IndexOptions, NoProgress, ProjectTarget, index_project};
    use ctxgate_indexer::recency::origin;
    use ctxgate_indexer::store::{Store, keys};

    let dir = history();
    assert_eq!(origin(dir.path()).unwrap().remote, None, "no remote yet");
    git(
        dir.path(),
        &[
            "remote",
            "add",
            "origin",
            "https://x-access-token:ghp_secret123@github.com/acme/app.git",
        ],
    );
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let head = String::from_utf8(out.stdout).unwrap();
    let o = origin(&dir.path().join("sub")).expect("a work tree");
    assert_eq!(o.remote.as_deref(), Some("https://github.com/acme/app.git"));
    assert_eq!(o.commit.as_deref(), Some(head.trim()));
    assert_eq!(o.subdir, "sub");
    let link = ctxgate_core::source::source_link(&o, "c.rs", 1, 1).unwrap();
    assert_eq!(
        link,
        format!(
            "https://github.com/acme/app/blob/{}/sub/c.rs#L1-L1",
            head.trim()
        )
    );
    // Outside any work tree there is none.
    let plain = tempfile::tempdir().unwrap();
    assert_eq!(origin(plain.path()), None);

    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let target = ProjectTarget::named("acme", "app");
    let report = index_project(
        &store,
        &target,
        dir.path(),
        &IndexOptions::default(),
        &NoProgress,
    )
    .unwrap();
    let manifest = store
        .get_object(&keys::manifest("acme", &target.id, report.version))
        .unwrap();
    let text = String::from_utf8(manifest).unwrap();
    assert!(text.contains(head.trim()), "{text}");
    assert!(!text.contains("ghp_secret123"), "{text}");
}
