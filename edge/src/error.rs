//! The API's one error type, and its single mapping to HTTP responses.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::quota::Refusal;
use serde_json::{Value, json};

use crate::backend::{BackendError, SourceFault};
use crate::wire::{ErrorBody, ErrorDetail};

/// An error answer: status, machine-readable code, message, details. The status is the code's
/// in the registry ([`ErrorCode::statuses`]).
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable code.
    pub code: ErrorCode,
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
    /// An error with no details, answered with the code's usual status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let status = code
            .status()
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        debug_assert!(code.status().is_some(), "{code} is not an API code");
        Self {
            status,
            code,
            message: message.into(),
            details: Value::Null,
            retry_after: None,
            quota_limit: None,
        }
    }
    /// The same error answered with `status`, another of the statuses the registry lists for
    /// its code (`source_http_error`: 400 or 502).
    fn with_status(mut self, status: StatusCode) -> Self {
        debug_assert!(
            self.code.statuses().contains(&status.as_u16()),
            "{} is not answered with {status}",
            self.code
        );
        self.status = status;
        self
    }
    /// The 429 `quota_exceeded` every quota refusal answers with: the limit hit (by name, in the
    /// message and `details.limit`), what remains, and `Retry-After`.
    pub fn quota_exceeded(r: &Refusal) -> Self {
        let what = r.limit.name();
        let mut e = ApiError::new(
            ErrorCode::QuotaExceeded,format!(
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
            code: self.code.as_str(),
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
            BackendError::Conflict(_) => ApiError::new(ErrorCode::Conflict, msg),
            BackendError::NotFound(_) => ApiError::new(ErrorCode::NotFound, msg),
            BackendError::Refused(_) => ApiError::new(ErrorCode::SourceRefused, msg),
            BackendError::Invalid(_) => ApiError::new(ErrorCode::InvalidSource, msg),
            BackendError::Source { code, fault, .. } => {
                let status = match fault {
                    SourceFault::Refused => StatusCode::FORBIDDEN,
                    SourceFault::Invalid => StatusCode::BAD_REQUEST,
                    SourceFault::Upstream => StatusCode::BAD_GATEWAY,
                };
                ApiError::new(code, msg).with_status(status)
            }
            BackendError::Corrupt(_) => ApiError::new(ErrorCode::IndexCorrupt, msg),
            BackendError::Outdated(_) => ApiError::new(ErrorCode::IndexOutdated, msg),
            BackendError::Storage(_) => ApiError::new(ErrorCode::StorageUnavailable, msg),
            BackendError::Unsupported(_) => ApiError::new(ErrorCode::NotSupported, msg),
            BackendError::Embedding { code, .. } => ApiError::new(code, msg),
            BackendError::QuotaExceeded(r) => ApiError::quota_exceeded(&r),
        }
    }
}

impl From<ctxgate_core::catalog::CatalogError> for ApiError {
    fn from(e: ctxgate_core::catalog::CatalogError) -> Self {
        ApiError::new(e.code(), e.to_string())
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
        ApiError::new(e.code(), e.to_string()).with_details(details)
    }
}

impl From<ctxgate_core::continuation::TokenError> for ApiError {
    fn from(e: ctxgate_core::continuation::TokenError) -> Self {
        ApiError::new(e.code(), e.to_string())
    }
}

impl From<ctxgate_core::assemble::ask::AskError> for ApiError {
    /// Every refused ask is the caller's to fix: 400 with the core's code and message.
    fn from(e: ctxgate_core::assemble::ask::AskError) -> Self {
        ApiError::new(e.code(), e.to_string())
    }
}

impl From<ctxgate_core::assemble::AssembleError> for ApiError {
    fn from(e: ctxgate_core::assemble::AssembleError) -> Self {
        use ctxgate_core::assemble::AssembleError as A;
        let code = e.code();
        match e {
            A::Budget(b) => ApiError::from(b),
            A::EmptyQuery | A::Compose(_) | A::ErrorOutputMissing | A::Source(_) => {
                ApiError::new(code, e.to_string())
            }
            // The fetch loop gives up after a bounded number of rounds (texts evicted as fast
            // as they are read, a source that never holds them).
            A::Unread(_) => ApiError::new(
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
        ApiError::new(e.code(), e.to_string()).with_details(details)
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
        ApiError::new(e.code(), e.to_string()).with_details(details)
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    /// The Rust files under the workspace's `folders`, their tests cut off.
    fn sources(folders: &[&str]) -> Vec<(PathBuf, String)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let code = text.split("#[cfg(test)]").next().unwrap().to_string();
                    out.push((path, code));
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut out = Vec::new();
        for folder in folders {
            walk(&root.join(folder), &mut out);
        }
        assert!(out.len() > 50, "the sources were not found");
        out
    }

    #[test]
    fn no_error_is_built_from_a_string_code() {
        for (path, code) in sources(&["edge/src", "src"]) {
            for built in code.split("ApiError::new(").skip(1) {
                let first = built.trim_start();
                assert!(
                    !first.starts_with('"'),
                    "{}: an ApiError from a string literal: {}",
                    path.display(),
                    &first[..first.len().min(60)]
                );
            }
            // `openapi/codes.rs` is a test module: it reads codes back from the document.
            assert!(
                !code.contains("ErrorCode::parse(") || path.ends_with("openapi/codes.rs"),
                "{}: a code parsed from a string; name the ErrorCode",
                path.display()
            );
        }
    }

    #[test]
    fn every_code_method_returns_a_registry_code() {
        let mut seen = 0;
        for (path, code) in sources(&["shared/src", "edge/src", "indexer/src", "src"]) {
            for after in code.split("fn code(&self) -> ").skip(1) {
                seen += 1;
                assert!(
                    after.starts_with("ErrorCode"),
                    "{}: a `code()` that does not return an ErrorCode",
                    path.display()
                );
            }
        }
        assert!(seen >= 14, "only {seen} `code()` methods found");
    }

    #[test]
    fn statuses_come_from_the_registry() {
        let e = ApiError::new(ErrorCode::QuotaExceeded, "no");
        assert_eq!(e.status, StatusCode::TOO_MANY_REQUESTS);
        let e = ApiError::from(BackendError::Source {
            code: ErrorCode::SourceHttpError,
            fault: SourceFault::Invalid,
            message: "404".into(),
        });
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        for &c in ErrorCode::ALL {
            if let Some(s) = c.status() {
                assert_eq!(ApiError::new(c, "").status.as_u16(), s, "{c}");
            }
        }
    }
}
