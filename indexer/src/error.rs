//! The indexer's errors.

use std::path::PathBuf;

use ctxgate_core::assemble::AssembleError;
use ctxgate_core::catalog::{BudgetError, CatalogError};
use ctxgate_core::compose::ComposeError;
use ctxgate_core::error_code::ErrorCode;
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
            e @ A::Unread(_) => IndexerError::Corrupt(e.to_string()),
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
    pub fn code(&self) -> ErrorCode {
        match self {
            IndexerError::RepoMissing(_) => ErrorCode::RepoNotFound,
            IndexerError::RepoNotDir(_) => ErrorCode::RepoNotADirectory,
            IndexerError::RepoEmpty { .. } => ErrorCode::RepoEmpty,
            IndexerError::DataDirInsideRepo { .. } => ErrorCode::DataDirInsideRepo,
            IndexerError::Io { .. } => ErrorCode::IoError,
            IndexerError::Db(_) => ErrorCode::StoreError,
            IndexerError::Corrupt(_) => ErrorCode::StoreCorrupt,
            IndexerError::Pack(p) => p.code(),
            IndexerError::Catalog(c) => c.code(),
            IndexerError::Budget(b) => b.code(),
            IndexerError::Compose(c) => c.code(),
            IndexerError::EmptyQuery => AssembleError::EmptyQuery.code(),
            IndexerError::ErrorOutputMissing => AssembleError::ErrorOutputMissing.code(),
            IndexerError::InvalidStore(_) => ErrorCode::InvalidStore,
            IndexerError::Remote { .. } => ErrorCode::RemoteStoreError,
            IndexerError::Busy { .. } => ErrorCode::ProjectBusy,
            IndexerError::InvalidRequest(_) => ErrorCode::InvalidRequest,
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
pub fn source_code(e: &crate::source::SourceError) -> ErrorCode {
    use crate::source::SourceError as S;
    match e {
        S::TooLarge { .. } => ErrorCode::SourceTooLarge,
        S::TooManyFiles { .. } => ErrorCode::SourceTooManyFiles,
        S::UnsafeEntry { .. } => ErrorCode::SourceUnsafeEntry,
        S::Http { .. } => ErrorCode::SourceHttpError,
        S::Network { .. } => ErrorCode::SourceUnreachable,
        S::Git(_) => ErrorCode::SourceGitError,
        S::NotFound { .. } => ErrorCode::SourceRevNotFound,
        S::BadRev { .. } => ErrorCode::SourceBadRev,
        S::BadUrl { .. } => ErrorCode::SourceBadUrl,
        S::Unsupported { .. } => ErrorCode::SourceUnsupported,
        S::NotAllowed { .. } => ErrorCode::SourceNotAllowed,
        S::BadArchive(_) => ErrorCode::SourceBadArchive,
        S::Missing(_) => ErrorCode::RepoNotFound,
        S::NotADirectory(_) => ErrorCode::RepoNotADirectory,
        S::BadPath(_) => ErrorCode::SourceBadPath,
        S::Io { .. } => ErrorCode::IoError,
        S::AuthRequired { .. } => ErrorCode::SourceAuthRequired,
        S::CredentialRejected { .. } => ErrorCode::SourceCredentialRejected,
        S::CredentialNotFound { .. } => ErrorCode::CredentialNotFound,
        S::CredentialStore { .. } => ErrorCode::CredentialStoreError,
    }
}
