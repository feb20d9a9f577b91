//! Index jobs as operators see them (`ctxgate jobs`): one record per job, updated at each stage,
//! so a job that failed or died midway says where.
//!
//! Item layout (both stores): [`ItemKey::job`]. A job's id is its invocation's id (the Lambda
//! request id, which Lambda keeps when it retries an event), so a retried job updates its own
//! record instead of adding a second one.

use serde::{Deserialize, Serialize};

use ctxgate_core::item_key::{ItemKey, ItemRange};

use crate::IndexerError;
use crate::store::IndexStore;

/// What started a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// An explicit index request (CLI, API, an invocation).
    Request,
    /// The re-index schedule.
    Schedule,
}

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Working (or died without saying so: see `stage` and `updated_ms`).
    Running,
    /// A new version was published.
    Published,
    /// Indexed, and nothing had changed: the current version stands.
    UpToDate,
    /// Stopped with an error; the previous version stands.
    Failed,
}

/// One job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Job id.
    pub id: String,
    /// Owning organisation.
    pub org: String,
    /// Project id.
    pub project: String,
    /// Project name.
    pub name: String,
    /// What started it.
    pub trigger: Trigger,
    /// Where it is.
    pub state: JobState,
    /// The step it is in or stopped at (`fetch`, `index`, `publish`, `done`).
    pub stage: String,
    /// The source's revision, when known (a commit id, a tarball's sha256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The version it published or found current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Files seen / re-chunked, once indexed.
    #[serde(default)]
    pub files_seen: u64,
    /// Files re-chunked (the rest were reused).
    #[serde(default)]
    pub files_chunked: u64,
    /// New bytes of chunk text uploaded.
    #[serde(default)]
    pub bytes_stored: u64,
    /// Requests this job made to a remote store: S3 requests, S3 bytes uploaded, DynamoDB
    /// requests (absent for the embedded store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<Traffic>,
    /// Machine-readable error code, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// What went wrong, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many times this job id was started (retries of one event).
    pub attempts: u32,
    /// Started, milliseconds since the epoch.
    pub started_ms: u64,
    /// Last update, milliseconds since the epoch.
    pub updated_ms: u64,
}

/// What a job sent to S3 and DynamoDB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// S3 requests.
    pub s3_requests: u64,
    /// Bytes uploaded to S3.
    pub s3_bytes_up: u64,
    /// DynamoDB requests.
    pub dynamo_requests: u64,
}

impl Traffic {
    /// The difference between two readings of [`IndexStore::traffic`].
    pub fn between(
        before: Option<(u64, u64, u64)>,
        after: Option<(u64, u64, u64)>,
    ) -> Option<Self> {
        let ((a, b, c), (x, y, z)) = (before?, after?);
        Some(Self {
            s3_requests: x.saturating_sub(a),
            s3_bytes_up: y.saturating_sub(b),
            dynamo_requests: z.saturating_sub(c),
        })
    }
}

/// Milliseconds since the epoch, the time of job records, leases and schedule items.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl JobRecord {
    /// A job about to fetch its source, at `now` (ms).
    pub fn starting(
        id: &str,
        org: &str,
        project: &str,
        name: &str,
        trigger: Trigger,
        now: u64,
    ) -> Self {
        Self {
            id: id.into(),
            org: org.into(),
            project: project.into(),
            name: name.into(),
            trigger,
            state: JobState::Running,
            stage: "fetch".into(),
            revision: None,
            version: None,
            files_seen: 0,
            files_chunked: 0,
            bytes_stored: 0,
            traffic: None,
            error_code: None,
            error: None,
            attempts: 0,
            started_ms: now,
            updated_ms: now,
        }
    }

    /// Takes what indexing reported: the state it ended in, the version and the counts. The
    /// stage, the clock and the saving are the caller's.
    pub fn record(&mut self, report: &crate::pipeline::IndexReport) {
        use crate::pipeline::IndexStatus;
        self.state = match report.status {
            IndexStatus::Published => JobState::Published,
            IndexStatus::UpToDate => JobState::UpToDate,
        };
        self.version = Some(report.version);
        self.files_seen = report.files_seen as u64;
        self.files_chunked = report.files_chunked as u64;
        self.bytes_stored = report.stored_bytes;
    }

    fn key(&self) -> ItemKey {
        ItemKey::job(&self.id)
    }
}

fn decode(data: &str) -> Result<JobRecord, IndexerError> {
    serde_json::from_str(data).map_err(|e| IndexerError::Corrupt(format!("job record: {e}")))
}

