//! The API's performance inside Cloudflare's runtime: the Worker built by `scripts/worker-build.sh`
//! under `wrangler dev --local` (workerd), over the same 1M+ token corpus as `benches/api.rs`.
//!
//! Run with `scripts/bench-worker.sh`. workerd's clocks do not advance while a Worker computes
//! (a Spectre mitigation), so nothing inside the Worker can time itself; CPU is read from outside
//! instead, as the nanoseconds workerd's threads spent on a CPU (`/proc/<pid>/task/*/schedstat`)
//! across a request. That figure includes workerd's own HTTP handling and its local R2 / Durable
//! Object storage, so it is an upper bound of the Worker's CPU time. Memory is the isolate's wasm
//! linear memory, which the Worker reports on `/healthz`. Nothing here asserts a time.

#[allow(dead_code)]
#[path = "../tests/api/host.rs"]
mod host;
#[allow(dead_code)]
#[path = "../tests/api/worker.rs"]
mod worker;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use host::{Host, org_with_key};
use serde_json::json;

const QUERIES: &[&str] = &[
    "how does the lazy DFA handle cache clearing when the cache is full",
    "where are command line arguments validated and conflicts reported",
    "serialize a map with non-string keys to JSON",
    "parallel iterator splitting and work stealing join",
    "find the byte position of a substring quickly with memchr",
];

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The workerd processes of `wrangler dev`'s process group.
fn workerd_pids(group: u32) -> Vec<u32> {
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

/// Nanoseconds on a CPU, summed over every thread of `pids`.
fn cpu_ns(pids: &[u32]) -> u64 {
    let mut total = 0;
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
                total += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    total
}

struct Probe {
    agent: ureq::Agent,
    base: String,
    pids: Vec<u32>,
}

impl Probe {
    /// Sends one request; returns its status, wall milliseconds and workerd CPU milliseconds.
    fn send(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> (u16, f64, f64) {
        let url = format!("{}{path}", self.base);
        let cpu = cpu_ns(&self.pids);
        let t = Instant::now();
        let req = self.agent.post(&url);
        let res = match (method, body) {
            ("GET", _) => {
                let mut r = self.agent.get(&url);
                if let Some(k) = key {
                    r = r.header("Authorization", &format!("Bearer {k}"));
                }
                r.call()
            }
            (_, body) => {
                let mut r = req.header("Content-Type", "application/json");
                if let Some(k) = key {
                    r = r.header("Authorization", &format!("Bearer {k}"));
                }
                r.send(body.unwrap_or("{}"))
            }
        };
        let mut res = res.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let _ = res.body_mut().read_to_string();
        let wall = t.elapsed().as_secs_f64() * 1e3;
        // workerd finishes its bookkeeping just after the answer; let it settle before reading.
        std::thread::sleep(Duration::from_millis(30));
        let cpu = (cpu_ns(&self.pids) - cpu) as f64 / 1e6;
        (res.status().as_u16(), wall, cpu)
    }

    fn wasm_memory(&self) -> Option<u64> {
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

fn main() {
    let corpus = PathBuf::from(
        std::env::var("CTXGATE_BENCH_CORPUS").unwrap_or_else(|_| "target/bench-corpus".into()),
    );
    if !corpus.is_dir() {
        eprintln!(
            "no corpus at {}: run scripts/bench-corpus.sh first",
            corpus.display()
        );
        std::process::exit(1);
    }
    let worker = worker::WorkerHost::start_or_skip().unwrap_or_else(|| {
        eprintln!("no Worker build: run scripts/worker-build.sh first");
        std::process::exit(1)
    });
    let pids = workerd_pids(worker.process_group());
    assert!(!pids.is_empty(), "no workerd process under wrangler dev");
    let probe = Probe {
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into(),
        base: worker.base_url().to_string(),
        pids,
    };

    // `start_or_skip` waited for /healthz, so the isolate exists and the router is built; the
    // tokenizer is first used here.
    let key = org_with_key(&worker, "bench", json!({}));
    let text = std::fs::read_to_string(file!()).expect("some text");
    let body = json!({ "text": text, "model": "gpt-4o" }).to_string();
    let (status, wall, cpu) = probe.send("POST", "/v1/tokens/count", Some(&key), Some(&body));
    assert_eq!(status, 200);
    println!(
        "first tokens/count in the isolate (o200k, {} bytes): wall {wall:.1} ms, workerd CPU {cpu:.1} ms",
        text.len()
    );
    let (_, wall, cpu) = probe.send("POST", "/v1/tokens/count", Some(&key), Some(&body));
    println!("second tokens/count: wall {wall:.1} ms, workerd CPU {cpu:.1} ms");
    let before = probe.wasm_memory();

    let t = Instant::now();
    worker.publish("bench", "corpus", &corpus);
    eprintln!(
        "indexed and uploaded the corpus in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let ctx = |q: &str| json!({ "project": "corpus", "query": q, "budget": 32000 }).to_string();
    let (status, wall, cpu) = probe.send("POST", "/v1/context", Some(&key), Some(&ctx(QUERIES[0])));
    assert_eq!(status, 200);
    println!(
        "first /v1/context (loads the 1M-token version from R2), 32k: wall {wall:.1} ms, workerd CPU {cpu:.1} ms"
    );
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for i in 0..50 {
        let (status, wall, cpu) = probe.send(
            "POST",
            "/v1/context",
            Some(&key),
            Some(&ctx(QUERIES[i % QUERIES.len()])),
        );
        assert_eq!(status, 200);
        walls.push(wall);
        cpus.push(cpu);
    }
    walls.sort_by(f64::total_cmp);
    cpus.sort_by(f64::total_cmp);
    println!(
        "warm /v1/context at 32k (50): wall p50 {:.1} ms p99 {:.1} ms; workerd CPU p50 {:.1} ms p99 {:.1} ms",
        percentile(&walls, 0.5),
        percentile(&walls, 0.99),
        percentile(&cpus, 0.5),
        percentile(&cpus, 0.99)
    );
    let after = probe.wasm_memory();
    let mib = |b: Option<u64>| {
        b.map_or("?".to_string(), |b| {
            format!("{:.1} MiB", b as f64 / 1048576.0)
        })
    };
    println!(
        "isolate wasm memory: {} before the project, {} with the 1M-token version loaded",
        mib(before),
        mib(after)
    );
}
