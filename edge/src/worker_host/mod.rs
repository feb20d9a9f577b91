//! The Cloudflare Worker host: the same router as `ctxgate serve`, over Cloudflare bindings.
//!
//! The entry point only turns `env` into an [`AppState`] (once per isolate, so the opened index
//! versions and token tables stay warm between requests) and hands each request to
//! [`crate::router`]; every request decision is the router's, shared with the native host.
//!
//! Deployment settings come from Worker secrets and vars (`.dev.vars` or `--var` locally):
//! `TOKEN_SECRET` (required, at least 16 characters: signs continuation tokens),
//! `ADMIN_SECRET` (optional: unlocks the admin endpoints), `MAX_BODY_BYTES` (optional),
//! `CATALOG_TOML` (optional: models merged over the built-in catalog), and `CTXGATE_STORE` with
//! `CTXGATE_TABLE` and AWS credentials (optional: read projects from what the batch indexer
//! published to S3 and DynamoDB; see `aws_fetch::config`). An Analytics Engine dataset bound as
//! `ANALYTICS` (optional) receives one data point per request (`analytics`).
//! `CTXGATE_EMBED_URL`/`_MODEL`/`_DIMS` vars and the `CTXGATE_EMBED_API_KEY` secret (optional)
//! embed queries of organisations with dense on ([`published_dense`]).

mod analytics;
mod aws_fetch;
mod cloudflare;
mod edge_cache;
mod org_object;
mod random;
mod request;
mod scheduled;

use ctxgate_core::error_code::ErrorCode;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::response::IntoResponse;
use ctxgate_core::catalog::{Catalog, CatalogError};
use ctxgate_core::tokens::{Encoding, RankTable};
use tower_service::Service;
use worker::{Context, Env, event, web_sys};

pub use cloudflare::CloudflareBackend;
pub use org_object::OrgObject;

use crate::dense::provider::{ApiSettings, EmbeddingsApi};
use crate::dense::published::{PublishedDense, WORKER_TABLE_CEILING};
use crate::error::ApiError;
use crate::observe::RequestRecord;
use crate::state::{AppState, Config};

