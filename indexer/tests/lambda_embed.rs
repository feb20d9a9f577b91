//! The real Lambda binary embedding what it indexes: against moto (S3, DynamoDB, Secrets
//! Manager) and a local server speaking the OpenAI embeddings wire format, a version is
//! published with its vectors in an object of their own that its manifest names; a re-index
//! by a fresh function (no local cache) embeds only the changed chunk; a provider that refuses
//! the key fails the job with `embed_unauthorized` and publishes nothing.

mod support;

#[allow(dead_code)]
#[path = "../../tests/common/http_stub.rs"]
mod http_stub;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use ctxgate_core::dense::VectorTable;
use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::credentials::SecretsManagerCredentials;
use ctxgate_indexer::pipeline::{ProjectTarget, open_current};
use ctxgate_indexer::store::IndexStore;
use http_stub::{EmbeddingRequests, embeddings_server};
use serde_json::{Value, json};
use support::moto::Moto;
use support::repo::git;
use support::runtime_api::{Outcome, RuntimeApi};

const BUCKET: &str = "ctxgate-embed-test";
const TABLE: &str = "ctxgate-embed-test";
const WAIT: Duration = Duration::from_secs(240);
const SECRET: &str = "ctxgate-ops/embeddings-key";

fn function(
    api: &RuntimeApi,
    moto: &Moto,
    work: &Path,
    embed_url: &str,
    key: &[(&str, &str)],
) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxgate-lambda"));
    cmd.envs(moto.env())
        .env("AWS_LAMBDA_RUNTIME_API", &api.address)
        .env("AWS_LAMBDA_FUNCTION_NAME", "ctxgate-indexer")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("CTXGATE_STORE", format!("s3://{BUCKET}/idx"))
        .env("CTXGATE_TABLE", TABLE)
        .env("CTXGATE_WORK_DIR", work)
        .env("CTXGATE_ALLOW_LOCAL_SOURCES", "1")
        .env("CTXGATE_EMBED_URL", embed_url)
        .env("CTXGATE_EMBED_MODEL", "test-embedder")
        .env("CTXGATE_EMBED_DIMS", "64")
        .env("RUST_LOG", "warn");
    cmd.envs(key.iter().copied());
    cmd.spawn().expect("start the Lambda function")
}

fn outcome(api: &RuntimeApi, id: &str, event: &Value) -> Outcome {
    api.invoke(id, event.clone());
    api.outcome(id, WAIT)
        .unwrap_or_else(|| panic!("no answer to {id}"))
}

/// The texts the stand-in was asked to embed, in all.
fn inputs(seen: &EmbeddingRequests) -> usize {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b["input"].as_array().map_or(0, Vec::len))
        .sum()
}

fn write(repo: &Path, rel: &str, text: &str) {
    std::fs::write(repo.join(rel), text).unwrap();
}

