//! `GET /v1/usage`: the caller's quota, spend and recent calls (its own org only).

use axum::Json;
use axum::extract::State;
use ctxgate_core::quota::UsageSummary;
use serde::Serialize;

use crate::backend::AuditRecord;
use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

/// Recent audit records shown.
const RECENT: usize = 50;

/// `GET /v1/usage`.
pub async fn usage(State(state): State<AppState>, caller: Caller) -> Result<Json<Usage>, ApiError> {
    let org = caller.org.name;
    let ledger = state.accounts.ledger(&org).await?;
    let usage = ledger.summary(&caller.org.limits, state.accounts.now_ms());
    let recent = state.accounts.audit(&org, RECENT).await?;
    Ok(Json(Usage { org, usage, recent }))
}

/// The answer of `GET /v1/usage`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Usage {
    /// The caller's organisation.
    org: String,
    /// Its limits, and what is used and left per period.
    usage: UsageSummary,
    /// Its newest audited calls, newest first (chunk ids and token counts, never content).
    recent: Vec<AuditRecord>,
}
