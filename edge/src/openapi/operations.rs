//! The API as a table: every operation with the types it takes and answers, and the error codes
//! it can answer with, status by status. [`super::document`] turns it into the document.
//!
//! Codes common to a kind of operation (a caller's key, the admin secret, a JSON body, a
//! metered call, an index read) are added by [`Operation::errors`] (`errors.rs`); each entry
//! lists only what its handler adds. What an operation is: `operation.rs`; long descriptions:
//! `prose.rs`.

use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::errors::{
    BUDGET, CONTINUATION, CONVERSATION, EMBEDDING, QUERY, SOURCE_INVALID, SOURCE_REFUSED,
    SOURCE_UPSTREAM,
};
use super::operation::{Access, Answer, Body, Operation, SchemaOf};
use super::prose::{COMPACT, CREATE_PROJECT, CREATE_WEBHOOK, DELIVERY, GC, METRICS};
use crate::backend::{OrgRecord, ProjectInfo};
use crate::mcp::{RpcAnswer, RpcRequest};
use crate::metrics::MetricsSnapshot;
use crate::routes::admin::{CreateOrg, CreatedKey, SetDense};
use crate::routes::history::{CompactAnswer, CompactRequest};
use crate::routes::meta::ModelList;
use crate::routes::projects::{CreateProject, ProjectStatus, Reindexed};
use crate::routes::usage::Usage;
use crate::routes::webhooks::{CreatedHook, Delivered};
use crate::routes::{
    ContextAnswer, ContextRequest, CountAnswer, CountRequest, ProjectList, SearchAnswer,
    SearchRequest,
};
use crate::wire::Health;
use ctxgate_core::host_wire::{GcAnswer, GcRequest, PublishedProject};
use ctxgate_core::quota::Limits;

/// The schema of `T` ([`SchemaOf`]).
fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

fn ok(body: SchemaOf) -> Vec<Answer> {
    vec![Answer {
        status: 200,
        description: "OK",
        body: Some(body),
    }]
}

