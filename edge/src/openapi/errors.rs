//! The error codes of the API's operations, by status: the tables of codes several operations
//! share, and the codes every operation of a kind answers with ([`Operation::errors`]); each
//! operation of [`super::operations`] lists only what its handler adds.

use super::operation::{Access, Body, Operation};

/// The codes of an unknown model or a budget the core refuses (`budget_too_small`: under the
/// smallest budget that holds code, when assembling).
pub(super) const BUDGET: &[&str] = &[
    "unknown_model",
    "budget_zero",
    "budget_exceeds_window",
    "budget_nothing_usable",
    "budget_too_small",
];
/// The codes of a query the core refuses.
pub(super) const QUERY: &[&str] = &["query_empty", "query_too_large"];
/// The codes of a continuation token that cannot be used.
pub(super) const CONTINUATION: &[&str] = &[
    "continuation_malformed",
    "continuation_invalid",
    "continuation_expired",
    "continuation_mismatch",
];
/// The codes of a conversation the core refuses (`messages`).
pub(super) const CONVERSATION: &[&str] = &[
    "invalid_conversation",
    "conversation_empty",
    "malformed_message",
    "unknown_role",
    "budget_too_small",
];
/// The codes of an embeddings API that failed (dense retrieval, 502).
pub(super) const EMBEDDING: &[&str] = &[
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
pub(super) const SOURCE_INVALID: &[&str] = &[
    "invalid_source",
    "source_bad_archive",
    "source_bad_path",
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
pub(super) const SOURCE_REFUSED: &[&str] = &["source_not_allowed", "source_refused"];
/// The codes of a remote that failed (502).
pub(super) const SOURCE_UPSTREAM: &[&str] = &[
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
