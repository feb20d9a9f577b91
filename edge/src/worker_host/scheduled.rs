//! The Worker's scheduled pass (`[triggers] crons` in `wrangler.toml`): garbage collection of
//! its R2 store, as the Lambda's scheduled pass collects S3. Without it the objects of every
//! version `ctxgate project publish` ever uploaded would stay in R2 until an operator ran
//! `ctxgate gc --to`.
//!
//! The policy comes from the Worker's vars, as the Lambda's from its environment
//! (`CTXGATE_GC_KEEP`, `CTXGATE_GC_GRACE_SECONDS`, `CTXGATE_GC=off`: [`GcPolicy::from_vars`]).
//! A Worker over the indexer's S3 (`CTXGATE_STORE`) does not own that store and skips the pass.
//! What was deleted is one JSON line in the Worker's log.

use ctxgate_core::index::gc::GcPolicy;
use serde_json::json;
use worker::{Env, ScheduleContext, ScheduledEvent, event};

use super::cloudflare::CloudflareBackend;
use super::var;

#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    console_error_panic_hook::set_once();
    let line = collect(&env).await;
    worker::console_log!("{line}");
}

/// Runs the pass over `env`'s store and says what it did, as one JSON object.
async fn collect(env: &Env) -> serde_json::Value {
    if var(env, "CTXGATE_STORE").is_some() {
        return json!({"event": "gc", "skipped": "the index store is the indexer's S3; its Lambda collects it"});
    }
    let policy = match GcPolicy::from_vars(|name| var(env, name)) {
        Ok(Some(policy)) => policy,
        Ok(None) => return json!({"event": "gc", "skipped": "CTXGATE_GC=off"}),
        Err(e) => return json!({"event": "gc", "error": "server_misconfigured", "message": e}),
    };
    let backend = match CloudflareBackend::from_env(env) {
        Ok(b) => b,
        Err(e) => {
            return json!({"event": "gc", "error": "server_misconfigured", "message": e.to_string()});
        }
    };
    let now_ms = worker::Date::now().as_millis();
    let orgs = match crate::gc::collect_all(&backend, &policy, now_ms).await {
        Ok(orgs) => orgs,
        Err(e) => {
            return json!({"event": "gc", "error": "storage_unavailable", "message": e.to_string()});
        }
    };
    let (mut versions, mut objects, mut bytes) = (0usize, 0usize, 0u64);
    let mut failed = Vec::new();
    let count = orgs.len();
    for (org, reports) in orgs {
        match reports {
            Ok(reports) => {
                for r in reports {
                    versions += r.deleted_versions.len();
                    objects += r.deleted_objects;
                    bytes += r.bytes_freed;
                }
            }
            Err(e) => failed.push(json!({"org": org, "message": e.to_string()})),
        }
    }
    json!({
        "event": "gc",
        "orgs": count,
        "deleted_versions": versions,
        "deleted_objects": objects,
        "bytes_freed": bytes,
        "failed": failed,
    })
}
