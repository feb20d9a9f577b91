//! The places a file's further chunks take go first to the chunks next to a strong one.
//!
//! Ranking and [`super::diversify`] decide which files a budget reaches; each file's first chunk
//! ("lead") keeps its place. Its further chunks ("depth") fill the places between, by score:
//! often a lucky match far from the strong chunk, while the code right next to it (the rest of
//! a split definition, the helper above it) is what a change touches with it. Here the depth
//! places are handed out again, the strong chunks' neighbours first (and, from 32k tokens, their
//! callers and callees in the file, which may lie anywhere in it). The leads keep their
//! places and scores, so the files a budget reaches stay the same: the neighbour signal as a
//! score at small budgets traded files for lines (docs/retrieval.md, the regions of strong
//! files).

use rustc_hash::FxHashMap as HashMap;

use crate::index::IndexPack;
use crate::index::file_calls::CallsInFile;

use super::neighbours::{file_chunks, neighbour_shares};
use super::{Ranked, Signals, Weights};

/// Gives the depth places of `ranked` (best first on entry and on return) to the chunks within
/// [`Weights::depth_reach`] chunks of one scoring at least [`Weights::depth_floor`] of the best,
/// ahead of the other depth chunks by [`Weights::depth_neighbour`] × that chunk's share of the
/// best score (neighbours that had no evidence of their own become candidates). From 8k tokens
/// up, the strong chunk's callers and callees in its file go ahead the same way, their share
/// scaled by [`Weights::depth_calls`] (fading in up to 32k, see [`calls_strength`]). Each chunk
/// takes the score of the place it takes, so later sorting keeps the order. It counts at every
/// budget: at 8k and 32k it raised line recall with the files unchanged, at 128k (where the
/// regions of strong files fit whole anyway) it changed next to nothing (docs/retrieval.md).
pub fn deepen_around_strong_chunks(
    pack: &IndexPack,
    ranked: &mut Vec<Ranked>,
    weights: &Weights,
    budget: u32,
) {
    let weight = weights.depth_neighbour;
    if weight <= 0.0 {
        return;
    }
    let files = file_chunks(pack);
    let mut shares = neighbour_shares(ranked, weights.depth_reach, weights.depth_floor, &files);
    let calls = weights.depth_calls * calls_strength(budget);
    if calls > 0.0 {
        add_callers_and_callees(
            pack,
            ranked,
            weights.depth_floor,
            calls,
            &files,
            &mut shares,
        );
    }
    // The file of every candidate from the derived table (what `files` gives, without reading
    // each candidate's chunk record and file entry: a cache miss each).
    let chunk_file = &pack.derived().chunk_file;
    let known_files = pack.files.len();
    reorder(ranked, shares, weight, |c| {
        chunk_file
            .get(c as usize)
            .copied()
            .filter(|&f| (f as usize) < known_files)
    });
}

/// How much the call relation counts at `budget` tokens: the mirror of file diversity (0 up to
/// 8k, 1 from 32k). Measured (docs/retrieval.md, callers and callees): at 32k it raised line
/// recall on the visible benchmark and on both splits of the 24 other repositories; at 8k the
/// two disagreed (visible −0.005, held out +0.003), where the room goes to more files first.
fn calls_strength(budget: u32) -> f32 {
    1.0 - super::small_budget_strength(budget)
}

/// Files with more chunks than this are not searched for callers and callees (the work is a
/// pass over the file's definitions for each).
const CALLS_MAX_FILE_CHUNKS: usize = 2_000;

/// The chunks that use `name`, when the pack holds its users lists (the delta's too, for a
/// version opened from a base and a delta); lists kept in segments (a large repository's) are
/// not read at this step, so there the call relation is not used.
fn users_inline(pack: &IndexPack, name: &str) -> Option<Vec<u32>> {
    use crate::index::references::{References, name_key};
    let key = name_key(name);
    let inline = |lists: &crate::lists::KeyedLists| match lists.find_in(&key, &|_| None) {
        Ok(None) => Some(Vec::new()),
        Ok(Some(found)) => References::users_in(lists, &found, &|_| None).ok(),
        Err(_) => None,
    };
    let base = inline(pack.references.lists())?;
    match pack.overlay.as_deref() {
        None => Some(base),
        Some(o) => {
            let delta = inline(&o.references)?;
            Some(o.users(&key, base, delta, pack.chunks.len()))
        }
    }
}

