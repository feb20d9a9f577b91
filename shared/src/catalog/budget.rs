//! How many tokens of context a request may use.
//!
//! The default policy is the 75 % rule: context takes at most three quarters of the model's
//! window, which leaves the rest for the reply and the system prompt. Both the share and the
//! reserves are configurable. An explicit budget is honoured as given, except that a budget
//! larger than the model's whole window is refused: clipping it silently would break the
//! caller's expectation that what they asked for is what they get.
//!
//! A request that names neither a budget nor a model gets [`DEFAULT_BUDGET`], with
//! [`default_budget_warning`] saying so: every host (command line, HTTP, MCP) answers it the same
//! way. A budget under [`MIN_BUDGET`] holds no code, so assembling refuses it
//! ([`BudgetError::TooSmall`]) rather than answer with the query alone.

use serde::Serialize;

use super::model::{Model, TokenizerSpec};
use crate::error_code::ErrorCode;
use crate::tokens::Encoding;

/// The budget of a request that names neither a budget nor a model. It stays well under what an
/// MCP client takes in one tool result (Claude Code: 25,000 tokens) and leaves most of any
/// current model's window to the conversation.
pub const DEFAULT_BUDGET: u32 = 16_000;

/// The smallest budget an assembled prompt can hold code in: the task heading and the query, one
/// piece's header and a few lines of it. Below it a prompt would carry the query alone.
pub const MIN_BUDGET: u32 = 64;

/// The warning of a request that got [`DEFAULT_BUDGET`], the same on every host.
pub fn default_budget_warning() -> String {
    format!(
        "no budget given: {DEFAULT_BUDGET} tokens, the default; pass a budget, or a model whose \
         window sets it, for more or less"
    )
}

/// How a model's window is shared between context, reply and system prompt.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BudgetPolicy {
    /// Largest share of the window the context may take (0 < share ≤ 1).
    pub context_share: f64,
    /// Tokens kept free for the reply; `None` leaves it to `context_share`.
    pub reserve_reply: Option<u32>,
    /// Tokens the caller's own system prompt will take.
    pub system_prompt_tokens: u32,
}

impl Default for BudgetPolicy {
    fn default() -> Self {
        Self {
            context_share: 0.75,
            reserve_reply: None,
            system_prompt_tokens: 0,
        }
    }
}

/// A model's window as the policy divides it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ModelBudget {
    /// The whole window.
    pub window: u32,
    /// Tokens left for context.
    pub usable: u32,
    /// Tokens reserved for the reply.
    pub reply_reserve: u32,
    /// Tokens reserved for the system prompt.
    pub system_prompt: u32,
}

impl BudgetPolicy {
    /// Divides `model`'s window.
    pub fn divide(&self, model: &Model) -> ModelBudget {
        let window = model.context_window;
        let share = self.context_share.clamp(0.0, 1.0);
        let by_share = (f64::from(window) * share).floor() as u32;
        let reply_reserve = match self.reserve_reply {
            Some(r) => r.max(window - by_share.min(window)),
            None => window - by_share.min(window),
        };
        let usable = window
            .saturating_sub(reply_reserve)
            .min(model.max_input.unwrap_or(u32::MAX))
            .saturating_sub(self.system_prompt_tokens);
        ModelBudget {
            window,
            usable,
            reply_reserve,
            system_prompt: self.system_prompt_tokens,
        }
    }
}

/// The budget a request will be held to, in its parts, and how its tokens are counted.
///
/// A context request that brings a conversation spends one budget on two things: the compacted
/// history first, then the composed prompt (its framing and code) in what is left
/// ([`Self::after_history`]). The parts travel together from the host's route to the composer,
/// which reads only [`Self::budget`], and back to the answer, which reports [`Self::whole`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResolvedBudget {
    /// The hard limit on the composed prompt, in the model's tokens: the request's budget less
    /// [`Self::history`].
    pub budget: u32,
    /// Tokens of the request's budget the compacted conversation took (0 without one).
    pub history: u32,
    /// How tokens are counted.
    pub tokenizer: TokenizerSpec,
    /// The model, when one was named.
    pub model: Option<String>,
    /// The model's window as divided, when one was named.
    pub window: Option<ModelBudget>,
    /// Things the caller should know (over the usable share, estimated counts).
    pub warnings: Vec<String>,
}

