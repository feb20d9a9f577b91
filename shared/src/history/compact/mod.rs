//! The compaction walk: which tier each message gets under the budget. The parts it leans on
//! (options, report, units, recall, summaries, the plan for the room, the aggregate, assembly and
//! the report's account) live in their own modules so this file reads as the sequence of steps.

mod aggregate;
mod assemble;
mod options;
mod plan;
mod recall;
mod record;
mod report;
mod summarizer;
mod unit_summary;
mod units;

use std::collections::BTreeMap;

use crate::catalog::TokenizerSpec;
use crate::history::cache::SummaryCache;
use crate::history::message::{CONVERSATION_OVERHEAD, Message};

pub use options::{CompactError, CompactOptions, DEFAULT_KEEP_ROUNDS};
pub use report::{CompactReport, Compacted, SummaryEntry, Tier, TierStats};
pub use summarizer::{Extractive, Summarizer, SummaryInput, SummaryKind, render_for_summary};

use assemble::{assemble, within_budget};
use plan::{
    assign_tiers, fill_aggregate, recall_matches, restore_newest, split_room,
    summarize_newest_first,
};
use record::{record_outcomes, record_summaries, record_tokens};
use report::tier_stats;
use unit_summary::summarize_unit;
use units::{Costs, older_units, round_starts};

/// Compacts `messages` within `opts.budget` counted with `tok`, with the extractive summarizer.
/// `cache` supplies and keeps summaries.
pub fn compact(
    messages: &[Message],
    tok: &TokenizerSpec,
    opts: &CompactOptions,
    cache: &mut dyn SummaryCache,
) -> Result<Compacted, CompactError> {
    compact_with(messages, tok, opts, cache, &mut Extractive)
}

/// [`compact`] with another summarizer.
pub fn compact_with(
    messages: &[Message],
    tok: &TokenizerSpec,
    opts: &CompactOptions,
    cache: &mut dyn SummaryCache,
    summarizer: &mut dyn Summarizer,
) -> Result<Compacted, CompactError> {
    if opts.budget == 0 {
        return Err(CompactError::BudgetZero);
    }
    let n = messages.len();
    let mut costs = Costs {
        v: vec![None; n],
        tok,
        messages,
    };

    // Protection.
    let starts = round_starts(messages);
    let keep_from = recent_from(&starts, n, opts.keep_rounds);
    let mut tier = protected_tiers(messages, keep_from);

    // Units: the older messages, grouped the way they will be summarized or kept.
    let mut units = older_units(messages, &starts, keep_from, &mut tier);
    let protected_tokens = protected_cost(&tier, &mut costs, opts)?;
    let mut report = empty_report(opts, n, starts.len(), summarizer.version());

    if let Some(whole) = whole_fits(&mut costs, opts.budget) {
        return Ok(uncompacted(messages, &tier, &costs, report, whole));
    }

    // The plan: summaries newest first, then recall, verbatim and the aggregate in what is left.
    let (room, hits) = split_room(
        &mut units,
        &mut costs,
        messages,
        opts.query.as_deref(),
        opts.budget - protected_tokens,
    );
    let (k, suffix_k) = summarize_newest_first(&mut units, &mut costs, &room, |u| {
        summarize_unit(u, messages, tok, cache, summarizer, &mut report);
    });
    assign_tiers(&mut units, k);
    let mut slack = u64::from(room.total).saturating_sub(suffix_k + room.reserve(k));
    recall_matches(&mut units, hits, &mut slack);
    restore_newest(&mut units[k..], &mut slack);
    let aggregate = fill_aggregate(&mut units, messages, tok, &room);

    // The result, in order and checked against the budget.
    let mut assembled = assemble(messages, &units, &mut tier, aggregate, tok);
    let (result, total) = within_budget(&mut assembled, &mut tier, &units, tok, opts.budget);

    let tiers: Vec<Tier> = tier.iter().map(|t| t.unwrap_or(Tier::Dropped)).collect();
    record_summaries(&mut report, &units, &tiers, messages);
    record_outcomes(&mut report, &tiers, messages);
    record_tokens(
        &mut report,
        &mut costs,
        &tiers,
        assembled.agg_tokens,
        opts.exact_stats,
    );
    report.tokens_total = total;
    report.messages_after = result.len();
    Ok(Compacted {
        messages: result,
        tiers,
        report,
    })
}

