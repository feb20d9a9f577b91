//! The metered calls that count and assemble: token counts, context, search.

use ctxgate_core::error_code::ErrorCode as Code;

use super::{of, ok, op};
use crate::openapi::errors::{BUDGET, CONTINUATION, CONVERSATION, QUERY};
use crate::openapi::operation::{Access, Body, Operation};
use crate::routes::{
    ContextAnswer, ContextRequest, CountAnswer, CountRequest, SearchAnswer, SearchRequest,
};

pub(super) fn operations() -> Vec<Operation> {
    vec![
        Operation {
            body: Body::Json(of::<CountRequest>),
            metered: true,
            answers: ok(of::<CountAnswer>),
            own_errors: vec![
                Code::UnknownModel,
                Code::UnknownEncoding,
                Code::TooManyTexts,
            ],
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
            own_errors: [
                BUDGET,
                QUERY,
                CONTINUATION,
                CONVERSATION,
                &[
                    Code::UnsupportedOption,
                    Code::InvalidSession,
                    Code::ErrorOutputMissing,
                    Code::ErrorOutputUnused,
                    Code::ErrorOutputTooLarge,
                    Code::ModelNotAllowed,
                    // The answer could not be written (routes/context/body.rs).
                    Code::InternalError,
                ],
            ]
            .concat(),
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
            own_errors: [BUDGET, QUERY, CONTINUATION, &[Code::ModelNotAllowed]].concat(),
            ..op(
                "post",
                "/v1/search",
                "searchCode",
                "One page of ranked pieces within page_tokens, with a continuation token",
                Access::Key,
            )
        },
    ]
}
