//! What the plan estimates before any text is read: a piece's header cost, the headers of a
//! whole repository, and whether a signature cut from a chunk declares its symbol. Both halves
//! of answering (planning in [`super::plan`] and [`super::candidates`], composing in
//! [`super::pieces`]) use these; neither imports the other's helpers.

use crate::index::IndexPack;

/// A conservative guess of a piece's header and fences in tokens: `### path:start-end`, the
/// opening fence with its language and the closing one, at about three characters of path a
/// token plus 13 for the rest (on the visible benchmark's 8,200 pieces at 8k it is 2.4 tokens
/// over the exact count on average, at worst 6 under). The composer's exact count corrects any
/// error; a guess under the truth on the whole prompt would drop the last piece.
pub(super) fn header_cost(pack: &IndexPack, i: usize) -> u32 {
    let c = &pack.chunks[i];
    let path = pack.files[c.file as usize].path.len();
    ((path + 40) / 3) as u32
}

/// The header cost of every piece of the repository: what quoting it whole would add.
pub(super) fn overhead_total(pack: &IndexPack) -> u64 {
    (0..pack.chunks.len())
        .map(|i| u64::from(header_cost(pack, i)))
        .sum()
}

/// Whether the signature cut from a chunk declares one of the names the chunk defines: a later
/// part of a definition split across chunks starts with body statements, which
/// [`crate::chunk::signature_len`] would otherwise take for a declaration.
pub(super) fn declares_its_symbol(signature: &str, chunk: &crate::index::ChunkRecord) -> bool {
    let signature = signature.to_lowercase();
    crate::index::references::defined_names(chunk).any(|name| signature.contains(name.as_str()))
}
