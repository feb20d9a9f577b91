//! Large repositories end to end (issue: serve large repositories from the edge). For each
//! corpus in `CTXGATE_SCALE_CORPORA` (`name=folder,name=folder`; built by
//! `scripts/bench-scale.sh`): index natively, warm `/v1/context` at 32k on `ctxgate serve`,
//! publish to the Worker under `wrangler dev --local` (workerd), a fresh isolate's first answer
//! with an empty cache, then warm answers; one `scale:` line per corpus. Nothing asserts a time.
//!
//! `cold_read_mib` is what the first answer reads from storage, as the Worker counts it (its
//! `ctxgate-storage-read` header: the manifest and pack it opened, the chunk-text ranges it
//! read); `version_mib` on stderr is the whole version for comparison.

#[path = "support/mod.rs"]
mod support;
use support::percentile;
use support::workerd::{PerfRecording, Probe, v8_profile, workerd_pids};

#[allow(dead_code)]
#[path = "../tests/api/host.rs"]
mod host;
#[allow(dead_code)]
#[path = "../tests/api/worker.rs"]
mod worker;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use host::{Host, org_with_key};
use serde_json::{Value, json};

/// Questions any large code base can be asked; the figures are about cost, not quality.
const QUERIES: &[&str] = &[
    "where are command line arguments parsed and validated",
    "how is a file read from disk and its errors reported",
    "where is the HTTP server started and requests routed",
    "how are tests for the module loader organised",
    "where is configuration loaded and merged with defaults",
];

fn ctxgate(home: &Path, args: &[&str], vars: &[(&str, &str)]) -> Result<Value, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(args)
        .env("CTXGATE_HOME", home)
        .envs(vars.iter().copied())
        .output()
        .map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    if out.status.success() {
        Ok(v)
    } else {
        Err(v["error"]["code"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| String::from_utf8_lossy(&out.stderr).into_owned()))
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
}

fn body(q: &str) -> Value {
    json!({ "project": "corpus", "query": q, "budget": 32000 })
}

fn main() {
    let spec = std::env::var("CTXGATE_SCALE_CORPORA").unwrap_or_default();
    if spec.is_empty() {
        eprintln!("set CTXGATE_SCALE_CORPORA=name=folder,...; scripts/bench-scale.sh does");
        std::process::exit(1);
    }
    for entry in spec.split(',') {
        let Some((name, dir)) = entry.split_once('=') else {
            eprintln!("`{entry}`: expected name=folder");
            std::process::exit(1);
        };
        run(name, Path::new(dir));
    }
}

fn run(name: &str, dir: &Path) {
    let home = tempfile::tempdir().expect("temp dir");
    let dir_s = dir.to_string_lossy();
    ctxgate(
        home.path(),
        &["org", "create", "bench", "--format", "json"],
        &[],
    )
    .expect("org");
    let t = Instant::now();
    let added = ctxgate(
        home.path(),
        &[
            "project", "add", "--org", "bench", "--name", "corpus", "--format", "json", &dir_s,
        ],
        &[],
    )
    .expect("index");
    eprintln!("{name}: indexed in {:.1} s", t.elapsed().as_secs_f64());
    let version_bytes: u64 = files_under(&home.path().join("objects"))
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let _ = added;
    eprintln!(
        "{name}: version_mib={:.1} (manifest, pack and every segment)",
        version_bytes as f64 / 1048576.0
    );

    let line = measure(name, home.path());
    println!("{line}");
    // CTXGATE_SCALE_DELTA=1: the same after one new file, published as a delta over the
    // version above (the index format's layers): what a reader of a delta version costs.
    if std::env::var_os("CTXGATE_SCALE_DELTA").is_some() {
        let added = dir.join("ctxgate-scale-delta.md");
        let _gone = RemoveOnDrop(added.clone());
        std::fs::write(&added, "# One more file\n\nA note the delta carries.\n")
            .expect("write a file into the corpus");
        let reindexed = ctxgate(
            home.path(),
            &[
                "project", "reindex", "--org", "bench", "--format", "json", "corpus",
            ],
            &[],
        )
        .expect("reindex");
        let manifests: Vec<String> = files_under(&home.path().join("objects"))
            .into_iter()
            .filter(|p| p.ends_with("manifest.json"))
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect();
        eprintln!(
            "{name}+delta: version {} is a delta over a base: {}",
            reindexed["project"]["current_version"],
            manifests.iter().any(|m| m.contains("\"base\""))
        );
        println!("{}", measure(&format!("{name}+delta"), home.path()));
    }
}

