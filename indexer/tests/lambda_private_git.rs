//! The real Lambda binary indexes a private git repository with a token it reads from AWS Secrets
//! Manager (moto): the git server (`git http-backend` behind HTTP Basic auth,
//! `tests/private_git/git_http_auth.py`) refuses it without the secret and with another org's,
//! and the token is then searched for in the function's answers and log, every S3 object and
//! every DynamoDB item: no hit.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ctxgate_core::credential::Credential;
use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::credentials::SecretsManagerCredentials;
use ctxgate_indexer::pipeline::{ProjectTarget, open_current};
use ctxgate_indexer::store::IndexStore;
use serde_json::json;
use support::moto::{Moto, workspace};
use support::repo::{committed_copy, git};
use support::runtime_api::{Outcome, RuntimeApi};

const BUCKET: &str = "ctxgate-private-git";
const TABLE: &str = "ctxgate-private-git";
const WAIT: Duration = Duration::from_secs(240);

/// A child process killed when the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The authenticating git server over `root`, serving `private.git`; returns its URL.
fn git_server(root: &Path, token: &str) -> (Killed, String) {
    let token_file = root.join("token");
    std::fs::write(&token_file, token).unwrap();
    let mut child = Command::new("python3")
        .arg(workspace().join("tests/private_git/git_http_auth.py"))
        .arg(root)
        .arg("x-access-token")
        .arg(&token_file)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = line.trim().strip_prefix("listening ").expect("port line");
    std::thread::spawn(move || for _ in out.lines() {});
    (
        Killed(child),
        format!("http://127.0.0.1:{port}/private.git"),
    )
}

fn outcome(api: &RuntimeApi, id: &str) -> Outcome {
    api.outcome(id, WAIT)
        .unwrap_or_else(|| panic!("invocation {id}: no outcome"))
}

#[test]
fn lambda_indexes_a_private_repository_with_a_secrets_manager_token() {
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
    let secrets = SecretsManagerCredentials::connect("ctxgate", runtime.handle().clone());

    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let token = format!("ghp_Lambda{nanos:x}S3cret");

    // ctxgate's own history modules, as a private repository.
    let root = tempfile::tempdir().unwrap();
    let work_tree = root.path().join("work");
    committed_copy(&workspace().join("shared/src/history"), &work_tree);
    git(
        root.path(),
        &["clone", "-q", "--bare", "work", "private.git"],
    );
    let (_server, url) = git_server(root.path(), &token);

    let api = RuntimeApi::start();
    let work = tempfile::tempdir().unwrap();
    let log_path = root.path().join("lambda.log");
    let _lambda = Killed(
        Command::new(env!("CARGO_BIN_EXE_ctxgate-lambda"))
            .envs(moto.env())
            .env("AWS_LAMBDA_RUNTIME_API", &api.address)
            .env("AWS_LAMBDA_FUNCTION_NAME", "ctxgate-indexer")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "test")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "test")
            .env("CTXGATE_STORE", format!("s3://{BUCKET}/idx"))
            .env("CTXGATE_TABLE", TABLE)
            .env("CTXGATE_WORK_DIR", work.path())
            // The git server is on loopback over plain http.
            .env("CTXGATE_ALLOW_PRIVATE_SOURCES", "1")
            .env("RUST_LOG", "debug")
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .expect("start the Lambda function"),
    );
    let index = |id: &str, org: &str, credential: Option<&str>| {
        let mut source = json!({"kind": "git", "url": url});
        if let Some(c) = credential {
            source["credential"] = json!(c);
        }
        api.invoke(
            id,
            json!({"action": "index", "org": org, "project": "history", "source": source}),
        );
        outcome(&api, id)
    };
    let mut answers: Vec<String> = Vec::new();
    let mut refused = |id: &str, org: &str, credential: Option<&str>, code: &str| match index(
        id, org, credential,
    ) {
        Outcome::Error {
            error_type,
            message,
        } => {
            assert_eq!(error_type, code, "{id}: {message}");
            answers.push(message);
        }
        other => panic!("{id}: expected {code}, got {other:?}"),
    };
    refused("no-credential", "acme", None, "source_auth_required");
    refused("no-secret", "acme", Some("ci"), "credential_not_found");

    secrets
        .put("acme", "ci", &Credential::new(None, &token).unwrap())
        .expect("store the secret");
    secrets
        .put(
            "acme",
            "stale",
            &Credential::new(None, "ghp_an0ther0token").unwrap(),
        )
        .unwrap();
    refused("other-org", "other", Some("ci"), "credential_not_found");
    refused("stale", "acme", Some("stale"), "source_credential_rejected");

    let job = match index("with-secret", "acme", Some("ci")) {
        Outcome::Response(v) => v,
        other => panic!("expected a job, got {other:?}"),
    };
    assert_eq!(job["state"], "published", "{job}");
    answers.push(job.to_string());
    let target = ProjectTarget::named("acme", "history");
    let current = open_current(&store, "acme", &target.id)
        .unwrap()
        .expect("a version is current");
    assert!(
        current.pack.files.len() > 3,
        "{} files",
        current.pack.files.len()
    );

    // The scheduled pass probes the registered source with the secret again.
    api.invoke("pass", json!({"action": "reindex_due"}));
    let pass = match outcome(&api, "pass") {
        Outcome::Response(v) => v,
        other => panic!("expected a pass report, got {other:?}"),
    };
    assert!(
        pass["probe_failures"].as_array().is_some_and(|f| f
            .iter()
            .all(|f| !f.as_str().unwrap_or("").starts_with(&target.id))),
        "{pass}"
    );
    assert!(pass["unchanged"].as_u64().unwrap_or(0) >= 1, "{pass}");
    answers.push(pass.to_string());

    // The token is in no answer, log line, object or item.
    for answer in &answers {
        assert!(
            !answer.contains(&token),
            "an answer shows the token: {answer}"
        );
    }
    let mut log = String::new();
    std::fs::File::open(&log_path)
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(!log.is_empty(), "the function logs at debug");
    assert!(!log.contains(&token), "the function's log shows the token");
    let objects = store.list_objects("").unwrap();
    assert!(!objects.is_empty());
    for object in &objects {
        let bytes = store.get_object(&object.key).unwrap();
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "S3 object {} holds the token",
            object.key
        );
    }
    let dynamo = runtime.block_on(async {
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region("us-east-1")
            .http_client(http)
            .load()
            .await;
        aws_sdk_dynamodb::Client::new(&config)
            .scan()
            .table_name(TABLE)
            .send()
            .await
            .expect("scan the table")
    });
    let items = dynamo.items();
    assert!(!items.is_empty());
    for item in items {
        let text = format!("{item:?}");
        assert!(
            !text.contains(&token),
            "a DynamoDB item holds the token: {text}"
        );
    }
}
