//! What the plan estimates before any text is read: a piece's header cost, the headers of a
//! whole repository, and whether a signature cut from a chunk declares its symbol. Both halves
//! of answering (planning in [`super::plan`] and [`super::candidates`], composing in
//! [`super::pieces`]) use these; neither imports the other's helpers.

use crate::index::IndexPack;

/// A conservative guess of a piece's header and fence in tokens (about three characters a
/// token); the composer's exact count corrects any error.
pub(super) fn header_cost(pack: &IndexPack, i: usize) -> u32 {
    let c = &pack.chunks[i];
    let path = pack.files[c.file as usize].path.len();
    let symbol = c.symbol.as_ref().map_or(0, |s| s.len());
    ((2 * path + symbol + 80) / 3) as u32
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
