//! The HTTP API: one axum router, served by the Worker and by `ctxgate serve` alike.

pub(crate) mod admin;
mod auth;
mod context;
mod history;
mod meta;
mod projects;
mod usage;

pub use auth::{Caller, hash_key};
pub use context::{
    ContextAnswer, ContextRequest, SearchAnswer, SearchRequest, context_value,
    search as search_handler,
};
pub use meta::{CountAnswer, CountRequest, count as count_handler};
pub use projects::find_project;
pub use projects::valid_name as valid_project_name;
pub use projects::{ProjectList, list as list_handler};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};

use crate::error::ApiError;
use crate::state::AppState;

/// The whole API over `state`.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/healthz", get(meta::healthz))
        .route("/openapi.json", get(meta::openapi))
        .route("/v1/models", get(meta::models))
        .route("/v1/tokens/count", post(meta::count))
        .route("/v1/context", post(context::context))
        .route("/v1/search", post(context::search))
        .route("/v1/history/compact", post(history::compact_history))
        .route("/v1/projects", post(projects::create).get(projects::list))
        .route("/v1/projects/{id}", get(projects::show))
        .route("/v1/projects/{id}/reindex", post(projects::reindex))
        .route("/v1/usage", get(usage::usage))
        .route("/mcp", post(crate::mcp::mcp))
        .route("/v1/admin/orgs", post(admin::create_org))
        .route("/v1/admin/orgs/{org}/keys", post(admin::create_key))
        .route("/v1/admin/orgs/{org}/limits", put(admin::set_limits))
        .route("/v1/admin/orgs/{org}/gc", post(admin::collect_garbage))
        .route(
            "/v1/admin/orgs/{org}/projects/{name}",
            put(admin::put_project),
        )
        .route(
            "/v1/admin/orgs/{org}/objects/{*key}",
            put(admin::put_object)
                .head(admin::has_object)
                .layer(DefaultBodyLimit::max(admin::MAX_OBJECT_BYTES)),
        )
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            limit,
            refuse_declared_oversize,
        ))
        .with_state(state)
}

/// Refuses a body whose declared length is over the limit before reading any of it (the
/// extractor's limit only trips once that much has arrived).
async fn refuse_declared_oversize(
    axum::extract::State(limit): axum::extract::State<usize>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let limit = body_limit(req.uri().path(), limit);
    match declared_length(req.headers()) {
        Some(n) if n > limit as u64 => too_large(limit).into_response(),
        _ => next.run(req).await,
    }
}

/// The most bytes a request to `path` may carry, given the server's general `limit`: object
/// uploads (admin only) carry index segments and get their own, larger limit.
pub fn body_limit(path: &str, limit: usize) -> usize {
    if admin::is_object_upload(path) {
        admin::MAX_OBJECT_BYTES
    } else {
        limit
    }
}

/// The body length a request announces, if it announces one that parses.
pub fn declared_length(headers: &axum::http::HeaderMap) -> Option<u64> {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// The API's answer to a body over `limit`.
pub fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the request body is over this server's limit of {limit} bytes"),
    )
    .with_details(serde_json::json!({ "limit_bytes": limit }))
}

async fn not_found() -> ApiError {
    ApiError::not_found(
        "route_not_found",
        "no such endpoint; GET /openapi.json lists them",
    )
}

/// A JSON body, with the API's error shape for every way it can be wrong.
pub struct JsonBody<T>(pub T);

impl<S, T> axum::extract::FromRequest<S> for JsonBody<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        use axum::extract::rejection::JsonRejection as R;
        use axum::http::StatusCode;
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(JsonBody(v)),
            Err(R::MissingJsonContentType(_)) => Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as JSON with `Content-Type: application/json`",
            )),
            Err(R::JsonSyntaxError(e)) => Err(ApiError::bad_request(
                "malformed_json",
                format!("the body is not valid JSON: {}", e.body_text()),
            )),
            Err(R::JsonDataError(e)) => Err(ApiError::bad_request(
                "invalid_request",
                format!(
                    "the body does not match the request schema: {}",
                    e.body_text()
                ),
            )),
            Err(R::BytesRejection(e)) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    "the request body is over this server's limit",
                ))
            }
            Err(e) => Err(ApiError::bad_request("invalid_body", e.body_text())),
        }
    }
}
