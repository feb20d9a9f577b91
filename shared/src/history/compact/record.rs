//! The report's account of a finished compaction: what was summarized, aggregated, recalled and
//! dropped, and the per-tier figures.

use crate::history::message::{CONVERSATION_OVERHEAD, Message};

use super::report::{CompactReport, SummaryEntry, Tier, tier_stats};
use super::units::{Costs, Unit, UnitKind};

/// Lists each unit that ended summarized, with its ids and token figures, so a caller can see
/// what each summary stands for.
pub(super) fn record_summaries(
    report: &mut CompactReport,
    units: &[Unit],
    tiers: &[Tier],
    messages: &[Message],
) {
    for u in units {
        if tiers[u.msgs[0]] == Tier::Summarized {
            report.summarized.push(SummaryEntry {
                messages: u.msgs.clone(),
                ids: u
                    .msgs
                    .iter()
                    .filter_map(|&i| messages[i].id.clone())
                    .collect(),
                kind: match u.kind {
                    UnitKind::Message => "message",
                    UnitKind::AgentTurn => "agent_turn",
                },
                tokens_before: u.verbatim,
                tokens_after: u.summary_tokens,
                cached: u.cached,
            });
        }
    }
}

/// Lists the messages aggregated, recalled and dropped (with the dropped ones' ids), so a caller
/// knows which of its messages are no longer there as written.
pub(super) fn record_outcomes(report: &mut CompactReport, tiers: &[Tier], messages: &[Message]) {
    for (i, t) in tiers.iter().enumerate() {
        match t {
            Tier::Aggregated => report.aggregated.push(i),
            Tier::Recalled => report.recalled.push(i),
            Tier::Dropped => {
                report.dropped.push(i);
                if let Some(id) = &messages[i].id {
                    report.dropped_ids.push(id.clone());
                }
            }
            _ => {}
        }
    }
}

/// Fills in the token figures (counting every message first when `exact_stats` asks for it), so
/// the report says where every token went.
pub(super) fn record_tokens(
    report: &mut CompactReport,
    costs: &mut Costs<'_>,
    tiers: &[Tier],
    agg_tokens: u32,
    exact_stats: bool,
) {
    let summarized_after: u32 = report.summarized.iter().map(|s| s.tokens_after).sum();
    if exact_stats {
        for i in 0..costs.v.len() {
            costs.get(i);
        }
    }
    report.tokens_before = costs
        .v
        .iter()
        .try_fold(CONVERSATION_OVERHEAD, |a, c| c.map(|c| a.saturating_add(c)));
    report.tiers = tier_stats(
        tiers,
        &costs.v,
        &[
            (Tier::Summarized, summarized_after),
            (Tier::Aggregated, agg_tokens),
        ],
    );
}
