//! Bringing old messages back for a query: BM25 over the units picks the few worth their full
//! text, so what the caller is asking about is not left as a summary.

use crate::history::message::Message;
use crate::lexical::{Bm25Builder, Bm25Params, doc_terms, query_terms};

use super::units::Unit;

/// At most this many old messages (or agent turns) are recalled for a query.
const MAX_RECALLED: usize = 8;
/// A unit is recalled only if it scores at least this share of the best match.
const RECALL_MIN_SHARE: f32 = 0.3;

/// The units most relevant to `query` (unit index and score), best first; none without a query.
pub(super) fn best_matches(
    units: &[Unit],
    messages: &[Message],
    query: Option<&str>,
) -> Vec<(u32, f32)> {
    let mut hits: Vec<(u32, f32)> = Vec::new();
    if let Some(q) = query.filter(|q| !q.trim().is_empty()) {
        let mut b = Bm25Builder::default();
        for u in units {
            let text: String = u
                .msgs
                .iter()
                .map(|&i| messages[i].text_content())
                .collect::<Vec<_>>()
                .join("\n");
            b.add(&doc_terms(&text, ""));
        }
        hits = b.finish(Bm25Params::default()).search(&query_terms(q));
        let best = hits.first().map_or(0.0, |h| h.1);
        hits.retain(|h| h.1 >= best * RECALL_MIN_SHARE);
        hits.truncate(MAX_RECALLED);
    }
    hits
}
