//! `ctxgate org|key|quota|project`: administration of the embedded store, through the same
//! functions as the API's admin endpoints.

use ctxgate_core::error_code::ErrorCode;
use std::sync::Arc;

use crate::host::embedded::{EmbeddedBackend, SourceAccess};
use ctxgate_core::quota::Limits;
use ctxgate_edge::backend::{SourceSpec, Unmetered};
use ctxgate_edge::{AppState, Config, admin};
use ctxgate_indexer::pipeline::Progress;
use ctxgate_indexer::publish::{WorkerTarget, publish_to_worker};
use ctxgate_indexer::store::Store;
use serde_json::json;

use super::{catalog, data_dir, print_json};
use crate::args::{
    Format, Global, KeyCommand, LimitFlags, OrgCommand, ProjectAddArgs, ProjectCommand,
    ProjectPublishArgs, ProjectReindexArgs, QuotaCommand,
};
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::progress::FileBar;

/// The admin commands run on the operator's own machine: every source is allowed.
fn state(global: &Global) -> Result<AppState, Failure> {
    let backend = Arc::new(EmbeddedBackend::open(
        &data_dir(global)?,
        SourceAccess::TRUSTED,
    )?);
    Ok(AppState::new(
        backend.clone(),
        backend,
        catalog(global)?,
        Config::default(),
    ))
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> Result<T, Failure> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?;
    Ok(rt.block_on(f))
}

fn apply(mut limits: Limits, flags: &LimitFlags) -> Limits {
    limits.tokens_per_day = flags.tokens_per_day.or(limits.tokens_per_day);
    limits.tokens_per_month = flags.tokens_per_month.or(limits.tokens_per_month);
    limits.requests_per_minute = flags.requests_per_minute.or(limits.requests_per_minute);
    limits.concurrency = flags.concurrency.or(limits.concurrency);
    limits.index_jobs_per_hour = flags.index_jobs_per_hour.or(limits.index_jobs_per_hour);
    limits
}

fn show_limits(l: &Limits) -> String {
    let f = |v: Option<u64>| v.map_or("unlimited".to_string(), |n| n.to_string());
    format!(
        "tokens/day {}, tokens/month {}, requests/minute {}, concurrency {}, index jobs/hour {}",
        f(l.tokens_per_day),
        f(l.tokens_per_month),
        f(l.requests_per_minute.map(u64::from)),
        f(l.concurrency.map(u64::from)),
        f(l.index_jobs_per_hour.map(u64::from)),
    )
}

/// `ctxgate org ...`.
pub fn org(global: &Global, cmd: &OrgCommand) -> CmdResult {
    let OrgCommand::Create(a) = cmd;
    let st = state(global)?;
    let limits = apply(Limits::default(), &a.limits);
    let org = block_on(admin::create_org(
        &st,
        &a.name,
        limits,
        a.allow_models.clone(),
        a.dense,
    ))??;
    match a.format {
        Format::Json => print_json(&org),
        Format::Text => {
            println!(
                "created organisation {} ({})",
                org.name,
                show_limits(&org.limits)
            );
            Ok(())
        }
    }
}

/// The answer for an organisation that does not exist, with the command that creates it.
fn org_missing(org: &str) -> ctxgate_edge::error::ApiError {
    ctxgate_edge::error::ApiError::new(
        ErrorCode::OrgNotFound,
        format!("no organisation `{org}` (create it with `ctxgate org create {org}`)"),
    )
}

/// `Ok` when organisation `org` exists, else [`org_missing`].
async fn require_org(st: &AppState, org: &str) -> Result<(), ctxgate_edge::error::ApiError> {
    match st.accounts.org(org).await? {
        Some(_) => Ok(()),
        None => Err(org_missing(org)),
    }
}

/// `ctxgate key ...`.
pub fn key(global: &Global, cmd: &KeyCommand) -> CmdResult {
    let KeyCommand::Create(a) = cmd;
    let st = state(global)?;
    let key = block_on(async {
        require_org(&st, &a.org).await?;
        admin::create_key(&st, &a.org).await
    })??;
    match a.format {
        Format::Json => print_json(&json!({ "org": a.org, "key": key })),
        Format::Text => {
            println!("{key}");
            eprintln!("this key is shown only once; ctxgate stores only its hash");
            Ok(())
        }
    }
}

