//! The Worker under Cloudflare's runtime: `wrangler dev --local` (workerd, with local R2, KV and
//! Durable Objects) running the worker-build output, as a [`Host`] for the same cases.
//!
//! The Worker cannot index (no tree-sitter in wasm), so publishing is what an indexer does:
//! `ctxgate project add` into a scratch data directory, then every object it wrote goes up through
//! `PUT /v1/admin/orgs/{org}/objects/{*key}` (into R2) and the project is registered with
//! `PUT /v1/admin/orgs/{org}/projects/{name}` (into the org's Durable Object).
//!
//! Needs `scripts/worker-toolchain.sh` and `scripts/worker-build.sh` to have run (the test command
//! does both). Without them the test says so and passes, unless `CTXGATE_REQUIRE_WORKER=1`, which
//! the test command sets, so CI never skips it silently.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::host::{ADMIN_SECRET, Host, org_with_key, post};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TOKEN_SECRET: &str = "worker-test-token-secret-0123456789";

/// `wrangler dev --local` on a free port over a fresh persistence directory.
pub struct WorkerHost {
    scratch: tempfile::TempDir,
    child: Child,
    url: String,
    inspector_port: u16,
    /// `wrangler dev -c` configs in place of `wrangler.toml` (empty: the repository's).
    configs: Vec<PathBuf>,
}

fn wrangler() -> PathBuf {
    Path::new(ROOT).join("target/tools/npm/node_modules/.bin/wrangler")
}

