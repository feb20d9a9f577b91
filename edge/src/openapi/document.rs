//! The OpenAPI 3.1 document written from [`super::operations`]: paths from the table, and
//! `components/schemas` from the types' JSON Schemas (schemars, JSON Schema 2020-12, which is
//! OpenAPI 3.1's dialect).

use std::collections::BTreeSet;

use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::operation::{Access, Body, Operation};
use super::operations::operations;
use super::prose::parameter;
use crate::wire::ErrorBody;

const COMPONENTS: &str = "#/components/schemas/";

/// The schemas of one side of serde: what requests may hold (fields with defaults optional)
/// or what answers hold (fields skipped when empty optional).
fn generator(output: bool) -> SchemaGenerator {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
    });
    let settings = if output {
        settings.for_serialize()
    } else {
        settings.for_deserialize()
    };
    settings.into_generator()
}

/// The whole document.
pub fn document() -> Value {
    let mut input = generator(false);
    let mut output = generator(true);
    let error = output.subschema_for::<ErrorBody>().to_value();
    let mut paths = Map::new();
    // Request schemas are rewritten once input and output schemas are merged (a type that
    // reads differently from how it is written gets an `Input` twin).
    let mut requests: Vec<(String, &'static str, Value)> = Vec::new();
    for op in operations() {
        let item = paths
            .entry(op.path)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("a path item is an object");
        let params = path_parameters(op.path);
        if !params.is_empty() {
            item.insert("parameters".into(), Value::Array(params));
        }
        let (operation, request) = operation(&op, &mut input, &mut output, &error);
        if let Some(schema) = request {
            requests.push((op.path.to_string(), op.method, schema));
        }
        item.insert(op.method.into(), operation);
    }
    let (schemas, renamed) = merge(input.take_definitions(true), output.take_definitions(true));
    for (path, method, schema) in requests {
        paths[&path][method]["requestBody"]["content"]["application/json"]["schema"] =
            rename_refs(schema, &renamed);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "ctxgate API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The smallest, most relevant context for an LLM request, within an \
                exact token budget, with provenance. Every error has the shape {\"error\": \
                {\"code\", \"message\", \"details\"}}; each operation lists, status by status, \
                the codes it answers with. Metered endpoints reserve their maximum token cost \
                before work and settle the real cost after; a refused request gets 429 with \
                Retry-After. This document is derived from the server's request and answer \
                types (edge/src/openapi/)."
        },
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An org's API key (ctxg_...), or the admin secret on /v1/admin."
                }
            },
            "schemas": schemas,
        },
    })
}

/// The path's `{name}` parameters, declared.
fn path_parameters(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            json!({
                "name": name,
                "in": "path",
                "required": true,
                "schema": { "type": "string" },
                "description": parameter(name),
            })
        })
        .collect()
}

/// One operation's object, and its JSON request schema (to be rewritten after the merge).
fn operation(
    op: &Operation,
    input: &mut SchemaGenerator,
    output: &mut SchemaGenerator,
    error: &Value,
) -> (Value, Option<Value>) {
    let mut o = json!({ "operationId": op.id, "summary": op.summary });
    if let Some(d) = op.description {
        o["description"] = json!(d);
    }
    if op.access == Access::Public {
        o["security"] = json!([]);
    }
    let mut request = None;
    match op.body {
        Body::None => {}
        Body::Json(of) => {
            let schema = of(input).to_value();
            request = Some(schema.clone());
            o["requestBody"] = json!({
                "required": true,
                "content": { "application/json": { "schema": schema } }
            });
        }
        Body::Signed(of) => {
            o["requestBody"] = json!({
                "required": true,
                "content": { "application/json": { "schema": of(input).to_value() } }
            });
        }
        Body::Bytes => {
            o["requestBody"] = json!({
                "required": true,
                "content": {
                    "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }
                }
            });
        }
    }
    if !op.headers.is_empty() {
        let headers: Vec<Value> = op
            .headers
            .iter()
            .map(|(name, description)| {
                json!({
                    "name": name,
                    "in": "header",
                    "required": false,
                    "schema": { "type": "string" },
                    "description": description,
                })
            })
            .collect();
        o["parameters"] = Value::Array(headers);
    }
    let has_body = op.method != "head";
    let mut responses = Map::new();
    for a in &op.answers {
        let mut r = json!({ "description": a.description });
        if let Some(of) = a.body {
            r["content"] = json_content(of(output).to_value());
        }
        if op.id == "metrics" {
            // The Prometheus text exposition format is the default answer; JSON on request.
            r["content"]["text/plain"] = json!({ "schema": { "type": "string" } });
        }
        if op.id == "getContext" {
            r["headers"] = json!({ "ctxgate-storage-read": {
                "description": "Bytes this answer read from storage: the version's index when \
                    this process opened it for the answer, and the chunk texts it had not cached \
                    (0 when everything was in memory).",
                "required": true,
                "schema": { "type": "integer", "minimum": 0 }
            }});
        }
        responses.insert(a.status.to_string(), r);
    }
    for (status, codes) in op.errors() {
        responses.insert(
            status.to_string(),
            error_response(status, &codes, error, has_body),
        );
    }
    o["responses"] = Value::Object(responses);
    (o, request)
}

