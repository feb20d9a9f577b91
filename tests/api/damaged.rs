//! Chunk texts are read by byte range from content-addressed segments and checked against the
//! sha256 their version records: a segment whose bytes changed, that was cut short or that
//! is gone is an error naming the object, never a wrong answer; and a warm answer reads
//! nothing from storage.

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
}
