//! ctxgate's edge API: one router for the Cloudflare Worker and for `ctxgate serve`.
//!
//! Handlers are small functions over typed extractors ([`routes`]); what they read and write goes
//! through the [`backend::Accounts`] and [`backend::Projects`] traits, so the same request logic runs in every host:
//! - natively, the `ctxgate` binary's host (`src/host/`) serves the data directory;
//! - in the Worker (wasm32), the Cloudflare bindings do.
//!
//! This crate depends on `ctxgate-core` only, natively and in wasm32, and must never depend on
//! the indexer (`scripts/architecture-check.sh` fails the tests if it does): the native backend,
//! which needs the indexer's store and pipeline, lives in the binary, where the two sides meet.
//!
//! Every decision (assembly, quotas, routing, continuation tokens) is `ctxgate-core`'s; this
//! crate adapts HTTP to it and maps every failure to one error shape ([`error::ApiError`]).

#![deny(missing_docs)]

pub mod admin;
pub mod aws;
pub mod backend;
pub mod console;
pub mod dense;
pub mod error;
pub mod extract;
pub mod gc;
pub mod hooks;
pub mod json_text;
pub mod mcp;
pub mod meter;
pub mod metrics;
pub mod observe;
pub mod openapi;
pub mod pointer;
pub mod recent;
pub mod router;
pub mod routes;
pub mod snapshot;
pub mod state;
pub mod text_cache;
pub mod texts;
pub mod wire;
#[cfg(target_arch = "wasm32")]
pub mod worker_host;

pub use router::router;
pub use state::{AppState, Config};
