//! Index jobs for registered projects: one on request, and the scheduled pass over all of them.
//!
//! Registration writes a schedule item per project ([`ItemKey::schedule`]: its source and
//! what the source looked like when it was last indexed). The scheduled pass reads them all with
//! one paged query and asks each source for its current revision without downloading it (a git
//! ref advertisement, an HTTP `HEAD`): a project whose answer matches the stored one costs that
//! query and nothing else. A changed project is fetched and indexed incrementally (unchanged
//! files are recognised by content hash, so only changed files are re-chunked and only new chunk
//! texts uploaded). Local folders have no cheap revision, so they always go through the
//! stat-based incremental index.
//!
//! Jobs are safe to retry: a job's id comes from its invocation, so a retry updates its own job
//! record, and the per-project run counter moves once per job id, however often it is applied.

use std::path::Path;

pub use ctxgate_core::host_wire::IndexRequest;
use ctxgate_core::item_key::{ItemKey, ItemRange};
pub use ctxgate_core::records::ScheduleItem;
use serde::Serialize;

use crate::IndexerError;
use crate::credentials::{self, CredentialStore};
use crate::jobs::{self, JobRecord, JobState, Trigger, now_ms};
use crate::pipeline::{IndexOptions, NoProgress, ProjectTarget, index_project};
use crate::source::{SourceLimits, SourceSpec, fetch, probe_revision};
use crate::store::IndexStore;

/// Job ids remembered per project for idempotency (Lambda retries within hours, not weeks).
const RECENT_JOBS: usize = 64;

/// Checks an index request before anything is written ([`IndexRequest::refusal`]).
pub fn validate(req: &IndexRequest, allow_local: bool) -> Result<(), IndexerError> {
    match req.refusal(allow_local) {
        Some(why) => Err(IndexerError::InvalidRequest(why)),
        None => Ok(()),
    }
}

fn decode(data: &str) -> Result<ScheduleItem, IndexerError> {
    serde_json::from_str(data).map_err(|e| IndexerError::Corrupt(format!("schedule item: {e}")))
}

fn encode(item: &ScheduleItem) -> Result<String, IndexerError> {
    serde_json::to_string(item).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

/// What jobs need besides the store.
pub struct JobContext<'a> {
    /// Indexing settings.
    pub options: &'a IndexOptions,
    /// Where sources are fetched to.
    pub work_dir: &'a Path,
    /// Source size limits.
    pub limits: SourceLimits,
    /// Whether local folders and `file://` git URLs may be indexed (the CLI, tests; never a
    /// hosted indexer).
    pub allow_local: bool,
    /// Where the credentials private git sources name are read, per org.
    pub credentials: &'a dyn CredentialStore,
}

/// Registers (or updates) the project and indexes it as job `job_id`. The job record says how
/// it ended; an `Err` is returned only when the store itself failed.
pub fn index_now(
    store: &dyn IndexStore,
    ctx: &JobContext<'_>,
    req: &IndexRequest,
    job_id: &str,
    trigger: Trigger,
) -> Result<JobRecord, IndexerError> {
    let target = ProjectTarget {
        source: Some(req.source.describe()),
        ..ProjectTarget::named(&req.org, &req.project)
    };
    // A source that cannot even be probed (a missing branch, a bad URL) is refused before it is
    // registered, so the schedule never carries it; the refusal is still a job, failed with its
    // code, so whoever registered the project (the Worker, which answered 202) can see why.
    let checked = validate(req, ctx.allow_local).and_then(|()| {
        let credential = credentials::resolve(ctx.credentials, &req.org, &req.source)?;
        Ok(probe_revision(
            &req.source,
            credential.as_ref(),
            ctx.limits.network,
        )?)
    });
    if let Err(e) = checked {
        let mut job = JobRecord::starting(
            job_id,
            &target.org,
            &target.id,
            &target.name,
            trigger,
            now_ms(),
        );
        job.state = JobState::Failed;
        job.stage = "probe".into();
        job.error_code = Some(e.code().as_str().into());
        job.error = Some(e.to_string());
        jobs::start(store, &mut job)?;
        jobs::save(store, &job)?;
        return Err(e);
    }
    let key = ItemKey::schedule(&target.id);
    let source = req.source.clone();
    let (org, id, name) = (target.org.clone(), target.id.clone(), target.name.clone());
    store.update_item(&key.pk, &key.sk, &mut |old| {
        let mut item = match old.as_deref().map(decode).transpose()? {
            Some(item) if item.source == source => return Ok(None),
            Some(item) => item,
            None => ScheduleItem::new(&org, &id, &name, source.clone()),
        };
        // A new source: whatever was probed before says nothing about it.
        item.source = source.clone();
        item.last_probe = None;
        Ok(Some(encode(&item)?))
    })?;
    let mut options = ctx.options.clone();
    options.force |= req.full;
    run_job(store, ctx, &options, &target, &req.source, job_id, trigger)
}

