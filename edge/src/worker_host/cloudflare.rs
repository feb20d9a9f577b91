//! [`Accounts`] and [`Projects`] over Cloudflare bindings: index objects in R2, API keys in KV, everything an
//! organisation owns (record, quota ledger, projects, audit) in its Durable Object.
//!
//! Why this split: keys are written once and read on every request, which is what KV is good at
//! (cached at the edge); org-scoped state needs read-your-writes and atomic updates, which only a
//! Durable Object gives; index objects are large and immutable, which is R2's job.
//!
//! JS values are not `Send`, but the router's futures must be: the Worker runs on one thread, so
//! each call wraps its JS work in [`SendFuture`] and the bindings in [`SendWrapper`].

use async_trait::async_trait;
use ctxgate_core::quota::{Lease, Ledger, Limits, Refusal};
use serde::de::DeserializeOwned;
use worker::send::{SendFuture, SendWrapper};
use worker::{Bucket, Env, KvStore, Method, ObjectNamespace, Request, RequestInit};

use super::org_object::{CONFLICT, OrgCommand};
use crate::backend::{
    Accounts, Admission, AuditRecord, BackendError, JobGate, KeyRecord, OrgRecord,
    ProjectAdmission, ProjectInfo, Projects, SourceSpec,
};
use crate::recent::Recent;
use ctxgate_core::index::gc::StoredObject;

/// Binding names, as in `wrangler.toml`.
pub const OBJECTS_BUCKET: &str = "OBJECTS";
/// KV namespace of API keys.
pub const KEYS_KV: &str = "KEYS";
/// Durable Object namespace of organisations.
pub const ORGS_DO: &str = "ORGS";

/// How long an isolate reuses an API key's record it read. Keys are written once and never
/// changed, and KV itself serves a read from its edge cache for up to 60 s after a change, so
/// remembering a found key this long adds no staleness KV does not already have; it saves a KV
/// read on every request. Keys not found are not remembered (a new key works at once here).
const KEY_CACHE_MS: u64 = 60_000;

/// How long an isolate reuses an organisation record it read. Every authenticated request needs
/// the record (its limits and models); re-reading it from the org's Durable Object cost a round
/// trip per request. A change made through another isolate shows within this time (changes made
/// through this one, at once); the quota ledger itself is never cached.
const ORG_CACHE_MS: u64 = 1_000;

/// The Worker's storage.
pub struct CloudflareBackend {
    objects: SendWrapper<Bucket>,
    keys: SendWrapper<KvStore>,
    orgs: SendWrapper<ObjectNamespace>,
    /// Organisation records read in the last [`ORG_CACHE_MS`].
    orgs_read: Recent<OrgRecord>,
    /// Key records (by key hash) read in the last [`KEY_CACHE_MS`].
    keys_read: Recent<KeyRecord>,
}

fn storage(e: impl std::fmt::Display) -> BackendError {
    BackendError::Storage(e.to_string())
}

/// A Durable Object's answer as text, read by the runtime's own `Response.text()`: workers-rs
/// reads a body through a Rust stream over its `ReadableStream` (a reader, a promise and a
/// copy per chunk), which V8's profiler showed as a visible share of every metered call (two
/// object calls each).
async fn body_text(res: worker::Response) -> Result<String, BackendError> {
    let res: worker::web_sys::Response = res.into();
    let text = res.text().map_err(|e| storage(format!("{e:?}")))?;
    let text = worker::wasm_bindgen_futures::JsFuture::from(text)
        .await
        .map_err(|e| storage(format!("{e:?}")))?;
    text.as_string()
        .ok_or_else(|| storage("an object's answer is not text"))
}

impl CloudflareBackend {
    /// The backend over `env`'s bindings; fails if one is missing from the deployment.
    pub fn from_env(env: &Env) -> Result<Self, worker::Error> {
        Ok(Self {
            objects: SendWrapper::new(env.bucket(OBJECTS_BUCKET)?),
            keys: SendWrapper::new(env.kv(KEYS_KV)?),
            orgs: SendWrapper::new(env.durable_object(ORGS_DO)?),
            orgs_read: Recent::new(ORG_CACHE_MS),
            keys_read: Recent::new(KEY_CACHE_MS),
        })
    }

