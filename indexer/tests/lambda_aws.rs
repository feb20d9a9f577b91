//! The real Lambda binary against a Runtime API endpoint, publishing to moto's S3 and DynamoDB:
//! index a real repository (ctxgate's own core sources, as a git repository), kill a job midway
//! and show the previous version still served, re-index incrementally on a scheduled event, and
//! refuse bad events with their codes.

mod support;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::jobs;
use ctxgate_indexer::pipeline::{ProjectTarget, open_current};
use ctxgate_indexer::store::IndexStore;
use serde_json::{Value, json};
use support::moto::{Moto, workspace};
use support::repo::{committed_copy, git};
use support::runtime_api::{Outcome, RuntimeApi};

const BUCKET: &str = "ctxgate-lambda-test";
const TABLE: &str = "ctxgate-lambda-test";
const WAIT: Duration = Duration::from_secs(240);

fn function(api: &RuntimeApi, moto: &Moto, work: &Path, crash_at: Option<&str>) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxgate-lambda"));
    cmd.envs(moto.env())
        .env("AWS_LAMBDA_RUNTIME_API", &api.address)
        .env("AWS_LAMBDA_FUNCTION_NAME", "ctxgate-indexer")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "test")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "test")
        .env("CTXGATE_STORE", format!("s3://{BUCKET}/idx"))
        .env("CTXGATE_TABLE", TABLE)
        .env("CTXGATE_WORK_DIR", work)
        // The test's repositories are served over file://.
        .env("CTXGATE_ALLOW_LOCAL_SOURCES", "1")
        .env("CTXGATE_LOCK_TTL_SECS", "2")
        .env("RUST_LOG", "warn");
    if let Some(point) = crash_at {
        cmd.env("CTXGATE_CRASH_AT", point);
    }
    cmd.spawn().expect("start the Lambda function")
}

fn response(api: &RuntimeApi, id: &str) -> Value {
    match api.outcome(id, WAIT) {
        Some(Outcome::Response(v)) => v,
        other => panic!("invocation {id}: expected a response, got {other:?}"),
    }
}

fn error_type(api: &RuntimeApi, id: &str) -> String {
    match api.outcome(id, WAIT) {
        Some(Outcome::Error { error_type, .. }) => error_type,
        other => panic!("invocation {id}: expected an error, got {other:?}"),
    }
}

