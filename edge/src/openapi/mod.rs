//! The OpenAPI 3.1 document served at `/openapi.json`, derived from the request and answer types.
//!
//! [`operations`] is the API as a table: each operation's method, path, request and answer
//! types, and the error codes it answers with, status by status. [`document()`] writes the
//! document from it, with the types' JSON Schemas (schemars, as for the MCP tools) under
//! `components/schemas`. The derivation runs in a test, not in a server: what is served is
//! `openapi.json`, which the test `served_document_is_derived` compares with [`document()`]
//! (`CTXGATE_BLESS=1 cargo test -p ctxgate-edge --lib openapi` rewrites it), so the Worker's
//! bundle carries the document's bytes but neither the table nor the schema code, and the file
//! stays readable in review.

use axum::http::header;
use axum::response::IntoResponse;

#[cfg(test)]
mod codes;
mod document;
mod errors;
mod operation;
mod operations;
mod prose;

pub use document::document;

/// The document, as served.
pub const DOCUMENT: &str = include_str!("openapi.json");

/// `GET /openapi.json`. Served here rather than among the routes, which this document
/// describes (and so imports): the routes never import it back.
pub async fn serve() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn served_document_is_derived() {
        let derived = document();
        let text = serde_json::to_string_pretty(&derived).unwrap() + "\n";
        if std::env::var("CTXGATE_BLESS").is_ok_and(|v| v == "1") {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/openapi/openapi.json");
            std::fs::write(path, &text).unwrap();
            return;
        }
        let served: Value = serde_json::from_str(DOCUMENT).unwrap();
        assert!(
            served == derived,
            "edge/src/openapi/openapi.json is not what the types and the operations table \
             derive; rewrite it with `CTXGATE_BLESS=1 cargo test -p ctxgate-edge --lib openapi`"
        );
    }

    /// `n` as the prose writes it: thousands separated by commas (16,000).
    fn written(n: u32) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (k, c) in digits.chars().enumerate() {
            if k > 0 && (digits.len() - k) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    /// The schemas' doc comments name the default and the smallest budget in words (schemars
    /// takes them as written); they must be the core's numbers, in every schema that names one.
    #[test]
    fn budget_prose_states_the_cores_numbers() {
        use ctxgate_core::catalog::{DEFAULT_BUDGET, MIN_BUDGET};
        let text = serde_json::to_string(&document()).unwrap();
        let default = format!(
            "or {} tokens (with a warning) when no model is named",
            written(DEFAULT_BUDGET)
        );
        let defaults = text
            .matches("tokens (with a warning) when no model is named")
            .count();
        assert!(
            defaults >= 2,
            "the default budget is described in {defaults} schemas"
        );
        assert_eq!(text.matches(&default).count(), defaults, "{default}");
        assert!(
            text.contains(&format!("at least {MIN_BUDGET} (`budget_too_small`")),
            "at least {MIN_BUDGET}"
        );
        assert_eq!(written(16_000), "16,000");
        assert_eq!(written(64), "64");
        assert_eq!(written(1_234_567), "1,234,567");
    }

    #[test]
    fn every_response_has_a_real_schema() {
        let doc = document();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if method == "parameters" {
                    continue;
                }
                for (status, r) in op["responses"].as_object().unwrap() {
                    let Some(schema) = r["content"]["application/json"].get("schema") else {
                        continue;
                    };
                    assert_ne!(
                        schema,
                        &serde_json::json!({ "type": "object" }),
                        "{method} {path} {status}"
                    );
                    if status.starts_with(['4', '5']) {
                        assert!(
                            schema["properties"]["error"]["properties"]["code"]["enum"]
                                .as_array()
                                .is_some_and(|codes| !codes.is_empty()),
                            "{method} {path} {status}: no error codes"
                        );
                    }
                }
            }
        }
    }
}
