//! `ctxgate mcp [DIR]`: the API's MCP tools over stdio for one folder, with no server,
//! organisation or key.
//!
//! The tools are the HTTP API's own (`ctxgate_edge::mcp`), answered in-process over the data
//! directory as the local organisation (the one `ctxgate index` and `assemble` publish under),
//! so their answers, schemas and errors are exactly those of `POST /mcp`, within the folder's
//! project alone: the data directory's other projects are neither listed nor answered
//! ([`ToolScope::project`]). The folder is re-indexed before each call that reads it, so an agent
//! editing files sees its edits.

use ctxgate_core::error_code::ErrorCode;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use crate::host::embedded::{EmbeddedBackend, LocalAccess, NetworkPolicy, SourceAccess};
use ctxgate_core::quota::Limits;
use ctxgate_edge::backend::OrgRecord;
use ctxgate_edge::dense::DenseRetrieval;
use ctxgate_edge::extract::Caller;
use ctxgate_edge::mcp::{ToolScope, handle, rpc_error};
use ctxgate_edge::{AppState, Config};
use ctxgate_indexer::pipeline::{IndexOptions, IndexStatus, NoProgress, index_repo};
use ctxgate_indexer::store::{LOCAL_ORG, Store};
use serde_json::{Value, json};

use super::{catalog, data_dir, index_options};
use crate::args::{Global, McpArgs};
use crate::failure::CmdResult;
use crate::failure::Failure;

/// The folder and how it is indexed.
struct Folder<'a> {
    store: Store,
    dir: &'a Path,
    opts: IndexOptions,
}

impl Folder<'_> {
    /// Indexes what changed; the project's id.
    fn refresh(&self) -> Result<String, Failure> {
        let started = std::time::Instant::now();
        let report = index_repo(&self.store, self.dir, &self.opts, &NoProgress)?;
        if report.status == IndexStatus::Published {
            tracing::info!(
                version = report.version,
                files_chunked = report.files_chunked,
                ms = started.elapsed().as_millis() as u64,
                "re-indexed"
            );
        }
        Ok(report.project.id)
    }
}

/// Whether answering `msg` reads the folder's index (so the folder is refreshed first).
fn reads_folder(msg: &Value) -> bool {
    msg["method"] == "tools/call"
        && matches!(
            msg["params"]["name"].as_str(),
            Some("get_context" | "search_code")
        )
}

/// The answer to a call whose refresh failed: a tool error the model can read.
fn refresh_failed(msg: &Value, f: &Failure) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": msg.get("id").cloned().unwrap_or(Value::Null),
        "result": {
            "content": [{ "type": "text", "text": format!("{}: {}", f.code, f.message) }],
            "structuredContent": { "error": { "code": f.code, "message": f.message } },
            "isError": true
        }
    })
}

pub fn run(global: &Global, args: &McpArgs) -> CmdResult {
    let root = data_dir(global)?;
    let store = Store::open(&root)?;
    let folder_config = crate::config::load(&args.dir)?.map(|(_, c)| c);
    let mut opts = index_options(&args.flags, folder_config.as_ref())?;
    opts.walk.exclude.push(store.root().to_path_buf());
    let folder = Folder {
        store,
        dir: &args.dir,
        opts,
    };
    let project = folder.refresh()?;
    tracing::info!(dir = %args.dir.display(), %project, "serving MCP over stdio");

    // Only the folder is indexed, by this process; the backend never fetches a source.
    let access = SourceAccess {
        local: LocalAccess::Refused,
        network: NetworkPolicy::PublicHttps,
    };
    let mut backend = EmbeddedBackend::open(&root, access)?;
    if let Some(dense) = super::dense_config(&args.dense)? {
        let embedder = dense
            .embedder(&root)
            .map_err(ctxgate_indexer::IndexerError::from)?;
        backend = backend.with_dense(Arc::from(embedder));
    }
    let config = Config {
        token_secret: super::serve::stored_secret(&root)?,
        // Every call re-reads the project's current version (see `Caller::fresh` below).
        pointer_ttl_ms: 0,
        ..Config::default()
    };
    let backend = Arc::new(backend);
    let dense: Arc<dyn DenseRetrieval> = backend.clone();
    let state =
        AppState::new(backend.clone(), backend, catalog(global)?, config).with_dense(Some(dense));
    // The local organisation: no key, no limits, every model.
    let caller = Caller {
        org: OrgRecord {
            name: LOCAL_ORG.into(),
            limits: Limits::default(),
            allowed_models: Vec::new(),
            // Dense is this process's `--dense` choice: on when the backend has a model.
            dense: true,
            created_ms: 0,
        },
        key_id: "stdio".into(),
        fresh: true,
        note: Default::default(),
    };
    let scope = ToolScope {
        project: Some(project),
        default_model: folder_config.as_ref().and_then(|c| c.model.clone()),
        default_budget: folder_config.as_ref().and_then(|c| c.budget),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?;

    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let line = line.map_err(|e| Failure::coded(ErrorCode::IoError, e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Err(e) => Some(rpc_error(&Value::Null, -32700, format!("parse error: {e}"))),
            Ok(msg) if reads_folder(&msg) => match folder.refresh() {
                Ok(_) => rt.block_on(handle(&state, &caller, &scope, msg)),
                Err(f) => Some(refresh_failed(&msg, &f)),
            },
            Ok(msg) => rt.block_on(handle(&state, &caller, &scope, msg)),
        };
        if let Some(answer) = answer {
            // One message per line: serde_json writes no raw line breaks.
            let text = answer.to_string();
            if writeln!(stdout, "{text}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                // The client went away.
                break;
            }
        }
    }
    Ok(())
}
