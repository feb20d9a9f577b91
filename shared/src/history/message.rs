//! The conversation model: OpenAI chat messages, parsed strictly, and their token cost.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::TokenizerSpec;
use crate::error_code::ErrorCode;

/// Who wrote a message.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the application.
    System,
    /// OpenAI's newer name for system instructions; treated exactly like `system`.
    Developer,
    /// The person.
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering an assistant's tool call.
    Tool,
    /// The legacy name of `tool` (function-calling API).
    Function,
}

impl Role {
    /// Parses a role name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            "function" => Role::Function,
            _ => return None,
        })
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
        }
    }

    /// System instructions are never summarized.
    pub fn is_instruction(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

/// A message's content: a string, or OpenAI content parts (`{"type": "text", "text": ...}`,
/// images...), kept as they came.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content parts.
    Parts(Vec<Value>),
}

/// One chat message. Fields ctxgate does not know are kept and written back unchanged.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content; absent or null on an assistant message that only calls tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// Participant or function name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool calls an assistant message makes, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
    /// The client's id for the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// When it was written (any JSON the client uses: RFC 3339 string or epoch number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Value>,
    /// A pinned message is always kept verbatim.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// Everything else the client sent on the message.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A plain-text message.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(Content::Text(text.into())),
            name: None,
            tool_call_id: None,
            tool_calls: None,
            id: None,
            timestamp: None,
            pinned: false,
            extra: Map::new(),
        }
    }

    /// The text the model reads: the string, or the text parts joined by newlines.
    pub fn text_content(&self) -> String {
        match &self.content {
            None => String::new(),
            Some(Content::Text(t)) => t.clone(),
            Some(Content::Parts(parts)) => {
                let mut out = String::new();
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(t);
                    }
                }
                out
            }
        }
    }

    /// Whether the message takes part in tool use (calls tools or answers a call).
    pub fn is_tool_activity(&self) -> bool {
        matches!(self.role, Role::Tool | Role::Function)
            || self
                .tool_calls
                .as_ref()
                .is_some_and(|c| c.as_array().is_none_or(|a| !a.is_empty()))
            || self.extra.contains_key("function_call")
    }
}

/// A parsed conversation, remembering whether it came as a bare array or inside an object (whose
/// other fields are written back).
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// The messages, in order.
    pub messages: Vec<Message>,
    /// The enclosing object, without its `messages`, when the input was an object.
    pub envelope: Option<Map<String, Value>>,
}

impl Conversation {
    /// The conversation in the format it came in, with `messages` replaced.
    pub fn to_json(&self, messages: &[Message]) -> Value {
        let list = serde_json::to_value(messages).unwrap_or(Value::Array(Vec::new()));
        match &self.envelope {
            None => list,
            Some(env) => {
                let mut obj = env.clone();
                obj.insert("messages".into(), list);
                Value::Object(obj)
            }
        }
    }
}

/// Why a conversation could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// Not UTF-8.
    #[error("the conversation is not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// Not JSON.
    #[error("the conversation is not valid JSON: {0}")]
    Json(String),
    /// JSON, but not an array or an object with `messages`.
    #[error(
        "expected a JSON array of messages or an object with a `messages` array, found {found}"
    )]
    Shape {
        /// What was found instead.
        found: &'static str,
    },
    /// No messages.
    #[error("the conversation has no messages")]
    Empty,
    /// A message that is not an object or lacks a role.
    #[error("message {index}: {reason}")]
    Malformed {
        /// 0-based position.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A role ctxgate does not know.
    #[error(
        "message {index}: unknown role `{role}` (expected system, developer, user, assistant, tool or function)"
    )]
    UnknownRole {
        /// 0-based position.
        index: usize,
        /// The role given.
        role: String,
    },
}

