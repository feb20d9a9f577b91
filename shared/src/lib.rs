//! ctxgate's core: every decision ctxgate makes, with no I/O.
//!
//! This crate never touches a socket, a file or a clock, so the same code runs in the batch
//! indexer (natively) and in the Cloudflare Worker (`wasm32-unknown-unknown`). The adapters in
//! `indexer/` and `edge/` read bytes and hand them here; what comes back is data they write out.
//!
//! The pieces, in the order a request meets them:
//! - [`tokens`]: exact token counts with the tiktoken encodings, loaded once per process;
//! - [`catalog`]: the model catalog and the budget a model leaves for context;
//! - [`chunk`]: syntax-aware chunking of source files (tree-sitter behind the `syntax` feature);
//! - [`lists`]: sorted keys with a byte string each, and byte strings by position, kept in the
//!   pack while small and read by range once large (BM25's postings, symbol users, summary
//!   texts);
//! - [`lexical`]: code-aware terms and the BM25 index;
//! - [`index`]: the versioned on-disk index pack that the indexer writes and readers open;
//! - [`summary`]: file, directory and project summaries (the pack stores them:
//!   [`index::summaries`]);
//! - [`select`] and [`compose`]: choosing pieces within a budget and composing the prompt,
//!   whose exact count never exceeds the budget;
//! - [`assemble`]: answering a query from one opened index, from retrieval to the composed
//!   prompt, with the summaries that fill what the pieces leave ([`assemble::summaries`]).
//!
//! What the hosts share as facts also lives here, so neither spells the other's: where metadata
//! items are keyed ([`item_key`]), the records they hold ([`records`]), where a project's files
//! come from ([`source`]) and which folders of its machine a server may read for a caller
//! ([`local_roots`]), the bodies the hosts send each other ([`host_wire`]), and how a published
//! version is opened and checked ([`index::open`]); and every error code with its HTTP status
//! ([`error_code`]).
//!
//! Must never depend on: `ctxgate-edge`, `ctxgate-indexer`, an async runtime, a socket, a
//! database or a cloud SDK (`scripts/architecture-check.sh` fails the tests if it does).

#![deny(missing_docs)]

pub mod assemble;
pub mod backoff;
pub mod catalog;
pub mod chunk;
pub mod compose;
pub mod compress;
pub mod continuation;
pub mod credential;
pub mod dense;
pub mod error_code;
mod exact_vec;
pub mod graph;
pub mod hash;
pub mod history;
pub mod host_wire;
pub mod index;
pub mod intent;
pub mod item_key;
pub mod lexical;
pub mod lists;
pub mod local_roots;
pub mod order;
pub mod path_kind;
pub mod profile;
pub mod quota;
pub mod rank;
pub mod records;
pub mod route;

mod scratch;
pub mod secrets;
pub mod select;
pub mod source;
pub mod summary;
pub mod tokens;
pub mod webhook;
