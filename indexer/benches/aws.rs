//! The indexer on AWS protocols, run on purpose (`scripts/bench-aws.sh`): the real Lambda
//! binary against a Runtime API endpoint, publishing to moto's S3 and DynamoDB.
//!
//! 1. A full index of the benchmark corpus (`target/bench-corpus`, ~1.7M o200k tokens) as a
//!    git repository: wall time, requests, bytes uploaded.
//! 2. A scheduled pass over 100 registered projects of which 3 changed: the pass's wall time,
//!    the time of the 3 jobs, and what they uploaded; then a pass with nothing changed.

#[allow(dead_code)]
#[path = "../tests/support/moto.rs"]
mod moto;
#[allow(dead_code)]
#[path = "../tests/support/repo.rs"]
mod repo;
#[allow(dead_code)]
#[path = "../tests/support/runtime_api.rs"]
mod runtime_api;

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use ctxgate_indexer::aws::{AwsStore, S3Location};
use moto::{Moto, workspace};
use repo::{committed_copy, git};
use runtime_api::{Outcome, RuntimeApi};
use serde_json::{Value, json};

const BUCKET: &str = "ctxgate-bench";
const TABLE: &str = "ctxgate-bench";

fn function(api: &RuntimeApi, moto: &Moto, work: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ctxgate-lambda"))
        .envs(moto.env())
        .env("AWS_LAMBDA_RUNTIME_API", &api.address)
        .env("AWS_LAMBDA_FUNCTION_NAME", "ctxgate-indexer")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("CTXGATE_STORE", format!("s3://{BUCKET}/idx"))
        .env("CTXGATE_TABLE", TABLE)
        .env("CTXGATE_WORK_DIR", work)
        // The test's repositories are served over file://.
        .env("CTXGATE_ALLOW_LOCAL_SOURCES", "1")
        .env("RUST_LOG", "error")
        .spawn()
        .expect("start the function")
}

fn call(api: &RuntimeApi, id: &str, event: Value) -> (Value, Duration) {
    let t = Instant::now();
    api.invoke(id, event);
    match api.outcome(id, Duration::from_secs(1800)) {
        Some(Outcome::Response(v)) => (v, t.elapsed()),
        other => panic!("{id}: {other:?}"),
    }
}

