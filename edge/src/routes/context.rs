//! `POST /v1/context` and `POST /v1/search`: the core's assembly over a project's current index.

use std::collections::HashSet;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use ctxgate_core::assemble::ask::{self, Limits};
use ctxgate_core::assemble::{Assembled, QueryOptions};
use ctxgate_core::catalog::{BudgetPolicy, ResolvedBudget};
use ctxgate_core::compress::Compression;
use ctxgate_core::continuation::{self, Claims, query_fingerprint};
use ctxgate_core::history::BudgetSplit;
use ctxgate_core::index::IndexPack;
use ctxgate_core::profile::Profile;
use ctxgate_core::route::{RouteDecision, named, route};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::budget::resolve;
use super::conversation::compact_for_context;
use super::projects::no_project;
use crate::backend::{ProjectAdmission, ProjectInfo};
use crate::error::ApiError;
use crate::extract::{Caller, JsonBody};
use crate::meter::{self, Delivered};
use crate::state::AppState;

/// Reply tokens assumed when routing, unless the request says.
const DEFAULT_REPLY_TOKENS: u32 = 2_048;
/// Default page size of `/v1/search`, in tokens.
const DEFAULT_PAGE_TOKENS: u32 = 4_000;

/// `POST /v1/context` body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    /// Project name or id.
    pub(crate) project: String,
    /// What the model will be asked.
    query: String,
    /// Hard token limit of the assembled prompt.
    #[serde(default)]
    pub(crate) budget: Option<u32>,
    /// Target model (its tokenizer and window apply).
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Files the client has open or recently edited.
    #[serde(default)]
    hot_paths: Vec<String>,
    /// The token of the previous page.
    #[serde(default)]
    continuation: Option<String>,
    /// `none` (default); `light`: comments and blank lines removed; `medium`: bodies of
    /// lower-value functions elided; `aggressive`: signatures and key lines only.
    #[serde(default)]
    compression: Option<String>,
    /// `plan`: a small overview (at most 2,000 tokens, 5 pieces); `expand`: the full budget;
    /// `repair`: `error_output` and the code its stack frames point at. Default: `repair` with
    /// `error_output`, else `expand`.
    #[serde(default)]
    profile: Option<String>,
    /// Error output (stack trace, compiler or test output) answered by `profile: repair`.
    #[serde(default)]
    error_output: Option<String>,
    /// Client session id: chunks sent to it before are named in `session.already_delivered`
    /// instead of being sent again.
    #[serde(default)]
    session: Option<String>,
    /// Conversation history, compacted into the same budget as the code.
    #[serde(default)]
    messages: Option<Value>,
    /// Newest history rounds kept verbatim (default 3).
    #[serde(default)]
    keep_rounds: Option<usize>,
    /// Tokens expected in the reply, for routing.
    #[serde(default)]
    reply_tokens: Option<u32>,
}

/// `POST /v1/search` body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Project name or id.
    pub(crate) project: String,
    /// The search.
    query: String,
    /// Tokens per page.
    #[serde(default)]
    page_tokens: Option<u32>,
    /// Count with this model's tokenizer.
    #[serde(default)]
    model: Option<String>,
    /// The token of the previous page.
    #[serde(default)]
    continuation: Option<String>,
}

/// What a metered assembly produced.
struct Run {
    project: ProjectInfo,
    version: u64,
    resolved: ResolvedBudget,
    done: Assembled,
    continuation: Option<String>,
    /// Where the chunks a session already holds are, for [`Assembled::already_delivered`].
    already_delivered: Vec<Value>,
    /// Bytes read from storage for this answer.
    read_bytes: u64,
}

/// What a call asks for besides the query and budget.
#[derive(Default)]
struct Asked<'a> {
    /// Files the client has open or recently edited.
    hot_paths: Vec<String>,
    /// The previous page's token.
    continuation: Option<&'a str>,
    /// The client's session: chunks delivered in its earlier calls are named, not sent again.
    session: Option<&'a str>,
    /// Tokens the compacted history took from the same budget.
    history_tokens: u32,
    /// How much each piece may be reduced.
    compression: Compression,
    /// How the budget is spent.
    profile: Profile,
    /// The error output `repair` answers.
    error_output: Option<String>,
    /// Pieces only, no summaries (search pages).
    pieces_only: bool,
}

