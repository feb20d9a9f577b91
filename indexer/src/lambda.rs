//! The Lambda function: a typed event in, a plain function of the store out.
//!
//! Events (JSON):
//! - `{"action":"index","org":..,"project":..,"source":{..},"full":false}`: register the
//!   project and index it now;
//! - `{"action":"reindex_due"}`, or EventBridge's `Scheduled Event`: the scheduled pass;
//! - anything else is refused with `invalid_event`.
//!
//! The function answers with the job record (or the pass report). A job that failed is an error
//! of the invocation (its code as the error type), so that asynchronous invocations are retried
//! and land in the dead-letter queue; a retry reuses the job's record (its id is the request id).
//!
//! Configuration: `CTXGATE_STORE` (`s3://bucket/prefix`), `CTXGATE_TABLE`, and optionally
//! `CTXGATE_WORK_DIR` (default: the temporary folder, `/tmp` on Lambda) and
//! `CTXGATE_ALLOW_LOCAL_SOURCES=1` (local folders and `file://` git URLs; tests and self-hosted
//! runs only — otherwise they are refused with `invalid_request`) and
//! `CTXGATE_ALLOW_PRIVATE_SOURCES=1` (plain http and private, loopback or link-local hosts).
//! After each scheduled pass the function collects old versions ([`crate::gc`]): it keeps the
//! current version plus `CTXGATE_GC_KEEP` (default 2) and anything superseded or uploaded less
//! than `CTXGATE_GC_GRACE_SECONDS` ago (default 900); `CTXGATE_GC=off` turns it off.
//! By default only public https hosts are fetched: the edge registers URLs its callers chose,
//! and a function inside a VPC must not be made to read its neighbours or the instance
//! metadata endpoint.
//! A git source that names a credential is fetched with the secret `{prefix}/{org}/{name}` of
//! AWS Secrets Manager (`CTXGATE_SECRET_PREFIX`, default `ctxgate`; [`crate::credentials`]).
//! With `CTXGATE_EMBED_URL`, `CTXGATE_EMBED_MODEL` and `CTXGATE_EMBED_DIMS` set, every version
//! is published with its chunks' embeddings from that OpenAI-compatible API
//! ([`embed_endpoint`]); the key is `CTXGATE_EMBED_API_KEY`, or the string of the Secrets
//! Manager secret `CTXGATE_EMBED_API_KEY_SECRET` (read at start-up).
//! `CTXGATE_GIT_HISTORY_COMMITS` (default and at most 20,001: the commit and the 20,000 the walk
//! reads) is how many commits of a git source's history are fetched with it, for the `history`
//! ranking signal; 1 fetches the commit alone.

use std::path::PathBuf;
use std::sync::Arc;

use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::{Diagnostic, LambdaEvent, service_fn};
use serde_json::Value;

use ctxgate_core::index::gc::GcPolicy;

use crate::IndexerError;
use crate::aws::{AwsStore, S3Location};
use crate::credentials::{CredentialStore, DEFAULT_PREFIX, SecretsManagerCredentials};
use crate::embed::openai::EmbeddingsEndpoint;
use crate::jobs::{JobState, Trigger};
use crate::pipeline::IndexOptions;
use ctxgate_core::host_wire::IndexerEvent;

use crate::reindex::{IndexRequest, JobContext, index_now, reindex_due};
use crate::source::{NetworkPolicy, SourceLimits};

/// What an invocation asks for.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Index one project now.
    Index(IndexRequest),
    /// The scheduled pass.
    ReindexDue,
}

/// Reads an event: explicit actions, or EventBridge's scheduled event.
pub fn parse_event(event: Value) -> Result<Command, Diagnostic> {
    if event.get("detail-type").is_some() {
        let e: EventBridgeEvent = serde_json::from_value(event)
            .map_err(|e| failure("invalid_event", format!("not an EventBridge event: {e}")))?;
        if e.detail_type == "Scheduled Event" {
            return Ok(Command::ReindexDue);
        }
        return Err(failure(
            "invalid_event",
            format!(
                "EventBridge event `{}` from `{}` is not handled; only `Scheduled Event`",
                e.detail_type, e.source
            ),
        ));
    }
    match serde_json::from_value::<IndexerEvent>(event) {
        Ok(IndexerEvent::Index(req)) => Ok(Command::Index(req)),
        Ok(IndexerEvent::ReindexDue {}) => Ok(Command::ReindexDue),
        Err(e) => Err(failure(
            "invalid_event",
            format!(
                "expected {{\"action\":\"index\",\"org\",\"project\",\"source\"}} or \
                 {{\"action\":\"reindex_due\"}}: {e}"
            ),
        )),
    }
}

