//! The caller's projects: register, list, show, status, re-index, and their push webhooks.

use ctxgate_core::error_code::ErrorCode as Code;

use super::{of, ok, op};
use crate::backend::ProjectInfo;
use crate::openapi::errors::{EMBEDDING, SOURCE, SOURCE_REFUSED};
use crate::openapi::operation::{Access, Answer, Body, Operation};
use crate::openapi::prose::{CREATE_PROJECT, CREATE_WEBHOOK, REINDEX, STATUS};
use crate::routes::ProjectList;
use crate::routes::projects::{CreateProject, ProjectStatus, Reindexed};
use crate::routes::webhooks::CreatedHook;

pub(super) fn operations() -> Vec<Operation> {
    vec![
        Operation {
            description: Some(CREATE_PROJECT),
            body: Body::Json(of::<CreateProject>),
            answers: vec![
                Answer {
                    status: 201,
                    description: "Indexed: `current_version` is the version published",
                    body: Some(of::<ProjectInfo>),
                },
                Answer {
                    status: 202,
                    description: "Registered; the batch indexer fetches and indexes it on its next scheduled pass (`current_version` is null until then)",
                    body: Some(of::<ProjectInfo>),
                },
            ],
            own_errors: [
                SOURCE,
                SOURCE_REFUSED,
                EMBEDDING,
                &[Code::InvalidName, Code::Conflict, Code::QuotaExceeded],
            ]
            .concat(),
            ..op(
                "post",
                "/v1/projects",
                "createProject",
                "Register a project and index it",
                Access::Key,
            )
        },
        Operation {
            answers: ok(of::<ProjectList>),
            ..op(
                "get",
                "/v1/projects",
                "listProjects",
                "The caller's projects",
                Access::Key,
            )
        },
        Operation {
            answers: ok(of::<ProjectInfo>),
            own_errors: vec![Code::ProjectNotFound],
            ..op(
                "get",
                "/v1/projects/{id}",
                "getProject",
                "One of the caller's projects, by id or name",
                Access::Key,
            )
        },
        Operation {
            description: Some(STATUS),
            answers: ok(of::<ProjectStatus>),
            own_errors: vec![Code::ProjectNotFound, Code::NotFound, Code::IndexOutdated],
            ..op(
                "get",
                "/v1/projects/{id}/status",
                "projectStatus",
                "One of the caller's projects, its current index and its newest job",
                Access::Key,
            )
        },
        Operation {
            description: Some(REINDEX),
            answers: vec![Answer {
                status: 200,
                description: "Indexed",
                body: Some(of::<Reindexed>),
            }],
            own_errors: [
                SOURCE,
                SOURCE_REFUSED,
                EMBEDDING,
                &[
                    Code::ProjectNotFound,
                    Code::NotFound,
                    Code::Conflict,
                    Code::QuotaExceeded,
                ],
            ]
            .concat(),
            ..op(
                "post",
                "/v1/projects/{id}/reindex",
                "reindexProject",
                "Index one of the caller's projects again from where it was registered",
                Access::Key,
            )
        },
    ]
}

/// Creating and deleting a project's push webhook (the deliveries: `webhooks.rs`).
pub(super) fn webhook_operations() -> Vec<Operation> {
    vec![
        Operation {
            description: Some(CREATE_WEBHOOK),
            answers: vec![Answer {
                status: 201,
                description: "Created: the secret is in this answer and nowhere else",
                body: Some(of::<CreatedHook>),
            }],
            own_errors: vec![
                Code::ProjectNotFound,
                Code::WebhooksUnsupported,
                Code::WebhookSourceUnsupported,
            ],
            ..op(
                "post",
                "/v1/projects/{id}/webhook",
                "createWebhook",
                "Create (or rotate) the secret of a project's push webhook; shown once",
                Access::Key,
            )
        },
        Operation {
            answers: vec![Answer {
                status: 204,
                description: "Deleted: deliveries for the project are refused from now on",
                body: None,
            }],
            own_errors: vec![Code::WebhooksUnsupported, Code::ProjectNotFound],
            ..op(
                "delete",
                "/v1/projects/{id}/webhook",
                "deleteWebhook",
                "Delete a project's push webhook",
                Access::Key,
            )
        },
    ]
}
