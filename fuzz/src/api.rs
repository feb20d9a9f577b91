//! The API router in process, over a host that keeps everything in memory: one request per call,
//! no socket. Every call starts from the same state (the sample organisation, its key and its
//! indexed project), so an input replays the same way outside the fuzzer.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use ctxgate_core::catalog::Catalog;
use ctxgate_core::index::gc::StoredObject;
use ctxgate_core::quota::{Lease, Ledger, Limits, Refusal};
use ctxgate_edge::backend::{
    Accounts, AuditRecord, BackendError, JobGate, KeyRecord, OrgRecord, ProjectInfo, Projects,
    SourceSpec,
};
use ctxgate_edge::extract::auth::hash_key;
use ctxgate_edge::{AppState, Config};
use tower::ServiceExt;

use crate::sample::{ORG, PROJECT, sample};

/// The sample organisation's API key.
pub const KEY: &str = "ctx_fuzz_key_0123456789abcdef";
/// The admin secret.
pub const ADMIN: &str = "fuzz-admin-secret";
/// The host's clock: fixed, so continuation tokens and quotas replay alike.
const NOW_MS: u64 = 1_750_000_000_000;

/// Who a route authenticates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// The organisation's API key.
    Key,
    /// The admin secret.
    Admin,
}

/// A route that takes a request body.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    /// The method.
    pub method: &'static str,
    /// The path, with the sample organisation and project filled in.
    pub path: &'static str,
    /// Who may call it.
    pub auth: Auth,
    /// Whether its body is JSON (the object upload takes raw bytes).
    pub json: bool,
}

/// Every route with a body (`{project}` stands for the sample project's id).
pub const ROUTES: &[Route] = &[
    route("POST", "/v1/tokens/count", Auth::Key, true),
    route("POST", "/v1/context", Auth::Key, true),
    route("POST", "/v1/search", Auth::Key, true),
    route("POST", "/v1/history/compact", Auth::Key, true),
    route("POST", "/v1/projects", Auth::Key, true),
    route("POST", "/v1/projects/{project}/reindex", Auth::Key, true),
    route("POST", "/mcp", Auth::Key, true),
    route("POST", "/v1/admin/orgs", Auth::Admin, true),
    route("POST", "/v1/admin/orgs/acme/keys", Auth::Admin, true),
    route("PUT", "/v1/admin/orgs/acme/limits", Auth::Admin, true),
    route("POST", "/v1/admin/orgs/acme/gc", Auth::Admin, true),
    route(
        "PUT",
        "/v1/admin/orgs/acme/projects/other",
        Auth::Admin,
        true,
    ),
    route(
        "PUT",
        "/v1/admin/orgs/acme/objects/project/{project}/segments/x.seg",
        Auth::Admin,
        false,
    ),
];

const fn route(method: &'static str, path: &'static str, auth: Auth, json: bool) -> Route {
    Route {
        method,
        path,
        auth,
        json,
    }
}

/// The `Content-Type` a request carries.
#[derive(Clone, Copy, Debug)]
pub enum ContentType {
    /// `application/json`.
    Json,
    /// None at all.
    Missing,
    /// `text/plain`.
    Text,
    /// `application/json; charset=utf-8`.
    JsonUtf8,
}

impl ContentType {
    /// One of the four, picked by `b`.
    pub fn pick(b: u8) -> Self {
        match b % 4 {
            0 => ContentType::Json,
            1 => ContentType::Missing,
            2 => ContentType::Text,
            _ => ContentType::JsonUtf8,
        }
    }

    fn header(self) -> Option<&'static str> {
        match self {
            ContentType::Json => Some("application/json"),
            ContentType::Missing => None,
            ContentType::Text => Some("text/plain"),
            ContentType::JsonUtf8 => Some("application/json; charset=utf-8"),
        }
    }
}

