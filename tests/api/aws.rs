//! End to end on AWS protocols: the real Lambda binary indexes a real repository (ctxgate's own
//! core sources, as a git repository) into moto's S3 and DynamoDB, and the Worker under workerd,
//! configured with `CTXGATE_STORE`/`CTXGATE_TABLE`, answers `POST /v1/context` from what was
//! published (SigV4-signed fetches), scoped to the project's organisation. A second index run
//! publishes version 2 and the Worker picks it up without a restart.

#[allow(dead_code)]
#[path = "../../indexer/tests/support/moto.rs"]
pub mod moto;
#[allow(dead_code)]
#[path = "../../indexer/tests/support/repo.rs"]
pub mod repo;
#[allow(dead_code)]
#[path = "../../indexer/tests/support/runtime_api.rs"]
pub mod runtime_api;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ctxgate_core::tokens::Encoding;
use ctxgate_indexer::aws::{AwsStore, S3Location};
use repo::git;
use serde_json::{Value, json};

use super::host::{NativeHost, get, org_with_key, post, post_fresh};
use super::worker::WorkerHost;
use super::{cases, sources, webhooks};

const BUCKET: &str = "ctxgate-e2e";
const TABLE: &str = "ctxgate-e2e";

/// The Lambda binary `cargo test --workspace` builds beside this test's binary.
pub fn lambda_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap();
    let bin = dir.join("ctxgate-lambda");
    assert!(
        bin.exists(),
        "{} is missing: run the tests with `cargo test --workspace` (it builds the indexer's \
         binaries) or `cargo build --release -p ctxgate-indexer` first",
        bin.display()
    );
    bin
}

/// Whether the answer delivers a piece of `path` (the prompt also quotes the query).
fn has_piece(answer: &Value, path: &str) -> bool {
    answer["pieces"]
        .as_array()
        .is_some_and(|p| p.iter().any(|p| p["path"] == path))
}

fn invoke(api: &runtime_api::RuntimeApi, id: &str, event: Value) -> Value {
    api.invoke(id, event);
    match api.outcome(id, Duration::from_secs(300)) {
        Some(runtime_api::Outcome::Response(v)) => v,
        other => panic!("{id}: {other:?}"),
    }
}

