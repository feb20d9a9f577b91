//! The edge's cold load of a version the indexer published to S3 + DynamoDB: the Worker under
//! `wrangler dev --local` (workerd) reads moto's S3 and DynamoDB over SigV4-signed fetches.
//! Run with `scripts/bench-aws-edge.sh`. Reports the bytes a cold load fetches (from the
//! manifest), the wall time of the first `POST /v1/context` (project lookup, manifest, pack and
//! segments fetched, index opened) and of warm ones. Nothing here asserts a time.

#[path = "support/mod.rs"]
mod support;
use support::{QUERIES, corpus, percentile};

#[allow(dead_code)]
#[path = "../tests/api/host.rs"]
mod host;
#[allow(dead_code)]
#[path = "../indexer/tests/support/moto.rs"]
mod moto;
#[allow(dead_code)]
#[path = "../tests/api/worker.rs"]
mod worker;

use std::time::Instant;

use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress, index_repo, open_current};
use host::{org_with_key, post};
use serde_json::json;

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
}
