//! Administration shared by the admin endpoints and the CLI (`ctxgate org|key|quota`), so that
//! both go through the same checks.

use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::quota::Limits;

use crate::backend::{KeyRecord, OrgRecord};
use crate::error::ApiError;
use crate::extract::hash_key;
use crate::state::AppState;

/// API keys start with this, so they are recognisable in logs and secret scanners.
pub const KEY_PREFIX: &str = "ctxg_";

fn valid_org_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::InvalidName,
            "an organisation name is 1-64 letters, digits, `-` or `_`",
        ))
    }
}

/// Creates organisation `name`.
pub async fn create_org(
    state: &AppState,
    name: &str,
    limits: Limits,
    allowed_models: Vec<String>,
    dense: bool,
) -> Result<OrgRecord, ApiError> {
    valid_org_name(name)?;
    // Kept as ids: an allowance for `sonnet` is for the model it names today, and requests
    // compare the id their own `model` resolves to.
    let allowed_models = allowed_models
        .iter()
        .map(|m| state.catalog.resolve(m).map(|m| m.id.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let org = OrgRecord {
        name: name.to_string(),
        limits,
        allowed_models,
        dense,
        created_ms: state.accounts.now_ms(),
    };
    state.accounts.create_org(&org).await?;
    Ok(org)
}

async fn existing(state: &AppState, name: &str) -> Result<OrgRecord, ApiError> {
    state
        .accounts
        .org(name)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::OrgNotFound, format!("no organisation `{name}`")))
}

/// Creates a key for `org` and returns it: the only time it is ever visible.
pub async fn create_key(state: &AppState, org: &str) -> Result<String, ApiError> {
    existing(state, org).await?;
    let secret: String = state
        .accounts
        .random_bytes(24)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = format!("{KEY_PREFIX}{secret}");
    let record = KeyRecord {
        org: org.to_string(),
        prefix: key.chars().take(KEY_PREFIX.len() + 6).collect(),
        created_ms: state.accounts.now_ms(),
    };
    state.accounts.put_key(&hash_key(&key), &record).await?;
    Ok(key)
}

/// Turns dense retrieval on or off for `org`'s requests.
pub async fn set_dense(state: &AppState, org: &str, dense: bool) -> Result<OrgRecord, ApiError> {
    let mut record = existing(state, org).await?;
    record.dense = dense;
    state.accounts.update_org(&record).await?;
    Ok(record)
}

/// Replaces `org`'s limits.
pub async fn set_limits(
    state: &AppState,
    org: &str,
    limits: Limits,
) -> Result<OrgRecord, ApiError> {
    let mut record = existing(state, org).await?;
    record.limits = limits;
    state.accounts.update_org(&record).await?;
    Ok(record)
}
