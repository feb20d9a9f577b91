//! The places a file's further chunks take go first to the chunks next to a strong one.
//!
//! Ranking and [`super::diversify`] decide which files a budget reaches; each file's first chunk
//! ("lead") keeps its place. Its further chunks ("depth") fill the places between, by score:
//! often a lucky match far from the strong chunk, while the code right next to it (the rest of
//! a split definition, the helper above it) is what a change touches with it. Here the depth
//! places are handed out again, the strong chunks' neighbours first. The leads keep their
//! places and scores, so the files a budget reaches stay the same: the neighbour signal as a
//! score at small budgets traded files for lines (docs/retrieval.md, the regions of strong
//! files).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::index::IndexPack;

use super::neighbours::{file_chunks, neighbour_shares};
use super::{Ranked, Signals, Weights};

/// Gives the depth places of `ranked` (best first on entry and on return) to the chunks within
/// [`Weights::depth_reach`] chunks of one scoring at least [`Weights::depth_floor`] of the best,
/// ahead of the other depth chunks by [`Weights::depth_neighbour`] × that chunk's share of the
/// best score (neighbours that had no evidence of their own become candidates). Each chunk
/// takes the score of the place it takes, so later sorting keeps the order. It counts at every
/// budget: at 8k and 32k it raised line recall with the files unchanged, at 128k (where the
/// regions of strong files fit whole anyway) it changed next to nothing (docs/retrieval.md).
pub fn deepen_around_strong_chunks(pack: &IndexPack, ranked: &mut Vec<Ranked>, weights: &Weights) {
    let weight = weights.depth_neighbour;
    if weight <= 0.0 {
        return;
    }
    let files = file_chunks(pack);
    let shares = neighbour_shares(ranked, weights.depth_reach, weights.depth_floor, &files);
    reorder(ranked, shares, weight, |c| files(c).map(|(f, _)| f));
}

/// The reordering itself, for chunks whose file `file_of` gives.
fn reorder(
    ranked: &mut Vec<Ranked>,
    mut shares: HashMap<u32, (f32, f32)>,
    weight: f32,
    file_of: impl Fn(u32) -> Option<u32>,
) {
    let Some(best) = ranked.first().map(|r| r.score).filter(|&b| b > 0.0) else {
        return;
    };
    if shares.is_empty() {
        return;
    }
    let mut seen: HashSet<u32> = HashSet::default();
    let lead: Vec<bool> = ranked
        .iter()
        .map(|r| file_of(r.chunk).is_none_or(|f| seen.insert(f)))
        .collect();
    // The depth chunks with the key they are placed by, and the scores of their places.
    let mut depth: Vec<(f32, Ranked)> = Vec::new();
    let mut places: Vec<f32> = Vec::new();
    for (r, &is_lead) in ranked.iter().zip(&lead) {
        let share = shares.remove(&r.chunk).map(|(s, _)| s);
        if is_lead {
            continue;
        }
        let mut r = *r;
        let key = match share {
            Some(s) => {
                r.signals.neighbour = s;
                r.score + weight * s * best
            }
            None => r.score,
        };
        places.push(r.score);
        depth.push((key, r));
    }
    // Neighbours without evidence of their own: in the same file as their strong chunk, so
    // never a lead.
    depth.extend(shares.into_iter().map(|(chunk, (share, prior))| {
        let r = Ranked {
            chunk,
            score: 0.0,
            signals: Signals {
                neighbour: share,
                prior,
                ..Signals::default()
            },
        };
        (weight * share * best, r)
    }));
    depth.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.chunk.cmp(&b.1.chunk)));
    let lowest = ranked.last().map_or(0.0, |r| r.score);
    let mut queue = depth.into_iter();
    let mut out = Vec::with_capacity(ranked.len() + queue.len());
    let mut places = places.into_iter();
    for (r, &is_lead) in ranked.iter().zip(&lead) {
        if is_lead {
            out.push(*r);
        } else if let (Some((_, mut d)), Some(place)) = (queue.next(), places.next()) {
            d.score = place;
            out.push(d);
        }
    }
    out.extend(queue.map(|(key, mut d)| {
        d.score = key.min(lowest);
        d
    }));
    *ranked = out;
}

#[cfg(test)]
mod tests {
    use super::super::neighbours::tests::ranked;
    use super::*;

    // Two files: chunks 0-9 in file 0, 10-19 in file 1.
    fn file_of(c: u32) -> Option<u32> {
        Some(c / 10)
    }

    #[test]
    fn neighbours_take_the_depth_places_and_leads_keep_theirs() {
        // File 0 leads with chunk 5; its further chunk 9 is a weak match far away. File 1
        // leads with chunk 12. Chunk 4 (next to 5) had no evidence; chunk 6 a little.
        let mut r = ranked(&[(5, 1.0), (9, 0.8), (12, 0.7), (6, 0.2)]);
        let shares: HashMap<u32, (f32, f32)> =
            [(4, (1.0, 1.0)), (6, (1.0, 1.0))].into_iter().collect();
        reorder(&mut r, shares, 1.0, file_of);
        let order: Vec<(u32, f32)> = r.iter().map(|x| (x.chunk, x.score)).collect();
        assert_eq!(
            order,
            vec![(5, 1.0), (6, 0.8), (12, 0.7), (4, 0.2), (9, 0.2)],
            "the leads 5 and 12 keep their places; 6 and 4 go ahead of 9"
        );
        assert_eq!(r[1].signals.neighbour, 1.0);
        assert!(r.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn no_shares_no_change() {
        let before = ranked(&[(5, 1.0), (9, 0.8), (12, 0.7)]);
        let mut r = before.clone();
        reorder(&mut r, HashMap::default(), 1.0, file_of);
        assert_eq!(r, before);
    }
}
