//! What a caller asks of a compaction, and why it can refuse: kept apart so the request and its
//! failure read as one contract, whatever the walk behind them does.

use crate::error_code::ErrorCode;

/// Rounds kept whole unless the caller says otherwise.
pub const DEFAULT_KEEP_ROUNDS: usize = 3;

/// How to compact.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactOptions {
    /// Hard limit on [`crate::history::conversation_tokens`] of the result.
    pub budget: u32,
    /// Newest rounds kept verbatim.
    pub keep_rounds: usize,
    /// Bring the old messages most relevant to this back whole.
    pub query: Option<String>,
    /// Count every input message for the report's `tokens_before` figures. Without it, messages
    /// that end up aggregated or dropped are never counted (counting is most of the time spent
    /// on a long conversation), and those figures are left out.
    pub exact_stats: bool,
}

impl CompactOptions {
    /// Defaults for `budget`.
    pub fn new(budget: u32) -> Self {
        Self {
            budget,
            keep_rounds: DEFAULT_KEEP_ROUNDS,
            query: None,
            exact_stats: true,
        }
    }
}

/// Why a conversation could not be compacted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompactError {
    /// A zero budget.
    #[error("the budget is 0 tokens")]
    BudgetZero,
    /// What must be kept verbatim does not fit.
    #[error(
        "the budget of {budget} tokens is smaller than the protected part of the conversation (system prompt, pinned messages and the last {keep_rounds} rounds), which needs {needed} tokens; raise the budget to at least {needed} or keep fewer rounds"
    )]
    BudgetTooSmall {
        /// Tokens the protected part needs.
        needed: u32,
        /// The budget given.
        budget: u32,
        /// Rounds protected.
        keep_rounds: usize,
    },
}

impl CompactError {
    /// The stable machine-readable code the CLI and the API report.
    pub fn code(&self) -> ErrorCode {
        match self {
            CompactError::BudgetZero => ErrorCode::BudgetZero,
            CompactError::BudgetTooSmall { .. } => ErrorCode::BudgetTooSmall,
        }
    }
}
