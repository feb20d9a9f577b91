//! The regions around what ranks high: chunks near a strong chunk in its file share some of
//! its score.
//!
//! A change rarely stops at a chunk boundary. The rest of a split definition, the helper just
//! above a function, the method after the one a request names: these sit next to the chunk
//! that matched and often share none of the request's words, so without this step they are
//! never candidates. On the visible benchmark, lines of a chosen gold file that no chunk of it
//! reached at 8k were a quarter of the line recall lost, and a tenth of all gold lines lay in
//! chunks that never ranked at all, even at 128k.

use rustc_hash::FxHashMap as HashMap;

use crate::index::IndexPack;

use super::{Ranked, Signals, Weights};

/// At or under this budget the neighbour signal is off: the room is better spent on the best
/// chunks of more files (measured: whole strong files cost 0.008 of line recall at 32k and
/// 0.016 at 8k, with files lost).
pub const NEIGHBOURS_FROM: u32 = 32_000;
/// At or over this budget the neighbour signal counts in full: the strong files fit whole.
pub const NEIGHBOURS_FULL_AT: u32 = 128_000;

/// Gives each chunk within [`Weights::neighbour_reach`] chunks of a strong chunk in its file
/// the neighbour signal: the strong chunk's score scaled by the best score (the best such
/// neighbour's), weighted by [`Weights::neighbour`]. Only chunks scoring at least
/// [`Weights::neighbour_floor`] of the best lend it. Chunks that had no evidence of their own
/// become candidates, with their neighbour's file prior (same file, same kind). `ranked` is
/// best first on entry (as [`super::rank`] returns it) and on return; the shares are computed
/// from the scores on entry, so the signal never feeds on itself. The weight fades in with the
/// budget ([`strength_at`]), the mirror of [`super::diversify`]: a small budget reaches more
/// files, a large one goes deep into the likely ones.
pub fn spread_to_neighbours(
    pack: &IndexPack,
    ranked: &mut Vec<Ranked>,
    weights: &Weights,
    budget: u32,
) {
    let weight = weights.neighbour * strength_at(budget, weights.neighbour_from);
    if weight == 0.0 {
        return;
    }
    let shares = neighbour_shares(
        ranked,
        weights.neighbour_reach,
        weights.neighbour_floor,
        file_chunks(pack),
    );
    apply(ranked, shares, weight);
}

/// A chunk's file and the range of chunk indices the file holds.
pub(super) fn file_chunks(pack: &IndexPack) -> impl Fn(u32) -> Option<(u32, std::ops::Range<u32>)> {
    let chunks = pack.chunks.len() as u32;
    move |c| {
        let file = pack.chunks.get(c as usize)?.file;
        let entry = pack.files.get(file as usize)?;
        let end = entry
            .first_chunk
            .saturating_add(entry.chunk_count)
            .min(chunks);
        Some((file, entry.first_chunk..end))
    }
}

/// The share of [`Weights::neighbour`] that counts at `budget` tokens: 0 up to `from` tokens
/// ([`NEIGHBOURS_FROM`] by default), 1 from four times that ([`NEIGHBOURS_FULL_AT`] by
/// default), linear in log2 of the budget between.
pub fn strength_at(budget: u32, from: f32) -> f32 {
    let from = f64::from(from.max(1.0));
    let span = (f64::from(NEIGHBOURS_FULL_AT) / f64::from(NEIGHBOURS_FROM)).log2();
    let depth = (f64::from(budget.max(1)) / from).log2() / span;
    depth.clamp(0.0, 1.0) as f32
}

/// Each neighbour's best share and the prior it takes: the chunks within `reach` chunks of one
/// scoring at least `floor` of the best, for chunks whose file and its range of chunk indices
/// `file_chunks` gives.
pub(super) fn neighbour_shares(
    ranked: &[Ranked],
    reach: f32,
    floor: f32,
    file_chunks: impl Fn(u32) -> Option<(u32, std::ops::Range<u32>)>,
) -> HashMap<u32, (f32, f32)> {
    let mut shares: HashMap<u32, (f32, f32)> = HashMap::default();
    let Some(best) = ranked.first().map(|r| r.score).filter(|&b| b > 0.0) else {
        return shares;
    };
    let reach = reach.max(1.0) as u32;
    // The windows already spread in each file: a weaker chunk whose window lies inside one
    // changes nothing (best first), which keeps a long reach to one pass over each file.
    let mut spread: HashMap<u32, Vec<(u32, u32)>> = HashMap::default();
    for r in ranked {
        let share = r.score / best;
        if share <= 0.0 || share < floor {
            break;
        }
        let Some((file, range)) = file_chunks(r.chunk) else {
            continue;
        };
        if range.is_empty() {
            continue;
        }
        let lo = r.chunk.saturating_sub(reach).max(range.start);
        let hi = r.chunk.saturating_add(reach).min(range.end - 1);
        let windows = spread.entry(file).or_default();
        if windows.iter().any(|&(a, b)| a <= lo && hi <= b) {
            continue;
        }
        windows.push((lo, hi));
        for n in (lo..=hi).filter(|&n| n != r.chunk) {
            let e = shares.entry(n).or_insert((0.0, r.signals.prior));
            e.0 = e.0.max(share);
        }
    }
    shares
}

