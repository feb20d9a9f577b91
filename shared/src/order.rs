//! Best-first order as one integer: sorting candidates by score (highest first, in
//! [`f32::total_cmp`]'s order) and then by id (lowest first) is the order of these keys, and
//! sorting plain `u64`s is several times faster than sorting pairs with a comparator, which on a
//! large repository (tens of thousands of matches per query) was a tenth of a warm query.

/// The key that sorts (`score` descending by [`f32::total_cmp`], then `id` ascending) as an
/// ascending `u64`.
pub fn best_first_key(score: f32, id: u32) -> u64 {
    // `total_cmp`'s own mapping of a float's bits to an ordered signed integer, made unsigned,
    // then inverted so that higher scores come first.
    let bits = score.to_bits() as i32;
    let ordered = bits ^ ((((bits >> 31) as u32) >> 1) as i32);
    let ascending = (ordered as u32) ^ 0x8000_0000;
    (u64::from(!ascending) << 32) | u64::from(id)
}

/// The id a [`best_first_key`] was made with.
pub fn id_of(key: u64) -> u32 {
    key as u32
}

/// The score a [`best_first_key`] was made with, bit for bit: the key holds all of it, so a
/// sort moves bare `u64`s rather than keys with their scores beside them (half the bytes each
/// radix pass and each selection step moves).
pub fn score_of(key: u64) -> f32 {
    let ordered = (!((key >> 32) as u32) ^ 0x8000_0000) as i32;
    // The sign bit is as it was, so the same mask undoes what `best_first_key` did.
    let bits = ordered ^ ((((ordered >> 31) as u32) >> 1) as i32);
    f32::from_bits(bits as u32)
}

/// Sorts `(id, score)` pairs best first: by score descending ([`f32::total_cmp`]), then id.
pub fn sort_best_first(pairs: &mut Vec<(u32, f32)>) {
    best_first_top(pairs, usize::MAX);
}

/// Keeps the best `limit` of `(id, score)` pairs, sorted as [`sort_best_first`] sorts them.
/// Choosing them first (linear) and sorting only those is what makes a cap cheap: a common
/// word matches tens of thousands of chunks of a large repository.
pub fn best_first_top(pairs: &mut Vec<(u32, f32)>, limit: usize) {
    let mut keys = if pairs.len() > limit.saturating_mul(2) && pairs.len() >= BUCKETED_FROM {
        keys_that_can_lead(pairs, limit)
    } else {
        pairs
            .iter()
            .map(|&(id, score)| best_first_key(score, id))
            .collect()
    };
    if limit == 0 {
        keys.clear();
    } else if keys.len() > limit {
        keys.select_nth_unstable(limit - 1);
        keys.truncate(limit);
    }
    sort_keys(&mut keys, |&k| k);
    pairs.clear();
    pairs.extend(keys.into_iter().map(|k| (id_of(k), score_of(k))));
}

/// Pairs from which [`best_first_top`] buckets its keys first: below, choosing among all of
/// them costs less than a pass to count them.
const BUCKETED_FROM: usize = 1024;

/// The high bits of a key that choose its bucket: the sign, the exponent and five bits of the
/// mantissa, so a bucket spans about 3% of a score (16 KiB of counts). A byte (sign and seven
/// bits of the exponent) puts the scores of a query, which span a few powers of two, in two or
/// three buckets, and the choice is then among nearly all of them again.
const BUCKET_BITS: u32 = 14;

/// The keys of the pairs in the buckets that hold the best `limit` (`limit` ≥ 1): every bucket
/// better than the one where the `limit`th key falls, and that one. The keys of a better bucket
/// are all smaller than those of a worse one, so the `limit` smallest keys are among these, and
/// choosing among them gives the same keys as choosing among all.
fn keys_that_can_lead(pairs: &[(u32, f32)], limit: usize) -> Vec<u64> {
    let bucket = |key: u64| (key >> (64 - BUCKET_BITS)) as usize;
    let mut counts = vec![0u32; 1 << BUCKET_BITS];
    for &(id, score) in pairs {
        counts[bucket(best_first_key(score, id))] += 1;
    }
    let mut seen = 0usize;
    let mut last = counts.len() - 1;
    for (b, &n) in counts.iter().enumerate() {
        seen += n as usize;
        if seen >= limit {
            last = b;
            break;
        }
    }
    let mut keys = Vec::with_capacity(seen);
    keys.extend(
        pairs
            .iter()
            .map(|&(id, score)| best_first_key(score, id))
            .filter(|&k| bucket(k) <= last),
    );
    keys
}

