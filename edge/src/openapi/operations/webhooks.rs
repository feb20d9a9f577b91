//! A forge's push deliveries: no API key (the signature authenticates them), the push event's
//! JSON read as bytes.

use ctxgate_core::error_code::ErrorCode as Code;
use schemars::{Schema, SchemaGenerator};

use super::of;
use crate::openapi::errors::SOURCE_REFUSED;
use crate::openapi::operation::{Access, Answer, Body, Operation};
use crate::openapi::prose::DELIVERY;
use crate::routes::webhooks::Delivered;

pub(super) fn operations() -> Vec<Operation> {
    vec![
        delivery(
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
        delivery(
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
    ]
}

/// A forge's webhook delivery to `path`.
fn delivery(
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
        own_errors: [
            SOURCE_REFUSED,
            &[
                Code::WebhookDeliveryMissing,
                Code::WebhookDeliveryInvalid,
                Code::WebhookEventMissing,
                Code::WebhookPayloadInvalid,
                Code::RepoNotFound,
                Code::WebhookSignatureMissing,
                Code::WebhookSignatureInvalid,
                Code::WebhooksUnsupported,
                Code::ProjectNotFound,
                Code::WebhookReplayed,
                Code::WebhookSourceUnsupported,
                Code::WebhookRepositoryMismatch,
                Code::QuotaExceeded,
                Code::IndexCorrupt,
                Code::StorageUnavailable,
            ],
        ]
        .concat(),
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