/// Audit records read to find what a session already received (its newest calls).
const SESSION_AUDIT_DEPTH: usize = 500;
/// Longest accepted session id, in bytes.
const MAX_SESSION_BYTES: usize = 128;

/// Chunk ids the caller's `session` already received from `project` — whole, and as a signature
/// only — read back from the audit (which records every delivered chunk id per call, which were
/// signatures only, and which key called), so sessions need no storage of their own. A session
/// belongs to the key that opened it: two clients of one org that pick the same id do not share
/// history.
async fn session_chunks(
    state: &AppState,
    caller: &Caller,
    session: &str,
    project: &str,
) -> Result<(HashSet<String>, HashSet<String>), ApiError> {
    let records = state
        .accounts
        .audit(&caller.org.name, SESSION_AUDIT_DEPTH)
        .await?;
    let mut whole = HashSet::new();
    let mut signatures = HashSet::new();
    for r in records.into_iter().filter(|r| {
        r.status == 200
            && r.session.as_deref() == Some(session)
            && r.key.as_deref() == Some(caller.key_id.as_str())
            && r.project.as_deref() == Some(project)
    }) {
        for c in r.chunks {
            if r.signature_only.contains(&c) {
                signatures.insert(c);
            } else {
                whole.insert(c);
            }
        }
    }
    Ok((whole, signatures))
}

fn check_session(session: Option<&str>) -> Result<(), ApiError> {
    match session {
        Some(s) if s.is_empty() || s.len() > MAX_SESSION_BYTES => Err(ApiError::bad_request(
            "invalid_session",
            format!("a session id has 1 to {MAX_SESSION_BYTES} bytes"),
        )),
        _ => Ok(()),
    }
}

