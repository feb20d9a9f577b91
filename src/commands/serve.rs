//! `ctxgate serve`: the API's router on a local socket, over the embedded store.

use ctxgate_core::error_code::ErrorCode;
use std::sync::Arc;

use std::path::{Path, PathBuf};

use crate::host::embedded::{
    EmbeddedBackend, LocalAccess, LocalRoots, NetworkPolicy, SourceAccess,
};
use ctxgate_core::tokens::Encoding;
use ctxgate_edge::aws::{AwsConfig, published_store};
use ctxgate_edge::backend::Projects;
use ctxgate_edge::dense::DenseRetrieval;
use ctxgate_edge::dense::published::PublishedDense;

use crate::host::query_embedder::NativeQueryEmbedder;
use ctxgate_edge::hooks::Webhooks;
use ctxgate_edge::{AppState, Config};
use serde_json::json;

use super::{catalog, data_dir};
use crate::args::{Format, Global, ServeArgs, StoreArgs};
use crate::failure::CmdResult;
use crate::failure::Failure;

/// The continuation-signing secret kept in the data directory, created on first use, so tokens
/// survive restarts.
pub(crate) fn stored_secret(dir: &std::path::Path) -> Result<Vec<u8>, Failure> {
    let path = dir.join("secrets").join("continuation.key");
    if let Ok(bytes) = std::fs::read(&path)
        && bytes.len() >= 32
    {
        return Ok(bytes);
    }
    let mut secret = vec![0u8; 32];
    getrandom::fill(&mut secret)
        .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?;
    let io = |e: std::io::Error| {
        Failure::coded(
            ErrorCode::IoError,
            format!("write `{}`: {e}", path.display()),
        )
    };
    std::fs::create_dir_all(path.parent().unwrap_or(dir)).map_err(io)?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &secret).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(secret)
}

/// The AWS settings when `--store` names S3: the flags, then the standard AWS variables.
fn aws_config(store: &StoreArgs) -> Result<Option<AwsConfig>, Failure> {
    let (Some(url), Some(table)) = (&store.store, &store.table) else {
        return Ok(None);
    };
    AwsConfig::from_vars(|name| match name {
        "CTXGATE_STORE" => Some(url.clone()),
        "CTXGATE_TABLE" => Some(table.clone()),
        name => std::env::var(name).ok().filter(|v| !v.is_empty()),
    })
    .map_err(|e| Failure::coded(ErrorCode::InvalidStore, e))
}

/// The largest published vector table the server keeps (a 1M-chunk index of 384 dimensions).
const NATIVE_TABLE_CEILING: u64 = 512 << 20;

/// The folders of `--local-root`, each made absolute and canonicalized, with the data directory
/// withheld (it holds the server's secrets); `Refused` without any.
fn local_access(dirs: &[PathBuf], data_dir: &Path) -> Result<LocalAccess, Failure> {
    if dirs.is_empty() {
        return Ok(LocalAccess::Refused);
    }
    let mut roots = Vec::new();
    for dir in dirs {
        let bad = |why: String| {
            Failure::coded(
                ErrorCode::InvalidLocalRoot,
                format!("--local-root `{}`: {why}", dir.display()),
            )
        };
        let canonical = std::fs::canonicalize(dir).map_err(|e| bad(e.to_string()))?;
        if !canonical.is_dir() {
            return Err(bad("not a folder".into()));
        }
        let written = std::path::absolute(dir).map_err(|e| bad(e.to_string()))?;
        tracing::info!(root = %canonical.display(), "local sources allowed under");
        roots.push((written, canonical));
    }
    let data_dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    Ok(LocalAccess::Roots(
        LocalRoots::new(roots).withholding(data_dir),
    ))
}

