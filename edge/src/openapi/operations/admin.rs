//! The operations behind the admin secret: organisations, their keys, limits and dense
//! retrieval; publishing an index built elsewhere, and collecting its garbage.

use ctxgate_core::error_code::ErrorCode as Code;
use ctxgate_core::host_wire::{GcAnswer, GcRequest, PublishedProject};
use ctxgate_core::quota::Limits;

use super::{of, ok, op};
use crate::backend::{OrgRecord, ProjectInfo};
use crate::openapi::operation::{Access, Answer, Body, Operation};
use crate::openapi::prose::{GC, HAS_OBJECT, PUT_OBJECT, SET_DENSE};
use crate::routes::admin::{CreateOrg, CreatedKey, SetDense};

/// An organisation: create it, give it a key, set its limits and dense retrieval.
pub(super) fn org_operations() -> Vec<Operation> {
    vec![
        Operation {
            body: Body::Json(of::<CreateOrg>),
            answers: vec![Answer {
                status: 201,
                description: "Created",
                body: Some(of::<OrgRecord>),
            }],
            own_errors: vec![Code::InvalidName, Code::Conflict],
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
            own_errors: vec![Code::OrgNotFound, Code::NotFound],
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
            own_errors: vec![Code::OrgNotFound, Code::NotFound],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/limits",
                "setLimits",
                "Replace an organisation's limits (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(SET_DENSE),
            body: Body::Json(of::<SetDense>),
            answers: ok(of::<OrgRecord>),
            own_errors: vec![Code::OrgNotFound, Code::NotFound],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/dense",
                "setDense",
                "Turn dense retrieval on or off for an organisation (admin secret)",
                Access::Admin,
            )
        },
    ]
}

/// An index an indexer built elsewhere: its project, its objects, and collecting old ones.
pub(super) fn object_operations() -> Vec<Operation> {
    let stored = || {
        vec![Answer {
            status: 204,
            description: "Stored",
            body: None,
        }]
    };
    vec![
        Operation {
            body: Body::Json(of::<PublishedProject>),
            answers: ok(of::<ProjectInfo>),
            own_errors: vec![Code::InvalidName, Code::OrgNotFound],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/projects/{name}",
                "putProject",
                "Register a project whose index an indexer published (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(PUT_OBJECT),
            body: Body::Bytes,
            answers: stored(),
            own_errors: vec![Code::InvalidObjectKey, Code::InvalidBody, Code::OrgNotFound],
            ..op(
                "put",
                "/v1/admin/orgs/{org}/objects/{key}",
                "putObject",
                "Store one object of an index an indexer built (admin secret)",
                Access::Admin,
            )
        },
        Operation {
            description: Some(HAS_OBJECT),
            answers: stored(),
            own_errors: vec![Code::InvalidObjectKey, Code::ObjectNotFound],
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
            own_errors: vec![Code::OrgNotFound, Code::NotSupported],
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