/// Sorts `items` by a best-first key ascending, stably. A radix sort over the key's bytes does
/// far fewer steps than comparisons on the thousands of candidates a large repository's query
/// ranks, and it goes by the score half alone: the id half (a chunk number, three bytes that
/// vary) took as many passes again, where scores are rarely equal. Runs of equal scores are
/// then put in id order on their own, so the order is the full key's.
pub fn sort_keys<T: Copy>(items: &mut [T], mut key: impl FnMut(&T) -> u64) {
    radsort::sort_by_key(items, |t| high(key(t)));
    let mut start = 0;
    while start < items.len() {
        let score = high(key(&items[start]));
        let mut end = start + 1;
        while end < items.len() && high(key(&items[end])) == score {
            end += 1;
        }
        let run = &mut items[start..end];
        if run.len() > TIES_BY_COMPARISON {
            radsort::sort_by_key(run, |t| key(t) as u32);
        } else if run.len() > 1 {
            run.sort_by_key(|t| key(t) as u32);
        }
        start = end;
    }
}

/// Equal scores up to this many are put in id order by comparisons; more, by a radix sort (a
/// query whose candidates share a score by the thousand would otherwise pay n log n).
const TIES_BY_COMPARISON: usize = 32;

/// A key's score half.
fn high(key: u64) -> u32 {
    (key >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_comparator(pairs: &mut [(u32, f32)]) {
        pairs.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }

    #[test]
    fn special_values_keep_total_order() {
        let mut a = vec![
            (3, 0.0),
            (1, -0.0),
            (2, f32::INFINITY),
            (4, f32::NEG_INFINITY),
            (5, f32::MIN_POSITIVE),
            (6, -1.5),
            (7, 1.5),
            (0, 1.5),
        ];
        let mut b = a.clone();
        sort_best_first(&mut a);
        by_comparator(&mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn the_top_is_the_head_of_the_full_order() {
        let pairs: Vec<(u32, f32)> = (0..1000u32)
            .map(|i| (i, ((i * 7919) % 113) as f32 / 7.0))
            .collect();
        let mut all = pairs.clone();
        sort_best_first(&mut all);
        for limit in [0, 1, 5, 113, 999, 1000, 5000] {
            let mut top = pairs.clone();
            best_first_top(&mut top, limit);
            assert_eq!(top, all[..limit.min(all.len())]);
        }
    }

    #[test]
    fn the_top_of_many_pairs_is_the_head_of_the_full_order() {
        // Enough pairs to be bucketed, with scores in few buckets, in many, and of every sign.
        for spread in [1u32, 7, 1000, 100_000] {
            let pairs: Vec<(u32, f32)> = (0..20_000u32)
                .map(|i| {
                    let v = ((i.wrapping_mul(2_654_435_761)) % spread) as f32;
                    (i, if i % 5 == 0 { -v / 3.0 } else { v / 17.0 })
                })
                .collect();
            let mut all = pairs.clone();
            sort_best_first(&mut all);
            for limit in [1, 2, 100, 4096, 9_999, 10_000, 10_001, 19_999] {
                let mut top = pairs.clone();
                best_first_top(&mut top, limit);
                assert_eq!(top, all[..limit], "spread {spread}, limit {limit}");
            }
        }
    }

    proptest! {
        #[test]
        fn a_key_gives_back_its_score_and_id(score in any::<f32>(), id in any::<u32>()) {
            let key = best_first_key(score, id);
            prop_assert_eq!((score_of(key).to_bits(), id_of(key)), (score.to_bits(), id));
        }

        #[test]
        fn sort_keys_is_a_stable_sort_by_the_whole_key(
            items in prop::collection::vec((0u32..4, 0u32..70, any::<u16>()), 0..400)
        ) {
            // Few distinct scores and ids: long runs of ties on either half, and equal keys
            // whose payloads tell whether their order was kept.
            let mut a: Vec<(u64, u16)> = items
                .iter()
                .map(|&(s, id, p)| ((u64::from(s) << 32) | u64::from(id), p))
                .collect();
            let mut b = a.clone();
            sort_keys(&mut a, |t| t.0);
            b.sort_by_key(|t| t.0);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn the_top_is_the_head_of_the_full_order_for_any_scores(
            scores in prop::collection::vec(prop_oneof![any::<f32>(), (0u8..4).prop_map(f32::from)], 1024..3000),
            limit in 1usize..1500,
        ) {
            let pairs: Vec<(u32, f32)> = scores
                .iter()
                .enumerate()
                .filter(|p| !p.1.is_nan())
                .map(|(i, &s)| (i as u32, s))
                .collect();
            let mut all = pairs.clone();
            sort_best_first(&mut all);
            let mut top = pairs.clone();
            best_first_top(&mut top, limit);
            let bits = |v: &[(u32, f32)]| v.iter().map(|p| (p.0, p.1.to_bits())).collect::<Vec<_>>();
            prop_assert_eq!(bits(&top), bits(&all[..limit.min(all.len())]));
        }

        #[test]
        fn keys_sort_like_the_comparator(pairs in prop::collection::vec((0u32..50, any::<f32>()), 0..300)) {
            let mut a: Vec<(u32, f32)> = pairs.iter().copied().filter(|p| !p.1.is_nan()).collect();
            let mut b = a.clone();
            sort_best_first(&mut a);
            by_comparator(&mut b);
            let bits = |v: &[(u32, f32)]| v.iter().map(|p| (p.0, p.1.to_bits())).collect::<Vec<_>>();
            prop_assert_eq!(bits(&a), bits(&b));
        }
    }
}
