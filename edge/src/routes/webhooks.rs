//! Push webhooks: `POST /v1/projects/{id}/webhook` (create or rotate a project's webhook secret,
//! with an API key), `DELETE /v1/projects/{id}/webhook`, and the forges' deliveries,
//! `POST /v1/webhooks/github/{project}` and `POST /v1/webhooks/gitlab/{project}`.
//!
//! A delivery carries no API key: the project's secret authenticates it (GitHub's HMAC of the
//! body, GitLab's token), and the project id in its path says whose secret to use. Before the
//! signature is checked, a delivery for a project without a webhook is answered exactly as one
//! with a wrong signature, so the path reveals nothing about which projects exist. A delivery is
//! checked in full before anything is written; a replay (by delivery id or by body) is refused;
//! only a push that moves what the project follows queues a re-index.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::webhook::push::{Event, Push};
use ctxgate_core::webhook::signature::SignatureError;
use ctxgate_core::webhook::watch::{Verdict, same_repository, verdict};
use ctxgate_core::webhook::{Forge, delivery, push, signature};
use serde::Serialize;

use crate::backend::{ProjectInfo, SourceSpec, pick_project};
use crate::error::ApiError;
use crate::extract::Caller;
use crate::hooks::{HookRecord, Webhooks};
use crate::meter::OrgJobs;
use crate::routes::projects::find_project;
use crate::state::AppState;

/// Bytes of randomness in a webhook secret (written as hex: 64 characters).
const SECRET_BYTES: usize = 32;

/// The answer of `POST /v1/projects/{id}/webhook`: the only one that carries the secret.
#[derive(Serialize, schemars::JsonSchema)]
pub struct CreatedHook {
    /// The project's id (the last part of the delivery paths).
    pub project: String,
    /// The project's name.
    pub name: String,
    /// Where GitHub delivers, below this server's public URL.
    pub github_path: String,
    /// Where GitLab delivers, below this server's public URL.
    pub gitlab_path: String,
    /// The secret to enter as the webhook's secret (GitHub) or secret token (GitLab). Shown
    /// here once; a new one replaces it.
    pub secret: String,
    /// The content type the forge must send.
    pub content_type: &'static str,
    /// The events to subscribe to.
    pub events: Vec<&'static str>,
}

/// What became of a delivery that was accepted.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Delivered {
    /// `queued` (202: a re-index was started), `ignored` (200: nothing the project follows
    /// moved) or `pong` (200: GitHub's `ping`).
    pub status: &'static str,
    /// Why nothing was queued: `ref_not_watched`, `ref_deleted`, `pinned_to_a_commit`,
    /// `event_not_push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The event the forge named.
    pub event: String,
    /// The re-index jobs queued.
    pub jobs: Vec<QueuedJob>,
}

/// One re-index queued by a push.
#[derive(Serialize, schemars::JsonSchema)]
pub struct QueuedJob {
    /// The project's id.
    pub project: String,
    /// The project's name.
    pub name: String,
    /// The ref pushed.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// The commit it moved to.
    pub commit: String,
}

fn unsupported() -> ApiError {
    ApiError::new(
        ErrorCode::WebhooksUnsupported,
        "this deployment does not index on push (the Worker over R2, or AWS without \
         CTXGATE_INDEXER_FUNCTION); its projects are re-indexed where they are published",
    )
}

fn hooks(state: &AppState) -> Result<&dyn Webhooks, ApiError> {
    state.webhooks.as_deref().ok_or_else(unsupported)
}

fn source_unsupported(project: &ProjectInfo) -> ApiError {
    ApiError::new(
        ErrorCode::WebhookSourceUnsupported,
        format!(
            "project `{}` is not indexed from a git repository registered here, so no push \
             concerns it (register it with a git source: POST /v1/projects)",
            project.name
        ),
    )
}

/// `POST /v1/projects/{id}/webhook`: a new secret for the project's webhook (replacing any
/// previous one), answered once.
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<CreatedHook>), ApiError> {
    let hooks = hooks(&state)?;
    let project = find_project(&state, &caller.org.name, &id).await?;
    if !matches!(
        hooks.registered_source(&project).await?,
        Some(SourceSpec::Git { .. })
    ) {
        return Err(source_unsupported(&project));
    }
    let secret = ctxgate_core::hash::hex(&state.accounts.random_bytes(SECRET_BYTES));
    hooks
        .put_hook(&HookRecord {
            org: project.org.clone(),
            project: project.id.clone(),
            secret: secret.clone(),
            created_ms: state.accounts.now_ms(),
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedHook {
            github_path: format!("/v1/webhooks/github/{}", project.id),
            gitlab_path: format!("/v1/webhooks/gitlab/{}", project.id),
            project: project.id,
            name: project.name,
            secret,
            content_type: "application/json",
            events: vec!["push"],
        }),
    ))
}

