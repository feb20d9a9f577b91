//! The API's tools over the Model Context Protocol (JSON-RPC 2.0), for any transport: `POST /mcp`
//! (Streamable HTTP, answered as single JSON responses) here, stdio in `ctxgate mcp`.
//!
//! Each tool calls the same handler as its HTTP endpoint, with the caller's key, quota and
//! org scope, so MCP clients get exactly what HTTP clients get; the tools' input and output
//! schemas are derived from the same request and answer types.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ctxgate_core::catalog::DEFAULT_BUDGET;
use ctxgate_core::error_code::ErrorCode;
use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::backend::pick_project;
use crate::error::ApiError;
use crate::extract::{Caller, JsonBody};
use crate::routes::projects::no_project;
use crate::routes::{
    ContextAnswer, ContextRequest, CountAnswer, CountRequest, ProjectList, SearchAnswer,
    SearchRequest, context_value, count_handler, list_handler, search_answer,
};
use crate::state::AppState;

/// The protocol revisions this server speaks, newest first.
const PROTOCOLS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// The most tokens a `get_context` result carries. MCP clients cap one tool result (Claude Code
/// at 25,000 tokens by default) and the structured part adds each piece's metadata, so the
/// prompt stays well under that: a larger `budget` is capped, with a warning. It is the core's
/// [`DEFAULT_BUDGET`], what a call naming neither `budget` nor `model` gets on every host.
pub const TOOL_BUDGET_CAP: u32 = DEFAULT_BUDGET;

/// The share of the model's window a `get_context` result takes by default (the rest is the
/// conversation's and the reply's).
const DEFAULT_WINDOW_SHARE: u32 = 4;

/// What the tools act on beyond the caller: `ctxgate mcp` serves one folder's project, so
/// `project` may be left out there and no other project of the data directory is visible.
#[derive(Clone, Debug, Default)]
pub struct ToolScope {
    /// The id of the one project the tools serve: what a call without `project` reads, the only
    /// project `list_projects` shows and the only one a call may name (any other, existing or
    /// not, is `project_not_found`). `None` (`POST /mcp`) serves every project of the caller's
    /// org.
    pub project: Option<String>,
    /// The model a `get_context` call without `model` targets (the folder's ctxgate.toml).
    pub default_model: Option<String>,
    /// The budget of a `get_context` call without `budget` (the folder's ctxgate.toml), instead
    /// of the default; capped at [`TOOL_BUDGET_CAP`] like any budget.
    pub default_budget: Option<u32>,
}

/// Which side of serde a schema describes: what a request may hold (its fields with defaults
/// optional) or what an answer holds (its skipped-when-empty fields optional).
#[derive(Clone, Copy)]
enum Contract {
    Input,
    Output,
}

/// The JSON Schema of `T` as MCP wants it: an object schema, without the `$schema` marker.
fn schema<T: JsonSchema>(contract: Contract) -> Value {
    let settings = schemars::generate::SchemaSettings::default();
    let settings = match contract {
        Contract::Input => settings.for_deserialize(),
        Contract::Output => settings.for_serialize(),
    };
    let root = settings.into_generator().into_root_schema_for::<T>();
    let mut v = serde_json::to_value(root).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
        o.insert("type".into(), json!("object"));
    }
    v
}

/// `project` becomes optional where the scope supplies one.
fn optional_project(mut input: Value, scope: &ToolScope) -> Value {
    if let Some(default) = &scope.project {
        if let Some(req) = input["required"].as_array_mut() {
            req.retain(|r| r != "project");
        }
        input["properties"]["project"]["description"] = json!(format!(
            "Project name or id (default: {default}, the folder served)"
        ));
    }
    input
}

/// The answer schema of `get_context`: [`ContextAnswer`] without `prompt`, which is the text
/// part of the result (sending it twice would double what the client must hold).
fn context_output() -> Value {
    let mut v = schema::<ContextAnswer<'static>>(Contract::Output);
    if let Some(p) = v["properties"].as_object_mut() {
        p.remove("prompt");
    }
    v
}