impl ParseError {
    /// The stable machine-readable code the CLI and the API report.
    pub fn code(&self) -> ErrorCode {
        match self {
            ParseError::NotUtf8 { .. } => ErrorCode::InvalidUtf8,
            ParseError::Json(_) => ErrorCode::MalformedJson,
            ParseError::Shape { .. } => ErrorCode::InvalidConversation,
            ParseError::Empty => ErrorCode::ConversationEmpty,
            ParseError::Malformed { .. } => ErrorCode::MalformedMessage,
            ParseError::UnknownRole { .. } => ErrorCode::UnknownRole,
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses raw bytes (UTF-8 JSON) into a conversation.
pub fn parse_bytes(bytes: &[u8]) -> Result<Conversation, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ParseError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    parse(text)
}

/// Parses the OpenAI chat format: an array of messages, or an object with a `messages` array.
pub fn parse(text: &str) -> Result<Conversation, ParseError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ParseError::Json(e.to_string()))?;
    from_value(value)
}

/// Reads a conversation from JSON already parsed.
pub fn from_value(value: Value) -> Result<Conversation, ParseError> {
    let (list, envelope) = match value {
        Value::Array(a) => (a, None),
        Value::Object(mut o) => match o.remove("messages") {
            Some(Value::Array(a)) => (a, Some(o)),
            Some(other) => {
                return Err(ParseError::Shape {
                    found: match other {
                        Value::Null => "`messages: null`",
                        _ => "a `messages` field that is not an array",
                    },
                });
            }
            None => {
                return Err(ParseError::Shape {
                    found: "an object without `messages`",
                });
            }
        },
        other => {
            return Err(ParseError::Shape {
                found: kind(&other),
            });
        }
    };
    let messages = messages_from_values(list)?;
    Ok(Conversation { messages, envelope })
}

/// Validates and converts a list of JSON messages, with an error that names the message.
pub fn messages_from_values(list: Vec<Value>) -> Result<Vec<Message>, ParseError> {
    if list.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut out = Vec::with_capacity(list.len());
    for (index, v) in list.into_iter().enumerate() {
        let bad = |reason: String| ParseError::Malformed { index, reason };
        let Value::Object(obj) = &v else {
            return Err(bad(format!("expected an object, found {}", kind(&v))));
        };
        match obj.get("role") {
            None => return Err(bad("no `role`".into())),
            Some(Value::String(r)) => {
                if Role::from_name(r).is_none() {
                    return Err(ParseError::UnknownRole {
                        index,
                        role: r.clone(),
                    });
                }
            }
            Some(other) => {
                return Err(bad(format!(
                    "`role` must be a string, found {}",
                    kind(other)
                )));
            }
        }
        match obj.get("content") {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(Value::Array(parts)) => {
                for (i, p) in parts.iter().enumerate() {
                    if !p.is_object() {
                        return Err(bad(format!(
                            "content part {i} must be an object, found {}",
                            kind(p)
                        )));
                    }
                }
            }
            Some(other) => {
                return Err(bad(format!(
                    "`content` must be a string, an array of parts or null, found {}",
                    kind(other)
                )));
            }
        }
        for field in ["name", "tool_call_id"] {
            if let Some(f) = obj.get(field)
                && !f.is_string()
                && !f.is_null()
            {
                return Err(bad(format!("`{field}` must be a string")));
            }
        }
        if let Some(p) = obj.get("pinned")
            && !p.is_boolean()
        {
            return Err(bad("`pinned` must be true or false".into()));
        }
        let m: Message = serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
        out.push(m);
    }
    Ok(out)
}

/// Tokens every message costs beyond its text (OpenAI's chat format wraps each message in about
/// 3 tokens of markers; one more is added as a margin, since providers differ).
pub const MESSAGE_OVERHEAD: u32 = 4;
/// Tokens the whole conversation costs beyond its messages (the reply primer, `<|assistant|>`).
pub const CONVERSATION_OVERHEAD: u32 = 3;
/// A non-text content part (an image, audio) counts as its JSON plus this: a high-detail
/// 1024×1024 image costs 765 tokens with OpenAI's models, so a budget that holds it is real.
pub const MEDIA_PART_TOKENS: u32 = 765;

