//! What `/v1/context` reports beside the context: the model it suits (routed, or the one
//! named) with the call's estimated cost, and what the context saved, priced with the core's
//! formulas ([`Model::input_cost`], [`ctxgate_core::route::cost`]).

use ctxgate_core::assemble::Assembled;
use ctxgate_core::catalog::{BudgetPolicy, Model};
use ctxgate_core::route::{RouteDecision, named, route};
use schemars::JsonSchema;
use serde::Serialize;

use super::run::Run;
use crate::extract::Caller;
use crate::state::AppState;

/// What the context saved against sending the whole repository, and what compression saved
/// of the pieces sent; USD at `priced_with`'s input price.
#[derive(Serialize, JsonSchema)]
pub struct Savings {
    repo_tokens: u64,
    tokens_total: u32,
    tokens_saved: u64,
    percent_saved: f64,
    usd_saved: Option<f64>,
    compression_tokens_saved: u32,
    compression_usd_saved: Option<f64>,
    priced_with: Option<String>,
}

impl Savings {
    /// What `done` saved against sending the whole repository, and what compression saved of
    /// the pieces sent; priced at `priced`'s input price when a model is known.
    pub(super) fn of(done: &Assembled, priced: Option<&Model>) -> Self {
        let saved = done
            .repo_tokens
            .saturating_sub(u64::from(done.tokens_total));
        Self {
            repo_tokens: done.repo_tokens,
            tokens_total: done.tokens_total,
            tokens_saved: saved,
            percent_saved: if done.repo_tokens == 0 {
                0.0
            } else {
                (saved as f64 * 1000.0 / done.repo_tokens as f64).round() / 10.0
            },
            usd_saved: priced.map(|m| m.input_cost(saved)),
            compression_tokens_saved: done.compression_saved_tokens,
            compression_usd_saved: priced.map(|m| m.input_cost(done.compression_saved_tokens)),
            priced_with: priced.map(|m| m.id.clone()),
        }
    }
}

/// The model the context suits for a reply of `reply` tokens: the one the request named, else
/// the core's routing among the models the organisation may use.
pub(super) fn routing(
    state: &AppState,
    caller: &Caller,
    run: &Run,
    reply: u32,
) -> Option<RouteDecision> {
    let d = &run.done;
    if let Some(id) = &run.resolved.model {
        let m = state.catalog.get(id)?;
        return Some(named(m, d.tokens_total, reply, d.intent.complexity));
    }
    route(
        &state.catalog,
        &BudgetPolicy::default(),
        d.tokens_total,
        reply,
        d.intent.complexity,
        &caller.org.allowed_models,
    )
}