impl ResolvedBudget {
    /// This budget once a conversation took `history` tokens of it: the prompt is held to the
    /// rest, so history room left unused goes to the code. Compaction holds the history to its
    /// share ([`crate::history::history_room`]), so [`Self::whole`] stays the budget resolved.
    pub fn after_history(self, history: u32) -> Self {
        Self {
            budget: self.budget.saturating_sub(history),
            history,
            ..self
        }
    }

    /// The request's whole budget, conversation and prompt together: what the call is held to
    /// and metered against.
    pub fn whole(&self) -> u32 {
        self.budget.saturating_add(self.history)
    }
}

/// Why a budget cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BudgetError {
    /// A zero budget.
    #[error("budget must be at least 1 token")]
    Zero,
    /// More than the model can take.
    #[error(
        "budget {budget} exceeds the {window}-token limit of {model} (its context window, or its input limit \
         when lower); use --budget {usable} or less (its usable share after reserving the reply), or choose a \
         model with a larger window"
    )]
    ExceedsWindow {
        /// What was asked for.
        budget: u32,
        /// The model.
        model: String,
        /// Its window.
        window: u32,
        /// Its usable share.
        usable: u32,
    },
    /// The policy leaves nothing for context.
    #[error("the budget policy leaves no room for context in {model}'s {window}-token window")]
    NothingUsable {
        /// The model.
        model: String,
        /// Its window.
        window: u32,
    },
    /// Too small to hold any code ([`MIN_BUDGET`]); refused when assembling context.
    #[error(
        "a budget of {budget} tokens holds no code beside the query; the smallest useful budget is \
         {needed} tokens"
    )]
    TooSmall {
        /// What was asked for.
        budget: u32,
        /// The smallest useful budget.
        needed: u32,
    },
}

impl BudgetError {
    /// The machine-readable code every host reports for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            BudgetError::Zero => ErrorCode::BudgetZero,
            BudgetError::ExceedsWindow { .. } => ErrorCode::BudgetExceedsWindow,
            BudgetError::NothingUsable { .. } => ErrorCode::BudgetNothingUsable,
            BudgetError::TooSmall { .. } => ErrorCode::BudgetTooSmall,
        }
    }
}