#[test]
fn lambda_publishes_vectors_and_embeds_only_changed_chunks() {
    let Some(moto) = Moto::start() else { return };
    moto.export();
    let cache = tempfile::tempdir().unwrap();
    let store = AwsStore::open(
        S3Location::parse(&format!("s3://{BUCKET}/idx")).unwrap(),
        TABLE,
        cache.path(),
    )
    .expect("connect to moto");
    store.init().expect("create bucket and table");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    SecretsManagerCredentials::connect("ctxgate", runtime.handle().clone())
        .put_string(SECRET, "test-key")
        .expect("store the key in Secrets Manager");
    let (embed_url, seen) = embeddings_server(64);

    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    write(
        r,
        "ledger.rs",
        "/// Reserves tokens before work.\npub fn reserve_tokens(n: u64) -> u64 { n }\n",
    );
    write(
        r,
        "quantize.rs",
        "/// Quantizes a vector to i8.\npub fn quantize_vector(v: &[f32]) -> Vec<i8> { v.iter().map(|x| (*x * 127.0) as i8).collect() }\n",
    );
    write(
        r,
        "router.rs",
        "/// Routes a request to a handler.\npub fn route_request(path: &str) -> usize { path.len() }\n",
    );
    git(r, &["init", "-q"]);
    git(r, &["add", "-A"]);
    git(r, &["commit", "-qm", "first"]);
    let event = json!({"action": "index", "org": "acme", "project": "dense",
                       "source": {"kind": "git", "url": format!("file://{}", r.display())}});
    let id = ProjectTarget::named("acme", "dense").id;
    let from_secret = [("CTXGATE_EMBED_API_KEY_SECRET", SECRET)];

    // 1. The first version is published with its vectors, the key read from Secrets Manager.
    let api = RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    let mut lambda = function(&api, &moto, work.path(), &embed_url, &from_secret);
    let job = match outcome(&api, "embed-1", &event) {
        Outcome::Response(v) => v,
        other => panic!("{other:?}"),
    };
    assert_eq!(job["state"], "published", "{job}");
    let v1 = open_current(&store, "acme", &id)
        .unwrap()
        .expect("version 1");
    let named = v1
        .manifest
        .vectors
        .clone()
        .expect("the manifest names the vectors");
    assert_eq!(
        (named.model.as_str(), named.dims),
        ("openai:test-embedder", 64)
    );
    assert!(v1.manifest.objects().contains(&named.key.as_str()));
    let bytes = store
        .get_object(&named.key)
        .expect("the vectors object is in S3");
    assert_eq!(bytes.len() as u64, named.bytes);
    let table = VectorTable::decode(&bytes).expect("a vector table");
    assert_eq!(table.len(), v1.pack.chunks.len());
    assert!((0..table.len()).all(|i| table.vector(i).is_some()));
    let first = inputs(&seen);
    assert!(first >= 3, "every chunk was embedded ({first} inputs)");
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|(token, _)| token == "test-key")
    );
    lambda.kill().ok();
    lambda.wait().ok();

    // 2. One chunk changes; a fresh function (no local cache) embeds only it, reusing the
    //    vectors version 1 published.
    write(
        r,
        "router.rs",
        "/// Routes a request to its handler by method.\npub fn route_request(path: &str) -> usize { path.len() + 1 }\n",
    );
    git(r, &["commit", "-qam", "second"]);
    seen.lock().unwrap().clear();
    let api = RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    let mut lambda = function(&api, &moto, work.path(), &embed_url, &from_secret);
    let job = match outcome(&api, "embed-2", &event) {
        Outcome::Response(v) => v,
        other => panic!("{other:?}"),
    };
    assert_eq!(job["version"], 2, "{job}");
    assert_eq!(inputs(&seen), 1, "only the changed chunk is embedded");
    let v2 = open_current(&store, "acme", &id)
        .unwrap()
        .expect("version 2");
    let named2 = v2.manifest.vectors.clone().expect("vectors of version 2");
    assert_ne!(named2.key, named.key);
    let table2 = VectorTable::decode(&store.get_object(&named2.key).unwrap()).unwrap();
    assert_eq!(table2.len(), v2.pack.chunks.len());
    lambda.kill().ok();
    lambda.wait().ok();

    // 3. The provider refuses the key: the job fails with the provider's code and version 2
    //    stays current, with no later version written.
    write(
        r,
        "ledger.rs",
        "/// Reserves tokens before work, atomically.\npub fn reserve_tokens(n: u64) -> u64 { n + 1 }\n",
    );
    git(r, &["commit", "-qam", "third"]);
    let api = RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    let mut lambda = function(
        &api,
        &moto,
        work.path(),
        &embed_url,
        &[("CTXGATE_EMBED_API_KEY", "wrong")],
    );
    match outcome(&api, "embed-3", &event) {
        Outcome::Error { error_type, .. } => assert_eq!(error_type, "embed_unauthorized"),
        other => panic!("{other:?}"),
    }
    let still = open_current(&store, "acme", &id).unwrap().unwrap();
    assert_eq!(still.version, 2);
    assert_eq!(
        store.latest_version(&id).unwrap(),
        2,
        "no version 3 was claimed"
    );
    lambda.kill().ok();
    lambda.wait().ok();
}
