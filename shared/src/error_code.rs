//! Every machine-readable error code ctxgate reports, in one table: the code, the HTTP
//! statuses the API answers it with, whether the caller can fix it, and what it means.
//!
//! The API's `ApiError` takes an [`ErrorCode`], never a string, and its status comes from
//! here; every error type's `code()` returns one. The OpenAPI document lists the codes by the
//! statuses written here, and docs/api.md's error table is checked against [`ErrorCode::ALL`]
//! (tests in `ctxgate-edge`). A code with no status is reported by the command line and the
//! batch indexer only, never by the HTTP API.

/// Writes [`ErrorCode`] and its facts from one table.
macro_rules! registry {
    ($( $variant:ident = $code:literal, [$($status:literal),*], $fix:literal, $meaning:literal; )*) => {
        /// A machine-readable error code (`error.code` in the API, the CLI's JSON error).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $( #[doc = $meaning] $variant, )*
        }

        impl ErrorCode {
            /// Every code, in the table's order.
            pub const ALL: &'static [ErrorCode] = &[$( ErrorCode::$variant, )*];

            /// The code as the API and the CLI spell it.
            pub const fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $code, )* }
            }

            /// The HTTP statuses the API answers this code with, the usual one first; empty for
            /// a code the API never answers with.
            pub const fn statuses(self) -> &'static [u16] {
                match self { $( ErrorCode::$variant => &[$($status),*], )* }
            }

            /// Whether the caller can fix it (their input, key, limits or choice of source),
            /// rather than the server, its store or a remote.
            pub const fn caller_can_fix(self) -> bool {
                match self { $( ErrorCode::$variant => $fix, )* }
            }

            /// One line on what it means.
            pub const fn meaning(self) -> &'static str {
                match self { $( ErrorCode::$variant => $meaning, )* }
            }
        }
    };
}

