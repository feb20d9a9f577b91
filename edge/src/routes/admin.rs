//! Admin endpoints (behind the admin secret): organisations, keys, limits.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::host_wire::{GcAnswer, GcRequest, PublishedProject};
use ctxgate_core::quota::Limits;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::admin;
use crate::backend::{OrgRecord, ProjectInfo};
use crate::error::ApiError;
use crate::extract::limits::{MAX_OBJECT_BYTES, too_large};
use crate::extract::{Admin, JsonBody};
use crate::state::AppState;

/// `POST /v1/admin/orgs` body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOrg {
    /// Unique name, also the organisation's id.
    name: String,
    /// Its limits (each absent one is unlimited).
    #[serde(default)]
    limits: Limits,
    /// Models it may use (ids); empty is all.
    #[serde(default)]
    allowed_models: Vec<String>,
    /// Rank its requests with dense retrieval too (default off; see `PUT
    /// /v1/admin/orgs/{org}/dense`).
    #[serde(default)]
    dense: bool,
}

/// `PUT /v1/admin/orgs/{org}/dense` body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetDense {
    /// Whether the organisation's requests rank with dense retrieval.
    pub dense: bool,
}

/// The answer of `POST /v1/admin/orgs/{org}/keys`.
#[derive(Serialize, JsonSchema)]
pub struct CreatedKey {
    /// The organisation the key belongs to.
    org: String,
    /// The key (`ctxg_...`): shown here once, stored only as its SHA-256.
    key: String,
}

/// `POST /v1/admin/orgs`.
pub async fn create_org(
    State(state): State<AppState>,
    _: Admin,
    JsonBody(req): JsonBody<CreateOrg>,
) -> Result<(StatusCode, Json<OrgRecord>), ApiError> {
    let org =
        admin::create_org(&state, &req.name, req.limits, req.allowed_models, req.dense).await?;
    Ok((StatusCode::CREATED, Json(org)))
}

/// `POST /v1/admin/orgs/{org}/keys`: the key is in this answer and nowhere else.
pub async fn create_key(
    State(state): State<AppState>,
    _: Admin,
    Path(org): Path<String>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    let key = admin::create_key(&state, &org).await?;
    Ok((StatusCode::CREATED, Json(CreatedKey { org, key })))
}

/// `PUT /v1/admin/orgs/{org}/limits`.
pub async fn set_limits(
    State(state): State<AppState>,
    _: Admin,
    Path(org): Path<String>,
    JsonBody(limits): JsonBody<Limits>,
) -> Result<Json<OrgRecord>, ApiError> {
    Ok(Json(admin::set_limits(&state, &org, limits).await?))
}

/// `PUT /v1/admin/orgs/{org}/dense`.
pub async fn set_dense(
    State(state): State<AppState>,
    _: Admin,
    Path(org): Path<String>,
    JsonBody(req): JsonBody<SetDense>,
) -> Result<Json<OrgRecord>, ApiError> {
    Ok(Json(admin::set_dense(&state, &org, req.dense).await?))
}

/// `PUT /v1/admin/orgs/{org}/projects/{name}`: registers a project whose index objects an
/// indexer has already written to this deployment's object store.
pub async fn put_project(
    State(state): State<AppState>,
    _: Admin,
    Path((org, name)): Path<(String, String)>,
    JsonBody(req): JsonBody<PublishedProject>,
) -> Result<Json<ProjectInfo>, ApiError> {
    super::projects::valid_name(&name)?;
    super::projects::valid_name(&req.id)?;
    if state.accounts.org(&org).await?.is_none() {
        return Err(ApiError::new(
            ErrorCode::OrgNotFound,
            format!("no organisation `{org}`"),
        ));
    }
    let info = ProjectInfo {
        id: req.id,
        name,
        org,
        source: req.source,
        current_version: req.current_version,
    };
    state.projects.put_project(&info).await?;
    state.pointers.forget(&info.org, &info.id);
    Ok(Json(info))
}

/// `POST /v1/admin/orgs/{org}/gc`: deletes the org's old index versions and the objects no
/// kept version names from this host's store ([`crate::gc`]); what was deleted and the bytes
/// freed, project by project.
pub async fn collect_garbage(
    State(state): State<AppState>,
    _: Admin,
    Path(org): Path<String>,
    JsonBody(req): JsonBody<GcRequest>,
) -> Result<Json<GcAnswer>, ApiError> {
    if state.accounts.org(&org).await?.is_none() {
        return Err(ApiError::new(
            ErrorCode::OrgNotFound,
            format!("no organisation `{org}`"),
        ));
    }
    let policy = req.policy();
    let now = state.accounts.now_ms();
    let reports =
        crate::gc::collect_org(state.projects.as_ref(), &org, &policy, now, req.dry_run).await?;
    Ok(Json(GcAnswer::new(&org, !req.dry_run, reports)))
}

/// The object key for `rest` under `org`, if every part of it is a plain name: an upload can
/// only write under its own org's projects, never outside them.
fn object_key(org: &str, rest: &str) -> Result<String, ApiError> {
    let plain = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if rest.starts_with("project/") && rest.split('/').all(plain) {
        Ok(format!("org/{org}/{rest}"))
    } else {
        Err(ApiError::new(
            ErrorCode::InvalidObjectKey,
            "an object key is `project/{id}/...` of names made of letters, digits, `-`, `_`, `.`",
        ))
    }
}

/// `PUT /v1/admin/orgs/{org}/objects/{*key}`: stores one object of an index an indexer built
/// elsewhere (`ctxgate project add` writes the same keys under its data directory), so a host
/// without direct access to the object store (the Worker's R2 binding) can be published to.
pub async fn put_object(
    State(state): State<AppState>,
    _: Admin,
    Path((org, rest)): Path<(String, String)>,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<StatusCode, ApiError> {
    let key = object_key(&org, &rest)?;
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large(MAX_OBJECT_BYTES)
        } else {
            ApiError::new(ErrorCode::InvalidBody, e.body_text())
        }
    })?;
    if state.accounts.org(&org).await?.is_none() {
        return Err(ApiError::new(
            ErrorCode::OrgNotFound,
            format!("no organisation `{org}`"),
        ));
    }
    state.projects.put_object(&key, bytes.to_vec()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `HEAD /v1/admin/orgs/{org}/objects/{*key}`: 204 when the object is stored, 404 when not, so
/// a publisher uploads only what is missing (segments are content-addressed).
pub async fn has_object(
    State(state): State<AppState>,
    _: Admin,
    Path((org, rest)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let key = object_key(&org, &rest)?;
    if state.projects.has_object(&key).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(
            ErrorCode::ObjectNotFound,
            format!("no object `{rest}`"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::object_key;

    #[test]
    fn object_keys_stay_inside_their_org() {
        assert_eq!(
            object_key("acme", "project/p1/version/1/manifest.json").ok(),
            Some("org/acme/project/p1/version/1/manifest.json".to_string())
        );
        for bad in [
            "project/../../other/x",
            "project//x",
            "version/1/x",
            "project/p1/./x",
            "project/p1/a b",
            "",
        ] {
            assert!(object_key("acme", bad).is_err(), "{bad}");
        }
    }
}
