//! The API's one error type, and its single mapping to HTTP responses.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ctxgate_core::quota::Refusal;
use serde_json::{Value, json};

use crate::backend::{BackendError, SourceFault};
use crate::wire::{ErrorBody, ErrorDetail};

/// An error answer: status, machine-readable code, message, details.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable code.
    pub code: &'static str,
    /// For people.
    pub message: String,
    /// Structured facts.
    pub details: Value,
    /// Seconds for `Retry-After` (429s).
    pub retry_after: Option<u64>,
    /// The quota limit a 429 `quota_exceeded` hit (`tokens_per_day`, ...), for metrics.
    pub quota_limit: Option<&'static str>,
}

/// What an error answer carries for [`crate::observe`] in its response's extensions: the code
/// and quota limit, straight from the [`ApiError`], never parsed back from the body.
#[derive(Clone, Copy, Debug)]
pub struct ErrorFacts {
    /// The machine-readable code.
    pub code: &'static str,
    /// The limit a quota refusal hit.
    pub quota_limit: Option<&'static str>,
}

impl ApiError {
    /// An error with no details.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: Value::Null,
            retry_after: None,
            quota_limit: None,
        }
    }
    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
    /// 404 with `code`.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }
    /// The 429 `quota_exceeded` every quota refusal answers with: the limit hit (by name, in the
    /// message and `details.limit`), what remains, and `Retry-After`.
    pub fn quota_exceeded(r: &Refusal) -> Self {
        let what = r.limit.name();
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "quota_exceeded",
            format!(
                "the organisation's {what} limit ({}) does not allow this request: {} left, {} needed; retry in {} s",
                r.allowed, r.remaining, r.requested, r.retry_after_s
            ),
        )
        .with_details(json!({
            "limit": what,
            "allowed": r.allowed,
            "remaining": r.remaining,
            "requested": r.requested,
            "retry_after_s": r.retry_after_s,
        }));
        e.retry_after = Some(r.retry_after_s);
        e.quota_limit = Some(what);
        e
    }
    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let facts = ErrorFacts {
            code: self.code,
            quota_limit: self.quota_limit,
        };
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
                details: self.details,
            },
        };
        let mut res = (self.status, axum::Json(body)).into_response();
        // RFC 6750: a 401 names the scheme it wants, and why, so clients (MCP's HTTP transport
        // among them) can tell a missing key from a wrong one.
        if self.status == StatusCode::UNAUTHORIZED {
            let error = if self.code == "missing_api_key" {
                String::new()
            } else {
                format!(
                    ", error=\"invalid_token\", error_description=\"{}\"",
                    self.code
                )
            };
            if let Ok(v) = HeaderValue::from_str(&format!("Bearer realm=\"ctxgate\"{error}")) {
                res.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
        }
        if let Some(s) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        res.extensions_mut().insert(facts);
        res
    }
}

impl From<BackendError> for ApiError {
    fn from(e: BackendError) -> Self {
        let msg = e.to_string();
        match e {
            BackendError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, "conflict", msg),
            BackendError::NotFound(_) => ApiError::not_found("not_found", msg),
            BackendError::Refused(_) => ApiError::new(StatusCode::FORBIDDEN, "source_refused", msg),
            BackendError::Invalid(_) => ApiError::bad_request("invalid_source", msg),
            BackendError::Source { code, fault, .. } => {
                let status = match fault {
                    SourceFault::Refused => StatusCode::FORBIDDEN,
                    SourceFault::Invalid => StatusCode::BAD_REQUEST,
                    SourceFault::Upstream => StatusCode::BAD_GATEWAY,
                };
                ApiError::new(status, code, msg)
            }
            BackendError::Corrupt(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "index_corrupt", msg)
            }
            BackendError::Outdated(_) => ApiError::new(StatusCode::CONFLICT, "index_outdated", msg),
            BackendError::Storage(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "storage_unavailable", msg)
            }
            BackendError::Unsupported(_) => {
                ApiError::new(StatusCode::NOT_IMPLEMENTED, "not_supported", msg)
            }
            BackendError::Embedding { code, .. } => {
                ApiError::new(StatusCode::BAD_GATEWAY, code, msg)
            }
            BackendError::QuotaExceeded(r) => ApiError::quota_exceeded(&r),
        }
    }
}

impl From<ctxgate_core::catalog::CatalogError> for ApiError {
    fn from(e: ctxgate_core::catalog::CatalogError) -> Self {
        ApiError::bad_request(e.code(), e.to_string())
            .with_details(json!({"hint": "GET /v1/models lists the known models"}))
    }
}

impl From<ctxgate_core::catalog::BudgetError> for ApiError {
    fn from(e: ctxgate_core::catalog::BudgetError) -> Self {
        use ctxgate_core::catalog::BudgetError as B;
        let details = match &e {
            B::ExceedsWindow {
                budget,
                model,
                window,
                usable,
            } => json!({"budget": budget, "model": model, "window": window, "usable": usable}),
            B::TooSmall { budget, needed } => json!({"budget": budget, "needed": needed}),
            _ => Value::Null,
        };
        ApiError::bad_request(e.code(), e.to_string()).with_details(details)
    }
}

impl From<ctxgate_core::continuation::TokenError> for ApiError {
    fn from(e: ctxgate_core::continuation::TokenError) -> Self {
        ApiError::bad_request(e.code(), e.to_string())
    }
}

impl From<ctxgate_core::assemble::ask::AskError> for ApiError {
    /// Every refused ask is the caller's to fix: 400 with the core's code and message.
    fn from(e: ctxgate_core::assemble::ask::AskError) -> Self {
        ApiError::bad_request(e.code(), e.to_string())
    }
}

impl From<ctxgate_core::assemble::AssembleError> for ApiError {
    fn from(e: ctxgate_core::assemble::AssembleError) -> Self {
        use ctxgate_core::assemble::AssembleError as A;
        let code = e.code();
        match e {
            A::Budget(b) => ApiError::from(b),
            A::EmptyQuery | A::Compose(_) | A::ErrorOutputMissing => {
                ApiError::bad_request(code, e.to_string())
            }
            A::Source(_) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code, e.to_string()),
            // The fetch loop gives up after a bounded number of rounds (texts evicted as fast
            // as they are read, a source that never holds them).
            A::TextsNeeded(_) | A::ListsNeeded(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                code,
                format!("{e} after several rounds of reading; retry the request"),
            ),
        }
    }
}

impl From<ctxgate_core::history::ParseError> for ApiError {
    fn from(e: ctxgate_core::history::ParseError) -> Self {
        use ctxgate_core::history::ParseError;
        let details = match &e {
            ParseError::Malformed { index, .. } | ParseError::UnknownRole { index, .. } => {
                json!({ "message_index": index })
            }
            _ => Value::Null,
        };
        ApiError::bad_request(e.code(), e.to_string()).with_details(details)
    }
}

impl From<ctxgate_core::history::CompactError> for ApiError {
    fn from(e: ctxgate_core::history::CompactError) -> Self {
        use ctxgate_core::history::CompactError;
        let details = match &e {
            CompactError::BudgetTooSmall {
                needed,
                budget,
                keep_rounds,
            } => {
                json!({ "needed": needed, "budget": budget, "keep_rounds": keep_rounds })
            }
            CompactError::BudgetZero => Value::Null,
        };
        ApiError::bad_request(e.code(), e.to_string()).with_details(details)
    }
}
