//! What `/v1/context` and `/v1/search` accept: the request bodies (whose field docs are the
//! OpenAPI and MCP schema) and the checks of what they ask for beyond the core's rules.

use ctxgate_core::assemble::ask::{self, Limits};
use ctxgate_core::compress::Compression;
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::profile::Profile;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

/// Reply tokens assumed when routing, unless the request says.
pub(super) const DEFAULT_REPLY_TOKENS: u32 = 2_048;
/// Default page size of `/v1/search`, in tokens.
pub(super) const DEFAULT_PAGE_TOKENS: u32 = 4_000;
/// Longest accepted session id, in bytes.
const MAX_SESSION_BYTES: usize = 128;

/// `POST /v1/context` body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    /// Project name or id.
    #[schemars(example = &"core")]
    pub(crate) project: String,
    /// What the model will be asked.
    #[schemars(example = &"how is the quota reserved?")]
    pub(super) query: String,
    /// Hard token limit of the assembled prompt, at least 64 (`budget_too_small` below); default:
    /// the model's usable budget, or 16,000 tokens (with a warning) when no model is named.
    #[serde(default)]
    #[schemars(example = 2000)]
    pub(crate) budget: Option<u32>,
    /// Target model (its tokenizer and window apply).
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Files the client has open or recently edited.
    #[serde(default)]
    pub(super) hot_paths: Vec<String>,
    /// The token of the previous page.
    #[serde(default)]
    pub(super) continuation: Option<String>,
    /// `none` (default); `light`: comments and blank lines removed; `medium`: bodies of
    /// lower-value functions elided; `aggressive`: signatures and key lines only. Another
    /// value is 400 `unsupported_option`.
    #[serde(default)]
    #[schemars(extend("enum" = ["none", "light", "medium", "aggressive", null]))]
    pub(super) compression: Option<String>,
    /// `plan`: a small overview (at most 2,000 tokens, 5 pieces); `expand`: the full budget;
    /// `repair`: `error_output` and the code its stack frames point at. Default: `repair` with
    /// `error_output`, else `expand`. Another value is 400 `unsupported_option`.
    #[serde(default)]
    #[schemars(extend("enum" = ["plan", "expand", "repair", null]))]
    pub(super) profile: Option<String>,
    /// Error output (stack trace, compiler or test output) answered by `profile: repair`.
    #[serde(default)]
    pub(super) error_output: Option<String>,
    /// Client session id: chunks sent to it before are named in `session.already_delivered`
    /// instead of being sent again.
    #[serde(default)]
    pub(super) session: Option<String>,
    /// Conversation history, compacted into the same budget as the code.
    #[serde(default)]
    pub(super) messages: Option<Value>,
    /// Newest history rounds kept verbatim (default 3).
    #[serde(default)]
    pub(super) keep_rounds: Option<usize>,
    /// Tokens expected in the reply, for routing.
    #[serde(default)]
    pub(super) reply_tokens: Option<u32>,
}

/// `POST /v1/search` body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Project name or id.
    #[schemars(example = &"core")]
    pub(crate) project: String,
    /// The search.
    #[schemars(example = &"settle unused tokens")]
    pub(super) query: String,
    /// Tokens per page.
    #[serde(default)]
    pub(super) page_tokens: Option<u32>,
    /// Count with this model's tokenizer.
    #[serde(default)]
    pub(super) model: Option<String>,
    /// The token of the previous page.
    #[serde(default)]
    pub(super) continuation: Option<String>,
}

/// How a context request's pieces are shaped, checked: what it asked for besides the query,
/// budget and conversation.
pub(super) struct Shape {
    /// How much each piece may be reduced.
    pub(super) compression: Compression,
    /// How the budget is spent.
    pub(super) profile: Profile,
    /// The error output `repair` answers.
    pub(super) error_output: Option<String>,
}

impl ContextRequest {
    /// Checks the query, the options and the session id before anything is read or reserved
    /// (the core's [`ask`] rules, then the session's length); the error output moves into the
    /// answer.
    pub(super) fn check(&mut self) -> Result<Shape, ApiError> {
        ask::check_query(&self.query, &Limits::SERVED)?;
        let compression = ask::parse_compression(self.compression.as_deref())?;
        let (profile, error_output) = ask::profile_and_error_output(
            self.profile.as_deref(),
            self.error_output.take(),
            &Limits::SERVED,
        )?;
        check_session(self.session.as_deref())?;
        Ok(Shape {
            compression,
            profile,
            error_output,
        })
    }
}

impl SearchRequest {
    /// Checks the query (the core's [`ask::check_query`]).
    pub(super) fn check(&self) -> Result<(), ApiError> {
        Ok(ask::check_query(&self.query, &Limits::SERVED)?)
    }
}

/// A session id has 1 to [`MAX_SESSION_BYTES`] bytes: it is stored with every audit record.
fn check_session(session: Option<&str>) -> Result<(), ApiError> {
    match session {
        Some(s) if s.is_empty() || s.len() > MAX_SESSION_BYTES => Err(ApiError::new(
            ErrorCode::InvalidSession,
            format!("a session id has 1 to {MAX_SESSION_BYTES} bytes"),
        )),
        _ => Ok(()),
    }
}
