//! Sorted keys with a byte string each, laid out so that a reader holds the keys and reads only
//! the values a query asks for.
//!
//! BM25's postings (term → documents) and the symbol references (name → using chunks) are both
//! "for this key, a list of chunks", and both grow with the repository: one structure serves
//! both. The keys are sorted and concatenated in one string with their end offsets; the values
//! are one byte string in key order. A small value string stays in the pack
//! ([`ListStore::Inline`], one read fewer per query); a large one is cut at key boundaries into
//! segments of the version ([`ListStore::Segments`]) with a 4-byte check value per key, and a
//! reader reads a key's value by byte range and checks it before use.

use serde::{Deserialize, Serialize};

/// Sorted keys and each key's bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyedLists {
    /// Every key, sorted, concatenated.
    keys: String,
    /// End of key `k` in `keys`.
    #[serde(deserialize_with = "crate::index::exact_vec::deserialize")]
    key_ends: Vec<u32>,
    /// End of key `k`'s value in the byte string of every value, in key order.
    #[serde(deserialize_with = "crate::index::exact_vec::deserialize")]
    value_ends: Vec<u32>,
    /// Where that byte string is.
    store: ListStore,
}

/// Where the values are kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ListStore {
    /// In the pack: small values cost less to load than one more read per query.
    Inline(#[serde(with = "crate::index::raw_bytes")] Vec<u8>),
    /// In segments of the version, each holding whole values, read by range per key.
    Segments {
        /// The parts, in key order.
        parts: Vec<ListPart>,
        /// The first four bytes (big-endian) of the sha256 of each key's value: a range read is
        /// checked against it, so a damaged copy is an error, never a wrong answer.
        #[serde(deserialize_with = "crate::index::exact_vec::deserialize")]
        sums: Vec<u32>,
    },
}

impl Default for ListStore {
    fn default() -> Self {
        ListStore::Inline(Vec::new())
    }
}

/// One segment of values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPart {
    /// The segment (an index into the pack's segment list).
    pub segment: u32,
    /// Where the part begins in the byte string of every value.
    pub start: u32,
}

/// The lists of a pack a reader may have to read by range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// BM25 postings, keyed by term.
    Postings,
    /// Symbol references, keyed by name.
    References,
    /// Summary texts, by position ([`crate::summary::stored::StoredSummaries::texts`]).
    SummaryTexts,
}

/// One key's value among a pack's lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListId {
    /// Which lists.
    pub kind: ListKind,
    /// The key's id in them.
    pub key: u32,
}

/// Names the value in errors: "the postings of term #5", "the users of name #5".
impl std::fmt::Display for ListId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            ListKind::Postings => write!(f, "the postings of term #{}", self.key),
            ListKind::References => write!(f, "the users of name #{}", self.key),
            ListKind::SummaryTexts => write!(f, "the text of summary #{}", self.key),
        }
    }
}

/// Where one key's value lies in a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListRange {
    /// The segment (an index into the pack's segment list).
    pub segment: u32,
    /// First byte in the segment.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Why a key's value cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListError {
    /// The reader has not fetched them yet (key ids).
    #[error("the values of {} keys are not fetched yet", .0.len())]
    Needed(Vec<u32>),
    /// What was read is not what the index recorded.
    #[error("the value of key #{key} fails its checksum")]
    Checksum {
        /// The key id.
        key: u32,
    },
}