/// Why the Worker cannot serve with its configuration.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A required secret is not set.
    #[error("the secret `{0}` is not set (wrangler secret put {0}; .dev.vars locally)")]
    MissingSecret(&'static str),
    /// A secret is too short to be safe.
    #[error("the secret `{0}` must have at least 16 characters")]
    WeakSecret(&'static str),
    /// A var does not parse.
    #[error("the var `{0}` is not valid: {1}")]
    BadVar(&'static str, String),
    /// The catalog override does not parse.
    #[error("CATALOG_TOML: {0}")]
    Catalog(#[from] CatalogError),
    /// A binding is missing from `wrangler.toml`.
    #[error("binding: {0}")]
    Binding(String),
}

fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .ok()
        .map(|v| v.to_string())
        .filter(|v| !v.is_empty())
}

/// The configuration in `env`.
fn config(env: &Env) -> Result<Config, HostError> {
    let token_secret = var(env, "TOKEN_SECRET").ok_or(HostError::MissingSecret("TOKEN_SECRET"))?;
    if token_secret.len() < 16 {
        return Err(HostError::WeakSecret("TOKEN_SECRET"));
    }
    let admin_secret = var(env, "ADMIN_SECRET");
    if admin_secret.as_ref().is_some_and(|s| s.len() < 16) {
        return Err(HostError::WeakSecret("ADMIN_SECRET"));
    }
    let mut config = Config {
        token_secret: token_secret.into_bytes(),
        admin_secret,
        ..Config::default()
    };
    if let Some(v) = var(env, "MAX_BODY_BYTES") {
        config.max_body_bytes = v.parse().map_err(|e: std::num::ParseIntError| {
            HostError::BadVar("MAX_BODY_BYTES", e.to_string())
        })?;
    }
    let (weights, ignored) =
        ctxgate_core::rank::Weights::tuned(var(env, "RANK_WEIGHTS").as_deref());
    if let Some(why) = ignored {
        return Err(HostError::BadVar("RANK_WEIGHTS", why));
    }
    config.weights = weights;
    if let Some(v) = var(env, "POINTER_TTL_MS") {
        config.pointer_ttl_ms = v.parse().map_err(|e: std::num::ParseIntError| {
            HostError::BadVar("POINTER_TTL_MS", e.to_string())
        })?;
    }
    Ok(config)
}

/// The built-in catalog's models, validated and written as JSON by `build.rs`.
static CATALOG_JSON: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/catalog.json"));

fn catalog(env: &Env) -> Result<Catalog, HostError> {
    let models = serde_json::from_slice(CATALOG_JSON)
        .map_err(|e| CatalogError::Parse(format!("built-in catalog: {e}")))?;
    let builtin = Catalog::from_models(models)?;
    Ok(match var(env, "CATALOG_TOML") {
        Some(text) => builtin.merge(Catalog::from_toml(&text)?)?,
        None => builtin,
    })
}

/// Token tables exported by `build.rs`, compiled into the module, by table name.
static TABLES: [(&str, &[u8]); 4] = [
    (
        "o200k_base",
        include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.table")),
    ),
    (
        "cl100k_base",
        include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.table")),
    ),
    (
        "p50k_base",
        include_bytes!(concat!(env!("OUT_DIR"), "/p50k_base.table")),
    ),
    (
        "r50k_base",
        include_bytes!(concat!(env!("OUT_DIR"), "/r50k_base.table")),
    ),
];

/// Loads a compiled-in token table on its encoding's first count: the tables are ready as
/// compiled (their hash index was built by `build.rs`), so loading only checks the structure
/// (the pre-tokenizer is a scanner; its Unicode ranges are merged on the first count), and no
/// request builds tiktoken-rs's tables (about half a second
/// of CPU in a fresh isolate; tiktoken-rs is not in the module at all). A table that fails to
/// load (never expected: the build exported and self-checked it) leaves counts at one per byte,
/// an over-count that keeps every budget.
fn load_token_table(encoding: Encoding) -> Option<RankTable> {
    let (_, bytes) = TABLES.iter().find(|(n, _)| *n == encoding.table_name())?;
    match RankTable::load_static(encoding, bytes) {
        Ok(table) => Some(table),
        Err(e) => {
            worker::console_error!("token table {}: {e}", encoding.name());
            None
        }
    }
}

/// The router over `env`'s bindings and settings, and its general body limit.
fn build(env: &Env) -> Result<(Router, BodyLimits), HostError> {
    Encoding::set_loader(load_token_table);
    let backend =
        CloudflareBackend::from_env(env).map_err(|e| HostError::Binding(e.to_string()))?;
    let config = config(env)?;
    let limits = BodyLimits {
        general: config.max_body_bytes,
        admin_secret: config.admin_secret.clone(),
    };
    // With `CTXGATE_STORE`, projects and index objects come from what the batch indexer
    // published to S3 and DynamoDB; orgs, keys and quotas stay in the Durable Objects.
    let aws = aws_fetch::config(|name| var(env, name))
        .map_err(|e| HostError::BadVar("CTXGATE_STORE", e))?;
    let backend = Arc::new(backend);
    let state = match aws {
        Some(aws) => {
            // A push can start indexing only through the indexer function.
            let (projects, webhooks) = crate::aws::published_store(aws_fetch::WorkerFetch, aws);
            AppState::new(backend, projects, catalog(env)?, config).with_webhooks(webhooks)
        }
        None => AppState::new(backend.clone(), backend.clone(), catalog(env)?, config)
            .with_admission(backend),
    };
    let state = state
        .with_object_cache(Arc::new(edge_cache::EdgeCache))
        .with_published_dense(published_dense(env)?);
    Ok((crate::router(state), limits))
}

/// Dense retrieval over published vectors when an embeddings API is configured
/// (`CTXGATE_EMBED_URL`, `CTXGATE_EMBED_MODEL`, `CTXGATE_EMBED_DIMS`, the secret
/// `CTXGATE_EMBED_API_KEY`); `DENSE_MAX_TABLE_BYTES` bounds a version's table in the isolate.
fn published_dense(env: &Env) -> Result<Option<Arc<PublishedDense>>, HostError> {
    let Some(settings) = ApiSettings::from_vars(|name| var(env, name))
        .map_err(|e| HostError::BadVar("CTXGATE_EMBED_URL", e))?
    else {
        return Ok(None);
    };
    let ceiling = match var(env, "DENSE_MAX_TABLE_BYTES") {
        Some(v) => v.parse().map_err(|e: std::num::ParseIntError| {
            HostError::BadVar("DENSE_MAX_TABLE_BYTES", e.to_string())
        })?,
        None => WORKER_TABLE_CEILING,
    };
    let embedder = Arc::new(EmbeddingsApi::new(aws_fetch::WorkerFetch, settings));
    Ok(Some(Arc::new(PublishedDense::new(embedder, ceiling))))
}

/// Built on the isolate's first request and kept: bindings are the same for every request.
static ROUTER: OnceLock<(Router, BodyLimits)> = OnceLock::new();

#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    console_error_panic_hook::set_once();
    let (mut router, limits) = match router(&env) {
        Ok(built) => built,
        Err(refusal) => return whole(refusal).await,
    };
    let parts = request::parts(&req)?;
    let req = match buffered(parts, req, &limits).await {
        Ok(req) => req,
        Err(refusal) => return whole(refusal.into_response()).await,
    };
    let health = req.uri().path() == "/healthz";
    let mut res = match router.call(req).await {
        Ok(res) => res,
        Err(never) => match never {},
    };
    if let Some(record) = res.extensions_mut().remove::<RequestRecord>() {
        analytics::emit(&env, &ctx, &record);
    }
    edge_cache::write_after_answer(&ctx);
    whole(if health { with_memory(res) } else { res }).await
}

/// The isolate's router, built on its first request; a deployment that cannot build one (a
/// missing binding, a bad var) answers 500 `server_misconfigured` to every request.
fn router(env: &Env) -> Result<(Router, BodyLimits), axum::response::Response> {
    if let Some(r) = ROUTER.get() {
        return Ok(r.clone());
    }
    match build(env) {
        Ok(r) => Ok(ROUTER.get_or_init(|| r).clone()),
        Err(e) => {
            worker::console_error!("ctxgate cannot start: {e}");
            Err(ApiError::new(ErrorCode::ServerMisconfigured, e.to_string()).into_response())
        }
    }
}

/// `res` with the isolate's linear memory in a header, for the memory figure of
/// `benches/worker.rs`: workerd does not report an isolate's heap from outside.
fn with_memory(mut res: axum::response::Response) -> axum::response::Response {
    let bytes = core::arch::wasm32::memory_size(0) * 65536;
    res.headers_mut().insert(
        "x-ctxgate-wasm-memory-bytes",
        axum::http::HeaderValue::from(bytes),
    );
    res
}

/// The response with its body in one buffer. Every answer here is complete JSON held in memory;
/// handing workerd an `http::Response` would stream that buffer through a JavaScript
/// `ReadableStream` (a promise, a microtask and a copy per pull), which V8's profiler showed as
/// a large share of a warm `/v1/context`'s CPU. The body goes to `new Response` as a view of
/// the Worker's own memory, which workerd copies once into the response: workers-rs's
/// `ResponseBuilder::fixed` first copied it into a fresh JavaScript buffer (a 200 KB allocation
/// per answer at 32k, which V8 counts towards its next collection).
async fn whole(res: axum::http::Response<axum::body::Body>) -> worker::Result<web_sys::Response> {
    let (parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|e| worker::Error::RustError(format!("response body: {e}")))?;
    let headers = web_sys::Headers::new()?;
    for (name, value) in &parts.headers {
        // Every header is set here from ASCII; one that is not could not cross into JavaScript.
        if let Ok(value) = value.to_str() {
            headers.append(name.as_str(), value)?;
        }
    }
    let init = web_sys::ResponseInit::new();
    init.set_status(parts.status.as_u16());
    init.set_headers(&headers);
    let res = if bytes.is_empty() {
        web_sys::Response::new_with_opt_str_and_init(None, &init)
    } else {
        // SAFETY: the view is of `bytes`, which outlives it; nothing runs in this module between
        // making it and the constructor, which copies the body before returning (workerd holds a
        // response body as its own byte array), so the memory cannot grow or change under it.
        let view = unsafe { js_sys::Uint8Array::view(&bytes) };
        web_sys::Response::new_with_opt_buffer_source_and_init(Some(&view), &init)
    };
    Ok(res?)
}

/// Largest index object the Worker takes in one upload: an isolate has 128 MB, and the body is
/// held once here and once on its way to R2.
const WORKER_MAX_OBJECT_BYTES: usize = 32 * 1024 * 1024;

/// What bounds a request body on this host.
#[derive(Clone)]
struct BodyLimits {
    /// Every route but object uploads.
    general: usize,
    /// Only an upload that carries it gets the object limit (the handler checks it again).
    admin_secret: Option<String>,
}

impl BodyLimits {
    /// The limit of this request's body, or why an object upload is refused before its body is
    /// kept: an upload without the admin secret would be refused by its handler anyway, and
    /// under the general limit a large one would be answered "too large" where the truth is
    /// "not allowed" (a wrong secret read as an oversized segment).
    fn for_request(&self, parts: &axum::http::request::Parts) -> Result<usize, ApiError> {
        use crate::extract::limits::is_object_upload;
        let upload = parts.method == axum::http::Method::PUT && is_object_upload(parts.uri.path());
        if !upload {
            return Ok(self.general);
        }
        match crate::extract::auth::admin_refusal(self.admin_secret.as_deref(), parts) {
            None => Ok(WORKER_MAX_OBJECT_BYTES),
            Some(refusal) => Err(refusal),
        }
    }
}

/// The request with its body read in full (up to its limit) before routing.
///
/// workerd kills the isolate when a body stream is read after the response went out, which
/// happens when a handler answers without reading the body (an empty `{}` on an endpoint that
/// takes none, an early error). Reading first makes every handler safe. A body over the limit
/// is read to its end but never held, then refused; Cloudflare's front end caps what can arrive.
async fn buffered(
    parts: axum::http::request::Parts,
    req: web_sys::Request,
    limits: &BodyLimits,
) -> Result<axum::extract::Request, ApiError> {
    let body = || match req.body() {
        Some(stream) => axum::body::Body::new(worker::Body::new(stream)),
        None => axum::body::Body::empty(),
    };
    let declared = crate::extract::limits::declared_length(&parts.headers);
    // A request refused before its body (no admin secret for an upload, or a declared length
    // over the limit) has the body drained unread, so the runtime can answer it.
    let refused = match limits.for_request(&parts) {
        Ok(limit) if declared.is_some_and(|n| n > limit as u64) => {
            Err(crate::extract::limits::too_large(limit))
        }
        other => other,
    };
    let limit = match refused {
        Ok(limit) => limit,
        Err(refusal) => {
            let _ = read_capped(body(), 0, 0).await;
            return Err(refusal);
        }
    };
    let unread = || {
        ApiError::new(
            ErrorCode::InvalidBody,
            "the request body could not be read to its end",
        )
    };
    // A declared length within the general limit: the runtime reads the body whole (see
    // `request`). Object uploads (up to 32 MiB) keep the stream, which never holds a second
    // whole copy in JavaScript's heap beside the module's.
    if declared.is_some_and(|n| n <= limits.general as u64) && req.body().is_some() {
        return match request::body_bytes(&req).await {
            // The declared length is the client's word: what was read is checked as well.
            Ok(bytes) if bytes.len() > limit => Err(crate::extract::limits::too_large(limit)),
            Ok(bytes) => Ok(axum::extract::Request::from_parts(
                parts,
                axum::body::Body::from(bytes),
            )),
            Err(_) => Err(unread()),
        };
    }
    let expected = declared.map_or(0, |n| n as usize);
    match read_capped(body(), limit, expected).await {
        Ok(Some(bytes)) => Ok(axum::extract::Request::from_parts(
            parts,
            axum::body::Body::from(bytes),
        )),
        Ok(None) => Err(crate::extract::limits::too_large(limit)),
        Err(()) => Err(unread()),
    }
}

/// Reads `body` to its end: its bytes if they fit in `cap`, else `None` (the rest is dropped as
/// it arrives, so memory stays bounded by `cap`); `Err` if the stream broke.
async fn read_capped(
    body: axum::body::Body,
    cap: usize,
    expected: usize,
) -> Result<Option<Vec<u8>>, ()> {
    use axum::body::HttpBody;
    let mut body = std::pin::pin!(body);
    let mut kept = Some(Vec::with_capacity(expected.min(cap)));
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|_| ())?;
        if let (Some(buf), Ok(data)) = (kept.as_mut(), frame.into_data()) {
            if buf.len() + data.len() > cap {
                kept = None;
            } else {
                buf.extend_from_slice(&data);
            }
        }
    }
    Ok(kept)
}
