//! Chunk texts are stored in bounded segments: a repository larger than the cap publishes
//! several, none over it, and every chunk's text is found where its record says.

use std::path::Path;

use ctxgate_indexer::pipeline::{IndexOptions, NoProgress, SEGMENT_CAP, index_repo, open_current};
use ctxgate_indexer::store::{LOCAL_ORG, Store};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn a_repository_over_the_cap_is_split_into_bounded_segments() {
    let repo = tempfile::tempdir().unwrap();
    // About 1.5 caps of distinct Rust, in files of ~64 KiB.
    let mut total = 0;
    let mut n = 0;
    while total < SEGMENT_CAP * 3 / 2 {
        let mut text = String::new();
        for f in 0..600 {
            text.push_str(&format!(
                "/// Function {f} of module {n}.\npub fn module_{n}_function_{f}(value: u64) -> u64 {{\n    value.wrapping_mul({f}).rotate_left({n})\n}}\n\n"
            ));
        }
        total += text.len();
        write(repo.path(), &format!("src/m{n}.rs"), &text);
        n += 1;
    }
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let report = index_repo(&store, repo.path(), &IndexOptions::default(), &NoProgress).unwrap();
    let open = open_current(&store, LOCAL_ORG, &report.project.id)
        .unwrap()
        .unwrap();
    let keys = &open.manifest.segment_keys;
    assert!(keys.len() >= 2, "{} segments", keys.len());
    let segments: Vec<Vec<u8>> = keys.iter().map(|k| store.get_object(k).unwrap()).collect();
    for s in &segments {
        assert!(s.len() <= SEGMENT_CAP, "a segment of {} bytes", s.len());
    }
    for c in &open.pack.chunks {
        let seg = &segments[c.segment as usize];
        let text =
            &seg[c.segment_offset as usize..(u64::from(c.segment_offset) + c.len()) as usize];
        assert!(
            std::str::from_utf8(text)
                .unwrap()
                .contains("pub fn module_")
        );
    }
}