/// The check value [`ListStore::Segments`] keeps for `bytes`.
pub(crate) fn sum_of(bytes: &[u8]) -> u32 {
    let d = crate::hash::Sha256Digest::of(bytes).0;
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

impl KeyedLists {
    /// The lists of `entries`, whose keys must be strictly ascending (a key out of order is
    /// dropped, so lookups stay correct).
    pub fn from_sorted<K: AsRef<str>, V: AsRef<[u8]>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut out = KeyedLists::default();
        let mut values = Vec::new();
        for (key, value) in entries {
            let key = key.as_ref();
            if !out.is_empty() && out.key(out.len() - 1) >= key {
                continue;
            }
            out.keys.push_str(key);
            out.key_ends.push(out.keys.len() as u32);
            values.extend_from_slice(value.as_ref());
            out.value_ends.push(values.len() as u32);
        }
        out.store = ListStore::Inline(values);
        out
    }

    /// Checks what readers index with after decoding: one value end per key, offsets that
    /// never go back and stay inside the keys and (in the pack) the values, and parts and sums
    /// that match the keys and name only the first `segments` segments.
    pub fn check(&self, segments: usize) -> Result<(), &'static str> {
        let keys = self.key_ends.len();
        if self.value_ends.len() != keys {
            return Err("per-key tables of different lengths");
        }
        let ascending = |ends: &[u32], limit: usize| {
            ends.windows(2).all(|w| w[0] <= w[1])
                && ends.last().is_none_or(|&e| e as usize <= limit)
        };
        if !ascending(&self.key_ends, self.keys.len()) {
            return Err("key offsets out of order or out of range");
        }
        let values_len = match &self.store {
            ListStore::Inline(bytes) => bytes.len(),
            ListStore::Segments { parts, sums } => {
                if sums.len() != keys {
                    return Err("one checksum per key expected");
                }
                let ordered = parts.windows(2).all(|w| w[0].start <= w[1].start);
                if !ordered || parts.iter().any(|p| p.segment as usize >= segments) {
                    return Err("value parts out of order or in missing segments");
                }
                if parts.first().is_some_and(|p| p.start != 0) {
                    return Err("value parts do not start at 0");
                }
                usize::MAX
            }
        };
        if !ascending(&self.value_ends, values_len) {
            return Err("value offsets out of order or out of range");
        }
        Ok(())
    }

    /// Every value the pack holds (none when they are in segments), in key order.
    pub fn inline_values(&self) -> impl Iterator<Item = &[u8]> {
        let all: &[u8] = match &self.store {
            ListStore::Inline(all) => all,
            ListStore::Segments { .. } => &[],
        };
        let keys = if all.is_empty() { 0 } else { self.len() };
        (0..keys).map(move |k| {
            let (start, end) = self.span(k);
            all.get(start..end).unwrap_or_default()
        })
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.key_ends.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.key_ends.is_empty()
    }

    /// Key `k` (the empty string past the end).
    pub fn key(&self, k: usize) -> &str {
        let start = match k {
            0 => 0,
            _ => self.key_ends.get(k - 1).copied().unwrap_or(0) as usize,
        };
        let end = self.key_ends.get(k).copied().unwrap_or(0) as usize;
        self.keys.get(start..end).unwrap_or_default()
    }

    /// The id of `key` (its rank among the sorted keys), if present.
    pub fn find(&self, key: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.key_ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Key `k`'s bytes in the byte string of every value.
    pub(crate) fn span(&self, k: usize) -> (usize, usize) {
        let start = match k {
            0 => 0,
            _ => self.value_ends.get(k - 1).copied().unwrap_or(0) as usize,
        };
        let end = self.value_ends.get(k).copied().unwrap_or(start as u32) as usize;
        (start, end.max(start))
    }

    /// Whether the values are outside the pack, to be read by range.
    pub fn is_stored(&self) -> bool {
        matches!(self.store, ListStore::Segments { .. })
    }

    /// Whether key `k`'s value must be read from a segment: stored outside the pack and not
    /// empty.
    pub fn must_read(&self, k: usize) -> bool {
        let (start, end) = self.span(k);
        self.is_stored() && end > start
    }

    /// Where key `k`'s value is read from, when it is not in the pack.
    pub fn range(&self, k: u32) -> Option<ListRange> {
        let ListStore::Segments { parts, .. } = &self.store else {
            return None;
        };
        let (start, end) = self.span(k as usize);
        let i = parts
            .partition_point(|p| p.start as usize <= start)
            .checked_sub(1)?;
        let part = parts[i];
        Some(ListRange {
            segment: part.segment,
            start: (start - part.start as usize) as u64,
            len: (end - start) as u64,
        })
    }

    /// Checks bytes read for key `k` against what the index recorded.
    pub fn verify(&self, k: u32, bytes: &[u8]) -> Result<(), ListError> {
        let ok = match &self.store {
            ListStore::Inline(_) => false,
            ListStore::Segments { sums, .. } => {
                let (start, end) = self.span(k as usize);
                bytes.len() == end - start && sums.get(k as usize) == Some(&sum_of(bytes))
            }
        };
        if ok {
            Ok(())
        } else {
            Err(ListError::Checksum { key: k })
        }
    }

    /// Key `k`'s value: from the pack, or from `external` (values read from segments); the key
    /// id is the error when `external` lacks it.
    pub fn value<'a>(
        &'a self,
        k: usize,
        external: &dyn Fn(u32) -> Option<&'a [u8]>,
    ) -> Result<&'a [u8], u32> {
        match &self.store {
            ListStore::Inline(all) => {
                let (start, end) = self.span(k);
                Ok(all.get(start..end).unwrap_or_default())
            }
            ListStore::Segments { .. } if !self.must_read(k) => Ok(&[]),
            ListStore::Segments { .. } => external(k as u32).ok_or(k as u32),
        }
    }

    /// Moves the values out into parts of at most `cap` bytes that hold whole values (a value
    /// larger than `cap` gets a part of its own), to be stored as the segments `first_segment`,
    /// `first_segment + 1`, ... of the pack; returns their bytes. Values of at most
    /// `inline_max` bytes in all stay in the pack.
    pub fn split(&mut self, cap: usize, inline_max: usize, first_segment: u32) -> Vec<Vec<u8>> {
        let ListStore::Inline(all) = &self.store else {
            return Vec::new();
        };
        if all.len() <= inline_max {
            return Vec::new();
        }
        let mut parts = Vec::new();
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut sums = Vec::with_capacity(self.value_ends.len());
        let mut part_start = 0usize;
        for k in 0..self.value_ends.len() {
            let (start, end) = self.span(k);
            let bytes = all.get(start..end).unwrap_or_default();
            sums.push(sum_of(bytes));
            if bytes.is_empty() {
                // Never read (see `must_read`): it needs no place in a part.
                continue;
            }
            if out.is_empty() || (start > part_start && end - part_start > cap) {
                parts.push(ListPart {
                    segment: first_segment + out.len() as u32,
                    start: start as u32,
                });
                out.push(Vec::new());
                part_start = start;
            }
            if let Some(last) = out.last_mut() {
                last.extend_from_slice(bytes);
            }
        }
        self.store = ListStore::Segments { parts, sums };
        out
    }
}