/// The tools, their schemas and their hints. None of them changes anything a client could see
/// (a call is metered and audited, as over HTTP).
pub fn tools(scope: &ToolScope) -> Value {
    let read_only = |title: &str| {
        json!({ "title": title, "readOnlyHint": true, "destructiveHint": false,
                "idempotentHint": true, "openWorldHint": false })
    };
    json!([
        {
            "name": "get_context",
            "title": "Get context",
            "description": format!(
                "The most relevant code of a project for a task, within an exact token budget, with \
                 provenance for every piece. At most {TOOL_BUDGET_CAP} tokens (a larger `budget` is \
                 capped). Without `budget`: a quarter of the model's window, or {DEFAULT_BUDGET} \
                 tokens without `model`."
            ),
            "inputSchema": optional_project(schema::<ContextRequest>(Contract::Input), scope),
            "outputSchema": context_output(),
            "annotations": read_only("Get context"),
        },
        {
            "name": "search_code",
            "title": "Search code",
            "description": "Ranked pieces of a project's code for a query (where they are and why), one page of page_tokens at a time.",
            "inputSchema": optional_project(schema::<SearchRequest>(Contract::Input), scope),
            "outputSchema": schema::<SearchAnswer>(Contract::Output),
            "annotations": read_only("Search code"),
        },
        {
            "name": "count_tokens",
            "title": "Count tokens",
            "description": "Exact token count of a text for a model or encoding.",
            "inputSchema": schema::<CountRequest>(Contract::Input),
            "outputSchema": schema::<CountAnswer>(Contract::Output),
            "annotations": read_only("Count tokens"),
        },
        {
            "name": "list_projects",
            "title": "List projects",
            "description": "The projects this caller can read (resolves names to ids).",
            "inputSchema": { "type": "object", "properties": {}, "additionalProperties": false },
            "outputSchema": schema::<ProjectList>(Contract::Output),
            "annotations": read_only("List projects"),
        }
    ])
}

/// A JSON-RPC 2.0 message as `POST /mcp` reads it. The handler reads the body as any JSON, so
/// it can answer a message that is not one with a JSON-RPC error; this is the message's shape
/// for the OpenAPI document.
#[derive(serde::Deserialize, JsonSchema)]
pub struct RpcRequest {
    /// Always `2.0`.
    pub jsonrpc: String,
    /// The request's id; absent in a notification (answered 202, with no body).
    #[serde(default)]
    pub id: Option<RpcId>,
    /// `initialize`, `ping`, `tools/list`, `tools/call`, or a notification's method.
    pub method: String,
    /// The method's parameters (`tools/call`: `name` and `arguments`).
    #[serde(default)]
    pub params: Option<serde_json::Map<String, Value>>,
}

/// A JSON-RPC id: a string or a number (null when the request's could not be read).
#[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RpcId {
    /// A string id.
    Text(String),
    /// A number id.
    Number(serde_json::Number),
}

/// A JSON-RPC 2.0 answer: `result` or `error`.
#[derive(serde::Serialize, JsonSchema)]
pub struct RpcAnswer {
    /// Always `2.0`.
    jsonrpc: &'static str,
    /// The request's id.
    #[schemars(with = "Option<RpcId>")]
    id: Value,
    /// What the method returned (`tools/call`: `content`, `structuredContent` and `isError`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    result: Option<Value>,
    /// Why the message could not be answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<RpcError>,
}

/// A JSON-RPC error.
#[derive(serde::Serialize, JsonSchema)]
pub struct RpcError {
    /// `-32700` parse error, `-32600` invalid request, `-32601` no such method, `-32602` bad
    /// parameters.
    code: i64,
    /// For people.
    message: String,
}

fn rpc_answer(answer: RpcAnswer) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}

fn rpc_result(id: &Value, result: Value) -> Value {
    rpc_answer(RpcAnswer {
        jsonrpc: "2.0",
        id: id.clone(),
        result: Some(result),
        error: None,
    })
}

/// A JSON-RPC error answer (`-32700` parse error, `-32600` invalid request, ...).
pub fn rpc_error(id: &Value, code: i64, message: impl Into<String>) -> Value {
    rpc_answer(RpcAnswer {
        jsonrpc: "2.0",
        id: id.clone(),
        result: None,
        error: Some(RpcError {
            code,
            message: message.into(),
        }),
    })
}

fn args<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ApiError> {
    serde_json::from_value(v)
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, format!("tool arguments: {e}")))
}

/// A tool's answer: text for the model plus the structured JSON, or the API error as a tool
/// error (so the model can read why).
fn tool_result(outcome: Result<Value, ApiError>, text_of: impl Fn(&mut Value) -> String) -> Value {
    match outcome {
        Ok(mut v) => {
            let text = text_of(&mut v);
            json!({
                "content": [{ "type": "text", "text": text }],
                "structuredContent": v,
                "isError": false
            })
        }
        Err(e) => json!({
            "content": [{ "type": "text", "text": format!("{}: {}", e.code, e.message) }],
            "structuredContent": { "error": { "code": e.code, "message": e.message, "details": e.details } },
            "isError": true
        }),
    }
}