pub fn run(global: &Global, args: &ServeArgs) -> CmdResult {
    check_flags(args)?;
    let dir = data_dir(global)?;
    let access = SourceAccess {
        local: local_access(&args.local_roots, &dir)?,
        network: if args.allow_private_sources {
            NetworkPolicy::Open
        } else {
            NetworkPolicy::PublicHttps
        },
    };
    // Shared by the router (requests) and the backend (its indexing jobs): `GET /metrics`.
    let metrics = Arc::new(ctxgate_edge::metrics::Metrics::default());
    let mut backend = EmbeddedBackend::open(&dir, access)?.with_metrics(metrics.clone());
    // Published vectors are used wherever the projects come from; versions without them are
    // embedded here (data directory only, below).
    let mut published_dense = None;
    if let Some(dense) = super::dense_config(&args.dense)? {
        let embedder: Arc<dyn ctxgate_indexer::embed::Embedder> = Arc::from(
            dense
                .embedder(&dir)
                .map_err(ctxgate_indexer::IndexerError::from)?,
        );
        published_dense = Some(Arc::new(PublishedDense::new(
            Arc::new(NativeQueryEmbedder(embedder.clone())),
            NATIVE_TABLE_CEILING,
        )));
        backend = backend.with_dense(embedder);
    }
    // The fast exact counters, before the first request needs them (tiktoken-rs's own tables
    // are several times slower); the other encodings load on first use.
    for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
        ctxgate_indexer::token_tables::install(&dir, e);
    }
    let token_secret = match &args.token_secret {
        Some(s) if s.len() >= 16 => s.as_bytes().to_vec(),
        Some(_) => {
            return Err(Failure::coded(
                ErrorCode::WeakSecret,
                "the token secret must have at least 16 characters",
            ));
        }
        None => stored_secret(&dir)?,
    };
    let state_admin = args.admin_secret.as_deref().is_some_and(|s| !s.is_empty());
    let config = Config {
        token_secret,
        admin_secret: args.admin_secret.clone().filter(|s| !s.is_empty()),
        max_body_bytes: args.max_body_bytes,
        pointer_ttl_ms: args.pointer_ttl_ms,
        weights: ctxgate_indexer::assemble::weights(),
        ..Config::default()
    };
    // The folder watcher re-indexes into the data directory, so it needs the embedded backend.
    let mut watched: Option<Arc<EmbeddedBackend>> = None;
    // Dense retrieval needs the data directory's texts and vectors: the embedded backend only.
    let mut dense: Option<Arc<dyn DenseRetrieval>> = None;
    let backend = Arc::new(backend);
    // Push webhooks where a push can start indexing: a job here, or the indexer function.
    let webhooks: Option<Arc<dyn Webhooks>>;
    let projects: Arc<dyn Projects> = match aws_config(&args.store)? {
        // Projects and objects from S3 + DynamoDB; orgs, keys, quotas and audit stay local.
        Some(aws) => {
            tracing::info!(bucket = %aws.bucket, table = %aws.table, "serving what is published to S3 + DynamoDB");
            let http = super::aws_http::NativeHttp::new()
                .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?;
            let (published, hooks) = published_store(http, aws);
            webhooks = hooks;
            published
        }
        None => {
            webhooks = Some(backend.clone());
            watched = Some(backend.clone());
            dense = Some(backend.clone());
            backend.clone()
        }
    };
    let state = AppState::new(backend, projects, catalog(global)?, config)
        .with_dense(dense)
        .with_published_dense(published_dense)
        .with_metrics(metrics)
        .with_webhooks(webhooks);
    let state_pointers = state.pointers.clone();
    let app = ctxgate_edge::router(state).layer(axum::middleware::from_fn(server_timing));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .map_err(|e| {
                Failure::coded(
                    ErrorCode::BindFailed,
                    format!("cannot listen on {}: {e}", args.addr),
                )
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Failure::coded(ErrorCode::BindFailed, e.to_string()))?;
        print_listening(args.format, addr, state_admin);
        tracing::info!(%addr, "serving");
        if let (true, Some(backend)) = (args.watch, watched) {
            let debounce = std::time::Duration::from_millis(args.watch_debounce_ms);
            let pointers = state_pointers.clone();
            tokio::spawn(super::watch::run(backend, pointers, dir.clone(), debounce));
        }
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| Failure::coded(ErrorCode::ServeFailed, e.to_string()))
    })
}

/// Refuses flags that are gone or that do nothing without another.
fn check_flags(args: &ServeArgs) -> CmdResult {
    if args.allow_local_paths {
        return Err(Failure::coded(
            ErrorCode::FlagRemoved,
            "--allow-local-paths is gone (it let every API key read any folder of this machine): \
             name the folders callers may index with --local-root DIR (repeatable)",
        ));
    }
    if args.watch && args.local_roots.is_empty() {
        return Err(Failure::coded(
            ErrorCode::WatchWithoutRoots,
            "--watch re-indexes folder projects under --local-root only, and none is given: add \
             --local-root DIR for the folders callers may register (repeatable)",
        ));
    }
    Ok(())
}

/// Where the server listens and whether its admin routes are on, as `format` asks.
fn print_listening(format: Format, addr: std::net::SocketAddr, admin: bool) {
    match format {
        // One line, so scripts can read the address before the server runs.
        Format::Json => println!(
            "{}",
            json!({
                "listening": format!("http://{addr}"),
                "console": format!("http://{addr}/console"),
                "admin_routes": admin,
            })
        ),
        Format::Text => {
            println!("listening on http://{addr}");
            println!("console: http://{addr}/console");
            if admin {
                println!("admin routes (/v1/admin/*, /metrics): on");
            } else {
                println!(
                    "admin routes (/v1/admin/*, /metrics): off (start with --admin-secret or \
                     CTXGATE_ADMIN_SECRET to turn them on)"
                );
            }
        }
    }
}

/// Adds `Server-Timing: app;dur=<ms>`: the time from routing to the response, which is what the
/// benchmark reports as server-side latency (the Worker's clock is frozen during a request, so
/// only the native host can say this).
async fn server_timing(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let start = std::time::Instant::now();
    let mut res = next.run(req).await;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    // The access log (-v, or CTXGATE_LOG=access=info): the router's record of the request as
    // one JSON line (crate ctxgate_edge::observe decides what it holds: never a body, key or
    // query text).
    if let Some(record) = res
        .extensions()
        .get::<ctxgate_edge::observe::RequestRecord>()
        && tracing::enabled!(target: "access", tracing::Level::INFO)
    {
        use std::io::Write;
        let line = format!("{}\n", record.json_line());
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("app;dur={ms:.3}")) {
        res.headers_mut().insert("server-timing", v);
    }
    res
}