/// Appends `v` as a LEB128 varint.
pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The next LEB128 value of `bytes`, advancing it; `None` at the end or on a malformed value.
pub(crate) fn read_varint(bytes: &mut &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for shift in (0..35).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        v |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// `ids` (ascending) as varint gaps.
pub(crate) fn encode_ascending(ids: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ids.len() * 2);
    let mut last = 0u32;
    for &id in ids {
        push_varint(&mut out, id.wrapping_sub(last));
        last = id;
    }
    out
}

/// The ids [`encode_ascending`] wrote (stops at a malformed value).
pub(crate) fn decode_ascending(mut bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut last = 0u32;
    while let Some(gap) = read_varint(&mut bytes) {
        last = last.wrapping_add(gap);
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        let values = [
            0u32,
            1,
            127,
            128,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            u32::MAX,
        ];
        let mut bytes = Vec::new();
        for v in values {
            push_varint(&mut bytes, v);
        }
        let mut rest = bytes.as_slice();
        for v in values {
            assert_eq!(read_varint(&mut rest), Some(v));
        }
        assert_eq!(read_varint(&mut rest), None);
        // A value cut short is no value.
        assert_eq!(read_varint(&mut &[0x80u8][..]), None);
        let ids = [0, 3, 4, 200, 70_000, u32::MAX];
        assert_eq!(decode_ascending(&encode_ascending(&ids)), ids);
    }

    #[test]
    fn keys_out_of_order_are_dropped_and_lookups_hold() {
        let l = KeyedLists::from_sorted([("b", [1u8]), ("a", [2]), ("c", [3]), ("c", [4])]);
        assert_eq!(l.len(), 2);
        assert_eq!(l.find("b"), Some(0));
        assert_eq!(l.find("c"), Some(1));
        assert_eq!(l.find("a"), None);
        assert_eq!(l.value(1, &|_| None), Ok(&[3u8][..]));
        assert_eq!(l.key(7), "");
    }

    proptest::proptest! {
        /// Split into parts and read back by range, every value is what was stored; a missing
        /// one is named, a damaged one fails its check, and parts keep to the cap.
        #[test]
        fn split_values_read_back_by_range(
            values in proptest::collection::btree_map(
                "[a-z]{1,6}", proptest::collection::vec(proptest::num::u8::ANY, 0..20), 1..40),
            cap in 1usize..64,
        ) {
            let whole = KeyedLists::from_sorted(values.iter());
            let bytes = postcard::to_allocvec(&whole).unwrap();
            let back: KeyedLists = postcard::from_bytes(&bytes).unwrap();
            proptest::prop_assert_eq!(&back, &whole);
            let mut split = whole.clone();
            let parts = split.split(cap, 0, 3);
            proptest::prop_assert!(parts.iter().all(|p| !p.is_empty()));
            for (k, (key, value)) in values.iter().enumerate() {
                proptest::prop_assert_eq!(split.find(key), Some(k));
                if value.is_empty() {
                    proptest::prop_assert!(!split.must_read(k));
                    proptest::prop_assert_eq!(split.value(k, &|_| None), Ok(&[][..]));
                    continue;
                }
                let r = split.range(k as u32).unwrap();
                let part = &parts[(r.segment - 3) as usize];
                let read = &part[r.start as usize..(r.start + r.len) as usize];
                proptest::prop_assert_eq!(read, value.as_slice());
                proptest::prop_assert_eq!(split.verify(k as u32, read), Ok(()));
                proptest::prop_assert_eq!(split.value(k, &|_| None), Err(k as u32));
                proptest::prop_assert_eq!(split.value(k, &|_| Some(read)), Ok(read));
                let mut bad = read.to_vec();
                bad[0] ^= 1;
                proptest::prop_assert_eq!(
                    split.verify(k as u32, &bad),
                    Err(ListError::Checksum { key: k as u32 })
                );
            }
            for p in &parts {
                let one_value = values.values().any(|v| v.len() == p.len());
                proptest::prop_assert!(p.len() <= cap || one_value);
            }
        }
    }
}
