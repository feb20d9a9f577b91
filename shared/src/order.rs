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
    let mut keys: Vec<u64> = pairs
        .iter()
        .map(|&(id, score)| best_first_key(score, id))
        .collect();
    if limit == 0 {
        keys.clear();
    } else if keys.len() > limit {
        keys.select_nth_unstable(limit - 1);
        keys.truncate(limit);
    }
    radsort::sort(&mut keys);
    pairs.clear();
    pairs.extend(keys.into_iter().map(|k| (id_of(k), score_of(k))));
}

/// Sorts `items` by a best-first key ascending. The keys are distinct (the id is in them), so
/// any sort gives the same order; a radix sort over the key's bytes does far fewer steps than
/// comparisons on the thousands of candidates a large repository's query ranks.
pub fn sort_keys<T: Copy>(items: &mut [T], key: impl FnMut(&T) -> u64) {
    radsort::sort_by_key(items, key);
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

    proptest! {
        #[test]
        fn a_key_gives_back_its_score_and_id(score in any::<f32>(), id in any::<u32>()) {
            let key = best_first_key(score, id);
            prop_assert_eq!((score_of(key).to_bits(), id_of(key)), (score.to_bits(), id));
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