/// Resolves, admits, assembles and settles one call.
async fn run(
    state: &AppState,
    caller: &Caller,
    endpoint: &'static str,
    project: &str,
    query: &str,
    resolved: ResolvedBudget,
    asked: Asked<'_>,
) -> Result<Run, ApiError> {
    let org = caller.org.name.clone();
    let now = state.accounts.now_ms();
    let secret = &state.config.token_secret;
    // A forged or expired token is refused before any round trip; what it is bound to (org,
    // project, version, query) is checked once the project is known.
    let claims = asked
        .continuation
        .map(|token| continuation::verify(token, secret, now))
        .transpose()?;
    // History was compacted before: its tokens are part of the same reservation and settlement.
    let history = u64::from(asked.history_tokens);
    let tokens = BudgetSplit {
        history: asked.history_tokens,
        code: resolved.budget,
    }
    .total();
    // The project and the reservation come in one round trip where the host allows (the
    // Worker's Durable Object holds both).
    let lease = meter::new_id(state);
    let cached = (!caller.fresh)
        .then(|| state.pointers.get(&org, project, now))
        .flatten();
    let found = match cached {
        // A warm request: the pointer is known, only the quota needs the backend.
        Some((p, version)) => ProjectAdmission::Reserved {
            version,
            outcome: state
                .accounts
                .reserve(&org, &caller.org.limits, &lease, tokens, now)
                .await?,
            project: p,
        },
        None => {
            let found = state
                .admission
                .reserve_for_project(&org, project, &caller.org.limits, &lease, tokens, now)
                .await?;
            if let ProjectAdmission::Reserved { project: p, .. } = &found {
                state.pointers.put(&org, project, p, now);
            }
            found
        }
    };
    let (project, version, outcome) = match found {
        ProjectAdmission::NotFound => return Err(no_project(project)),
        ProjectAdmission::NotIndexed { project } => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "project_not_indexed",
                format!("project `{}` has no published index yet", project.name),
            ));
        }
        ProjectAdmission::Reserved {
            project,
            version,
            outcome,
        } => (project, version, outcome),
    };
    let admission = meter::admitted(lease, tokens, endpoint, outcome)?;
    let mut delivered = Vec::new();
    let result = async {
        if let Some(claims) = claims {
            claims.check(&org, &project.id, version, query)?;
            delivered = claims.delivered;
        }
        let (known, known_signatures) = match asked.session {
            Some(s) => session_chunks(state, caller, s, &project.id).await?,
            None => (HashSet::new(), HashSet::new()),
        };
        let (snap, opened_bytes) = state
            .snapshots
            .open(state.projects.as_ref(), &project)
            .await?;
        let mut exclude = delivered.clone();
        if !known.is_empty() {
            exclude.extend(
                snap.pack
                    .chunks
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| known.contains(&c.id))
                    .map(|(i, _)| i as u32),
            );
        }
        // A chunk the session saw as a signature may come whole later, not as a signature again.
        let signatures_sent = snap
            .pack
            .chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| known_signatures.contains(&c.id))
            .map(|(i, _)| i as u32)
            .collect();
        let dense = match &state.dense {
            Some(d) => d.dense_hits(snap.clone(), query).await?,
            None => Vec::new(),
        };
        let options = QueryOptions {
            hot_paths: asked.hot_paths,
            exclude,
            signatures_sent,
            compression: asked.compression,
            profile: asked.profile,
            error_output: asked.error_output,
            without_summaries: asked.pieces_only,
            dense,
            ..QueryOptions::default()
        };
        let (done, text_bytes) = crate::texts::answer(
            state.projects.as_ref(),
            state.snapshots.shared(),
            &snap,
            query,
            &resolved,
            &options,
        )
        .await?;
        let referenced = references(&snap.pack, &done.already_delivered);
        Ok::<_, ApiError>((done, referenced, opened_bytes + text_bytes))
    }
    .await;
    let (used, chunks, signature_only, status) = match &result {
        Ok((d, _, _)) => (
            u64::from(d.tokens_total) + history,
            d.pieces.iter().map(|p| p.chunk_id.clone()).collect(),
            d.pieces
                .iter()
                .filter(|p| p.form.is_partial())
                .map(|p| p.chunk_id.clone())
                .collect(),
            200,
        ),
        Err(e) => (0, Vec::new(), Vec::new(), e.status.as_u16()),
    };
    meter::finish(
        state,
        caller,
        admission,
        used,
        status,
        Delivered {
            project: Some(project.id.clone()),
            session: asked.session.map(str::to_string),
            chunks,
            signature_only,
        },
    )
    .await;
    let (done, already_delivered, read_bytes) = result?;
    let continuation = (done.left_out > 0 && !done.chosen.is_empty()).then(|| {
        delivered.extend(&done.chosen);
        continuation::issue(
            &Claims {
                org,
                project: project.id.clone(),
                version,
                query: query_fingerprint(query),
                delivered,
                expires_ms: now + state.config.continuation_ttl_ms,
            },
            secret,
        )
    });
    Ok(Run {
        project,
        version,
        resolved,
        done,
        continuation,
        already_delivered,
        read_bytes,
    })
}

/// What the context saved against sending the whole repository, and what compression saved
/// of the pieces sent; USD at `priced_with`'s input price.
#[derive(Serialize, JsonSchema)]
struct Savings {
    repo_tokens: u64,
    tokens_total: u32,
    tokens_saved: u64,
    percent_saved: f64,
    usd_saved: Option<f64>,
    compression_tokens_saved: u32,
    compression_usd_saved: Option<f64>,
    priced_with: Option<String>,
}

/// `POST /v1/context`.
pub async fn context(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<ContextRequest>,
) -> Result<axum::response::Response, ApiError> {
    answer(state, caller, req, json_response).await
}

