//! `ctxgate project reindex`: a registered folder project follows its files from the CLI.

mod common;

use common::{Env, json, stderr};

#[test]
fn project_reindex_publishes_only_what_changed() {
    let env = Env::new();
    env.sample();
    let ok = |args: &[&str]| {
        let out = env.run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        json(&out)
    };
    ok(&["org", "create", "acme", "--format", "json"]);
    let repo = env.repo_arg();
    let added = ok(&[
        "project", "add", "--org", "acme", "--name", "core", "--format", "json", &repo,
    ]);
    let v1 = added["current_version"].as_u64().unwrap();

    let same = ok(&[
        "project", "reindex", "--org", "acme", "core", "--format", "json",
    ]);
    assert_eq!(same["changed"], false, "{same}");
    assert_eq!(same["project"]["current_version"].as_u64(), Some(v1));

    env.write(
        "src/refund.rs",
        "/// Gives back unused tokens.\npub fn refund(n: u64) -> u64 { n }\n",
    );
    let moved = ok(&[
        "project", "reindex", "--org", "acme", "core", "--format", "json",
    ]);
    assert_eq!(moved["changed"], true, "{moved}");
    assert_eq!(moved["previous_version"].as_u64(), Some(v1));
    assert!(moved["project"]["current_version"].as_u64().unwrap() > v1);

    // By id as well as by name; text output names both versions.
    let id = added["id"].as_str().unwrap();
    env.write(
        "src/refund.rs",
        "/// Gives back unused tokens.\npub fn refund(n: u64) -> u64 { n + 0 }\n",
    );
    let out = env.run(&["project", "reindex", "--org", "acme", id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        common::stdout(&out).contains(" -> "),
        "{}",
        common::stdout(&out)
    );

    // Another organisation's name space does not have it.
    ok(&["org", "create", "other", "--format", "json"]);
    let out = env.run(&[
        "project", "reindex", "--org", "other", "core", "--format", "json",
    ]);
    assert!(!out.status.success());
    let err = json(&out);
    assert_eq!(err["error"]["code"], "project_not_found", "{err}");
}

/// The command a hint prints, between backticks after `with`, as arguments.
fn hinted(message: &str, prefix: &str) -> Vec<String> {
    let at = message
        .find(prefix)
        .unwrap_or_else(|| panic!("no `{prefix}` in {message}"));
    let rest = &message[at..];
    let end = rest.find('`').unwrap_or(rest.len());
    rest[..end]
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

#[test]
fn hints_print_commands_that_run_as_printed() {
    let env = Env::new();
    env.sample();
    // A key for an organisation that does not exist: the hint creates it.
    let out = env.run(&["key", "create", "--org", "nobody"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let create = hinted(&stderr(&out), "ctxgate org create");
    let args: Vec<&str> = create.iter().map(String::as_str).collect();
    assert!(env.run(&args).status.success());
    assert!(
        env.run(&["key", "create", "--org", "nobody"])
            .status
            .success()
    );
    // A project added twice: the hint re-indexes it.
    let repo = env.repo_arg();
    let add = ["project", "add", "--org", "nobody", "--name", "core", &repo];
    assert!(env.run(&add).status.success());
    let out = env.run(&add);
    assert!(!out.status.success());
    let reindex = hinted(&stderr(&out), "ctxgate project reindex");
    let args: Vec<&str> = reindex.iter().map(String::as_str).collect();
    let out = env.run(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
}
