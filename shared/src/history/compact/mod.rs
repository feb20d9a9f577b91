//! The compaction walk: which tier each message gets under the budget. The parts it leans on
//! (options, report, units, recall, summaries, the aggregate) live in their own modules so this
//! file reads as the plan alone.

mod aggregate;
mod options;
mod recall;
mod report;
mod summarizer;
mod unit_summary;
mod units;

use std::collections::BTreeMap;

use crate::catalog::TokenizerSpec;
use crate::history::cache::SummaryCache;
use crate::history::message::{
    CONVERSATION_OVERHEAD, Message, conversation_tokens, message_tokens,
};

pub use options::{CompactError, CompactOptions, DEFAULT_KEEP_ROUNDS};
pub use report::{CompactReport, Compacted, SummaryEntry, Tier, TierStats};
pub use summarizer::{Extractive, Summarizer, SummaryInput, SummaryKind, render_for_summary};

use aggregate::render_aggregate;
use recall::best_matches;
use report::tier_stats;
use unit_summary::summarize_unit;
use units::{Costs, UnitKind, older_units, round_starts};

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
    let keep_from = if opts.keep_rounds == 0 {
        n
    } else if starts.len() <= opts.keep_rounds {
        0
    } else {
        starts[starts.len() - opts.keep_rounds]
    };
    let mut tier: Vec<Option<Tier>> = messages
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
        .collect();

    // Units: the older messages, grouped the way they will be summarized or kept.
    let mut units = older_units(messages, &starts, keep_from, &mut tier);

    let protected_tokens = (0..n)
        .filter(|&i| tier[i].is_some())
        .fold(CONVERSATION_OVERHEAD, |a, i| a.saturating_add(costs.get(i)));
    if protected_tokens > opts.budget {
        return Err(CompactError::BudgetTooSmall {
            needed: protected_tokens,
            budget: opts.budget,
            keep_rounds: opts.keep_rounds,
        });
    }

    let mut report = CompactReport {
        budget: opts.budget,
        tokens_before: None,
        tokens_total: 0,
        messages_before: n,
        messages_after: n,
        rounds: starts.len(),
        keep_rounds: opts.keep_rounds,
        tiers: BTreeMap::new(),
        summarized: Vec::new(),
        aggregated: Vec::new(),
        recalled: Vec::new(),
        dropped: Vec::new(),
        dropped_ids: Vec::new(),
        summarizer: summarizer.version(),
        cache_hits: 0,
        cache_misses: 0,
    };

    // Does it all fit? Counted newest first, stopping as soon as it cannot.
    let mut whole = CONVERSATION_OVERHEAD;
    for i in (0..n).rev() {
        whole = whole.saturating_add(costs.get(i));
        if whole > opts.budget {
            break;
        }
    }
    if whole <= opts.budget {
        let tiers: Vec<Tier> = tier.iter().map(|t| t.unwrap_or(Tier::Verbatim)).collect();
        report.tokens_before = Some(whole);
        report.tokens_total = whole;
        report.tiers = tier_stats(&tiers, &costs.v, &[(Tier::Verbatim, 0)]);
        return Ok(Compacted {
            messages: messages.to_vec(),
            tiers,
            report,
        });
    }

    // The split: the oldest `k` units go to the aggregate, the rest are summarized. Newer detail
    // beats older breadth: units are summarized from the newest back while the aggregate keeps
    // its reserve.
    let room = opts.budget - protected_tokens;
    let nu = units.len();
    let mut msgs_before = vec![0u64; nu + 1];
    for j in 0..nu {
        msgs_before[j + 1] = msgs_before[j] + units[j].msgs.len() as u64;
    }
    let reserve = |k: usize| -> u64 {
        if k == 0 {
            0
        } else {
            // ~7 tokens a message (a ~60-token line per ten), a header, and at most a third of
            // the room: the aggregate is what gives way when space is short.
            (40 + 7 * msgs_before[k]).min((u64::from(room) / 3).max(40))
        }
    };
    // With a query, room is set aside first for the best matches to come back whole (up to a
    // quarter of the room).
    let hits = best_matches(&units, messages, opts.query.as_deref());
    for h in &hits {
        units[h.0 as usize].count(&mut costs);
    }
    let recall_reserve = hits
        .iter()
        .map(|h| u64::from(units[h.0 as usize].verbatim))
        .sum::<u64>()
        .min(u64::from(room) / 4);
    let plan_room = u64::from(room) - recall_reserve;
    // Summaries are made newest first and only as far as they can be used: the units that end
    // up in the aggregate are never summarized one by one.
    let mut k = nu;
    let mut suffix_k = 0u64;
    while k > 0 {
        let j = k - 1;
        units[j].count(&mut costs);
        summarize_unit(&mut units[j], messages, tok, cache, summarizer, &mut report);
        let with = suffix_k + u64::from(units[j].summary_cost());
        if with + reserve(j) > plan_room {
            break;
        }
        suffix_k = with;
        k = j;
    }
    for (j, u) in units.iter_mut().enumerate() {
        u.tier = if j < k {
            Tier::Aggregated
        } else if u.summary_cost() == u.verbatim {
            Tier::Verbatim
        } else {
            Tier::Summarized
        };
    }
    let mut slack = u64::from(room).saturating_sub(suffix_k + reserve(k));

    // Recall for the query: whole messages instead of their summaries, best match first.
    for (doc, _) in hits {
        let u = &mut units[doc as usize];
        if u.tier == Tier::Verbatim {
            continue;
        }
        let now = if u.tier == Tier::Aggregated {
            0
        } else {
            u.summary_cost()
        };
        let delta = u64::from(u.verbatim - now);
        if delta <= slack {
            slack -= delta;
            u.tier = Tier::Recalled;
        }
    }
    // Newest older units back to verbatim while they fit (a contiguous recent stretch).
    for u in units[k..].iter_mut().rev() {
        if u.tier != Tier::Summarized {
            continue;
        }
        let delta = u64::from(u.verbatim - u.summary_cost());
        if delta > slack {
            break;
        }
        slack -= delta;
        u.tier = Tier::Verbatim;
    }

    // The aggregate gets whatever is left.
    let used: u64 = units
        .iter()
        .map(|u| match u.tier {
            Tier::Recalled | Tier::Verbatim => u64::from(u.verbatim),
            Tier::Summarized => u64::from(u.summary_cost()),
            _ => 0,
        })
        .sum();
    let cap = u64::from(room).saturating_sub(used);
    let agg_msgs: Vec<(usize, &Message)> = units
        .iter()
        .filter(|u| u.tier == Tier::Aggregated)
        .flat_map(|u| u.msgs.iter().map(|&i| (i, &messages[i])))
        .collect();
    let (aggregate, covered) = render_aggregate(&agg_msgs, cap, tok);
    for u in &mut units {
        if u.tier == Tier::Aggregated && !u.msgs.iter().all(|i| covered.binary_search(i).is_ok()) {
            u.tier = Tier::Dropped;
        }
    }

    // Assemble in order.
    let mut out: Vec<(Message, Tier, usize)> = Vec::with_capacity(n);
    let mut unit_of = vec![usize::MAX; n];
    for (j, u) in units.iter().enumerate() {
        for &i in &u.msgs {
            unit_of[i] = j;
        }
    }
    let first_aggregated = units
        .iter()
        .position(|u| u.tier == Tier::Aggregated)
        .map(|j| units[j].msgs[0]);
    let mut agg_tokens = 0;
    let mut aggregate = aggregate;
    for i in 0..n {
        if Some(i) == first_aggregated
            && let Some(a) = aggregate.take()
        {
            agg_tokens = message_tokens(tok, &a);
            out.push((a, Tier::Aggregated, i));
        }
        if let Some(t) = tier[i] {
            out.push((messages[i].clone(), t, i));
            continue;
        }
        let u = &units[unit_of[i]];
        tier[i] = Some(u.tier);
        match u.tier {
            Tier::Recalled | Tier::Verbatim => out.push((messages[i].clone(), u.tier, i)),
            Tier::Summarized if u.msgs[0] == i => {
                if let Some(s) = &u.summary {
                    out.push((s.clone(), Tier::Summarized, i));
                }
            }
            _ => {}
        }
    }

    // The guarantee, checked on the result itself. The plan above is exact by construction
    // (costs are additive and the aggregate was counted whole); this only guards against a
    // future mistake by giving up the oldest unprotected output first.
    let mut result: Vec<Message> = out.iter().map(|(m, _, _)| m.clone()).collect();
    let mut total = conversation_tokens(tok, &result);
    while total > opts.budget {
        let Some(pos) = out.iter().position(|(_, t, _)| !t.is_protected()) else {
            break;
        };
        let (_, t, i) = out.remove(pos);
        if t == Tier::Aggregated {
            agg_tokens = 0;
            for x in tier.iter_mut().filter(|x| **x == Some(Tier::Aggregated)) {
                *x = Some(Tier::Dropped);
            }
        } else if let Some(u) = units.get(unit_of[i]) {
            for &m in &u.msgs {
                tier[m] = Some(Tier::Dropped);
            }
        }
        result = out.iter().map(|(m, _, _)| m.clone()).collect();
        total = conversation_tokens(tok, &result);
    }

    let tiers: Vec<Tier> = tier.iter().map(|t| t.unwrap_or(Tier::Dropped)).collect();
    for u in &units {
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
    let summarized_after: u32 = report.summarized.iter().map(|s| s.tokens_after).sum();
    if opts.exact_stats {
        for i in 0..n {
            costs.get(i);
        }
    }
    report.tokens_before = costs
        .v
        .iter()
        .try_fold(CONVERSATION_OVERHEAD, |a, c| c.map(|c| a.saturating_add(c)));
    report.tiers = tier_stats(
        &tiers,
        &costs.v,
        &[
            (Tier::Summarized, summarized_after),
            (Tier::Aggregated, agg_tokens),
        ],
    );
    report.tokens_total = total;
    report.messages_after = result.len();
    Ok(Compacted {
        messages: result,
        tiers,
        report,
    })
}