/// The answer written into one buffer sized for the prompt it carries, the prompt spliced in by
/// [`crate::json_text`]: axum's `Json` wrote through a small `BytesMut` in many short writes and
/// serde_json escapes a string a byte at a time, which V8's profiler showed as the largest
/// shares of a warm call in the Worker (the prompt is 100+ KB at 32k).
fn json_response(mut a: ContextAnswer<'_>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let prompt = a.prompt.take().unwrap_or_default();
    let read = a.read_bytes;
    let mut body = Vec::with_capacity(prompt.len() + prompt.len() / 8 + 64 * 1024);
    if let Err(e) = serde_json::to_writer(&mut body, &a) {
        return ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            format!("the answer could not be written: {e}"),
        )
        .into_response();
    }
    // `{...}` becomes `{...,"prompt":"..."}`.
    if body.last() == Some(&b'}') {
        body.pop();
        if body.len() > 1 {
            body.push(b',');
        }
        body.extend_from_slice(b"\"prompt\":");
        crate::json_text::push_json_string(&mut body, prompt);
        body.push(b'}');
    }
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            ),
            (
                axum::http::HeaderName::from_static("ctxgate-storage-read"),
                axum::http::HeaderValue::from(read),
            ),
        ],
        body,
    )
        .into_response()
}

/// The answer of `POST /v1/context` as a JSON value (the MCP tool reads it).
pub async fn context_value(
    state: AppState,
    caller: Caller,
    req: ContextRequest,
) -> Result<Value, ApiError> {
    answer(state, caller, req, |a| {
        serde_json::to_value(&a).unwrap_or(Value::Null)
    })
    .await
}

