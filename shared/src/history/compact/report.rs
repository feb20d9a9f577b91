//! What a compaction hands back: the tier each message ended in and the figures behind it, so a
//! caller can see (and a test can check) exactly where every token went.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::history::message::Message;

/// The form an input message ends up in.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// System or developer message (never summarized).
    System,
    /// Pinned by the client (never summarized).
    Pinned,
    /// One of the last `keep_rounds` rounds.
    Recent,
    /// Older, brought back whole because it matches the query.
    Recalled,
    /// Older, kept whole because there was room.
    Verbatim,
    /// Older, replaced by its own summary.
    Summarized,
    /// Oldest, folded into the one aggregate summary.
    Aggregated,
    /// Left out: not even the aggregate had room.
    Dropped,
}

impl Tier {
    /// Every tier, most detailed first.
    pub const ALL: [Tier; 8] = [
        Tier::System,
        Tier::Pinned,
        Tier::Recent,
        Tier::Recalled,
        Tier::Verbatim,
        Tier::Summarized,
        Tier::Aggregated,
        Tier::Dropped,
    ];

    /// Whether the tier is kept verbatim whatever the budget.
    pub fn is_protected(self) -> bool {
        matches!(self, Tier::System | Tier::Pinned | Tier::Recent)
    }
}

/// One tier's share.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TierStats {
    /// Input messages in the tier.
    pub messages: usize,
    /// Their tokens before compaction (absent when not every message was counted).
    pub tokens_before: Option<u32>,
    /// Tokens the tier takes in the result (the aggregate message for `aggregated`).
    pub tokens_after: u32,
}

/// One summary in the result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryEntry {
    /// Input positions (0-based) the summary replaces.
    pub messages: Vec<usize>,
    /// Their ids, where the client gave them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<Value>,
    /// `message` or `agent_turn`.
    pub kind: &'static str,
    /// Tokens of the replaced messages.
    pub tokens_before: u32,
    /// Tokens of the summary message.
    pub tokens_after: u32,
    /// Whether it came from the cache.
    pub cached: bool,
}

/// What a compaction did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactReport {
    /// The budget.
    pub budget: u32,
    /// Tokens of the input conversation (absent when not every message was counted).
    pub tokens_before: Option<u32>,
    /// Tokens of the result (≤ budget).
    pub tokens_total: u32,
    /// Input messages.
    pub messages_before: usize,
    /// Result messages.
    pub messages_after: usize,
    /// Rounds found.
    pub rounds: usize,
    /// Rounds protected.
    pub keep_rounds: usize,
    /// Per tier, most detailed first (tiers with no messages are left out).
    pub tiers: BTreeMap<Tier, TierStats>,
    /// Each summary made.
    pub summarized: Vec<SummaryEntry>,
    /// Input positions folded into the aggregate.
    pub aggregated: Vec<usize>,
    /// Input positions recalled for the query.
    pub recalled: Vec<usize>,
    /// Input positions left out.
    pub dropped: Vec<usize>,
    /// Ids of the dropped messages, where given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_ids: Vec<Value>,
    /// The summarizer that made the summaries (its version).
    pub summarizer: String,
    /// Summaries found in the cache.
    pub cache_hits: usize,
    /// Summaries computed.
    pub cache_misses: usize,
}

/// The result: the messages to send and the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Compacted {
    /// The compacted conversation, in order.
    pub messages: Vec<Message>,
    /// The tier of each input message.
    pub tiers: Vec<Tier>,
    /// What happened.
    pub report: CompactReport,
}

/// Per-tier figures: verbatim tiers take what their messages cost; `after` gives the others.
pub(super) fn tier_stats(
    tiers: &[Tier],
    cost: &[Option<u32>],
    after: &[(Tier, u32)],
) -> BTreeMap<Tier, TierStats> {
    let mut out = BTreeMap::new();
    for t in Tier::ALL {
        let mut s = TierStats {
            tokens_before: Some(0),
            ..TierStats::default()
        };
        for (i, x) in tiers.iter().enumerate() {
            if *x == t {
                s.messages += 1;
                s.tokens_before = s
                    .tokens_before
                    .zip(cost[i])
                    .map(|(a, c)| a.saturating_add(c));
            }
        }
        if s.messages == 0 {
            continue;
        }
        s.tokens_after = match after.iter().find(|(x, _)| *x == t) {
            Some((_, a)) if matches!(t, Tier::Summarized | Tier::Aggregated) => *a,
            _ if t == Tier::Dropped => 0,
            _ => s.tokens_before.unwrap_or(0),
        };
        out.insert(t, s);
    }
    out
}