/// Turns a request's model and budget into the limit its prompt is held to.
///
/// Without a model, counts are exact `default_encoding` counts; without a budget either, the
/// limit is [`DEFAULT_BUDGET`], with a warning.
pub fn resolve_budget(
    model: Option<&Model>,
    budget: Option<u32>,
    policy: &BudgetPolicy,
    default_encoding: Encoding,
) -> Result<ResolvedBudget, BudgetError> {
    if budget == Some(0) {
        return Err(BudgetError::Zero);
    }
    let Some(model) = model else {
        let (budget, warnings) = match budget {
            Some(b) => (b, Vec::new()),
            None => (DEFAULT_BUDGET, vec![default_budget_warning()]),
        };
        return Ok(ResolvedBudget {
            budget,
            history: 0,
            tokenizer: TokenizerSpec::Exact(default_encoding),
            model: None,
            window: None,
            warnings,
        });
    };
    let divided = policy.divide(model);
    let mut warnings = Vec::new();
    let budget = match budget {
        Some(b) if b > model.max_input.unwrap_or(divided.window) => {
            return Err(BudgetError::ExceedsWindow {
                budget: b,
                model: model.id.clone(),
                window: model.max_input.unwrap_or(divided.window),
                usable: divided.usable,
            });
        }
        Some(b) => {
            if b > divided.usable {
                warnings.push(format!(
                    "budget {b} is over {}'s usable share ({} of {} tokens); {} tokens remain for the reply",
                    model.id,
                    divided.usable,
                    divided.window,
                    divided.window - b
                ));
            }
            b
        }
        None if divided.usable == 0 => {
            return Err(BudgetError::NothingUsable {
                model: model.id.clone(),
                window: divided.window,
            });
        }
        None => divided.usable,
    };
    if let TokenizerSpec::Estimate { base, ratio } = model.tokenizer {
        warnings.push(format!(
            "{} has no public tokenizer: counts are estimates ({} tokens x {ratio}, rounded up)",
            model.id,
            base.name()
        ));
    }
    Ok(ResolvedBudget {
        budget,
        history: 0,
        tokenizer: model.tokenizer,
        model: Some(model.id.clone()),
        window: Some(divided),
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn seventy_five_percent_rule() {
        let c = Catalog::builtin();
        let m = c.resolve("gpt-4o").unwrap();
        let d = BudgetPolicy::default().divide(m);
        assert_eq!(d.usable, m.context_window / 4 * 3);
        let d = BudgetPolicy {
            system_prompt_tokens: 1000,
            ..Default::default()
        }
        .divide(m);
        assert_eq!(d.usable, m.context_window / 4 * 3 - 1000);
        let d = BudgetPolicy {
            reserve_reply: Some(m.context_window / 2),
            ..Default::default()
        }
        .divide(m);
        assert_eq!(d.usable, m.context_window - m.context_window / 2);
    }

    #[test]
    fn input_limit_caps_usable_and_budget() {
        let c = Catalog::builtin();
        let m = c.resolve("gpt-5").unwrap();
        assert_eq!(m.max_input, Some(272_000));
        assert_eq!(BudgetPolicy::default().divide(m).usable, 272_000);
        let err = resolve_budget(
            Some(m),
            Some(300_000),
            &BudgetPolicy::default(),
            Encoding::O200kBase,
        );
        assert!(matches!(
            err,
            Err(BudgetError::ExceedsWindow {
                window: 272_000,
                ..
            })
        ));
    }

    #[test]
    fn over_window_is_refused_with_the_limit() {
        let c = Catalog::builtin();
        let m = c.resolve("gpt-4o").unwrap();
        let err = resolve_budget(
            Some(m),
            Some(m.context_window + 1),
            &BudgetPolicy::default(),
            Encoding::O200kBase,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&m.context_window.to_string()), "{text}");
        assert!(text.contains("--budget"), "{text}");
        assert_eq!(
            resolve_budget(None, Some(0), &BudgetPolicy::default(), Encoding::O200kBase),
            Err(BudgetError::Zero)
        );
    }

    #[test]
    fn neither_budget_nor_model_gets_the_default_with_a_warning() {
        let r = resolve_budget(None, None, &BudgetPolicy::default(), Encoding::O200kBase).unwrap();
        assert_eq!(r.budget, DEFAULT_BUDGET);
        assert_eq!(r.tokenizer, TokenizerSpec::Exact(Encoding::O200kBase));
        assert_eq!(r.warnings, vec![default_budget_warning()]);
        assert!(r.warnings[0].contains("16000"), "{:?}", r.warnings);
        let r = resolve_budget(
            None,
            Some(500),
            &BudgetPolicy::default(),
            Encoding::O200kBase,
        )
        .unwrap();
        assert_eq!(r.budget, 500);
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn history_takes_its_part_and_the_prompt_the_rest() {
        let r = resolve_budget(
            None,
            Some(8_000),
            &BudgetPolicy::default(),
            Encoding::O200kBase,
        )
        .unwrap();
        assert_eq!((r.budget, r.history, r.whole()), (8_000, 0, 8_000));
        let r = r.after_history(1_200);
        assert_eq!((r.budget, r.history, r.whole()), (6_800, 1_200, 8_000));
        let r = resolve_budget(None, Some(1), &BudgetPolicy::default(), Encoding::O200kBase)
            .unwrap()
            .after_history(1);
        assert_eq!((r.budget, r.history, r.whole()), (0, 1, 1));
    }

    #[test]
    fn too_small_names_the_minimum() {
        assert!(MIN_BUDGET < DEFAULT_BUDGET);
        let e = BudgetError::TooSmall {
            budget: 8,
            needed: MIN_BUDGET,
        };
        assert_eq!(e.code(), "budget_too_small");
        let text = e.to_string();
        assert!(text.contains(&MIN_BUDGET.to_string()), "{text}");
        assert!(text.contains(" 8 "), "{text}");
    }

    #[test]
    fn model_alone_gives_usable_and_estimates_warn() {
        let c = Catalog::builtin();
        let m = c.models().iter().find(|m| !m.tokenizer.is_exact()).unwrap();
        let r =
            resolve_budget(Some(m), None, &BudgetPolicy::default(), Encoding::O200kBase).unwrap();
        assert_eq!(r.budget, BudgetPolicy::default().divide(m).usable);
        assert!(r.warnings.iter().any(|w| w.contains("estimate")));
    }
}
