//! The error codes of the API's operations, by status: the tables of codes several operations
//! share, and the codes every operation of a kind answers with ([`Operation::errors`]); each
//! operation of [`super::operations`] lists only what its handler adds.

use std::collections::BTreeMap;

use ctxgate_core::error_code::ErrorCode as Code;

use super::operation::{Access, Body, Operation};

/// The codes of an unknown model or a budget the core refuses (`budget_too_small`: under the
/// smallest budget that holds code, when assembling).
pub(super) const BUDGET: &[Code] = &[
    Code::UnknownModel,
    Code::BudgetZero,
    Code::BudgetExceedsWindow,
    Code::BudgetNothingUsable,
    Code::BudgetTooSmall,
];
/// The codes of a query the core refuses.
pub(super) const QUERY: &[Code] = &[Code::QueryEmpty, Code::QueryTooLarge];
/// The codes of a continuation token that cannot be used.
pub(super) const CONTINUATION: &[Code] = &[
    Code::ContinuationMalformed,
    Code::ContinuationInvalid,
    Code::ContinuationExpired,
    Code::ContinuationMismatch,
];
/// The codes of a conversation the core refuses (`messages`).
pub(super) const CONVERSATION: &[Code] = &[
    Code::InvalidConversation,
    Code::ConversationEmpty,
    Code::MalformedMessage,
    Code::UnknownRole,
    Code::BudgetTooSmall,
];
/// The codes of an embeddings API that failed (dense retrieval, 502).
pub(super) const EMBEDDING: &[Code] = &[
    Code::EmbedBadAnswer,
    Code::EmbedCacheError,
    Code::EmbedFailed,
    Code::EmbedHttpError,
    Code::EmbedModelUnavailable,
    Code::EmbedRateLimited,
    Code::EmbedUnauthorized,
    Code::EmbedUnreachable,
    Code::EmbedUrlMissing,
];
/// The codes of a source that cannot be indexed: the caller's mistakes (400), and a remote
/// that failed (502); `source_http_error` is either, by what the remote answered.
pub(super) const SOURCE: &[Code] = &[
    Code::InvalidSource,
    Code::SourceBadArchive,
    Code::SourceBadPath,
    Code::SourceBadRev,
    Code::SourceBadUrl,
    Code::SourceHttpError,
    Code::SourceRevNotFound,
    Code::SourceTooLarge,
    Code::SourceTooManyFiles,
    Code::SourceUnsafeEntry,
    Code::SourceUnsupported,
    Code::RepoNotFound,
    Code::RepoNotADirectory,
    Code::SourceAuthRequired,
    Code::SourceCredentialRejected,
    Code::CredentialNotFound,
    Code::SourceGitError,
    Code::SourceUnreachable,
];
/// The codes of a source this server will not fetch (403).
pub(super) const SOURCE_REFUSED: &[Code] = &[Code::SourceNotAllowed, Code::SourceRefused];

impl Operation {
    /// Every error code the operation can answer with, by status (the registry's statuses of
    /// each code): its own and those of its kind.
    pub(super) fn errors(&self) -> BTreeMap<u16, Vec<&'static str>> {
        let mut all: Vec<&[Code]> = vec![&[Code::BodyTooLarge]];
        match self.access {
            Access::Public => {}
            Access::Key => all.push(&[
                Code::MissingApiKey,
                Code::InvalidApiKey,
                Code::IndexCorrupt,
                Code::StorageUnavailable,
            ]),
            Access::Admin => all.push(&[
                Code::InvalidAdminSecret,
                Code::AdminDisabled,
                Code::IndexCorrupt,
                Code::StorageUnavailable,
            ]),
        }
        if let Body::Json(_) = self.body {
            all.push(&[
                Code::MalformedJson,
                Code::InvalidRequest,
                Code::InvalidBody,
                Code::UnsupportedMediaType,
            ]);
        }
        if self.metered {
            all.push(&[Code::QuotaExceeded]);
        }
        if self.reads_index {
            all.extend([
                &[
                    Code::ProjectNotFound,
                    Code::NotFound,
                    Code::ProjectNotIndexed,
                    Code::IndexOutdated,
                ][..],
                EMBEDDING,
            ]);
        }
        all.push(&self.own_errors);
        let mut by_status = BTreeMap::<u16, Vec<&'static str>>::new();
        for &code in all.into_iter().flatten() {
            for &status in code.statuses() {
                by_status.entry(status).or_default().push(code.as_str());
            }
        }
        for list in by_status.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        by_status
    }
}
