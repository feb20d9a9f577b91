//! How one budget is shared between a conversation's compacted history and the code, when a
//! context request brings both: the history gets at most a fixed share, the code gets the rest
//! (including whatever room the history did not use,
//! [`ResolvedBudget::after_history`](crate::catalog::ResolvedBudget::after_history)), and the
//! call is held to — and metered against — the whole budget.

/// Largest share of a context budget the history may take when it does not fit whole, as
/// (numerator, denominator): the rest is for code. A protected part larger than this is
/// refused, so a long conversation cannot crowd the code out of the prompt.
pub const CONTEXT_HISTORY_SHARE: (u32, u32) = (1, 2);

/// The room compaction gets of `budget`: [`CONTEXT_HISTORY_SHARE`] of it, at least one token
/// (compaction refuses a zero budget).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_gets_half_and_code_the_rest() {
        assert_eq!(history_room(8_000), 4_000);
        assert_eq!(history_room(7), 3);
        assert_eq!(history_room(1), 1);
        assert_eq!(history_room(u32::MAX), u32::MAX / 2);
        assert_eq!(budget_needed(4_000), 8_000);
        assert_eq!(budget_needed(u32::MAX), u32::MAX);
    }
}