fn json_content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

/// An error answer whose `code` is one of `codes`.
fn error_response(status: u16, codes: &[&str], error: &Value, has_body: bool) -> Value {
    let list = codes
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut r = json!({ "description": format!("An error: {list}") });
    if has_body {
        r["content"] = json_content(json!({
            "allOf": [error],
            "properties": { "error": { "properties": { "code": { "enum": codes } } } }
        }));
    }
    match status {
        401 => {
            r["headers"] = json!({ "WWW-Authenticate": {
                "description": "RFC 6750: `Bearer realm=\"ctxgate\"`, with `error=\"invalid_token\"` and the code for a wrong key",
                "required": true,
                "schema": { "type": "string" }
            }});
        }
        429 => {
            r["headers"] = json!({ "Retry-After": {
                "description": "Seconds until retrying can succeed",
                "required": true,
                "schema": { "type": "integer", "minimum": 0 }
            }});
        }
        _ => {}
    }
    r
}

/// `components/schemas` from both sides: a type written and read alike is listed once; one
/// read differently (defaults make its fields optional) gets an `Input` twin, whose name the
/// returned set holds.
fn merge(
    input: Map<String, Value>,
    output: Map<String, Value>,
) -> (Map<String, Value>, BTreeSet<String>) {
    let mut renamed = BTreeSet::new();
    // Renaming one type changes the schemas that refer to it: repeat until nothing changes.
    loop {
        let before = renamed.len();
        for (name, schema) in &input {
            if renamed.contains(name) {
                continue;
            }
            let schema = rename_refs(schema.clone(), &renamed);
            if output.get(name).is_some_and(|o| *o != schema) {
                renamed.insert(name.clone());
            }
        }
        if renamed.len() == before {
            break;
        }
    }
    let mut all = output;
    for (name, schema) in input {
        let schema = rename_refs(schema, &renamed);
        if renamed.contains(&name) {
            all.insert(format!("{name}Input"), schema);
        } else {
            all.entry(name).or_insert(schema);
        }
    }
    all.sort_keys();
    (all, renamed)
}

/// `schema` with its references to the `renamed` types pointed at their `Input` twins.
fn rename_refs(mut schema: Value, renamed: &BTreeSet<String>) -> Value {
    match &mut schema {
        Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                let target = v.as_str().and_then(|r| r.strip_prefix(COMPONENTS));
                match target {
                    Some(name) if k == "$ref" && renamed.contains(name) => {
                        *v = json!(format!("{COMPONENTS}{name}Input"));
                    }
                    _ => *v = rename_refs(std::mem::take(v), renamed),
                }
            }
        }
        Value::Array(a) => {
            for v in a.iter_mut() {
                *v = rename_refs(std::mem::take(v), renamed);
            }
        }
        _ => {}
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twins_are_named_and_referred_to() {
        let input = json!({
            "A": { "properties": { "b": { "$ref": "#/components/schemas/B" } } },
            "B": { "required": [] },
            "C": { "type": "string" }
        });
        let output = json!({
            "A": { "properties": { "b": { "$ref": "#/components/schemas/B" } } },
            "B": { "required": ["x"] },
            "C": { "type": "string" }
        });
        let (all, renamed) = merge(
            input.as_object().unwrap().clone(),
            output.as_object().unwrap().clone(),
        );
        assert_eq!(renamed, BTreeSet::from(["A".to_string(), "B".to_string()]));
        assert_eq!(
            all["AInput"]["properties"]["b"]["$ref"],
            "#/components/schemas/BInput"
        );
        assert_eq!(
            all["A"]["properties"]["b"]["$ref"],
            "#/components/schemas/B"
        );
        assert!(all.get("CInput").is_none());
    }
}
