//! Served folder projects follow their files: an explicit re-index (`POST
//! /v1/projects/{id}/reindex`) and `ctxgate serve --watch` each publish a new version that the
//! next answer uses, and a re-index of an unchanged folder publishes nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::host::{Host, NativeHost, get, org_with_key, post, post_fresh};

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The assembled prompt for `query` over project `id`.
fn prompt(host: &dyn Host, key: &str, id: &str, query: &str) -> String {
    let r = post(
        host,
        "/v1/context",
        Some(key),
        &json!({ "project": id, "query": query, "budget": 4000 }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["prompt"].as_str().unwrap().to_string()
}

fn version(host: &dyn Host, key: &str, id: &str) -> Option<u64> {
    let r = get(host, &format!("/v1/projects/{id}"), Some(key));
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["current_version"].as_u64()
}

pub fn run() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    write(
        dir,
        "src/ledger.rs",
        "/// Reserves tokens before work.\npub fn reserve_tokens(n: u64) -> u64 {\n    n\n}\n",
    );
    write(dir, "README.md", "# ledger\nCounts tokens.\n");

    let path = dir.canonicalize().unwrap().to_string_lossy().into_owned();
    let host = NativeHost::start_with(&[
        "--local-root",
        &path,
        "--watch",
        "--watch-debounce-ms",
        "200",
    ]);
    let key = org_with_key(&host, "fresh", json!({}));
    let other = org_with_key(&host, "other", json!({}));
    // A folder outside the root, registered by the operator's CLI: neither watched nor
    // re-indexed by the server.
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "src/lib.rs", "pub fn outside_first() {}\n");
    let published = host.publish("fresh", "outside", outside.path());
    let outside_id = published["id"].as_str().unwrap().to_string();
    let r = post(
        &host,
        "/v1/projects",
        Some(&key),
        &json!({ "name": "ledger", "source": { "kind": "local", "path": path } }),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    let v1 = r.body["current_version"].as_u64().unwrap();

    // Registering it again is a conflict that names the way to refresh it.
    let again = post(
        &host,
        "/v1/projects",
        Some(&key),
        &json!({ "name": "ledger", "source": { "kind": "local", "path": path } }),
    );
    assert_eq!(
        (again.status, again.code()),
        (409, "conflict"),
        "{}",
        again.body
    );
    assert!(
        again.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reindex"),
        "{}",
        again.body
    );

    // Nothing changed: no new version.
    let reindex = format!("/v1/projects/{id}/reindex");
    let r = post(&host, &reindex, Some(&key), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["changed"], json!(false), "{}", r.body);
    assert_eq!(r.body["project"]["current_version"].as_u64(), Some(v1));

    // Another organisation cannot see, let alone re-index, it.
    let r = post(&host, &reindex, Some(&other), &json!({}));
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );
    let r = post(&host, &reindex, None, &json!({}));
    assert_eq!((r.status, r.code()), (401, "missing_api_key"), "{}", r.body);

    // An edit, then an explicit re-index: the next answer quotes the new code.
    assert!(!prompt(&host, &key, &id, "settle_refund_tokens").contains("fn settle_refund_tokens"));
    write(
        dir,
        "src/settle.rs",
        "/// Gives back what a call did not use.\npub fn settle_refund_tokens(reserved: u64, used: u64) -> u64 {\n    reserved - used\n}\n",
    );
    // The watcher may already have published it; either way the version moved on.
    let r = post(&host, &reindex, Some(&key), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v2 = r.body["project"]["current_version"].as_u64().unwrap();
    assert!(v2 > v1, "{}", r.body);
    assert!(prompt(&host, &key, &id, "settle_refund_tokens").contains("fn settle_refund_tokens"));

    // With --watch, an edit alone is enough; only under the root.
    let outside_v1 = version(&host, &key, &outside_id);
    assert!(outside_v1.is_some());
    write(
        outside.path(),
        "src/more.rs",
        "pub fn outside_second() {}\n",
    );
    write(
        dir,
        "src/audit.rs",
        "/// Appends one call to the audit trail.\npub fn append_audit_record(tokens: u64) {\n    let _ = tokens;\n}\n",
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while version(&host, &key, &id) == Some(v2) {
        assert!(
            Instant::now() < deadline,
            "the watcher never re-indexed the edited folder"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(prompt(&host, &key, &id, "append_audit_record").contains("fn append_audit_record"));
    // Edited at the same moment, the folder outside would have been re-indexed by now (and
    // surely after a few more debounce intervals) if it were watched.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(version(&host, &key, &outside_id), outside_v1);
    let r = post(
        &host,
        &format!("/v1/projects/{outside_id}/reindex"),
        Some(&key),
        &json!({}),
    );
    assert_eq!(
        (r.status, r.code()),
        (403, "source_not_allowed"),
        "{}",
        r.body
    );

    // A deleted file leaves the index with the next version.
    std::fs::remove_file(dir.join("src/settle.rs")).unwrap();
    let r = post(&host, &reindex, Some(&key), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!prompt(&host, &key, &id, "settle_refund_tokens").contains("fn settle_refund_tokens"));
    drop(host);
    cached_pointer();
}

/// The version pointer is cached by the server: a version published by another process (the
/// CLI over the same data directory) is seen once the TTL ends, or at once by a request with
/// `Cache-Control: no-cache`, which also refreshes the cache.
fn cached_pointer() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    write(
        dir,
        "src/lib.rs",
        "/// Adds.\npub fn add_numbers(a: u64, b: u64) -> u64 {\n    a + b\n}\n",
    );
    let root = dir.display().to_string();
    let host = NativeHost::start_with(&["--local-root", &root, "--pointer-ttl-ms", "600000"]);
    let key = org_with_key(&host, "ptr", json!({}));
    let path = dir.canonicalize().unwrap().to_string_lossy().into_owned();
    let r = post(
        &host,
        "/v1/projects",
        Some(&key),
        &json!({ "name": "lib", "source": { "kind": "local", "path": path } }),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let v1 = r.body["current_version"].as_u64().unwrap();
    let body = json!({ "project": "lib", "query": "add numbers", "budget": 2000 });
    let version = |r: &super::host::Reply| {
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["project"]["version"].as_u64().unwrap()
    };
    assert_eq!(version(&post(&host, "/v1/context", Some(&key), &body)), v1);

    write(
        dir,
        "src/sub.rs",
        "/// Subtracts.\npub fn sub_numbers(a: u64, b: u64) -> u64 {\n    a - b\n}\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args([
            "project", "reindex", "--org", "ptr", "lib", "--format", "json",
        ])
        .env("CTXGATE_HOME", host.home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v2 = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["project"]
        ["current_version"]
        .as_u64()
        .unwrap();
    assert!(v2 > v1);

    assert_eq!(
        version(&post(&host, "/v1/context", Some(&key), &body)),
        v1,
        "cached pointer"
    );
    assert_eq!(
        version(&post_fresh(&host, "/v1/context", Some(&key), &body)),
        v2,
        "no-cache"
    );
    assert_eq!(
        version(&post(&host, "/v1/context", Some(&key), &body)),
        v2,
        "refreshed"
    );
}