fn encode(job: &JobRecord) -> Result<String, IndexerError> {
    serde_json::to_string(job).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

/// Records that `job` starts (again, if its id was seen before: `attempts` counts).
pub fn start(store: &dyn IndexStore, job: &mut JobRecord) -> Result<(), IndexerError> {
    let mut attempts = 1;
    let fresh = job.clone();
    let key = job.key();
    store.update_item(&key.pk, &key.sk, &mut |old| {
        let mut next = fresh.clone();
        next.attempts = 1;
        if let Some(old) = old.as_deref().map(decode).transpose()? {
            next.attempts = old.attempts + 1;
            next.started_ms = old.started_ms;
        }
        attempts = next.attempts;
        Ok(Some(encode(&next)?))
    })?;
    job.attempts = attempts;
    Ok(())
}

/// Writes the job's current state, unless a later attempt of the same job has started since
/// (a slow earlier attempt must not overwrite its retry's record).
pub fn save(store: &dyn IndexStore, job: &JobRecord) -> Result<(), IndexerError> {
    let data = encode(job)?;
    let key = job.key();
    store.update_item(&key.pk, &key.sk, &mut |old| {
        if let Some(old) = old.as_deref().map(decode).transpose()?
            && old.attempts > job.attempts
        {
            return Ok(None);
        }
        Ok(Some(data.clone()))
    })
}

/// The newest jobs first, at most `limit` (`org` filters).
pub fn list(
    store: &dyn IndexStore,
    org: Option<&str>,
    limit: usize,
) -> Result<Vec<JobRecord>, IndexerError> {
    let range = ItemRange::jobs();
    let mut jobs = store
        .items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX)?
        .iter()
        .map(|d| decode(d))
        .collect::<Result<Vec<_>, _>>()?;
    jobs.retain(|j| org.is_none_or(|o| j.org == o));
    jobs.sort_by(|a, b| b.started_ms.cmp(&a.started_ms).then(b.id.cmp(&a.id)));
    jobs.truncate(limit);
    Ok(jobs)
}

/// Deletes `project`'s jobs beyond its `keep` newest: a host that records a job for every
/// index it runs (a watched folder re-indexes on each save) keeps a bounded history.
pub fn prune(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
    keep: usize,
) -> Result<usize, IndexerError> {
    let old: Vec<JobRecord> = list(store, Some(org), usize::MAX)?
        .into_iter()
        .filter(|j| j.project == project)
        .skip(keep)
        .collect();
    for j in &old {
        let key = j.key();
        store.delete_item(&key.pk, &key.sk)?;
    }
    Ok(old.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn job(id: &str, started: u64) -> JobRecord {
        JobRecord::starting(id, "acme", "p1", "web", Trigger::Request, started)
    }

    #[test]
    fn a_retried_job_keeps_one_record_and_counts_attempts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut a = job("req-1", 10);
        start(&store, &mut a).unwrap();
        assert_eq!(a.attempts, 1);
        let mut again = job("req-1", 20);
        start(&store, &mut again).unwrap();
        assert_eq!(again.attempts, 2);
        let mut b = job("req-2", 30);
        start(&store, &mut b).unwrap();
        b.state = JobState::Failed;
        b.error = Some("boom".into());
        save(&store, &b).unwrap();
        let jobs = list(&store, None, 10).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].id, "req-2");
        assert_eq!(jobs[0].state, JobState::Failed);
        assert_eq!(jobs[1].attempts, 2);
        assert_eq!(jobs[1].started_ms, 10, "the first start is kept");
        assert!(list(&store, Some("other"), 10).unwrap().is_empty());
        // The first attempt finishing late does not overwrite the retry's record.
        a.state = JobState::Failed;
        save(&store, &a).unwrap();
        let now = list(&store, None, 10).unwrap();
        let one = now.iter().find(|j| j.id == "req-1").unwrap();
        assert_eq!((one.attempts, one.state), (2, JobState::Running));
    }

    #[test]
    fn pruning_keeps_a_projects_newest_jobs_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for i in 0..5 {
            let mut j = job(&format!("j{i}"), 100 + i);
            start(&store, &mut j).unwrap();
        }
        let mut other = JobRecord::starting("o1", "acme", "p2", "api", Trigger::Request, 1);
        start(&store, &mut other).unwrap();
        assert_eq!(prune(&store, "acme", "p1", 2).unwrap(), 3);
        let left: Vec<String> = list(&store, None, 10)
            .unwrap()
            .into_iter()
            .map(|j| j.id)
            .collect();
        assert_eq!(left, ["j4", "j3", "o1"]);
    }
}
