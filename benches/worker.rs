//! The API's performance inside Cloudflare's runtime: the Worker built by `scripts/worker-build.sh`
//! under `wrangler dev --local` (workerd), over the same 1M+ token corpus as `benches/api.rs`.
//!
//! Run with `scripts/bench-worker.sh`. workerd's clocks do not advance while a Worker computes
//! (a Spectre mitigation), so nothing inside the Worker can time itself; CPU is read from outside
//! instead, as the nanoseconds workerd's threads spent on a CPU (`/proc/<pid>/task/*/schedstat`)
//! across a request. That figure includes workerd's own HTTP handling and its local R2 / Durable
//! Object storage, so it is an upper bound of the Worker's CPU time. Memory is the isolate's wasm
//! linear memory, which the Worker reports on `/healthz`. Nothing here asserts a time.

#[path = "support/mod.rs"]
mod support;
use support::QUERIES;
use support::percentile;

#[allow(dead_code)]
#[path = "../tests/api/host.rs"]
mod host;
#[allow(dead_code)]
#[path = "../tests/api/worker.rs"]
mod worker;

use std::time::{Duration, Instant};

use support::workerd::{PerfRecording, Probe, cpu_ns, mib, v8_profile, workerd_pids};

use host::{Host, org_with_key};
use serde_json::json;

