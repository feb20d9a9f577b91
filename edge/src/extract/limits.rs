//! How large a request body may be: the server's general limit, the larger one of index object
//! uploads, and the answer to a body over it.

use crate::error::ApiError;

/// Largest index object accepted by `PUT /v1/admin/orgs/{org}/objects/{*key}` (index packs and
/// segments are far larger than API requests; the Workers platform caps bodies at 100 MB).
pub const MAX_OBJECT_BYTES: usize = 96 * 1024 * 1024;

/// Whether `path` is an object upload (it has its own body limit).
pub fn is_object_upload(path: &str) -> bool {
    path.starts_with("/v1/admin/orgs/") && path.contains("/objects/")
}

/// Refuses a body whose declared length is over the limit before reading any of it (the
/// extractor's limit only trips once that much has arrived).
pub(crate) async fn refuse_declared_oversize(
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
    if is_object_upload(path) {
        MAX_OBJECT_BYTES
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
        ctxgate_core::error_code::ErrorCode::BodyTooLarge,
        format!("the request body is over this server's limit of {limit} bytes"),
    )
    .with_details(serde_json::json!({ "limit_bytes": limit }))
}