/// A strong chunk: its index, its share of the best score and its prior.
type Strong = (u32, f32, f32);

/// Gives the callers and callees of each chunk scoring at least `floor` of the best, within its
/// file, `weight` × its share of the best score: a change to a function often touches the
/// helper it calls or the caller that passes it a new argument, code that shares none of the
/// request's words and may lie anywhere in the file.
fn add_callers_and_callees(
    pack: &IndexPack,
    ranked: &[Ranked],
    floor: f32,
    weight: f32,
    files: impl Fn(u32) -> Option<(u32, std::ops::Range<u32>)>,
    shares: &mut HashMap<u32, (f32, f32)>,
) {
    // A large repository's users lists live in segments, which this step does not read: every
    // lookup would fail, so make none.
    if pack.references.lists().is_stored() {
        return;
    }
    let Some(best) = ranked.first().map(|r| r.score).filter(|&b| b > 0.0) else {
        return;
    };
    // The strong chunks of each file.
    let mut strong: Vec<(u32, std::ops::Range<u32>, Vec<Strong>)> = Vec::new();
    for r in ranked {
        let share = r.score / best;
        if share < floor {
            break;
        }
        let Some((file, range)) = files(r.chunk) else {
            continue;
        };
        match strong.iter_mut().find(|(_, f, _)| *f == range) {
            Some((_, _, list)) => list.push((r.chunk, share, r.signals.prior)),
            None => strong.push((file, range, vec![(r.chunk, share, r.signals.prior)])),
        }
    }
    let mut give = |c: u32, share: f32, prior: f32| {
        let e = shares.entry(c).or_insert((0.0, prior));
        e.0 = e.0.max(share * weight);
    };
    for (file, range, list) in &strong {
        if range.len() > CALLS_MAX_FILE_CHUNKS {
            continue;
        }
        let calls = pack
            .derived()
            .calls
            .get_or_compute(*file, || calls_in_file(pack, range.clone()));
        let chunks: Vec<u32> = list.iter().map(|s| s.0).collect();
        for (c, k) in calls.related(&chunks) {
            let (_, share, prior) = list[k];
            give(c, share, prior);
        }
    }
}