fn main() {
    let corpus = support::corpus();
    if !worker::worker_module().exists() {
        eprintln!("no Worker build: run scripts/worker-build.sh first");
        std::process::exit(1);
    }
    let worker = worker::WorkerHost::start_cold();
    let pids = workerd_pids(worker.process_group());
    assert!(!pids.is_empty(), "no workerd process under wrangler dev");
    // Let workerd finish starting (its CPU stops moving) so the first request is measured alone.
    let mut last = cpu_ns(&pids);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = cpu_ns(&pids);
        if now.saturating_sub(last) < 5_000_000 {
            break;
        }
        last = now;
    }
    let probe = Probe::new(worker.base_url(), pids);
    let (status, wall, (cpu, busiest)) = probe.send("GET", "/healthz", None, None);
    assert_eq!(status, 200);
    println!(
        "first request in a fresh isolate (GET /healthz: builds the router; workerd may have compiled the module at start-up, outside this figure): wall {wall:.1} ms, workerd CPU {cpu:.1} ms (busiest thread {busiest:.1} ms)"
    );
    type Sample = (u16, f64, (f64, f64));
    let series = |n: usize, f: &dyn Fn(usize) -> Sample| -> [f64; 4] {
        let mut cpu = Vec::new();
        let mut busiest = Vec::new();
        let mut wall = Vec::new();
        for i in 0..n {
            let (status, w, (c, b)) = f(i);
            assert_eq!(status, 200);
            cpu.push(c);
            busiest.push(b);
            wall.push(w);
        }
        for v in [&mut cpu, &mut busiest, &mut wall] {
            v.sort_by(f64::total_cmp);
        }
        [
            percentile(&wall, 0.5),
            percentile(&cpu, 0.5),
            percentile(&cpu, 0.99),
            percentile(&busiest, 0.5),
        ]
    };
    let report = |what: &str, [wall, p50, p99, busy]: [f64; 4]| {
        println!(
            "{what}: wall p50 {wall:.1} ms; workerd CPU p50 {p50:.1} ms p99 {p99:.1} ms; busiest thread p50 {busy:.1} ms"
        );
    };
    // What workerd spends on any request (HTTP, routing, dev-mode bookkeeping).
    report(
        "GET /healthz (20)",
        series(20, &|_| probe.send("GET", "/healthz", None, None)),
    );
    let key = org_with_key(&worker, "bench", json!({}));
    // An authenticated read: the key lookup (KV) and the org's Durable Object.
    report(
        "GET /v1/projects, authenticated (20)",
        series(20, &|_| probe.send("GET", "/v1/projects", Some(&key), None)),
    );
    // Metered: reserve and settle in the Durable Object and an audit record; the count is small.
    let text = std::fs::read_to_string(file!()).expect("some text");
    let body = json!({ "text": text, "model": "gpt-4o" }).to_string();
    let (status, wall, (cpu, busiest)) =
        probe.send("POST", "/v1/tokens/count", Some(&key), Some(&body));
    assert_eq!(status, 200);
    println!(
        "first POST /v1/tokens/count in the isolate (loads the compiled-in o200k table): wall {wall:.1} ms, workerd CPU {cpu:.1} ms (busiest thread {busiest:.1} ms)"
    );
    report(
        &format!("POST /v1/tokens/count, o200k, {} bytes (20)", text.len()),
        series(20, &|_| {
            probe.send("POST", "/v1/tokens/count", Some(&key), Some(&body))
        }),
    );
    let before = probe.wasm_memory();

    let t = Instant::now();
    worker.publish("bench", "corpus", &corpus);
    eprintln!(
        "indexed and uploaded the corpus in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let ctx = |q: &str| json!({ "project": "corpus", "query": q, "budget": 32000 }).to_string();
    let (status, wall, (cpu, busiest)) =
        probe.send("POST", "/v1/context", Some(&key), Some(&ctx(QUERIES[0])));
    assert_eq!(status, 200);
    println!(
        "first /v1/context (loads the 1M-token version from R2), 32k: wall {wall:.1} ms, workerd CPU {cpu:.1} ms (busiest thread {busiest:.1} ms)"
    );
    // `CTXGATE_WORKER_PERF=FILE`: perf records workerd over these calls.
    let perf = PerfRecording::start(&workerd_pids(worker.process_group()));
    report(
        "warm /v1/context at 32k (50)",
        series(50, &|i| {
            probe.send(
                "POST",
                "/v1/context",
                Some(&key),
                Some(&ctx(QUERIES[i % QUERIES.len()])),
            )
        }),
    );
    drop(perf);
    // Under small budgets the learned ranker's trees re-score every candidate and signposts
    // read a few more chunk texts.
    let ctx8 = |q: &str| json!({ "project": "corpus", "query": q, "budget": 8000 }).to_string();
    report(
        "warm /v1/context at 8k (50; the learned ranker and signposts run)",
        series(50, &|i| {
            probe.send(
                "POST",
                "/v1/context",
                Some(&key),
                Some(&ctx8(QUERIES[i % QUERIES.len()])),
            )
        }),
    );
    // The same warm calls under V8's sampling profiler: where the isolate's time goes (its
    // non-idle time is not CPU time; see scripts/worker-cpu-profile.mjs).
    let bodies: Vec<String> = QUERIES.iter().map(|q| ctx(q)).collect();
    let plan = json!({
        "url": format!("{}/v1/context", worker.base_url()),
        "headers": { "authorization": format!("Bearer {key}"), "content-type": "application/json" },
        "bodies": bodies,
        "rounds": (50 / QUERIES.len()).max(1),
    });
    // Sampling slows the isolate: a coarse interval disturbs it least, a fine one sees more.
    for (interval, what) in [(1000, "sampled every 1 ms"), (100, "sampled every 100 µs")] {
        println!(
            "warm /v1/context at 32k under V8's profiler ({what}; shares, not CPU time):\n{}",
            v8_profile(worker.inspector_port(), &plan, interval)
        );
    }
    let after = probe.wasm_memory();
    println!(
        "isolate wasm memory: {} before the project, {} with the 1M-token version loaded",
        mib(before),
        mib(after)
    );
    drop(worker);
    // A fresh isolate's first request under the profiler: where start-up goes.
    let cold = worker::WorkerHost::start_cold();
    let plan = json!({
        "url": format!("{}/healthz", cold.base_url()),
        "headers": {},
        "bodies": [null],
        "rounds": 1,
    });
    println!(
        "first request in a fresh isolate (GET /healthz) under V8's profiler (every 100 µs):\n{}",
        v8_profile(cold.inspector_port(), &plan, 100)
    );
}