registry! {
    // The request itself.
    MalformedJson = "malformed_json", [400], true, "The body (or a conversation file) is not valid JSON.";
    InvalidRequest = "invalid_request", [400], true, "A field is missing, unknown or of the wrong type.";
    InvalidBody = "invalid_body", [400], true, "The body could not be read.";
    UnsupportedMediaType = "unsupported_media_type", [415], true, "A JSON body without `Content-Type: application/json`.";
    BodyTooLarge = "body_too_large", [413], true, "The body is over this host's limit.";
    RouteNotFound = "route_not_found", [404], true, "No such endpoint; `GET /openapi.json` lists them.";
    InvalidName = "invalid_name", [400], true, "An organisation or project name that is not allowed.";
    InvalidObjectKey = "invalid_object_key", [400], true, "An index object's key that is not a store key.";
    UnsupportedOption = "unsupported_option", [400], true, "An unknown `compression` or `profile`.";
    InvalidSession = "invalid_session", [400], true, "A `session` that is empty or too long.";
    TooManyTexts = "too_many_texts", [400], true, "More texts to count than one request may carry.";
    // Who is calling.
    MissingApiKey = "missing_api_key", [401], true, "No `Authorization: Bearer` key.";
    InvalidApiKey = "invalid_api_key", [401], true, "A key this server does not know.";
    InvalidAdminSecret = "invalid_admin_secret", [401], true, "Not the admin secret.";
    AdminDisabled = "admin_disabled", [403], true, "The admin endpoints are off: the server has no admin secret.";
    ModelNotAllowed = "model_not_allowed", [403], true, "The organisation may not use this model.";
    QuotaExceeded = "quota_exceeded", [429], true, "A limit of the organisation refuses the request; `Retry-After` says when to retry.";
    // Models, budgets, queries.
    UnknownModel = "unknown_model", [400], true, "A model the catalog does not know.";
    UnknownEncoding = "unknown_encoding", [400], true, "A tokenizer encoding that does not exist.";
    InvalidCatalog = "invalid_catalog", [400], true, "A model catalog file that cannot be used.";
    BudgetZero = "budget_zero", [400], true, "A budget of zero tokens.";
    BudgetExceedsWindow = "budget_exceeds_window", [400], true, "A budget over the model's usable window.";
    BudgetNothingUsable = "budget_nothing_usable", [400], true, "The model's window leaves nothing for context.";
    BudgetTooSmall = "budget_too_small", [400], true, "A budget under the smallest useful one (`details.needed`).";
    QueryEmpty = "query_empty", [400], true, "An empty query.";
    QueryTooLarge = "query_too_large", [400], true, "A query that leaves no room for context.";
    ErrorOutputMissing = "error_output_missing", [400], true, "The `repair` profile without error output.";
    ErrorOutputUnused = "error_output_unused", [400], true, "Error output given to a profile that does not read it.";
    ErrorOutputTooLarge = "error_output_too_large", [400], true, "Error output over its limit.";
    // Conversations.
    InvalidUtf8 = "invalid_utf8", [400], true, "A conversation (or, on the command line, a file to count) that is not UTF-8.";
    InvalidConversation = "invalid_conversation", [400], true, "A conversation that is not a list of messages.";
    ConversationEmpty = "conversation_empty", [400], true, "A conversation with no message.";
    MalformedMessage = "malformed_message", [400], true, "A message without a role or content (`details.message_index`).";
    UnknownRole = "unknown_role", [400], true, "A message with an unknown role (`details.message_index`).";
    // Continuation tokens.
    ContinuationMalformed = "continuation_malformed", [400], true, "A continuation token that cannot be decoded.";
    ContinuationInvalid = "continuation_invalid", [400], true, "A continuation token whose signature is wrong (tampered).";
    ContinuationExpired = "continuation_expired", [400], true, "A continuation token past its lifetime.";
    ContinuationMismatch = "continuation_mismatch", [400], true, "A continuation token of another org, project, version or question.";
    // Records.
    NotFound = "not_found", [404], true, "A named record does not exist.";
    Conflict = "conflict", [409], true, "The record already exists.";
    OrgNotFound = "org_not_found", [404], true, "No such organisation.";
    ProjectNotFound = "project_not_found", [404], true, "No such project in the caller's organisation.";
    ProjectNotIndexed = "project_not_indexed", [409], true, "The project has no published version yet.";
    ObjectNotFound = "object_not_found", [404], true, "No index object under that key.";
    // Sources.
    InvalidSource = "invalid_source", [400], true, "A source the indexer cannot index (an empty folder, a bad name).";
    SourceRefused = "source_refused", [403], true, "This host does not index that kind of source.";
    SourceNotAllowed = "source_not_allowed", [403], true, "This server's policy forbids the source (a private address, plain http, a folder outside its roots).";
    SourceBadArchive = "source_bad_archive", [400], true, "A tarball that cannot be read.";
    SourceBadPath = "source_bad_path", [400], true, "A path with a NUL byte, or too long.";
    SourceBadRev = "source_bad_rev", [400], true, "A git revision that is not a valid name.";
    SourceBadUrl = "source_bad_url", [400], true, "A source URL that cannot be used (or carries a password).";
    SourceHttpError = "source_http_error", [400, 502], true, "The source's server answered an error: 400 when it refused (4xx), 502 when it failed.";
    SourceRevNotFound = "source_rev_not_found", [400], true, "The git revision does not exist.";
    SourceTooLarge = "source_too_large", [400], true, "The source is over the size limit.";
    SourceTooManyFiles = "source_too_many_files", [400], true, "The source has more files than allowed.";
    SourceUnsafeEntry = "source_unsafe_entry", [400], true, "An archive entry that would escape its folder.";
    SourceUnsupported = "source_unsupported", [400], true, "A source kind or URL scheme not supported.";
    SourceAuthRequired = "source_auth_required", [400], true, "The repository asks for credentials and the source names none.";
    SourceCredentialRejected = "source_credential_rejected", [400], true, "The repository refused the named credential.";
    CredentialNotFound = "credential_not_found", [400], true, "The organisation has no credential by that name.";
    RepoNotFound = "repo_not_found", [400], true, "The repository does not exist.";
    RepoNotADirectory = "repo_not_a_directory", [400], true, "The repository path is not a folder.";
    SourceGitError = "source_git_error", [502], false, "The git remote failed.";
    SourceUnreachable = "source_unreachable", [502], false, "The source's host could not be reached.";
    // Stored data and the host.
    IndexOutdated = "index_outdated", [409], true, "The version was written in an older index format: re-index or publish it again.";
    IndexCorrupt = "index_corrupt", [500], false, "A stored index object is missing, truncated or fails its checksum.";
    StorageUnavailable = "storage_unavailable", [503], false, "The store failed; retry.";
    NotSupported = "not_supported", [501], false, "This host's store cannot do what was asked.";
    InternalError = "internal_error", [500], false, "The answer could not be written.";
    ServerMisconfigured = "server_misconfigured", [500], false, "The Worker cannot start: a binding or variable is missing or wrong.";
    // Dense retrieval's embeddings provider.
    EmbedBadAnswer = "embed_bad_answer", [502], false, "The embeddings API answered something unusable.";
    EmbedCacheError = "embed_cache_error", [502], false, "The embeddings cache failed.";
    EmbedFailed = "embed_failed", [502], false, "The embedding model failed.";
    EmbedHttpError = "embed_http_error", [502], false, "The embeddings API answered an error.";
    EmbedModelUnavailable = "embed_model_unavailable", [502], false, "The embedding model cannot be loaded.";
    EmbedRateLimited = "embed_rate_limited", [502], false, "The embeddings API is rate limiting.";
    EmbedUnauthorized = "embed_unauthorized", [502], false, "The embeddings API refused the server's key.";
    EmbedUnreachable = "embed_unreachable", [502], false, "The embeddings API could not be reached.";
    EmbedUrlMissing = "embed_url_missing", [502], false, "Dense retrieval through an API without its URL.";
    // Webhooks.
    WebhooksUnsupported = "webhooks_unsupported", [403], true, "This host cannot queue indexing, so takes no webhooks.";
    WebhookSourceUnsupported = "webhook_source_unsupported", [409], true, "The project was not indexed from a git repository registered here.";
    WebhookSignatureMissing = "webhook_signature_missing", [401], true, "A delivery without its signature or token.";
    WebhookSignatureInvalid = "webhook_signature_invalid", [401], true, "A wrong signature, or a project without a webhook.";
    WebhookDeliveryMissing = "webhook_delivery_missing", [400], true, "A delivery without its id header.";
    WebhookDeliveryInvalid = "webhook_delivery_invalid", [400], true, "A delivery id that cannot be used.";
    WebhookEventMissing = "webhook_event_missing", [400], true, "A delivery without its event header.";
    WebhookPayloadInvalid = "webhook_payload_invalid", [400], true, "A push event that is not the JSON a forge sends.";
    WebhookReplayed = "webhook_replayed", [409], true, "A delivery whose id or body was received before.";
    WebhookRepositoryMismatch = "webhook_repository_mismatch", [422], true, "A push to another repository than the project's.";
    // The command line and the batch indexer only.
    RepoEmpty = "repo_empty", [], true, "The repository has no text file to index.";
    DataDirInsideRepo = "data_dir_inside_repo", [], true, "The data directory is inside the repository indexed.";
    InvalidStore = "invalid_store", [], true, "A store location or name that is malformed.";
    ProjectBusy = "project_busy", [], false, "Another indexer holds the project.";
    IndexVersionMismatch = "index_version_mismatch", [], true, "An index pack written in another format version.";
    IoError = "io_error", [], false, "A file operation failed.";
    StoreError = "store_error", [], false, "The metadata database failed.";
    StoreCorrupt = "store_corrupt", [], false, "Stored metadata is not what this build expects.";
    RemoteStoreError = "remote_store_error", [], false, "S3 or DynamoDB refused or failed a request.";
    CredentialStoreError = "credential_store_error", [], false, "The credential store failed.";
    // The command line only: its flags, files and server start.
    QueryMissing = "query_missing", [], true, "`assemble` without `--query` or `--query-file`.";
    FileUnreadable = "file_unreadable", [], true, "A file named on the command line cannot be read.";
    QueryFileUnreadable = "query_file_unreadable", [], true, "The `--query-file` cannot be read or is not UTF-8.";
    ErrorFileUnreadable = "error_file_unreadable", [], true, "The error output cannot be read (or both it and the query come from stdin).";
    OutputUnwritable = "output_unwritable", [], true, "The `-o` file cannot be written.";
    InvalidContextShare = "invalid_context_share", [], true, "`--context-share` outside (0, 1].";
    InvalidGlob = "invalid_glob", [], true, "An `--include` or `--exclude` pattern that is not a glob.";
    ConfigUnreadable = "config_unreadable", [], true, "The project config file cannot be read.";
    InvalidConfig = "invalid_config", [], true, "The project config file is not valid.";
    AmbiguousConfig = "ambiguous_config", [], true, "A folder with two project config files.";
    CatalogUnreadable = "catalog_unreadable", [], true, "The model catalog file cannot be read.";
    UnknownProvider = "unknown_provider", [], true, "`models --provider` names a provider with no model.";
    NoDataDir = "no_data_dir", [], true, "No data directory given and no home folder to put one in.";
    DenseNeedsLocalStore = "dense_needs_local_store", [], true, "`--dense` with `--store`: vectors are kept locally.";
    InvalidCredential = "invalid_credential", [], true, "A credential that cannot be stored as given.";
    AdminSecretMissing = "admin_secret_missing", [], true, "A command for the Worker's admin routes without `CTXGATE_ADMIN_SECRET`.";
    WeakSecret = "weak_secret", [], true, "A token secret shorter than 16 characters.";
    InvalidLocalRoot = "invalid_local_root", [], true, "A `--local-root` that is not an existing folder.";
    WatchWithoutRoots = "watch_without_roots", [], true, "`serve --watch` without any `--local-root`.";
    FlagRemoved = "flag_removed", [], true, "A flag that no longer exists; the message names its successor.";
    BindFailed = "bind_failed", [], true, "The address to listen on cannot be bound.";
    ServeFailed = "serve_failed", [], false, "The server stopped with an error.";
    UnknownArgument = "unknown_argument", [], true, "A command-line flag that does not exist.";
    UnknownCommand = "unknown_command", [], true, "A subcommand that does not exist.";
    InvalidValue = "invalid_value", [], true, "A flag's value that is not allowed.";
    MissingArgument = "missing_argument", [], true, "A required flag or subcommand is missing.";
    ArgumentConflict = "argument_conflict", [], true, "Two flags that cannot be used together.";
    InvalidUsage = "invalid_usage", [], true, "A command line that cannot be parsed.";
}

