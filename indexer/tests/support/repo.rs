//! Git repositories the AWS tests and benches index: made with the `git` CLI in a temporary
//! folder and served over `file://`.

use std::path::Path;
use std::process::Command;

/// Runs `git args` in `dir` with a fixed identity and branch name; panics if it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git runs")
        .success();
    assert!(ok, "git {args:?}");
}

/// Copies the folder `from` to `to`, recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A git repository holding a copy of `from`, committed once.
pub fn committed_copy(from: &Path, to: &Path) {
    copy_tree(from, to);
    git(to, &["init", "-q"]);
    git(to, &["add", "-A"]);
    git(to, &["commit", "-qm", "first"]);
}

/// Writes `text` to `rel` under `root`, making its folders.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}
