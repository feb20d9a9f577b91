//! ctxgate's batch side: it reads repositories, hands their bytes to `ctxgate-core` for chunking,
//! counting and indexing, and publishes immutable index versions to a store.
//!
//! - [`walk`] lists a repository's files with `.gitignore` rules;
//! - [`pipeline`] indexes a repository incrementally and publishes a version atomically;
//! - [`source`] brings a project's files from a local folder, a git URL or a tarball URL, with
//!   path-safety checks and size limits, and probes whether a source changed;
//! - [`credentials`] keeps the tokens private git sources name, per org (files of the data
//!   directory, or AWS Secrets Manager), and resolves a source's reference;
//! - [`reindex`] runs index jobs for registered projects, on request and on a schedule;
//! - [`jobs`] records each job's progress and failures for operators;
//! - [`lambda`] is the AWS Lambda function around them (feature `lambda`);
//! - [`store`] is the embedded default store: a data directory of immutable objects laid out
//!   like the S3 keys, and metadata in SQLite laid out like the DynamoDB items;
//! - [`assemble`] answers a query from the current version within a budget;
//! - [`aws`] is the cloud store: objects in S3, metadata in DynamoDB (feature `aws`);
//! - [`token_tables`] keeps fast exact token tables in the data directory;
//! - [`crash`] holds the named points where crash-injection tests abort the process;
//! - [`embed`] turns chunks and requests into vectors for dense retrieval (a local model or an
//!   OpenAI-compatible API), cached by chunk;
//! - [`chat`] is the OpenAI-compatible chat client behind optional LLM summaries, and
//!   [`summarize`] builds each version's file, directory and project summaries.
//!
//! Must never depend on `ctxgate-edge` (the API): the two hosts meet only in the `ctxgate`
//! binary. Every decision (chunking, counting, index layout, item keys, records) is the core's;
//! this crate does the I/O around it (`scripts/architecture-check.sh` keeps it so).

#![deny(missing_docs)]

pub mod assemble;
#[cfg(feature = "aws")]
pub mod aws;
pub mod candidate_dump;
pub mod chat;
pub mod crash;
pub mod credentials;
pub mod embed;
pub mod error;
pub mod gc;
pub mod history;
pub mod jobs;
#[cfg(feature = "lambda")]
pub mod lambda;
pub mod pipeline;
pub mod progress;
pub mod publish;
pub mod recency;
pub mod reindex;
pub mod source;
pub mod store;
pub mod summarize;
pub mod token_tables;
pub mod walk;

pub use error::IndexerError;
