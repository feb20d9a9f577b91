//! The answers of `/v1/context` and `/v1/search` (whose field docs are the OpenAPI and MCP
//! output schema), built from a run, and the context answer's JSON writer.

use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use ctxgate_core::assemble::BudgetBar;
use ctxgate_core::assemble::summaries::SizeClass;
use ctxgate_core::catalog::ModelBudget;
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::history::{CompactReport, Compacted, Message};
use ctxgate_core::route::RouteDecision;
use ctxgate_core::source::Origin;
use schemars::JsonSchema;
use serde::Serialize;

use super::report::Savings;
use super::run::Run;
use super::session::ChunkRef;
use crate::error::ApiError;

/// The project and version an answer was read from.
#[derive(Serialize, JsonSchema)]
pub struct ProjectRef {
    /// Stable id.
    id: String,
    /// Name within the organisation.
    name: String,
    /// The index version read.
    version: u64,
    /// The repository and commit the version was indexed from, when known (the links in
    /// `pieces[].source_url` are pinned to this commit).
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: Option<Origin>,
}

impl ProjectRef {
    pub(super) fn of(run: &Run) -> Self {
        Self {
            id: run.project.id.clone(),
            name: run.project.name.clone(),
            version: run.version,
            origin: run.origin.clone(),
        }
    }
}

/// The answer of `POST /v1/context`. Serialized straight from the assembled context: building a
/// `serde_json::Value` first copied the prompt and every piece into maps (a measurable share of
/// a warm call in the Worker).
#[derive(Serialize, JsonSchema)]
pub struct ContextAnswer<'a> {
    /// The project and version read.
    project: ProjectRef,
    /// The summaries in the prompt (project, directories, files).
    summaries: &'a [ctxgate_core::compose::SummaryPiece],
    /// Tokens of the prompt, counted by the target's tokenizer (never above `budget`).
    tokens_total: u32,
    /// The budget the prompt was held to.
    budget: u32,
    /// The target model, when one was named.
    model: Option<&'a str>,
    /// The tokenizer that counted.
    tokenizer: String,
    /// Whether the count is exact (false: an estimate with a safety margin).
    exact: bool,
    /// The assembled prompt. Left out when the caller writes it itself ([`json_response`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    /// Things the caller should know.
    warnings: &'a [String],
    /// What the query asks for, as detected.
    intent: &'a ctxgate_core::intent::QueryAnalysis,
    /// How the budget was spent and what was weighed.
    analysis: Analysis<'a>,
    /// The compacted conversation, when `messages` were given.
    history: Option<History>,
    /// The model the context suits, with the cost estimate.
    routing: Option<RouteDecision>,
    /// What the context saved against sending the whole repository.
    savings: Savings,
    /// What the profile did.
    profile: &'a ctxgate_core::profile::ProfileReport,
    /// The token of the next page, when more pieces qualify.
    continuation: Option<&'a str>,
    /// The session's id and the pieces it already had.
    session: Option<Session<'a>>,
    // Last, so that `json_response` can write it itself.
    /// The code in the prompt, in prompt order, with where each piece comes from.
    #[schemars(with = "Vec<ctxgate_core::compose::Piece>")]
    pieces: PieceList<'a>,
    /// Bytes this answer read from storage (the version's index when this process opened it,
    /// the chunk texts it had not cached): sent as the `ctxgate-storage-read` header.
    #[serde(skip)]
    #[schemars(skip)]
    read_bytes: u64,
}

impl<'a> ContextAnswer<'a> {
    /// The answer of a context run, held to its whole budget (history and prompt), with the
    /// compacted `history`, the `routing` and `savings` reported beside it, and the `session` it
    /// was asked for.
    pub(super) fn new(
        run: &'a Run,
        history: Option<Compacted>,
        routing: Option<RouteDecision>,
        savings: Savings,
        session: Option<&'a str>,
    ) -> Self {
        let d = &run.done;
        let budget = run.resolved.whole();
        Self {
            project: ProjectRef::of(run),
            pieces: PieceList {
                pieces: &d.pieces,
                apart: false,
            },
            summaries: &d.summaries,
            tokens_total: d.tokens_total,
            budget,
            model: run.resolved.model.as_deref(),
            tokenizer: run.resolved.tokenizer.label(),
            exact: run.resolved.tokenizer.is_exact(),
            prompt: Some(&d.prompt),
            warnings: &d.warnings,
            intent: &d.intent,
            analysis: Analysis {
                bar: BudgetBar::of(d, budget, run.resolved.history),
                window: run.resolved.window,
                repo_tokens: d.repo_tokens,
                frame_tokens: d.frame_tokens,
                code_tokens: d.code_tokens,
                strategy: &d.strategy,
                size_class: d.size_class,
                candidates: d.candidates,
                left_out: d.left_out,
                code_budget: run.resolved.budget,
            },
            history: history.map(|h| History {
                messages: h.messages,
                tokens_total: h.report.tokens_total,
                stats: h.report,
            }),
            routing,
            savings,
            profile: &d.profile,
            continuation: run.continuation.as_deref(),
            session: session.map(|id| Session {
                id,
                already_delivered: &run.already_delivered,
            }),
            read_bytes: run.read_bytes,
        }
    }
}