/// The budget of a `get_context` call that names a model and no budget: a quarter of the
/// model's window (its input limit when lower), at most [`TOOL_BUDGET_CAP`]. `None` for an
/// unknown model, which the handler then refuses with its usual error. A call naming neither
/// gets the core's default, and its warning, as on every host.
fn model_budget(state: &AppState, model: &str) -> Option<u32> {
    let m = state.catalog.resolve(model).ok()?;
    let window = m
        .max_input
        .unwrap_or(m.context_window)
        .min(m.context_window);
    Some((window / DEFAULT_WINDOW_SHARE).clamp(1, TOOL_BUDGET_CAP))
}

/// Sets the budget of a `get_context` call by MCP's rules (a model's quarter when none is given,
/// [`TOOL_BUDGET_CAP`] at most) and says what it did, for the result's warnings.
fn tool_budget(state: &AppState, req: &mut ContextRequest) -> Option<String> {
    match (req.budget, req.model.as_deref()) {
        (None, Some(m)) => {
            let b = model_budget(state, m)?;
            req.budget = Some(b);
            Some(format!(
                "no budget given: {b} tokens (a quarter of the model's window, at most \
                 {TOOL_BUDGET_CAP}, so the result fits an MCP client's limit); pass a budget for \
                 more or less"
            ))
        }
        (Some(b), _) if b > TOOL_BUDGET_CAP => {
            req.budget = Some(TOOL_BUDGET_CAP);
            Some(format!(
                "budget {b} capped at {TOOL_BUDGET_CAP} tokens, the most one MCP tool result \
                 carries (clients limit a tool result's size); the HTTP API and the command line \
                 take larger budgets"
            ))
        }
        _ => None,
    }
}

