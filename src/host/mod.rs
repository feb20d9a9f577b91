//! The native host: the one place where the edge (the API's router and handlers, `ctxgate-edge`)
//! and the batch side (indexing, the data directory, `ctxgate-indexer`) meet. Each of those
//! crates depends on the core only; what joins them lives here.

pub mod embedded;
pub mod query_embedder;