/// Removes a file when dropped (a file a bench added to a corpus, whatever happens).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The `scale:` line of the current version of project `corpus` in data directory `home`:
/// natively, then through the Worker.
fn measure(name: &str, home: &Path) -> String {
    // Native: a warm `ctxgate serve` over the same data directory; the app's own time per
    // answer (its Server-Timing header).
    let native_key = ctxgate(
        home,
        &["key", "create", "--org", "bench", "--format", "json"],
        &[],
    )
    .expect("key")["key"]
        .as_str()
        .expect("a key")
        .to_string();
    let (tokens, native_ms) = {
        let server = Serve::start(home);
        let first = server.context(&native_key, &body(QUERIES[0]));
        let tokens = first.1["savings"]["repo_tokens"].as_u64().unwrap_or(0);
        let times: Vec<f64> = (0..20)
            .map(|i| {
                server
                    .context(&native_key, &body(QUERIES[i % QUERIES.len()]))
                    .0
            })
            .collect();
        (tokens, median(times))
    };

    // The Worker: publish, then a fresh isolate with an empty cache, then warm answers.
    let mut w = worker::WorkerHost::start_cold();
    let key = org_with_key(&w, "bench", json!({}));
    let published = ctxgate(
        home,
        &[
            "project",
            "publish",
            "--org",
            "bench",
            "--name",
            "corpus",
            "--to",
            w.base_url(),
            "--format",
            "json",
        ],
        &[("CTXGATE_ADMIN_SECRET", host::ADMIN_SECRET)],
    );
    let mut cold_read: Option<u64> = None;
    // Every workerd thread's warm median, and the busiest thread's for an org with limits
    // (CTXGATE_SCALE_LIMITED), when measured.
    let mut warm_all: Option<f64> = None;
    let mut warm_limited: Option<f64> = None;
    let (publish, memory, warm, cold) = match published {
        Err(code) => (code, None, None, None),
        Ok(_) => {
            w.restart(|state| {
                for p in std::fs::read_dir(state.join("v3"))
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    if p.file_name().to_string_lossy().contains("cache") {
                        let _ = std::fs::remove_dir_all(p.path());
                    }
                }
            });
            let probe = Probe {
                agent: ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(600)))
                    .build()
                    .into(),
                base: w.base_url().to_string(),
                pids: workerd_pids(w.process_group()),
                last_read: Default::default(),
            };
            let first = body(QUERIES[0]).to_string();
            let (status, cold_ms, _) = probe.send("POST", "/v1/context", Some(&key), Some(&first));
            cold_read = probe.last_read.get();
            // Where the isolate's memory stands once the version is open and one answer was
            // given, beside the figure after 20 more (a diagnostic, on stderr).
            if let Some(b) = probe.wasm_memory() {
                eprintln!(
                    "{name}: isolate wasm memory after the first answer: {:.1} MiB",
                    b as f64 / 1048576.0
                );
            }
            if status != 200 {
                (format!("http_{status}"), None, None, None)
            } else {
                let mut busiest = Vec::new();
                let mut all_threads = Vec::new();
                for i in 0..20 {
                    let b = body(QUERIES[i % QUERIES.len()]).to_string();
                    let (s, _, (all, busy)) =
                        probe.send("POST", "/v1/context", Some(&key), Some(&b));
                    assert_eq!(s, 200);
                    busiest.push(busy);
                    all_threads.push(all);
                }
                // Beside the busiest thread, every workerd thread: the org's Durable Object
                // runs in the same process, on the request's thread or another one.
                let all_ms = median(all_threads);
                warm_all = Some(all_ms);
                eprintln!(
                    "{name}: warm /v1/context at 32k, every workerd thread: median {all_ms:.1} ms"
                );
                let mem = probe.wasm_memory().map(|b| b as f64 / 1048576.0);
                // CTXGATE_SCALE_SOAK=N: N more warm calls, the busiest thread's median per block
                // of 20 on stderr (how the figure moves as V8 tiers the module up).
                let soak: usize = std::env::var("CTXGATE_SCALE_SOAK")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut block = Vec::new();
                // CTXGATE_WORKER_PERF=FILE (with a soak): perf records workerd over those calls,
                // past the tier-up of the line's first ones (`scripts/workerd_perf_split.py`).
                let perf = (soak > 0)
                    .then(|| PerfRecording::start(&workerd_pids(w.process_group())))
                    .flatten();
                for i in 0..soak {
                    let b = body(QUERIES[i % QUERIES.len()]).to_string();
                    let (s, _, (_, busy)) = probe.send("POST", "/v1/context", Some(&key), Some(&b));
                    assert_eq!(s, 200);
                    block.push(busy);
                    if block.len() == 20 {
                        eprintln!(
                            "{name}: warm calls {}-{}: busiest thread median {:.1} ms",
                            i + 2,
                            i + 21,
                            median(std::mem::take(&mut block))
                        );
                    }
                }
                drop(perf);
                // CTXGATE_SCALE_PROFILE=1: where the isolate spends the warm calls (V8's
                // sampling profiler; shares, not CPU time), on stderr.
                if std::env::var_os("CTXGATE_SCALE_PROFILE").is_some() {
                    let plan = json!({
                        "url": format!("{}/v1/context", w.base_url()),
                        "headers": { "authorization": format!("Bearer {key}"),
                                     "content-type": "application/json" },
                        "bodies": QUERIES.iter().map(|q| body(q).to_string()).collect::<Vec<_>>(),
                        "rounds": 4,
                    });
                    eprintln!(
                        "{name}: warm /v1/context at 32k under V8's profiler:\n{}",
                        v8_profile(w.inspector_port(), &plan, 100)
                    );
                }
                // The org above has no limits, so its warm calls reserve nothing before the work
                // (one Durable Object round trip a call, at settlement). An org with limits makes
                // two: its figure beside the line's (on stderr), on a restarted isolate.
                if std::env::var_os("CTXGATE_SCALE_LIMITED").is_some() {
                    let limits = json!({ "tokens_per_day": 1u64 << 50 }).to_string();
                    let r = host::call(
                        &w,
                        "PUT",
                        "/v1/admin/orgs/bench/limits",
                        Some(host::ADMIN_SECRET),
                        Some(&limits),
                        "application/json",
                    );
                    assert_eq!(r.status, 200, "{}", r.body);
                    w.restart(|_| {});
                    let limited = Probe {
                        agent: probe.agent.clone(),
                        base: probe.base.clone(),
                        pids: workerd_pids(w.process_group()),
                        last_read: Default::default(),
                    };
                    let mut limited_busiest = Vec::new();
                    for i in 0..21 {
                        let b = body(QUERIES[i % QUERIES.len()]).to_string();
                        let (s, _, (_, busy)) =
                            limited.send("POST", "/v1/context", Some(&key), Some(&b));
                        assert_eq!(s, 200);
                        if i > 0 {
                            limited_busiest.push(busy);
                        }
                    }
                    let limited_ms = median(limited_busiest);
                    warm_limited = Some(limited_ms);
                    eprintln!(
                        "{name}: warm /v1/context at 32k for an org with limits (a reservation \
                         per call): busiest thread median {limited_ms:.1} ms"
                    );
                }
                ("ok".to_string(), mem, Some(median(busiest)), Some(cold_ms))
            }
        }
    };
    let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    // The warm figures as multiples of this run's native warm call, so that a line from one
    // machine can be read on another (a slower machine is slower at both).
    let ratio = |v: Option<f64>| {
        v.filter(|_| native_ms > 0.0)
            .map_or("-".to_string(), |v| format!("{:.2}", v / native_ms))
    };
    format!(
        "scale: corpus={name} tokens={tokens} publish={publish} memory_mib={} warm_cpu_ms={} warm_all_threads_ms={} warm_limits_cpu_ms={} cold_ms={} cold_read_mib={} native_ms={native_ms:.1} warm_x_native={} warm_all_x_native={} warm_limits_x_native={}",
        show(memory),
        show(warm),
        show(warm_all),
        show(warm_limited),
        show(cold),
        show(cold_read.map(|b| b as f64 / 1048576.0)),
        ratio(warm),
        ratio(warm_all),
        ratio(warm_limited),
    )
}

/// `ctxgate serve` over a data directory.
struct Serve {
    child: std::process::Child,
    url: String,
    agent: ureq::Agent,
}

impl Serve {
    fn start(home: &Path) -> Self {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(["serve", "--addr", "127.0.0.1:0", "--format", "json"])
            .env("CTXGATE_HOME", home)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("ctxgate serve");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("startup line");
        let v: Value = serde_json::from_str(&line).expect("startup JSON");
        Self {
            child,
            url: v["listening"].as_str().expect("address").to_string(),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(600)))
                .build()
                .into(),
        }
    }

    /// Server-side milliseconds and the answer of one `/v1/context`.
    fn context(&self, key: &str, body: &Value) -> (f64, Value) {
        let mut res = self
            .agent
            .post(&format!("{}/v1/context", self.url))
            .header("Authorization", &format!("Bearer {key}"))
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .expect("native /v1/context");
        assert_eq!(res.status().as_u16(), 200);
        let ms = res
            .headers()
            .get("server-timing")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("dur=").nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        let text = res
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .expect("body");
        (ms, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