fn failure(code: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic {
        error_type: code.into(),
        error_message: message.into(),
    }
}

impl From<IndexerError> for Diagnostic {
    fn from(e: IndexerError) -> Self {
        failure(e.code().as_str(), e.to_string())
    }
}

struct Function {
    allow_local: bool,
    /// Where the credentials of private git sources are read.
    credentials: Box<dyn CredentialStore>,
    /// Garbage collection after each scheduled pass, unless turned off.
    gc: Option<GcPolicy>,
    network: NetworkPolicy,
    history_commits: u32,
    store: AwsStore,
    work_dir: PathBuf,
    options: IndexOptions,
}

impl Function {
    /// Runs one command; blocking (the store drives its clients from this thread).
    fn handle(&self, command: Command, request_id: &str) -> Result<Value, Diagnostic> {
        let ctx = JobContext {
            options: &self.options,
            work_dir: &self.work_dir,
            limits: SourceLimits {
                network: self.network,
                history_commits: self.history_commits,
                ..SourceLimits::default()
            },
            allow_local: self.allow_local,
            credentials: self.credentials.as_ref(),
        };
        let json = |v: &dyn erased::Json| v.to_value();
        match command {
            Command::Index(req) => {
                let job = index_now(&self.store, &ctx, &req, request_id, Trigger::Request)?;
                if job.state == JobState::Failed {
                    return Err(failure(
                        job.error_code.as_deref().unwrap_or("index_failed"),
                        job.error.clone().unwrap_or_default(),
                    ));
                }
                json(&job)
            }
            Command::ReindexDue => {
                let report = reindex_due(&self.store, &ctx, request_id)?;
                tracing::info!(
                    projects = report.projects,
                    unchanged = report.unchanged,
                    jobs = report.jobs.len(),
                    "scheduled pass done in {} ms",
                    report.elapsed_ms
                );
                let mut answer = json(&report)?;
                if let (Some(policy), Some(map)) = (&self.gc, answer.as_object_mut()) {
                    map.insert("gc".into(), self.collect(policy));
                }
                Ok(answer)
            }
        }
    }
}

impl Function {
    /// Garbage collection over the whole store; a failure is reported in the pass's answer and
    /// logged, and does not fail the pass (the next one tries again).
    fn collect(&self, policy: &GcPolicy) -> Value {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        match crate::gc::collect(&self.store, None, policy, now_ms, false) {
            Ok(reports) => {
                let versions: usize = reports.iter().map(|r| r.deleted_versions.len()).sum();
                let objects: usize = reports.iter().map(|r| r.deleted_objects).sum();
                let bytes: u64 = reports.iter().map(|r| r.bytes_freed).sum();
                tracing::info!(versions, objects, bytes, "garbage collection done");
                serde_json::json!({
                    "deleted_versions": versions,
                    "deleted_objects": objects,
                    "bytes_freed": bytes,
                })
            }
            Err(e) => {
                tracing::warn!("garbage collection failed: {e}");
                serde_json::json!({ "error": { "code": e.code(), "message": e.to_string() } })
            }
        }
    }
}

