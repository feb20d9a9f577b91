//! The history signal end to end: which commits wrote each chunk's lines, read from a real
//! repository made with the `git` CLI, and what each piece's reasoning says of it.

#[allow(dead_code)]
#[path = "support/repo.rs"]
mod repo;

use std::path::Path;

use ctxgate_core::catalog::{BudgetPolicy, Catalog};
use ctxgate_core::compress::Compression;
use ctxgate_core::profile::Profile;
use ctxgate_indexer::assemble::{AssembleReport, AssembleRequest, assemble};
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress};
use ctxgate_indexer::store::Store;
use repo::{git, write};

fn render(name: &str, open: &str, close: &str) -> String {
    format!("fn render_{name}() -> String {{\n    format!(\"{open}{{}}{close}\", VAR)\n}}\n")
}

/// a.rs written by a commit about the synopsis; b.rs by it and then (its middle line) by one
/// about labels; c.rs committed with a.rs but rewritten in the work tree and not committed.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    write(root, "a.rs", &render("metavar", "[", "]"));
    write(root, "b.rs", &render("label", "(", ")"));
    write(root, "c.rs", &render("title", "'", "'"));
    git(root, &["add", "-A"]);
    git(
        root,
        &["commit", "-qm", "Render the synopsis of a choice option"],
    );
    write(root, "b.rs", &render("label", "<", ">"));
    git(root, &["commit", "-qam", "Tidy the labels"]);
    write(root, "c.rs", "fn render_heading() -> u8 { 7 }\n");
    dir
}

fn ask(repo: &Path, query: &str) -> AssembleReport {
    let home = tempfile::tempdir().unwrap();
    ask_in(home.path(), repo, query)
}

fn ask_in(home: &Path, repo: &Path, query: &str) -> AssembleReport {
    let store = Store::open(home).unwrap();
    let req = AssembleRequest {
        repo: repo.to_path_buf(),
        query: query.into(),
        budget: Some(4000),
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
    assemble(&store, &Catalog::builtin(), &req, &NoProgress).unwrap()
}

fn history_of(report: &AssembleReport, path: &str) -> f32 {
    report
        .pieces
        .iter()
        .find(|p| p.path == path)
        .and_then(|p| p.reasoning)
        .map(|r| r.history)
        .unwrap_or_else(|| panic!("{path} has a piece with its reasoning: {report:?}"))
}

#[test]
fn chunks_written_by_commits_worded_like_the_request_come_first() {
    let dir = repository();
    // "render" matches every file's code; "synopsis" only the first commit's message.
    let report = ask(dir.path(), "render the double brackets of the synopsis");
    assert_eq!(history_of(&report, "a.rs"), 1.0, "{report:?}");
    let b = history_of(&report, "b.rs");
    assert!(b > 0.0 && b < 1.0, "b.rs: one of its two writers: {b}");
    assert_eq!(
        history_of(&report, "c.rs"),
        0.0,
        "uncommitted lines have no writer"
    );
    assert_eq!(report.pieces[0].path, "a.rs", "{report:?}");
    // A request worded like no commit: nothing moves.
    let report = ask(dir.path(), "format the value");
    for p in &report.pieces {
        assert_eq!(p.reasoning.unwrap().history, 0.0, "{p:?}");
    }
}

#[test]
fn a_folder_without_history_has_no_history_signal() {
    let dir = repository();
    let plain = tempfile::tempdir().unwrap();
    for f in ["a.rs", "b.rs", "c.rs"] {
        std::fs::copy(dir.path().join(f), plain.path().join(f)).unwrap();
    }
    let report = ask(plain.path(), "render the double brackets of the synopsis");
    assert!(!report.pieces.is_empty());
    for p in &report.pieces {
        assert_eq!(p.reasoning.unwrap().history, 0.0, "{p:?}");
    }
}

/// The walk is kept per HEAD: editing the work tree re-indexes without walking again, and the
/// edited file's committed lines keep their writers (its new lines have none).
#[test]
fn an_edit_of_the_work_tree_reuses_the_walk() {
    let dir = repository();
    let home = tempfile::tempdir().unwrap();
    let query = "render the double brackets of the synopsis";
    let first = ask_in(home.path(), dir.path(), query);
    assert_eq!(history_of(&first, "a.rs"), 1.0);
    let cached: Vec<_> = std::fs::read_dir(home.path().join("cache/history"))
        .unwrap()
        .collect();
    assert_eq!(cached.len(), 1, "one walk kept");
    let text = format!("// helpers\n{}", render("metavar", "[", "]"));
    write(dir.path(), "a.rs", &text);
    let second = ask_in(home.path(), dir.path(), query);
    let a = second.pieces.iter().find(|p| p.path == "a.rs").unwrap();
    assert_eq!(a.start_line, 1);
    assert_eq!(a.reasoning.unwrap().history, 1.0, "{second:?}");
    // Committing the edit changes no file, but HEAD moved: a new version, walked again, where
    // the commit (worded like the request too) wrote a.rs's first line, so b.rs trails further.
    git(dir.path(), &["commit", "-qam", "Note the synopsis helpers"]);
    let third = ask_in(home.path(), dir.path(), query);
    assert_eq!(history_of(&third, "a.rs"), 1.0, "{third:?}");
    assert!(
        history_of(&third, "b.rs") < history_of(&second, "b.rs"),
        "{second:?}\n{third:?}"
    );
    let kept = std::fs::read_dir(home.path().join("cache/history")).unwrap();
    assert_eq!(kept.count(), 1, "the folder's walk replaced, not added to");
}

/// A subfolder of a repository has its files' history (paths in the walk are the repository's,
/// the index's are the folder's).
#[test]
fn a_subfolder_of_a_repository_has_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    write(root, "sub/a.rs", &render("metavar", "[", "]"));
    write(root, "sub/b.rs", &render("label", "(", ")"));
    write(root, "top.rs", &render("title", "'", "'"));
    git(root, &["add", "sub/a.rs", "top.rs"]);
    git(
        root,
        &["commit", "-qm", "Render the synopsis of a choice option"],
    );
    git(root, &["add", "sub/b.rs"]);
    git(root, &["commit", "-qm", "Tidy the labels"]);
    let report = ask(
        &root.join("sub"),
        "render the double brackets of the synopsis",
    );
    assert_eq!(history_of(&report, "a.rs"), 1.0, "{report:?}");
    assert_eq!(history_of(&report, "b.rs"), 0.0, "{report:?}");
    assert!(report.pieces.iter().all(|p| p.path != "top.rs"));
}
