//! The rest of what a caller's key reaches: usage, compaction, MCP; and the metrics behind the
//! admin secret.

use ctxgate_core::error_code::ErrorCode as Code;

use super::{of, ok, op};
use crate::mcp::{RpcAnswer, RpcRequest};
use crate::metrics::MetricsSnapshot;
use crate::openapi::errors::{BUDGET, CONVERSATION, QUERY};
use crate::openapi::operation::{Access, Answer, Body, Operation};
use crate::openapi::prose::{COMPACT, MCP, METRICS};
use crate::routes::history::{CompactAnswer, CompactRequest};
use crate::routes::usage::Usage;

pub(super) fn operations() -> Vec<Operation> {
    vec![
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
            own_errors: [BUDGET, CONVERSATION, QUERY, &[Code::ModelNotAllowed]].concat(),
            ..op(
                "post",
                "/v1/history/compact",
                "compactHistory",
                "Compact a conversation within a budget",
                Access::Key,
            )
        },
        Operation {
            description: Some(MCP),
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
    ]
}
