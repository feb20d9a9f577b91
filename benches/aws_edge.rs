//! The edge's cold load of a version the indexer published to S3 + DynamoDB: the Worker under
//! `wrangler dev --local` (workerd) reads moto's S3 and DynamoDB over SigV4-signed fetches.
//! Run with `scripts/bench-aws-edge.sh`. Reports the bytes a cold load fetches (from the
//! manifest), the wall time of the first `POST /v1/context` (project lookup, manifest, pack and
//! segments fetched, index opened) and of warm ones. Then dense retrieval at the edge: the
//! corpus published again with vectors (embedded through a local server that speaks the
//! OpenAI embeddings API, 384 and 1,536 dimensions), and the Worker's warm `/v1/context` with
//! the organisation's dense on and off: workerd's CPU (read from outside, as in
//! `benches/worker.rs`), wall time and the isolate's wasm memory. The stand-in answers on
//! loopback, so a real provider's round trip is not in these figures. Nothing here asserts a
//! time.

#[path = "support/mod.rs"]
mod support;
use support::{QUERIES, corpus, percentile};

#[allow(dead_code)]
#[path = "../tests/api/host.rs"]
mod host;
#[path = "../tests/common/http_stub.rs"]
mod http_stub;
#[allow(dead_code)]
#[path = "../indexer/tests/support/moto.rs"]
mod moto;
#[allow(dead_code)]
#[path = "../tests/api/worker.rs"]
mod worker;

use std::time::Instant;

use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::embed::openai::EmbeddingsEndpoint;
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress, index_repo, open_current};
use host::{Host, call, org_with_key, post};
use serde_json::json;
use support::workerd::{Probe, mib, workerd_pids};

fn main() {
    let corpus = corpus();
    let moto = moto::Moto::start().expect("moto (bash scripts/aws-tools-setup.sh)");
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let url = "s3://ctxgate-edge-bench/idx";
    let store =
        AwsStore::open(S3Location::parse(url).unwrap(), "edge-bench", cache.path()).unwrap();
    store.init().unwrap();
    let report = index_repo(&store, &corpus, &IndexOptions::default(), &NoProgress).unwrap();
    let opened = open_current(&store, "local", &report.project.id)
        .unwrap()
        .unwrap();
    let segment_bytes: usize = opened
        .manifest
        .segment_keys
        .iter()
        .map(|k| {
            ctxgate_indexer::store::IndexStore::get_object(&store, k)
                .unwrap()
                .len()
        })
        .sum();
    let tokens = report.tokens.get("o200k_base").copied().unwrap_or(0);
    println!(
        "published: {} ({} o200k tokens, {} chunks); a cold load fetches 1 DynamoDB query + manifest + pack {:.1} MB + {} segment(s) {:.1} MB",
        report.project.name,
        tokens,
        report.chunks,
        opened.manifest.pack_bytes as f64 / 1e6,
        opened.manifest.segment_keys.len(),
        segment_bytes as f64 / 1e6
    );

    let mut vars: Vec<(&str, String)> = moto.env().into_iter().collect();
    vars.push(("CTXGATE_STORE", url.to_string()));
    vars.push(("CTXGATE_TABLE", "edge-bench".to_string()));
    let worker = worker::WorkerHost::start_with_vars(&vars);
    let key = org_with_key(&worker, "local", json!({}));
    let body = json!({"project": report.project.name, "query": QUERIES[0], "budget": 32000});
    let t = Instant::now();
    let r = post(&worker, "/v1/context", Some(&key), &body);
    let cold = t.elapsed();
    assert_eq!(r.status, 200, "{}", r.body);
    let mut warm: Vec<f64> = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        let r = post(&worker, "/v1/context", Some(&key), &body);
        warm.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.status, 200);
    }
    warm.sort_by(f64::total_cmp);
    println!(
        "Worker (workerd) reading moto: cold POST /v1/context at 32k {:.0} ms wall; warm p50 {:.1} ms, p90 {:.1} ms (each warm call still asks DynamoDB for the project's current version)",
        cold.as_secs_f64() * 1e3,
        percentile(&warm, 0.5),
        percentile(&warm, 0.9),
    );
    drop(worker);
    for dims in [384, 1536] {
        dense_at_the_edge(&moto, &corpus, dims);
    }
}