pub fn run() {
    if !WorkerHost::available() {
        return;
    }
    let Some(moto) = moto::Moto::start() else {
        return;
    };
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let store_url = format!("s3://{BUCKET}/published");
    let store =
        AwsStore::open(S3Location::parse(&store_url).unwrap(), TABLE, cache.path()).unwrap();
    store.init().unwrap();

    // Index with the real Lambda binary.
    let repo = tempfile::tempdir().unwrap();
    repo::committed_copy(&moto::workspace().join("shared/src"), repo.path());
    let api = runtime_api::RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    // Each function process gets its own Runtime API endpoint: a killed process's pending
    // `/next` stays parked on the endpoint it polled (the server does not see the dead
    // connection), and would take the next event queued there and lose it.
    let function = |api: &runtime_api::RuntimeApi, crash_at: Option<&str>| {
        let mut cmd = Command::new(lambda_binary());
        cmd.envs(moto.env())
            .env("AWS_LAMBDA_RUNTIME_API", &api.address)
            .env("AWS_LAMBDA_FUNCTION_NAME", "ctxgate-indexer")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("CTXGATE_STORE", &store_url)
            .env("CTXGATE_TABLE", TABLE)
            .env("CTXGATE_WORK_DIR", work.path())
            .env("CTXGATE_ALLOW_LOCAL_SOURCES", "1")
            // The tarball below is served from loopback over plain http.
            .env("CTXGATE_ALLOW_PRIVATE_SOURCES", "1")
            .env("CTXGATE_LOCK_TTL_SECS", "2")
            .env("RUST_LOG", "warn");
        if let Some(point) = crash_at {
            cmd.env("CTXGATE_CRASH_AT", point);
        }
        cmd.spawn().unwrap()
    };
    let mut lambda = function(&api, None);
    let url = format!("file://{}", repo.path().display());
    let event = json!({"action": "index", "org": "acmeaws", "project": "core",
                       "source": {"kind": "git", "url": url}});
    let job = invoke(&api, "e2e-1", event.clone());
    assert_eq!(job["state"], "published", "{job}");
    native_serve_over_aws(&moto, &store_url);

    // The Worker reads S3 and DynamoDB; orgs and keys stay in its Durable Objects.
    // It also starts the indexer when a project is registered, through Lambda's `Invoke` API,
    // which `service` speaks (and hands the event to a function process polling it).
    let service = runtime_api::RuntimeApi::start();
    let mut vars: Vec<(&str, String)> = moto.env().into_iter().collect();
    vars.push(("CTXGATE_STORE", store_url.clone()));
    vars.push(("CTXGATE_TABLE", TABLE.to_string()));
    vars.push(("CTXGATE_INDEXER_FUNCTION", "ctxgate-indexer".to_string()));
    vars.push((
        "AWS_ENDPOINT_URL_LAMBDA",
        format!("http://{}", service.address),
    ));
    let worker = WorkerHost::start_with_vars(&vars);
    let key = org_with_key(&worker, "acmeaws", json!({}));
    let other = org_with_key(&worker, "otheraws", json!({}));

    let projects = get(&worker, "/v1/projects", Some(&key));
    assert_eq!(projects.status, 200, "{}", projects.body);
    let listed = projects.body["projects"]
        .as_array()
        .expect("a project list");
    assert_eq!(listed.len(), 1, "{}", projects.body);
    assert_eq!(listed[0]["name"], "core");
    assert_eq!(listed[0]["current_version"], 1);

    let body = json!({"project": "core", "query": "how does the quota ledger reserve and settle tokens", "budget": 3000});
    let r = post(&worker, "/v1/context", Some(&key), &body);
    assert_exact_within(&r, 3000);
    let paths: Vec<&str> = r.body["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert!(paths.iter().any(|p| p.starts_with("quota")), "{paths:?}");

    // Another org sees nothing of it.
    let r = post(&worker, "/v1/context", Some(&other), &body);
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );
    let r = get(&worker, "/v1/projects", Some(&other));
    assert_eq!(
        r.body["projects"].as_array().map(Vec::len),
        Some(0),
        "{}",
        r.body
    );
    // The Worker registers only network sources: a folder or a `file://` URL would have the
    // indexer read its own disk.
    for source in [
        json!({"kind": "local", "path": "/etc"}),
        json!({"kind": "git", "url": format!("file://{}", repo.path().display())}),
    ] {
        let body = json!({"name": "x", "source": source});
        let r = post(&worker, "/v1/projects", Some(&key), &body);
        assert_eq!((r.status, r.code()), (403, "source_refused"), "{}", r.body);
    }

    // An index job killed just before it publishes: the Worker goes on serving version 1.
    std::fs::write(
        repo.path().join("aws_marker.rs"),
        "/// Published later.\npub fn aws_e2e_marker_function() {}\n",
    )
    .unwrap();
    git(repo.path(), &["add", "-A"]);
    git(
        repo.path(),
        &["commit", "-qm", "Publish the AWS e2e marker function later"],
    );
    lambda.kill().ok();
    lambda.wait().ok();
    let crash_api = runtime_api::RuntimeApi::start();
    let mut doomed = function(&crash_api, Some("before_publish"));
    crash_api.invoke("e2e-crash", event.clone());
    assert!(!doomed.wait().unwrap().success(), "the job was killed");
    let marker = json!({"project": "core", "query": "aws_e2e_marker_function", "budget": 2000});
    let r = post(&worker, "/v1/context", Some(&key), &marker);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!has_piece(&r.body, "aws_marker.rs"), "{}", r.body);
    let r = get(&worker, "/v1/projects", Some(&key));
    assert_eq!(r.body["projects"][0]["current_version"], 1, "{}", r.body);

    // Once the dead job's lease expires, the next run publishes (version 3: the killed run's
    // version-2 objects are never overwritten) and the Worker serves it without a restart.
    std::thread::sleep(Duration::from_millis(2500));
    let last_api = runtime_api::RuntimeApi::start();
    let mut lambda = function(&last_api, None);
    let job = invoke(&last_api, "e2e-2", event);
    assert_eq!(job["version"], 3, "{job}");
    // Within the pointer's TTL a plain request may still be answered from version 1; this one
    // asks past the cache.
    let r = post_fresh(&worker, "/v1/context", Some(&key), &marker);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(has_piece(&r.body, "aws_marker.rs"), "{}", r.body);
    // The Lambda fetched the repository with its history and published it: the marker's lines
    // were written by a commit worded like the request, the other files' by one that was not.
    let history = |path: &str| {
        r.body["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["path"] == path)
            .map(|p| p["reasoning"]["history"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    assert!(history("aws_marker.rs") > 0.0, "{}", r.body);
    for p in r.body["pieces"].as_array().unwrap() {
        if p["path"] != "aws_marker.rs" {
            assert_eq!(p["reasoning"]["history"], 0.0, "{p}");
        }
    }

    lambda.kill().ok();
    lambda.wait().ok();
    let mut indexer = function(&service, None);
    register_through_the_worker(&worker, &key, &other, &service);
    push_through_the_worker(&worker, &key, &other, &service, repo.path(), &url);
    // The Worker counts index jobs in the org's Durable Object: past the limit, 429.
    let small = tempfile::tempdir().unwrap();
    std::fs::write(small.path().join("lib.rs"), "pub fn job() -> u32 { 1 }\n").unwrap();
    let base = sources::serve(vec![("/jobs.tar.gz", sources::tarball(small.path()))]);
    cases::index_jobs_are_metered(
        &worker,
        "jobsaws",
        json!({"kind": "tarball", "url": format!("{base}/jobs.tar.gz")}),
    );
    indexer.kill().ok();
    indexer.wait().ok();
    drop(worker);
}

/// Waits for the `n`th `Invoke` call `service` accepted, then for the function's answer to it.
fn nth_invocation(service: &runtime_api::RuntimeApi, n: usize) -> runtime_api::Outcome {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let call = loop {
        if let Some(call) = service.invocations().get(n - 1) {
            break call.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no invocation {n}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(call.function, "ctxgate-indexer");
    assert!(
        call.credential.ends_with("/us-east-1/lambda/aws4_request"),
        "{}",
        call.credential
    );
    service
        .outcome(&call.request_id, Duration::from_secs(300))
        .unwrap_or_else(|| panic!("no answer to invocation {n}"))
}

/// `POST /v1/projects` on the Worker registers a tarball for the indexer (202, no version) and
/// starts the indexer function; the Worker then answers from what it published, and the
/// scheduled pass finds the registration too.
fn register_through_the_worker(
    worker: &WorkerHost,
    key: &str,
    other: &str,
    service: &runtime_api::RuntimeApi,
) {
    let base = sources::serve(vec![(
        "/sample.tar.gz",
        sources::tarball(cases::sample_repo()),
    )]);
    let register = |url: String| {
        let body = json!({"name": "sample", "source": {"kind": "tarball", "url": url}});
        post(worker, "/v1/projects", Some(key), &body)
    };
    let query = json!({"project": "sample", "query": "how does the quota ledger reserve and settle tokens", "budget": 3000});

    // A wrong URL first: the job the Worker started fails, the registration stays (never
    // indexed), and registering the name again replaces it.
    let r = register(format!("{base}/missing.tar.gz"));
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body["current_version"].is_null(), "{}", r.body);
    match nth_invocation(service, 1) {
        runtime_api::Outcome::Error { error_type, .. } => {
            assert!(error_type.starts_with("source_"), "{error_type}")
        }
        other => panic!("a missing tarball was indexed: {other:?}"),
    }
    // The console's projects page: the job failed, with its code, and nothing is published.
    let r = get(worker, "/v1/projects/sample/status", Some(key));
    assert_eq!(r.body["last_job"]["state"], "failed", "{}", r.body);
    assert!(
        r.body["last_job"]["error_code"]
            .as_str()
            .is_some_and(|c| c.starts_with("source_")),
        "{}",
        r.body
    );
    assert!(r.body["index"].is_null(), "{}", r.body);
    let r = post(worker, "/v1/context", Some(key), &query);
    assert_eq!(
        (r.status, r.code()),
        (409, "project_not_indexed"),
        "{}",
        r.body
    );
    let r = get(worker, "/v1/projects/sample", Some(other));
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );

    let url = format!("{base}/sample.tar.gz");
    let r = register(url.clone());
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["name"], "sample");
    assert_eq!(r.body["source"], url.as_str());
    match nth_invocation(service, 2) {
        runtime_api::Outcome::Response(job) => assert_eq!(job["state"], "published", "{job}"),
        other => panic!("{other:?}"),
    }
    let r = get(worker, "/v1/projects/sample", Some(key));
    assert_eq!(r.body["current_version"], 1, "{}", r.body);
    let r = get(worker, "/v1/projects/sample/status", Some(key));
    assert_eq!(r.body["last_job"]["state"], "published", "{}", r.body);
    assert_eq!(r.body["index"]["version"], 1, "{}", r.body);
    let r = post(worker, "/v1/context", Some(key), &query);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["path"].as_str().is_some_and(|p| p.starts_with("quota"))),
        "{}",
        r.body
    );
    let r = post(worker, "/v1/context", Some(other), &query);
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );
    // Indexed now: the name is taken.
    let r = register(url);
    assert_eq!((r.status, r.code()), (409, "conflict"), "{}", r.body);

    // The scheduled pass reads the registration the Worker wrote, beside the Lambda's own.
    let scheduled = json!({
        "version": "0", "id": "e2e-pass", "detail-type": "Scheduled Event",
        "source": "aws.events", "account": "123456789012", "time": "2026-11-24T10:00:00Z",
        "region": "us-east-1", "resources": [], "detail": {}
    });
    let pass = invoke(service, "e2e-pass", scheduled);
    assert_eq!(pass["projects"], 2, "{pass}");
    assert_eq!(pass["probe_failures"], json!([]), "{pass}");
    for job in pass["jobs"].as_array().unwrap() {
        assert_ne!(job["state"], "failed", "{pass}");
    }
}

