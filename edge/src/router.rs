//! The HTTP API's routes: one axum router, served by the Worker and by `ctxgate serve` alike.
//! The top of the edge: it imports the handlers ([`crate::routes`], [`crate::mcp`],
//! [`crate::openapi::serve`]) and the request plumbing ([`crate::extract`]); nothing imports it
//! back but the hosts.
//!
//! The routes are one table ([`table`]): each path with its handlers, each handler beside the
//! one method it answers. The router is built from it and the OpenAPI operations are checked
//! against it (`router_serves_the_documented_operations`), so a route cannot be served
//! without being documented, or documented without being served.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter, on};
use ctxgate_core::error_code::ErrorCode;

use crate::error::ApiError;
use crate::extract::limits::{MAX_OBJECT_BYTES, refuse_declared_oversize};
use crate::routes::{admin, context, history, meta, metrics, projects, usage, webhooks};
use crate::state::AppState;

/// One path of the API: its handlers, and the body limit it has instead of the host's.
pub(crate) struct Route {
    pub(crate) path: &'static str,
    pub(crate) handlers: Vec<(Method, MethodRouter<AppState>)>,
    body_limit: Option<usize>,
}

/// `handler` answering `method` (and only it).
fn at<H, T>(method: Method, handler: H) -> (Method, MethodRouter<AppState>)
where
    H: Handler<T, AppState>,
    T: 'static,
{
    let filter = MethodFilter::try_from(method.clone())
        .unwrap_or_else(|_| unreachable!("the table names standard methods only"));
    (method, on(filter, handler))
}

/// `path` with its handlers and the host's body limit.
fn route(path: &'static str, handlers: Vec<(Method, MethodRouter<AppState>)>) -> Route {
    Route {
        path,
        handlers,
        body_limit: None,
    }
}

/// Every route of the API, the console's pages first.
pub(crate) fn table() -> Vec<Route> {
    use Method as M;
    vec![
        route("/", vec![at(M::GET, crate::console::home)]),
        route("/console", vec![at(M::GET, crate::console::page)]),
        route(
            "/console/console.js",
            vec![at(M::GET, crate::console::script)],
        ),
        route(
            "/console/console.css",
            vec![at(M::GET, crate::console::style)],
        ),
        route("/healthz", vec![at(M::GET, meta::healthz)]),
        route("/openapi.json", vec![at(M::GET, crate::openapi::serve)]),
        route("/v1/models", vec![at(M::GET, meta::models)]),
        route("/v1/tokens/count", vec![at(M::POST, meta::count)]),
        route("/v1/context", vec![at(M::POST, context::context)]),
        route("/v1/search", vec![at(M::POST, context::search)]),
        route(
            "/v1/history/compact",
            vec![at(M::POST, history::compact_history)],
        ),
        route(
            "/v1/projects",
            vec![at(M::POST, projects::create), at(M::GET, projects::list)],
        ),
        route("/v1/projects/{id}", vec![at(M::GET, projects::show)]),
        route(
            "/v1/projects/{id}/reindex",
            vec![at(M::POST, projects::reindex)],
        ),
        route(
            "/v1/projects/{id}/webhook",
            vec![
                at(M::POST, webhooks::create),
                at(M::DELETE, webhooks::remove),
            ],
        ),
        route(
            "/v1/webhooks/github/{project}",
            vec![at(M::POST, webhooks::github)],
        ),
        route(
            "/v1/webhooks/gitlab/{project}",
            vec![at(M::POST, webhooks::gitlab)],
        ),
        route(
            "/v1/projects/{id}/status",
            vec![at(M::GET, projects::status)],
        ),
        route("/v1/usage", vec![at(M::GET, usage::usage)]),
        route("/metrics", vec![at(M::GET, metrics::metrics)]),
        route("/mcp", vec![at(M::POST, crate::mcp::mcp)]),
        route("/v1/admin/orgs", vec![at(M::POST, admin::create_org)]),
        route(
            "/v1/admin/orgs/{org}/keys",
            vec![at(M::POST, admin::create_key)],
        ),
        route(
            "/v1/admin/orgs/{org}/limits",
            vec![at(M::PUT, admin::set_limits)],
        ),
        route(
            "/v1/admin/orgs/{org}/dense",
            vec![at(M::PUT, admin::set_dense)],
        ),
        route(
            "/v1/admin/orgs/{org}/gc",
            vec![at(M::POST, admin::collect_garbage)],
        ),
        route(
            "/v1/admin/orgs/{org}/projects/{name}",
            vec![at(M::PUT, admin::put_project)],
        ),
        Route {
            body_limit: Some(MAX_OBJECT_BYTES),
            ..route(
                "/v1/admin/orgs/{org}/objects/{*key}",
                vec![
                    at(M::PUT, admin::put_object),
                    at(M::HEAD, admin::has_object),
                ],
            )
        },
    ]
}

/// The whole API over `state`.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    let observed = state.clone();
    let mut router = Router::new();
    for r in table() {
        let mut methods = MethodRouter::new();
        for (_, handler) in r.handlers {
            methods = methods.merge(handler);
        }
        if let Some(n) = r.body_limit {
            methods = methods.layer(DefaultBodyLimit::max(n));
        }
        router = router.route(r.path, methods);
    }
    router
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
