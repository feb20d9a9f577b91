//! ctxgate's edge API: one router for the Cloudflare Worker and for `ctxgate serve`.
//!
//! Handlers are small functions over typed extractors ([`routes`]); what they read and write goes
//! through the [`backend::Backend`] trait, so the same request logic runs in every host:
//! - natively, [`embedded::EmbeddedBackend`] serves the foundation's data directory;
//! - in the Worker (wasm32), the Cloudflare bindings do.
//!
//! Every decision (assembly, quotas, routing, continuation tokens) is `ctxgate-core`'s; this
//! crate adapts HTTP to it and maps every failure to one error shape ([`error::ApiError`]).

pub mod admin;
pub mod aws;
pub mod backend;
#[cfg(not(target_arch = "wasm32"))]
pub mod embedded;
pub mod error;
pub mod gc;
pub mod json_text;
pub mod mcp;
pub mod meter;
pub mod openapi;
pub mod pointer;
pub mod recent;
pub mod routes;
pub mod state;
pub mod texts;
pub mod wire;
#[cfg(target_arch = "wasm32")]
pub mod worker_host;

pub use routes::router;
pub use state::{AppState, Config};
