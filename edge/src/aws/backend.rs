//! The backend that reads projects and objects from AWS and delegates everything else.

use async_trait::async_trait;
use ctxgate_core::backoff::{Backoff, retryable};
use ctxgate_core::host_wire::{IndexRequest, IndexerEvent};
use ctxgate_core::item_key::attr::{CURRENT_VERSION, DATA, PK, SK};
use ctxgate_core::item_key::{ItemKey, ItemRange};
use ctxgate_core::records::{ProjectItem, ScheduleItem};
use serde_json::{Value, json};

use super::register::registration;
use super::request::{AwsConfig, SignedRequest};
use crate::backend::{
    BackendError, JobGate, JobPhase, JobSummary, ProjectInfo, Projects, SourceSpec, StoredJob,
};

mod hooks;

/// An answer: status and body.
#[derive(Clone, Debug)]
pub struct HttpResponse {
    /// HTTP status.
    pub status: u16,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// Sends a signed request as is (the Worker's `fetch`, a native client).
#[async_trait]
pub trait HttpClient: Send + Sync + 'static {
    /// Sends `req` and reads the whole answer.
    async fn send(&self, req: SignedRequest) -> Result<HttpResponse, BackendError>;

    /// Reports a failure the caller is not told about (the host's log).
    fn warn(&self, _message: &str) {}

    /// Waits `ms` milliseconds before a retry (the Worker's timer, tokio's natively).
    async fn pause(&self, ms: u64);

    /// Milliseconds since the epoch, for signing (the host's clock: `Date.now()`, the system's).
    fn now_ms(&self) -> u64;

    /// A random number for a retry's jitter (the host's CSPRNG).
    fn random_u64(&self) -> u64;
}

/// Whether an answer is an accident worth another try ([`retryable`]); a transaction that lost
/// a race with another (and failed no condition) is one too.
fn worth_retrying(res: &HttpResponse) -> bool {
    if res.status != 400 {
        return retryable(res.status, None);
    }
    let Ok(body) = serde_json::from_slice::<Value>(&res.body) else {
        return false;
    };
    let kind = error_type(&body);
    retryable(400, kind)
        || (kind == Some("TransactionCanceledException")
            && !condition_failed(&body)
            && body["CancellationReasons"]
                .as_array()
                .is_some_and(|r| r.iter().any(|r| r["Code"] == "TransactionConflict")))
}

/// Projects and objects from what the indexer published to S3 and DynamoDB (organisations,
/// keys, quotas and audit stay with the host's own [`crate::backend::Accounts`]).
pub struct PublishedProjects<C> {
    client: C,
    config: AwsConfig,
}

fn attr_s<'a>(item: &'a Value, name: &str) -> Option<&'a str> {
    item.get(name)?.get("S")?.as_str()
}

/// DynamoDB's error name without its namespace (`…#TransactionCanceledException`).
fn error_type(body: &Value) -> Option<&str> {
    let t = body.get("__type")?.as_str()?;
    Some(t.rsplit('#').next().unwrap_or(t))
}

/// Whether a transaction was cancelled because a condition failed. A transaction also fails
/// when it races another on the same item (`TransactionConflict`): that is not "it exists".
fn condition_failed(body: &Value) -> bool {
    error_type(body) == Some("TransactionCanceledException")
        && body["CancellationReasons"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["Code"] == "ConditionalCheckFailed"))
}

fn attr_n(item: &Value, name: &str) -> Option<u64> {
    item.get(name)?.get("N")?.as_str()?.parse().ok()
}

impl<C: HttpClient> PublishedProjects<C> {
    /// Reads through `client` what `config` names.
    pub fn new(client: C, config: AwsConfig) -> Self {
        Self { client, config }
    }

