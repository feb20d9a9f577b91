//! Where the values of a pack's lists are kept, and how they are cut into parts, placed and
//! checked: shared by keyed lists (postings, symbol users, blocks of keys:
//! [`super::KeyedLists`]) and values by position (summary texts:
//! [`super::values::ValueList`]).

use serde::{Deserialize, Serialize};

/// Where the values are kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ListStore {
    /// In the pack: small values cost less to load than one more read per query.
    Inline(#[serde(with = "crate::lists::raw_bytes")] Vec<u8>),
    /// In segments of the version, each holding whole values, read by range per key.
    Segments {
        /// The parts, in key order.
        parts: Vec<ListPart>,
        /// The first four bytes (big-endian) of the sha256 of each key's value: a range read is
        /// checked against it, so a damaged copy is an error, never a wrong answer.
        #[serde(deserialize_with = "crate::exact_vec::deserialize")]
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

/// The check value [`ListStore::Segments`] keeps for `bytes`.
pub(crate) fn sum_of(bytes: &[u8]) -> u32 {
    let d = crate::hash::Sha256Digest::of(bytes).0;
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// A part of split values may end after a value whose check value is a multiple of this: with
/// summaries of a few hundred bytes, a part ends about every 1,024 values past its minimum.
pub(crate) const CUT_EVERY: u32 = 1024;

/// Whether `ends` never go back and stay within `limit`.
pub(crate) fn ascending(ends: &[u32], limit: usize) -> bool {
    ends.windows(2).all(|w| w[0] <= w[1]) && ends.last().is_none_or(|&e| e as usize <= limit)
}

/// How long the byte string of `values` values may be in `store`: its length in the pack; any
/// length in segments, once the parts are checked to be in order, from 0, in the first
/// `segments` segments, with one check value per value.
pub(crate) fn checked_len(
    store: &ListStore,
    values: usize,
    segments: usize,
) -> Result<usize, &'static str> {
    match store {
        ListStore::Inline(bytes) => Ok(bytes.len()),
        ListStore::Segments { parts, sums } => {
            if sums.len() != values {
                return Err("one checksum per value expected");
            }
            let ordered = parts.windows(2).all(|w| w[0].start <= w[1].start);
            if !ordered || parts.iter().any(|p| p.segment as usize >= segments) {
                return Err("value parts out of order or in missing segments");
            }
            if parts.first().is_some_and(|p| p.start != 0) {
                return Err("value parts do not start at 0");
            }
            Ok(usize::MAX)
        }
    }
}

/// Where bytes `start..end` of the byte string of every value are read from, when `store` keeps
/// them in segments.
pub(crate) fn range_in(store: &ListStore, start: usize, end: usize) -> Option<ListRange> {
    let ListStore::Segments { parts, .. } = store else {
        return None;
    };
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

/// `all`, the values ending at `ends`, cut into parts of at most `cap` bytes holding whole
/// values (a value larger than `cap` gets a part of its own) to be stored as the segments
/// `first_segment`, ...: the store naming them, and their bytes.
///
/// Where a part ends depends on the values' own bytes, not on their offsets: after a value
/// whose check value is a multiple of [`CUT_EVERY`], once the part holds a quarter of `cap`
/// (or before a value that would take it past `cap`). A re-index that changes one value then
/// changes one part, and the parts around it keep their bytes and names — cutting at fixed
/// sizes would shift every later part and upload them all again.
pub(crate) fn cut(
    all: &[u8],
    ends: &[u32],
    cap: usize,
    first_segment: u32,
) -> (ListStore, Vec<Vec<u8>>) {
    let mut parts = Vec::new();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut sums = Vec::with_capacity(ends.len());
    let mut part_start = 0usize;
    let mut cut = true;
    let mut start = 0usize;
    for &end in ends {
        let end = (end as usize).max(start);
        let bytes = all.get(start..end).unwrap_or_default();
        let sum = sum_of(bytes);
        sums.push(sum);
        if !bytes.is_empty() {
            if cut || (start > part_start && end - part_start > cap) {
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
            cut = end - part_start >= cap / 4 && sum.is_multiple_of(CUT_EVERY);
        }
        // An empty value is never read (see `must_read`): it needs no place in a part.
        start = end;
    }
    (ListStore::Segments { parts, sums }, out)
}
