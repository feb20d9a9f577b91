//! The HTTP API's routes: one axum router, served by the Worker and by `ctxgate serve` alike.
//! The top of the edge: it imports the handlers ([`crate::routes`], [`crate::mcp`],
//! [`crate::openapi::serve`]) and the request plumbing ([`crate::extract`]); nothing imports it
//! back but the hosts.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};
use ctxgate_core::error_code::ErrorCode;

use crate::error::ApiError;
use crate::extract::limits::{MAX_OBJECT_BYTES, refuse_declared_oversize};
use crate::routes::{admin, context, history, meta, metrics, projects, usage, webhooks};
use crate::state::AppState;

/// The whole API over `state`.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    let observed = state.clone();
    Router::new()
        .route("/", get(crate::console::home))
        .route("/console", get(crate::console::page))
        .route("/console/console.js", get(crate::console::script))
        .route("/console/console.css", get(crate::console::style))
        .route("/healthz", get(meta::healthz))
        .route("/openapi.json", get(crate::openapi::serve))
        .route("/v1/models", get(meta::models))
        .route("/v1/tokens/count", post(meta::count))
        .route("/v1/context", post(context::context))
        .route("/v1/search", post(context::search))
        .route("/v1/history/compact", post(history::compact_history))
        .route("/v1/projects", post(projects::create).get(projects::list))
        .route("/v1/projects/{id}", get(projects::show))
        .route("/v1/projects/{id}/reindex", post(projects::reindex))
        .route(
            "/v1/projects/{id}/webhook",
            post(webhooks::create).delete(webhooks::remove),
        )
        .route("/v1/webhooks/github/{project}", post(webhooks::github))
        .route("/v1/webhooks/gitlab/{project}", post(webhooks::gitlab))
        .route("/v1/projects/{id}/status", get(projects::status))
        .route("/v1/usage", get(usage::usage))
        .route("/metrics", get(metrics::metrics))
        .route("/mcp", post(crate::mcp::mcp))
        .route("/v1/admin/orgs", post(admin::create_org))
        .route("/v1/admin/orgs/{org}/keys", post(admin::create_key))
        .route("/v1/admin/orgs/{org}/limits", put(admin::set_limits))
        .route("/v1/admin/orgs/{org}/dense", put(admin::set_dense))
        .route("/v1/admin/orgs/{org}/gc", post(admin::collect_garbage))
        .route(
            "/v1/admin/orgs/{org}/projects/{name}",
            put(admin::put_project),
        )
        .route(
            "/v1/admin/orgs/{org}/objects/{*key}",
            put(admin::put_object)
                .head(admin::has_object)
                .layer(DefaultBodyLimit::max(MAX_OBJECT_BYTES)),
        )
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            limit,
            refuse_declared_oversize,
        ))
        // Outermost, so its record covers every answer, the body-limit refusals included.
        .layer(axum::middleware::from_fn_with_state(
            observed,
            crate::observe::observe,
        ))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::new(
        ErrorCode::RouteNotFound,
        "no such endpoint; GET /openapi.json lists them",
    )
}