/// The Worker module worker-build wrote (see `scripts/worker-build.sh`).
pub fn worker_module() -> PathBuf {
    Path::new(ROOT).join("target/worker-build/index.js")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

impl WorkerHost {
    /// Starts the Worker, or `None` (with a note) when its tools or build are absent and the
    /// caller does not require it.
    pub fn start_or_skip() -> Option<Self> {
        let required = std::env::var("CTXGATE_REQUIRE_WORKER").is_ok_and(|v| v == "1");
        let missing: Vec<String> = [wrangler(), worker_module()]
            .into_iter()
            .filter(|p| !p.exists())
            .map(|p| p.display().to_string())
            .collect();
        if !missing.is_empty() {
            let why = format!(
                "the Worker suite needs {} (run scripts/worker-toolchain.sh and scripts/worker-build.sh)",
                missing.join(" and ")
            );
            assert!(!required, "{why}");
            eprintln!("SKIPPED: {why}");
            return None;
        }
        Some(Self::start())
    }

    fn start() -> Self {
        Self::start_with_vars(&[])
    }

    /// Starts the Worker with extra vars (as `.dev.vars` lines would give them).
    pub fn start_with_vars(vars: &[(&str, String)]) -> Self {
        let host = Self::spawn_with(vars);
        host.wait_ready(Duration::from_secs(180));
        host
    }

    /// Whether the Worker can run here; panics when it must (`CTXGATE_REQUIRE_WORKER=1`).
    pub fn available() -> bool {
        Self::tools_missing().is_none()
    }

    fn tools_missing() -> Option<String> {
        let required = std::env::var("CTXGATE_REQUIRE_WORKER").is_ok_and(|v| v == "1");
        let missing: Vec<String> = [wrangler(), worker_module()]
            .into_iter()
            .filter(|p| !p.exists())
            .map(|p| p.display().to_string())
            .collect();
        if missing.is_empty() {
            return None;
        }
        let why = format!(
            "the Worker suite needs {} (run scripts/worker-toolchain.sh and scripts/worker-build.sh)",
            missing.join(" and ")
        );
        assert!(!required, "{why}");
        eprintln!("SKIPPED: {why}");
        Some(why)
    }

    /// Starts the Worker and returns once `wrangler dev` says it is ready, before any request
    /// (so the first request meets a fresh isolate; `benches/worker.rs` measures it).
    #[allow(dead_code)]
    pub fn start_cold() -> Self {
        let host = Self::spawn();
        let start = Instant::now();
        while !host.log().contains("Ready on") {
            assert!(
                start.elapsed() < Duration::from_secs(180),
                "wrangler dev did not get ready; it said:\n{}",
                host.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        host
    }

    fn spawn() -> Self {
        Self::spawn_with(&[])
    }

    fn spawn_with(extra: &[(&str, String)]) -> Self {
        Self::spawn_configured(extra, |_| Vec::new())
    }

    /// Starts the Worker with `wrangler dev -c` over the configs `configs` writes into the run's
    /// scratch folder (the first is the Worker's, the others run beside it).
    #[allow(dead_code)]
    pub fn start_with_configs(configs: impl FnOnce(&Path) -> Vec<PathBuf>) -> Self {
        let host = Self::spawn_configured(&[], configs);
        host.wait_ready(Duration::from_secs(180));
        host
    }

    /// What wrangler said so far (its output: the Worker's `console.log` lines among it).
    #[allow(dead_code)]
    pub fn output(&self) -> String {
        self.log()
    }

    fn spawn_configured(
        extra: &[(&str, String)],
        configs: impl FnOnce(&Path) -> Vec<PathBuf>,
    ) -> Self {
        let scratch = tempfile::tempdir().unwrap();
        let configs = configs(scratch.path());
        // Dev vars for this run only (the equivalent of `.dev.vars`; never committed).
        let vars = scratch.path().join("dev.env");
        let mut text = format!(
            "TOKEN_SECRET={TOKEN_SECRET}\nADMIN_SECRET={ADMIN_SECRET}\nMAX_BODY_BYTES=1048576\n\
             CTXGATE_GC_KEEP=0\nCTXGATE_GC_GRACE_SECONDS=0\n"
        );
        for (k, v) in extra {
            text.push_str(&format!("{k}={v}\n"));
        }
        std::fs::write(&vars, text).unwrap();
        let port = free_port();
        let inspector_port = free_port();
        let child = launch(scratch.path(), port, inspector_port, &configs);
        Self {
            scratch,
            child,
            url: format!("http://127.0.0.1:{port}"),
            inspector_port,
            configs,
        }
    }

    /// Stops workerd, lets `between` change its persisted state (`--persist-to`), and starts it
    /// again on the same port: the next request meets a fresh isolate over that state.
    #[allow(dead_code)]
    pub fn restart(&mut self, between: impl FnOnce(&Path)) {
        stop(&mut self.child);
        between(&self.scratch.path().join("state"));
        let port = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap();
        self.child = launch(
            self.scratch.path(),
            port,
            self.inspector_port,
            &self.configs,
        );
        self.wait_ready(Duration::from_secs(180));
    }

    /// Where workerd keeps its state (`--persist-to`: R2 objects, KV, Durable Objects).
    pub fn state_dir(&self) -> PathBuf {
        self.scratch.path().join("state")
    }

    fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(self.scratch.path().join("wrangler.log")) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }

    fn wait_ready(&self, limit: Duration) {
        let start = Instant::now();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .into();
        while start.elapsed() < limit {
            if let Ok(r) = agent.get(format!("{}/healthz", self.url)).call()
                && r.status() == 200
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        panic!(
            "the Worker did not answer /healthz within {limit:?}; wrangler said:\n{}",
            self.log()
        );
    }
}

impl Drop for WorkerHost {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("wrangler dev said:\n{}", self.log());
        }
        stop(&mut self.child);
    }
}

/// `wrangler dev` over `scratch` (its vars, state and log), on `port`.
fn launch(scratch: &Path, port: u16, inspector_port: u16, configs: &[PathBuf]) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(scratch.join("wrangler.log"))
        .unwrap();
    Command::new(wrangler())
        .current_dir(ROOT)
        // `log`: the Worker's own console lines (its JSON request records) too.
        .args(["dev", "--local", "--ip", "127.0.0.1", "--log-level", "log"])
        .args(["--show-interactive-dev-session=false"])
        // `GET /__scheduled` runs the Worker's scheduled pass (its cron), as a test needs.
        .arg("--test-scheduled")
        .args(configs.iter().flat_map(|c| [Path::new("-c"), c.as_path()]))
        .arg("--port")
        .arg(port.to_string())
        .arg("--inspector-port")
        .arg(inspector_port.to_string())
        .arg("--persist-to")
        .arg(scratch.join("state"))
        .arg("--env-file")
        .arg(scratch.join("dev.env"))
        .env("WRANGLER_SEND_METRICS", "false")
        .env("WRANGLER_SEND_ERROR_REPORTS", "false")
        .env("CLOUDFLARE_CF_FETCH_ENABLED", "false")
        .env("WRANGLER_LOG_PATH", scratch.join("logs"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        // Its own process group, so stopping it also stops the workerd it spawns.
        .process_group(0)
        .spawn()
        .expect("start wrangler")
}

/// Stops `wrangler dev` and the workerd it spawned (its process group).
fn stop(child: &mut Child) {
    let pgid = child.id() as i32;
    // SAFETY: signalling a process group this host created.
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
}

fn ctxgate(home: &Path, args: &[&str]) -> Value {
    ctxgate_with(home, args, &[])
}

/// `ctxgate` with `CTXGATE_HOME` and `vars` set; its JSON output.
fn ctxgate_with(home: &Path, args: &[&str], vars: &[(&str, &str)]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(args)
        .env("CTXGATE_HOME", home)
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ctxgate {args:?}: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

impl WorkerHost {
    /// The process group `wrangler dev` and its workerd run in (`benches/worker.rs` reads
    /// workerd's CPU time from it).
    #[allow(dead_code)]
    pub fn process_group(&self) -> u32 {
        self.child.id()
    }

    /// The port of wrangler's V8 inspector for the Worker (`scripts/worker-cpu-profile.mjs`).
    #[allow(dead_code)]
    pub fn inspector_port(&self) -> u16 {
        self.inspector_port
    }
}

impl Host for WorkerHost {
    fn base_url(&self) -> &str {
        &self.url
    }

    fn admin_secret(&self) -> &str {
        ADMIN_SECRET
    }

    fn refuses_before_body(&self) -> bool {
        false
    }

    fn publish(&self, org: &str, name: &str, dir: &Path) -> Value {
        // Index natively, as the batch side would, then upload with `ctxgate project publish`.
        let home = tempfile::tempdir().unwrap();
        ctxgate(home.path(), &["org", "create", org, "--format", "json"]);
        // The version published is a delta over a base (the index format's layers): a copy of
        // the files with half of one of them is indexed first, then the file made whole again
        // and re-indexed, so every case of the suite answers from a base and a delta merged.
        // Not a dot-folder: a hidden root would be walked as hidden.
        let copy = tempfile::Builder::new()
            .prefix("ctxgate-suite-")
            .tempdir()
            .unwrap();
        copy_tree(dir, copy.path());
        let (held_back, text) = largest_file(copy.path());
        // Its first half, cut at a line (a one-line file without its last byte): the base
        // has the file, changed.
        let lines: Vec<&[u8]> = text.split_inclusive(|b| *b == b'\n').collect();
        let half = match lines.len() {
            0 | 1 => text[..text.len().saturating_sub(1)].to_vec(),
            n => lines[..n / 2].concat(),
        };
        std::fs::write(&held_back, half).unwrap();
        let copied = copy.path().to_string_lossy();
        // Postings in segments, as a large repository's are: the Worker's suite reads them
        // by range (the native suite keeps the small-index default, postings in the pack).
        let lists = ("CTXGATE_LISTS_INLINE_MAX", "0");
        ctxgate_with(
            home.path(),
            &[
                "project", "add", "--org", org, "--name", name, "--format", "json", &copied,
            ],
            &[lists],
        );
        std::fs::write(&held_back, text).unwrap();
        let reindexed = ctxgate_with(
            home.path(),
            &["project", "reindex", "--org", org, "--format", "json", name],
            &[lists, ("CTXGATE_DELTA_MAX_SHARE", "1")],
        );
        assert_eq!(reindexed["changed"], true, "{reindexed}");
        let added = reindexed["project"].clone();
        let manifests = manifests_under(home.path());
        assert!(
            manifests.iter().any(|m| m.contains("\"base\"")),
            "the published version is a delta over a base"
        );
        let published = ctxgate_with(
            home.path(),
            &[
                "project", "publish", "--org", org, "--name", name, "--to", &self.url, "--format",
                "json",
            ],
            &[("CTXGATE_ADMIN_SECRET", ADMIN_SECRET)],
        );
        assert_eq!(published["id"], added["id"], "{published}");
        assert_eq!(
            published["version"], added["current_version"],
            "{published}"
        );
        assert!(
            published["objects"].as_u64().unwrap() >= 3,
            "manifest, pack and segments: {published}"
        );
        published
    }
}

/// Copies the files under `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The largest file under `root` outside hidden folders, and its bytes.
fn largest_file(root: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let mut best: Option<(u64, std::path::PathBuf)> = None;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            // Not a file of `.git` or another hidden folder: those are not indexed.
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else if best.as_ref().is_none_or(|b| meta.len() > b.0) {
                best = Some((meta.len(), entry.path()));
            }
        }
    }
    let path = best.expect("a file").1;
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// The text of every version manifest in a data directory.
fn manifests_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "manifest.json") {
                out.push(std::fs::read_to_string(path).unwrap());
            }
        }
    }
    out
}

