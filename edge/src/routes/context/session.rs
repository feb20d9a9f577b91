//! What a client's session already holds: read back from the audit (sessions need no storage
//! of their own), and named — where each chunk is — instead of being sent again.

use std::collections::HashSet;

use ctxgate_core::index::IndexPack;
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

/// Audit records read to find what a session already received (its newest calls).
const SESSION_AUDIT_DEPTH: usize = 500;

/// Chunk ids the caller's `session` already received from `project` — whole (or compressed), and
/// only as an outline (a signature or a signpost) — read back from the audit (which records every
/// delivered chunk id per call, which were outlines only, and which key called), so sessions
/// need no storage of their own. A session belongs to the key that opened it: two clients of one
/// org that pick the same id do not share history.
pub(super) async fn session_chunks(
    state: &AppState,
    caller: &Caller,
    session: &str,
    project: &str,
) -> Result<(HashSet<String>, HashSet<String>), ApiError> {
    let records = state
        .accounts
        .audit(&caller.org.name, SESSION_AUDIT_DEPTH)
        .await?;
    let mut whole = HashSet::new();
    let mut signatures = HashSet::new();
    for r in records.into_iter().filter(|r| {
        r.status == 200
            && r.session.as_deref() == Some(session)
            && r.key.as_deref() == Some(caller.key_id.as_str())
            && r.project.as_deref() == Some(project)
    }) {
        for c in r.chunks {
            if r.signature_only.contains(&c) {
                signatures.insert(c);
            } else {
                whole.insert(c);
            }
        }
    }
    Ok((whole, signatures))
}

/// Where `chunks` are (id, path, lines, symbol), for naming them instead of sending them.
pub(super) fn references(pack: &IndexPack, chunks: &[u32]) -> Vec<ChunkRef> {
    chunks
        .iter()
        .filter_map(|&i| {
            let c = pack.chunks.get(i as usize)?;
            let f = pack.files.get(c.file as usize)?;
            Some(ChunkRef {
                chunk_id: c.id.to_string(),
                path: f.path.clone(),
                start_line: c.start_line,
                end_line: c.end_line,
                symbol: c.symbol.as_deref().map(str::to_string),
            })
        })
        .collect()
}

/// Where a chunk the session already holds is.
#[derive(Serialize, JsonSchema)]
pub struct ChunkRef {
    /// The chunk's id.
    chunk_id: String,
    /// Its file.
    path: String,
    /// First line (1-based).
    start_line: u32,
    /// Last line (inclusive).
    end_line: u32,
    /// The symbol it defines, when it defines one.
    symbol: Option<String>,
}
