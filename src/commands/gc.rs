//! `ctxgate gc`: old versions out of the data directory, out of S3 + DynamoDB with
//! `--store`/`--table`, or out of a Worker's R2 with `--to`, by the core's policy.

use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::index::gc::GcPolicy;
use ctxgate_indexer::gc::collect;
use ctxgate_indexer::publish::{WorkerTarget, collect_on_worker};
use serde_json::json;

use super::{index_store, print_json, thousands};
use crate::args::{Format, GcArgs, Global};
use crate::failure::CmdResult;
use crate::failure::Failure;

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub fn run(global: &Global, args: &GcArgs) -> CmdResult {
    let policy = GcPolicy {
        keep_last: args.keep,
        keep_younger_than_ms: args.keep_younger_than.map_or(0, millis),
        grace_ms: millis(args.grace),
    };
    let reports = match (&args.to, &args.org) {
        // A Worker collects its own R2, through its admin API.
        (Some(url), Some(org)) => {
            let admin_secret = std::env::var("CTXGATE_ADMIN_SECRET").map_err(|_| {
                Failure::coded(
                    ErrorCode::AdminSecretMissing,
                    "set CTXGATE_ADMIN_SECRET to the Worker's ADMIN_SECRET",
                )
            })?;
            let target = WorkerTarget {
                url: url.clone(),
                admin_secret,
            };
            collect_on_worker(&target, org, &policy, args.dry_run)?
        }
        _ => {
            let store = index_store(global, &args.store)?;
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?
                .as_millis() as u64;
            collect(
                store.as_ref(),
                args.org.as_deref(),
                &policy,
                now_ms,
                args.dry_run,
            )?
        }
    };
    let versions: usize = reports.iter().map(|r| r.deleted_versions.len()).sum();
    let objects: usize = reports.iter().map(|r| r.deleted_objects).sum();
    let bytes: u64 = reports.iter().map(|r| r.bytes_freed).sum();
    tracing::info!(
        projects = reports.len(),
        versions,
        objects,
        bytes,
        dry_run = args.dry_run,
        "gc"
    );
    match args.format {
        Format::Json => print_json(&json!({
            "dry_run": args.dry_run,
            "deleted_versions": versions,
            "deleted_objects": objects,
            "bytes_freed": bytes,
            "projects": reports,
        })),
        Format::Text => {
            for r in &reports {
                println!(
                    "{}/{} ({}): current {}, kept {:?}, deleted versions {:?}, {} objects, {} bytes",
                    r.org,
                    r.name,
                    r.project,
                    r.current_version.map_or("none".into(), |v| v.to_string()),
                    r.kept_versions,
                    r.deleted_versions,
                    r.deleted_objects,
                    thousands(r.bytes_freed),
                );
            }
            let verb = if args.dry_run {
                "would delete"
            } else {
                "deleted"
            };
            println!(
                "{verb} {versions} versions and {objects} objects: {} bytes",
                thousands(bytes)
            );
            Ok(())
        }
    }
}
