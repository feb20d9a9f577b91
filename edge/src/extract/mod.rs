//! Request plumbing every handler uses: the JSON body extractor, body limits, and who is calling
//! (an organisation's key, or the admin secret). Nothing here imports a handler, so handlers,
//! the router, MCP and the Worker host all build on it.

pub mod auth;
pub mod body;
pub mod limits;

pub use auth::{Admin, Caller, hash_key};
pub use body::JsonBody;
