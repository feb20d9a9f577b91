//! Chunk texts are read by byte range from content-addressed segments and checked against the
//! sha256 their version records: a segment whose bytes changed, that was cut short or that
//! is gone is an error naming the object, never a wrong answer; and a warm answer reads
//! nothing from storage. The same holds for postings kept in segments (a large index's).

use std::path::{Path, PathBuf};

use serde_json::json;

use super::host::{Host, NativeHost, org_with_key, post};

fn segments(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![home.join("objects")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "seg") {
                out.push(p);
            }
        }
    }
    out
}

pub fn run() {
    let host = NativeHost::start();
    let key = org_with_key(&host, "dmg", json!({}));
    let dir = super::host::ledger_repo();
    host.publish("dmg", "core", dir.path());
    let segs = segments(host.home.path());
    assert_eq!(segs.len(), 1, "{segs:?}");
    let seg = &segs[0];
    let name = seg.file_name().unwrap().to_string_lossy().into_owned();
    let good = std::fs::read(seg).unwrap();
    let ask = |query: &str| {
        post(
            &host,
            "/v1/context",
            Some(&key),
            &json!({ "project": "core", "query": query, "budget": 2000 }),
        )
    };

    // One byte changed, same length: the checksum catches it.
    let mut flipped = good.clone();
    flipped[10] ^= 0x20;
    std::fs::write(seg, &flipped).unwrap();
    let r = ask("how are tokens reserved");
    assert_eq!((r.status, r.code()), (500, "index_corrupt"), "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&name) && message.contains("checksum"),
        "{message}"
    );

    // Cut short.
    std::fs::write(seg, &good[..good.len() / 2]).unwrap();
    let r = ask("how are tokens reserved");
    assert_eq!((r.status, r.code()), (500, "index_corrupt"), "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&name) && message.contains("truncated"),
        "{message}"
    );

    // Gone.
    std::fs::remove_file(seg).unwrap();
    let r = ask("how are tokens reserved");
    assert_eq!((r.status, r.code()), (500, "index_corrupt"), "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&name) && message.contains("missing"),
        "{message}"
    );

    // Restored: answered, the texts read once, then served from memory.
    std::fs::write(seg, &good).unwrap();
    let first = ask("how are tokens reserved");
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(
        first.body["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("checked_sub"))
    );
    assert!(
        first
            .storage_read
            .is_some_and(|b| b >= good.len() as u64 / 2),
        "{:?}",
        first.storage_read
    );
    let warm = ask("how are tokens reserved");
    assert_eq!(warm.status, 200, "{}", warm.body);
    assert_eq!(warm.storage_read, Some(0));
    assert_eq!(warm.body["prompt"], first.body["prompt"]);

    postings_read_by_range(&host, &key, &first.body, &segs);
}

/// The same repository indexed with its postings in a segment of their own (as a large
/// repository's are) gives the same pieces; damaged postings are an error naming the segment.
fn postings_read_by_range(
    host: &NativeHost,
    key: &str,
    inline_answer: &serde_json::Value,
    text_segments: &[PathBuf],
) {
    let dir = super::host::ledger_repo();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args([
            "project", "add", "--org", "dmg", "--name", "split", "--format", "json",
        ])
        .arg(dir.path())
        .env("CTXGATE_HOME", host.home.path())
        .env("CTXGATE_LISTS_INLINE_MAX", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let texts: Vec<_> = text_segments
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    // The postings, the blocks of their terms (and the symbol users with theirs, when the
    // repository has any), the summary texts and the files' one-line descriptions.
    let lists: Vec<PathBuf> = segments(host.home.path())
        .into_iter()
        .filter(|p| {
            !text_segments.contains(p) && !texts.contains(&p.file_name().unwrap().to_owned())
        })
        .collect();
    assert!(
        lists.len() >= 4,
        "postings, terms, summary texts, lines: {lists:?}"
    );
    let names: Vec<String> = lists
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let good: Vec<Vec<u8>> = lists.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let ask = || {
        post(
            host,
            "/v1/context",
            Some(key),
            &json!({ "project": "split", "query": "how are tokens reserved", "budget": 2000 }),
        )
    };
    // Damaged before any reader cached them: an error naming the segment.
    for (seg, bytes) in lists.iter().zip(&good) {
        let flipped: Vec<u8> = bytes.iter().map(|b| b ^ 0x01).collect();
        std::fs::write(seg, &flipped).unwrap();
    }
    let r = ask();
    assert_eq!((r.status, r.code()), (500, "index_corrupt"), "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        names.iter().any(|n| message.contains(n)) && message.contains("checksum"),
        "{message}"
    );
    // Restored: the same pieces as the index that keeps its postings in the pack.
    for (seg, bytes) in lists.iter().zip(&good) {
        std::fs::write(seg, bytes).unwrap();
    }
    let first = ask();
    assert_eq!(first.status, 200, "{}", first.body);
    // The same pieces; each links to its own folder's file.
    let without_links = |v: &serde_json::Value| {
        let mut v = v.clone();
        for p in v.as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("source_url");
        }
        v
    };
    assert_eq!(
        without_links(&first.body["pieces"]),
        without_links(&inline_answer["pieces"])
    );
    assert!(
        first.storage_read.is_some_and(|b| b > 0),
        "{:?}",
        first.storage_read
    );
    let warm = ask();
    assert_eq!(warm.storage_read, Some(0), "postings and texts are cached");
    assert_eq!(
        without_links(&warm.body["pieces"]),
        without_links(&inline_answer["pieces"])
    );
}
