//! The compacted conversation put together: every message in its planned form, in the original
//! order, and the final check that the result really is within the budget.

use crate::catalog::TokenizerSpec;
use crate::history::message::{Message, conversation_tokens, message_tokens};

use super::report::Tier;
use super::units::Unit;

/// The output before the final check: each message with its tier and the input index it came
/// from, and what the aggregate message costs.
pub(super) struct Assembled {
    out: Vec<(Message, Tier, usize)>,
    /// The unit each input message belongs to (`usize::MAX` for protected messages).
    unit_of: Vec<usize>,
    pub(super) agg_tokens: u32,
}

/// Lays out the output in input order (the aggregate where its first message was), and records
/// each older message's tier in `tier`, so the result reads as the original conversation did.
pub(super) fn assemble(
    messages: &[Message],
    units: &[Unit],
    tier: &mut [Option<Tier>],
    aggregate: Option<Message>,
    tok: &TokenizerSpec,
) -> Assembled {
    // Assemble in order.
    let n = messages.len();
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
    Assembled {
        out,
        unit_of,
        agg_tokens,
    }
}

/// Checks the guarantee on the result itself, giving up the oldest unprotected output first while
/// it is over `budget`; returns the messages and their total.
pub(super) fn within_budget(
    a: &mut Assembled,
    tier: &mut [Option<Tier>],
    units: &[Unit],
    tok: &TokenizerSpec,
    budget: u32,
) -> (Vec<Message>, u32) {
    // The guarantee, checked on the result itself. The plan above is exact by construction
    // (costs are additive and the aggregate was counted whole); this only guards against a
    // future mistake by giving up the oldest unprotected output first.
    let mut result: Vec<Message> = a.out.iter().map(|(m, _, _)| m.clone()).collect();
    let mut total = conversation_tokens(tok, &result);
    while total > budget {
        let Some(pos) = a.out.iter().position(|(_, t, _)| !t.is_protected()) else {
            break;
        };
        let (_, t, i) = a.out.remove(pos);
        if t == Tier::Aggregated {
            a.agg_tokens = 0;
            for x in tier.iter_mut().filter(|x| **x == Some(Tier::Aggregated)) {
                *x = Some(Tier::Dropped);
            }
        } else if let Some(u) = units.get(a.unit_of[i]) {
            for &m in &u.msgs {
                tier[m] = Some(Tier::Dropped);
            }
        }
        result = a.out.iter().map(|(m, _, _)| m.clone()).collect();
        total = conversation_tokens(tok, &result);
    }
    (result, total)
}
