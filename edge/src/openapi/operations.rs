//! The API as a table: every operation with the types it takes and answers, and the error codes
//! it can answer with, status by status. [`super::document`] turns it into the document.
//!
//! Codes common to a kind of operation (a caller's key, the admin secret, a JSON body, a
//! metered call, an index read) are added by [`Operation::errors`]; each entry lists only what
//! its handler adds.

use schemars::{JsonSchema, Schema, SchemaGenerator};

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

/// How a type's schema is written into the document: a `$ref` to `components/schemas`.
pub(super) type SchemaOf = fn(&mut SchemaGenerator) -> Schema;

/// The schema of `T` ([`SchemaOf`]).
fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// Who may call an operation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// Anyone.
    Public,
    /// An organisation's API key.
    Key,
    /// The admin secret.
    Admin,
}

/// What an operation's request carries.
pub(super) enum Body {
    /// Nothing.
    None,
    /// JSON of this type.
    Json(SchemaOf),
    /// Raw bytes (an index object).
    Bytes,
    /// JSON of this type, authenticated by a signature over its raw bytes (a forge's webhook
    /// delivery): read as bytes, so the JSON body's own error codes do not apply.
    Signed(SchemaOf),
}

/// A successful answer.
pub(super) struct Answer {
    /// Its status.
    pub status: u16,
    /// What it means.
    pub description: &'static str,
    /// Its JSON body's type; `None` for an empty body.
    pub body: Option<SchemaOf>,
}

/// One operation of the API.
pub(super) struct Operation {
    /// `get`, `post`, ...
    pub method: &'static str,
    /// The path, parameters in braces.
    pub path: &'static str,
    /// The `operationId`.
    pub id: &'static str,
    /// One line.
    pub summary: &'static str,
    /// More, when there is more to say.
    pub description: Option<&'static str>,
    /// Who may call it.
    pub access: Access,
    /// What the request carries.
    pub body: Body,
    /// Whether it reserves quota (so a refusal is 429 `quota_exceeded`).
    pub metered: bool,
    /// Whether it reads a project's index (so the index's own failures can answer).
    pub reads_index: bool,
    /// Its successful answers.
    pub answers: Vec<Answer>,
    /// The error codes its handler adds, by status.
    pub own_errors: Vec<(u16, Vec<&'static str>)>,
    /// Request headers it reads (name, what it is), all optional: a missing one has its code.
    pub headers: Vec<(&'static str, &'static str)>,
}

/// The codes of an unknown model or a budget the core refuses.
const BUDGET: &[&str] = &[
    "unknown_model",
    "budget_missing",
    "budget_zero",
    "budget_exceeds_window",
    "budget_nothing_usable",
];
/// The codes of a query the core refuses.
const QUERY: &[&str] = &["query_empty", "query_too_large"];
/// The codes of a continuation token that cannot be used.
const CONTINUATION: &[&str] = &[
    "continuation_malformed",
    "continuation_invalid",
    "continuation_expired",
    "continuation_mismatch",
];
/// The codes of a conversation the core refuses (`messages`).
const CONVERSATION: &[&str] = &[
    "invalid_conversation",
    "conversation_empty",
    "malformed_message",
    "unknown_role",
    "budget_too_small",
];
/// The codes of an embeddings API that failed (dense retrieval, 502).
const EMBEDDING: &[&str] = &[
    "embed_bad_answer",
    "embed_cache_error",
    "embed_failed",
    "embed_http_error",
    "embed_model_unavailable",
    "embed_rate_limited",
    "embed_unauthorized",
    "embed_unreachable",
    "embed_url_missing",
];
/// The codes of a source the caller got wrong (400).
const SOURCE_INVALID: &[&str] = &[
    "invalid_source",
    "source_bad_archive",
    "source_bad_rev",
    "source_bad_url",
    "source_http_error",
    "source_rev_not_found",
    "source_too_large",
    "source_too_many_files",
    "source_unsafe_entry",
    "source_unsupported",
    "repo_not_found",
    "repo_not_a_directory",
    "source_auth_required",
    "source_credential_rejected",
    "credential_not_found",
];
/// The codes of a source this server will not fetch (403).
const SOURCE_REFUSED: &[&str] = &["source_not_allowed", "source_refused"];
/// The codes of a remote that failed (502).
const SOURCE_UPSTREAM: &[&str] = &[
    "source_git_error",
    "source_http_error",
    "source_unreachable",
];

impl Operation {
    /// Every error code the operation can answer with, by status: its own and those of its
    /// kind.
    pub(super) fn errors(&self) -> std::collections::BTreeMap<u16, Vec<&'static str>> {
        let mut all: Vec<(u16, &[&'static str])> = vec![(413, &["body_too_large"])];
        match self.access {
            Access::Public => {}
            Access::Key => all.extend([
                (401, &["missing_api_key", "invalid_api_key"][..]),
                (500, &["index_corrupt"][..]),
                (503, &["storage_unavailable"][..]),
            ]),
            Access::Admin => all.extend([
                (401, &["invalid_admin_secret"][..]),
                (403, &["admin_disabled"][..]),
                (500, &["index_corrupt"][..]),
                (503, &["storage_unavailable"][..]),
            ]),
        }
        if let Body::Json(_) = self.body {
            all.extend([
                (
                    400,
                    &["malformed_json", "invalid_request", "invalid_body"][..],
                ),
                (415, &["unsupported_media_type"][..]),
            ]);
        }
        if self.metered {
            all.push((429, &["quota_exceeded"]));
        }
        if self.reads_index {
            all.extend([
                (404, &["project_not_found", "not_found"][..]),
                (409, &["project_not_indexed", "index_outdated"][..]),
                (502, EMBEDDING),
            ]);
        }
        let mut by_status = std::collections::BTreeMap::<u16, Vec<&'static str>>::new();
        let own = self.own_errors.iter().map(|(s, c)| (*s, c.as_slice()));
        for (status, codes) in all.into_iter().chain(own) {
            let list = by_status.entry(status).or_default();
            list.extend(codes);
            list.sort_unstable();
            list.dedup();
        }
        by_status
    }
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
                 `source_refused`.",
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
            (500, vec!["index_corrupt"]),
            (503, vec!["storage_unavailable"]),
        ],
        headers,
    }
}

