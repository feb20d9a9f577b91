//! Wire types shared by every endpoint.

use ctxgate_core::error_code::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The one error shape of the API: `{ "error": { "code", "message", "details" } }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// Machine-readable code (`budget_exceeds_window`, `unknown_model`...).
    // One of the registry's (`ctxgate_core::error_code`), as docs/api.md lists them.
    #[schemars(schema_with = "api_codes")]
    pub code: String,
    /// For people.
    pub message: String,
    /// Structured facts (limits, remaining quota), depending on the code; absent when there
    /// are none.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub details: serde_json::Value,
}

/// Every code the API answers with ([`ErrorCode::ALL`] less the command line's own).
fn api_codes(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let codes: Vec<&str> = ErrorCode::ALL
        .iter()
        .filter(|c| c.status().is_some())
        .map(|c| c.as_str())
        .collect();
    schemars::json_schema!({ "type": "string", "enum": codes })
}

impl ErrorBody {
    /// An error without details.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            error: ErrorDetail {
                code: code.into(),
                message: message.into(),
                details: serde_json::Value::Null,
            },
        }
    }
}

/// `GET /healthz`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// Always `ok` when the process answers.
    pub status: String,
    /// Crate version.
    pub version: String,
    /// Index pack format this build reads.
    pub index_format: u32,
}

impl Health {
    /// The health of this build.
    pub fn current() -> Self {
        Self {
            status: "ok".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            index_format: ctxgate_core::index::FORMAT_VERSION,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_shape() {
        let json = serde_json::to_value(ErrorBody::new("unknown_model", "no such model")).unwrap();
        assert_eq!(json["error"]["code"], "unknown_model");
        assert!(json["error"].get("details").is_none());
        assert_eq!(Health::current().status, "ok");
    }
}
