//! How a failed command ends: a message for people or JSON for scripts, and an exit code.

use std::process::ExitCode;

use ctxgate_core::catalog::{BudgetError, CatalogError};
use ctxgate_core::error_code::ErrorCode;
use ctxgate_indexer::IndexerError;

use crate::args::Format;

/// What every command returns: nothing on success, or how it failed.
pub type CmdResult = Result<(), Failure>;

/// A command's failure: a code of the registry ([`ErrorCode`]), a message, and whether the input
/// was at fault (exit code 2 rather than 1).
#[derive(Debug)]
pub struct Failure {
    pub code: ErrorCode,
    pub message: String,
    pub user_error: bool,
}

impl Failure {
    /// A failure with a registry code: exit code 2 when the registry says the caller can fix
    /// it, 1 otherwise.
    pub fn coded(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            user_error: code.caller_can_fix(),
        }
    }

    /// A failure the user's flags caused, whatever the code means to the API: the API answers
    /// `embed_url_missing` as its operator's misconfiguration (502), the command line as a
    /// flag its user left out.
    pub fn flag(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            user_error: true,
        }
    }

    pub fn report(self, format: Format) -> ExitCode {
        match format {
            Format::Json => {
                let doc = serde_json::json!({ "error": { "code": self.code.as_str(), "message": self.message } });
                println!("{doc}");
            }
            Format::Text => eprintln!("error: {}", self.message),
        }
        ExitCode::from(if self.user_error { 2 } else { 1 })
    }
}

impl From<IndexerError> for Failure {
    fn from(e: IndexerError) -> Self {
        Self {
            code: e.code(),
            user_error: e.is_user_error(),
            message: e.to_string(),
        }
    }
}

impl From<CatalogError> for Failure {
    fn from(e: CatalogError) -> Self {
        Failure::coded(e.code(), e.to_string())
    }
}

impl From<ctxgate_edge::error::ApiError> for Failure {
    fn from(e: ctxgate_edge::error::ApiError) -> Self {
        Self {
            code: e.code,
            user_error: e.code.caller_can_fix_at(e.status.as_u16()),
            message: e.message,
        }
    }
}

impl From<ctxgate_core::history::ParseError> for Failure {
    fn from(e: ctxgate_core::history::ParseError) -> Self {
        Failure::coded(e.code(), e.to_string())
    }
}

impl From<ctxgate_core::history::CompactError> for Failure {
    fn from(e: ctxgate_core::history::CompactError) -> Self {
        Failure::coded(e.code(), e.to_string())
    }
}

impl From<BudgetError> for Failure {
    fn from(e: BudgetError) -> Self {
        Failure::coded(e.code(), e.to_string())
    }
}