/// Sends `body` to `route` and checks the answer: never a server error (every call starts from
/// an intact store, so a 5xx is a bug), and an error's body is the API's JSON error shape.
/// Panics (the fuzzer's crash) otherwise.
pub fn call(route: &Route, content_type: ContentType, body: Vec<u8>) {
    let path = route.path.replace("{project}", &sample().project_id);
    let secret = match route.auth {
        Auth::Key => KEY,
        Auth::Admin => ADMIN,
    };
    let mut request = Request::builder()
        .method(Method::from_bytes(route.method.as_bytes()).expect("a method"))
        .uri(&path)
        .header("authorization", format!("Bearer {secret}"));
    if let Some(value) = content_type.header() {
        request = request.header("content-type", value);
    }
    let request = request.body(Body::from(body)).expect("a request");
    let (status, answer) = runtime().block_on(async {
        let response = ctxgate_edge::router(state())
            .oneshot(request)
            .await
            .unwrap_or_else(|e| match e {});
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the answer's body");
        (status, bytes)
    });
    // Replaying an input with CTXGATE_FUZZ_TRACE set shows what the API answered.
    if std::env::var_os("CTXGATE_FUZZ_TRACE").is_some() {
        let shown: String = String::from_utf8_lossy(&answer).chars().take(300).collect();
        eprintln!("{} {path} -> {status}: {shown}", route.method);
    }
    assert!(
        !status.is_server_error(),
        "{} {path} answered {status}: {}",
        route.method,
        String::from_utf8_lossy(&answer)
    );
    if status.is_client_error() && status != StatusCode::METHOD_NOT_ALLOWED {
        let error: serde_json::Value =
            serde_json::from_slice(&answer).expect("an error answer is JSON");
        assert!(
            error["error"]["code"].is_string(),
            "{} {path} answered {status} without an error code: {error}",
            route.method
        );
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
    })
}

/// A fresh state over a fresh [`MemoryHost`]; caches start empty too.
fn state() -> AppState {
    let host = Arc::new(MemoryHost::new());
    AppState::new(
        host.clone(),
        host,
        Catalog::builtin(),
        Config {
            token_secret: b"fuzz-token-secret".to_vec(),
            admin_secret: Some(ADMIN.into()),
            pointer_ttl_ms: 0,
            ..Config::default()
        },
    )
}

/// Accounts and projects in memory: the sample organisation with one key and the sample
/// project; the published objects are shared, objects written by a call are kept apart.
pub struct MemoryHost {
    orgs: Mutex<HashMap<String, OrgRecord>>,
    keys: Mutex<HashMap<String, KeyRecord>>,
    ledgers: Mutex<HashMap<String, Ledger>>,
    audit: Mutex<Vec<(String, AuditRecord)>>,
    projects: Mutex<Vec<ProjectInfo>>,
    written: Mutex<HashMap<String, Vec<u8>>>,
    deleted: Mutex<HashSet<String>>,
    random: Mutex<u8>,
}

