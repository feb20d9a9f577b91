//! ctxgate's batch side: it reads repositories, hands their bytes to `ctxgate-core` for chunking,
//! counting and indexing, and publishes immutable index versions to a store.
//!
//! - [`walk`] lists a repository's files with `.gitignore` rules;
//! - [`pipeline`] indexes a repository incrementally and publishes a version atomically;
//! - [`store`] is the embedded default store: a data directory of immutable objects laid out
//!   like the S3 keys, and metadata in SQLite laid out like the DynamoDB items;
//! - [`assemble`] answers a query from the current version within a budget;
//! - [`aws`] is the cloud store: objects in S3, metadata in DynamoDB (feature `aws`);
//! - [`token_tables`] keeps fast exact token tables in the data directory.

pub mod assemble;
#[cfg(feature = "aws")]
pub mod aws;
pub mod error;
pub mod jobs;
pub mod pipeline;
pub mod store;
pub mod token_tables;
pub mod walk;

pub use error::IndexerError;