impl ErrorCode {
    /// The usual HTTP status of this code; `None` for a code the API never answers with.
    pub const fn status(self) -> Option<u16> {
        match self.statuses() {
            [first, ..] => Some(*first),
            [] => None,
        }
    }

    /// Whether the caller can fix this code when answered with `status`: a code answered
    /// with both a 4xx and a 5xx (`source_http_error`) is the caller's at its 4xx only.
    pub const fn caller_can_fix_at(self, status: u16) -> bool {
        self.caller_can_fix() && status < 500
    }

    /// The code spelled `code`, if there is one.
    pub fn parse(code: &str) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|c| c.as_str() == code)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with the code as spelled (`code == "quota_exceeded"`), as tests and JSON do.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for &c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "{c} twice");
            assert!(
                c.as_str()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{c}"
            );
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
            assert!(c.meaning().ends_with('.'), "{c}: {}", c.meaning());
        }
    }

    #[test]
    fn statuses_are_errors_and_server_faults_are_not_the_callers() {
        for &c in ErrorCode::ALL {
            for &s in c.statuses() {
                assert!((400..600).contains(&s), "{c}: {s}");
            }
            // A 4xx is the caller's to fix, a 5xx is not: the CLI's exit codes follow.
            for &s in c.statuses() {
                assert_eq!(c.caller_can_fix_at(s), s < 500, "{c} at {s}");
            }
        }
    }
}