impl MemoryHost {
    fn new() -> Self {
        let sample = sample();
        let org = OrgRecord {
            name: ORG.into(),
            limits: Limits::default(),
            allowed_models: Vec::new(),
            dense: false,
            created_ms: NOW_MS,
        };
        let key = KeyRecord {
            org: ORG.into(),
            prefix: KEY[..8].into(),
            created_ms: NOW_MS,
        };
        let project = ProjectInfo {
            id: sample.project_id.clone(),
            name: PROJECT.into(),
            org: ORG.into(),
            source: "fuzz".into(),
            current_version: Some(sample.version),
        };
        Self {
            orgs: Mutex::new(HashMap::from([(ORG.to_string(), org)])),
            keys: Mutex::new(HashMap::from([(hash_key(KEY), key)])),
            ledgers: Mutex::default(),
            audit: Mutex::default(),
            projects: Mutex::new(vec![project]),
            written: Mutex::default(),
            deleted: Mutex::default(),
            random: Mutex::new(0),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait]
impl Accounts for MemoryHost {
    fn now_ms(&self) -> u64 {
        NOW_MS
    }

    fn random_bytes(&self, n: usize) -> Vec<u8> {
        let mut next = lock(&self.random);
        (0..n)
            .map(|_| {
                *next = next.wrapping_add(1);
                *next
            })
            .collect()
    }

    async fn create_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        let mut orgs = lock(&self.orgs);
        if orgs.contains_key(&org.name) {
            return Err(BackendError::Conflict(format!(
                "organisation `{}`",
                org.name
            )));
        }
        orgs.insert(org.name.clone(), org.clone());
        Ok(())
    }

    async fn org(&self, name: &str) -> Result<Option<OrgRecord>, BackendError> {
        Ok(lock(&self.orgs).get(name).cloned())
    }

    async fn update_org(&self, org: &OrgRecord) -> Result<(), BackendError> {
        lock(&self.orgs).insert(org.name.clone(), org.clone());
        Ok(())
    }

    async fn put_key(&self, key_hash: &str, key: &KeyRecord) -> Result<(), BackendError> {
        lock(&self.keys).insert(key_hash.into(), key.clone());
        Ok(())
    }

    async fn key(&self, key_hash: &str) -> Result<Option<KeyRecord>, BackendError> {
        Ok(lock(&self.keys).get(key_hash).cloned())
    }

    async fn reserve(
        &self,
        org: &str,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<Result<Lease, Refusal>, BackendError> {
        let mut ledgers = lock(&self.ledgers);
        let ledger = ledgers.entry(org.into()).or_default();
        Ok(ledger.reserve(limits, lease_id, tokens, now_ms))
    }

    async fn settle(
        &self,
        org: &str,
        lease_id: &str,
        used: u64,
        now_ms: u64,
    ) -> Result<(), BackendError> {
        let mut ledgers = lock(&self.ledgers);
        ledgers
            .entry(org.into())
            .or_default()
            .settle(lease_id, used, now_ms);
        Ok(())
    }

    async fn admit_index_job(
        &self,
        org: &str,
        limits: &Limits,
        now_ms: u64,
    ) -> Result<Result<(), Refusal>, BackendError> {
        let mut ledgers = lock(&self.ledgers);
        let ledger = ledgers.entry(org.into()).or_default();
        Ok(ledger.admit_index_job(limits, now_ms))
    }

    async fn ledger(&self, org: &str) -> Result<Ledger, BackendError> {
        Ok(lock(&self.ledgers).get(org).cloned().unwrap_or_default())
    }

    async fn append_audit(&self, org: &str, record: &AuditRecord) -> Result<(), BackendError> {
        lock(&self.audit).push((org.into(), record.clone()));
        Ok(())
    }

    async fn audit(&self, org: &str, limit: usize) -> Result<Vec<AuditRecord>, BackendError> {
        Ok(lock(&self.audit)
            .iter()
            .rev()
            .filter(|(o, _)| o == org)
            .take(limit)
            .map(|(_, r)| r.clone())
            .collect())
    }
}

#[async_trait]
impl Projects for MemoryHost {
    async fn projects(&self, org: &str) -> Result<Vec<ProjectInfo>, BackendError> {
        Ok(lock(&self.projects)
            .iter()
            .filter(|p| p.org == org)
            .cloned()
            .collect())
    }

    async fn create_project(
        &self,
        _org: &str,
        _name: &str,
        _source: &SourceSpec,
        _jobs: &dyn JobGate,
    ) -> Result<ProjectInfo, BackendError> {
        Err(BackendError::Refused(
            "this host does not index sources".into(),
        ))
    }

    async fn put_project(&self, project: &ProjectInfo) -> Result<(), BackendError> {
        let mut projects = lock(&self.projects);
        projects.retain(|p| p.id != project.id);
        projects.push(project.clone());
        Ok(())
    }

    async fn object(&self, key: &str) -> Result<Vec<u8>, BackendError> {
        if let Some(bytes) = lock(&self.written).get(key) {
            return Ok(bytes.clone());
        }
        let published = sample().objects.iter().find(|(k, _)| k == key);
        match published {
            Some((_, bytes)) if !lock(&self.deleted).contains(key) => Ok(bytes.clone()),
            _ => Err(BackendError::NotFound(format!("object `{key}`"))),
        }
    }

    async fn put_object(&self, key: &str, bytes: Vec<u8>) -> Result<(), BackendError> {
        lock(&self.written).insert(key.into(), bytes);
        Ok(())
    }

    async fn list_objects(&self, prefix: &str) -> Result<Vec<StoredObject>, BackendError> {
        let written = lock(&self.written);
        let deleted = lock(&self.deleted);
        let published = sample()
            .objects
            .iter()
            .filter(|(k, _)| !deleted.contains(k) && !written.contains_key(k))
            .map(|(k, v)| (k, v));
        let mut out: Vec<StoredObject> = published
            .chain(written.iter())
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| StoredObject {
                key: k.clone(),
                bytes: v.len() as u64,
                modified_ms: 0,
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    async fn delete_object(&self, key: &str) -> Result<(), BackendError> {
        lock(&self.written).remove(key);
        lock(&self.deleted).insert(key.into());
        Ok(())
    }
}