/// Answers a context request; `finish` turns the answer, which borrows the assembled context,
/// into what the caller sends.
async fn answer<T>(
    state: AppState,
    caller: Caller,
    req: ContextRequest,
    finish: impl FnOnce(ContextAnswer<'_>) -> T,
) -> Result<T, ApiError> {
    ask::check_query(&req.query, &Limits::SERVED)?;
    let compression = ask::parse_compression(req.compression.as_deref())?;
    let (profile, error_output) =
        ask::profile_and_error_output(req.profile.as_deref(), req.error_output, &Limits::SERVED)?;
    check_session(req.session.as_deref())?;
    let mut resolved = resolve(&state, &caller, req.model.as_deref(), req.budget)?;
    let budget = resolved.budget;
    let history = req
        .messages
        .map(|m| compact_for_context(m, &resolved.tokenizer, budget, req.keep_rounds, &req.query))
        .transpose()?;
    let split = BudgetSplit::after_history(
        budget,
        history.as_ref().map_or(0, |h| h.report.tokens_total),
    );
    resolved.budget = split.code;
    let run = run(
        &state,
        &caller,
        "/v1/context",
        &req.project,
        &req.query,
        resolved,
        Asked {
            hot_paths: req.hot_paths,
            continuation: req.continuation.as_deref(),
            session: req.session.as_deref(),
            history_tokens: split.history,
            compression,
            profile,
            error_output,
            pieces_only: false,
        },
    )
    .await?;
    let reply = req.reply_tokens.unwrap_or(DEFAULT_REPLY_TOKENS);
    let routing = routing(&state, &caller, &run, reply);
    let priced = routing.as_ref().and_then(|r| state.catalog.get(&r.model));
    let saved = run
        .done
        .repo_tokens
        .saturating_sub(u64::from(run.done.tokens_total));
    let savings = Savings {
        repo_tokens: run.done.repo_tokens,
        tokens_total: run.done.tokens_total,
        tokens_saved: saved,
        percent_saved: if run.done.repo_tokens == 0 {
            0.0
        } else {
            (saved as f64 * 1000.0 / run.done.repo_tokens as f64).round() / 10.0
        },
        usd_saved: priced.map(|m| m.input_cost(saved)),
        compression_tokens_saved: run.done.compression_saved_tokens,
        compression_usd_saved: priced.map(|m| m.input_cost(run.done.compression_saved_tokens)),
        priced_with: priced.map(|m| m.id.clone()),
    };
    let d = &run.done;
    Ok(finish(ContextAnswer {
        project: ProjectRef::of(&run),
        pieces: &d.pieces,
        summaries: &d.summaries,
        tokens_total: d.tokens_total,
        budget,
        model: run.resolved.model.as_deref(),
        tokenizer: run.resolved.tokenizer.label(),
        exact: run.resolved.tokenizer.is_exact(),
        prompt: Some(&d.prompt),
        warnings: &d.warnings,
        intent: &d.intent,
        analysis: json!({
            "window": run.resolved.window,
            "repo_tokens": d.repo_tokens,
            "frame_tokens": d.frame_tokens,
            "code_tokens": d.code_tokens,
            "strategy": d.strategy,
            "size_class": d.size_class,
            "candidates": d.candidates,
            "left_out": d.left_out,
            "code_budget": run.resolved.budget,
        }),
        history: history.map(|h| {
            json!({
                "messages": h.messages,
                "tokens_total": h.report.tokens_total,
                "stats": h.report,
            })
        }),
        routing,
        savings,
        profile: &d.profile,
        continuation: run.continuation.as_deref(),
        session: req.session.as_ref().map(|id| {
            json!({
                "id": id,
                "already_delivered": run.already_delivered,
            })
        }),
        read_bytes: run.read_bytes,
    }))
}

/// The project and version an answer was read from.
#[derive(Serialize, JsonSchema)]
pub struct ProjectRef {
    /// Stable id.
    id: String,
    /// Name within the organisation.
    name: String,
    /// The index version read.
    version: u64,
}

impl ProjectRef {
    fn of(run: &Run) -> Self {
        Self {
            id: run.project.id.clone(),
            name: run.project.name.clone(),
            version: run.version,
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
    /// The code in the prompt, in prompt order, with where each piece comes from.
    pieces: &'a [ctxgate_core::compose::Piece],
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
    analysis: Value,
    /// The compacted conversation, when `messages` were given.
    history: Option<Value>,
    /// The model the context suits, with the cost estimate.
    routing: Option<RouteDecision>,
    /// What the context saved against sending the whole repository.
    savings: Savings,
    /// What the profile did.
    profile: &'a ctxgate_core::profile::ProfileReport,
    /// The token of the next page, when more pieces qualify.
    continuation: Option<&'a str>,
    /// The session's id and the pieces it already had.
    session: Option<Value>,
    /// Bytes this answer read from storage (the version's index when this process opened it,
    /// the chunk texts it had not cached): sent as the `ctxgate-storage-read` header.
    #[serde(skip)]
    #[schemars(skip)]
    read_bytes: u64,
}

/// Where `chunks` are (id, path, lines, symbol), for naming them instead of sending them.
fn references(pack: &IndexPack, chunks: &[u32]) -> Vec<Value> {
    chunks
        .iter()
        .filter_map(|&i| {
            let c = pack.chunks.get(i as usize)?;
            let f = pack.files.get(c.file as usize)?;
            Some(json!({
                "chunk_id": c.id,
                "path": f.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "symbol": c.symbol,
            }))
        })
        .collect()
}

fn routing(state: &AppState, caller: &Caller, run: &Run, reply: u32) -> Option<RouteDecision> {
    if let Some(id) = &run.resolved.model {
        let m = state.catalog.get(id)?;
        let d = &run.done;
        return Some(named(m, d.tokens_total, reply, d.intent.complexity));
    }
    route(
        &state.catalog,
        &BudgetPolicy::default(),
        run.done.tokens_total,
        reply,
        run.done.intent.complexity,
        &caller.org.allowed_models,
    )
}

/// `POST /v1/search`: one page of ranked pieces within `page_tokens`.
pub async fn search(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<SearchRequest>,
) -> Result<Json<SearchAnswer>, ApiError> {
    ask::check_query(&req.query, &Limits::SERVED)?;
    let page = req.page_tokens.unwrap_or(DEFAULT_PAGE_TOKENS);
    let resolved = resolve(&state, &caller, req.model.as_deref(), Some(page))?;
    let run = run(
        &state,
        &caller,
        "/v1/search",
        &req.project,
        &req.query,
        resolved,
        Asked {
            continuation: req.continuation.as_deref(),
            pieces_only: true,
            ..Asked::default()
        },
    )
    .await?;
    Ok(Json(SearchAnswer {
        project: ProjectRef::of(&run),
        pieces: run.done.pieces,
        tokens_total: run.done.tokens_total,
        page_tokens: page,
        left_out: run.done.left_out,
        continuation: run.continuation,
    }))
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