/// How a context answer's budget was spent and what was weighed.
#[derive(Serialize, JsonSchema)]
pub struct Analysis<'a> {
    /// Where the budget went, in parts that sum to the tokens used: the query, headers, code,
    /// summaries, conversation, and the room left.
    bar: BudgetBar,
    /// The model's window as the budget policy divides it, when a model was named.
    window: Option<ModelBudget>,
    /// Tokens of the whole repository (what sending everything would cost).
    repo_tokens: u64,
    /// Tokens of the prompt's frame (the task, headings, separators).
    frame_tokens: u32,
    /// Tokens of the code pieces.
    code_tokens: u32,
    /// How the pieces were chosen.
    strategy: &'a str,
    /// The repository's size relative to the room for context.
    size_class: SizeClass,
    /// Pieces weighed.
    candidates: usize,
    /// Qualifying pieces left out for lack of room.
    left_out: usize,
    /// The budget left for code once the conversation took its share.
    code_budget: u32,
}

/// The conversation of a context request, compacted into its share of the budget.
#[derive(Serialize, JsonSchema)]
pub struct History {
    /// The compacted conversation, in order.
    messages: Vec<Message>,
    /// Its tokens.
    tokens_total: u32,
    /// Where every token went.
    stats: CompactReport,
}

/// A context request's session: its id, and the pieces it already held (named, not sent).
#[derive(Serialize, JsonSchema)]
pub struct Session<'a> {
    /// The session id the request gave.
    id: &'a str,
    /// The chunks that would have been sent again.
    already_delivered: &'a [ChunkRef],
}

/// The pieces of an answer; `null` where [`json_response`] writes them itself.
struct PieceList<'a> {
    pieces: &'a [ctxgate_core::compose::Piece],
    apart: bool,
}

impl Serialize for PieceList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.apart {
            s.serialize_unit()
        } else {
            self.pieces.serialize(s)
        }
    }
}

/// The answer written into one buffer sized for the prompt it carries, the piece list and the
/// prompt appended by [`crate::json_text`]: axum's `Json` wrote through a small `BytesMut` in
/// many short writes, and serde_json escapes every string and key a byte at a time, which V8's
/// profiler showed as the largest shares of a warm call in the Worker (the prompt is 100+ KB at
/// 32k, the piece list 75 KB).
pub(super) fn json_response(mut a: ContextAnswer<'_>) -> Response {
    let prompt = a.prompt.take().unwrap_or_default();
    let read = a.read_bytes;
    a.pieces.apart = true;
    let mut body = Vec::with_capacity(prompt.len() + prompt.len() / 8 + 128 * 1024);
    let written = serde_json::to_writer(&mut body, &a).and_then(|()| {
        // `{...,"pieces":null}` becomes `{...,"pieces":[...],"prompt":"..."}`.
        const HOLE: &[u8] = b"\"pieces\":null}";
        if !body.ends_with(HOLE) {
            return Err(serde::ser::Error::custom("the piece list is not last"));
        }
        body.truncate(body.len() - b"null}".len());
        crate::json_text::push_pieces(&mut body, a.pieces.pieces)?;
        body.extend_from_slice(b",\"prompt\":");
        crate::json_text::push_json_string(&mut body, prompt);
        body.push(b'}');
        Ok(())
    });
    if let Err(e) = written {
        return ApiError::new(
            ErrorCode::InternalError,
            format!("the answer could not be written: {e}"),
        )
        .into_response();
    }
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                HeaderName::from_static("ctxgate-storage-read"),
                HeaderValue::from(read),
            ),
        ],
        body,
    )
        .into_response()
}

impl SearchAnswer {
    /// One page of `page` tokens from a search run.
    pub(super) fn of(run: Run, page: u32) -> Self {
        Self {
            project: ProjectRef::of(&run),
            pieces: run.done.pieces,
            tokens_total: run.done.tokens_total,
            page_tokens: page,
            left_out: run.done.left_out,
            continuation: run.continuation,
        }
    }
}

/// The answer of `POST /v1/search`: one page of ranked pieces (where they are, not their text).
#[derive(Serialize, JsonSchema)]
pub struct SearchAnswer {
    /// The project and version read.
    project: ProjectRef,
    /// The page's pieces, best first.
    pieces: Vec<ctxgate_core::compose::Piece>,
    /// Tokens of the page.
    tokens_total: u32,
    /// The page size asked for.
    page_tokens: u32,
    /// Candidates not on this page.
    left_out: usize,
    /// The token of the next page, when there is one.
    continuation: Option<String>,
}
