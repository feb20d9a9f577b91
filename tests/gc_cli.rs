//! `ctxgate gc` through the real binary: old versions and the objects only they used go, the
//! current version still answers, shared segments stay, a fresh unreferenced upload is spared
//! by the grace period, and a second run has nothing left to do.

mod common;

use common::{Env, json, stderr};

fn objects(env: &Env) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![env.home.path().join("objects")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn gc_deletes_old_versions_and_keeps_what_the_current_one_needs() {
    let env = Env::new();
    env.sample();
    let repo = env.repo_arg();
    let index = |env: &Env| {
        let out = env.run(&["index", &repo, "--format", "json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)
    };
    let first = index(&env);
    for i in 0..3 {
        env.write(
            &format!("src/extra{i}.rs"),
            format!("/// Extra {i}.\npub fn extra_{i}() -> u32 {{ {i} }}\n"),
        );
        index(&env);
    }
    let before = objects(&env).len();
    let manifests = |env: &Env| {
        objects(env)
            .iter()
            .filter(|p| p.ends_with("manifest.json"))
            .count()
    };
    assert_eq!(manifests(&env), 4);

    // A dry run deletes nothing.
    let out = env.run(&[
        "gc",
        "--keep",
        "1",
        "--grace",
        "0s",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["deleted_versions"], 2);
    assert_eq!(objects(&env).len(), before);

    // A segment no version names, just written: an upload in flight. The grace keeps it.
    let project = first["project"]["id"].as_str().unwrap();
    let seg_dir = env
        .home
        .path()
        .join(format!("objects/org/local/project/{project}/segments"));
    std::fs::write(seg_dir.join("inflight.seg"), b"not yet named").unwrap();
    let out = env.run(&["gc", "--keep", "1", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    // Versions 1 and 2 were superseded seconds ago: readers may hold them, so all are kept.
    assert_eq!(report["deleted_versions"], 0, "{report}");
    assert!(seg_dir.join("inflight.seg").exists());

    let out = env.run(&["gc", "--keep", "1", "--grace", "0s", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["deleted_versions"], 2, "{report}");
    assert_eq!(
        report["projects"][0]["kept_versions"],
        serde_json::json!([3, 4])
    );
    assert!(report["bytes_freed"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(manifests(&env), 2);
    assert!(!seg_dir.join("inflight.seg").exists(), "an old orphan goes");

    // The current version answers, its segments intact.
    let out = env.assemble(&["--query", "extra 2", "--budget", "4000", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(common::stdout(&out).contains("extra_2"));

    // Nothing left to do.
    let out = env.run(&["gc", "--keep", "1", "--grace", "0s", "--format", "json"]);
    let report = json(&out);
    assert_eq!(report["deleted_objects"], 0, "{report}");

    // Text output names the totals.
    let out = env.run(&["gc", "--keep", "0", "--grace", "0s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        common::stdout(&out).contains("deleted 1 versions"),
        "{}",
        common::stdout(&out)
    );
}

/// Two processes at once: an indexer publishing version after version while `gc --keep 0
/// --grace 0s` runs over and over. The project lock orders them; whichever waits is refused
/// with `project_busy` and tries again. Nothing the current version names is ever deleted:
/// after every publish the version answers, and at the end every object its manifest names
/// exists.
#[test]
fn gc_racing_an_indexer_loses_nothing() {
    let env = Env::new();
    env.sample();
    let repo = env.repo_arg();
    // A refusal because the other process holds the lock: wait a moment and try again.
    let busy = |out: &std::process::Output| {
        let refused = !out.status.success()
            && (stderr(out).contains("project_busy")
                || common::stdout(out).contains("project_busy"));
        if refused {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        refused
    };
    let first = env.run(&["index", &repo, "--format", "json"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let project = json(&first)["project"]["id"].as_str().unwrap().to_string();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (collections, refusals) = std::thread::scope(|s| {
        let gc = s.spawn(|| {
            let (mut ran, mut refused) = (0, 0);
            while !done.load(std::sync::atomic::Ordering::SeqCst) || ran == 0 {
                let out = env.run(&["gc", "--keep", "0", "--grace", "0s", "--format", "json"]);
                if busy(&out) {
                    refused += 1;
                    continue;
                }
                assert!(out.status.success(), "gc: {}", stderr(&out));
                ran += 1;
            }
            (ran, refused)
        });
        for i in 0..8 {
            env.write(
                &format!("src/race{i}.rs"),
                format!("/// Race {i}.\npub fn race_marker_{i}() -> u32 {{ {i} }}\n"),
            );
            loop {
                let out = env.run(&["index", &repo, "--format", "json"]);
                if busy(&out) {
                    continue;
                }
                assert!(out.status.success(), "index {i}: {}", stderr(&out));
                break;
            }
            // `assemble` brings the index up to date first, under the same lock.
            let out = loop {
                let out = env.assemble(&[
                    "--query",
                    &format!("race marker {i}"),
                    "--budget",
                    "4000",
                    "--format",
                    "json",
                ]);
                if !busy(&out) {
                    break out;
                }
            };
            assert!(out.status.success(), "after publish {i}: {}", stderr(&out));
            assert!(common::stdout(&out).contains(&format!("race_marker_{i}")));
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        gc.join().unwrap()
    });
    eprintln!("gc ran {collections} times beside the indexer, refused {refusals} times");
    assert!(collections > 0, "gc ran ({refusals} refusals)");
    // Every object the current manifest names is there.
    let root = env.home.path().join("objects");
    let manifests: Vec<_> = objects(&env)
        .into_iter()
        .filter(|p| p.ends_with("manifest.json") && p.to_string_lossy().contains(&project))
        .collect();
    let newest = manifests.iter().max().expect("a manifest");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(newest).unwrap()).unwrap();
    assert!(root.join(m["pack_key"].as_str().unwrap()).exists());
    for key in m["segment_keys"].as_array().unwrap() {
        assert!(
            root.join(key.as_str().unwrap()).exists(),
            "{key} was deleted"
        );
    }
}
