//! The OpenAPI document served at `/openapi.json`.

/// The document (kept beside the code in `openapi.json`; a test checks it lists every route).
pub const DOCUMENT: &str = include_str!("openapi.json");
