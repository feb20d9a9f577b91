//! The API's performance natively: `ctxgate serve` over a 1M+ token index, loaded from a second
//! process on loopback.
//!
//! Run with `scripts/bench-api.sh`. Reports, for `POST /v1/context` at a 32k budget: the
//! server-side time of a warm request (from the response's `Server-Timing` header: auth, quota
//! reservation and settlement, retrieval, selection, composition and exact counting), the
//! client-observed latency one request at a time, and throughput with p50/p99 under concurrent
//! load. Nothing here asserts a time.

#[path = "support/mod.rs"]
mod support;
use support::QUERIES;
use support::percentile;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn post(agent: &ureq::Agent, url: &str, key: &str, body: &str) -> (u16, Option<f64>) {
    let mut res = agent
        .post(url)
        .header("Authorization", &format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(body)
        .expect("request");
    let server_ms = res
        .headers()
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("dur=").nth(1))
        .and_then(|v| v.parse::<f64>().ok());
    let _ = res.body_mut().read_to_string();
    (res.status().as_u16(), server_ms)
}

fn main() {
    let corpus = support::corpus();
    let bin = env!("CARGO_BIN_EXE_ctxgate");
    let home = tempfile::tempdir().expect("temp dir");
    let run = |args: &[&str]| {
        let out = Command::new(bin)
            .args(args)
            .env("CTXGATE_HOME", home.path())
            .output()
            .expect("run ctxgate");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["org", "create", "bench"]);
    let key: serde_json::Value = serde_json::from_str(&run(&[
        "key", "create", "--org", "bench", "--format", "json",
    ]))
    .expect("key");
    let key = key["key"].as_str().expect("key").to_string();
    let t = Instant::now();
    let corpus_arg = corpus.to_string_lossy().into_owned();
    run(&[
        "project",
        "add",
        "--org",
        "bench",
        "--name",
        "corpus",
        &corpus_arg,
    ]);
    eprintln!("indexed the corpus in {:.1} s", t.elapsed().as_secs_f64());

    let mut server = Command::new(bin)
        .args(["serve", "--addr", "127.0.0.1:0", "--format", "json"])
        .env("CTXGATE_HOME", home.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("startup line");
    let v: serde_json::Value = serde_json::from_str(&line).expect("startup json");
    let url = format!("{}/v1/context", v["listening"].as_str().expect("url"));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let body = |q: &str| {
        serde_json::json!({ "project": "corpus", "query": q, "budget": 32000 }).to_string()
    };
    // Warm: the first request opens the version into memory.
    let t = Instant::now();
    let (status, _) = post(&agent, &url, &key, &body(QUERIES[0]));
    assert_eq!(status, 200);
    println!(
        "first request (opens the 1M-token version): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );

    let mut client = Vec::new();
    let mut server_side = Vec::new();
    for i in 0..100 {
        let t = Instant::now();
        let (status, s) = post(&agent, &url, &key, &body(QUERIES[i % QUERIES.len()]));
        assert_eq!(status, 200);
        client.push(t.elapsed().as_secs_f64() * 1e3);
        if let Some(s) = s {
            server_side.push(s);
        }
    }
    client.sort_by(f64::total_cmp);
    server_side.sort_by(f64::total_cmp);
    println!(
        "warm /v1/context at 32k, sequential (100): server p50 {:.2} ms p99 {:.2} ms; client p50 {:.2} ms p99 {:.2} ms",
        percentile(&server_side, 0.5),
        percentile(&server_side, 0.99),
        percentile(&client, 0.5),
        percentile(&client, 0.99)
    );

    for threads in [2usize, 8] {
        let per = 50;
        let t = Instant::now();
        let mut lat: Vec<f64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|k| {
                    let (agent, url, key) = (agent.clone(), url.clone(), key.clone());
                    s.spawn(move || {
                        (0..per)
                            .map(|i| {
                                let t = Instant::now();
                                let (status, _) = post(
                                    &agent,
                                    &url,
                                    &key,
                                    &body(QUERIES[(i + k) % QUERIES.len()]),
                                );
                                assert_eq!(status, 200);
                                t.elapsed().as_secs_f64() * 1e3
                            })
                            .collect::<Vec<f64>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("thread"))
                .collect()
        });
        let secs = t.elapsed().as_secs_f64();
        lat.sort_by(f64::total_cmp);
        println!(
            "load, {threads} client threads x {per}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms",
            lat.len() as f64 / secs,
            percentile(&lat, 0.5),
            percentile(&lat, 0.99)
        );
    }
    let _ = server.kill();
    let _ = server.wait();
}
