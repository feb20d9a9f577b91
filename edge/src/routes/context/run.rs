//! One metered assembly over a project's current index — the service `/v1/context`,
//! `/v1/search` and their MCP tools share: the project and the reservation found together, the
//! core's answer read through the snapshot and text caches, the call settled and audited, and
//! the next page's token issued.

use ctxgate_core::error_code::ErrorCode;
use std::collections::HashSet;

use ctxgate_core::assemble::{Assembled, QueryOptions};
use ctxgate_core::catalog::ResolvedBudget;
use ctxgate_core::compose::Piece;
use ctxgate_core::compress::Compression;
use ctxgate_core::continuation::{self, Claims, Sent, query_fingerprint};
use ctxgate_core::index::IndexPack;
use ctxgate_core::profile::Profile;
use ctxgate_core::quota::Refusal;
use ctxgate_core::source::{Origin, source_link};

use super::session::{ChunkRef, references, session_chunks};
use crate::backend::{ProjectAdmission, ProjectInfo};
use crate::error::ApiError;
use crate::extract::Caller;
use crate::meter::{self, Admission, Delivered, Hold};
use crate::metrics::IndexCache;
use crate::routes::projects::no_project;
use crate::state::AppState;

/// What a metered assembly produced.
pub(super) struct Run {
    /// The project read.
    pub(super) project: ProjectInfo,
    /// Its version read.
    pub(super) version: u64,
    /// The model, tokenizer and budget (the history's part and the prompt's) the answer was
    /// held to.
    pub(super) resolved: ResolvedBudget,
    /// The core's answer.
    pub(super) done: Assembled,
    /// The token of the next page, when more pieces qualify.
    pub(super) continuation: Option<String>,
    /// Where the chunks a session already holds are, for [`Assembled::already_delivered`].
    pub(super) already_delivered: Vec<ChunkRef>,
    /// Bytes read from storage for this answer.
    pub(super) read_bytes: u64,
    /// The repository and commit the version was indexed from, when known.
    pub(super) origin: Option<Origin>,
}

/// What a call's audit record says beside its chunks: labels and numbers, never the query.
struct Audited<'a> {
    budget: u32,
    model: Option<String>,
    profile: Option<&'static str>,
    session: Option<&'a str>,
}

/// What a call asks for besides the query and budget.
#[derive(Default)]
pub(super) struct Asked<'a> {
    /// Files the client has open or recently edited.
    pub(super) hot_paths: Vec<String>,
    /// The previous page's token.
    pub(super) continuation: Option<&'a str>,
    /// The client's session: chunks delivered in its earlier calls are named, not sent again.
    pub(super) session: Option<&'a str>,
    /// How much each piece may be reduced.
    pub(super) compression: Compression,
    /// How the budget is spent.
    pub(super) profile: Profile,
    /// The error output `repair` answers.
    pub(super) error_output: Option<String>,
    /// Pieces only, no summaries (search pages).
    pub(super) pieces_only: bool,
}

/// The core's answer, where the chunks the session already holds are, the bytes read, and the
/// version's origin.
type Answered = (Assembled, Vec<ChunkRef>, u64, Option<Origin>);