/// The embeddings API from the function's variables, or none when `CTXGATE_EMBED_URL` is unset;
/// `secret(id)` reads a Secrets Manager secret's string. Checked at start-up, so a function
/// configured wrong fails to start rather than publishing versions without vectors.
pub fn embed_endpoint(
    var: impl Fn(&str) -> Option<String>,
    secret: impl Fn(&str) -> Result<Option<String>, String>,
) -> Result<Option<EmbeddingsEndpoint>, String> {
    let Some(url) = var("CTXGATE_EMBED_URL").filter(|u| !u.trim().is_empty()) else {
        return Ok(None);
    };
    let model = var("CTXGATE_EMBED_MODEL")
        .filter(|m| !m.trim().is_empty())
        .ok_or("CTXGATE_EMBED_URL needs CTXGATE_EMBED_MODEL (the model to ask)")?;
    let dims = var("CTXGATE_EMBED_DIMS")
        .ok_or("CTXGATE_EMBED_URL needs CTXGATE_EMBED_DIMS (the model's dimensions)")?;
    let dims: usize = dims
        .trim()
        .parse()
        .ok()
        .filter(|&d| d > 0)
        .ok_or_else(|| format!("CTXGATE_EMBED_DIMS must be a positive number, not `{dims}`"))?;
    let api_key = match (
        var("CTXGATE_EMBED_API_KEY").filter(|k| !k.is_empty()),
        var("CTXGATE_EMBED_API_KEY_SECRET").filter(|k| !k.is_empty()),
    ) {
        (Some(key), _) => Some(key),
        (None, Some(id)) => Some(
            secret(&id)?
                .map(|k| k.trim().to_owned())
                .ok_or_else(|| format!("no secret `{id}` (CTXGATE_EMBED_API_KEY_SECRET)"))?,
        ),
        (None, None) => None,
    };
    Ok(Some(EmbeddingsEndpoint {
        url,
        model,
        api_key,
        dims,
    }))
}

mod erased {
    /// Serializes any answer (a job or a pass report) the same way.
    pub trait Json {
        fn to_value(&self) -> Result<serde_json::Value, lambda_runtime::Diagnostic>;
    }

    impl<T: serde::Serialize> Json for T {
        fn to_value(&self) -> Result<serde_json::Value, lambda_runtime::Diagnostic> {
            serde_json::to_value(self).map_err(|e| super::failure("internal", e.to_string()))
        }
    }
}

/// The function's entry point: reads its configuration, then serves invocations until the
/// runtime stops.
pub fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    tracing_subscriber_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let env = |name: &str| {
        std::env::var(name).map_err(|_| format!("the function needs the variable {name}"))
    };
    let location = S3Location::parse(&env("CTXGATE_STORE")?)?;
    let table = env("CTXGATE_TABLE")?;
    let work_dir = std::env::var_os("CTXGATE_WORK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let cache = work_dir.join("ctxgate-cache");
    let store = AwsStore::connect(location, &table, &cache, runtime.handle().clone())?;
    let gc = GcPolicy::from_vars(|name| std::env::var(name).ok())?;
    let credentials = SecretsManagerCredentials::connect(
        &std::env::var("CTXGATE_SECRET_PREFIX")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_PREFIX.to_owned()),
        runtime.handle().clone(),
    );
    let embed = embed_endpoint(
        |name| std::env::var(name).ok(),
        |id| credentials.secret_string(id),
    )?;
    let history_commits = match std::env::var("CTXGATE_GIT_HISTORY_COMMITS") {
        Ok(v) => v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                format!("CTXGATE_GIT_HISTORY_COMMITS must be a positive number, not `{v}`")
            })?
            // More than the walk reads would only be downloaded.
            .min(crate::source::DEFAULT_HISTORY_COMMITS),
        Err(_) => crate::source::DEFAULT_HISTORY_COMMITS,
    };
    let function = Arc::new(Function {
        gc,
        history_commits,
        // Off in production: a hosted function must not index its own disk.
        allow_local: std::env::var("CTXGATE_ALLOW_LOCAL_SOURCES").is_ok_and(|v| v == "1"),
        network: if std::env::var("CTXGATE_ALLOW_PRIVATE_SOURCES").is_ok_and(|v| v == "1") {
            NetworkPolicy::Open
        } else {
            NetworkPolicy::PublicHttps
        },
        store,
        credentials: Box::new(credentials),
        work_dir,
        options: IndexOptions {
            embed,
            ..IndexOptions::default()
        },
    });
    runtime.block_on(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<Value>| {
            let function = Arc::clone(&function);
            async move {
                let request_id = event.context.request_id.clone();
                let command = parse_event(event.payload)?;
                tracing::info!(request = %request_id, ?command, "invocation");
                tokio::task::spawn_blocking(move || function.handle(command, &request_id))
                    .await
                    .map_err(|e| failure("internal", format!("the job panicked: {e}")))?
            }
        },
    )))
}

