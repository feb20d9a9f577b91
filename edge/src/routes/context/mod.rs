//! `POST /v1/context` and `POST /v1/search`: the core's assembly over a project's current index.
//!
//! The handlers are short sequences of steps, each in a module named for what it does:
//! [`request`] checks what was asked, [`run`] is the metered assembly (shared with the MCP
//! tools, which call [`context_value`] and [`search_answer`]), [`session`] reads what a session
//! already holds, [`report`] prices and routes, and [`body`] is what goes back.

mod body;
mod report;
mod request;
mod run;
mod session;

pub use body::{ContextAnswer, SearchAnswer};
pub use request::{ContextRequest, SearchRequest};

use axum::Json;
use axum::extract::State;
use axum::response::Response;
use serde_json::Value;

use self::body::json_response;
use self::report::{Savings, routing};
use self::request::{DEFAULT_PAGE_TOKENS, DEFAULT_REPLY_TOKENS};
use self::run::{Asked, run};
use super::budget::resolve;
use super::conversation::compact_for_context;
use crate::error::ApiError;
use crate::extract::{Caller, JsonBody};
use crate::state::AppState;

/// `POST /v1/context`.
pub async fn context(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<ContextRequest>,
) -> Result<Response, ApiError> {
    answer(state, caller, req, json_response).await
}

/// The answer of `POST /v1/context` as a JSON value (the MCP tool reads it).
pub async fn context_value(
    state: AppState,
    caller: Caller,
    req: ContextRequest,
) -> Result<Value, ApiError> {
    answer(state, caller, req, |a| {
        serde_json::to_value(&a).unwrap_or(Value::Null)
    })
    .await
}

/// Answers a context request; `finish` turns the answer, which borrows the assembled context,
/// into what the caller sends.
async fn answer<T>(
    state: AppState,
    caller: Caller,
    mut req: ContextRequest,
    finish: impl FnOnce(ContextAnswer<'_>) -> T,
) -> Result<T, ApiError> {
    let shape = req.check()?;
    let resolved = resolve(&state, &caller, req.model.as_deref(), req.budget)?;
    let history = req
        .messages
        .take()
        .map(|m| compact_for_context(m, &resolved, req.keep_rounds, &req.query))
        .transpose()?;
    // The one budget, in its parts, from here to the composer and back to the answer.
    let resolved = resolved.after_history(history.as_ref().map_or(0, |h| h.report.tokens_total));
    let asked = Asked {
        hot_paths: std::mem::take(&mut req.hot_paths),
        continuation: req.continuation.as_deref(),
        session: req.session.as_deref(),
        compression: shape.compression,
        profile: shape.profile,
        error_output: shape.error_output,
        pieces_only: false,
    };
    let run = run(
        &state,
        &caller,
        "/v1/context",
        &req.project,
        &req.query,
        resolved,
        asked,
    )
    .await?;
    let reply = req.reply_tokens.unwrap_or(DEFAULT_REPLY_TOKENS);
    let routing = routing(&state, &caller, &run, reply);
    let priced = routing.as_ref().and_then(|r| state.catalog.get(&r.model));
    let savings = Savings::of(&run.done, priced);
    let session = req.session.as_deref();
    Ok(finish(ContextAnswer::new(
        &run, history, routing, savings, session,
    )))
}

/// `POST /v1/search`: one page of ranked pieces within `page_tokens`.
pub async fn search(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<SearchRequest>,
) -> Result<Json<SearchAnswer>, ApiError> {
    Ok(Json(search_answer(&state, &caller, req).await?))
}

/// One page of `POST /v1/search` (the MCP tool `search_code` reads it too).
pub async fn search_answer(
    state: &AppState,
    caller: &Caller,
    req: SearchRequest,
) -> Result<SearchAnswer, ApiError> {
    req.check()?;
    let page = req.page_tokens.unwrap_or(DEFAULT_PAGE_TOKENS);
    let resolved = resolve(state, caller, req.model.as_deref(), Some(page))?;
    let asked = Asked {
        continuation: req.continuation.as_deref(),
        pieces_only: true,
        ..Asked::default()
    };
    let run = run(
        state,
        caller,
        "/v1/search",
        &req.project,
        &req.query,
        resolved,
        asked,
    )
    .await?;
    Ok(SearchAnswer::of(run, page))
}
