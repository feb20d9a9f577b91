//! The plan for the room the protected part leaves: which older units are summarized, which come
//! back whole (for the query, then the newest while they fit), and what the aggregate may take.

use crate::catalog::TokenizerSpec;
use crate::history::message::Message;

use super::aggregate::render_aggregate;
use super::recall::best_matches;
use super::report::Tier;
use super::units::{Costs, Unit};

/// The room left after the protected part and how it is shared out.
pub(super) struct Room {
    /// Tokens left once the protected part is counted.
    pub(super) total: u32,
    /// What the units' summaries may use: `total` less what is set aside for recall.
    plan: u64,
    /// Messages in the first `k` units, for every `k` (`nu + 1` entries).
    msgs_before: Vec<u64>,
}

impl Room {
    /// What the aggregate of the oldest `k` units keeps back, so the split never starves it.
    pub(super) fn reserve(&self, k: usize) -> u64 {
        if k == 0 {
            0
        } else {
            // ~7 tokens a message (a ~60-token line per ten), a header, and at most a third of
            // the room: the aggregate is what gives way when space is short.
            (40 + 7 * self.msgs_before[k]).min((u64::from(self.total) / 3).max(40))
        }
    }
}

/// Shares out `room` before any summary is made, so the query's best matches (returned with it,
/// best first) can come back whole: up to a quarter of the room is set aside for them.
pub(super) fn split_room(
    units: &mut [Unit],
    costs: &mut Costs<'_>,
    messages: &[Message],
    query: Option<&str>,
    room: u32,
) -> (Room, Vec<(u32, f32)>) {
    // The split: the oldest `k` units go to the aggregate, the rest are summarized. Newer detail
    // beats older breadth: units are summarized from the newest back while the aggregate keeps
    // its reserve.
    let nu = units.len();
    let mut msgs_before = vec![0u64; nu + 1];
    for j in 0..nu {
        msgs_before[j + 1] = msgs_before[j] + units[j].msgs.len() as u64;
    }
    // With a query, room is set aside first for the best matches to come back whole (up to a
    // quarter of the room).
    let hits = best_matches(units, messages, query);
    for h in &hits {
        units[h.0 as usize].count(costs);
    }
    let recall_reserve = hits
        .iter()
        .map(|h| u64::from(units[h.0 as usize].verbatim))
        .sum::<u64>()
        .min(u64::from(room) / 4);
    let plan = u64::from(room) - recall_reserve;
    let room = Room {
        total: room,
        plan,
        msgs_before,
    };
    (room, hits)
}

/// Summarizes from the newest unit back while the summaries and the aggregate's reserve fit, so
/// units that end up in the aggregate are never summarized one by one. Returns `k` (the units
/// before it go to the aggregate) and what the summarized suffix costs.
pub(super) fn summarize_newest_first(
    units: &mut [Unit],
    costs: &mut Costs<'_>,
    room: &Room,
    mut summarize: impl FnMut(&mut Unit),
) -> (usize, u64) {
    let mut k = units.len();
    let mut suffix_k = 0u64;
    while k > 0 {
        let j = k - 1;
        units[j].count(costs);
        summarize(&mut units[j]);
        let with = suffix_k + u64::from(units[j].summary_cost());
        if with + room.reserve(j) > room.plan {
            break;
        }
        suffix_k = with;
        k = j;
    }
    (k, suffix_k)
}

/// Gives each unit its planned tier: aggregated before `k`, else verbatim when its summary saves
/// nothing, else summarized.
pub(super) fn assign_tiers(units: &mut [Unit], k: usize) {
    for (j, u) in units.iter_mut().enumerate() {
        u.tier = if j < k {
            Tier::Aggregated
        } else if u.summary_cost() == u.verbatim {
            Tier::Verbatim
        } else {
            Tier::Summarized
        };
    }
}

/// Brings the query's matches back whole, best first, while `slack` pays for them, so what the
/// caller asks about is not left as a summary.
pub(super) fn recall_matches(units: &mut [Unit], hits: Vec<(u32, f32)>, slack: &mut u64) {
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
        if delta <= *slack {
            *slack -= delta;
            u.tier = Tier::Recalled;
        }
    }
}

/// Turns summarized units back to verbatim from the newest while `slack` pays for them, so the
/// verbatim part stays one contiguous recent stretch.
pub(super) fn restore_newest(summarized: &mut [Unit], slack: &mut u64) {
    // Newest older units back to verbatim while they fit (a contiguous recent stretch).
    for u in summarized.iter_mut().rev() {
        if u.tier != Tier::Summarized {
            continue;
        }
        let delta = u64::from(u.verbatim - u.summary_cost());
        if delta > *slack {
            break;
        }
        *slack -= delta;
        u.tier = Tier::Verbatim;
    }
}

/// Renders the aggregate in whatever room the other units leave, and marks as dropped the
/// aggregated units it could not cover, so nothing is counted as kept that is not.
pub(super) fn fill_aggregate(
    units: &mut [Unit],
    messages: &[Message],
    tok: &TokenizerSpec,
    room: &Room,
) -> Option<Message> {
    // The aggregate gets whatever is left.
    let used: u64 = units
        .iter()
        .map(|u| match u.tier {
            Tier::Recalled | Tier::Verbatim => u64::from(u.verbatim),
            Tier::Summarized => u64::from(u.summary_cost()),
            _ => 0,
        })
        .sum();
    let cap = u64::from(room.total).saturating_sub(used);
    let agg_msgs: Vec<(usize, &Message)> = units
        .iter()
        .filter(|u| u.tier == Tier::Aggregated)
        .flat_map(|u| u.msgs.iter().map(|&i| (i, &messages[i])))
        .collect();
    let (aggregate, covered) = render_aggregate(&agg_msgs, cap, tok);
    for u in units.iter_mut() {
        if u.tier == Tier::Aggregated && !u.msgs.iter().all(|i| covered.binary_search(i).is_ok()) {
            u.tier = Tier::Dropped;
        }
    }
    aggregate
}