async fn get_context(state: &AppState, caller: &Caller, a: Value) -> Value {
    let (out, note) = match args::<ContextRequest>(a) {
        Ok(mut req) => {
            let note = tool_budget(state, &mut req);
            (
                context_value(state.clone(), caller.clone(), req).await,
                note,
            )
        }
        Err(e) => (Err(e), None),
    };
    tool_result(out, |v| {
        let mut text = match v.as_object_mut().and_then(|o| o.remove("prompt")) {
            Some(Value::String(p)) => p,
            _ => String::new(),
        };
        if let (Some(n), Some(w)) = (&note, v["warnings"].as_array_mut()) {
            w.push(json!(n));
        }
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

async fn call_tool(
    state: &AppState,
    caller: &Caller,
    scope: &ToolScope,
    name: &str,
    mut a: Value,
) -> Option<Value> {
    let st = || State(state.clone());
    let pretty = |v: &mut Value| serde_json::to_string_pretty(v).unwrap_or_default();
    if let Some(o) = a.as_object_mut()
        && matches!(name, "get_context" | "search_code")
    {
        if let Some(only) = &scope.project {
            let key = match o.get("project") {
                None => Some(only.clone()),
                Some(Value::String(key)) => Some(key.clone()),
                // Not a name: the tool's own argument error says so.
                Some(_) => None,
            };
            if let Some(key) = key {
                match within_scope(state, caller, only, &key).await {
                    Ok(id) => {
                        o.insert("project".into(), json!(id));
                    }
                    Err(e) => return Some(tool_result(Err(e), |_| String::new())),
                }
            }
        }
        // The folder's defaults apply to a call that names neither (as on the command line).
        if name == "get_context" && !o.contains_key("model") && !o.contains_key("budget") {
            if let Some(m) = &scope.default_model {
                o.insert("model".into(), json!(m));
            }
            if let Some(b) = scope.default_budget {
                o.insert("budget".into(), json!(b));
            }
        }
    }
    let to_value = |v: Result<Value, serde_json::Error>| {
        v.map_err(|e| ApiError::new(ErrorCode::InternalError, e.to_string()))
    };
    Some(match name {
        "get_context" => get_context(state, caller, a).await,
        "search_code" => {
            let out = match args::<SearchRequest>(a) {
                Ok(req) => match search_answer(state, caller, req).await {
                    Ok(page) => to_value(serde_json::to_value(page)),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            tool_result(out, pretty)
        }
        "count_tokens" => {
            let out = match args::<CountRequest>(a) {
                Ok(req) => match count_handler(st(), caller.clone(), JsonBody(req)).await {
                    Ok(j) => to_value(serde_json::to_value(j.0)),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            tool_result(out, |v| v["total"].to_string())
        }
        "list_projects" => {
            let out = match list_handler(st(), caller.clone()).await {
                Ok(mut j) => {
                    if let Some(only) = &scope.project {
                        j.0.projects.retain(|p| &p.id == only);
                    }
                    to_value(serde_json::to_value(j.0))
                }
                Err(e) => Err(e),
            };
            tool_result(out, pretty)
        }
        _ => return None,
    })
}

/// The id of the project `key` names when it is the scope's project `only`; any other key,
/// another project's or none's, gets the answer of a project that does not exist, before any
/// other check, so a scoped client learns nothing about the data directory's other projects.
async fn within_scope(
    state: &AppState,
    caller: &Caller,
    only: &str,
    key: &str,
) -> Result<String, ApiError> {
    let mut projects = state.projects.projects(&caller.org.name).await?;
    projects.retain(|p| p.id == only);
    pick_project(projects, key)
        .map(|p| p.id)
        .ok_or_else(|| no_project(key))
}

/// Answers one JSON-RPC message; `None` for a notification or a response (they get no answer).
pub async fn handle(
    state: &AppState,
    caller: &Caller,
    scope: &ToolScope,
    msg: Value,
) -> Option<Value> {
    if msg.is_array() {
        return Some(rpc_error(&Value::Null, -32600, "batches are not supported"));
    }
    let method = msg["method"].as_str().unwrap_or_default().to_string();
    let id = msg.get("id").cloned()?;
    // JSON-RPC 2.0: an id is a string, a number or null; an answer to a request whose id cannot
    // be one carries null.
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return Some(rpc_error(
            &Value::Null,
            -32600,
            "a JSON-RPC id is a string or a number",
        ));
    }
    if msg["jsonrpc"] != "2.0" || method.is_empty() {
        return Some(rpc_error(&id, -32600, "not a JSON-RPC 2.0 request"));
    }
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    Some(match method.as_str() {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or(PROTOCOLS[0]);
            let version = PROTOCOLS
                .iter()
                .find(|v| **v == asked)
                .copied()
                .unwrap_or(PROTOCOLS[0]);
            let instructions = match &scope.project {
                Some(_) => {
                    "Call get_context with a task to get the code of this folder that matters, within a token budget."
                }
                None => {
                    "Call get_context with a project and a task to get the code that matters, within a token budget."
                }
            };
            rpc_result(
                &id,
                json!({
                    "protocolVersion": version,
                    "capabilities": { "tools": { "listChanged": false } },
                    "serverInfo": { "name": "ctxgate", "version": env!("CARGO_PKG_VERSION") },
                    "instructions": instructions
                }),
            )
        }
        "ping" => rpc_result(&id, json!({})),
        "tools/list" => rpc_result(&id, json!({ "tools": tools(scope) })),
        "tools/call" => {
            let name = params["name"].as_str().unwrap_or_default();
            let a = params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            match call_tool(state, caller, scope, name, a).await {
                Some(r) => rpc_result(&id, r),
                None => rpc_error(&id, -32602, format!("unknown tool `{name}`")),
            }
        }
        other => rpc_error(&id, -32601, format!("method `{other}` not found")),
    })
}

/// `POST /mcp`.
pub async fn mcp(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(msg): JsonBody<Value>,
) -> Response {
    match handle(&state, &caller, &ToolScope::default(), msg).await {
        Some(answer) => Json(answer).into_response(),
        None => StatusCode::ACCEPTED.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_a_json_rpc_id() {
        assert_eq!(rpc_error(&json!(7), -32601, "no")["id"], 7);
        assert_eq!(
            rpc_error(&json!("a"), -32600, "no"),
            json!({ "jsonrpc": "2.0", "id": "a", "error": { "code": -32600, "message": "no" } })
        );
    }

    #[test]
    fn every_tool_has_object_schemas_and_read_only_hints() {
        for scope in [
            ToolScope::default(),
            ToolScope {
                project: Some("p".into()),
                ..ToolScope::default()
            },
        ] {
            let tools = tools(&scope);
            for t in tools.as_array().unwrap() {
                assert_eq!(t["inputSchema"]["type"], "object", "{t}");
                assert_eq!(t["outputSchema"]["type"], "object", "{t}");
                assert_eq!(t["annotations"]["readOnlyHint"], true);
            }
            let ctx = &tools[0];
            assert_eq!(ctx["name"], "get_context");
            let required = ctx["inputSchema"]["required"].as_array().unwrap();
            assert!(required.contains(&json!("query")));
            assert_eq!(
                required.contains(&json!("project")),
                scope.project.is_none()
            );
            assert!(ctx["outputSchema"]["properties"]["pieces"].is_object());
            assert!(ctx["outputSchema"]["properties"].get("prompt").is_none());
        }
    }
}
