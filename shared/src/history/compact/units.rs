//! The older messages a compaction can shrink, grouped so that what belongs together (an agent's
//! tool calls and their results) is summarized, kept or given up together.

use crate::catalog::TokenizerSpec;
use crate::history::message::{Message, Role, message_tokens};

use super::report::Tier;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UnitKind {
    Message,
    AgentTurn,
}

/// Older messages handled together: one chat message, or an agent turn.
pub(super) struct Unit {
    pub(super) msgs: Vec<usize>,
    pub(super) kind: UnitKind,
    pub(super) verbatim: u32,
    pub(super) summary: Option<Message>,
    pub(super) summary_tokens: u32,
    pub(super) cached: bool,
    pub(super) tier: Tier,
}

impl Unit {
    /// Tokens at summary level (never more than verbatim: a summary longer than its message is
    /// not used).
    pub(super) fn summary_cost(&self) -> u32 {
        self.summary_tokens.min(self.verbatim)
    }
}

/// Where each round starts: at a user message, or at an assistant message that follows a tool
/// result (the next step of an agent run). Instruction messages belong to no round.
pub(super) fn round_starts(messages: &[Message]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut prev: Option<Role> = None;
    for (i, m) in messages.iter().enumerate() {
        if m.role.is_instruction() {
            continue;
        }
        let starts_round = match m.role {
            Role::User => true,
            Role::Assistant => matches!(prev, Some(Role::Tool | Role::Function)),
            _ => false,
        } || prev.is_none();
        if starts_round {
            starts.push(i);
        }
        prev = Some(m.role);
    }
    starts
}

/// Message costs, counted on first use: on a long conversation most messages end up in the
/// aggregate, and counting them would be most of the work.
pub(super) struct Costs<'a> {
    pub(super) v: Vec<Option<u32>>,
    pub(super) tok: &'a TokenizerSpec,
    pub(super) messages: &'a [Message],
}

impl Costs<'_> {
    pub(super) fn get(&mut self, i: usize) -> u32 {
        *self.v[i].get_or_insert_with(|| message_tokens(self.tok, &self.messages[i]))
    }
}

impl Unit {
    /// Counts the unit's messages (once).
    pub(super) fn count(&mut self, costs: &mut Costs<'_>) {
        if self.verbatim == u32::MAX {
            self.verbatim = self
                .msgs
                .iter()
                .fold(0u32, |a, &i| a.saturating_add(costs.get(i)))
                .min(u32::MAX - 1);
            self.summary_tokens = self.verbatim;
        }
    }
}

fn new_unit(msgs: Vec<usize>, kind: UnitKind) -> Unit {
    Unit {
        msgs,
        kind,
        verbatim: u32::MAX,
        summary: None,
        summary_tokens: u32::MAX,
        cached: false,
        tier: Tier::Summarized,
    }
}

/// The older rounds' units, oldest first: each older round's user message alone; the rest of the
/// round one agent turn when it uses tools (a pinned message inside protects the whole turn, so
/// tool calls and results stay paired), else one unit per message. `tier` holds what is already
/// protected before the call.
pub(super) fn older_units(
    messages: &[Message],
    starts: &[usize],
    keep_from: usize,
    tier: &mut [Option<Tier>],
) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    let mut bounds: Vec<usize> = starts.iter().copied().filter(|&s| s < keep_from).collect();
    bounds.push(keep_from);
    for w in bounds.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let mut rest_from = lo;
        if messages[lo].role == Role::User {
            rest_from = lo + 1;
            if tier[lo].is_none() {
                units.push(new_unit(vec![lo], UnitKind::Message));
            }
        }
        let rest: Vec<usize> = (rest_from..hi)
            .filter(|&i| !messages[i].role.is_instruction())
            .collect();
        let agent = rest.iter().any(|&i| messages[i].is_tool_activity());
        if agent {
            if rest.iter().any(|&i| tier[i].is_some()) {
                for &i in &rest {
                    tier[i].get_or_insert(Tier::Pinned);
                }
            } else if !rest.is_empty() {
                units.push(new_unit(rest, UnitKind::AgentTurn));
            }
        } else {
            for i in rest {
                if tier[i].is_none() {
                    units.push(new_unit(vec![i], UnitKind::Message));
                }
            }
        }
    }
    units
}