/// A fresh isolate loads a version from the Workers Cache API instead of R2: one request reads
/// the version from R2 (and caches it once it has answered), then R2's persisted state is wiped
/// and workerd restarted, and the same request still answers the same prompt — while a project
/// of the same files that no isolate had read, wiped alike, cannot be answered.
#[allow(dead_code)]
pub fn fresh_isolates_read_index_objects_from_the_cache(host: &mut WorkerHost) {
    let org = "cachew";
    let key = org_with_key(host, org, json!({}));
    let dir = super::host::ledger_repo();
    host.publish(org, "read", dir.path());
    host.publish(org, "unread", dir.path());
    let ask = |host: &WorkerHost, project: &str| {
        post(
            host,
            "/v1/context",
            Some(&key),
            &json!({ "project": project, "query": "how are tokens reserved", "budget": 2000 }),
        )
    };
    let first = ask(host, "read");
    assert_eq!(first.status, 200, "{}", first.body);
    // The Worker writes what it read into the cache after the answer (`waitUntil`), so the
    // answer can arrive before the writes end; they take milliseconds for this repository.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    host.restart(|state| {
        let r2 = state.join("v3").join("r2");
        assert!(
            r2.is_dir(),
            "R2's persisted state is not where it was: {state:?}"
        );
        std::fs::remove_dir_all(&r2).unwrap();
    });
    let unread = ask(host, "unread");
    assert_ne!(
        unread.status, 200,
        "R2 was wiped, yet an uncached version loaded: {}",
        unread.body
    );
    let again = ask(host, "read");
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["prompt"], first.body["prompt"]);
}

