//! Load and soak on loopback: `POST /v1/context` at a 8k budget from 16 and then 64 concurrent
//! clients, 60 s each, against `ctxgate serve` and against the Worker under workerd (`wrangler
//! dev --local`), over the 1M+ token corpus of `scripts/bench-corpus.sh`.
//!
//! Run with `scripts/load.sh`. One line per run, starting with `load:`: requests, throughput,
//! client-side p50/p99, errors (any answer but 200, or no answer), the server's resident memory
//! before and after (workerd's processes for the Worker), whether it stayed within the stated
//! growth bound, and whether the quota is exact: the tokens the org's usage counted over the run
//! equal the sum of `tokens_total` over the answers delivered. The load generator runs on the
//! same machine as the server and shares its cores.
//!
//! `CTXGATE_LOAD_HOSTS` (`native,worker`), `CTXGATE_LOAD_CLIENTS` (`16,64`) and
//! `CTXGATE_LOAD_SECONDS` (`60`) narrow a run; each client count is first run unreported for
//! `CTXGATE_LOAD_WARM_SECONDS` (`60`), so the memory bound is checked on a warm server.
//! `CTXGATE_LOAD_ROUTE` (`context`, `usage` or `healthz`) calls another route, to tell where
//! memory grows: `healthz` touches no storage, `usage` reads the org's key and its Durable
//! Object but no index, `context` does everything.
//!
//! Under workerd, `scripts/worker-inspector.mjs` stays attached to the Worker's inspector for the
//! whole run: `wrangler dev`'s inspector proxy otherwise keeps every runtime event in a buffer
//! that only a DevTools client drains (see that script), and reports the isolate's JS heap.

#[path = "support/mod.rs"]
mod support;
use support::{QUERIES, percentile};

#[allow(dead_code)]
#[path = "../tests/api/host.rs"]
mod host;
#[allow(dead_code)]
#[path = "../tests/api/worker.rs"]
mod worker;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use host::{Host, NativeHost, get, org_with_key, post};
use serde_json::json;
use worker::WorkerHost;

const BUDGET: u64 = 8000;
/// The memory-growth bound: resident memory after a run may exceed what it was before by at
/// most this much (caches are warm before the first run; what is left is allocator slack
/// from the peak of concurrent requests, not a leak).
const GROWTH_BOUND_MIB: f64 = 64.0;

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Resident memory of `pids`, MiB (`VmRSS` in `/proc/<pid>/status`).
fn rss_mib(pids: &[u32]) -> f64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .sum::<f64>()
        / 1024.0
}

/// The isolate's wasm linear memory, MiB, where the host reports it (the Worker's `/healthz`).
fn wasm_mib(host: &dyn Host) -> Option<f64> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let res = agent
        .get(format!("{}/healthz", host.base_url()))
        .call()
        .ok()?;
    let bytes: f64 = res
        .headers()
        .get("x-ctxgate-wasm-memory-bytes")?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    Some(bytes / (1 << 20) as f64)
}

/// Tokens the org's usage has counted.
fn counted(host: &dyn Host, key: &str) -> u64 {
    let u = get(host, "/v1/usage", Some(key));
    assert_eq!(u.status, 200, "{}", u.body);
    u.body["usage"]["tokens_total"]
        .as_u64()
        .expect("tokens_total")
}

/// What the clients of one run saw.
#[derive(Default)]
struct Tally {
    delivered: AtomicU64,
    errors: AtomicU64,
    latencies_ms: Mutex<Vec<f64>>,
    first_error: Mutex<Option<String>>,
}

/// What every host is put through (from the environment).
struct Plan {
    route: Route,
    clients: Vec<usize>,
    seconds: u64,
    warm_seconds: u64,
}

/// The route a run calls (`CTXGATE_LOAD_ROUTE`).
#[derive(Clone, Copy, PartialEq)]
enum Route {
    /// `POST /v1/context`: the metered call, whose tokens the quota check adds up.
    Context,
    /// `GET /v1/usage`: the key and the org's ledger and audit, no index.
    Usage,
    /// `GET /healthz`: no key, no storage.
    Healthz,
}