/// A signed GitHub push to the Worker over S3 + DynamoDB: the webhook's secret is kept in
/// DynamoDB, the push invokes the real Lambda binary with the project's index event (through
/// `service`, Lambda's `Invoke` API), and the Worker then answers with the pushed file. Unsigned,
/// wrongly signed and replayed deliveries invoke nothing and leave the version as it was.
fn push_through_the_worker(
    worker: &WorkerHost,
    key: &str,
    other: &str,
    service: &runtime_api::RuntimeApi,
    repo: &Path,
    url: &str,
) {
    let r = post(worker, "/v1/projects/core/webhook", Some(other), &json!({}));
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );
    let r = post(worker, "/v1/projects/core/webhook", Some(key), &json!({}));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["project"].as_str().unwrap().to_string();
    let secret = r.body["secret"].as_str().unwrap().to_string();
    let r = get(worker, "/v1/projects/core", Some(key));
    assert!(!r.body.to_string().contains(&secret), "{}", r.body);
    // A failed signature is answered alike for `core`, for `sample` (no webhook) and for none.
    let sample = get(worker, "/v1/projects/sample", Some(key)).body["id"]
        .as_str()
        .unwrap()
        .to_string();
    cases::webhook_refusals_are_one(worker, Some(&id), &sample);
    let before = webhooks::version(worker, key, "core");
    let invoked = service.invocations().len();

    let branch = webhooks::git(repo, &["rev-parse", "--abbrev-ref", "HEAD"]);
    let (query, marker) = ("aws_pushed_marker_function", "aws_pushed.rs");
    let after = webhooks::commit_file(
        repo,
        marker,
        "/// Arrived with a push to the Worker.\npub fn aws_pushed_marker_function() -> u8 {\n    3\n}\n",
    );
    let body = webhooks::github_push(url, &format!("refs/heads/{branch}"), &after).replace(
        "\"default_branch\":\"main\"",
        &format!("\"default_branch\":\"{branch}\""),
    );
    let wrong = "f".repeat(64);
    let refused = vec![
        (
            webhooks::send_github(worker, &id, "push", "aws-unsigned", &body, None),
            401,
            "webhook_signature_missing",
        ),
        (
            webhooks::send_github(worker, &id, "push", "aws-wrong", &body, Some(&wrong)),
            401,
            "webhook_signature_invalid",
        ),
    ];
    webhooks::assert_refused_and_unchanged(worker, key, "core", refused, before, query, marker);
    assert_eq!(
        service.invocations().len(),
        invoked,
        "a refused delivery invoked the indexer"
    );

    let r = webhooks::send_github(worker, &id, "push", "aws-push", &body, Some(&secret));
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["jobs"][0]["name"], "core", "{}", r.body);
    match nth_invocation(service, invoked + 1) {
        runtime_api::Outcome::Response(job) => assert_eq!(job["state"], "published", "{job}"),
        other => panic!("{other:?}"),
    }
    let now = webhooks::version(worker, key, "core");
    assert!(now > before, "{now:?} after {before:?}");
    assert!(webhooks::context_has(worker, key, "core", query, marker));

    // Replays (the same delivery; the same body under a new id) invoke nothing more.
    let refused = [
        (
            webhooks::send_github(worker, &id, "push", "aws-push", &body, Some(&secret)),
            409,
            "webhook_replayed",
        ),
        (
            webhooks::send_github(worker, &id, "push", "aws-push-2", &body, Some(&secret)),
            409,
            "webhook_replayed",
        ),
    ];
    for (i, (r, status, code)) in refused.iter().enumerate() {
        assert_eq!(
            (r.status, r.code()),
            (*status, *code),
            "replay {i}: {}",
            r.body
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        service.invocations().len(),
        invoked + 1,
        "a replay invoked the indexer"
    );
    assert_eq!(webhooks::version(worker, key, "core"), now);
}