/// A message's token cost, as ctxgate defines it and every guarantee uses it:
/// [`MESSAGE_OVERHEAD`] + the role + the text content + the name (plus 1) + the tool call id
/// + the tool calls' JSON + each non-text part's JSON and [`MEDIA_PART_TOKENS`]. Client
///   metadata (`id`, `timestamp`, `pinned`, unknown fields) is not sent to a model and is not
///   counted. With an estimating tokenizer, each piece is scaled and rounded up separately, which
///   can only over-count.
pub fn message_tokens(tok: &TokenizerSpec, m: &Message) -> u32 {
    let mut n = MESSAGE_OVERHEAD + tok.count(m.role.name());
    match &m.content {
        None => {}
        Some(Content::Text(t)) => n = n.saturating_add(tok.count(t)),
        Some(Content::Parts(parts)) => {
            for p in parts {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => n = n.saturating_add(tok.count(t)),
                    None => {
                        let json = serde_json::to_string(p).unwrap_or_default();
                        n = n
                            .saturating_add(tok.count(&json))
                            .saturating_add(MEDIA_PART_TOKENS);
                    }
                }
            }
        }
    }
    if let Some(name) = &m.name {
        n = n.saturating_add(tok.count(name) + 1);
    }
    if let Some(id) = &m.tool_call_id {
        n = n.saturating_add(tok.count(id));
    }
    if let Some(calls) = &m.tool_calls {
        let json = serde_json::to_string(calls).unwrap_or_default();
        n = n.saturating_add(tok.count(&json));
    }
    if let Some(fc) = m.extra.get("function_call") {
        let json = serde_json::to_string(fc).unwrap_or_default();
        n = n.saturating_add(tok.count(&json));
    }
    n
}

/// A whole conversation's token cost: [`CONVERSATION_OVERHEAD`] plus each message's
/// [`message_tokens`]. This is the number the budget bounds.
pub fn conversation_tokens(tok: &TokenizerSpec, messages: &[Message]) -> u32 {
    messages.iter().fold(CONVERSATION_OVERHEAD, |acc, m| {
        acc.saturating_add(message_tokens(tok, m))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_and_object_forms() {
        let c = parse(r#"[{"role":"user","content":"hi"}]"#).unwrap();
        assert_eq!(c.messages.len(), 1);
        assert!(c.envelope.is_none());
        let c = parse(r#"{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}"#).unwrap();
        assert_eq!(c.messages[1].text_content(), "a\nb");
        let back = c.to_json(&c.messages);
        assert_eq!(back["model"], "gpt-4o");
        assert_eq!(back["messages"][1]["content"][0]["text"], "a");
    }

    #[test]
    fn unknown_fields_round_trip() {
        let c = parse(r#"[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}],"refusal":null,"x":1}]"#).unwrap();
        let m = &c.messages[0];
        assert!(m.is_tool_activity());
        let v = serde_json::to_value(m).unwrap();
        assert_eq!(v["x"], 1);
        assert!(v.get("pinned").is_none());
    }

    #[test]
    fn precise_errors() {
        let cases: [(&[u8], &str); 9] = [
            (b"[", "not valid JSON"),
            (b"[]", "no messages"),
            (b"{\"messages\":[]}", "no messages"),
            (b"{\"msgs\":[]}", "without `messages`"),
            (b"42", "found a number"),
            (
                b"[{\"role\":\"robot\",\"content\":\"x\"}]",
                "unknown role `robot`",
            ),
            (b"[{\"content\":\"x\"}]", "message 0: no `role`"),
            (
                b"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":5}]",
                "message 1: `content` must be",
            ),
            (
                b"[{\"role\":\"user\",\"content\":\"\xff\"}]",
                "not valid UTF-8",
            ),
        ];
        for (input, want) in cases {
            let e = parse_bytes(input).unwrap_err().to_string();
            assert!(
                e.contains(want),
                "{:?}: {e}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn token_cost_is_additive_and_counts_everything_sent() {
        let tok = TokenizerSpec::Exact(crate::tokens::Encoding::O200kBase);
        let a = Message::text(Role::User, "hello there");
        let mut b = Message::text(Role::Assistant, "hi");
        b.name = Some("bot".into());
        let total = conversation_tokens(&tok, &[a.clone(), b.clone()]);
        assert_eq!(
            total,
            CONVERSATION_OVERHEAD + message_tokens(&tok, &a) + message_tokens(&tok, &b)
        );
        assert!(
            message_tokens(&tok, &b) > message_tokens(&tok, &Message::text(Role::Assistant, "hi"))
        );
    }
}
