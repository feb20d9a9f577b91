//! Git-tree extraction: a commit whose tree is arbitrary (names, modes, links, nesting, sizes),
//! written into an in-memory object database and materialised through the indexer's extraction
//! gate. Whatever it writes stays inside the folder.
#![no_main]

use ctxgate_fuzz::extract::{assert_contained, small_limits};
use ctxgate_indexer::source::fuzzing::{gix, write_git_tree};
use gix::objs::tree::{Entry, EntryKind};
use libfuzzer_sys::{arbitrary, fuzz_target};

#[derive(arbitrary::Arbitrary, Debug)]
struct Tree(Vec<(Vec<u8>, Node)>);

#[derive(arbitrary::Arbitrary, Debug)]
enum Node {
    File(Vec<u8>),
    Executable(Vec<u8>),
    Link(Vec<u8>),
    Folder(Tree),
    Submodule,
}

fuzz_target!(|tree: Tree| {
    let repo = fresh_repo();
    let Some(tree_id) = write(&repo, &tree, 0) else {
        return;
    };
    let commit = gix::objs::Commit {
        tree: tree_id,
        parents: Default::default(),
        author: Default::default(),
        committer: Default::default(),
        encoding: None,
        message: "fuzz".into(),
        extra_headers: Vec::new(),
    };
    let commit = repo.write_object(&commit).expect("commit").detach();
    let dir = tempfile::tempdir().expect("temporary folder");
    let dest = dir.path().join("files");
    std::fs::create_dir(&dest).expect("folder");
    let _ = write_git_tree(&repo, commit, &dest, &small_limits());
    assert_contained(dir.path(), &dest);
});

/// A handle on an empty bare repository made once per thread, whose writes stay in memory.
fn fresh_repo() -> gix::Repository {
    thread_local! {
        static REPO: (tempfile::TempDir, gix::Repository) = {
            let dir = tempfile::tempdir().expect("temporary folder");
            let repo = gix::init_bare(dir.path()).expect("a bare repository");
            (dir, repo)
        };
    }
    REPO.with(|(_, repo)| repo.clone().with_object_memory())
}

/// Writes `tree` (nested at most 8 deep) and returns its id; `None` when gitoxide refuses a name.
fn write(repo: &gix::Repository, tree: &Tree, depth: usize) -> Option<gix::ObjectId> {
    let mut entries = Vec::new();
    for (name, node) in &tree.0 {
        let (mode, oid) = match node {
            Node::File(bytes) => (EntryKind::Blob, repo.write_blob(bytes).ok()?.detach()),
            Node::Executable(bytes) => (
                EntryKind::BlobExecutable,
                repo.write_blob(bytes).ok()?.detach(),
            ),
            Node::Link(target) => (EntryKind::Link, repo.write_blob(target).ok()?.detach()),
            Node::Folder(sub) if depth < 8 => (EntryKind::Tree, write(repo, sub, depth + 1)?),
            Node::Folder(_) | Node::Submodule => {
                (EntryKind::Commit, repo.write_blob(b"").ok()?.detach())
            }
        };
        entries.push(Entry {
            mode: mode.into(),
            filename: name.as_slice().into(),
            oid,
        });
    }
    entries.sort();
    let tree = gix::objs::Tree { entries };
    repo.write_object(&tree).ok().map(|id| id.detach())
}
