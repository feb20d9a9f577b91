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
