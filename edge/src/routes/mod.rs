//! The API's handlers, one module per group of endpoints (the router that maps paths to them is
//! [`crate::router`]). Handlers import the request plumbing of [`crate::extract`], never the
//! router; the helpers two groups share (the caller's budget, the conversation a request carries) are
//! modules of their own.

pub(crate) mod admin;
mod budget;
pub(crate) mod context;
mod conversation;
pub(crate) mod history;
pub(crate) mod meta;
pub(crate) mod metrics;
pub(crate) mod projects;
pub(crate) mod usage;
pub(crate) mod webhooks;

pub use context::{
    ContextAnswer, ContextRequest, SearchAnswer, SearchRequest, context_value, search_answer,
};
pub use meta::{CountAnswer, CountRequest, count as count_handler};
pub use projects::find_project;
pub use projects::valid_name as valid_project_name;
pub use projects::{ProjectList, list as list_handler};
