//! The backend that reads projects and objects from AWS and delegates everything else.

use async_trait::async_trait;
use ctxgate_core::quota::{Lease, Ledger, Limits, Refusal};
use serde::Deserialize;
use serde_json::{Value, json};

use super::register::registration;
use super::request::{AwsConfig, SignedRequest};
use crate::backend::{
    AuditRecord, Backend, BackendError, KeyRecord, OrgRecord, ProjectInfo, ProjectSource,
};

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
}

/// Projects and objects from what the indexer published to S3 and DynamoDB; organisations,
/// keys, quotas and audit from `inner`.
pub struct PublishedBackend<B, C> {
    inner: B,
    client: C,
    config: AwsConfig,
}

/// A project item's `data`, as the indexer writes it (fields the API does not show ignored).
#[derive(Deserialize)]
struct ProjectData {
    id: String,
    org: String,
    name: String,
    source: String,
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

impl<B: Backend, C: HttpClient> PublishedBackend<B, C> {
    /// Wraps `inner`.
    pub fn new(inner: B, client: C, config: AwsConfig) -> Self {
        Self {
            inner,
            client,
            config,
        }
    }

    async fn dynamodb(&self, target: &str, body: Value) -> Result<Value, BackendError> {
        let req = self.config.dynamodb(target, &body, self.inner.now_ms())?;
        let res = self.client.send(req).await?;
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
        let mut start: Option<Value> = None;
        loop {
            let mut body = json!({
                "TableName": self.config.table,
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :p)",
                "ExpressionAttributeValues": {
                    ":pk": {"S": format!("ORG#{org}")},
                    ":p": {"S": "PROJECT#"}
                },
                "ConsistentRead": true
            });
            if let Some(k) = start.take() {
                body["ExclusiveStartKey"] = k;
            }
            let page = self.dynamodb("Query", body).await?;
            for item in page["Items"].as_array().into_iter().flatten() {
                let data = attr_s(item, "data")
                    .ok_or_else(|| BackendError::Corrupt("project item without data".into()))?;
                let p: ProjectData = serde_json::from_str(data)
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
                    current_version: attr_n(item, "current_version"),
                });
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
    async fn start_indexing(&self, project: &ProjectInfo, source: &ProjectSource) {
        let Some(function) = &self.config.indexer_function else {
            return;
        };
        let event = json!({
            "action": "index", "org": project.org, "project": project.name, "source": source
        });
        let sent = match self
            .config
            .lambda_invoke_async(function, &event, self.inner.now_ms())
        {
            Ok(req) => self.client.send(req).await,
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
impl<B: Backend, C: HttpClient> Backend for PublishedBackend<B, C> {
    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }
    fn random_bytes(&self, n: usize) -> Vec<u8> {
        self.inner.random_bytes(n)
    }
    async fn create_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        self.inner.create_org(org).await
    }
    async fn org(&self, name: &str) -> Result<Option<OrgRecord>, BackendError> {
        self.inner.org(name).await
    }
    async fn update_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        self.inner.update_org(org).await
    }
    async fn put_key(&self, key_hash: &str, key: &KeyRecord) -> Result<(), BackendError> {
        self.inner.put_key(key_hash, key).await
    }
    async fn key(&self, key_hash: &str) -> Result<Option<KeyRecord>, BackendError> {
        self.inner.key(key_hash).await
    }
    async fn reserve(
        &self,
        org: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<Result<Lease, Refusal>, BackendError> {
        self.inner
            .reserve(org, limits, lease_id, tokens, now_ms)
            .await
    }
    async fn settle(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
    ) -> Result<(), BackendError> {
        self.inner.settle(org, lease_id, used, now_ms).await
    }
    async fn ledger(&self, org: &str) -> Result<Ledger, BackendError> {
        self.inner.ledger(org).await
    }
    async fn append_audit(&self, org: &str, record: &AuditRecord) -> Result<(), BackendError> {
        self.inner.append_audit(org, record).await
    }
    async fn settle_and_audit(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> Result<(), BackendError> {
        self.inner
            .settle_and_audit(org, lease_id, used, now_ms, record)
            .await
    }
    async fn audit(&self, org: &str, limit: usize) -> Result<Vec<AuditRecord>, BackendError> {
        self.inner.audit(org, limit).await
    }

    async fn projects(&self, org: &str) -> Result<Vec<ProjectInfo>, BackendError> {
        self.project_items(org).await
    }

    async fn create_project(
        &self,
        org: &str,
        name: &str,
        source: &ProjectSource,
    ) -> Result<ProjectInfo, BackendError> {
        let r = registration(&self.config.table, org, name, source, self.inner.now_ms())?;
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

    async fn put_project(&self, _project: &ProjectInfo) -> Result<(), BackendError> {
        Err(Self::refused())
    }

    async fn object(&self, key: &str) -> Result<Vec<u8>, BackendError> {
        let req = self.config.s3_get(key, self.inner.now_ms())?;
        let res = self.client.send(req).await?;
        match res.status {
            200 => Ok(res.body),
            404 => Err(BackendError::NotFound(format!("object `{key}`"))),
            s => Err(BackendError::Storage(format!(
                "S3 GET `{key}`: HTTP {s}: {}",
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
    use super::condition_failed;
    use serde_json::json;

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
