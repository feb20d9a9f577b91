//! The API's contract, checked against real answers: schemathesis (a property-based API tester,
//! installed by `scripts/contract-tools-setup.sh` into `target/contract-venv`, which the test
//! command runs) reads `/openapi.json` from the running host, generates requests for every
//! operation (the document's examples, boundary and invalid values, then random ones) and checks
//! each answer's status, content type, headers and body against the document: every status and
//! error code the host answers with must be documented for that operation.
//!
//! Bounded: a few examples per operation, and a hard limit on each run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::host::{Host, ledger_repo, org_with_key};

/// The checks run on every answer (schemathesis's response-conformance checks, and no 5xx).
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_headers_conformance,response_schema_conformance";

/// Test cases per operation and phase.
const EXAMPLES: &str = "25";

/// The longest both schemathesis runs against one host may take together.
const LIMIT: Duration = Duration::from_secs(90);

/// Runs schemathesis against `host`: the caller's operations with an API key of an org whose
/// project `core` is published, then the admin operations with the admin secret.
pub fn run(host: &dyn Host, tag: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let tool = std::env::var("CTXGATE_SCHEMATHESIS")
        .unwrap_or_else(|_| format!("{root}/target/contract-venv/bin/schemathesis"));
    assert!(
        Path::new(&tool).exists(),
        "no schemathesis at {tool}: run scripts/contract-tools-setup.sh (scripts/test.sh does)"
    );
    let org = format!("contract{tag}");
    let key = org_with_key(host, &org, json!({}));
    let repo = ledger_repo();
    host.publish(&org, "core", repo.path());
    let started = Instant::now();
    let deadline = started + LIMIT;
    let caller = ["--exclude-path-regex", "^/v1/admin/"];
    schemathesis(&tool, host, &key, &caller, deadline);
    let admin = ["--include-path-regex", "^/v1/admin/"];
    schemathesis(&tool, host, host.admin_secret(), &admin, deadline);
    eprintln!(
        "contract: {} conforms to /openapi.json ({:.0} s)",
        host.base_url(),
        started.elapsed().as_secs_f64()
    );
}

/// One schemathesis run with `bearer`, over the operations `filter` selects; panics with its
/// report when a check fails or the run is still going at `deadline`.
fn schemathesis(tool: &str, host: &dyn Host, bearer: &str, filter: &[&str], deadline: Instant) {
    // Its own working directory: schemathesis keeps a Hypothesis database there.
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("schemathesis.log");
    let base = host.base_url().trim_end_matches('/');
    let mut child = Command::new(tool)
        .current_dir(scratch.path())
        .arg("run")
        .arg(format!("{base}/openapi.json"))
        .args(["--url", base])
        .args(["--header", &format!("Authorization: Bearer {bearer}")])
        .args(["--checks", CHECKS])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--max-examples", EXAMPLES])
        .args(["--seed", "26"])
        .args(["--workers", "1"])
        .args(["--request-timeout", "30"])
        .args(["--suppress-health-check", "all"])
        .args(["--no-color"])
        .args(filter)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start schemathesis");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let report = std::fs::read_to_string(&log).unwrap_or_default();
    match status {
        Some(s) if s.success() => {}
        Some(_) => panic!("schemathesis found answers that break /openapi.json:\n{report}"),
        None => panic!("schemathesis ran over {LIMIT:?} against one host:\n{report}"),
    }
}