#[test]
fn lambda_indexes_survives_a_crash_and_reindexes_on_schedule() {
    let Some(moto) = Moto::start() else { return };
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let store = AwsStore::open(
        S3Location::parse(&format!("s3://{BUCKET}/idx")).unwrap(),
        TABLE,
        cache.path(),
    )
    .expect("connect to moto");
    store.init().expect("create bucket and table");

    // A real repository: ctxgate's core sources, committed to a git repository.
    let repo = tempfile::tempdir().unwrap();
    committed_copy(&workspace().join("shared/src"), repo.path());
    let url = format!("file://{}", repo.path().display());
    let files_in_repo = walk_count(repo.path());

    let api = RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    let mut lambda = function(&api, &moto, work.path(), None);

    // 1. Index on request.
    api.invoke(
        "req-index-1",
        json!({"action": "index", "org": "acme", "project": "core",
               "source": {"kind": "git", "url": url}}),
    );
    let job = response(&api, "req-index-1");
    assert_eq!(job["state"], "published", "{job}");
    assert_eq!(job["version"], 1);
    assert_eq!(
        job["files_chunked"].as_u64().unwrap() as usize,
        files_in_repo
    );
    let target = ProjectTarget::named("acme", "core");
    let v1 = open_current(&store, "acme", &target.id)
        .unwrap()
        .expect("version 1 is current");
    assert_eq!(v1.version, 1);
    assert_eq!(v1.pack.files.len(), files_in_repo);
    // Every segment the manifest names is in S3 and holds the chunks' texts.
    let seg = store.get_object(&v1.manifest.segment_keys[0]).unwrap();
    let c = &v1.pack.chunks[0];
    assert!(
        std::str::from_utf8(
            &seg[c.segment_offset as usize..(u64::from(c.segment_offset) + c.len()) as usize]
        )
        .is_ok()
    );

    // 2. Bad events are refused with a code, and the function keeps serving.
    api.invoke("req-bad-1", json!({"action": "drop_tables"}));
    assert_eq!(error_type(&api, "req-bad-1"), "invalid_event");
    api.invoke(
        "req-bad-2",
        json!({"action": "index", "org": "../etc", "project": "x", "source": {"kind": "git", "url": url}}),
    );
    assert_eq!(error_type(&api, "req-bad-2"), "invalid_request");
    api.invoke(
        "req-bad-3",
        json!({"action": "index", "org": "acme", "project": "ghost",
               "source": {"kind": "git", "url": url, "rev": "no-such-branch"}}),
    );
    assert_eq!(error_type(&api, "req-bad-3"), "source_rev_not_found");
    // Callers choose the URLs the edge registers: without CTXGATE_ALLOW_PRIVATE_SOURCES the
    // function reaches neither plain http nor private or link-local hosts (the metadata
    // endpoint), and refuses before connecting.
    for (id, url) in [
        ("req-bad-4", "http://127.0.0.1:9/repo.tar.gz"),
        ("req-bad-5", "https://169.254.169.254/latest/meta-data"),
    ] {
        api.invoke(
            id,
            json!({"action": "index", "org": "acme", "project": "ssrf",
                   "source": {"kind": "tarball", "url": url}}),
        );
        assert_eq!(error_type(&api, id), "source_not_allowed", "{url}");
    }

    // 3. One file changes; a job is killed just before it publishes: version 1 stays current
    //    and readable, and no version 2 item exists.
    let changed = repo.path().join("lib.rs");
    let mut text = std::fs::read_to_string(&changed).unwrap();
    text.push_str("\n/// Added by the crash test.\npub fn crash_test_marker() {}\n");
    std::fs::write(&changed, text).unwrap();
    git(repo.path(), &["commit", "-qam", "second"]);
    lambda.kill().ok();
    lambda.wait().ok();
    // A fresh endpoint per function process: a killed process's pending `/next` stays parked on
    // the endpoint it polled (the server does not see the dead connection) and would take the
    // next event queued there, and lose it.
    let api = RuntimeApi::start();
    let mut doomed = function(&api, &moto, work.path(), Some("before_publish"));
    api.invoke("req-crash", json!({"action": "reindex_due"}));
    let status = doomed.wait().unwrap();
    assert!(!status.success(), "the job was killed");
    assert!(
        api.outcome("req-crash", Duration::from_millis(100))
            .is_none()
    );
    let still = open_current(&store, "acme", &target.id)
        .unwrap()
        .expect("a version is current");
    assert_eq!(
        still.version, 1,
        "the killed job's version never became visible"
    );
    assert_eq!(store.latest_version(&target.id).unwrap(), 1);
    let crashed = jobs::list(&store, Some("acme"), 50).unwrap();
    let crashed = crashed
        .iter()
        .find(|j| j.id.starts_with("req-crash"))
        .expect("the job was recorded");
    assert_eq!(crashed.stage, "index", "the record shows where it died");

    // 4. The dead job's lease still holds the project until it expires (2 s here; a live
    //    holder renews it), then the scheduled event re-indexes incrementally: only the changed
    //    file is re-chunked.
    let api = RuntimeApi::start();
    let mut lambda = function(&api, &moto, work.path(), None);
    let scheduled = json!({
        "version": "0", "id": "e1", "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": "2026-11-23T10:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/ctxgate"], "detail": {}
    });
    api.invoke("req-sched-0", scheduled.clone());
    let pass = response(&api, "req-sched-0");
    assert_eq!(pass["jobs"][0]["error_code"], "project_busy", "{pass}");
    std::thread::sleep(Duration::from_millis(2500));
    api.invoke("req-sched-1", scheduled.clone());
    let pass = response(&api, "req-sched-1");
    assert_eq!(pass["projects"], 1, "{pass}");
    // The pass collected garbage after indexing: versions 1 and 3 are kept (the current one
    // plus 2), and version 2's orphaned objects are inside the 15-minute grace period.
    assert_eq!(pass["gc"]["deleted_versions"], 0, "{pass}");
    assert_eq!(pass["gc"]["deleted_objects"], 0, "{pass}");
    assert!(pass["gc"].get("error").is_none(), "{pass}");
    assert_eq!(pass["unchanged"], 0);
    let job = &pass["jobs"][0];
    assert_eq!(job["state"], "published", "{pass}");
    // The killed run left version 2's pack and manifest (never published); they are never
    // overwritten, so this run takes the next number.
    assert_eq!(job["version"], 3);
    assert_eq!(job["files_chunked"], 1, "only the changed file: {pass}");
    let v2 = open_current(&store, "acme", &target.id).unwrap().unwrap();
    assert_eq!(v2.version, 3);
    // A delta over version 1 (one changed file): the old segment is reused through the base,
    // and one new segment holds only the changed file's chunks.
    assert_eq!(
        v2.manifest.base.as_deref().map(|b| b.version),
        Some(v1.version),
        "a one-file change is a delta over the first version"
    );
    let segments: Vec<&str> = v2
        .manifest
        .objects()
        .into_iter()
        .filter(|k| k.contains("/segments/"))
        .collect();
    assert_eq!(segments.len(), 2, "{segments:?}");
    assert!(segments.contains(&v1.manifest.segment_keys[0].as_str()));
    let new_key = segments
        .iter()
        .find(|k| !v1.manifest.segment_keys.iter().any(|o| o == *k))
        .unwrap();
    let fresh = store.get_object(new_key).unwrap();
    assert!(String::from_utf8_lossy(&fresh).contains("crash_test_marker"));
    assert!(
        fresh.len() * 10 < seg.len(),
        "{} new bytes of {}",
        fresh.len(),
        seg.len()
    );
    assert_eq!(job["bytes_stored"].as_u64().unwrap() as usize, fresh.len());

    // 5. Nothing changed: the pass fetches nothing and runs no job.
    api.invoke("req-sched-2", scheduled.clone());
    let pass = response(&api, "req-sched-2");
    assert_eq!(pass["unchanged"], 1, "{pass}");
    assert_eq!(pass["jobs"].as_array().unwrap().len(), 0);

    // 6. Lambda retries an event with the same request id: the job record and the run counter
    //    are not doubled.
    let registered = ctxgate_indexer::reindex::registered(&store).unwrap();
    let runs_before = registered[0].runs;
    api.invoke(
        "req-index-1",
        json!({"action": "index", "org": "acme", "project": "core",
               "source": {"kind": "git", "url": format!("file://{}", repo.path().display())}}),
    );
    // (A second answer for the same id replaces the first; wait for the new state.)
    std::thread::sleep(Duration::from_millis(50));
    let retried = wait_for_attempts(&store, "req-index-1", 2);
    assert_eq!(retried.attempts, 2);
    let registered = ctxgate_indexer::reindex::registered(&store).unwrap();
    assert_eq!(registered[0].runs, runs_before, "a retried job counts once");
    assert!(api.init_errors().is_empty());

    lambda.kill().ok();
    lambda.wait().ok();
}

fn wait_for_attempts(store: &AwsStore, id: &str, attempts: u32) -> jobs::JobRecord {
    for _ in 0..600 {
        if let Some(j) = jobs::list(store, None, 100)
            .unwrap()
            .into_iter()
            .find(|j| j.id == id && j.attempts >= attempts && j.state != jobs::JobState::Running)
        {
            return j;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("job {id} never reached attempt {attempts}");
}

fn walk_count(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == ".git" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            n += walk_count(&e.path());
        } else {
            n += 1;
        }
    }
    n
}
