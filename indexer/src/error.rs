//! The indexer's errors.

use std::path::PathBuf;

use ctxgate_core::assemble::AssembleError;
use ctxgate_core::catalog::{BudgetError, CatalogError};
use ctxgate_core::compose::ComposeError;
use ctxgate_core::index::PackError;
use ctxgate_core::index::open::OpenError;

/// Everything that can stop indexing or assembling.
#[derive(Debug, thiserror::Error)]
pub enum IndexerError {
    /// The repository path does not exist.
    #[error("repository `{0}` does not exist")]
    RepoMissing(PathBuf),
    /// The repository path is not a directory.
    #[error("repository `{0}` is not a directory")]
    RepoNotDir(PathBuf),
    /// Nothing indexable was found.
    #[error(
        "repository `{path}` has no text files to index ({seen} files seen, all skipped or ignored)"
    )]
    RepoEmpty {
        /// The repository.
        path: PathBuf,
        /// Files seen by the walk.
        seen: usize,
    },
    /// The data directory would be inside the indexed repository.
    #[error(
        "the data directory `{data}` is inside the repository `{repo}`; ctxgate never writes inside a \
         repository it indexes: set --data-dir or CTXGATE_HOME to a folder outside it"
    )]
    DataDirInsideRepo {
        /// The data directory.
        data: PathBuf,
        /// The repository.
        repo: PathBuf,
    },
    /// A file operation failed.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The metadata database failed.
    #[error("metadata database: {0}")]
    Db(#[from] rusqlite::Error),
    /// Stored metadata is not what this build expects.
    #[error("stored metadata is invalid: {0}")]
    Corrupt(String),
    /// An index pack could not be read.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// The model catalog or a model lookup failed.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The budget cannot be used.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// No prompt fits.
    #[error(transparent)]
    Compose(#[from] ComposeError),
    /// The query is empty.
    #[error("the query is empty")]
    EmptyQuery,
    /// The `repair` profile was asked for without error output.
    #[error("the repair profile needs the error output: give --error-file FILE")]
    ErrorOutputMissing,
    /// A store location or name is malformed.
    #[error("invalid store: {0}")]
    InvalidStore(String),
    /// A remote store (S3, DynamoDB) refused or failed a request.
    #[error("{action}: {message}")]
    Remote {
        /// What was being done.
        action: String,
        /// What the service said.
        message: String,
    },
    /// A request is malformed (names, fields).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A source could not be fetched.
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    /// Chunks or the request could not be embedded.
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    /// Another indexer holds the project.
    #[error("project `{project}` is being indexed by {holder}; try again when it is done")]
    Busy {
        /// The project.
        project: String,
        /// Who holds it.
        holder: String,
    },
}

impl From<OpenError> for IndexerError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Pack(p) => IndexerError::Pack(p),
            e => IndexerError::Corrupt(e.to_string()),
        }
    }
}

impl From<AssembleError> for IndexerError {
    fn from(e: AssembleError) -> Self {
        use AssembleError as A;
        match e {
            A::EmptyQuery => IndexerError::EmptyQuery,
            A::Compose(c) => IndexerError::Compose(c),
            A::Source(s) => IndexerError::Corrupt(s),
            // Local sources read every text; a miss means the store lost it.
            e @ (A::TextsNeeded(_) | A::ListsNeeded(_)) => IndexerError::Corrupt(e.to_string()),
            A::ErrorOutputMissing => IndexerError::ErrorOutputMissing,
            A::Budget(b) => IndexerError::Budget(b),
        }
    }
}

impl IndexerError {
    /// Wraps an I/O error with what was being done to which path.
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| IndexerError::Io {
            action,
            path,
            source,
        }
    }

    /// The machine-readable code the CLI, the Lambda function and the API report.
    pub fn code(&self) -> &'static str {
        match self {
            IndexerError::RepoMissing(_) => "repo_not_found",
            IndexerError::RepoNotDir(_) => "repo_not_a_directory",
            IndexerError::RepoEmpty { .. } => "repo_empty",
            IndexerError::DataDirInsideRepo { .. } => "data_dir_inside_repo",
            IndexerError::Io { .. } => "io_error",
            IndexerError::Db(_) => "store_error",
            IndexerError::Corrupt(_) => "store_corrupt",
            IndexerError::Pack(p) => p.code(),
            IndexerError::Catalog(c) => c.code(),
            IndexerError::Budget(b) => b.code(),
            IndexerError::Compose(c) => c.code(),
            IndexerError::EmptyQuery => AssembleError::EmptyQuery.code(),
            IndexerError::ErrorOutputMissing => AssembleError::ErrorOutputMissing.code(),
            IndexerError::InvalidStore(_) => "invalid_store",
            IndexerError::Remote { .. } => "remote_store_error",
            IndexerError::Busy { .. } => "project_busy",
            IndexerError::InvalidRequest(_) => "invalid_request",
            IndexerError::Source(e) => source_code(e),
            IndexerError::Embed(e) => e.code(),
        }
    }

    /// Whether the error comes from the caller's input (exit code 2 in the CLI) rather than
    /// from the machine or the store.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            IndexerError::RepoMissing(_)
                | IndexerError::RepoNotDir(_)
                | IndexerError::RepoEmpty { .. }
                | IndexerError::DataDirInsideRepo { .. }
                | IndexerError::Catalog(_)
                | IndexerError::Budget(_)
                | IndexerError::Compose(_)
                | IndexerError::EmptyQuery
                | IndexerError::ErrorOutputMissing
                | IndexerError::InvalidStore(_)
                | IndexerError::InvalidRequest(_)
                | IndexerError::Pack(PackError::Version { .. })
        ) || matches!(self, IndexerError::Source(e) if e.is_user_error())
    }
}

/// The code of a source error.
pub fn source_code(e: &crate::source::SourceError) -> &'static str {
    use crate::source::SourceError as S;
    match e {
        S::TooLarge { .. } => "source_too_large",
        S::TooManyFiles { .. } => "source_too_many_files",
        S::UnsafeEntry { .. } => "source_unsafe_entry",
        S::Http { .. } => "source_http_error",
        S::Network { .. } => "source_unreachable",
        S::Git(_) => "source_git_error",
        S::NotFound { .. } => "source_rev_not_found",
        S::BadRev { .. } => "source_bad_rev",
        S::BadUrl { .. } => "source_bad_url",
        S::Unsupported { .. } => "source_unsupported",
        S::NotAllowed { .. } => "source_not_allowed",
        S::BadArchive(_) => "source_bad_archive",
        S::Missing(_) => "repo_not_found",
        S::NotADirectory(_) => "repo_not_a_directory",
        S::BadPath(_) => "source_bad_path",
        S::Io { .. } => "io_error",
        S::AuthRequired { .. } => "source_auth_required",
        S::CredentialRejected { .. } => "source_credential_rejected",
        S::CredentialNotFound { .. } => "credential_not_found",
        S::CredentialStore { .. } => "credential_store_error",
    }
}