fn run_job(
    store: &dyn IndexStore,
    ctx: &JobContext<'_>,
    options: &IndexOptions,
    target: &ProjectTarget,
    source: &SourceSpec,
    job_id: &str,
    trigger: Trigger,
) -> Result<JobRecord, IndexerError> {
    let mut job = JobRecord::starting(
        job_id,
        &target.org,
        &target.id,
        &target.name,
        trigger,
        now_ms(),
    );
    let before = store.traffic();
    jobs::start(store, &mut job)?;
    let outcome = fetch_and_index(store, ctx, options, target, source, &mut job);
    job.updated_ms = now_ms();
    job.traffic = jobs::Traffic::between(before, store.traffic());
    match outcome {
        Ok(probe) => {
            job.stage = "done".into();
            record_success(store, target, &job, probe)?;
        }
        Err(e) => {
            job.state = JobState::Failed;
            job.error_code = Some(e.code().as_str().into());
            job.error = Some(e.to_string());
            tracing::warn!(job = %job.id, project = %target.id, "index job failed: {e}");
        }
    }
    jobs::save(store, &job)?;
    Ok(job)
}

/// Fetches and indexes; returns the probe answer taken before fetching.
fn fetch_and_index(
    store: &dyn IndexStore,
    ctx: &JobContext<'_>,
    options: &IndexOptions,
    target: &ProjectTarget,
    source: &SourceSpec,
    job: &mut JobRecord,
) -> Result<Option<String>, IndexerError> {
    // Probed first: if the source moves while it is fetched, the next pass sees a difference.
    let credential = credentials::resolve(ctx.credentials, &target.org, source)?;
    let probe = probe_revision(source, credential.as_ref(), ctx.limits.network)?;
    let fetched = fetch(source, credential.as_ref(), &ctx.limits, ctx.work_dir)?;
    drop(credential);
    fetched.log_warnings(&target.id);
    job.revision = fetched.revision.clone();
    job.stage = "index".into();
    job.updated_ms = now_ms();
    jobs::save(store, job)?;
    let target = ProjectTarget {
        origin: crate::pipeline::fetched_origin(source, fetched.revision.as_deref()),
        git_dir: fetched.git_dir.clone(),
        ..target.clone()
    };
    let report = index_project(store, &target, &fetched.root, options, &NoProgress)?;
    job.record(&report);
    Ok(probe.or(fetched.probe_token))
}

fn record_success(
    store: &dyn IndexStore,
    target: &ProjectTarget,
    job: &JobRecord,
    probe: Option<String>,
) -> Result<(), IndexerError> {
    let at = job.updated_ms;
    let key = ItemKey::schedule(&target.id);
    store.update_item(&key.pk, &key.sk, &mut |old| {
        let Some(mut item) = old.as_deref().map(decode).transpose()? else {
            return Ok(None);
        };
        // Applied once per job id: a retry of the same job leaves the counter alone.
        if item.recent_jobs.contains(&job.id) {
            return Ok(None);
        }
        item.recent_jobs.push(job.id.clone());
        if item.recent_jobs.len() > RECENT_JOBS {
            item.recent_jobs.remove(0);
        }
        item.runs += 1;
        item.last_probe = probe.clone();
        item.last_revision = job.revision.clone();
        item.last_indexed_ms = at;
        Ok(Some(encode(&item)?))
    })
}

