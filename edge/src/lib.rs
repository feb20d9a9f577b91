//! ctxgate's edge API.
//!
//! The HTTP API will be one router over a small storage/quota interface, compiled both into a
//! Cloudflare Worker (wasm32) and natively behind `ctxgate serve`, so that no request logic
//! exists in only one host. This crate is a skeleton until that lands: it holds the wire shape
//! of errors and of the health check, which every endpoint will share.

pub mod wire;
