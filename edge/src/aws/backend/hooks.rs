//! Push webhooks over AWS: the webhook and delivery items in the DynamoDB table the indexer
//! writes (beside the project's versions), the registered source from the schedule item, and
//! the re-index as an asynchronous invocation of the indexer function, the event
//! `POST /v1/projects` sends when it registers a project.

use async_trait::async_trait;
use ctxgate_core::host_wire::{IndexRequest, IndexerEvent};
use ctxgate_core::item_key::ItemKey;
use ctxgate_core::item_key::attr::{DATA, PK, SK};
use ctxgate_core::records::ScheduleItem;
use serde_json::{Value, json};

use super::{HttpClient, PublishedProjects, attr_s};
use crate::backend::{BackendError, JobGate, ProjectInfo, SourceSpec};
use crate::hooks::{HookRecord, Webhooks};

fn key(table: &str, key: &ItemKey) -> Value {
    json!({"TableName": table, "Key": {PK: {"S": key.pk}, SK: {"S": key.sk}}})
}

impl<C: HttpClient> PublishedProjects<C> {
    /// The `data` of item `k`, read consistently.
    async fn item_data(&self, k: &ItemKey) -> Result<Option<String>, BackendError> {
        let mut body = key(&self.config.table, k);
        body["ConsistentRead"] = json!(true);
        let got = self.dynamodb("GetItem", body).await?;
        Ok(attr_s(&got["Item"], DATA).map(str::to_owned))
    }

    async fn delete(&self, k: &ItemKey) -> Result<(), BackendError> {
        self.dynamodb("DeleteItem", key(&self.config.table, k))
            .await
            .map(|_| ())
    }
}

fn corrupt(what: &str, e: serde_json::Error) -> BackendError {
    BackendError::Corrupt(format!("{what}: {e}"))
}

#[async_trait]
impl<C: HttpClient> Webhooks for PublishedProjects<C> {
    async fn hook(&self, project: &str) -> Result<Option<HookRecord>, BackendError> {
        self.item_data(&ItemKey::webhook(project))
            .await?
            .map(|d| serde_json::from_str(&d).map_err(|e| corrupt("webhook item", e)))
            .transpose()
    }

    async fn put_hook(&self, hook: &HookRecord) -> Result<(), BackendError> {
        let k = ItemKey::webhook(&hook.project);
        let data = serde_json::to_string(hook).map_err(|e| corrupt("webhook item", e))?;
        let body = json!({
            "TableName": self.config.table,
            "Item": {PK: {"S": k.pk}, SK: {"S": k.sk}, DATA: {"S": data}}
        });
        self.dynamodb("PutItem", body).await.map(|_| ())
    }

    async fn delete_hook(&self, project: &str) -> Result<(), BackendError> {
        self.delete(&ItemKey::webhook(project)).await
    }

    async fn mark_delivery(
        &self,
        project: &str,
        mark: &str,
        at_ms: u64,
    ) -> Result<bool, BackendError> {
        let k = ItemKey::delivery(project, mark);
        // A one-item transaction: a failed condition comes back as a cancellation the store
        // already tells apart from a lost race ([`super::condition_failed`]).
        let body = json!({"TransactItems": [{"Put": {
            "TableName": self.config.table,
            "Item": {
                PK: {"S": k.pk}, SK: {"S": k.sk},
                DATA: {"S": json!({"at_ms": at_ms}).to_string()}
            },
            "ConditionExpression": format!("attribute_not_exists({PK})")
        }}]});
        match self.dynamodb("TransactWriteItems", body).await {
            Ok(_) => Ok(true),
            Err(BackendError::Conflict(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn forget_delivery(&self, project: &str, mark: &str) -> Result<(), BackendError> {
        self.delete(&ItemKey::delivery(project, mark)).await
    }

    async fn registered_source(
        &self,
        project: &ProjectInfo,
    ) -> Result<Option<SourceSpec>, BackendError> {
        let Some(data) = self.item_data(&ItemKey::schedule(&project.id)).await? else {
            return Ok(None);
        };
        let item: ScheduleItem =
            serde_json::from_str(&data).map_err(|e| corrupt("schedule item", e))?;
        Ok((item.org == project.org).then_some(item.source))
    }

    async fn queue_reindex(
        &self,
        project: &ProjectInfo,
        source: &SourceSpec,
        jobs: &dyn JobGate,
    ) -> Result<(), BackendError> {
        let Some(function) = &self.config.indexer_function else {
            return Err(BackendError::Refused(
                "no indexer function is configured (CTXGATE_INDEXER_FUNCTION): the scheduled \
                 pass will index the push"
                    .into(),
            ));
        };
        let event = json!(IndexerEvent::Index(IndexRequest {
            org: project.org.clone(),
            project: project.name.clone(),
            source: source.clone(),
            full: false,
        }));
        let req = self
            .config
            .lambda_invoke_async(function, &event, self.client.now_ms())?;
        // Lambda queues every invocation: none is merged into another, so each counts.
        jobs.admit().await?;
        let res = self.send(req).await?;
        if res.status == 202 {
            return Ok(());
        }
        Err(BackendError::Storage(format!(
            "invoking {function} for project {}: HTTP {}: {}",
            project.id,
            res.status,
            String::from_utf8_lossy(&res.body[..res.body.len().min(300)])
        )))
    }
}