/// Adds the shares to the ranking, with new candidates for chunks that had none, best first.
fn apply(ranked: &mut Vec<Ranked>, mut shares: HashMap<u32, (f32, f32)>, weight: f32) {
    if shares.is_empty() {
        return;
    }
    for r in ranked.iter_mut() {
        if let Some((share, _)) = shares.remove(&r.chunk) {
            r.signals.neighbour = share;
            r.score += weight * share;
        }
    }
    ranked.extend(shares.into_iter().map(|(chunk, (share, prior))| Ranked {
        chunk,
        score: weight * share,
        signals: Signals {
            neighbour: share,
            prior,
            ..Signals::default()
        },
    }));
    super::sort_best_first(ranked);
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A ranking of `(chunk, score)` pairs with no signals.
    pub(in crate::rank) fn ranked(scores: &[(u32, f32)]) -> Vec<Ranked> {
        scores
            .iter()
            .map(|&(chunk, score)| Ranked {
                chunk,
                score,
                signals: Signals::default(),
            })
            .collect()
    }

    // Two files: chunks 0-3 in file 0, 4-7 in file 1.
    fn files(c: u32) -> Option<(u32, std::ops::Range<u32>)> {
        let f = c / 4;
        Some((f, f * 4..f * 4 + 4))
    }

    #[test]
    fn neighbours_within_reach_and_their_file_share_a_strong_chunks_score() {
        let weights = Weights {
            neighbour: 0.5,
            neighbour_reach: 1.0,
            ..Weights::default()
        };
        let mut r = ranked(&[(1, 2.0), (4, 1.0)]);
        let shares = neighbour_shares(&r, weights.neighbour_reach, weights.neighbour_floor, files);
        let share = |c: u32| shares.get(&c).map(|s| s.0);
        assert_eq!(share(0), Some(1.0));
        assert_eq!(share(2), Some(1.0));
        assert_eq!(share(3), None, "out of reach");
        // Chunk 4 starts file 1: chunk 3 of file 0 is not its neighbour.
        assert_eq!(share(5), Some(0.5));
        apply(&mut r, shares, weights.neighbour);
        let order: Vec<(u32, f32)> = r.iter().map(|x| (x.chunk, x.score)).collect();
        assert_eq!(
            order,
            vec![(1, 2.0), (4, 1.0), (0, 0.5), (2, 0.5), (5, 0.25)]
        );
        assert_eq!(r[2].signals.neighbour, 1.0);
    }

    #[test]
    fn the_signal_fades_in_between_32k_and_128k() {
        let from = NEIGHBOURS_FROM as f32;
        assert_eq!(strength_at(8_000, from), 0.0);
        assert_eq!(strength_at(NEIGHBOURS_FROM, from), 0.0);
        assert_eq!(strength_at(64_000, from), 0.5);
        assert_eq!(strength_at(NEIGHBOURS_FULL_AT, from), 1.0);
        assert_eq!(strength_at(1_000_000, from), 1.0);
        // An experiment may start it lower: full at 32k from 8k.
        assert_eq!(strength_at(16_000, 8_000.0), 0.5);
        assert_eq!(strength_at(32_000, 8_000.0), 1.0);
    }

    #[test]
    fn a_long_reach_covers_the_strong_files_and_the_floor_keeps_weak_chunks_out() {
        let weights = Weights {
            neighbour: 0.3,
            neighbour_reach: 100.0,
            neighbour_floor: 0.6,
            ..Weights::default()
        };
        let r = ranked(&[(2, 1.0), (5, 0.5)]);
        let shares = neighbour_shares(&r, weights.neighbour_reach, weights.neighbour_floor, files);
        let mut got: Vec<u32> = shares.keys().copied().collect();
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 3]);
    }
}