/// The function's peak resident memory so far (`VmHWM`), in MiB.
fn peak_rss_mib(lambda: &Child) -> f64 {
    std::fs::read_to_string(format!("/proc/{}/status", lambda.id()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// A full index of `dir` through the function, then an incremental one after one changed file:
/// wall time, peak memory and what each uploaded. (Run first, so the peak is this job's.)
fn large_repository(api: &RuntimeApi, lambda: &Child, dir: &Path) {
    let copy = tempfile::tempdir().unwrap();
    let repo = copy.path().join("large");
    committed_copy(dir, &repo);
    let event = json!({"action": "index", "org": "bench", "project": "large",
                       "source": {"kind": "git", "url": format!("file://{}", repo.display())}});
    let (job, took) = call(api, "large-1", event.clone());
    println!(
        "large repository through the Lambda binary: {} files, {} state, wall {:.1} s, peak RSS {:.0} MiB (the function has 2048 MB, 15 min); S3: {} requests, {:.1} MB uploaded",
        job["files_seen"],
        job["state"],
        took.as_secs_f64(),
        peak_rss_mib(lambda),
        job["traffic"]["s3_requests"],
        job["traffic"]["s3_bytes_up"].as_f64().unwrap_or(0.0) / 1e6,
    );
    // One changed file: the first Rust, TypeScript or Markdown file at the top gets a line
    // appended (on deno, README.md).
    let changed = std::fs::read_dir(&repo)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension()
                .is_some_and(|e| e == "rs" || e == "ts" || e == "md")
        })
        .unwrap_or_else(|| repo.join("CHANGED.md"));
    let mut text = std::fs::read_to_string(&changed).unwrap_or_default();
    text.push_str("\n// one changed line\n");
    std::fs::write(&changed, text).unwrap();
    git(&repo, &["commit", "-qam", "two"]);
    let (job, took) = call(api, "large-2", event);
    println!(
        "  one changed file ({}): wall {:.1} s, re-chunked {} files, {} bytes of new chunk text, {} state; S3: {} requests, {:.2} MB uploaded",
        changed.strip_prefix(&repo).unwrap_or(&changed).display(),
        took.as_secs_f64(),
        job["files_chunked"],
        job["bytes_stored"],
        job["state"],
        job["traffic"]["s3_requests"],
        job["traffic"]["s3_bytes_up"].as_f64().unwrap_or(0.0) / 1e6,
    );
}

fn main() {
    let corpus = workspace().join("target/bench-corpus");
    assert!(
        corpus.is_dir(),
        "run scripts/bench-corpus.sh first (scripts/bench-aws.sh does)"
    );
    let moto = Moto::start().expect("moto (bash scripts/aws-tools-setup.sh)");
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let store = AwsStore::open(
        S3Location::parse(&format!("s3://{BUCKET}/idx")).unwrap(),
        TABLE,
        cache.path(),
    )
    .unwrap();
    store.init().unwrap();
    let api = RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    let mut lambda = function(&api, &moto, work.path());

    // 1. Full index of the corpus.
    let big = tempfile::tempdir().unwrap();
    let big_repo = big.path().join("corpus");
    committed_copy(&corpus, &big_repo);
    let (job, took) = call(
        &api,
        "full-1",
        json!({"action": "index", "org": "bench", "project": "corpus",
               "source": {"kind": "git", "url": format!("file://{}", big_repo.display())}}),
    );
    println!(
        "full index through the Lambda binary into moto (embeddings off: ctxgate has none yet):"
    );
    println!(
        "  {} files, wall {:.2} s; S3: {} requests, {:.1} MB uploaded; DynamoDB: {} requests",
        job["files_seen"],
        took.as_secs_f64(),
        job["traffic"]["s3_requests"],
        job["traffic"]["s3_bytes_up"].as_f64().unwrap_or(0.0) / 1e6,
        job["traffic"]["dynamo_requests"],
    );

    // 1b. A large repository (`CTXGATE_LAMBDA_CORPUS`, e.g. the deno snapshot that
    // scripts/bench-scale.sh exports), then one changed file in it.
    if let Ok(dir) = std::env::var("CTXGATE_LAMBDA_CORPUS") {
        large_repository(&api, &lambda, Path::new(&dir));
    }

    // 2. 100 registered projects, 3 of them changed.
    let projects = tempfile::tempdir().unwrap();
    let mut repos = Vec::new();
    for i in 0..100 {
        let dir = projects.path().join(format!("p{i:03}"));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        for f in 0..20 {
            std::fs::write(
                dir.join("src").join(format!("m{f}.rs")),
                format!(
                    "//! Module {f} of project {i}.\n\npub fn f{f}(x: u64) -> u64 {{\n    x * {f} + {i}\n}}\n"
                ),
            )
            .unwrap();
        }
        git(&dir, &["init", "-q"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-qm", "one"]);
        call(
            &api,
            &format!("reg-{i}"),
            json!({"action": "index", "org": "bench", "project": format!("p{i:03}"),
                   "source": {"kind": "git", "url": format!("file://{}", dir.display())}}),
        );
        repos.push(dir);
    }
    for dir in repos.iter().take(3) {
        std::fs::write(dir.join("src/m0.rs"), "pub fn changed() {}\n").unwrap();
        git(dir, &["commit", "-qam", "two"]);
    }
    let scheduled = |id: &str| {
        json!({"version": "0", "id": id, "detail-type": "Scheduled Event", "source": "aws.events",
               "account": "123456789012", "time": "2026-11-23T10:00:00Z", "region": "us-east-1",
               "resources": [], "detail": {}})
    };
    let (pass, took) = call(&api, "sched-1", scheduled("s1"));
    let jobs = pass["jobs"].as_array().unwrap();
    let job_ms: u64 = jobs
        .iter()
        .map(|j| j["updated_ms"].as_u64().unwrap_or(0) - j["started_ms"].as_u64().unwrap_or(0))
        .sum();
    let uploaded: u64 = jobs
        .iter()
        .map(|j| j["traffic"]["s3_bytes_up"].as_u64().unwrap_or(0))
        .sum();
    let chunked: u64 = jobs
        .iter()
        .map(|j| j["files_chunked"].as_u64().unwrap_or(0))
        .sum();
    println!("scheduled pass over 101 registered projects (100 small + the corpus), 3 changed:");
    println!(
        "  pass {} ms in the function ({:.0} ms per invocation); {} unchanged; {} jobs took {} ms, re-chunked {} files, uploaded {} bytes",
        pass["elapsed_ms"],
        took.as_secs_f64() * 1e3,
        pass["unchanged"],
        jobs.len(),
        job_ms,
        chunked,
        uploaded
    );
    println!(
        "  => the unchanged projects cost {} ms together",
        pass["elapsed_ms"]
            .as_u64()
            .unwrap_or(0)
            .saturating_sub(job_ms)
    );
    let (pass, took) = call(&api, "sched-2", scheduled("s2"));
    println!(
        "scheduled pass, nothing changed: {} ms in the function ({:.0} ms per invocation), {} unchanged, {} jobs",
        pass["elapsed_ms"],
        took.as_secs_f64() * 1e3,
        pass["unchanged"],
        pass["jobs"].as_array().unwrap().len()
    );
    lambda.kill().ok();
    lambda.wait().ok();
}
