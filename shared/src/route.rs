//! Model routing: the cheapest model that can take the prompt and is strong enough for the task.
//!
//! A model qualifies when its usable window (after the reply reserve) holds the prompt plus the
//! expected reply, and its tier meets the one the request's complexity calls for. Among those,
//! the cheapest estimated call wins; ties go to the larger window. Every model considered is
//! reported with why it was or was not chosen, so the decision can be audited.

use serde::Serialize;

use crate::catalog::{BudgetPolicy, Catalog, Model, Tier};

/// One model weighed by the router.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Considered {
    /// Model id.
    pub model: String,
    /// Its tier.
    pub tier: Tier,
    /// Estimated cost of the call in USD (prompt plus reply at list prices).
    pub estimated_cost_usd: f64,
    /// Whether the prompt and reply fit its window.
    pub fits: bool,
    /// Whether its tier meets the task's.
    pub tier_ok: bool,
}

/// The routing decision.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RouteDecision {
    /// The chosen model id.
    pub model: String,
    /// Why, in one sentence.
    pub reason: String,
    /// The tier the request's complexity called for.
    pub required_tier: Tier,
    /// Estimated cost of the call with the chosen model, in USD.
    pub estimated_cost_usd: f64,
    /// The cheapest qualifying alternatives (up to five), chosen one first.
    pub alternatives: Vec<Considered>,
}

/// The tier a task of `complexity` (0-1) needs.
pub fn required_tier(complexity: f32) -> Tier {
    match complexity {
        c if c < 0.25 => Tier::Small,
        c if c < 0.5 => Tier::Medium,
        c if c < 0.8 => Tier::Large,
        _ => Tier::Frontier,
    }
}

/// Estimated USD of one call to `m` with `prompt` input and `reply` output tokens at list
/// prices: what the router ranks by and what a decision reports.
pub fn cost(m: &Model, prompt: u32, reply: u32) -> f64 {
    (f64::from(prompt) * m.input_price_per_mtok + f64::from(reply) * m.output_price_per_mtok)
        / 1_000_000.0
}

/// The decision for a request that named its model: no routing, but the same cost estimate
/// and required tier a routed decision reports, so a client reads one shape either way.
pub fn named(m: &Model, prompt_tokens: u32, reply_tokens: u32, complexity: f32) -> RouteDecision {
    RouteDecision {
        model: m.id.clone(),
        reason: "the request named this model".into(),
        required_tier: required_tier(complexity),
        estimated_cost_usd: cost(m, prompt_tokens, reply_tokens),
        alternatives: Vec::new(),
    }
}

/// Routes a prompt of about `prompt_tokens` expecting `reply_tokens` back. `allowed` limits the
/// choice to those model ids (empty: any priced model). `None` when no model qualifies.
pub fn route(
    catalog: &Catalog,
    policy: &BudgetPolicy,
    prompt_tokens: u32,
    reply_tokens: u32,
    complexity: f32,
    allowed: &[String],
) -> Option<RouteDecision> {
    let need = required_tier(complexity);
    let mut considered: Vec<(Considered, u32)> = catalog
        .models()
        .iter()
        // Unpriced (self-hosted) models are only routed to when the org lists them: they are
        // free only to those who run them.
        .filter(|m| {
            if allowed.is_empty() {
                m.input_price_per_mtok > 0.0 || m.output_price_per_mtok > 0.0
            } else {
                allowed.iter().any(|a| a == &m.id)
            }
        })
        .map(|m| {
            // Estimated tokenizers count more than o200k; scale the prompt to the model's count.
            let prompt = m.tokenizer.scale(prompt_tokens);
            let budget = policy.divide(m);
            let fits = u64::from(prompt) + u64::from(reply_tokens)
                <= u64::from(budget.usable) + u64::from(budget.reply_reserve)
                && prompt <= budget.usable;
            (
                Considered {
                    model: m.id.clone(),
                    tier: m.tier,
                    estimated_cost_usd: cost(m, prompt, reply_tokens),
                    fits,
                    tier_ok: m.tier >= need,
                },
                m.context_window,
            )
        })
        .collect();
    considered.sort_by(|(a, wa), (b, wb)| {
        a.estimated_cost_usd
            .total_cmp(&b.estimated_cost_usd)
            .then(wb.cmp(wa))
            .then(a.model.cmp(&b.model))
    });
    let qualifying: Vec<Considered> = considered
        .into_iter()
        .map(|(c, _)| c)
        .filter(|c| c.fits && c.tier_ok)
        .collect();
    let best = qualifying.first()?.clone();
    Some(RouteDecision {
        reason: format!(
            "cheapest model whose window fits {prompt_tokens} prompt + {reply_tokens} reply tokens \
             with tier {need:?} or above (complexity {complexity:.2})"
        ),
        model: best.model.clone(),
        required_tier: need,
        estimated_cost_usd: best.estimated_cost_usd,
        alternatives: qualifying.into_iter().take(5).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_model_is_priced_like_a_routed_one() {
        let catalog = Catalog::builtin();
        let m = catalog.resolve("gpt-4o").unwrap();
        let d = named(m, 1_431, 2_048, 0.3);
        assert_eq!(d.model, m.id);
        assert_eq!(d.required_tier, required_tier(0.3));
        let by_hand =
            (1_431.0 * m.input_price_per_mtok + 2_048.0 * m.output_price_per_mtok) / 1_000_000.0;
        assert_eq!(d.estimated_cost_usd.to_bits(), by_hand.to_bits());
        assert_eq!(
            m.input_cost(164_024u64).to_bits(),
            (164_024.0 * m.input_price_per_mtok / 1_000_000.0).to_bits()
        );
        assert_eq!(
            m.input_cost(235u32).to_bits(),
            m.input_cost(235u64).to_bits()
        );
    }

    #[test]
    fn cheapest_fitting_model_of_the_right_tier() {
        let catalog = Catalog::builtin();
        let policy = BudgetPolicy::default();
        let easy = route(&catalog, &policy, 2_000, 1_000, 0.1, &[]).unwrap();
        let hard = route(&catalog, &policy, 2_000, 1_000, 0.95, &[]).unwrap();
        assert!(hard.required_tier == Tier::Frontier);
        let m = catalog.resolve(&hard.model).unwrap();
        assert_eq!(m.tier, Tier::Frontier);
        assert!(easy.estimated_cost_usd <= hard.estimated_cost_usd);
        // Every alternative qualifies and none is cheaper than the choice.
        for a in &hard.alternatives {
            assert!(a.fits && a.tier_ok);
            assert!(a.estimated_cost_usd >= hard.estimated_cost_usd);
        }
        // A prompt larger than any window routes nowhere.
        assert!(route(&catalog, &policy, 50_000_000, 1_000, 0.1, &[]).is_none());
        // Allowed models restrict the choice.
        let only = vec!["gpt-4o".to_string()];
        if catalog.get("gpt-4o").is_some() {
            let r = route(&catalog, &policy, 2_000, 1_000, 0.1, &only).unwrap();
            assert_eq!(r.model, "gpt-4o");
        }
    }
}