impl Route {
    fn from_env() -> Self {
        match std::env::var("CTXGATE_LOAD_ROUTE").as_deref() {
            Err(_) | Ok("context") => Route::Context,
            Ok("usage") => Route::Usage,
            Ok("healthz") => Route::Healthz,
            Ok(other) => panic!("CTXGATE_LOAD_ROUTE: unknown route {other}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Route::Context => "context",
            Route::Usage => "usage",
            Route::Healthz => "healthz",
        }
    }
}

/// `clients` threads calling `route` back to back for `seconds`.
fn run(host: &dyn Host, key: &str, route: Route, clients: usize, seconds: u64) -> (Tally, f64) {
    let path = match route {
        Route::Context => "/v1/context",
        Route::Usage => "/v1/usage",
        Route::Healthz => "/healthz",
    };
    let url = format!("{}{path}", host.base_url());
    let tally = Tally::default();
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for c in 0..clients {
            let (url, tally, stop) = (&url, &tally, &stop);
            s.spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(60)))
                    .build()
                    .into();
                let mut mine = Vec::new();
                let mut i = c;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let body = json!({"project": "corpus", "query": QUERIES[i % QUERIES.len()],
                                      "budget": BUDGET})
                    .to_string();
                    let t = Instant::now();
                    let sent = match route {
                        Route::Context => agent
                            .post(url)
                            .header("Authorization", &format!("Bearer {key}"))
                            .header("Content-Type", "application/json")
                            .send(body),
                        Route::Usage => agent
                            .get(url)
                            .header("Authorization", &format!("Bearer {key}"))
                            .call(),
                        Route::Healthz => agent.get(url).call(),
                    };
                    let answer = sent.and_then(|mut r| {
                        let status = r.status().as_u16();
                        r.body_mut()
                            .with_config()
                            .limit(64 << 20)
                            .read_to_string()
                            .map(|t| (status, t))
                    });
                    // Only a context answer delivers tokens; any other 200 counts as zero.
                    let tokens = match &answer {
                        Ok((200, text)) if route == Route::Context => {
                            serde_json::from_str::<serde_json::Value>(text)
                                .ok()
                                .and_then(|v| v["tokens_total"].as_u64())
                        }
                        Ok((200, _)) => Some(0),
                        _ => None,
                    };
                    match tokens {
                        Some(n) => {
                            tally.delivered.fetch_add(n, Ordering::Relaxed);
                            mine.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                        None => {
                            tally.errors.fetch_add(1, Ordering::Relaxed);
                            let what = match answer {
                                Ok((status, text)) => {
                                    format!(
                                        "{status}: {}",
                                        text.chars().take(300).collect::<String>()
                                    )
                                }
                                Err(e) => e.to_string(),
                            };
                            tally.first_error.lock().unwrap().get_or_insert(what);
                        }
                    }
                }
                tally.latencies_ms.lock().unwrap().extend(mine);
            });
        }
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed().as_secs_f64();
    (tally, elapsed)
}

