//! `POST /v1/projects`, `GET /v1/projects`, `GET /v1/projects/{id}`,
//! `POST /v1/projects/{id}/reindex`: always within the caller's org.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ctxgate_core::error_code::ErrorCode;
use serde::{Deserialize, Serialize};

use crate::backend::{JobSummary, ProjectInfo, SourceSpec, pick_project};
use crate::error::ApiError;
use crate::extract::{Caller, JsonBody};
use crate::meter::OrgJobs;
use crate::state::AppState;

/// `POST /v1/projects` body.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProject {
    /// Unique within the org: letters, digits, `-`, `_`, `.`.
    name: String,
    /// Where its files come from: `{"kind": "git", "url", "rev"?, "credential"?}` (a private
    /// repository names a credential the operator stored for the org), `{"kind": "tarball",
    /// "url"}`, or, on a server started with `--local-root DIR`, `{"kind": "local", "path"}`
    /// with an absolute path inside DIR.
    source: SourceSpec,
}

/// The org's project named or numbered `key`. Another org's project is "not found", exactly
/// like a project that does not exist, so ids cannot be probed.
pub async fn find_project(state: &AppState, org: &str, key: &str) -> Result<ProjectInfo, ApiError> {
    pick_project(state.projects.projects(org).await?, key).ok_or_else(|| no_project(key))
}

/// The answer to a project id or name the caller's org does not have.
pub fn no_project(key: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ProjectNotFound,
        format!("no project `{key}` in this organisation"),
    )
}

/// Checks a project name.
pub fn valid_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::InvalidName,
            "a name is 1-100 characters of letters, digits, `-`, `_` and `.`, not starting with `.`",
        ))
    }
}

/// `POST /v1/projects`: registers and indexes a project. 201 when it is indexed on return (the
/// embedded store indexes in the call); 202 when a batch indexer will (the AWS deployment).
/// The job counts against the org's `index_jobs_per_hour` (429 `quota_exceeded` past it).
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<CreateProject>,
) -> Result<(StatusCode, Json<ProjectInfo>), ApiError> {
    valid_name(&req.name)?;
    let jobs = OrgJobs::new(state.accounts.as_ref(), &caller.org.name, caller.org.limits);
    let p = state
        .projects
        .create_project(&caller.org.name, &req.name, &req.source, &jobs)
        .await?;
    state.pointers.forget(&p.org, &p.id);
    let status = if p.current_version.is_some() {
        StatusCode::CREATED
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(p)))
}

/// `GET /v1/projects`.
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<ProjectList>, ApiError> {
    let projects = state.projects.projects(&caller.org.name).await?;
    Ok(Json(ProjectList { projects }))
}

/// The answer of `GET /v1/projects`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ProjectList {
    /// The organisation's projects.
    pub projects: Vec<ProjectInfo>,
}

/// `GET /v1/projects/{id}` (an id or a name).
pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ProjectInfo>, ApiError> {
    Ok(Json(find_project(&state, &caller.org.name, &id).await?))
}

/// `POST /v1/projects/{id}/reindex`: indexes the project again from where it was registered.
/// The answer says which version readers saw before and which they see now; requests made
/// meanwhile are answered from the old version until the new one is published. The job counts
/// against the org's `index_jobs_per_hour`.
pub async fn reindex(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Reindexed>, ApiError> {
    let before = find_project(&state, &caller.org.name, &id).await?;
    let jobs = OrgJobs::new(state.accounts.as_ref(), &caller.org.name, caller.org.limits);
    let after = state.projects.reindex_project(&before, &jobs).await?;
    state.pointers.forget(&after.org, &after.id);
    Ok(Json(Reindexed {
        changed: after.current_version != before.current_version,
        previous_version: before.current_version,
        project: after,
    }))
}

/// `GET /v1/projects/{id}/status`: the project, what its current version holds and where it
/// came from, and its newest indexing job (what the console's projects page shows).
pub async fn status(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ProjectStatus>, ApiError> {
    let project = find_project(&state, &caller.org.name, &id).await?;
    let index = match project.current_version {
        Some(_) => {
            let (snap, _) = state
                .snapshots
                .open(state.projects.as_ref(), &project)
                .await?;
            let pack = &snap.pack;
            Some(IndexFacts {
                version: snap.version,
                commit: snap.origin.as_ref().and_then(|o| o.commit.clone()),
                remote: snap.origin.as_ref().and_then(|o| o.remote.clone()),
                files: pack.files.len() as u64,
                chunks: pack.chunks.len() as u64,
                tokens: pack
                    .meta
                    .encodings
                    .iter()
                    .filter_map(|e| Some((e.name().to_string(), pack.total_tokens(*e)?)))
                    .collect(),
                published_ms: snap.created_ms,
            })
        }
        None => None,
    };
    let last_job = state.projects.last_job(&project).await?;
    Ok(Json(ProjectStatus {
        project,
        index,
        last_job,
    }))
}

/// The answer of `GET /v1/projects/{id}/status`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ProjectStatus {
    /// The project.
    project: ProjectInfo,
    /// Its current version, when one is published.
    index: Option<IndexFacts>,
    /// Its newest indexing job, where this host keeps job records (`ctxgate serve` does; a
    /// Worker publishing what was indexed elsewhere does not).
    last_job: Option<JobSummary>,
}

/// What a published version holds.
#[derive(Serialize, schemars::JsonSchema)]
pub struct IndexFacts {
    /// The version.
    version: u64,
    /// The commit indexed, when the files came from a git repository.
    commit: Option<String>,
    /// The repository's remote, without credentials, when known.
    remote: Option<String>,
    /// Files in the index.
    files: u64,
    /// Chunks in the index.
    chunks: u64,
    /// Tokens of all chunks, per encoding the index counted.
    tokens: std::collections::BTreeMap<String, u64>,
    /// When it was published, milliseconds since the epoch.
    published_ms: u64,
}

/// The answer of `POST /v1/projects/{id}/reindex`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Reindexed {
    /// Whether a new version was published (false: the files had not changed).
    changed: bool,
    /// The version readers saw before.
    previous_version: Option<u64>,
    /// The project now, with the version readers see.
    project: ProjectInfo,
}