/// `ctxgate project publish` refuses clearly: no secret in the environment, a wrong secret, an
/// organisation the Worker does not have, a project never indexed here.
#[allow(dead_code)]
pub fn publishing_refusals(host: &WorkerHost, dir: &Path) {
    let home = tempfile::tempdir().unwrap();
    ctxgate(
        home.path(),
        &["org", "create", "pubref", "--format", "json"],
    );
    let dir = dir.to_string_lossy().into_owned();
    ctxgate(
        home.path(),
        &[
            "project", "add", "--org", "pubref", "--name", "core", "--format", "json", &dir,
        ],
    );
    let publish = |name: &str, vars: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args([
                "project", "publish", "--org", "pubref", "--name", name, "--to", &host.url,
                "--format", "json",
            ])
            .env("CTXGATE_HOME", home.path())
            .env_remove("CTXGATE_ADMIN_SECRET")
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            v["error"]["code"].as_str().unwrap_or_default().to_string(),
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    };
    let (code, _) = publish("core", &[]);
    assert_eq!(code, "admin_secret_missing");
    let (code, message) = publish("core", &[("CTXGATE_ADMIN_SECRET", "not-the-secret-at-all")]);
    assert_eq!(code, "remote_store_error");
    assert!(message.contains("HTTP 401"), "{message}");
    // An upload larger than the general body limit (1 MiB here) with a wrong secret is refused
    // for the secret, not for its size: with the right one it would have been taken.
    let big = "x".repeat(1_500_000);
    let r = super::host::call(
        host,
        "PUT",
        "/v1/admin/orgs/pubref/objects/project/p0/segments/big.seg",
        Some("not-the-secret-at-all"),
        Some(&big),
        "application/octet-stream",
    );
    assert_eq!(
        (r.status, r.code()),
        (401, "invalid_admin_secret"),
        "{}",
        r.body
    );
    // The Worker has no organisation `pubref` yet.
    let (code, message) = publish("core", &[("CTXGATE_ADMIN_SECRET", ADMIN_SECRET)]);
    assert_eq!(code, "remote_store_error");
    assert!(message.contains("org_not_found"), "{message}");
    let (code, _) = publish("never-added", &[("CTXGATE_ADMIN_SECRET", ADMIN_SECRET)]);
    assert_eq!(code, "invalid_request");

    // Once the Worker has the organisation it publishes; publishing again skips every segment
    // (content-addressed, asked with HEAD) and sends only the pack and the manifest.
    let key = org_with_key(host, "pubref", json!({}));
    let secret = [("CTXGATE_ADMIN_SECRET", ADMIN_SECRET)];
    let args = [
        "project", "publish", "--org", "pubref", "--name", "core", "--to", &host.url, "--format",
        "json",
    ];
    let first = ctxgate_with(home.path(), &args, &secret);
    assert_eq!(first["skipped"], 0, "{first}");
    let segments = first["objects"].as_u64().unwrap() - 2;
    assert!(segments >= 1, "{first}");
    let again = ctxgate_with(home.path(), &args, &secret);
    assert_eq!(again["skipped"], segments, "{again}");
    assert_eq!(again["objects"], 2, "{again}");
    let r = post(
        host,
        "/v1/context",
        Some(&key),
        &json!({"project": "core", "query": "quota ledger", "budget": 2000}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

/// `ctxgate gc --to` collects a Worker's R2: three versions published, the two old ones and the
/// segments only they named are deleted (a dry run first deletes nothing), the current version
/// keeps answering, and a second collection finds nothing more. A Worker needs its org's admin
/// secret for it, like every admin call.
#[allow(dead_code)]
pub fn garbage_collection_on_r2(host: &WorkerHost) {
    let org = "gcr2";
    let key = org_with_key(host, org, json!({}));
    let repo = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    ctxgate(home.path(), &["org", "create", org, "--format", "json"]);
    let write = |n: u32| {
        std::fs::write(
            repo.path().join("ledger.rs"),
            format!("/// Reserves tokens, round {n}.\npub fn reserve_{n}(tokens: u64) -> u64 {{\n    tokens + {n}\n}}\n"),
        )
        .unwrap();
    };
    write(1);
    let dir = repo.path().to_string_lossy().into_owned();
    let added = ctxgate(
        home.path(),
        &[
            "project", "add", "--org", org, "--name", "core", "--format", "json", &dir,
        ],
    );
    let id = added["id"].as_str().unwrap().to_string();
    let secret = [("CTXGATE_ADMIN_SECRET", ADMIN_SECRET)];
    let publish = [
        "project", "publish", "--org", org, "--name", "core", "--to", &host.url, "--format", "json",
    ];
    ctxgate_with(home.path(), &publish, &secret);
    for n in 2..=3 {
        write(n);
        ctxgate(
            home.path(),
            &[
                "project", "reindex", "--org", org, "core", "--format", "json",
            ],
        );
        let published = ctxgate_with(home.path(), &publish, &secret);
        assert_eq!(published["version"], n, "{published}");
    }
    let stored = |version: u64| {
        let path = format!(
            "/v1/admin/orgs/{org}/objects/project/{id}/version/{version:010}/manifest.json"
        );
        super::host::call(host, "HEAD", &path, Some(ADMIN_SECRET), None, "").status
    };
    // HEAD answers 204 for a stored object, 404 for one that is not.
    assert_eq!((stored(1), stored(2), stored(3)), (204, 204, 204));
    let gc = |dry: bool| {
        let mut args = vec![
            "gc", "--to", &host.url, "--org", org, "--keep", "0", "--grace", "0s", "--format",
            "json",
        ];
        if dry {
            args.push("--dry-run");
        }
        ctxgate_with(home.path(), &args, &secret)
    };
    let dry = gc(true);
    assert_eq!(dry["deleted_versions"], 2, "{dry}");
    assert!(dry["bytes_freed"].as_u64().unwrap() > 0, "{dry}");
    assert_eq!(stored(1), 204, "a dry run deletes nothing");
    let done = gc(false);
    assert_eq!(done["deleted_objects"], dry["deleted_objects"], "{done}");
    assert_eq!(done["projects"][0]["kept_versions"], json!([3]), "{done}");
    assert_eq!((stored(1), stored(2), stored(3)), (404, 404, 204));
    let r = post(
        host,
        "/v1/context",
        Some(&key),
        &json!({"project": "core", "query": "reserve tokens", "budget": 2000}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["prompt"].as_str().unwrap().contains("reserve_3"),
        "{}",
        r.body
    );
    let again = gc(false);
    assert_eq!(again["deleted_objects"], 0, "{again}");

    // The Worker's own daily pass (its cron, run here through `/__scheduled`) collects R2 by
    // the policy in its vars (this host: keep 0, no grace) for every org: version 3 goes once
    // version 4 is published.
    write(4);
    ctxgate(
        home.path(),
        &[
            "project", "reindex", "--org", org, "core", "--format", "json",
        ],
    );
    let published = ctxgate_with(home.path(), &publish, &secret);
    assert_eq!(published["version"], 4, "{published}");
    assert_eq!((stored(3), stored(4)), (204, 204));
    let before = host.output().matches("\"event\":\"gc\"").count();
    let cron = super::host::call(host, "GET", "/__scheduled?cron=23+4+*+*+*", None, None, "");
    assert_eq!(cron.status, 200, "{}", cron.body);
    let deadline = Instant::now() + Duration::from_secs(30);
    let line = loop {
        let log = host.output();
        if let Some(line) = log
            .lines()
            .filter(|l| l.contains("\"event\":\"gc\""))
            .nth(before)
        {
            break line.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no gc line in the Worker's log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let start = line.find('{').unwrap();
    let pass: Value = serde_json::from_str(&line[start..]).unwrap();
    assert!(pass["deleted_versions"].as_u64().unwrap() >= 1, "{pass}");
    assert!(pass["bytes_freed"].as_u64().unwrap() > 0, "{pass}");
    assert_eq!(pass["failed"], json!([]), "{pass}");
    assert_eq!((stored(3), stored(4)), (404, 204));
    let r = post(
        host,
        "/v1/context",
        Some(&key),
        &json!({"project": "core", "query": "reserve tokens", "budget": 2000}),
    );
    assert!(
        r.body["prompt"]
            .as_str()
            .unwrap_or_default()
            .contains("reserve_4"),
        "{}",
        r.body
    );
    // Without the admin secret nothing is collected.
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["gc", "--to", &host.url, "--org", org, "--format", "json"])
        .env("CTXGATE_HOME", home.path())
        .env("CTXGATE_ADMIN_SECRET", "not-the-secret-at-all")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "remote_store_error", "{v}");
}
