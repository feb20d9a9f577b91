//! Lexical retrieval: code-aware terms and a BM25 index over chunks.
//!
//! Code is searched by identifiers, and people ask in words: `parse_config` should be found by
//! "parse config", `HttpClient` by "http client". So every identifier yields itself (lowercased)
//! and, when it has several parts, each part of its snake_case / camelCase split; a chunk's path
//! contributes its components the same way.

mod bm25;
mod derive;
mod synonyms;
mod terms;

pub use bm25::{
    Bm25Builder, Bm25Index, Bm25Params, LayerPostings, Searched, decode_postings, encode_postings,
};
pub use synonyms::widen_question;
pub use terms::{doc_terms, for_each_term, query_terms};
