//! Push webhooks on `ctxgate serve`, end to end: a project indexed from a local git repository
//! gets a webhook secret; a signed GitHub push of a new commit queues a re-index that publishes
//! the changed file, and `/v1/context` answers with it. Unsigned, wrongly signed, replayed and
//! misdirected deliveries are refused with their codes and change nothing (the version stays,
//! the committed change is not picked up); a GitLab push hook with the secret token works too.
//!
//! The payload builders are shared with the AWS run ([`super::aws`]).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ctxgate_core::webhook::signature::github_signature;
use serde_json::json;

use super::host::{Host, NativeHost, Reply, call_with, get, org_with_key, post, post_fresh};

/// Runs git in `dir` with a fixed identity and `main` as the first branch.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Commits `text` as `path` in `repo` and returns the new commit id.
pub fn commit_file(repo: &Path, path: &str, text: &str) -> String {
    std::fs::write(repo.join(path), text).unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", path]);
    git(repo, &["rev-parse", "HEAD"])
}

/// GitHub's push event body for `url`'s `git_ref` moving to `after` (default branch `main`).
pub fn github_push(url: &str, git_ref: &str, after: &str) -> String {
    json!({
        "ref": git_ref, "before": "1".repeat(40), "after": after, "deleted": false,
        "repository": {
            "name": "repo", "full_name": "acme/repo", "default_branch": "main",
            "clone_url": url, "html_url": "https://github.com/acme/repo"
        },
        "pusher": {"name": "t"},
        "head_commit": {"id": after, "message": "change"}
    })
    .to_string()
}

/// GitLab's push hook body for `url`'s `git_ref` moving to `after`.
fn gitlab_push(url: &str, git_ref: &str, after: &str) -> String {
    json!({
        "object_kind": "push", "event_name": "push", "ref": git_ref,
        "before": "1".repeat(40), "after": after, "checkout_sha": after,
        "project": {
            "path_with_namespace": "acme/repo", "default_branch": "main",
            "git_http_url": url, "web_url": "https://gitlab.example/acme/repo"
        },
        "commits": [], "total_commits_count": 1
    })
    .to_string()
}

/// A GitHub delivery of `body` for `project`, signed with `secret` when there is one.
pub fn send_github(
    host: &dyn Host,
    project: &str,
    event: &str,
    delivery: &str,
    body: &str,
    secret: Option<&str>,
) -> Reply {
    let signature = secret.map(|s| github_signature(s.as_bytes(), body.as_bytes()));
    let mut headers = vec![("X-GitHub-Event", event), ("X-GitHub-Delivery", delivery)];
    if let Some(s) = &signature {
        headers.push(("X-Hub-Signature-256", s));
    }
    call_with(
        host,
        "POST",
        &format!("/v1/webhooks/github/{project}"),
        None,
        Some(body),
        "application/json",
        &headers,
    )
}

fn send_gitlab(host: &dyn Host, project: &str, delivery: &str, body: &str, token: &str) -> Reply {
    call_with(
        host,
        "POST",
        &format!("/v1/webhooks/gitlab/{project}"),
        None,
        Some(body),
        "application/json",
        &[
            ("X-Gitlab-Event", "Push Hook"),
            ("X-Gitlab-Event-UUID", delivery),
            ("X-Gitlab-Token", token),
        ],
    )
}

/// The project's published version.
pub fn version(host: &dyn Host, key: &str, project: &str) -> Option<u64> {
    let r = get(host, &format!("/v1/projects/{project}"), Some(key));
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["current_version"].as_u64()
}

/// Waits until the project's version is past `before` and returns it.
pub fn wait_for_version(host: &dyn Host, key: &str, project: &str, before: Option<u64>) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = version(host, key, project);
        if let Some(v) = now
            && Some(v) > before
        {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{project} still at {now:?} two minutes after the push"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether `/v1/context` (past the cached version pointer) delivers a piece of `path` for
/// `query`.
pub fn context_has(host: &dyn Host, key: &str, project: &str, query: &str, path: &str) -> bool {
    let body = json!({"project": project, "query": query, "budget": 3000});
    let r = post_fresh(host, "/v1/context", Some(key), &body);
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["pieces"]
        .as_array()
        .is_some_and(|p| p.iter().any(|p| p["path"] == path))
}

/// Asserts that each delivery in `refused` is answered `(status, code)` and that, a moment
/// later, `project` is still at `version` without `path`.
pub fn assert_refused_and_unchanged(
    host: &dyn Host,
    key: &str,
    project: &str,
    refused: Vec<(Reply, u16, &str)>,
    version_now: Option<u64>,
    query: &str,
    path: &str,
) {
    for (i, (r, status, code)) in refused.iter().enumerate() {
        assert_eq!(
            (r.status, r.code()),
            (*status, *code),
            "delivery {i}: {}",
            r.body
        );
    }
    // A job would have fetched and published by now (the repository is a few files).
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        version(host, key, project),
        version_now,
        "a refused delivery re-indexed"
    );
    assert!(
        !context_has(host, key, project, query, path),
        "{path} was picked up"
    );
}