/// Publishes `corpus` with `dims`-dimensional vectors and measures the Worker's warm
/// `/v1/context` at 32k with dense on and off for the same organisation and isolate.
fn dense_at_the_edge(moto: &moto::Moto, corpus: &std::path::Path, dims: usize) {
    let (embed_url, _seen) = http_stub::embeddings_server(dims);
    let cache = tempfile::tempdir().unwrap();
    let url = format!("s3://ctxgate-edge-bench/dense{dims}");
    let table = format!("edge-bench-dense{dims}");
    let store = AwsStore::open(S3Location::parse(&url).unwrap(), &table, cache.path()).unwrap();
    store.init().unwrap();
    let options = IndexOptions {
        embed: Some(EmbeddingsEndpoint {
            url: embed_url.clone(),
            model: "stand-in".into(),
            api_key: Some("test-key".into()),
            dims,
        }),
        ..IndexOptions::default()
    };
    let t = Instant::now();
    let report = index_repo(&store, corpus, &options, &NoProgress).unwrap();
    println!(
        "published with {dims}-dimensional vectors ({} chunks) in {:.1} s",
        report.chunks,
        t.elapsed().as_secs_f64()
    );
    let mut vars: Vec<(&str, String)> = moto.env().into_iter().collect();
    vars.push(("CTXGATE_STORE", url.clone()));
    vars.push(("CTXGATE_TABLE", table.clone()));
    vars.push(("CTXGATE_EMBED_URL", embed_url));
    vars.push(("CTXGATE_EMBED_MODEL", "stand-in".into()));
    vars.push(("CTXGATE_EMBED_DIMS", dims.to_string()));
    vars.push(("CTXGATE_EMBED_API_KEY", "test-key".into()));
    let worker = worker::WorkerHost::start_with_vars(&vars);
    let probe = Probe::new(worker.base_url(), workerd_pids(worker.process_group()));
    let key = org_with_key(&worker, "local", json!({}));
    let set_dense = |on: bool| {
        let r = call(
            &worker,
            "PUT",
            "/v1/admin/orgs/local/dense",
            Some(worker.admin_secret()),
            Some(&json!({ "dense": on }).to_string()),
            "application/json",
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    let body =
        |q: &str| json!({"project": report.project.name, "query": q, "budget": 32000}).to_string();
    let warm = |what: &str| {
        let (status, wall, (cpu, busy)) =
            probe.send("POST", "/v1/context", Some(&key), Some(&body(QUERIES[0])));
        assert_eq!(status, 200);
        println!(
            "  {what}, first call: wall {wall:.1} ms, workerd CPU {cpu:.1} ms (busiest thread {busy:.1} ms)"
        );
        let (mut walls, mut cpus, mut busiest) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..30 {
            let (status, wall, (cpu, busy)) = probe.send(
                "POST",
                "/v1/context",
                Some(&key),
                Some(&body(QUERIES[i % QUERIES.len()])),
            );
            assert_eq!(status, 200);
            walls.push(wall);
            cpus.push(cpu);
            busiest.push(busy);
        }
        for v in [&mut walls, &mut cpus, &mut busiest] {
            v.sort_by(f64::total_cmp);
        }
        println!(
            "  {what}, warm (30): wall p50 {:.1} ms; workerd CPU p50 {:.1} ms p99 {:.1} ms; busiest thread p50 {:.1} ms",
            percentile(&walls, 0.5),
            percentile(&cpus, 0.5),
            percentile(&cpus, 0.99),
            percentile(&busiest, 0.5),
        );
    };
    println!("Worker over moto, {dims} dimensions, /v1/context at 32k:");
    warm("dense off");
    let before = probe.wasm_memory();
    set_dense(true);
    // Check the answer really is dense-ranked before timing it.
    let r = post(
        &worker,
        "/v1/context",
        Some(&key),
        &json!({"project": report.project.name,
        "query": QUERIES[1], "budget": 32000}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let dense_scored = r.body["pieces"].as_array().is_some_and(|p| {
        p.iter()
            .any(|p| p["reasoning"]["dense"].as_f64().unwrap_or(0.0) > 0.0)
    });
    let warnings = r.body["warnings"].to_string();
    println!("  dense on: pieces carry a dense score: {dense_scored}; warnings: {warnings}");
    warm("dense on");
    let after = probe.wasm_memory();
    println!(
        "  isolate wasm memory: {} with dense off, {} with the vectors loaded",
        mib(before),
        mib(after)
    );
}