/// Where the last `keep_rounds` rounds start (`n`: none kept; 0: every round is recent), since
/// those are kept verbatim whatever the budget.
fn recent_from(starts: &[usize], n: usize, keep_rounds: usize) -> usize {
    if keep_rounds == 0 {
        n
    } else if starts.len() <= keep_rounds {
        0
    } else {
        starts[starts.len() - keep_rounds]
    }
}

/// The tier of each message that is never shrunk (instructions, pinned, recent); `None` for the
/// older messages the plan decides on.
fn protected_tiers(messages: &[Message], keep_from: usize) -> Vec<Option<Tier>> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if m.role.is_instruction() {
                Some(Tier::System)
            } else if m.pinned {
                Some(Tier::Pinned)
            } else if i >= keep_from {
                Some(Tier::Recent)
            } else {
                None
            }
        })
        .collect()
}

/// What the protected part costs with the conversation overhead, or the error saying the budget
/// cannot hold it (nothing older can make room for it).
fn protected_cost(
    tier: &[Option<Tier>],
    costs: &mut Costs<'_>,
    opts: &CompactOptions,
) -> Result<u32, CompactError> {
    let protected_tokens = (0..tier.len())
        .filter(|&i| tier[i].is_some())
        .fold(CONVERSATION_OVERHEAD, |a, i| a.saturating_add(costs.get(i)));
    if protected_tokens > opts.budget {
        return Err(CompactError::BudgetTooSmall {
            needed: protected_tokens,
            budget: opts.budget,
            keep_rounds: opts.keep_rounds,
        });
    }
    Ok(protected_tokens)
}

/// The report before any decision: nothing shrunk yet, so every path starts from the same
/// figures.
fn empty_report(
    opts: &CompactOptions,
    n: usize,
    rounds: usize,
    summarizer: String,
) -> CompactReport {
    CompactReport {
        budget: opts.budget,
        tokens_before: None,
        tokens_total: 0,
        messages_before: n,
        messages_after: n,
        rounds,
        keep_rounds: opts.keep_rounds,
        tiers: BTreeMap::new(),
        summarized: Vec::new(),
        aggregated: Vec::new(),
        recalled: Vec::new(),
        dropped: Vec::new(),
        dropped_ids: Vec::new(),
        summarizer,
        cache_hits: 0,
        cache_misses: 0,
    }
}

/// The whole conversation's cost if it fits in `budget`, counted newest first and stopping as
/// soon as it cannot, so a long conversation is not counted in full just to learn it is too long.
fn whole_fits(costs: &mut Costs<'_>, budget: u32) -> Option<u32> {
    // Does it all fit? Counted newest first, stopping as soon as it cannot.
    let mut whole = CONVERSATION_OVERHEAD;
    for i in (0..costs.v.len()).rev() {
        whole = whole.saturating_add(costs.get(i));
        if whole > budget {
            break;
        }
    }
    (whole <= budget).then_some(whole)
}

/// The conversation unchanged (older messages verbatim) with its report, for when it all fits.
fn uncompacted(
    messages: &[Message],
    tier: &[Option<Tier>],
    costs: &Costs<'_>,
    mut report: CompactReport,
    whole: u32,
) -> Compacted {
    let tiers: Vec<Tier> = tier.iter().map(|t| t.unwrap_or(Tier::Verbatim)).collect();
    report.tokens_before = Some(whole);
    report.tokens_total = whole;
    report.tiers = tier_stats(&tiers, &costs.v, &[(Tier::Verbatim, 0)]);
    Compacted {
        messages: messages.to_vec(),
        tiers,
        report,
    }
}