pub fn run() {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    commit_file(
        repo.path(),
        "ledger.rs",
        "/// Reserves tokens before work.\npub fn reserve(left: u64, asked: u64) -> Option<u64> {\n    left.checked_sub(asked)\n}\n",
    );
    let url = format!("file://{}", repo.path().display());
    // The repository and the folder below are temporary folders: the temporary folder is the root.
    let tmp = std::env::temp_dir().display().to_string();
    let host = NativeHost::start_with(&["--local-root", &tmp]);
    let key = org_with_key(&host, "hooks", json!({}));
    let other = org_with_key(&host, "otherhooks", json!({}));
    let r = post(
        &host,
        "/v1/projects",
        Some(&key),
        &json!({"name": "hooked", "source": {"kind": "git", "url": url}}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    let v1 = r.body["current_version"].as_u64();
    assert!(v1.is_some(), "{}", r.body);
    // A folder project takes no webhook: no push concerns it.
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("a.rs"), "pub fn a() {}\n").unwrap();
    let r = post(
        &host,
        "/v1/projects",
        Some(&key),
        &json!({"name": "folder", "source": {"kind": "local", "path": folder.path()}}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = post(&host, "/v1/projects/folder/webhook", Some(&key), &json!({}));
    assert_eq!(
        (r.status, r.code()),
        (409, "webhook_source_unsupported"),
        "{}",
        r.body
    );

    // The secret is answered once; another org cannot see the project, let alone hook it.
    let r = post(
        &host,
        &format!("/v1/projects/{id}/webhook"),
        Some(&other),
        &json!({}),
    );
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );
    let r = call_with(
        &host,
        "POST",
        "/v1/projects/hooked/webhook",
        None,
        None,
        "",
        &[],
    );
    assert_eq!((r.status, r.code()), (401, "missing_api_key"), "{}", r.body);
    let r = post(&host, "/v1/projects/hooked/webhook", Some(&key), &json!({}));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["github_path"], format!("/v1/webhooks/github/{id}"));
    let first_secret = r.body["secret"].as_str().unwrap().to_string();
    // Rotated: the first secret stops working.
    let r = post(&host, "/v1/projects/hooked/webhook", Some(&key), &json!({}));
    assert_eq!(r.status, 201, "{}", r.body);
    let secret = r.body["secret"].as_str().unwrap().to_string();
    assert_ne!(secret, first_secret);
    assert_eq!(secret.len(), 64);
    for path in ["/v1/projects/hooked", "/v1/projects"] {
        let shown = get(&host, path, Some(&key));
        assert!(
            !shown.body.to_string().contains(&secret),
            "{path} shows the secret"
        );
    }
    // A failed signature is answered alike for this project, the folder and none.
    let folder_id = get(&host, "/v1/projects/folder", Some(&key)).body["id"]
        .as_str()
        .unwrap()
        .to_string();
    super::cases::webhook_refusals_are_one(&host, Some(&id), &folder_id);

    let query = "webhook_pushed_marker";
    let marker = "pushed.rs";
    let after = commit_file(
        repo.path(),
        marker,
        "/// Arrived with a push.\npub fn webhook_pushed_marker() -> u32 {\n    7\n}\n",
    );
    let body = github_push(&url, "refs/heads/main", &after);
    let wrong = "0".repeat(64);
    let refused = vec![
        (
            send_github(&host, &id, "push", "d-unsigned", &body, None),
            401,
            "webhook_signature_missing",
        ),
        (
            send_github(&host, &id, "push", "d-wrong", &body, Some(&wrong)),
            401,
            "webhook_signature_invalid",
        ),
        (
            send_github(&host, &id, "push", "d-old", &body, Some(&first_secret)),
            401,
            "webhook_signature_invalid",
        ),
        // A project that does not exist, or has no webhook, is answered as a wrong signature.
        (
            send_github(
                &host,
                "p0000000000000000",
                "push",
                "d-none",
                &body,
                Some(&secret),
            ),
            401,
            "webhook_signature_invalid",
        ),
        (
            send_github(&host, "not.an-id", "push", "d-bad", &body, Some(&secret)),
            401,
            "webhook_signature_invalid",
        ),
        (
            send_gitlab(
                &host,
                &id,
                "d-gl-wrong",
                &gitlab_push(&url, "refs/heads/main", &after),
                &wrong,
            ),
            401,
            "webhook_signature_invalid",
        ),
        (
            send_github(&host, &id, "push", "", &body, Some(&secret)),
            400,
            "webhook_delivery_invalid",
        ),
        (
            send_github(
                &host,
                &id,
                "push",
                "d-form",
                "payload=%7B%7D",
                Some(&secret),
            ),
            400,
            "webhook_payload_invalid",
        ),
        (
            send_github(
                &host,
                &id,
                "push",
                "d-other-repo",
                &github_push(
                    "https://github.com/acme/other.git",
                    "refs/heads/main",
                    &after,
                ),
                Some(&secret),
            ),
            422,
            "webhook_repository_mismatch",
        ),
    ];
    assert_refused_and_unchanged(&host, &key, "hooked", refused, v1, query, marker);

    // Signed, but nothing the project follows moved: answered 200, nothing done.
    let r = send_github(
        &host,
        &id,
        "ping",
        "d-ping",
        &json!({"zen": "z", "repository": {"clone_url": url}}).to_string(),
        Some(&secret),
    );
    assert_eq!(
        (r.status, r.body["status"].clone()),
        (200, json!("pong")),
        "{}",
        r.body
    );
    let dev = github_push(&url, "refs/heads/dev", &after);
    let r = send_github(&host, &id, "push", "d-dev", &dev, Some(&secret));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["reason"], "ref_not_watched", "{}", r.body);
    let r = send_github(&host, &id, "issues", "d-issue", "{}", Some(&secret));
    assert_eq!(
        (r.status, r.body["reason"].clone()),
        (200, json!("event_not_push")),
        "{}",
        r.body
    );
    assert_refused_and_unchanged(&host, &key, "hooked", Vec::new(), v1, query, marker);

    // The signed push: queued at once, published shortly after, and answered from.
    let r = send_github(&host, &id, "push", "d-push", &body, Some(&secret));
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["status"], "queued");
    assert_eq!(r.body["jobs"][0]["project"], id.as_str());
    assert_eq!(r.body["jobs"][0]["commit"], after.as_str());
    let v2 = wait_for_version(&host, &key, "hooked", v1);
    assert!(context_has(&host, &key, "hooked", query, marker));
    let r = post(
        &host,
        "/v1/context",
        Some(&other),
        &json!({"project": "hooked", "query": query, "budget": 3000}),
    );
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );

    // A second commit, then replays of the first push: refused, and the commit stays unseen.
    let second = "again.rs";
    let after2 = commit_file(
        repo.path(),
        second,
        "/// The second push.\npub fn webhook_second_marker() -> u32 {\n    8\n}\n",
    );
    let refused = vec![
        (
            send_github(&host, &id, "push", "d-push", &body, Some(&secret)),
            409,
            "webhook_replayed",
        ),
        (
            send_github(&host, &id, "push", "d-push-renamed", &body, Some(&secret)),
            409,
            "webhook_replayed",
        ),
    ];
    assert_refused_and_unchanged(
        &host,
        &key,
        "hooked",
        refused,
        Some(v2),
        "webhook_second_marker",
        second,
    );

    // GitLab's push hook with the secret token.
    let gl = gitlab_push(&url, "refs/heads/main", &after2);
    let r = send_gitlab(&host, &id, "d-gl-push", &gl, &secret);
    assert_eq!(r.status, 202, "{}", r.body);
    wait_for_version(&host, &key, "hooked", Some(v2));
    assert!(context_has(
        &host,
        &key,
        "hooked",
        "webhook_second_marker",
        second
    ));

    // Deleted: deliveries are refused from now on.
    let r = call_with(
        &host,
        "DELETE",
        "/v1/projects/hooked/webhook",
        Some(&key),
        None,
        "",
        &[],
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let r = send_github(&host, &id, "push", "d-after-delete", &dev, Some(&secret));
    assert_eq!(
        (r.status, r.code()),
        (401, "webhook_signature_invalid"),
        "{}",
        r.body
    );
}
