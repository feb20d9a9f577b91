//! The model and budget a caller asked for, checked against what its organisation may use:
//! shared by the context, search and history handlers.

use ctxgate_core::catalog::{BudgetPolicy, ResolvedBudget, resolve_budget};
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::tokens::Encoding;
use serde_json::json;

use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

/// The budget of a call for `model` (the catalog's default when none) and the asked `budget`;
/// a model the organisation may not use is refused.
pub(super) fn resolve(
    state: &AppState,
    caller: &Caller,
    model: Option<&str>,
    budget: Option<u32>,
) -> Result<ResolvedBudget, ApiError> {
    let model = model.map(|m| state.catalog.resolve(m)).transpose()?;
    if let Some(m) = model {
        let allowed = &caller.org.allowed_models;
        if !allowed.is_empty() && !allowed.contains(&m.id) {
            return Err(ApiError::new(
                ErrorCode::ModelNotAllowed,
                format!("the organisation may not use `{}`", m.id),
            )
            .with_details(json!({ "allowed_models": allowed })));
        }
    }
    Ok(resolve_budget(
        model,
        budget,
        &BudgetPolicy::default(),
        Encoding::O200kBase,
    )?)
}
