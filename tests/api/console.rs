//! The web console as a person uses it: headless Chromium (Debian's `chromium`, driven by
//! Playwright for Python from `target/console-venv`, both installed by
//! `scripts/console-tools-setup.sh`) signs in, runs a query in the inspector and checks the
//! budget bar and every piece against the API's JSON, follows a provenance link, copies the
//! prompt, reads the projects page and presses "Re-index now", and sees a 429 explained on the
//! usage page (`tests/console/drive.py`). Screenshots of each page land in `target/console/`.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use super::host::{Host, ledger_repo, org_with_key};

/// The org's rate limit: low, so the drive reaches a 429 in a few clicks.
const RATE_LIMIT: u32 = 8;

/// Drives the console of `host`; `reindex_refused` is the code "Re-index now" answers with on
/// a host that does not index (the Worker over R2).
pub fn run(host: &dyn Host, tag: &str, reindex_refused: Option<&str>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let python = std::env::var("CTXGATE_CONSOLE_PYTHON")
        .unwrap_or_else(|_| format!("{root}/target/console-venv/bin/python"));
    assert!(
        Path::new(&python).exists(),
        "no {python}: run scripts/console-tools-setup.sh (scripts/test.sh does)"
    );
    let org = format!("console{tag}");
    let key = org_with_key(
        host,
        &org,
        json!({ "requests_per_minute": RATE_LIMIT, "tokens_per_day": 1_000_000 }),
    );
    // A git work tree whose remote is on GitHub: its pieces link to the commit indexed.
    let repo = ledger_repo();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=ctxgate",
                "-c",
                "user.email=test@example.invalid",
            ])
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    git(&["init", "-q"]);
    git(&[
        "remote",
        "add",
        "origin",
        "https://github.com/acme/ledger.git",
    ]);
    git(&["add", "."]);
    git(&["commit", "-qm", "ledger"]);
    let commit = git(&["rev-parse", "HEAD"]);
    host.publish(&org, "ledger", repo.path());
    let rate = RATE_LIMIT.to_string();
    let shots = format!("{root}/target/console");
    let mut cmd = Command::new(&python);
    cmd.arg(format!("{root}/tests/console/drive.py"))
        .args(["--base", host.base_url()])
        .args(["--key", &key])
        .args(["--project", "ledger"])
        .args(["--commit", &commit])
        .args(["--remote-web", "https://github.com/acme/ledger"])
        .args(["--rate-limit", &rate])
        .args(["--shots", &shots])
        .args(["--tag", if tag == "n" { "native" } else { "worker" }])
        .stdin(Stdio::null());
    if let Some(code) = reindex_refused {
        cmd.args(["--reindex-refused", code]);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "the console drive failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
