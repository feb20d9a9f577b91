//! What the plan estimates before any text is read: a piece's header cost, the headers of a
//! whole repository, and whether a signature cut from a chunk declares its symbol. Both halves
//! of answering (planning in [`super::plan`] and [`super::candidates`], composing in
//! [`super::pieces`]) use these; neither imports the other's helpers.

use crate::index::IndexPack;
use crate::profile::Profile;
use crate::rank::{DIVERSE_UP_TO, Weights, small_budget_strength};

use super::SIGNATURES_BELOW;

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

/// Most signposts in one prompt: past a dozen further files a list of them stops telling a
/// model where to look.
pub(super) const MAX_SIGNPOSTS: usize = 12;

/// The room kept for signposts: `weights.signposts` of the piece room in full up to 8k tokens,
/// fading by 32k (a large prompt reaches more files whole) to `weights.signpost_floor` tokens
/// (not every file a change touches: measured, the 32k answers' all-gold rate gains 0.01
/// for it on commits held out of every fit). Only `expand` answers
/// get them: `plan` and `repair` keep to a few pieces, and a signatures-only prompt is a list
/// of declarations already.
pub(super) fn signpost_room(
    weights: &Weights,
    profile: Profile,
    budget: u32,
    piece_room: u32,
) -> u32 {
    let share = small_budget_share(weights.signposts, profile, budget, piece_room);
    if profile != Profile::Expand || budget <= DIVERSE_UP_TO || weights.signposts <= 0.0 {
        return share;
    }
    share.max((weights.signpost_floor.max(0.0) as u32).min(piece_room / 2))
}

/// The room kept for excerpts (`excerpts.rs`): `weights.excerpts` of the piece room, on the
/// same terms as [`signpost_room`].
pub(super) fn excerpt_room(
    weights: &Weights,
    profile: Profile,
    budget: u32,
    piece_room: u32,
) -> u32 {
    small_budget_share(weights.excerpts, profile, budget, piece_room)
}

/// `share` (at most half) of `piece_room` in full up to 8k tokens, fading out by 32k; none
/// outside `expand` or under [`SIGNATURES_BELOW`].
fn small_budget_share(share: f32, profile: Profile, budget: u32, piece_room: u32) -> u32 {
    if profile != Profile::Expand || budget < SIGNATURES_BELOW || share <= 0.0 {
        return 0;
    }
    let share = share.min(0.5) * small_budget_strength(budget);
    (piece_room as f32 * share) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_is_a_share_of_small_budgets_and_a_floor_above_8k() {
        let w = Weights::default();
        assert_eq!(
            signpost_room(&w, Profile::Expand, 8_000, 7_900),
            (7_900.0 * w.signposts) as u32
        );
        let at_16k = signpost_room(&w, Profile::Expand, 16_000, 15_900);
        assert!(at_16k > 0 && at_16k < (15_900.0 * w.signposts) as u32);
        let floor = w.signpost_floor as u32;
        assert!(floor > 0);
        assert_eq!(signpost_room(&w, Profile::Expand, 32_000, 31_900), floor);
        assert_eq!(signpost_room(&w, Profile::Expand, 128_000, 127_000), floor);
        // Never more than half of a room, whatever the floor.
        assert_eq!(signpost_room(&w, Profile::Expand, 9_000, 100), 50);
        assert_eq!(signpost_room(&w, Profile::Plan, 8_000, 7_900), 0);
        assert_eq!(signpost_room(&w, Profile::Plan, 32_000, 31_900), 0);
        assert_eq!(signpost_room(&w, Profile::Expand, 900, 850), 0);
        let off = Weights {
            signposts: 0.0,
            ..Weights::default()
        };
        assert_eq!(signpost_room(&off, Profile::Expand, 8_000, 7_900), 0);
        assert_eq!(signpost_room(&off, Profile::Expand, 32_000, 31_900), 0);
        let no_floor = Weights {
            signpost_floor: 0.0,
            ..Weights::default()
        };
        assert_eq!(signpost_room(&no_floor, Profile::Expand, 32_000, 31_900), 0);
    }
}