    /// Sends `req`, again after a jittered pause ([`Backoff::REQUEST`]) while the answer is
    /// throttling, a server fault or no answer at all; the last outcome when the tries are
    /// spent. The signature stays valid for minutes, so the same request is sent again.
    async fn send(&self, req: SignedRequest) -> Result<HttpResponse, BackendError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self.client.send(req.clone()).await;
            let again = match &outcome {
                Ok(res) => worth_retrying(res),
                // No answer (a dropped connection, a timeout).
                Err(BackendError::Storage(_)) => true,
                Err(_) => false,
            };
            if !again {
                return outcome;
            }
            // Randomness only for a retry: a request that succeeds draws none.
            match Backoff::REQUEST.delay_ms(attempt, self.client.random_u64()) {
                Some(ms) => self.client.pause(ms).await,
                None => return outcome,
            }
        }
    }

    async fn dynamodb(&self, target: &str, body: Value) -> Result<Value, BackendError> {
        let req = self.config.dynamodb(target, &body, self.client.now_ms())?;
        let res = self.send(req).await?;
        let value: Value = serde_json::from_slice(&res.body).map_err(|e| {
            BackendError::Storage(format!("DynamoDB {target}: HTTP {}: {e}", res.status))
        })?;
        if res.status == 400 && condition_failed(&value) {
            return Err(BackendError::Conflict(format!(
                "DynamoDB {target}: {value}"
            )));
        }
        if res.status != 200 {
            return Err(BackendError::Storage(format!(
                "DynamoDB {target}: HTTP {}: {}",
                res.status,
                value
                    .get("message")
                    .or(value.get("Message"))
                    .unwrap_or(&value)
            )));
        }
        Ok(value)
    }

    /// Every project item of `org`, through all of DynamoDB's 1 MB pages.
    async fn project_items(&self, org: &str) -> Result<Vec<ProjectInfo>, BackendError> {
        let mut out = Vec::new();
        for item in self.query_all(&ItemRange::projects_of(org)).await? {
            let data = attr_s(&item, DATA)
                .ok_or_else(|| BackendError::Corrupt("project item without data".into()))?;
            let p: ProjectItem = serde_json::from_str(data)
                .map_err(|e| BackendError::Corrupt(format!("project item: {e}")))?;
            // Only the org's own items, whatever the table holds.
            if p.org != org {
                continue;
            }
            out.push(ProjectInfo {
                id: p.id,
                name: p.name,
                org: p.org,
                source: p.source,
                // The attribute is the truth: the indexer's publish moves it atomically.
                current_version: attr_n(&item, CURRENT_VERSION),
            });
        }
        Ok(out)
    }

    /// The `data` attribute of every item under `range`, through all of DynamoDB's pages.
    async fn items_data(&self, range: &ItemRange) -> Result<Vec<String>, BackendError> {
        Ok(self
            .query_all(range)
            .await?
            .iter()
            .filter_map(|item| attr_s(item, DATA).map(str::to_string))
            .collect())
    }

    /// Every item under `range` (consistent reads), through all of DynamoDB's pages.
    async fn query_all(&self, range: &ItemRange) -> Result<Vec<Value>, BackendError> {
        let mut out = Vec::new();
        let mut start: Option<Value> = None;
        loop {
            let mut body = json!({
                "TableName": self.config.table,
                "KeyConditionExpression": format!("{PK} = :pk AND begins_with({SK}, :p)"),
                "ExpressionAttributeValues": {
                    ":pk": {"S": range.pk},
                    ":p": {"S": range.sk_prefix}
                },
                "ConsistentRead": true
            });
            if let Some(k) = start.take() {
                body["ExclusiveStartKey"] = k;
            }
            let mut page = self.dynamodb("Query", body).await?;
            if let Some(items) = page["Items"].as_array_mut() {
                out.append(items);
            }
            match page.get("LastEvaluatedKey") {
                Some(k) if k.is_object() => start = Some(k.clone()),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Starts the indexer on a registered project at once, when one is configured. The
    /// registration is already durable, so a failure here only delays indexing to the
    /// scheduled pass: it is logged, not answered.
    async fn start_indexing(&self, project: &ProjectInfo, source: &SourceSpec) {
        let Some(function) = &self.config.indexer_function else {
            return;
        };
        let event = json!(IndexerEvent::Index(IndexRequest {
            org: project.org.clone(),
            project: project.name.clone(),
            source: source.clone(),
            full: false,
        }));
        let sent = match self
            .config
            .lambda_invoke_async(function, &event, self.client.now_ms())
        {
            Ok(req) => self.send(req).await,
            Err(e) => Err(e),
        };
        match sent {
            Ok(res) if res.status == 202 => {}
            Ok(res) => self.client.warn(&format!(
                "invoking {function} for project {}: HTTP {}: {}; the scheduled pass will index it",
                project.id,
                res.status,
                String::from_utf8_lossy(&res.body[..res.body.len().min(300)])
            )),
            Err(e) => self.client.warn(&format!(
                "invoking {function} for project {}: {e}; the scheduled pass will index it",
                project.id
            )),
        }
    }

    fn refused() -> BackendError {
        BackendError::Refused(
            "projects on this deployment are published by the batch indexer to S3 and DynamoDB \
             (the Lambda function or `ctxgate index --store s3://…`)"
                .into(),
        )
    }
}

#[async_trait]
impl<C: HttpClient> Projects for PublishedProjects<C> {
    async fn projects(&self, org: &str) -> Result<Vec<ProjectInfo>, BackendError> {
        self.project_items(org).await
    }

    async fn create_project(
        &self,
        org: &str,
        name: &str,
        source: &SourceSpec,
        jobs: &dyn JobGate,
    ) -> Result<ProjectInfo, BackendError> {
        let r = registration(&self.config.table, org, name, source, self.client.now_ms())?;
        // Counted before the registration is written: a registered project is indexed (now, or
        // by the scheduled pass), so one the quota refuses must not be registered at all.
        jobs.admit().await?;
        match self.dynamodb("TransactWriteItems", r.transaction).await {
            Ok(_) => {
                self.start_indexing(&r.project, source).await;
                Ok(r.project)
            }
            // Only the project item carries a condition: it already has a published version.
            Err(BackendError::Conflict(_)) => {
                Err(BackendError::Conflict(format!("project `{name}`")))
            }
            Err(e) => Err(e),
        }
    }

    /// The newest job record the indexer wrote for `project`; a project registered for the
    /// indexer that no job has taken yet is `queued`.
    async fn last_job(&self, project: &ProjectInfo) -> Result<Option<JobSummary>, BackendError> {
        let records = self.items_data(&ItemRange::jobs()).await?;
        if let Some(job) = StoredJob::newest_of(records.iter().map(String::as_str), project) {
            return Ok(Some(job));
        }
        let key = ItemKey::schedule(&project.id);
        let got = self
            .dynamodb(
                "GetItem",
                json!({
                    "TableName": self.config.table,
                    "Key": {PK: {"S": key.pk}, SK: {"S": key.sk}},
                    "ConsistentRead": true
                }),
            )
            .await?;
        let registered = got
            .get("Item")
            .and_then(|item| attr_s(item, DATA))
            .and_then(|d| serde_json::from_str::<ScheduleItem>(d).ok())
            .filter(|s| s.org == project.org && s.runs == 0);
        Ok(registered.map(|s| JobSummary {
            id: String::new(),
            state: JobPhase::Queued,
            trigger: "request".into(),
            stage: "queued".into(),
            version: None,
            error_code: None,
            started_ms: 0,
            updated_ms: s.last_indexed_ms,
        }))
    }

    async fn put_project(&self, _project: &ProjectInfo) -> Result<(), BackendError> {
        Err(Self::refused())
    }

    async fn object(&self, key: &str) -> Result<Vec<u8>, BackendError> {
        let req = self.config.s3_get(key, self.client.now_ms())?;
        let res = self.send(req).await?;
        match res.status {
            200 => Ok(res.body),
            404 => Err(BackendError::NotFound(format!("object `{key}`"))),
            s => Err(BackendError::Storage(format!(
                "S3 GET `{key}`: HTTP {s}: {}",
                String::from_utf8_lossy(&res.body[..res.body.len().min(300)])
            ))),
        }
    }

    async fn object_range(
        &self,
        key: &str,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, BackendError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let req = self
            .config
            .s3_get_range(key, Some((offset, len)), self.client.now_ms())?;
        let res = self.send(req).await?;
        match res.status {
            206 => Ok(res.body),
            // A server that ignores ranges answers the whole object.
            200 => Ok(crate::backend::range_of(&res.body, offset, len).to_vec()),
            // The range starts past the end: the object is shorter than its version says.
            416 => Ok(Vec::new()),
            404 => Err(BackendError::NotFound(format!("object `{key}`"))),
            s => Err(BackendError::Storage(format!(
                "S3 GET `{key}` bytes {offset}+{len}: HTTP {s}: {}",
                String::from_utf8_lossy(&res.body[..res.body.len().min(300)])
            ))),
        }
    }

    async fn put_object(&self, _key: &str, _bytes: Vec<u8>) -> Result<(), BackendError> {
        Err(Self::refused())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers from a script, recording each request and each pause.
    struct Scripted {
        answers: Mutex<Vec<Result<HttpResponse, BackendError>>>,
        sent: Mutex<usize>,
        pauses: Mutex<Vec<u64>>,
    }

    #[async_trait]
    impl HttpClient for Scripted {
        async fn send(&self, _req: SignedRequest) -> Result<HttpResponse, BackendError> {
            *self.sent.lock().unwrap() += 1;
            self.answers.lock().unwrap().remove(0)
        }
        async fn pause(&self, ms: u64) {
            self.pauses.lock().unwrap().push(ms);
        }
        fn now_ms(&self) -> u64 {
            0
        }
        fn random_u64(&self) -> u64 {
            0
        }
    }

    fn answer(status: u16, body: &str) -> Result<HttpResponse, BackendError> {
        Ok(HttpResponse {
            status,
            body: body.as_bytes().to_vec(),
        })
    }

    fn published(
        answers: Vec<Result<HttpResponse, BackendError>>,
    ) -> (
        PublishedProjects<std::sync::Arc<Scripted>>,
        std::sync::Arc<Scripted>,
    ) {
        let client = std::sync::Arc::new(Scripted {
            answers: Mutex::new(answers),
            sent: Mutex::new(0),
            pauses: Mutex::new(Vec::new()),
        });
        let vars = |name: &str| {
            Some(match name {
                "CTXGATE_STORE" => "s3://bucket/prefix".to_string(),
                "CTXGATE_TABLE" => "table".to_string(),
                "AWS_REGION" => "us-east-1".to_string(),
                "AWS_ACCESS_KEY_ID" => "AKIDEXAMPLE".to_string(),
                "AWS_SECRET_ACCESS_KEY" => "secret".to_string(),
                _ => return None,
            })
        };
        let config = AwsConfig::from_vars(vars).unwrap().unwrap();
        (PublishedProjects::new(client.clone(), config), client)
    }

    #[async_trait]
    impl HttpClient for std::sync::Arc<Scripted> {
        async fn send(&self, req: SignedRequest) -> Result<HttpResponse, BackendError> {
            self.as_ref().send(req).await
        }
        async fn pause(&self, ms: u64) {
            self.as_ref().pause(ms).await
        }
        fn now_ms(&self) -> u64 {
            0
        }
        fn random_u64(&self) -> u64 {
            0
        }
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn throttling_faults_and_dropped_connections_are_tried_again() {
        let throttled = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}"#;
        let (backend, client) = published(vec![
            answer(503, "<Error><Code>SlowDown</Code></Error>"),
            answer(400, throttled),
            Err(BackendError::Storage("connection reset".into())),
            answer(200, "bytes"),
        ]);
        assert_eq!(block(backend.object("k")).unwrap(), b"bytes");
        assert_eq!(*client.sent.lock().unwrap(), 4);
        let pauses = client.pauses.lock().unwrap().clone();
        assert_eq!(pauses.len(), 3);
        // Full jitter under the doubling bound.
        for (i, ms) in pauses.iter().enumerate() {
            assert!(*ms <= Backoff::REQUEST.base_ms << i, "{pauses:?}");
        }
    }

    #[test]
    fn answers_are_not_retried_and_tries_end() {
        let (backend, client) = published(vec![answer(404, "")]);
        assert!(matches!(
            block(backend.object("k")),
            Err(BackendError::NotFound(_))
        ));
        assert_eq!(*client.sent.lock().unwrap(), 1);

        let max = Backoff::REQUEST.max_attempts as usize;
        let (backend, client) = published((0..max).map(|_| answer(500, "")).collect());
        assert!(matches!(
            block(backend.object("k")),
            Err(BackendError::Storage(_))
        ));
        assert_eq!(*client.sent.lock().unwrap(), max);
        assert_eq!(client.pauses.lock().unwrap().len(), max - 1);
    }

    #[test]
    fn a_lost_transaction_race_is_retried_a_failed_condition_is_not() {
        let cancelled = |code: &str| {
            json!({
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "CancellationReasons": [{"Code": code}]
            })
            .to_string()
        };
        let res = |b: String| HttpResponse {
            status: 400,
            body: b.into_bytes(),
        };
        assert!(worth_retrying(&res(cancelled("TransactionConflict"))));
        assert!(!worth_retrying(&res(cancelled("ConditionalCheckFailed"))));
        assert!(!worth_retrying(&res(
            r#"{"__type":"x#ValidationException"}"#.into()
        )));
    }

    #[test]
    fn only_a_failed_condition_is_a_conflict() {
        let cancelled = |code: &str| {
            json!({
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "CancellationReasons": [{"Code": code}, {"Code": "None"}]
            })
        };
        assert!(condition_failed(&cancelled("ConditionalCheckFailed")));
        assert!(!condition_failed(&cancelled("TransactionConflict")));
        assert!(!condition_failed(
            &json!({"__type": "x#ValidationException"})
        ));
    }
}
