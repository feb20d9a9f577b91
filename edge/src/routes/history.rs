//! `POST /v1/history/compact`: the core's history compaction, authenticated and metered.

use axum::Json;
use axum::extract::State;
use ctxgate_core::assemble::ask::{self, Limits};
use ctxgate_core::history::{
    CompactError, CompactOptions, DEFAULT_KEEP_ROUNDS, NoCache, compact,
    message::messages_from_values,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::budget::resolve;
use crate::error::ApiError;
use crate::extract::{Caller, JsonBody};
use crate::meter::{self, Delivered};
use crate::state::AppState;

/// Most rounds a request may protect (more is the same as keeping everything).
const MAX_KEEP_ROUNDS: usize = 10_000;

/// `POST /v1/history/compact` body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactRequest {
    /// OpenAI chat messages.
    messages: Value,
    /// Target model (its tokenizer and window apply).
    #[serde(default)]
    model: Option<String>,
    /// Hard limit on the compacted conversation's tokens.
    #[serde(default)]
    budget: Option<u32>,
    /// Newest rounds kept verbatim (default 3).
    #[serde(default)]
    keep_rounds: Option<usize>,
    /// Bring the old messages most relevant to this back whole.
    #[serde(default)]
    query: Option<String>,
}

/// Largest share of a `/v1/context` budget the history may take when it does not fit whole (the
/// rest is for code); a protected part larger than this is refused.
const CONTEXT_HISTORY_SHARE: (u32, u32) = (1, 2);

/// Compacts a `/v1/context` request's `messages` into its share of `budget`: whole if the
/// conversation fits in half the budget, else compacted to half (the code gets the rest).
pub(super) fn compact_for_context(
    messages: Value,
    tok: &ctxgate_core::catalog::TokenizerSpec,
    budget: u32,
    keep_rounds: Option<usize>,
    query: &str,
) -> Result<ctxgate_core::history::Compacted, ApiError> {
    let Value::Array(list) = messages else {
        return Err(ApiError::bad_request(
            "invalid_conversation",
            "`messages` must be an array of chat messages",
        ));
    };
    let messages = messages_from_values(list)?;
    let keep_rounds = keep_rounds
        .unwrap_or(DEFAULT_KEEP_ROUNDS)
        .min(MAX_KEEP_ROUNDS);
    let share = (u64::from(budget) * u64::from(CONTEXT_HISTORY_SHARE.0)
        / u64::from(CONTEXT_HISTORY_SHARE.1)) as u32;
    let opts = CompactOptions {
        budget: share.max(1),
        keep_rounds,
        query: Some(query.to_string()),
        exact_stats: true,
    };
    compact(&messages, tok, &opts, &mut NoCache).map_err(|e| match e {
        CompactError::BudgetTooSmall { needed, .. } => ApiError::bad_request(
            "budget_too_small",
            format!(
                "the history's protected part (system prompt, pinned messages and the last {keep_rounds} rounds) needs {needed} tokens, more than half of the budget ({budget}); raise the budget to at least {} or keep fewer rounds",
                needed.saturating_mul(2)
            ),
        )
        .with_details(json!({ "needed": needed.saturating_mul(2), "budget": budget, "history_needs": needed, "keep_rounds": keep_rounds })),
        other => other.into(),
    })
}

/// `POST /v1/history/compact`.
pub async fn compact_history(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<CompactRequest>,
) -> Result<Json<Value>, ApiError> {
    let Value::Array(list) = req.messages else {
        return Err(ApiError::bad_request(
            "invalid_conversation",
            "`messages` must be an array of chat messages",
        ));
    };
    let messages = messages_from_values(list)?;
    let keep_rounds = req.keep_rounds.unwrap_or(DEFAULT_KEEP_ROUNDS);
    if keep_rounds > MAX_KEEP_ROUNDS {
        return Err(ApiError::bad_request(
            "invalid_request",
            format!("keep_rounds is at most {MAX_KEEP_ROUNDS}"),
        ));
    }
    if let Some(q) = &req.query {
        ask::check_query_size(q, &Limits::SERVED)?;
    }
    let resolved = resolve(&state, &caller, req.model.as_deref(), req.budget)?;
    let opts = CompactOptions {
        budget: resolved.budget,
        keep_rounds,
        query: req.query,
        exact_stats: true,
    };
    let admission = meter::admit(
        &state,
        &caller,
        u64::from(resolved.budget),
        "/v1/history/compact",
    )
    .await?;
    let result = compact(&messages, &resolved.tokenizer, &opts, &mut NoCache);
    let (used, status) = match &result {
        Ok(c) => (u64::from(c.report.tokens_total), 200),
        Err(_) => (0, 400),
    };
    meter::finish(
        &state,
        &caller,
        admission,
        used,
        status,
        Delivered::default(),
    )
    .await;
    let done = result?;
    Ok(Json(json!({
        "messages": done.messages,
        "tokens_total": done.report.tokens_total,
        "budget": resolved.budget,
        "model": resolved.model,
        "tokenizer": resolved.tokenizer.label(),
        "exact": resolved.tokenizer.is_exact(),
        "warnings": resolved.warnings,
        "stats": done.report,
    })))
}