/// What a scheduled pass did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PassReport {
    /// Registered projects looked at.
    pub projects: usize,
    /// Projects whose source had not changed (nothing fetched).
    pub unchanged: usize,
    /// Jobs run for the others.
    pub jobs: Vec<JobRecord>,
    /// Projects whose source could not be probed (`id: error`); they are retried next pass.
    pub probe_failures: Vec<String>,
    /// Wall time, milliseconds.
    pub elapsed_ms: u64,
}

/// The scheduled pass: probes every registered project and indexes the changed ones. Job ids
/// are `{pass_id}-{project id}`, so a retried pass reuses its jobs' records.
pub fn reindex_due(
    store: &dyn IndexStore,
    ctx: &JobContext<'_>,
    pass_id: &str,
) -> Result<PassReport, IndexerError> {
    let started = std::time::Instant::now();
    let range = ItemRange::schedules();
    let raw = store.items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX)?;
    let mut report = PassReport {
        projects: raw.len(),
        ..PassReport::default()
    };
    // One bad item or one failing job never stops the pass for the others.
    for data in raw {
        let item = match decode(&data) {
            Ok(item) => item,
            Err(e) => {
                report.probe_failures.push(e.to_string());
                continue;
            }
        };
        if !ctx.allow_local && !item.source.is_remote() {
            report
                .probe_failures
                .push(format!("{}: local sources are not indexed here", item.id));
            continue;
        }
        let probe = match credentials::resolve(ctx.credentials, &item.org, &item.source)
            .and_then(|c| probe_revision(&item.source, c.as_ref(), ctx.limits.network))
        {
            Ok(p) => p,
            Err(e) => {
                report.probe_failures.push(format!("{}: {e}", item.id));
                continue;
            }
        };
        if probe.is_some() && probe == item.last_probe {
            report.unchanged += 1;
            continue;
        }
        let target = ProjectTarget {
            source: Some(item.source.describe()),
            ..ProjectTarget::named(&item.org, &item.name)
        };
        let job_id = format!("{pass_id}-{}", item.id);
        match run_job(
            store,
            ctx,
            ctx.options,
            &target,
            &item.source,
            &job_id,
            Trigger::Schedule,
        ) {
            Ok(job) => report.jobs.push(job),
            Err(e) => report.probe_failures.push(format!("{}: {e}", item.id)),
        }
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// Every registered project (for operators and tests).
pub fn registered(store: &dyn IndexStore) -> Result<Vec<ScheduleItem>, IndexerError> {
    let range = ItemRange::schedules();
    store
        .items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX)?
        .iter()
        .map(|d| decode(d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosted_requests_take_network_sources_with_safe_names() {
        let req = |org: &str, source: SourceSpec| IndexRequest {
            org: org.into(),
            project: "web".into(),
            source,
            full: false,
        };
        let git = |url: &str| SourceSpec::Git {
            url: url.into(),
            rev: None,
            credential: None,
        };
        assert!(validate(&req("acme", git("https://example.com/r.git")), false).is_ok());
        for refused in [
            req(
                "acme",
                SourceSpec::Local {
                    path: "/proc/self".into(),
                },
            ),
            req("acme", git("file:///var/task")),
            req("../etc", git("https://example.com/r.git")),
            req("", git("https://example.com/r.git")),
        ] {
            let e = validate(&refused, false).unwrap_err();
            assert_eq!(e.code(), "invalid_request", "{refused:?}");
        }
        assert!(validate(&req("acme", git("file:///tmp/r")), true).is_ok());
    }
}
