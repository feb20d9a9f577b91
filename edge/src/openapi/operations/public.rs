//! What anyone may call: health, this document, the model catalog.

use schemars::{Schema, SchemaGenerator};

use super::{of, ok, op};
use crate::openapi::operation::{Access, Operation};
use crate::routes::meta::ModelList;
use crate::wire::Health;

pub(super) fn operations() -> Vec<Operation> {
    vec![
        Operation {
            answers: ok(of::<Health>),
            ..op(
                "get",
                "/healthz",
                "health",
                "Liveness and build facts",
                Access::Public,
            )
        },
        Operation {
            answers: ok(document_schema),
            ..op(
                "get",
                "/openapi.json",
                "openapi",
                "This document",
                Access::Public,
            )
        },
        Operation {
            answers: ok(of::<ModelList<'static>>),
            ..op(
                "get",
                "/v1/models",
                "listModels",
                "The model catalog with windows, usable budgets, tokenizers and prices",
                Access::Public,
            )
        },
    ]
}

/// The schema of the OpenAPI document itself (`GET /openapi.json`).
fn document_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "description": "An OpenAPI 3.1 document",
        "type": "object",
        "required": ["openapi", "info", "paths", "components"],
        "properties": {
            "openapi": { "type": "string", "pattern": "^3\\.1\\." },
            "info": {
                "type": "object",
                "required": ["title", "version"],
                "properties": { "title": { "type": "string" }, "version": { "type": "string" } }
            },
            "paths": { "type": "object", "additionalProperties": { "type": "object" } },
            "components": { "type": "object", "additionalProperties": { "type": "object" } }
        }
    })
}