/// Runs every client count against `host`, whose server processes are `pids()`.
fn load(
    name: &str,
    host: &dyn Host,
    pids: &dyn Fn() -> Vec<u32>,
    inspector: Option<&support::workerd::InspectorDrain>,
    plan: &Plan,
) {
    let Plan {
        route,
        ref clients,
        seconds,
        warm_seconds,
    } = *plan;
    let corpus = support::corpus();
    let key = org_with_key(
        host,
        "load",
        json!({"tokens_per_day": 1_000_000_000_000u64}),
    );
    let t = Instant::now();
    host.publish("load", "corpus", &corpus);
    eprintln!(
        "{name}: published the corpus in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // Warm: every query once, so the version and its texts are open before memory is read.
    for q in QUERIES {
        let r = post(
            host,
            "/v1/context",
            Some(&key),
            &json!({"project": "corpus", "query": q, "budget": BUDGET}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let mut warmed = Vec::new();
    for &c in clients.iter() {
        // The first run at a concurrency the server has not seen grows its memory to that
        // concurrency's working set (threads, connections, allocator arenas): measured on
        // workerd, `/healthz` alone grew 280 -> 595 MiB in its first 30 s run, then +26 and -4.
        // So each client count is warmed first, unreported, and the bound is checked on what
        // comes after.
        if warm_seconds > 0 && !warmed.contains(&c) {
            let (tally, _) = run(host, &key, route, c, warm_seconds);
            warmed.push(c);
            eprintln!(
                "{name}: warmed {c} clients for {warm_seconds} s ({} errors), RSS now {:.1} MiB",
                tally.errors.load(Ordering::Relaxed),
                rss_mib(&pids())
            );
        }
        let before_mib = rss_mib(&pids());
        let counted_before = counted(host, &key);
        let (tally, elapsed) = run(host, &key, route, c, seconds);
        let after_mib = rss_mib(&pids());
        let counted_run = counted(host, &key) - counted_before;
        let delivered = tally.delivered.load(Ordering::Relaxed);
        let errors = tally.errors.load(Ordering::Relaxed);
        let mut lat = tally.latencies_ms.into_inner().unwrap();
        lat.sort_by(f64::total_cmp);
        let (p50, p99) = if lat.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (percentile(&lat, 0.5), percentile(&lat, 0.99))
        };
        let requests = lat.len() as u64 + errors;
        let within = after_mib <= before_mib + GROWTH_BOUND_MIB;
        println!(
            "load: host={name} route={} clients={c} seconds={seconds} requests={requests} rps={:.1} p50_ms={p50:.1} p99_ms={p99:.1} errors={errors} rss_before_mib={before_mib:.1} rss_after_mib={after_mib:.1} rss_growth_within_{GROWTH_BOUND_MIB}mib={} quota_exact={} (counted {counted_run}, delivered {delivered})",
            route.name(),
            requests as f64 / elapsed,
            if within { "yes" } else { "no" },
            if counted_run == delivered {
                "yes"
            } else {
                "no"
            },
        );
        if let Some(w) = wasm_mib(host) {
            println!("  {name}: the isolate's wasm memory after the run: {w:.1} MiB");
        }
        if let Some(heap) = inspector.and_then(|i| i.heap_mib()) {
            println!("  {name}: the isolate's JavaScript heap in use: {heap:.1} MiB");
        }
        if let Some(e) = tally.first_error.into_inner().unwrap() {
            eprintln!("{name}, {c} clients: first error: {e}");
        }
    }
}

fn main() {
    let hosts = env_list("CTXGATE_LOAD_HOSTS", "native,worker");
    let clients: Vec<usize> = env_list("CTXGATE_LOAD_CLIENTS", "16,64")
        .iter()
        .map(|c| c.parse().expect("CTXGATE_LOAD_CLIENTS: numbers"))
        .collect();
    let seconds: u64 = std::env::var("CTXGATE_LOAD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let warm_seconds: u64 = std::env::var("CTXGATE_LOAD_WARM_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let plan = Plan {
        route: Route::from_env(),
        clients,
        seconds,
        warm_seconds,
    };
    for name in hosts {
        match name.as_str() {
            "native" => {
                let host = NativeHost::start();
                let pid = host.pid();
                load("native", &host, &|| vec![pid], None, &plan);
            }
            "worker" => {
                if !worker::worker_module().exists() {
                    eprintln!("no Worker build: run scripts/worker-build.sh first");
                    std::process::exit(1);
                }
                let host = WorkerHost::start_with_vars(&[]);
                let group = host.process_group();
                let pids = move || support::workerd::workerd_pids(group);
                // Attached before any request, so wrangler's inspector proxy buffers nothing.
                let drain = support::workerd::InspectorDrain::attach(host.inspector_port());
                load("workerd", &host, &pids, Some(&drain), &plan);
            }
            other => panic!("CTXGATE_LOAD_HOSTS: unknown host {other}"),
        }
    }
}