/// `DELETE /v1/projects/{id}/webhook`: the project's deliveries are refused from now on.
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let hooks = hooks(&state)?;
    let project = find_project(&state, &caller.org.name, &id).await?;
    hooks.delete_hook(&project.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /v1/webhooks/github/{project}`.
pub async fn github(
    State(state): State<AppState>,
    Path(project): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Delivered>), ApiError> {
    deliver(&state, Forge::GitHub, &project, &headers, &body).await
}

/// `POST /v1/webhooks/gitlab/{project}`.
pub async fn gitlab(
    State(state): State<AppState>,
    Path(project): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Delivered>), ApiError> {
    deliver(&state, Forge::GitLab, &project, &headers, &body).await
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A path segment that could be a project id: anything else has no webhook.
fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The delivery's signer, checked: the project's webhook when the signature holds under its
/// secret. A project without a webhook, or that does not exist, is checked against a throwaway
/// key, so it is refused with the same status, code and message as a wrong signature, in about
/// the same time.
async fn authenticate(
    hooks: &dyn Webhooks,
    forge: Forge,
    project: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<HookRecord, ApiError> {
    let Some(signed) = header(headers, forge.signature_header()) else {
        return Err(ApiError::new(
            ErrorCode::WebhookSignatureMissing,
            format!(
                "no `{}` header: set the webhook's secret to the one POST \
                 /v1/projects/{{id}}/webhook answered",
                forge.signature_header()
            ),
        ));
    };
    let record = if plausible_id(project) {
        hooks.hook(project).await?
    } else {
        None
    };
    let key = record
        .as_ref()
        .map_or(&b"no webhook"[..], |r| r.secret.as_bytes());
    let checked = match forge {
        Forge::GitHub => signature::verify_github(key, body, signed),
        Forge::GitLab => signature::verify_gitlab(key, signed),
    };
    let refused =
        |e: SignatureError| ApiError::new(e.code(), format!("{e}, or the project has no webhook"));
    match (record, checked) {
        (Some(record), Ok(())) => Ok(record),
        (_, Err(e)) => Err(refused(e)),
        // Signed with the throwaway key: refused word for word as a wrong signature, so that
        // no answer tells a project without a webhook from one with it.
        (None, Ok(())) => Err(refused(SignatureError::Mismatch)),
    }
}

async fn deliver(
    state: &AppState,
    forge: Forge,
    project_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(StatusCode, Json<Delivered>), ApiError> {
    let hooks = hooks(state)?;
    let record = authenticate(hooks, forge, project_id, headers, body).await?;
    let marks = delivery::marks(
        forge.delivery_header(),
        header(headers, forge.delivery_header()),
        body,
    )
    .map_err(|e| ApiError::new(e.code(), e.to_string()))?;
    let event_name = header(headers, forge.event_header())
        .unwrap_or("")
        .trim()
        .to_owned();
    let event = push::parse(forge, Some(&event_name), body)
        .map_err(|e| ApiError::new(e.code(), e.to_string()))?;
    let project = pick_project(state.projects.projects(&record.org).await?, &record.project)
        .filter(|p| p.id == record.project)
        .ok_or_else(|| crate::routes::projects::no_project(&record.project))?;
    let answer = |status, reason| Delivered {
        status,
        reason,
        event: event_name.clone(),
        jobs: Vec::new(),
    };
    let push = match event {
        Event::Other(_) => {
            return Ok((
                StatusCode::OK,
                Json(answer("ignored", Some("event_not_push"))),
            ));
        }
        Event::Ping { repository_urls } => {
            let source = hooks.registered_source(&project).await?;
            if let (Some(SourceSpec::Git { url, .. }), false) =
                (&source, repository_urls.is_empty())
                && !same_repository(url, &repository_urls)
            {
                return Err(mismatch(&project, url));
            }
            return Ok((StatusCode::OK, Json(answer("pong", None))));
        }
        Event::Push(push) => push,
    };
    let source = hooks
        .registered_source(&project)
        .await?
        .ok_or_else(|| source_unsupported(&project))?;
    let queue = match verdict(&source, &push) {
        Verdict::NotGit => return Err(source_unsupported(&project)),
        Verdict::OtherRepository => {
            let SourceSpec::Git { url, .. } = &source else {
                return Err(source_unsupported(&project));
            };
            return Err(mismatch(&project, url));
        }
        Verdict::Unwatched(why) => Err(why.reason()),
        Verdict::Reindex => Ok(()),
    };
    mark(hooks, state.accounts.now_ms(), &project.id, &marks).await?;
    if let Err(reason) = queue {
        return Ok((StatusCode::OK, Json(answer("ignored", Some(reason)))));
    }
    // The push's job counts against its project's org, as a re-index request would.
    let limits = state
        .accounts
        .org(&project.org)
        .await?
        .map(|o| o.limits)
        .unwrap_or_default();
    let jobs = OrgJobs::new(state.accounts.as_ref(), &project.org, limits);
    if let Err(e) = hooks.queue_reindex(&project, &source, &jobs).await {
        // Not queued: the forge's redelivery of this one must not be taken for a replay.
        for m in &marks {
            let _ = hooks.forget_delivery(&project.id, m).await;
        }
        return Err(e.into());
    }
    let Push { git_ref, after, .. } = push;
    let mut queued = answer("queued", None);
    queued.jobs.push(QueuedJob {
        project: project.id,
        name: project.name,
        git_ref,
        commit: after,
    });
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

fn mismatch(project: &ProjectInfo, url: &str) -> ApiError {
    ApiError::new(
        ErrorCode::WebhookRepositoryMismatch,
        format!(
            "the push is about another repository than project `{}` indexes ({url}): set the \
             webhook on that repository",
            project.name
        ),
    )
}

/// Records every mark of the delivery, or none: a replay under either mark is refused.
async fn mark(
    hooks: &dyn Webhooks,
    now: u64,
    project: &str,
    marks: &[String],
) -> Result<(), ApiError> {
    for (i, m) in marks.iter().enumerate() {
        if !hooks.mark_delivery(project, m, now).await? {
            for earlier in &marks[..i] {
                let _ = hooks.forget_delivery(project, earlier).await;
            }
            return Err(ApiError::new(
                ErrorCode::WebhookReplayed,
                "this delivery was received before (the same delivery id or the same body): \
                 nothing was done",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::backend::BackendError;

    /// Webhook items in memory, keyed as the stores key them.
    #[derive(Default)]
    struct Items(Mutex<BTreeMap<(String, String), String>>);

    #[async_trait]
    impl Webhooks for Items {
        async fn hook(&self, _: &str) -> Result<Option<HookRecord>, BackendError> {
            Ok(None)
        }
        async fn put_hook(&self, _: &HookRecord) -> Result<(), BackendError> {
            Ok(())
        }
        async fn delete_hook(&self, _: &str) -> Result<(), BackendError> {
            Ok(())
        }
        async fn mark_delivery(&self, p: &str, m: &str, at: u64) -> Result<bool, BackendError> {
            let mut items = self.0.lock().unwrap();
            let key = (p.to_string(), m.to_string());
            if items.contains_key(&key) {
                return Ok(false);
            }
            items.insert(key, at.to_string());
            Ok(true)
        }
        async fn forget_delivery(&self, p: &str, m: &str) -> Result<(), BackendError> {
            self.0
                .lock()
                .unwrap()
                .remove(&(p.to_string(), m.to_string()));
            Ok(())
        }
        async fn registered_source(
            &self,
            _: &ProjectInfo,
        ) -> Result<Option<SourceSpec>, BackendError> {
            Ok(None)
        }
        async fn queue_reindex(
            &self,
            _: &ProjectInfo,
            _: &SourceSpec,
            _: &dyn crate::backend::JobGate,
        ) -> Result<(), BackendError> {
            Ok(())
        }
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn marks(id: &str, body: &[u8]) -> [String; 2] {
        delivery::marks("x-github-delivery", Some(id), body).unwrap()
    }

    #[test]
    fn a_replay_by_id_or_body_is_refused_and_leaves_no_mark() {
        let items = Items::default();
        let first = marks("d1", b"push one");
        assert!(block(mark(&items, 1, "p1", &first)).is_ok());
        assert_eq!(items.0.lock().unwrap().len(), 2);
        for replay in [
            marks("d1", b"push one"),
            marks("d2", b"push one"),
            marks("d1", b"other"),
        ] {
            let e = block(mark(&items, 2, "p1", &replay)).unwrap_err();
            assert_eq!(
                (e.status, e.code),
                (StatusCode::CONFLICT, ErrorCode::WebhookReplayed)
            );
            // The new mark of a half-new delivery was taken back.
            assert_eq!(items.0.lock().unwrap().len(), 2, "{replay:?}");
        }
        // Another project's deliveries are its own.
        assert!(block(mark(&items, 3, "p2", &first)).is_ok());
        assert!(block(mark(&items, 4, "p1", &marks("d3", b"push two"))).is_ok());
        assert_eq!(items.0.lock().unwrap().len(), 6);
    }
}
