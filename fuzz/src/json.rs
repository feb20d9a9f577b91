//! JSON values shaped like the API's requests, built by `arbitrary`: object keys are mostly the
//! field names of the request types and strings mostly values those fields take, so most inputs
//! reach past the JSON parser into the handlers' own checks.

use arbitrary::Arbitrary;
use serde_json::{Map, Number, Value};

/// Field names of the request bodies (context, search, counting, history, projects, admin, MCP)
/// and of what they nest (messages, sources, limits, JSON-RPC).
const FIELDS: &[&str] = &[
    "project",
    "query",
    "budget",
    "model",
    "hot_paths",
    "continuation",
    "compression",
    "profile",
    "error_output",
    "session",
    "messages",
    "keep_rounds",
    "reply_tokens",
    "page_tokens",
    "text",
    "texts",
    "encoding",
    "name",
    "source",
    "kind",
    "url",
    "rev",
    "path",
    "limits",
    "tokens_per_day",
    "tokens_per_month",
    "requests_per_minute",
    "concurrency",
    "allowed_models",
    "id",
    "current_version",
    "keep_last",
    "keep_younger_than_seconds",
    "grace_seconds",
    "dry_run",
    "role",
    "content",
    "type",
    "tool_calls",
    "tool_call_id",
    "pinned",
    "function",
    "arguments",
    "jsonrpc",
    "method",
    "params",
    "protocolVersion",
    "capabilities",
    "clientInfo",
    "cursor",
];

/// Values those fields take, and a few that stress them.
const WORDS: &[&str] = &[
    "sample",
    "acme",
    "gpt-4o",
    "gpt-4.1",
    "gpt-5",
    "claude-sonnet-4",
    "gpt-oss-120b",
    "o200k_base",
    "cl100k_base",
    "p50k_base",
    "r50k_base",
    "none",
    "light",
    "medium",
    "aggressive",
    "plan",
    "expand",
    "repair",
    "user",
    "assistant",
    "system",
    "tool",
    "developer",
    "local",
    "git",
    "tarball",
    "https://example.com/repo.git",
    "https://example.com/a.tar.gz",
    "/tmp",
    "main",
    "2.0",
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "get_context",
    "search_code",
    "count_tokens",
    "list_projects",
    "text",
    "image_url",
    "function",
    "src/config.rs",
    "parse_config",
    "how is the config parsed?",
    "thread 'main' panicked at src/config.rs:7:5",
    "",
    " ",
    "\u{0}",
    "\u{feff}",
    "..",
    "../../etc/passwd",
    "a/b",
    "🙂",
];

/// A JSON value.
#[derive(Arbitrary, Debug)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A small count (budgets, rounds).
    Small(u16),
    /// Any integer.
    Int(i64),
    /// Any unsigned integer.
    Uint(u64),
    /// A float (non-finite ones become `null`).
    Float(f64),
    /// One of [`WORDS`].
    Word(u8),
    /// Any string.
    Text(String),
    /// An array.
    Array(Vec<Json>),
    /// An object.
    Object(Vec<(Key, Json)>),
}

/// An object key.
#[derive(Arbitrary, Debug)]
pub enum Key {
    /// One of [`FIELDS`].
    Field(u8),
    /// Any string.
    Other(String),
}

/// Values nested deeper than this become `null` (the API refuses deep nesting anyway).
const MAX_DEPTH: usize = 12;

impl Json {
    /// The value as `serde_json` holds it.
    pub fn to_value(&self) -> Value {
        self.at_depth(0)
    }

    fn at_depth(&self, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::Null;
        }
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Small(n) => Value::from(*n),
            Json::Int(n) => Value::from(*n),
            Json::Uint(n) => Value::from(*n),
            Json::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Json::Word(i) => Value::from(pick(WORDS, *i)),
            Json::Text(s) => Value::from(s.as_str()),
            Json::Array(items) => items.iter().map(|v| v.at_depth(depth + 1)).collect(),
            Json::Object(fields) => {
                let mut map = Map::new();
                for (k, v) in fields {
                    let key = match k {
                        Key::Field(i) => pick(FIELDS, *i).to_owned(),
                        Key::Other(s) => s.clone(),
                    };
                    map.insert(key, v.at_depth(depth + 1));
                }
                Value::Object(map)
            }
        }
    }
}

fn pick(list: &'static [&'static str], i: u8) -> &'static str {
    list[usize::from(i) % list.len()]
}