    /// Sends `command` to `org`'s object and decodes its answer.
    async fn call<T: DeserializeOwned>(
        &self,
        org: &str,
        command: &OrgCommand,
    ) -> Result<T, BackendError> {
        let body = serde_json::to_string(command).map_err(storage)?;
        let stub = self
            .orgs
            .id_from_name(&format!("org:{org}"))
            .and_then(|id| id.get_stub())
            .map_err(storage)?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_body(Some(wasm_bindgen::JsValue::from_str(&body)));
        let req = Request::new_with_init("https://org.internal/", &init).map_err(storage)?;
        let res = stub.fetch_with_request(req).await.map_err(storage)?;
        let status = res.status_code();
        let text = body_text(res).await?;
        match status {
            200 => serde_json::from_str(&text)
                .map_err(|e| BackendError::Corrupt(format!("org object answered {text:?}: {e}"))),
            CONFLICT => Err(BackendError::Conflict(format!("organisation `{org}`"))),
            _ => Err(BackendError::Storage(format!(
                "org object answered {status}: {text}"
            ))),
        }
    }

    async fn org_call<T: DeserializeOwned>(
        &self,
        org: &str,
        command: OrgCommand,
    ) -> Result<T, BackendError> {
        SendFuture::new(self.call(org, &command)).await
    }
}