/// `ctxgate quota ...`.
pub fn quota(global: &Global, cmd: &QuotaCommand) -> CmdResult {
    let QuotaCommand::Set(a) = cmd;
    let st = state(global)?;
    let record = block_on(async {
        let current = st
            .accounts
            .org(&a.org)
            .await
            .map_err(ctxgate_edge::error::ApiError::from)?;
        let Some(current) = current else {
            return Err(org_missing(&a.org));
        };
        let base = if a.clear {
            Limits::default()
        } else {
            current.limits
        };
        admin::set_limits(&st, &a.org, apply(base, &a.limits)).await
    })??;
    match a.format {
        Format::Json => print_json(&record),
        Format::Text => {
            println!("{}: {}", record.name, show_limits(&record.limits));
            Ok(())
        }
    }
}

/// `ctxgate project ...`.
pub fn project(global: &Global, cmd: &ProjectCommand) -> CmdResult {
    match cmd {
        ProjectCommand::Add(a) => project_add(global, a),
        ProjectCommand::Publish(a) => project_publish(global, a),
        ProjectCommand::Reindex(a) => project_reindex(global, a),
    }
}

/// `ctxgate project reindex`: the same service as `POST /v1/projects/{id}/reindex`, run by the
/// operator on its own data directory, so no org's index-job limit applies.
fn project_reindex(global: &Global, a: &ProjectReindexArgs) -> CmdResult {
    let st = state(global)?;
    let (before, after) = block_on(async {
        let before = ctxgate_edge::routes::find_project(&st, &a.org, &a.name).await?;
        let after = st.projects.reindex_project(&before, &Unmetered).await?;
        Ok::<_, ctxgate_edge::error::ApiError>((before, after))
    })??;
    let changed = after.current_version != before.current_version;
    match a.format {
        Format::Json => print_json(&json!({
            "changed": changed,
            "previous_version": before.current_version,
            "project": after,
        })),
        Format::Text => {
            let show = |v: Option<u64>| v.map_or("none".into(), |v| v.to_string());
            if changed {
                println!(
                    "project {} of {}: version {} -> {}",
                    after.name,
                    after.org,
                    show(before.current_version),
                    show(after.current_version)
                );
            } else {
                println!(
                    "project {} of {}: unchanged (version {})",
                    after.name,
                    after.org,
                    show(after.current_version)
                );
            }
            Ok(())
        }
    }
}

/// `ctxgate project publish`.
fn project_publish(global: &Global, a: &ProjectPublishArgs) -> CmdResult {
    ctxgate_edge::routes::valid_project_name(&a.name)?;
    let admin_secret = std::env::var(&a.admin_secret_env).map_err(|_| {
        Failure::coded(ErrorCode::AdminSecretMissing,
            format!(
                "set {} to the Worker's ADMIN_SECRET (or name another variable with --admin-secret-env)",
                a.admin_secret_env
            ),
        )
    })?;
    let store = Store::open(&data_dir(global)?)?;
    let target = WorkerTarget {
        url: a.to.clone(),
        admin_secret,
    };
    let bar = FileBar::counting(global.quiet, "uploading", "objects");
    let done = publish_to_worker(&store, &a.org, &a.name, &target, &|done, total| {
        if done == 1 {
            bar.start(total as u64);
        }
        bar.advance();
    });
    bar.finish();
    let done = done?;
    match a.format {
        Format::Json => print_json(&done),
        Format::Text => {
            println!(
                "published {} ({}) of {} version {} to {}: {} objects, {} bytes uploaded; {} \
                 segments already there",
                done.name,
                done.id,
                done.org,
                done.version,
                a.to,
                done.objects,
                done.bytes,
                done.skipped
            );
            Ok(())
        }
    }
}

/// `ctxgate project add`: the operator's, so no org's index-job limit applies.
fn project_add(global: &Global, a: &ProjectAddArgs) -> CmdResult {
    let st = state(global)?;
    ctxgate_edge::routes::valid_project_name(&a.name)?;
    let dir = a.dir.canonicalize().map_err(|e| {
        Failure::coded(
            ErrorCode::RepoNotFound,
            format!("cannot open `{}`: {e}", a.dir.display()),
        )
    })?;
    let info = block_on(async {
        require_org(&st, &a.org).await?;
        let source = SourceSpec::Local {
            path: dir.to_string_lossy().into_owned(),
        };
        Ok::<_, ctxgate_edge::error::ApiError>(
            st.projects
                .create_project(&a.org, &a.name, &source, &Unmetered)
                .await?,
        )
    })??;
    match a.format {
        Format::Json => print_json(&info),
        Format::Text => {
            println!(
                "project {} ({}) of {}: version {}",
                info.name,
                info.id,
                info.org,
                info.current_version
                    .map_or("none".into(), |v| v.to_string())
            );
            Ok(())
        }
    }
}
