//! Conversation history compaction: long chats and agent runs that fit a token budget without
//! losing what matters.
//!
//! A conversation (OpenAI chat format, [`message`]) is split into **rounds** — a round starts at
//! each user message, and at each assistant message that follows a tool result (one step of an
//! agent run). Then, newest to oldest, each part of it gets the most detailed form the budget
//! allows ([`compact`]):
//!
//! 1. **Protected**, always verbatim: system/developer messages, pinned messages, and the last
//!    `keep_rounds` rounds (default 3). If these alone exceed the budget the call fails with the
//!    number of tokens they need ([`CompactError::BudgetTooSmall`]).
//! 2. **Recalled**: with a query, the older messages most relevant to it (BM25) come back whole.
//! 3. **Verbatim**: the newest older messages, while they fit.
//! 4. **Summary**: one summary per older message (chat) or per agent turn (the assistant's tool
//!    calls and their results together), extractive and deterministic ([`summarize`]).
//! 5. **Aggregate**: the oldest messages become one system message of topic and segment lines.
//! 6. **Dropped**: only what even the aggregate has no room for, oldest first.
//!
//! The report ([`CompactReport`]) says which input messages went to which tier. The result is
//! counted with [`message::conversation_tokens`] — the same definition the budget is checked
//! with — and never exceeds the budget (property-tested in `tests.rs`).

pub mod cache;
mod compact;
pub mod message;
mod share;
pub mod summarize;
#[cfg(test)]
mod tests;

pub use cache::{MemoryCache, NoCache, SummaryCache, SummaryKey};
pub use compact::{
    CompactError, CompactOptions, CompactReport, Compacted, DEFAULT_KEEP_ROUNDS, Extractive,
    Summarizer, SummaryEntry, SummaryInput, SummaryKind, Tier, TierStats, compact, compact_with,
    render_for_summary,
};
pub use message::{
    Content, Conversation, Message, ParseError, Role, conversation_tokens, message_tokens, parse,
    parse_bytes,
};
pub use share::{CONTEXT_HISTORY_SHARE, budget_needed, history_room};
pub use summarize::SUMMARIZER_VERSION;
