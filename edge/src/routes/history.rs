//! `POST /v1/history/compact`: the core's history compaction, authenticated and metered.

use axum::Json;
use axum::extract::State;
use ctxgate_core::history::{
    CompactError, CompactOptions, DEFAULT_KEEP_ROUNDS, NoCache, ParseError, compact,
    message::messages_from_values,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::JsonBody;
use super::auth::Caller;
use super::context::resolve;
use crate::error::ApiError;
use crate::meter;
use crate::state::AppState;

/// Most rounds a request may protect (more is the same as keeping everything).
const MAX_KEEP_ROUNDS: usize = 10_000;
/// Longest accepted query, in bytes.
const MAX_QUERY_BYTES: usize = 64 * 1024;

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

impl From<ParseError> for ApiError {
    fn from(e: ParseError) -> Self {
        let details = match &e {
            ParseError::Malformed { index, .. } | ParseError::UnknownRole { index, .. } => {
                json!({ "message_index": index })
            }
            _ => Value::Null,
        };
        ApiError::bad_request(e.code(), e.to_string()).with_details(details)
    }
}

impl From<CompactError> for ApiError {
    fn from(e: CompactError) -> Self {
        let details = match &e {
            CompactError::BudgetTooSmall {
                needed,
                budget,
                keep_rounds,
            } => {
                json!({ "needed": needed, "budget": budget, "keep_rounds": keep_rounds })
            }
            CompactError::BudgetZero => Value::Null,
        };
        ApiError::bad_request(e.code(), e.to_string()).with_details(details)
    }
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
    if req
        .query
        .as_ref()
        .is_some_and(|q| q.len() > MAX_QUERY_BYTES)
    {
        return Err(ApiError::bad_request(
            "query_too_large",
            format!("the query is over {MAX_QUERY_BYTES} bytes"),
        ));
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
    meter::finish(&state, &caller, admission, used, None, Vec::new(), status).await;
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