/// For each chunk of the file whose chunks are `range` that defines names, the chunks of the
/// file that use each name (the relation does not depend on the query: it is kept with the
/// version, [`crate::index::file_calls`]).
fn calls_in_file(pack: &IndexPack, range: std::ops::Range<u32>) -> CallsInFile {
    let mut out = Vec::new();
    for c in range.clone() {
        let Some(chunk) = pack.chunks.get(c as usize).filter(|c| c.symbol.is_some()) else {
            continue;
        };
        let per_name: Vec<Vec<u32>> = crate::index::references::defined_names(chunk)
            .filter_map(|name| users_inline(pack, &name))
            .map(|users| users.into_iter().filter(|u| range.contains(u)).collect())
            .collect();
        if !per_name.is_empty() {
            out.push((c, per_name));
        }
    }
    CallsInFile::new(out)
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
    // Files seen so far, by index (a hash set here was a twentieth of a warm call on deno).
    let mut seen: Vec<bool> = Vec::new();
    let lead: Vec<bool> = ranked
        .iter()
        .map(|r| {
            file_of(r.chunk).is_none_or(|f| {
                let f = f as usize;
                if f >= seen.len() {
                    seen.resize(f + 1, false);
                }
                !std::mem::replace(&mut seen[f], true)
            })
        })
        .collect();
    // The chunks that take a share, marked a bit each: most candidates take none, and a bit
    // test is cheaper than a look-up in `shares` for each.
    let top = shares.keys().copied().max().unwrap_or(0) as usize;
    let mut sharing = vec![0u64; top / 64 + 1];
    for &c in shares.keys() {
        sharing[c as usize / 64] |= 1 << (c % 64);
    }
    let shares_in = |c: u32| {
        sharing
            .get(c as usize / 64)
            .is_some_and(|w| w & (1 << (c % 64)) != 0)
    };
    // The depth chunks by the key they are placed by (as best-first keys), and the scores of
    // their places. Those without a share keep their score as their key and come in best-first
    // order already (`ranked` is); only those that take one, and the neighbours without evidence
    // of their own, need sorting, and are merged in: sorting every depth chunk was a tenth of
    // this step. Each refers to `ranked` (below its length) or to `moved`.
    let n = ranked.len() as u32;
    let mut kept: Vec<(u64, u32)> = Vec::with_capacity(ranked.len());
    let mut moved: Vec<(f32, Ranked)> = Vec::new();
    let mut places: Vec<f32> = Vec::with_capacity(ranked.len());
    for (k, (r, &is_lead)) in ranked.iter().zip(&lead).enumerate() {
        let share = if shares_in(r.chunk) {
            shares.remove(&r.chunk).map(|(s, _)| s)
        } else {
            None
        };
        if is_lead {
            continue;
        }
        places.push(r.score);
        match share {
            Some(s) => {
                let mut r = *r;
                r.signals.neighbour = s;
                moved.push((r.score + weight * s * best, r));
            }
            None => kept.push((crate::order::best_first_key(r.score, r.chunk), k as u32)),
        }
    }
    // Neighbours without evidence of their own: in the same file as their strong chunk, so
    // never a lead.
    moved.extend(shares.into_iter().map(|(chunk, (share, prior))| {
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
    let mut order: Vec<(u64, u32)> = moved
        .iter()
        .enumerate()
        .map(|(k, (key, r))| (crate::order::best_first_key(*key, r.chunk), n + k as u32))
        .collect();
    order.sort_unstable();
    let order = if kept.is_sorted() {
        merge(&kept, &order)
    } else {
        // A stage handed over a list out of order: sort it all, as the contract's breach
        // leaves no run to trust.
        let mut all = kept;
        all.extend(order);
        crate::order::sort_keys(&mut all, |o| o.0);
        all
    };
    let depth_at = |k: u32| -> (f32, Ranked) {
        match k.checked_sub(n) {
            Some(m) => moved[m as usize],
            None => {
                let r = ranked[k as usize];
                (r.score, r)
            }
        }
    };
    let lowest = ranked.last().map_or(0.0, |r| r.score);
    let mut queue = order.into_iter().map(|(_, k)| depth_at(k));
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

/// The two lists, each ascending by key and with keys distinct across both, as one ascending
/// list.
fn merge(a: &[(u64, u32)], b: &[(u64, u32)]) -> Vec<(u64, u32)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].0 < b[j].0 {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
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

    /// The reordering as its documentation states it: every depth chunk sorted by its key.
    fn reorder_by_sorting_all(ranked: &mut Vec<Ranked>, mut shares: HashMap<u32, (f32, f32)>) {
        let best = ranked[0].score;
        let mut seen = std::collections::HashSet::new();
        let lead: Vec<bool> = ranked.iter().map(|r| seen.insert(r.chunk / 10)).collect();
        let mut depth = Vec::new();
        let mut places = Vec::new();
        for (r, &is_lead) in ranked.iter().zip(&lead) {
            let share = shares.remove(&r.chunk).map(|(s, _)| s);
            if !is_lead {
                let mut r = *r;
                let key = share.map_or(r.score, |s| {
                    r.signals.neighbour = s;
                    r.score + s * best
                });
                places.push(r.score);
                depth.push((key, r));
            }
        }
        depth.extend(shares.into_iter().map(|(chunk, (share, prior))| {
            let signals = Signals {
                neighbour: share,
                prior,
                ..Signals::default()
            };
            let r = Ranked {
                chunk,
                score: 0.0,
                signals,
            };
            (share * best, r)
        }));
        depth.sort_by_key(|(key, r)| crate::order::best_first_key(*key, r.chunk));
        let lowest = ranked.last().map_or(0.0, |r| r.score);
        let mut queue = depth.into_iter();
        let mut places = places.into_iter();
        let mut out = Vec::new();
        for (r, &is_lead) in ranked.iter().zip(&lead) {
            if is_lead {
                out.push(*r);
            } else if let (Some((_, mut d)), Some(p)) = (queue.next(), places.next()) {
                d.score = p;
                out.push(d);
            }
        }
        out.extend(queue.map(|(key, mut d)| {
            d.score = key.min(lowest);
            d
        }));
        *ranked = out;
    }

    proptest::proptest! {
        #[test]
        fn merging_the_moved_chunks_is_sorting_them_all(
            scores in proptest::collection::btree_map(0u32..40, 1u32..20, 1..25),
            shares in proptest::collection::btree_map(0u32..45, 1u32..10, 1..8),
        ) {
            let mut pairs: Vec<(u32, f32)> =
                scores.into_iter().map(|(c, s)| (c, s as f32 / 4.0)).collect();
            crate::order::sort_best_first(&mut pairs);
            let r = ranked(&pairs);
            let shares: HashMap<u32, (f32, f32)> = shares
                .into_iter()
                .map(|(c, s)| (c, (s as f32 / 10.0, 1.0)))
                .collect();
            let (mut a, mut b) = (r.clone(), r);
            reorder(&mut a, shares.clone(), 1.0, file_of);
            reorder_by_sorting_all(&mut b, shares);
            proptest::prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn no_shares_no_change() {
        let before = ranked(&[(5, 1.0), (9, 0.8), (12, 0.7)]);
        let mut r = before.clone();
        reorder(&mut r, HashMap::default(), 1.0, file_of);
        assert_eq!(r, before);
    }

    /// A pack of two files, chunks 0-5 in `a.rs` and 6 in `b.rs`, with the names each chunk
    /// defines and uses.
    fn called_pack() -> IndexPack {
        use crate::index::{ChunkRecord, FileEntry, FileStat, References, TokenCounts};
        let defs = [
            "helper",
            "unrelated",
            "run",
            "caller",
            "other",
            "far_helper",
            "ext",
        ];
        let used: [&[&str]; 7] = [
            &[],
            &[],
            &["helper", "far_helper"],
            &["run"],
            &[],
            &[],
            &["run"],
        ];
        let chunks: Vec<ChunkRecord> = defs
            .iter()
            .enumerate()
            .map(|(i, name)| ChunkRecord {
                id: Default::default(),
                file: u32::from(i == 6),
                kind: crate::chunk::ChunkKind::Function,
                symbol: Some((*name).into()),
                start_line: i as u32 * 10 + 1,
                end_line: i as u32 * 10 + 9,
                byte_start: 0,
                byte_end: 1,
                sha256: crate::hash::Sha256Digest::of(b""),
                tokens: TokenCounts::new(&[10]).expect("one count"),
                segment: 0,
                segment_offset: 0,
            })
            .collect();
        let used: Vec<Vec<String>> = used
            .iter()
            .map(|u| u.iter().map(|s| s.to_string()).collect())
            .collect();
        let file = |path: &str, first_chunk, chunk_count| FileEntry {
            path: path.into(),
            sha256: crate::hash::Sha256Digest::of(path.as_bytes()),
            stat: FileStat {
                size: 1,
                mtime_ns: 0,
                ctime_ns: 0,
                inode: 0,
            },
            language: "rust".into(),
            skipped: None,
            first_chunk,
            chunk_count,
        };
        IndexPack {
            references: References::build(&chunks, &used),
            files: vec![file("a.rs", 0, 6), file("b.rs", 6, 1)],
            chunks,
            ..crate::index::tests::tiny()
        }
    }

    #[test]
    fn a_strong_chunks_callers_and_callees_in_its_file_go_ahead() {
        let pack = called_pack();
        // `run` (2) is strong; `ext` (6, another file) and `other` (4) are weak.
        let ranked = ranked(&[(2, 1.0), (6, 0.3), (4, 0.2)]);
        let mut shares = HashMap::default();
        add_callers_and_callees(&pack, &ranked, 0.5, 0.8, file_chunks(&pack), &mut shares);
        let mut got: Vec<(u32, f32)> = shares.iter().map(|(&c, &(s, _))| (c, s)).collect();
        got.sort_by_key(|g| g.0);
        // Its callees `helper` and `far_helper` and its caller `caller`, at 0.8 of its share;
        // not the caller in another file, nor the chunks unrelated to it.
        assert_eq!(got, [(0, 0.8), (3, 0.8), (5, 0.8)]);
    }

    #[test]
    fn the_call_relation_counts_from_large_budgets_only() {
        assert_eq!(calls_strength(8_000), 0.0);
        assert!(calls_strength(16_000) > 0.0 && calls_strength(16_000) < 1.0);
        assert_eq!(calls_strength(32_000), 1.0);
        let pack = called_pack();
        let weights = Weights::default();
        let mut small = ranked(&[(2, 1.0), (4, 0.2)]);
        deepen_around_strong_chunks(&pack, &mut small, &weights, 8_000);
        assert!(
            !small.iter().any(|r| r.chunk == 5),
            "far_helper at 8k: {small:?}"
        );
        let mut large = ranked(&[(2, 1.0), (4, 0.2)]);
        deepen_around_strong_chunks(&pack, &mut large, &weights, 32_000);
        assert!(
            large.iter().any(|r| r.chunk == 5),
            "far_helper at 32k: {large:?}"
        );
    }
}
