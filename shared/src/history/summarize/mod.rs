//! Deterministic extractive summaries, at three levels.
//!
//! - **Message** ([`summarize_message`]): a chat message's most informative sentences, chosen
//!   knowing the message before and after it (sentences that carry the thread — terms shared
//!   with a neighbour — and sentences with facts — numbers, names, paths, identifiers — win),
//!   kept in their original order so the thread still reads naturally.
//! - **Agent span** ([`summarize_agent_span`]): an assistant's tool-using turn and the tools'
//!   results become the facts an agent needs later: files modified, commands and tests run with
//!   pass/fail counts, errors with their first lines, commits made, decisions stated.
//! - **Segment and topic** ([`aggregate_lines`]): about ten messages become one line (key terms
//!   and the segment's most informative sentence); adjacent segments that share key terms are
//!   grouped under a topic line. The oldest part of a conversation becomes one aggregate.
//!
//! Everything derived passes through [`crate::secrets::redact`] before any cutting, so a secret
//! is never carried forward, whole or in part. The output depends only on the inputs named in
//! each function (no conversation-wide statistics), which is what lets summaries be cached by
//! message hash.

mod agent;
mod aggregate;
mod chat;
mod text;
mod tool_args;

pub use agent::summarize_agent_span;
pub use aggregate::{
    AggregateLine, Digest, SEGMENT_MESSAGES, aggregate_header, aggregate_lines, digest,
};
pub use chat::summarize_message;
pub(crate) use text::clip;

/// Bumped whenever any summarizer's output changes, so cached summaries are regenerated.
pub const SUMMARIZER_VERSION: &str = "extractive-1";
