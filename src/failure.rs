//! How a failed command ends: a message for people or JSON for scripts, and an exit code.

use std::process::ExitCode;

use ctxgate_core::catalog::{BudgetError, CatalogError};
use ctxgate_indexer::IndexerError;

use crate::args::Format;

/// What every command returns: nothing on success, or how it failed.
pub type CmdResult = Result<(), Failure>;

/// A command's failure: a machine-readable code, a message, and whether the input was at fault.
#[derive(Debug)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub user_error: bool,
}

impl Failure {
    pub fn input(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            user_error: true,
        }
    }

    pub fn internal(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            user_error: false,
        }
    }

    pub fn report(self, format: Format) -> ExitCode {
        match format {
            Format::Json => {
                let doc =
                    serde_json::json!({ "error": { "code": self.code, "message": self.message } });
                println!("{doc}");
            }
            Format::Text => eprintln!("error: {}", self.message),
        }
        ExitCode::from(if self.user_error { 2 } else { 1 })
    }
}

impl From<IndexerError> for Failure {
    fn from(e: IndexerError) -> Self {
        let code = e.code();
        Self {
            code,
            user_error: e.is_user_error(),
            message: e.to_string(),
        }
    }
}

impl From<CatalogError> for Failure {
    fn from(e: CatalogError) -> Self {
        Failure::input(e.code(), e.to_string())
    }
}

impl From<ctxgate_edge::error::ApiError> for Failure {
    fn from(e: ctxgate_edge::error::ApiError) -> Self {
        Self {
            code: e.code,
            user_error: e.status.is_client_error(),
            message: e.message,
        }
    }
}

impl From<ctxgate_core::history::ParseError> for Failure {
    fn from(e: ctxgate_core::history::ParseError) -> Self {
        Failure::input(e.code(), e.to_string())
    }
}

impl From<ctxgate_core::history::CompactError> for Failure {
    fn from(e: ctxgate_core::history::CompactError) -> Self {
        Failure::input(e.code(), e.to_string())
    }
}

impl From<BudgetError> for Failure {
    fn from(e: BudgetError) -> Self {
        Failure::input(e.code(), e.to_string())
    }
}