/// What a path parameter is.
pub(super) fn parameter(name: &str) -> &'static str {
    match name {
        "id" => "The project's id or name.",
        "project" => "The project's id, as `POST /v1/projects/{id}/webhook` answered.",
        "org" => "The organisation's name.",
        "name" => "The project's name within the organisation.",
        "key" => {
            "The object's key within the organisation's store. It may hold `/` separators, \
             sent as they are: the route takes the rest of the path (OpenAPI cannot express \
             such a parameter, so generated clients must not percent-encode the slashes)."
        }
        _ => "",
    }
}

const CREATE_PROJECT: &str = "Fetches and indexes the source, then answers (synchronous: \
seconds for a small repository). `ctxgate serve` fetches git (https) and tarball (https) URLs on \
public addresses only; `--allow-private-sources` lets it reach private, loopback and link-local \
addresses and plain http, and `--allow-local-paths` lets it read folders (`local`, `file://` git \
URLs) on its own machine. A private git repository is fetched over http(s) with the credential \
its source names (`\"credential\": NAME`, stored by the operator with `ctxgate credential set NAME \
--org ORG`, usable by that org only; the token is never shown): 400 `source_auth_required` when \
the server asks for credentials and the source names none, `source_credential_rejected` when it \
refuses the one named, `credential_not_found` when the org has no credential by that name, \
`source_bad_url` for a URL that carries a password. A refused source answers 403 `source_not_allowed` (policy) or \
`source_refused` (local paths); a wrong source 400 (`source_bad_archive`, `source_rev_not_found`, \
`source_too_large`, ...); an unreachable or failing remote 502 (`source_unreachable`, \
`source_git_error`, `source_http_error`). The Worker does not index. Deployed over S3 and \
DynamoDB, it registers git and tarball sources for the batch indexer (the Lambda function's \
scheduled pass fetches them; by default public https hosts only) and answers 202 with \
`current_version` null; registering a name again replaces a registration that was never \
indexed, and a name already indexed is 409 `conflict`. Folders and `file://` URLs are 403 \
`source_refused` there. Deployed over R2 and Durable Objects, it answers 403 `source_refused` \
and serves what an indexer publishes through the admin endpoints.";

const METRICS: &str = "Counters and latency histograms since this process started (`ctxgate \
serve`) or, in the Worker, since this isolate started: Cloudflare runs many isolates, each \
counting its own requests; the whole deployment's figures are in the Workers Analytics Engine \
dataset when one is bound. Series: `ctxgate_http_requests_total` and \
`ctxgate_http_request_duration_seconds` by method, route template and status, \
`ctxgate_tokens_delivered_total` by org and route, `ctxgate_quota_refusals_total` by org and \
limit, `ctxgate_index_cache_lookups_total` by cache and result, \
`ctxgate_index_job_duration_seconds` by trigger and outcome (docs/observability.md).";

const CREATE_WEBHOOK: &str = "A new random secret for the project's push webhook, \
replacing any previous one (whose deliveries are refused from then on). The answer is the only \
place the secret appears: it is stored server-side and never shown again. Set it on the forge \
with the answered path below this server's public URL (GitHub: content type application/json, \
the `push` event; GitLab: secret token, push events). Only projects indexed from a git \
repository registered through this server take webhooks (409 `webhook_source_unsupported`); a \
host that cannot queue indexing answers 403 `webhooks_unsupported`. docs/webhooks.md.";

const DELIVERY: &str = "Authenticated by the project's webhook secret, not an API key: a \
missing signature is 401 `webhook_signature_missing`, a wrong one (or a project without a \
webhook: the two are not told apart) 401 `webhook_signature_invalid`. A delivery whose id or \
body was received before is 409 `webhook_replayed`. A push to another repository than the \
project's is 422 `webhook_repository_mismatch`; a push of another branch or tag than the one \
the project follows (its `rev`, or the default branch), a deleted ref, a ping or another event \
is 200 with nothing done; a push of the followed ref is 202 with the re-index queued (natively \
a job on this server; over AWS an asynchronous invocation of the indexer function). Refused \
deliveries change nothing.";

const COMPACT: &str = "Keeps system and pinned messages and the last `keep_rounds` rounds \
verbatim; older messages become extractive summaries (agent turns keep files, commands, test \
counts, errors, commits, decisions), the oldest one aggregate; only then are the oldest dropped. \
Secrets are never carried into summaries. Metered: reserves `budget` tokens, settles \
`tokens_total`. `budget_too_small` (400) gives `details.needed`.";

const GC: &str = "Garbage collection of what `ctxgate project publish` uploaded (a Worker's R2; \
the native host's data directory): keeps each project's current version, the `keep_last` before \
it, versions younger than `keep_younger_than_seconds`, and anything superseded or written less \
than `grace_seconds` ago; deletes every other version's manifest and pack and the segments no \
kept version names. A host reading the indexer's S3 answers 501 `not_supported` (collect it with \
`ctxgate gc --store`). `ctxgate gc --to URL --org ORG` calls this.";

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
