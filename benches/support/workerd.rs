//! Reading workerd from outside: its processes, CPU per thread, and a request probe that
//! reports wall time and the CPU workerd spent on it (`benches/worker.rs`, `benches/scale.rs`).

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// The workerd processes of `wrangler dev`'s process group.
pub fn workerd_pids(group: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces, so split after its `)`.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let pgrp = rest
            .split_whitespace()
            .nth(2)
            .and_then(|v| v.parse::<u32>().ok());
        if pgrp == Some(group) && head.contains("(workerd") {
            pids.push(pid);
        }
    }
    pids
}

/// Nanoseconds on a CPU of every thread of `pids`, by thread.
pub fn cpu_by_thread(pids: &[u32]) -> std::collections::HashMap<String, u64> {
    let mut threads = std::collections::HashMap::new();
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
                let ns = s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
                threads.insert(task.path().display().to_string(), ns);
            }
        }
    }
    threads
}

/// Nanoseconds on a CPU, summed over every thread of `pids`.
pub fn cpu_ns(pids: &[u32]) -> u64 {
    cpu_by_thread(pids).values().sum()
}

/// CPU milliseconds between two snapshots: all threads, and the busiest one. The busiest thread
/// is the one that ran the request's JavaScript and wasm (an isolate runs on one thread at a
/// time); the rest is workerd's I/O, its local storage simulations and V8's background
/// compilers, which production does not bill to the request.
pub fn cpu_delta(
    before: &std::collections::HashMap<String, u64>,
    after: &std::collections::HashMap<String, u64>,
) -> (f64, f64) {
    let mut total = 0;
    let mut busiest = 0;
    for (thread, ns) in after {
        let d = ns.saturating_sub(before.get(thread).copied().unwrap_or(0));
        total += d;
        busiest = busiest.max(d);
    }
    (total as f64 / 1e6, busiest as f64 / 1e6)
}

pub struct Probe {
    pub agent: ureq::Agent,
    pub base: String,
    pub pids: Vec<u32>,
    /// The `ctxgate-storage-read` header of the last answer (bytes it read from storage).
    pub last_read: std::cell::Cell<Option<u64>>,
}

impl Probe {
    /// A probe of the workerd processes `pids` serving `base`, with a long timeout (a cold
    /// load of a large version takes seconds).
    pub fn new(base: &str, pids: Vec<u32>) -> Self {
        Self {
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(120)))
                .build()
                .into(),
            base: base.to_string(),
            pids,
            last_read: Default::default(),
        }
    }

    /// Sends one request; returns its status, wall milliseconds and workerd CPU milliseconds
    /// (all threads, busiest thread).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> (u16, f64, (f64, f64)) {
        let url = format!("{}{path}", self.base);
        let cpu = cpu_by_thread(&self.pids);
        let t = Instant::now();
        let auth = key.map(|k| format!("Bearer {k}")).unwrap_or_default();
        let res = if method == "GET" {
            self.agent.get(&url).header("Authorization", &auth).call()
        } else {
            self.agent
                .post(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(body.unwrap_or("{}"))
        };
        let mut res = res.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        self.last_read.set(
            res.headers()
                .get("ctxgate-storage-read")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok()),
        );
        let _ = res.body_mut().read_to_string();
        let wall = t.elapsed().as_secs_f64() * 1e3;
        // workerd finishes its bookkeeping just after the answer; let it settle before reading.
        std::thread::sleep(Duration::from_millis(30));
        let cpu = cpu_delta(&cpu, &cpu_by_thread(&self.pids));
        (res.status().as_u16(), wall, cpu)
    }

    pub fn wasm_memory(&self) -> Option<u64> {
        let res = self
            .agent
            .get(&format!("{}/healthz", self.base))
            .call()
            .ok()?;
        res.headers()
            .get("x-ctxgate-wasm-memory-bytes")?
            .to_str()
            .ok()?
            .parse()
            .ok()
    }
}

/// Runs `scripts/worker-cpu-profile.mjs` against the inspector on `inspector_port` with `plan`
/// (its REQUESTS_JSON), sampling every `interval_us`; its report, or why there is none.
pub fn v8_profile(inspector_port: u16, plan: &serde_json::Value, interval_us: u32) -> String {
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), plan.to_string()).expect("write the plan");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("node")
        .arg(root.join("scripts/worker-cpu-profile.mjs"))
        .arg(inspector_port.to_string())
        .arg(file.path())
        .env("WS_MODULE", root.join("target/tools/npm/node_modules/ws"))
        .env("SAMPLING_US", interval_us.to_string())
        .output()
        .expect("run node");
    if out.status.success() {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        format!("no profile: {}", String::from_utf8_lossy(&out.stderr))
    }
}

/// `scripts/worker-inspector.mjs` attached to the Worker's inspector for as long as this lives:
/// it drains `wrangler dev`'s inspector-proxy buffer (which otherwise grows with every
/// subrequest, in wrangler's process, not the Worker's) and records the isolate's JavaScript
/// heap every second.
#[allow(dead_code)]
pub struct InspectorDrain {
    child: std::process::Child,
    out: tempfile::NamedTempFile,
}

#[allow(dead_code)]
impl InspectorDrain {
    /// Attaches to the inspector on `inspector_port`; waits for its first heap reading.
    pub fn attach(inspector_port: u16) -> Self {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = tempfile::NamedTempFile::new().expect("temp file");
        let child = std::process::Command::new("node")
            .arg(root.join("scripts/worker-inspector.mjs"))
            .arg(inspector_port.to_string())
            .arg(out.path())
            .env("WS_MODULE", root.join("target/tools/npm/node_modules/ws"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("run node");
        let drain = Self { child, out };
        let start = std::time::Instant::now();
        while drain.heap_mib().is_none() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "scripts/worker-inspector.mjs reported no heap"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        drain
    }

    /// The isolate's JavaScript heap in use at the latest reading, MiB.
    pub fn heap_mib(&self) -> Option<f64> {
        let text = std::fs::read_to_string(self.out.path()).ok()?;
        let v: serde_json::Value = serde_json::from_str(text.lines().last()?).ok()?;
        Some(v["used_bytes"].as_f64()? / (1024.0 * 1024.0))
    }
}

impl Drop for InspectorDrain {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `perf record -g` over workerd's processes for as long as this lives, when the variable
/// `CTXGATE_WORKER_PERF` names the file to write (`scripts/workerd_perf_split.py` reads it):
/// workerd is not stripped, so its own C++ and V8's show by name, unlike in V8's sampler, which
/// over-counts native calls.
#[allow(dead_code)]
pub struct PerfRecording {
    child: std::process::Child,
}

#[allow(dead_code)]
impl PerfRecording {
    /// Starts recording `pids` if asked to, then gives perf half a second to attach (it says
    /// nothing when it has).
    pub fn start(pids: &[u32]) -> Option<Self> {
        let out = std::env::var("CTXGATE_WORKER_PERF").ok()?;
        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
        let child = std::process::Command::new("perf")
            .args([
                "record",
                "-F",
                "4000",
                "-g",
                "-o",
                &out,
                "-p",
                &pids.join(","),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| eprintln!("perf record did not start: {e}"))
            .ok()?;
        std::thread::sleep(Duration::from_millis(500));
        Some(Self { child })
    }
}

impl Drop for PerfRecording {
    fn drop(&mut self) {
        // SIGINT lets perf write its file out.
        let _ = std::process::Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Bytes of wasm memory as MiB for a report line (`?` when the Worker did not say).
pub fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("?".to_string(), |b| {
        format!("{:.1} MiB", b as f64 / 1048576.0)
    })
}
