//! `POST /v1/history/compact`: the core's history compaction, authenticated and metered.

use axum::Json;
use axum::extract::State;
use ctxgate_core::assemble::ask::{self, Limits};
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::history::{
    CompactOptions, CompactReport, DEFAULT_KEEP_ROUNDS, Message, NoCache, compact,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::budget::resolve;
use super::conversation::{self, MAX_KEEP_ROUNDS};
use crate::error::ApiError;
use crate::extract::{Caller, JsonBody};
use crate::meter::{self, Delivered};
use crate::state::AppState;

/// `POST /v1/history/compact` body.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactRequest {
    /// OpenAI chat messages (read by the core's parser, whose errors name the message).
    #[schemars(with = "Vec<Message>")]
    messages: Value,
    /// Target model (its tokenizer and window apply).
    #[serde(default)]
    model: Option<String>,
    /// Hard limit on the compacted conversation's tokens; default: the model's usable budget,
    /// or 16,000 tokens (with a warning) when no model is named.
    #[serde(default)]
    budget: Option<u32>,
    /// Newest rounds kept verbatim (default 3).
    #[serde(default)]
    keep_rounds: Option<usize>,
    /// Bring the old messages most relevant to this back whole.
    #[serde(default)]
    query: Option<String>,
}

/// `POST /v1/history/compact`.
pub async fn compact_history(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<CompactRequest>,
) -> Result<Json<CompactAnswer>, ApiError> {
    let messages = conversation::messages(req.messages)?;
    let keep_rounds = req.keep_rounds.unwrap_or(DEFAULT_KEEP_ROUNDS);
    if keep_rounds > MAX_KEEP_ROUNDS {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
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
    Ok(Json(CompactAnswer {
        messages: done.messages,
        tokens_total: done.report.tokens_total,
        budget: resolved.budget,
        model: resolved.model,
        tokenizer: resolved.tokenizer.label(),
        exact: resolved.tokenizer.is_exact(),
        warnings: resolved.warnings,
        stats: done.report,
    }))
}

/// The answer of `POST /v1/history/compact`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct CompactAnswer {
    /// The compacted conversation, in order, ready to send.
    messages: Vec<Message>,
    /// Its tokens, counted by the target's tokenizer (never above `budget`).
    tokens_total: u32,
    /// The budget it was held to.
    budget: u32,
    /// The target model, when one was named.
    model: Option<String>,
    /// The tokenizer that counted.
    tokenizer: String,
    /// Whether the count is exact (false: an estimate with a safety margin).
    exact: bool,
    /// Things the caller should know.
    warnings: Vec<String>,
    /// Where every token went: tiers, summaries, what was recalled or dropped.
    stats: CompactReport,
}