/// `ctxgate serve --store s3://… --table …` answers from what the Lambda published, as the
/// Worker does: the project listed with its version, a context within the budget, and nothing
/// for another organisation.
fn native_serve_over_aws(moto: &moto::Moto, store_url: &str) {
    let vars = moto.env();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let native = NativeHost::start_with_env(&["--store", store_url, "--table", TABLE], &vars);
    let key = org_with_key(&native, "acmeaws", json!({}));
    let other = org_with_key(&native, "otheraws", json!({}));
    let r = get(&native, "/v1/projects", Some(&key));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["projects"][0]["name"], "core", "{}", r.body);
    assert_eq!(r.body["projects"][0]["current_version"], 1, "{}", r.body);
    let body = json!({"project": "core", "query": "how are quota tokens reserved", "budget": 3000});
    let r = post(&native, "/v1/context", Some(&key), &body);
    assert_exact_within(&r, 3000);
    assert!(
        r.body["pieces"].as_array().is_some_and(|p| !p.is_empty()),
        "{}",
        r.body
    );
    let r = post(&native, "/v1/context", Some(&other), &body);
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "{}",
        r.body
    );
    // Without an indexer function a push could start nothing: no webhook is made.
    let r = post(&native, "/v1/projects/core/webhook", Some(&key), &json!({}));
    assert_eq!(
        (r.status, r.code()),
        (403, "webhooks_unsupported"),
        "{}",
        r.body
    );
}

/// A context answer within `budget`, whose prompt re-counted by o200k is the reported total.
fn assert_exact_within(r: &super::host::Reply, budget: u64) {
    assert_eq!(r.status, 200, "{}", r.body);
    let total = r.body["tokens_total"].as_u64().unwrap();
    assert!(total <= budget, "{total} > {budget}");
    assert_eq!(
        u64::from(Encoding::O200kBase.count(r.body["prompt"].as_str().unwrap())),
        total
    );
}