#[async_trait]
impl Accounts for CloudflareBackend {
    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }

    fn random_bytes(&self, n: usize) -> Vec<u8> {
        match super::random::bytes(n) {
            Ok(b) => b,
            // A zeroed buffer would make keys guessable: fail loudly instead.
            Err(e) => panic!("crypto.getRandomValues failed: {e:?}"),
        }
    }

    async fn create_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        self.orgs_read.forget(&org.name);
        self.org_call(&org.name, OrgCommand::CreateOrg { org: org.clone() })
            .await
    }

    async fn org(&self, name: &str) -> Result<Option<OrgRecord>, BackendError> {
        let now = self.now_ms();
        if let Some(org) = self.orgs_read.get(name, now) {
            return Ok(Some(org));
        }
        let org: Option<OrgRecord> = self.org_call(name, OrgCommand::Org).await?;
        match &org {
            Some(o) => self.orgs_read.remember(name, o, now),
            None => self.orgs_read.forget(name),
        }
        Ok(org)
    }

    async fn update_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        self.orgs_read.forget(&org.name);
        self.org_call(&org.name, OrgCommand::UpdateOrg { org: org.clone() })
            .await
    }

    async fn put_key(&self, key_hash: &str, key: &KeyRecord) -> Result<(), BackendError> {
        let data = serde_json::to_string(key).map_err(storage)?;
        let put = self
            .keys
            .put(&format!("key:{key_hash}"), data)
            .map_err(storage)?;
        SendFuture::new(put.execute()).await.map_err(storage)
    }

    async fn key(&self, key_hash: &str) -> Result<Option<KeyRecord>, BackendError> {
        let now = self.now_ms();
        if let Some(key) = self.keys_read.get(key_hash, now) {
            return Ok(Some(key));
        }
        let get = self.keys.get(&format!("key:{key_hash}"));
        let Some(text) = SendFuture::new(get.text()).await.map_err(storage)? else {
            return Ok(None);
        };
        let key: KeyRecord = serde_json::from_str(&text)
            .map_err(|e| BackendError::Corrupt(format!("key record: {e}")))?;
        self.keys_read.remember(key_hash, &key, now);
        Ok(Some(key))
    }

    async fn reserve(
        &self,
        org: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<Result<Lease, Refusal>, BackendError> {
        let command = OrgCommand::Reserve {
            limits: *limits,
            lease_id: lease_id.to_string(),
            tokens,
            now_ms,
        };
        self.org_call(org, command).await
    }

    async fn settle(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
    ) -> Result<(), BackendError> {
        let command = OrgCommand::Settle {
            lease_id: lease_id.to_string(),
            used,
            now_ms,
        };
        self.org_call(org, command).await
    }

    async fn admit_index_job(
        &self,
        org: &str,
        limits: &Limits,
        now_ms: u64,
    ) -> Result<Result<(), Refusal>, BackendError> {
        let command = OrgCommand::AdmitIndexJob {
            limits: *limits,
            now_ms,
        };
        self.org_call(org, command).await
    }

    async fn ledger(&self, org: &str) -> Result<Ledger, BackendError> {
        self.org_call(org, OrgCommand::Ledger).await
    }

    async fn append_audit(&self, org: &str, record: &AuditRecord) -> Result<(), BackendError> {
        let command = OrgCommand::AppendAudit {
            record: record.clone(),
        };
        self.org_call(org, command).await
    }

    async fn settle_and_audit(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> Result<(), BackendError> {
        let command = OrgCommand::SettleAndAudit {
            lease_id: lease_id.to_string(),
            used,
            now_ms,
            record: record.clone(),
        };
        self.org_call(org, command).await
    }

    async fn book_and_audit(
        &self,
        org: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> Result<(), BackendError> {
        let command = OrgCommand::BookAndAudit {
            used,
            now_ms,
            record: record.clone(),
        };
        self.org_call(org, command).await
    }

    async fn audit(&self, org: &str, limit: usize) -> Result<Vec<AuditRecord>, BackendError> {
        self.org_call(org, OrgCommand::Audit { limit }).await
    }
}

#[async_trait]
impl Projects for CloudflareBackend {
    async fn projects(&self, org: &str) -> Result<Vec<ProjectInfo>, BackendError> {
        self.org_call(org, OrgCommand::Projects).await
    }

    async fn create_project(
        &self,
        _org: &str,
        _name: &str,
        _source: &SourceSpec,
        _jobs: &dyn JobGate,
    ) -> Result<ProjectInfo, BackendError> {
        // No parser for source files runs in wasm (tree-sitter is C): an indexer publishes
        // projects to the Worker instead (objects, then `PUT /v1/admin/orgs/{org}/projects/{name}`).
        Err(BackendError::Refused(
            "this Worker does not fetch or index sources: index the project locally \
             (`ctxgate project add`) and publish it here (`ctxgate project publish --to <this \
             Worker's URL>`)"
                .into(),
        ))
    }

    async fn put_project(&self, project: &ProjectInfo) -> Result<(), BackendError> {
        let command = OrgCommand::PutProject {
            project: project.clone(),
        };
        self.org_call(&project.org, command).await
    }

    async fn object(&self, key: &str) -> Result<Vec<u8>, BackendError> {
        SendFuture::new(async {
            let object = self
                .objects
                .get(key)
                .execute()
                .await
                .map_err(storage)?
                .ok_or_else(|| BackendError::NotFound(format!("object `{key}`")))?;
            let body = object
                .body()
                .ok_or_else(|| BackendError::Corrupt(format!("object `{key}` has no body")))?;
            body.bytes().await.map_err(storage)
        })
        .await
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
        SendFuture::new(async {
            let object = self
                .objects
                .get(key)
                .range(worker::Range::OffsetWithLength {
                    offset,
                    length: len,
                })
                .execute()
                .await
                .map_err(storage)?
                .ok_or_else(|| BackendError::NotFound(format!("object `{key}`")))?;
            match object.body() {
                Some(body) => body.bytes().await.map_err(storage),
                // R2 answers a range past the end with no body.
                None => Ok(Vec::new()),
            }
        })
        .await
    }

    async fn has_object(&self, key: &str) -> Result<bool, BackendError> {
        SendFuture::new(async { Ok(self.objects.head(key).await.map_err(storage)?.is_some()) })
            .await
    }

    async fn list_objects(&self, prefix: &str) -> Result<Vec<StoredObject>, BackendError> {
        SendFuture::new(async {
            let mut out = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let mut list = self.objects.list().prefix(prefix);
                if let Some(c) = cursor.take() {
                    list = list.cursor(c);
                }
                let page = list.execute().await.map_err(storage)?;
                out.extend(page.objects().into_iter().map(|o| StoredObject {
                    key: o.key(),
                    bytes: o.size(),
                    modified_ms: o.uploaded().as_millis(),
                }));
                match (page.truncated(), page.cursor()) {
                    (true, Some(c)) => cursor = Some(c),
                    _ => return Ok(out),
                }
            }
        })
        .await
    }

    async fn delete_object(&self, key: &str) -> Result<(), BackendError> {
        SendFuture::new(async { self.objects.delete(key).await.map_err(storage) }).await
    }

    async fn put_object(&self, key: &str, bytes: Vec<u8>) -> Result<(), BackendError> {
        SendFuture::new(async {
            self.objects
                .put(key, bytes)
                .execute()
                .await
                .map(|_| ())
                .map_err(storage)
        })
        .await
    }
}

/// One round trip: the org's Durable Object holds its projects and its ledger (used when
/// projects are not read from AWS).
#[async_trait]
impl Admission for CloudflareBackend {
    async fn reserve_for_project(
        &self,
        org: &str,
        key: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<ProjectAdmission, BackendError> {
        let command = OrgCommand::ReserveForProject {
            project: key.to_string(),
            limits: *limits,
            lease_id: lease_id.to_string(),
            tokens,
            now_ms,
        };
        self.org_call(org, command).await
    }
}
