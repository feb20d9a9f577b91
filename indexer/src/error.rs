//! The indexer's errors.

use std::path::PathBuf;

use ctxgate_core::catalog::{BudgetError, CatalogError};
use ctxgate_core::compose::ComposeError;
use ctxgate_core::index::PackError;

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
}

impl From<ctxgate_core::assemble::AssembleError> for IndexerError {
    fn from(e: ctxgate_core::assemble::AssembleError) -> Self {
        use ctxgate_core::assemble::AssembleError as A;
        match e {
            A::EmptyQuery => IndexerError::EmptyQuery,
            A::Compose(c) => IndexerError::Compose(c),
            A::Source(s) => IndexerError::Corrupt(s),
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
                | IndexerError::Pack(PackError::Version { .. })
        )
    }
}
