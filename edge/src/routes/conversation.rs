//! The conversation a request carries: read from its JSON `messages` for
//! `/v1/history/compact`, and compacted into its share of the budget for `/v1/context`. A
//! module of its own so that neither handler imports the other.

use ctxgate_core::catalog::ResolvedBudget;
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::history::{
    CompactError, CompactOptions, Compacted, DEFAULT_KEEP_ROUNDS, Message, NoCache, budget_needed,
    compact, history_room, message::messages_from_values,
};
use serde_json::{Value, json};

use crate::error::ApiError;

/// Most rounds a request may protect (more is the same as keeping everything).
pub(super) const MAX_KEEP_ROUNDS: usize = 10_000;

/// The chat messages of a request's `messages`, which must be a JSON array.
pub(super) fn messages(messages: Value) -> Result<Vec<Message>, ApiError> {
    let Value::Array(list) = messages else {
        return Err(ApiError::new(
            ErrorCode::InvalidConversation,
            "`messages` must be an array of chat messages",
        ));
    };
    Ok(messages_from_values(list)?)
}

/// Compacts a `/v1/context` request's `messages` into the history's share of `resolved`, a
/// budget not split yet ([`history_room`]): whole if the conversation fits in it, else
/// compacted to it (the code gets the rest, [`ResolvedBudget::after_history`]).
pub(super) fn compact_for_context(
    messages: Value,
    resolved: &ResolvedBudget,
    keep_rounds: Option<usize>,
    query: &str,
) -> Result<Compacted, ApiError> {
    let messages = self::messages(messages)?;
    let keep_rounds = keep_rounds
        .unwrap_or(DEFAULT_KEEP_ROUNDS)
        .min(MAX_KEEP_ROUNDS);
    let budget = resolved.budget;
    let opts = CompactOptions {
        budget: history_room(budget),
        keep_rounds,
        query: Some(query.to_string()),
        exact_stats: true,
    };
    compact(&messages, &resolved.tokenizer, &opts, &mut NoCache).map_err(|e| match e {
        CompactError::BudgetTooSmall { needed, .. } => {
            let raise_to = budget_needed(needed);
            ApiError::new(
                ErrorCode::BudgetTooSmall,
                format!(
                    "the history's protected part (system prompt, pinned messages and the last {keep_rounds} rounds) needs {needed} tokens, more than half of the budget ({budget}); raise the budget to at least {raise_to} or keep fewer rounds",
                ),
            )
            .with_details(json!({ "needed": raise_to, "budget": budget, "history_needs": needed, "keep_rounds": keep_rounds }))
        }
        other => other.into(),
    })
}
