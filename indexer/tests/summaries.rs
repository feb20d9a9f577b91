//! Summaries built by the indexer: present at every level, deterministic, and reused for
//! unchanged files.

use std::path::Path;

use ctxgate_core::index::IndexPack;
use ctxgate_core::summary::{EXTRACTIVE, Summaries};
use ctxgate_indexer::pipeline::{
    IndexOptions, IndexReport, NoProgress, index_repo, load_summaries, open_current,
};
use ctxgate_indexer::store::{LOCAL_ORG, Store};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn sample(root: &Path) {
    write(
        root,
        "README.md",
        "# Sample\n\nA sample service that parses configs.\n\n## Usage\n\nRun it.\n",
    );
    write(
        root,
        "src/config.rs",
        "//! Configuration loading.\n\n/// Parses.\npub fn parse_config(text: &str) -> Config {\n    Config { text: text.into() }\n}\n\npub struct Config {\n    pub text: String,\n}\n",
    );
    write(
        root,
        "src/main.rs",
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    write(
        root,
        "app/server.py",
        "\"\"\"Serves pages.\"\"\"\n\nclass Server:\n    def start(self, port):\n        return port\n",
    );
    write(root, "Cargo.toml", "[package]\nname = \"sample\"\n");
}

/// Indexes `repo` into the data directory `home`: the report, the pack, and its summaries with
/// their texts read back from the segments they were stored in.
fn index(home: &Path, repo: &Path) -> (IndexReport, IndexPack, Summaries) {
    let store = Store::open(home).unwrap();
    let report = index_repo(&store, repo, &IndexOptions::default(), &NoProgress).unwrap();
    let pack = open_current(&store, LOCAL_ORG, &report.project.id)
        .unwrap()
        .unwrap()
        .pack;
    assert!(
        pack.summaries.texts.is_stored() && pack.summaries.lines.is_stored(),
        "this test keeps every summary text in segments"
    );
    let summaries = load_summaries(&store, LOCAL_ORG, &report.project.id, &pack).unwrap();
    (report, pack, summaries)
}

#[test]
fn every_level_is_summarized_deterministically_and_unchanged_files_keep_theirs() {
    // Every list and summary text goes to segments (the large-repository layout); small
    // repositories' inline layout is what every other test indexes.
    // SAFETY: the only test of this binary, set before any thread reads the environment.
    unsafe { std::env::set_var("CTXGATE_LISTS_INLINE_MAX", "0") };
    let repo = tempfile::tempdir().unwrap();
    sample(repo.path());
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (report, pack, s) = index(home_a.path(), repo.path());
    assert_eq!(report.summaries.files, 5);
    assert_eq!(report.summaries.extracted, 5);

    let file = |path: &str| {
        let i = pack.files.iter().position(|f| f.path == path).unwrap();
        s.file(i as u32).unwrap().clone()
    };
    let config = file("src/config.rs");
    assert_eq!(config.origin, EXTRACTIVE);
    assert_eq!(config.line, "Configuration loading.");
    assert!(
        config
            .summary
            .text
            .contains("pub fn parse_config(text: &str) -> Config")
    );
    assert!(
        file("app/server.py")
            .summary
            .text
            .starts_with("Serves pages.")
    );
    // Counted exactly in every encoding the pack counts.
    for (k, e) in pack.meta.encodings.iter().enumerate() {
        assert_eq!(config.summary.tokens[k], e.count(&config.summary.text));
    }
    let src = s.dir("src").unwrap();
    assert!(
        src.summary.text.starts_with("2 files, "),
        "{}",
        src.summary.text
    );
    assert!(src.summary.text.contains("config.rs  ("));
    assert!(src.summary.text.contains("): Configuration loading."));
    assert!(s.dir("app").is_some() && s.dir("").is_none());
    let project = &s.project.as_ref().unwrap().text;
    assert!(
        project.contains("A sample service that parses configs."),
        "{project}"
    );
    assert!(project.contains("Layout (5 files, "), "{project}");
    assert!(
        project.contains("\nEntry points:\nsrc/main.rs\n"),
        "{project}"
    );

    // The same repository indexed elsewhere gives the same summaries.
    let (_, again, again_s) = index(home_b.path(), repo.path());
    assert_eq!(again.summaries, pack.summaries);
    assert_eq!(again_s, s);

    // One file changes: only its summary is made again.
    write(
        repo.path(),
        "src/main.rs",
        "//! The binary.\nfn main() {\n    println!(\"bye\");\n}\n",
    );
    let (report, changed, changed_s) = index(home_a.path(), repo.path());
    assert_eq!(
        (report.summaries.reused, report.summaries.extracted),
        (4, 1),
        "{:?}",
        report.summaries
    );
    let i = changed
        .files
        .iter()
        .position(|f| f.path == "src/config.rs")
        .unwrap();
    assert_eq!(changed_s.file(i as u32).unwrap().summary, config.summary);
    let i = changed
        .files
        .iter()
        .position(|f| f.path == "src/main.rs")
        .unwrap();
    assert_eq!(changed_s.file(i as u32).unwrap().line, "The binary.");
    assert!(
        changed_s
            .dir("src")
            .unwrap()
            .summary
            .text
            .contains("main.rs  (")
    );
}
