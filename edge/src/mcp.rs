//! `POST /mcp`: the API's tools over the Model Context Protocol (Streamable HTTP transport,
//! JSON-RPC 2.0, answered as single JSON responses).
//!
//! Each tool calls the same handler as its HTTP endpoint, with the caller's key, quota and
//! org scope, so MCP clients get exactly what HTTP clients get.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::routes::{Caller, JsonBody, context_value, count_handler, list_handler, search_handler};
use crate::state::AppState;

/// The protocol revisions this server speaks, newest first.
const PROTOCOLS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

fn tools() -> Value {
    let project = json!({ "type": "string", "description": "Project name or id" });
    json!([
        {
            "name": "get_context",
            "description": "The most relevant code of a project for a task, within an exact token budget, with provenance for every piece.",
            "inputSchema": { "type": "object", "required": ["project", "query"], "properties": {
                "project": project,
                "query": { "type": "string", "description": "The task or question" },
                "budget": { "type": "integer", "description": "Token budget of the context" },
                "model": { "type": "string", "description": "Target model (sets tokenizer and window)" },
                "hot_paths": { "type": "array", "items": { "type": "string" } },
                "continuation": { "type": "string" },
                "session": { "type": "string", "description": "Your session id: pieces already sent to it are named, not repeated" },
                "compression": { "type": "string", "enum": ["none", "light", "medium", "aggressive"], "description": "light: comments and blank lines removed; medium: bodies of lower-value functions elided; aggressive: signatures and key lines only" },
                "profile": { "type": "string", "enum": ["plan", "expand", "repair"], "description": "plan: small overview (<= 2000 tokens, 5 pieces); expand: full budget; repair: error_output and the code its stack frames point at" },
                "error_output": { "type": "string", "description": "Error output (stack trace, compiler or test output) for profile repair" }
            } }
        },
        {
            "name": "search_code",
            "description": "Ranked pieces of a project's code for a query, one page of page_tokens at a time.",
            "inputSchema": { "type": "object", "required": ["project", "query"], "properties": {
                "project": project,
                "query": { "type": "string" },
                "page_tokens": { "type": "integer" },
                "continuation": { "type": "string" }
            } }
        },
        {
            "name": "count_tokens",
            "description": "Exact token count of a text for a model or encoding.",
            "inputSchema": { "type": "object", "required": ["text"], "properties": {
                "text": { "type": "string" },
                "model": { "type": "string" },
                "encoding": { "type": "string" }
            } }
        },
        {
            "name": "list_projects",
            "description": "The projects this API key can read (resolves names to ids).",
            "inputSchema": { "type": "object", "properties": {} }
        }
    ])
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn rpc_error(id: &Value, code: i64, message: impl Into<String>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } })
}

fn args<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ApiError> {
    serde_json::from_value(v)
        .map_err(|e| ApiError::bad_request("invalid_request", format!("tool arguments: {e}")))
}

/// A tool's answer: text for the model plus the structured JSON, or the API error as a tool
/// error (so the model can read why).
fn tool_result(outcome: Result<Value, ApiError>, text_of: impl Fn(&Value) -> String) -> Value {
    match outcome {
        Ok(v) => json!({
            "content": [{ "type": "text", "text": text_of(&v) }],
            "structuredContent": v,
            "isError": false
        }),
        Err(e) => json!({
            "content": [{ "type": "text", "text": format!("{}: {}", e.code, e.message) }],
            "structuredContent": { "error": { "code": e.code, "message": e.message, "details": e.details } },
            "isError": true
        }),
    }
}

async fn call_tool(state: &AppState, caller: &Caller, name: &str, a: Value) -> Option<Value> {
    let st = || State(state.clone());
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    Some(match name {
        "get_context" => {
            let out = match args(a) {
                Ok(req) => context_value(state.clone(), caller.clone(), req).await,
                Err(e) => Err(e),
            };
            tool_result(out, |v| {
                let mut text = v["prompt"].as_str().unwrap_or_default().to_string();
                let known = v["session"]["already_delivered"].as_array();
                if let Some(known) = known.filter(|k| !k.is_empty()) {
                    text.push_str("\n\nAlready sent earlier in this session (not repeated):\n");
                    for r in known {
                        text.push_str(&format!(
                            "- {}:{}-{}\n",
                            r["path"].as_str().unwrap_or_default(),
                            r["start_line"],
                            r["end_line"]
                        ));
                    }
                }
                text
            })
        }
        "search_code" => {
            let out = match args(a) {
                Ok(req) => search_handler(st(), caller.clone(), JsonBody(req))
                    .await
                    .map(|j| j.0),
                Err(e) => Err(e),
            };
            tool_result(out, pretty)
        }
        "count_tokens" => {
            let out = match args(a) {
                Ok(req) => count_handler(st(), caller.clone(), JsonBody(req))
                    .await
                    .map(|j| j.0),
                Err(e) => Err(e),
            };
            tool_result(out, |v| v["total"].to_string())
        }
        "list_projects" => {
            let out = list_handler(st(), caller.clone()).await.map(|j| j.0);
            tool_result(out, pretty)
        }
        _ => return None,
    })
}

/// `POST /mcp`.
pub async fn mcp(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(msg): JsonBody<Value>,
) -> Response {
    if msg.is_array() {
        return Json(rpc_error(&Value::Null, -32600, "batches are not supported")).into_response();
    }
    let method = msg["method"].as_str().unwrap_or_default().to_string();
    let Some(id) = msg.get("id").cloned() else {
        // Notifications and responses get no answer.
        return StatusCode::ACCEPTED.into_response();
    };
    if msg["jsonrpc"] != "2.0" || method.is_empty() {
        return Json(rpc_error(&id, -32600, "not a JSON-RPC 2.0 request")).into_response();
    }
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let answer = match method.as_str() {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or(PROTOCOLS[0]);
            let version = PROTOCOLS
                .iter()
                .find(|v| **v == asked)
                .copied()
                .unwrap_or(PROTOCOLS[0]);
            rpc_result(
                &id,
                json!({
                    "protocolVersion": version,
                    "capabilities": { "tools": { "listChanged": false } },
                    "serverInfo": { "name": "ctxgate", "version": env!("CARGO_PKG_VERSION") },
                    "instructions": "Call get_context with a project and a task to get the code that matters, within a token budget."
                }),
            )
        }
        "ping" => rpc_result(&id, json!({})),
        "tools/list" => rpc_result(&id, json!({ "tools": tools() })),
        "tools/call" => {
            let name = params["name"].as_str().unwrap_or_default();
            let a = params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            match call_tool(&state, &caller, name, a).await {
                Some(r) => rpc_result(&id, r),
                None => rpc_error(&id, -32602, format!("unknown tool `{name}`")),
            }
        }
        other => rpc_error(&id, -32601, format!("method `{other}` not found")),
    };
    Json(answer).into_response()
}