/// Every operation of the API, in the order the document lists them.
pub(super) fn operations() -> Vec<Operation> {
    let op = |method, path, id, summary, access| Operation {
        method,
        path,
        id,
        summary,
        description: None,
        access,
        body: Body::None,
        metered: false,
        reads_index: false,
        answers: Vec::new(),
        own_errors: Vec::new(),
        headers: Vec::new(),
    };
    vec![
        Operation {
            answers: ok(of::<Health>),
            ..op(
                "get",
                "/healthz",
                "health",
                "Liveness and build facts",
                Access::Public,
            )
        },
        Operation {
            answers: ok(document_schema),
            ..op(
                "get",
                "/openapi.json",
                "openapi",
                "This document",
                Access::Public,
            )
        },
        Operation {
            answers: ok(of::<ModelList<'static>>),
            ..op(
                "get",
                "/v1/models",
                "listModels",
                "The model catalog with windows, usable budgets, tokenizers and prices",
                Access::Public,
            )
        },
        Operation {
            body: Body::Json(of::<CountRequest>),
            metered: true,
            answers: ok(of::<CountAnswer>),
            own_errors: vec![(
                400,
                vec!["unknown_model", "unknown_encoding", "too_many_texts"],
            )],
            ..op(
                "post",
                "/v1/tokens/count",
                "countTokens",
                "Exact token counts (or the documented estimate) for a model or encoding",
                Access::Key,
            )
        },
        Operation {
            body: Body::Json(of::<ContextRequest>),
            metered: true,
            reads_index: true,
            answers: ok(of::<ContextAnswer<'static>>),
            own_errors: vec![
                (
                    400,
                    [
                        BUDGET,
                        QUERY,
                        CONTINUATION,
                        CONVERSATION,
                        &[
                            "unsupported_option",
                            "invalid_session",
                            "error_output_missing",
                            "error_output_unused",
                            "error_output_too_large",
                        ],
                    ]
                    .concat(),
                ),
                (403, vec!["model_not_allowed"]),
            ],
            ..op(
                "post",
                "/v1/context",
                "getContext",
                "Assemble context for a query within a budget",
                Access::Key,
            )
        },
        Operation {
            body: Body::Json(of::<SearchRequest>),
            metered: true,
            reads_index: true,
            answers: ok(of::<SearchAnswer>),
            own_errors: vec![
                (400, [BUDGET, QUERY, CONTINUATION].concat()),
                (403, vec!["model_not_allowed"]),
            ],
            ..op(
                "post",
                "/v1/search",
                "searchCode",
                "One page of ranked pieces within page_tokens, with a continuation token",
                Access::Key,
            )
        },
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
            own_errors: vec![
                (400, [SOURCE_INVALID, &["invalid_name"]].concat()),
                (403, SOURCE_REFUSED.to_vec()),
                (409, vec!["conflict"]),
                (429, vec!["quota_exceeded"]),
                (502, [SOURCE_UPSTREAM, EMBEDDING].concat()),
            ],
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
            own_errors: vec![(404, vec!["project_not_found"])],
            ..op(
                "get",
                "/v1/projects/{id}",
                "getProject",
                "One of the caller's projects, by id or name",
                Access::Key,
            )
        },
        Operation {
            description: Some(
                "What the console's projects page shows: the current version's commit, remote, \
                 file, chunk and token counts, and the newest indexing job with its state and \
                 error code (hosts that keep no job records answer `last_job: null`).",
            ),
            answers: ok(of::<ProjectStatus>),
            own_errors: vec![
                (404, vec!["project_not_found", "not_found"]),
                (409, vec!["index_outdated"]),
            ],
            ..op(
                "get",
                "/v1/projects/{id}/status",
                "projectStatus",
                "One of the caller's projects, its current index and its newest job",
                Access::Key,
            )
        },
        Operation {
            description: Some(
                "Publishes a new version when the project's files changed (an unchanged folder \
                 costs a stat walk); requests made meanwhile are answered from the previous \
                 version. Hosts that do not index sources (the Worker over R2) answer 403 \
                 `source_refused`. The job counts against the org's `index_jobs_per_hour` \
                 (429 `quota_exceeded` with `Retry-After` past it).",
            ),
            answers: vec![Answer {
                status: 200,
                description: "Indexed",
                body: Some(of::<Reindexed>),
            }],
            own_errors: vec![
                (400, SOURCE_INVALID.to_vec()),
                (403, SOURCE_REFUSED.to_vec()),
                (404, vec!["project_not_found", "not_found"]),
                (409, vec!["conflict"]),
                (429, vec!["quota_exceeded"]),
                (502, [SOURCE_UPSTREAM, EMBEDDING].concat()),
            ],
            ..op(
                "post",
                "/v1/projects/{id}/reindex",
                "reindexProject",
                "Index one of the caller's projects again from where it was registered",
                Access::Key,
            )
        },
        Operation {
            description: Some(CREATE_WEBHOOK),
            answers: vec![Answer {
                status: 201,
                description: "Created: the secret is in this answer and nowhere else",
                body: Some(of::<CreatedHook>),
            }],
            own_errors: vec![
                (404, vec!["project_not_found"]),
                (403, vec!["webhooks_unsupported"]),
                (409, vec!["webhook_source_unsupported"]),
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
            own_errors: vec![
                (403, vec!["webhooks_unsupported"]),
                (404, vec!["project_not_found"]),
            ],
            ..op(
                "delete",
                "/v1/projects/{id}/webhook",
                "deleteWebhook",
                "Delete a project's push webhook",
                Access::Key,
            )
        },
        webhook_delivery(
            "/v1/webhooks/github/{project}",
            "githubWebhook",
            "A GitHub push webhook delivery (signed with the project's secret)",
            vec![
                (
                    "X-Hub-Signature-256",
                    "`sha256=` and the hex HMAC-SHA256 of the raw body under the project's webhook secret",
                ),
                (
                    "X-GitHub-Event",
                    "`push` (re-indexes when it moves what the project follows), `ping`, or another event (ignored)",
                ),
                (
                    "X-GitHub-Delivery",
                    "The delivery's id; a delivery seen before is refused",
                ),
            ],
        ),
        webhook_delivery(
            "/v1/webhooks/gitlab/{project}",
            "gitlabWebhook",
            "A GitLab push hook delivery (carrying the project's secret token)",
            vec![
                ("X-Gitlab-Token", "The project's webhook secret"),
                (
                    "X-Gitlab-Event",
                    "`Push Hook` or `Tag Push Hook` (re-indexes when it moves what the project follows), or another event (ignored)",
                ),
                (
                    "X-Gitlab-Event-UUID",
                    "The delivery's id; a delivery seen before is refused",
                ),
            ],
        ),
        Operation {
            answers: ok(of::<Usage>),
            ..op(
                "get",
                "/v1/usage",
                "getUsage",
                "The caller's quota, spend and recent audited calls",
                Access::Key,
            )
        },
        Operation {
            description: Some(METRICS),
            answers: vec![Answer {
                status: 200,
                description: "Prometheus text (0.0.4) by default; this JSON with `Accept: application/json`",
                body: Some(of::<MetricsSnapshot>),
            }],
            ..op(
                "get",
                "/metrics",
                "metrics",
                "Request, token, quota, cache and indexing metrics (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(COMPACT),
            body: Body::Json(of::<CompactRequest>),
            metered: true,
            answers: ok(of::<CompactAnswer>),
            own_errors: vec![
                (400, [BUDGET, CONVERSATION, QUERY].concat()),
                (403, vec!["model_not_allowed"]),
            ],
            ..op(
                "post",
                "/v1/history/compact",
                "compactHistory",
                "Compact a conversation within a budget",
                Access::Key,
            )
        },
        Operation {
            description: Some(
                "Tools `get_context`, `search_code`, `count_tokens` and `list_projects`, each \
                 under the caller's org and quota. Protocol and tool errors are JSON-RPC \
                 answers (200): a tool's API error is its result with `isError: true`.",
            ),
            body: Body::Json(of::<RpcRequest>),
            answers: vec![
                Answer {
                    status: 200,
                    description: "The JSON-RPC answer",
                    body: Some(of::<RpcAnswer>),
                },
                Answer {
                    status: 202,
                    description: "A JSON-RPC notification or response: accepted, no answer",
                    body: None,
                },
            ],
            ..op(
                "post",
                "/mcp",
                "mcp",
                "MCP over Streamable HTTP (JSON-RPC 2.0)",
                Access::Key,
            )
        },
        Operation {
            body: Body::Json(of::<CreateOrg>),
            answers: vec![Answer {
                status: 201,
                description: "Created",
                body: Some(of::<OrgRecord>),
            }],
            own_errors: vec![(400, vec!["invalid_name"]), (409, vec!["conflict"])],
            ..op(
                "post",
                "/v1/admin/orgs",
                "createOrg",
                "Create an organisation (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            answers: vec![Answer {
                status: 201,
                description: "Created: the key is in this answer and nowhere else",
                body: Some(of::<CreatedKey>),
            }],
            own_errors: vec![(404, vec!["org_not_found", "not_found"])],
            ..op(
                "post",
                "/v1/admin/orgs/{org}/keys",
                "createKey",
                "Create an API key; the key is returned once (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            body: Body::Json(of::<Limits>),
            answers: ok(of::<OrgRecord>),
            own_errors: vec![(404, vec!["org_not_found", "not_found"])],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/limits",
                "setLimits",
                "Replace an organisation's limits (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(
                "With dense on, `/v1/context` embeds each query through the host's embeddings \
                 provider and ranks with the version's published vectors (the `dense` signal); \
                 off (the default) makes no provider call.",
            ),
            body: Body::Json(of::<SetDense>),
            answers: ok(of::<OrgRecord>),
            own_errors: vec![(404, vec!["org_not_found", "not_found"])],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/dense",
                "setDense",
                "Turn dense retrieval on or off for an organisation (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            body: Body::Json(of::<PublishedProject>),
            answers: ok(of::<ProjectInfo>),
            own_errors: vec![(400, vec!["invalid_name"]), (404, vec!["org_not_found"])],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/projects/{name}",
                "putProject",
                "Register a project whose index an indexer published (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(
                "`key` is the object's store key below `org/{org}/` (segments, packs, \
                 manifests; `ctxgate project publish` sends them, manifest last). Up to 96 MiB \
                 natively, 32 MiB in the Worker.",
            ),
            body: Body::Bytes,
            answers: vec![Answer {
                status: 204,
                description: "Stored",
                body: None,
            }],
            own_errors: vec![
                (400, vec!["invalid_object_key", "invalid_body"]),
                (404, vec!["org_not_found"]),
            ],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/objects/{key}",
                "putObject",
                "Store one object of an index an indexer built (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(
                "204 when stored, 404 `object_not_found` when not: a publisher skips \
                 content-addressed segments an earlier version uploaded.",
            ),
            answers: vec![Answer {
                status: 204,
                description: "Stored",
                body: None,
            }],
            own_errors: vec![
                (400, vec!["invalid_object_key"]),
                (404, vec!["object_not_found"]),
            ],
            ..op(
                "head",
                "/v1/admin/orgs/{org}/objects/{key}",
                "hasObject",
                "Whether an object is stored (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(GC),
            body: Body::Json(of::<GcRequest>),
            answers: vec![Answer {
                status: 200,
                description: "What was deleted (or would be, in a dry run), project by project",
                body: Some(of::<GcAnswer>),
            }],
            own_errors: vec![(404, vec!["org_not_found"]), (501, vec!["not_supported"])],
            ..op(
                "post",
                "/v1/admin/orgs/{org}/gc",
                "collectGarbage",
                "Delete an organisation's old index versions from this host's store (admin secret)",
                Access::Admin,
            )
        },
    ]
}

/// A forge's webhook delivery to `path`: no API key (the signature authenticates it), the
/// push event's JSON read as bytes.
fn webhook_delivery(
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    headers: Vec<(&'static str, &'static str)>,
) -> Operation {
    let delivered = |status, description| Answer {
        status,
        description,
        body: Some(of::<Delivered>),
    };
    Operation {
        method: "post",
        path,
        id,
        summary,
        description: Some(DELIVERY),
        access: Access::Public,
        body: Body::Signed(push_payload),
        metered: false,
        reads_index: false,
        answers: vec![
            delivered(
                200,
                "Nothing to do: `pong` for a ping, or `ignored` (another branch or tag, a deleted ref, another event)",
            ),
            delivered(202, "Queued: the project is being indexed again"),
        ],
        own_errors: vec![
            (
                400,
                vec![
                    "webhook_delivery_missing",
                    "webhook_delivery_invalid",
                    "webhook_event_missing",
                    "webhook_payload_invalid",
                    "repo_not_found",
                ],
            ),
            (
                401,
                vec!["webhook_signature_missing", "webhook_signature_invalid"],
            ),
            (403, [SOURCE_REFUSED, &["webhooks_unsupported"]].concat()),
            (404, vec!["project_not_found"]),
            (409, vec!["webhook_replayed", "webhook_source_unsupported"]),
            (422, vec!["webhook_repository_mismatch"]),
            (429, vec!["quota_exceeded"]),
            (500, vec!["index_corrupt"]),
            (503, vec!["storage_unavailable"]),
        ],
        headers,
    }
}

/// A push event's body as GitHub and GitLab send it: the fields read (the rest is ignored).
fn push_payload(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "description": "A push event: GitHub's (`repository`) or GitLab's (`project`)",
        "type": "object",
        "properties": {
            "ref": { "type": "string", "description": "The ref pushed: `refs/heads/main`" },
            "after": { "type": "string", "description": "The commit it moved to (zeros: deleted)" },
            "deleted": { "type": "boolean" },
            "repository": {
                "type": "object",
                "description": "GitHub: `clone_url`, `html_url`, `ssh_url`, `git_url`, `default_branch`"
            },
            "project": {
                "type": "object",
                "description": "GitLab: `git_http_url`, `git_ssh_url`, `web_url`, `default_branch`"
            }
        }
    })
}

/// The schema of the OpenAPI document itself (`GET /openapi.json`).
pub(super) fn document_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "description": "An OpenAPI 3.1 document",
        "type": "object",
        "required": ["openapi", "info", "paths", "components"],
        "properties": {
            "openapi": { "type": "string", "pattern": "^3\\.1\\." },
            "info": {
                "type": "object",
                "required": ["title", "version"],
                "properties": { "title": { "type": "string" }, "version": { "type": "string" } }
            },
            "paths": { "type": "object", "additionalProperties": { "type": "object" } },
            "components": { "type": "object", "additionalProperties": { "type": "object" } }
        }
    })
}
