//! Dense retrieval on `ctxgate serve --dense api`: the server embeds a version's chunks through
//! an OpenAI-compatible embeddings API (a local server that speaks it) on its first request,
//! ranks with the `dense` signal, embeds only the query afterwards, and turns a provider's
//! refusal into a 502 with the provider's code. Dense is an organisation's choice: with it off
//! (the default) no request reaches the provider.
//!
//! [`worker`]: the Lambda publishes a version with its vectors to moto, and the Worker under
//! workerd ranks with them, embedding only the query through the same stand-in provider.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::aws::{lambda_binary, moto, repo, runtime_api};
use super::cases::sample_repo;
use super::common::{EmbeddingRequests, dense_api_flags, embeddings_server};
use super::host::{Host, NativeHost, call, org_with_key, post};
use super::worker::WorkerHost;

/// The texts embedded per request the stand-in received, emptying its log.
fn drain(seen: &EmbeddingRequests) -> Vec<usize> {
    seen.lock()
        .unwrap()
        .drain(..)
        .map(|(_, b)| b["input"].as_array().map_or(0, Vec::len))
        .collect()
}

/// Turns dense retrieval on or off for `org` through the admin API.
fn set_dense(host: &dyn Host, org: &str, on: bool) {
    let r = call(
        host,
        "PUT",
        &format!("/v1/admin/orgs/{org}/dense"),
        Some(host.admin_secret()),
        Some(&json!({ "dense": on }).to_string()),
        "application/json",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["dense"], on, "{}", r.body);
}

/// Whether some piece of the answer carries a positive dense score.
fn dense_scored(answer: &Value) -> bool {
    answer["pieces"].as_array().is_some_and(|pieces| {
        pieces
            .iter()
            .any(|p| p["reasoning"]["dense"].as_f64().unwrap_or(0.0) > 0.0)
    })
}

pub fn run() {
    let (url, seen) = embeddings_server(64);
    let owned = dense_api_flags(&url);
    let flags: Vec<&str> = owned.iter().map(String::as_str).collect();
    let host = NativeHost::start_with_env(&flags, &[("CTXGATE_EMBED_API_KEY", "test-key")]);
    let key = org_with_key(&host, "dn", json!({}));
    host.publish("dn", "core", sample_repo());
    let ask = |query: &str| {
        post(
            &host,
            "/v1/context",
            Some(&key),
            &json!({"project": "core", "query": query, "budget": 6000}),
        )
    };
    // Off by default: the provider is not called at all.
    let r = ask("quantize embedding vectors and find the nearest chunks");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!dense_scored(&r.body), "{}", r.body);
    assert_eq!(
        drain(&seen),
        Vec::<usize>::new(),
        "dense off: no provider call"
    );
    set_dense(&host, "dn", true);
    let r = ask("quantize embedding vectors and find the nearest chunks");
    assert_eq!(r.status, 200, "{}", r.body);
    let pieces = r.body["pieces"].as_array().unwrap();
    assert!(
        pieces
            .iter()
            .any(|p| p["reasoning"]["dense"].as_f64().unwrap_or(0.0) > 0.0),
        "no piece carries a dense score: {}",
        r.body
    );
    let first: usize = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b["input"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(
        first > 10,
        "the version's chunks were embedded ({first} inputs)"
    );

    seen.lock().unwrap().clear();
    let r = ask("how are continuation tokens signed");
    assert_eq!(r.status, 200, "{}", r.body);
    let inputs: Vec<usize> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b["input"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(inputs, vec![1], "warm: only the query is embedded");

    // The provider refuses the key: the caller learns which upstream failed, not a 500.
    let refused = NativeHost::start_with_env(&flags, &[("CTXGATE_EMBED_API_KEY", "wrong")]);
    let key = org_with_key(&refused, "dr", json!({}));
    set_dense(&refused, "dr", true);
    refused.publish("dr", "core", sample_repo());
    let r = post(
        &refused,
        "/v1/context",
        Some(&key),
        &json!({"project": "core", "query": "continuation tokens", "budget": 6000}),
    );
    assert_eq!(
        (r.status, r.code()),
        (502, "embed_unauthorized"),
        "{}",
        r.body
    );
    // The status, not the provider's own text (it names a masked key) nor its URL: those are
    // the operator's, in the server's log.
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("HTTP 401"), "{}", r.body);
    assert!(
        !message.contains("Incorrect API key provided") && !message.contains("127.0.0.1"),
        "{}",
        r.body
    );
}

const BUCKET: &str = "ctxgate-dense";
const TABLE: &str = "ctxgate-dense";

