//! How one budget is split between a conversation's compacted history and the code, when a
//! context request brings both: the history gets at most a fixed share, the code gets the rest
//! (including whatever room the history did not use), and the call is held to — and metered
//! against — the whole budget.

/// Largest share of a context budget the history may take when it does not fit whole, as
/// (numerator, denominator): the rest is for code. A protected part larger than this is
/// refused, so a long conversation cannot crowd the code out of the prompt.
pub const CONTEXT_HISTORY_SHARE: (u32, u32) = (1, 2);

/// A context budget split between the compacted history and the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetSplit {
    /// Tokens the compacted history took.
    pub history: u32,
    /// Tokens left for the code: the budget less the history, so history room left unused
    /// goes to the code.
    pub code: u32,
}

impl BudgetSplit {
    /// The room compaction gets of `budget`: [`CONTEXT_HISTORY_SHARE`] of it, at least one
    /// token (compaction refuses a zero budget).
    pub fn history_room(budget: u32) -> u32 {
        let (num, den) = CONTEXT_HISTORY_SHARE;
        let share = u64::from(budget) * u64::from(num) / u64::from(den);
        u32::try_from(share).unwrap_or(u32::MAX).max(1)
    }

    /// The smallest budget whose history room holds `history_tokens` (what a refusal tells the
    /// caller to raise the budget to).
    pub fn budget_needed(history_tokens: u32) -> u32 {
        let (num, den) = CONTEXT_HISTORY_SHARE;
        let needed = u64::from(history_tokens) * u64::from(den) / u64::from(num);
        u32::try_from(needed).unwrap_or(u32::MAX)
    }

    /// The split of `budget` once the history took `history` tokens of its room: the code gets
    /// all the rest.
    pub fn after_history(budget: u32, history: u32) -> Self {
        Self {
            history,
            code: budget.saturating_sub(history),
        }
    }

    /// What the whole call is held to and metered against: history and code together.
    pub fn total(self) -> u64 {
        u64::from(self.history) + u64::from(self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_gets_half_and_code_the_rest() {
        assert_eq!(BudgetSplit::history_room(8_000), 4_000);
        assert_eq!(BudgetSplit::history_room(7), 3);
        assert_eq!(BudgetSplit::history_room(1), 1);
        assert_eq!(BudgetSplit::history_room(u32::MAX), u32::MAX / 2);
        // Unused history room goes back to the code; the total is the budget.
        let split = BudgetSplit::after_history(8_000, 1_200);
        assert_eq!(
            split,
            BudgetSplit {
                history: 1_200,
                code: 6_800
            }
        );
        assert_eq!(split.total(), 8_000);
        assert_eq!(BudgetSplit::budget_needed(4_000), 8_000);
        assert_eq!(BudgetSplit::budget_needed(u32::MAX), u32::MAX);
    }
}