/// Resolves, admits, assembles and settles one call.
pub(super) async fn run(
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
    let history = u64::from(resolved.history);
    let tokens = u64::from(resolved.whole());
    let audited = Audited {
        budget: resolved.whole(),
        model: resolved.model.clone(),
        profile: (!asked.pieces_only).then(|| asked.profile.name()),
        session: asked.session,
    };
    let lease = meter::new_id(state);
    let (project, version, outcome) = reserve(state, caller, project, &lease, tokens, now).await?;
    let admission = meter::admitted(lease, tokens, endpoint, outcome)
        .inspect_err(|e| meter::noted(caller, e))?;
    let mut sent = Sent::default();
    let result = async {
        if let Some(claims) = claims {
            claims.check(&org, &project.id, version, query)?;
            sent = claims.sent();
        }
        assemble(state, caller, &project, query, &resolved, asked, &sent).await
    }
    .await;
    settle(
        state, caller, admission, &result, history, &project, audited,
    )
    .await;
    let (done, already_delivered, read_bytes, origin) = result?;
    let continuation = (done.left_out > 0 && !done.chosen.is_empty()).then(|| {
        let sent = sent.after(&done.chosen, &done.partial);
        continuation::issue(
            &Claims {
                org,
                project: project.id.clone(),
                version,
                query: query_fingerprint(query),
                delivered: sent.whole,
                partial: sent.partial,
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
        origin,
    })
}

/// Finds `project` and reserves `tokens` for the call, in one round trip where the host allows
/// (the Worker's Durable Object holds both); a warm request whose pointer is cached only asks
/// the backend for the quota.
async fn reserve(
    state: &AppState,
    caller: &Caller,
    project: &str,
    lease: &str,
    tokens: u64,
    now: u64,
) -> Result<(ProjectInfo, u64, Result<Hold, Refusal>), ApiError> {
    let org = &caller.org.name;
    let cached = (!caller.fresh)
        .then(|| state.pointers.get(org, project, now))
        .flatten();
    if !caller.fresh {
        caller.note.cache(IndexCache::Pointer, cached.is_some());
    }
    let found = match cached {
        // A warm request: the pointer is known, only the quota needs the backend, and not
        // even that for an org without limits (its call is booked when it settles).
        Some((p, version)) => {
            let outcome = meter::hold(state, caller, lease, tokens, now).await?;
            return Ok((p, version, outcome));
        }
        None => {
            let found = state
                .admission
                .reserve_for_project(org, project, &caller.org.limits, lease, tokens, now)
                .await?;
            if let ProjectAdmission::Reserved { project: p, .. } = &found {
                state.pointers.put(org, project, p, now);
            }
            found
        }
    };
    match found {
        ProjectAdmission::NotFound => Err(no_project(project)),
        ProjectAdmission::NotIndexed { project } => Err(ApiError::new(
            ErrorCode::ProjectNotIndexed,
            format!("project `{}` has no published index yet", project.name),
        )),
        ProjectAdmission::Reserved {
            project,
            version,
            outcome,
        } => Ok((project, version, outcome.map(|_| Hold::Lease))),
    }
}

/// The core's answer over the project's opened version: what earlier pages and the session
/// delivered is left out (or named), dense hits join when the host embeds.
async fn assemble(
    state: &AppState,
    caller: &Caller,
    project: &ProjectInfo,
    query: &str,
    resolved: &ResolvedBudget,
    asked: Asked<'_>,
    sent: &Sent,
) -> Result<Answered, ApiError> {
    let (known, known_signatures) = match asked.session {
        Some(s) => session_chunks(state, caller, s, &project.id).await?,
        None => (HashSet::new(), HashSet::new()),
    };
    let (snap, opened_bytes) = state
        .snapshots
        .open(state.projects.as_ref(), project)
        .await?;
    // Nothing read from storage: the version was open in this process.
    caller.note.cache(IndexCache::Version, opened_bytes == 0);
    let mut exclude = sent.whole.clone();
    exclude.extend(indices_of(&snap.pack, &known));
    // A chunk an earlier page or the session gave only as an outline may come whole later, not
    // as an outline again.
    let mut signatures_sent = indices_of(&snap.pack, &known_signatures);
    signatures_sent.extend(&sent.partial);
    let sources = crate::dense::Sources {
        published: state.published_dense.as_deref(),
        own: state.dense.as_deref(),
        projects: state.projects.as_ref(),
        shared: state.snapshots.shared(),
    };
    let dense = crate::dense::signal(sources, caller.org.dense, &snap, query).await?;
    let options = QueryOptions {
        hot_paths: asked.hot_paths,
        exclude,
        signatures_sent,
        compression: asked.compression,
        profile: asked.profile,
        error_output: asked.error_output,
        without_summaries: asked.pieces_only,
        dense: dense.hits,
        weights: state.config.weights,
        ..QueryOptions::default()
    };
    let (mut done, text_bytes) = crate::texts::answer(
        state.projects.as_ref(),
        state.snapshots.shared(),
        &snap,
        query,
        resolved,
        &options,
    )
    .await?;
    done.warnings.extend(dense.note);
    let referenced = references(&snap.pack, &done.already_delivered);
    for p in &mut done.pieces {
        p.source_url = source_url(snap.origin.as_ref(), project, p);
    }
    Ok((
        done,
        referenced,
        opened_bytes + text_bytes,
        snap.origin.clone(),
    ))
}

/// Where a person reads `piece`: the commit-pinned page on the repository's host when the
/// version's origin is on one, else the file in the indexed folder when the project was
/// indexed from a folder (`file://`), else nothing.
fn source_url(origin: Option<&Origin>, project: &ProjectInfo, piece: &Piece) -> Option<String> {
    if let Some(link) =
        origin.and_then(|o| source_link(o, &piece.path, piece.start_line, piece.end_line))
    {
        return Some(link);
    }
    let folder = project.source.trim_end_matches('/');
    folder
        .starts_with('/')
        .then(|| format!("file://{folder}/{}", piece.path))
}

/// The pack indices of the chunks whose ids are in `ids`, in pack order.
fn indices_of(pack: &IndexPack, ids: &HashSet<String>) -> Vec<u32> {
    if ids.is_empty() {
        return Vec::new();
    }
    pack.chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| ids.contains(c.id.as_str()))
        .map(|(i, _)| i as u32)
        .collect()
}

/// Settles the reservation with what the call used (the history's tokens included) and audits
/// which chunks went out, whole or as signatures; a failed call uses nothing.
async fn settle(
    state: &AppState,
    caller: &Caller,
    admission: Admission,
    result: &Result<Answered, ApiError>,
    history: u64,
    project: &ProjectInfo,
    audited: Audited<'_>,
) {
    let intent = match result {
        Ok((d, ..)) => serde_json::to_value(d.intent.intent)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
        Err(_) => None,
    };
    let (used, chunks, signature_only, status) = match result {
        Ok((d, ..)) => (
            u64::from(d.tokens_total) + history,
            d.pieces.iter().map(|p| p.chunk_id.clone()).collect(),
            d.pieces
                .iter()
                .filter(|p| p.form.is_outline())
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
            session: audited.session.map(str::to_string),
            chunks,
            signature_only,
            budget: Some(audited.budget),
            model: audited.model,
            profile: audited.profile.map(str::to_string),
            intent,
        },
    )
    .await;
}