fn tracing_subscriber_init() {
    // Lambda's log stream takes plain lines on stderr; RUST_LOG sets the level.
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
            )
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .without_time()
            .finish(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceSpec;

    #[test]
    fn events_parse_or_are_refused_with_a_code() {
        let scheduled = serde_json::json!({
            "version": "0", "id": "1", "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "123456789012", "time": "2026-11-23T10:00:00Z", "region": "us-east-1",
            "resources": ["arn:aws:events:us-east-1:123456789012:rule/r"], "detail": {}
        });
        assert_eq!(parse_event(scheduled).unwrap(), Command::ReindexDue);
    }

    #[test]
    fn the_embeddings_api_comes_from_the_variables_or_a_secret() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let no_secret = |_: &str| Ok(None);
        assert_eq!(embed_endpoint(vars(&[]), no_secret).unwrap(), None);
        let base: &[(&str, &str)] = &[
            ("CTXGATE_EMBED_URL", "https://api.example.com/v1"),
            ("CTXGATE_EMBED_MODEL", "text-embedding-3-small"),
            ("CTXGATE_EMBED_DIMS", "1536"),
            ("CTXGATE_EMBED_API_KEY_SECRET", "ctxgate/embeddings"),
        ];
        let e = embed_endpoint(vars(base), |id: &str| {
            Ok((id == "ctxgate/embeddings").then(|| "sk-1\n".to_owned()))
        })
        .unwrap()
        .unwrap();
        assert_eq!((e.dims, e.api_key.as_deref()), (1536, Some("sk-1")));
        let err = embed_endpoint(vars(base), no_secret).unwrap_err();
        assert!(err.contains("ctxgate/embeddings"), "{err}");
        let err =
            embed_endpoint(vars(&[("CTXGATE_EMBED_URL", "http://x")]), no_secret).unwrap_err();
        assert!(err.contains("CTXGATE_EMBED_MODEL"), "{err}");
        let err = embed_endpoint(
            vars(&[
                ("CTXGATE_EMBED_URL", "http://x"),
                ("CTXGATE_EMBED_MODEL", "m"),
                ("CTXGATE_EMBED_DIMS", "many"),
            ]),
            no_secret,
        )
        .unwrap_err();
        assert!(err.contains("CTXGATE_EMBED_DIMS"), "{err}");
    }

    #[test]
    fn the_gc_policy_comes_from_the_variables() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            GcPolicy::from_vars(vars(&[])).unwrap(),
            Some(GcPolicy::default())
        );
        assert_eq!(
            GcPolicy::from_vars(vars(&[("CTXGATE_GC", "off")])).unwrap(),
            None
        );
        let p = GcPolicy::from_vars(vars(&[
            ("CTXGATE_GC_KEEP", "0"),
            ("CTXGATE_GC_GRACE_SECONDS", "60"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((p.keep_last, p.grace_ms), (0, 60_000));
        let err = GcPolicy::from_vars(vars(&[("CTXGATE_GC_KEEP", "two")])).unwrap_err();
        assert!(err.contains("CTXGATE_GC_KEEP"), "{err}");
        let index = serde_json::json!({
            "action": "index", "org": "acme", "project": "web",
            "source": {"kind": "git", "url": "https://example.com/r.git"}
        });
        assert_eq!(
            parse_event(index).unwrap(),
            Command::Index(IndexRequest {
                org: "acme".into(),
                project: "web".into(),
                source: SourceSpec::Git {
                    url: "https://example.com/r.git".into(),
                    rev: None,
                    credential: None,
                },
                full: false,
            })
        );
        assert_eq!(
            parse_event(serde_json::json!({"action": "reindex_due"})).unwrap(),
            Command::ReindexDue
        );
        for bad in [
            serde_json::json!({"action": "drop_tables"}),
            serde_json::json!({"action": "index", "org": "acme"}),
            serde_json::json!({"detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2", "detail": {}}),
            serde_json::json!([1, 2]),
        ] {
            assert_eq!(parse_event(bad).unwrap_err().error_type, "invalid_event");
        }
    }
}