/// The Lambda embeds a version into moto's S3; the Worker (over S3 and DynamoDB, with the
/// stand-in as its embeddings provider) ranks with those vectors for an org with dense on, and
/// calls no provider for one with it off.
pub fn worker() {
    if !WorkerHost::available() {
        return;
    }
    let Some(moto) = moto::Moto::start() else {
        return;
    };
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let store_url = format!("s3://{BUCKET}/published");
    let store = ctxgate_indexer::aws::AwsStore::open(
        ctxgate_indexer::aws::S3Location::parse(&store_url).unwrap(),
        TABLE,
        cache.path(),
    )
    .unwrap();
    store.init().unwrap();
    let (embed_url, seen) = embeddings_server(64);
    let embed_vars = [
        ("CTXGATE_EMBED_URL", embed_url.clone()),
        ("CTXGATE_EMBED_MODEL", "test-embedder".to_string()),
        ("CTXGATE_EMBED_DIMS", "64".to_string()),
        ("CTXGATE_EMBED_API_KEY", "test-key".to_string()),
    ];

    let src = tempfile::tempdir().unwrap();
    repo::committed_copy(&moto::workspace().join("shared/src"), src.path());
    let api = runtime_api::RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    let mut lambda = Command::new(lambda_binary())
        .envs(moto.env())
        .envs(embed_vars.iter().map(|(k, v)| (*k, v.as_str())))
        .env("AWS_LAMBDA_RUNTIME_API", &api.address)
        .env("AWS_LAMBDA_FUNCTION_NAME", "ctxgate-indexer")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("CTXGATE_STORE", &store_url)
        .env("CTXGATE_TABLE", TABLE)
        .env("CTXGATE_WORK_DIR", work.path())
        .env("CTXGATE_ALLOW_LOCAL_SOURCES", "1")
        .env("RUST_LOG", "warn")
        .spawn()
        .unwrap();
    let url = format!("file://{}", src.path().display());
    for org in ["densew", "plainw"] {
        let id = format!("index-{org}");
        api.invoke(
            &id,
            json!({"action": "index", "org": org, "project": "core",
                   "source": {"kind": "git", "url": url}}),
        );
        match api.outcome(&id, Duration::from_secs(300)) {
            Some(runtime_api::Outcome::Response(job)) => {
                assert_eq!(job["state"], "published", "{job}")
            }
            other => panic!("{id}: {other:?}"),
        }
    }
    lambda.kill().ok();
    lambda.wait().ok();
    // The second org's chunks are all the first's: its vectors came from the function's cache.
    assert!(
        drain(&seen).iter().sum::<usize>() > 50,
        "the chunks were embedded"
    );

    let body = json!({"project": "core",
        "query": "quantize embedding vectors and find the nearest chunks", "budget": 6000});
    native_over_published(&moto, &store_url, &embed_url, &seen, &body);

    let mut vars: Vec<(&str, String)> = moto.env().into_iter().collect();
    vars.push(("CTXGATE_STORE", store_url.clone()));
    vars.push(("CTXGATE_TABLE", TABLE.to_string()));
    vars.extend(embed_vars.iter().cloned());
    let worker = WorkerHost::start_with_vars(&vars);
    let on = org_with_key(&worker, "densew", json!({}));
    set_dense(&worker, "densew", true);
    let off = org_with_key(&worker, "plainw", json!({}));

    let r = post(&worker, "/v1/context", Some(&off), &body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!dense_scored(&r.body), "{}", r.body);
    assert_eq!(
        drain(&seen),
        Vec::<usize>::new(),
        "dense off: no provider call"
    );

    let r = post(&worker, "/v1/context", Some(&on), &body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        dense_scored(&r.body),
        "no piece carries a dense score: {}",
        r.body
    );
    assert_eq!(drain(&seen), vec![1], "only the query is embedded");
    drop(worker);
}

/// `ctxgate serve --dense api` over what the Lambda published ranks with the published vectors
/// too, embedding only the query.
fn native_over_published(
    moto: &moto::Moto,
    store_url: &str,
    embed_url: &str,
    seen: &EmbeddingRequests,
    body: &Value,
) {
    let mut flags = vec![
        "--store".to_string(),
        store_url.to_string(),
        "--table".to_string(),
        TABLE.to_string(),
    ];
    flags.extend(dense_api_flags(embed_url));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut vars = moto.env();
    vars.push(("CTXGATE_EMBED_API_KEY", "test-key".to_string()));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let native = NativeHost::start_with_env(&flags, &vars);
    let key = org_with_key(&native, "densew", json!({}));
    set_dense(&native, "densew", true);
    let r = post(&native, "/v1/context", Some(&key), body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        dense_scored(&r.body),
        "no piece carries a dense score: {}",
        r.body
    );
    assert_eq!(drain(seen), vec![1], "only the query is embedded");
}
