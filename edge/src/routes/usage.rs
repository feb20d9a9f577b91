//! `GET /v1/usage`: the caller's quota, spend and recent calls (its own org only).

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

/// Recent audit records shown.
const RECENT: usize = 50;

/// `GET /v1/usage`.
pub async fn usage(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let org = &caller.org.name;
    let ledger = state.accounts.ledger(org).await?;
    let summary = ledger.summary(&caller.org.limits, state.accounts.now_ms());
    let recent = state.accounts.audit(org, RECENT).await?;
    Ok(Json(json!({
        "org": org,
        "usage": summary,
        "recent": recent,
    })))
}
