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
//!
//! A large dictionary's keys go out of the pack too ([`KeyBlocks`]): a monorepo's 610k terms
//! with their value ends and check values were 17.6 MiB of a Worker's 64 MiB. They are cut into
//! blocks of [`BLOCK_KEYS`] keys stored in segments, and the pack keeps only each block's first
//! key and where the block is. A lookup reads the block its key falls in (checked like a value),
//! then the value; so a query costs one more round of range reads, made once for every term and
//! name it looks up, and a block stays in a host's cache like a value.

mod list_id;
mod parts;
pub mod raw_bytes;
pub mod values;
mod varint;

use serde::{Deserialize, Serialize};

pub use list_id::{ListId, ListKind, ValueAt};
pub use parts::{ListPart, ListRange, ListStore};
use parts::{ascending, checked_len, cut, range_in, sum_of};
pub(crate) use varint::{decode_ascending, encode_ascending, push_varint, read_varint};

/// Sorted keys and each key's bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyedLists {
    /// Every key, sorted, concatenated.
    keys: String,
    /// End of key `k` in `keys`.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    key_ends: Vec<u32>,
    /// End of key `k`'s value in the byte string of every value, in key order.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    value_ends: Vec<u32>,
    /// Where that byte string is.
    store: ListStore,
    /// When the keys are in blocks outside the pack (then `keys`, `key_ends`, `value_ends` and
    /// the sums are empty): what the pack keeps of them.
    blocks: Option<Box<KeyBlocks>>,
}

/// Keys per block of [`KeyBlocks`]: a block of 128 terms is about 2 KB to read, and 610k terms
/// leave 4.8k blocks in the pack (about 120 KB).
pub const BLOCK_KEYS: usize = 128;

/// A dictionary's keys kept in segments, in blocks of [`BLOCK_KEYS`] consecutive keys (the last
/// holds the rest).
///
/// A block's bytes: the start of its first key's value in the byte string of every value
/// (varint), then per key the bytes it shares with the previous key of the block (varint), the
/// length and bytes of the rest, the length of its value (varint) and the value's check value
/// (u32 little-endian).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyBlocks {
    /// Number of keys in all.
    count: u32,
    /// Each block's first key, with the block's bytes as its value (in segments, read by range
    /// and checked like any value; these lists never have blocks of their own).
    index: KeyedLists,
}

/// The block index of lists without blocks.
static NO_BLOCKS: KeyedLists = KeyedLists {
    keys: String::new(),
    key_ends: Vec::new(),
    value_ends: Vec::new(),
    store: ListStore::Inline(Vec::new()),
    blocks: None,
};

/// Never decoded: the block index of [`KeyBlocks`] has no blocks of its own, so a pack cannot
/// nest them (decoding nested blocks would recurse as deep as a damaged pack says).
struct NoBlocks;

impl<'de> Deserialize<'de> for NoBlocks {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom("nested key blocks"))
    }
}

/// [`KeyedLists`] as the block index of [`KeyBlocks`] is stored: its `blocks` always `None`.
#[derive(Deserialize)]
struct FlatLists {
    keys: String,
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    key_ends: Vec<u32>,
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    value_ends: Vec<u32>,
    store: ListStore,
    #[expect(dead_code, reason = "decoded only to refuse nested blocks")]
    blocks: Option<NoBlocks>,
}

impl<'de> Deserialize<'de> for KeyBlocks {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            count: u32,
            index: FlatLists,
        }
        let Stored { count, index } = Stored::deserialize(d)?;
        let FlatLists {
            keys,
            key_ends,
            value_ends,
            store,
            blocks: _,
        } = index;
        Ok(KeyBlocks {
            count,
            index: KeyedLists {
                keys,
                key_ends,
                value_ends,
                store,
                blocks: None,
            },
        })
    }
}

/// A key found among the lists ([`KeyedLists::find_in`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The key's id (its rank among the sorted keys).
    pub key: u32,
    /// Where its value is.
    pub at: ValueAt,
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
    /// The reader has not fetched these blocks of keys yet (block numbers).
    #[error("{} blocks of keys are not fetched yet", .0.len())]
    BlocksNeeded(Vec<u32>),
    /// A block of keys does not decode as the pack says it should.
    #[error("block of keys #{block} is malformed")]
    Block {
        /// The block's number.
        block: u32,
    },
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
    /// that match the keys and name only the first `segments` segments; keys in blocks leave
    /// no key in the pack, their values are in segments and there is one block per
    /// [`BLOCK_KEYS`] keys.
    pub fn check(&self, segments: usize) -> Result<(), &'static str> {
        let keys = self.key_ends.len();
        if self.value_ends.len() != keys {
            return Err("per-key tables of different lengths");
        }
        if !ascending(&self.key_ends, self.keys.len()) {
            return Err("key offsets out of order or out of range");
        }
        let values_len = checked_len(&self.store, keys, segments)?;
        if !ascending(&self.value_ends, values_len) {
            return Err("value offsets out of order or out of range");
        }
        if let Some(blocks) = &self.blocks {
            if keys != 0 || !self.keys.is_empty() || !self.is_stored() {
                return Err("keys in blocks and in the pack, or values in the pack");
            }
            if blocks.index.len() != (blocks.count as usize).div_ceil(BLOCK_KEYS) {
                return Err("key blocks do not match the number of keys");
            }
            blocks.index.check(segments)?;
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

    /// Lists with no key, for a kind that has none.
    pub fn none() -> &'static KeyedLists {
        &NO_BLOCKS
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match &self.blocks {
            Some(b) => b.count as usize,
            None => self.key_ends.len(),
        }
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the keys are in blocks outside the pack ([`KeyBlocks`]): then [`KeyedLists::key`]
    /// and [`KeyedLists::find`] know none, and lookups go through [`KeyedLists::find_in`].
    pub fn keys_stored(&self) -> bool {
        self.blocks.is_some()
    }

    /// Key `k` (the empty string past the end, and for keys in blocks).
    pub fn key(&self, k: usize) -> &str {
        let start = match k {
            0 => 0,
            _ => self.key_ends.get(k - 1).copied().unwrap_or(0) as usize,
        };
        let end = self.key_ends.get(k).copied().unwrap_or(0) as usize;
        self.keys.get(start..end).unwrap_or_default()
    }

    /// The id of `key` (its rank among the sorted keys), if present among the keys the pack
    /// holds (never for keys in blocks: [`KeyedLists::find_in`] finds those).
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

    /// The lists whose keys are the first keys of this one's blocks and whose values are the
    /// blocks (empty lists when the keys are in the pack): what [`ListKind::PostingsKeys`] and
    /// [`ListKind::ReferencesKeys`] ids are read from and checked against.
    pub fn block_index(&self) -> &KeyedLists {
        match &self.blocks {
            Some(b) => &b.index,
            None => &NO_BLOCKS,
        }
    }

    /// The block that would hold `key`, when the keys are in blocks and the block is not in the
    /// pack (`None` otherwise, and for a key before the first).
    pub fn block_for(&self, key: &str) -> Option<u32> {
        let index = &self.blocks.as_ref()?.index;
        let b = index.find_le(key)?;
        index.must_read(b).then_some(b as u32)
    }

    /// Finds `key`, with the blocks of keys the pack does not hold taken from `blocks` (checked
    /// by the caller against [`KeyedLists::block_index`]); the block it lacks is the error
    /// ([`ListError::BlocksNeeded`]), and so is a block that does not decode.
    pub fn find_in<'a>(
        &'a self,
        key: &str,
        blocks: &dyn Fn(u32) -> Option<&'a [u8]>,
    ) -> Result<Option<Found>, ListError> {
        let Some(kb) = &self.blocks else {
            return Ok(self.find(key).map(|k| self.found(k)));
        };
        let index = &kb.index;
        let Some(b) = index.find_le(key) else {
            return Ok(None);
        };
        let bytes = index
            .value(b, blocks)
            .map_err(|b| ListError::BlocksNeeded(vec![b]))?;
        let first = b * BLOCK_KEYS;
        let count = (kb.count as usize).saturating_sub(first).min(BLOCK_KEYS);
        search_block(bytes, index.key(b), count, key)
            .map(|hit| {
                hit.map(|(i, at)| Found {
                    key: (first + i) as u32,
                    at,
                })
            })
            .ok_or(ListError::Block { block: b as u32 })
    }

    /// The id of the last key at most `key`.
    fn find_le(&self, key: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.key_ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1)
    }

    /// Key `k` of the keys in the pack, found.
    fn found(&self, k: usize) -> Found {
        let (start, end) = self.span(k);
        let sum = match &self.store {
            ListStore::Segments { sums, .. } => sums.get(k).copied().unwrap_or(0),
            ListStore::Inline(_) => 0,
        };
        Found {
            key: k as u32,
            at: ValueAt {
                start: start as u32,
                end: end as u32,
                sum,
            },
        }
    }

    /// The id a host reads `found`'s value by, among the lists of `kind`: it carries where the
    /// value is when the pack does not know (keys in blocks).
    pub fn id(&self, kind: ListKind, found: &Found) -> ListId {
        ListId {
            kind,
            key: found.key,
            at: self.keys_stored().then_some(found.at),
        }
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

    /// Value `id`'s bytes in the byte string of every value, and its check value.
    fn span_of(&self, id: &ListId) -> (usize, usize, Option<u32>) {
        match id.at {
            Some(at) => (
                at.start as usize,
                at.end.max(at.start) as usize,
                Some(at.sum),
            ),
            None => {
                let (start, end) = self.span(id.key as usize);
                let sum = match &self.store {
                    ListStore::Segments { sums, .. } => sums.get(id.key as usize).copied(),
                    ListStore::Inline(_) => None,
                };
                (start, end, sum)
            }
        }
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

    /// [`KeyedLists::must_read`] for value `id`.
    pub fn must_read_id(&self, id: &ListId) -> bool {
        let (start, end, _) = self.span_of(id);
        self.is_stored() && end > start
    }

    /// [`KeyedLists::must_read`] for a found key.
    pub fn must_read_found(&self, found: &Found) -> bool {
        self.is_stored() && found.at.end > found.at.start
    }

    /// Where key `k`'s value is read from, when it is not in the pack.
    pub fn range(&self, k: u32) -> Option<ListRange> {
        let (start, end) = self.span(k as usize);
        self.range_at(start, end)
    }

    /// Where value `id` is read from, when it is not in the pack (for keys in blocks, from
    /// where the id says it is).
    pub fn range_of(&self, id: &ListId) -> Option<ListRange> {
        let (start, end, _) = self.span_of(id);
        self.range_at(start, end)
    }

    fn range_at(&self, start: usize, end: usize) -> Option<ListRange> {
        range_in(&self.store, start, end)
    }

    /// Checks bytes read for key `k` against what the index recorded.
    pub fn verify(&self, k: u32, bytes: &[u8]) -> Result<(), ListError> {
        self.verify_of(
            &ListId {
                kind: ListKind::Postings,
                key: k,
                at: None,
            },
            bytes,
        )
    }

    /// Checks bytes read for value `id` against what the index recorded (for keys in blocks,
    /// what their block recorded, which the id carries).
    pub fn verify_of(&self, id: &ListId, bytes: &[u8]) -> Result<(), ListError> {
        let (start, end, sum) = self.span_of(id);
        let ok = self.is_stored() && bytes.len() == end - start && sum == Some(sum_of(bytes));
        if ok {
            Ok(())
        } else {
            Err(ListError::Checksum { key: id.key })
        }
    }

    /// Key `k`'s value: from the pack, or from `external` (values read from segments); the key
    /// id is the error when `external` lacks it.
    pub fn value<'a>(
        &'a self,
        k: usize,
        external: &dyn Fn(u32) -> Option<&'a [u8]>,
    ) -> Result<&'a [u8], u32> {
        self.value_of(&self.found(k), external)
    }

    /// A found key's value: from the pack, or from `external` (values read from segments); the
    /// key id is the error when `external` lacks it.
    pub fn value_of<'a>(
        &'a self,
        found: &Found,
        external: &dyn Fn(u32) -> Option<&'a [u8]>,
    ) -> Result<&'a [u8], u32> {
        let (start, end) = (found.at.start as usize, found.at.end as usize);
        match &self.store {
            ListStore::Inline(all) => Ok(all.get(start..end).unwrap_or_default()),
            ListStore::Segments { .. } if end <= start => Ok(&[]),
            ListStore::Segments { .. } => external(found.key).ok_or(found.key),
        }
    }

    /// Moves the values out into parts of at most `cap` bytes that hold whole values (a value
    /// larger than `cap` gets a part of its own), to be stored as the segments `first_segment`,
    /// `first_segment + 1`, ... of the pack; returns their bytes. Values of at most
    /// `inline_max` bytes in all stay in the pack. When the values move and the keys with
    /// their value ends and check values take more than `inline_max` bytes too, the keys move
    /// to blocks in the segments after the values' ([`KeyBlocks`]).
    pub fn split(&mut self, cap: usize, inline_max: usize, first_segment: u32) -> Vec<Vec<u8>> {
        let mut out = self.split_values(cap, inline_max, first_segment);
        if out.is_empty() || self.keys_stored() {
            return out;
        }
        let resident = self.keys.len() + 12 * self.key_ends.len();
        if resident > inline_max {
            let first = first_segment + out.len() as u32;
            out.extend(self.move_keys(cap, first));
        }
        out
    }

    /// The values' half of [`KeyedLists::split`].
    fn split_values(&mut self, cap: usize, inline_max: usize, first_segment: u32) -> Vec<Vec<u8>> {
        let ListStore::Inline(all) = &self.store else {
            return Vec::new();
        };
        if all.len() <= inline_max {
            return Vec::new();
        }
        let (store, out) = cut(all, &self.value_ends, cap, first_segment);
        self.store = store;
        out
    }

    /// Moves the keys, their value ends and check values into blocks ([`KeyBlocks`]) stored
    /// in parts of at most `cap` bytes as the segments `first_segment`, ...; returns their
    /// bytes. The values must be in segments already.
    fn move_keys(&mut self, cap: usize, first_segment: u32) -> Vec<Vec<u8>> {
        let ListStore::Segments { sums, .. } = &mut self.store else {
            return Vec::new();
        };
        let sums = std::mem::take(sums);
        let count = self.key_ends.len();
        let mut blocks: Vec<(&str, Vec<u8>)> = Vec::with_capacity(count.div_ceil(BLOCK_KEYS));
        for first in (0..count).step_by(BLOCK_KEYS) {
            let mut bytes = Vec::new();
            push_varint(&mut bytes, self.span(first).0 as u32);
            let mut previous: &[u8] = &[];
            for k in first..(first + BLOCK_KEYS).min(count) {
                let key = self.key(k).as_bytes();
                let shared = key.iter().zip(previous).take_while(|(a, b)| a == b).count();
                push_varint(&mut bytes, shared as u32);
                push_varint(&mut bytes, (key.len() - shared) as u32);
                bytes.extend_from_slice(&key[shared..]);
                let (start, end) = self.span(k);
                push_varint(&mut bytes, (end - start) as u32);
                bytes.extend_from_slice(&sums.get(k).copied().unwrap_or(0).to_le_bytes());
                previous = key;
            }
            blocks.push((self.key(first), bytes));
        }
        let mut index = KeyedLists::from_sorted(blocks);
        let out = index.split_values(cap, 0, first_segment);
        self.blocks = Some(Box::new(KeyBlocks {
            count: count as u32,
            index,
        }));
        self.keys = String::new();
        self.key_ends = Vec::new();
        self.value_ends = Vec::new();
        out
    }
}

/// Looks `key` up in the bytes of a block whose first key is `first_key` and which holds
/// `count` keys ([`KeyBlocks`]): its position in the block and where its value is, `Some(None)`
/// when absent, `None` when the block does not decode as that.
fn search_block(
    mut bytes: &[u8],
    first_key: &str,
    count: usize,
    key: &str,
) -> Option<Option<(usize, ValueAt)>> {
    let mut start = read_varint(&mut bytes)?;
    let mut current: Vec<u8> = Vec::with_capacity(key.len() + 16);
    for i in 0..count {
        let shared = read_varint(&mut bytes)? as usize;
        let rest = read_varint(&mut bytes)? as usize;
        if shared > current.len() || rest > bytes.len() {
            return None;
        }
        current.truncate(shared);
        current.extend_from_slice(&bytes[..rest]);
        bytes = &bytes[rest..];
        let len = read_varint(&mut bytes)?;
        let (sum, tail) = bytes.split_first_chunk::<4>()?;
        bytes = tail;
        let end = start.checked_add(len)?;
        if i == 0 && current != first_key.as_bytes() {
            return None;
        }
        match current.as_slice().cmp(key.as_bytes()) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => {
                let sum = u32::from_le_bytes(*sum);
                return Some(Some((i, ValueAt { start, end, sum })));
            }
            std::cmp::Ordering::Greater => return Some(None),
        }
        start = end;
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The bytes of `r` among `parts`, stored from segment `first` on.
    fn read(parts: &[Vec<u8>], first: u32, r: ListRange) -> Vec<u8> {
        let part = &parts[(r.segment - first) as usize];
        part[r.start as usize..(r.start + r.len) as usize].to_vec()
    }

    /// `lists` (split, its parts stored from segment `first` on) finding `key` as a reader
    /// does: its block read first, checked, then the key in it.
    fn find_by_range(
        lists: &KeyedLists,
        parts: &[Vec<u8>],
        first: u32,
        key: &str,
    ) -> Option<Found> {
        let block = lists.block_for(key).map(|b| {
            let bytes = read(parts, first, lists.block_index().range(b).unwrap());
            assert_eq!(lists.block_index().verify(b, &bytes), Ok(()));
            assert_eq!(
                lists.find_in(key, &|_| None),
                Err(ListError::BlocksNeeded(vec![b]))
            );
            (b, bytes)
        });
        let get = |b: u32| block.as_ref().filter(|x| x.0 == b).map(|x| x.1.as_slice());
        lists.find_in(key, &get).unwrap()
    }

    /// 1000 keys (eight blocks), every tenth with an empty value.
    fn thousand() -> Vec<(String, Vec<u8>)> {
        (0..1000u32)
            .map(|i| {
                let value = if i % 10 == 0 {
                    Vec::new()
                } else {
                    i.to_le_bytes().repeat(1 + i as usize % 3)
                };
                (format!("key{:04}", i * 2), value)
            })
            .collect()
    }

    #[test]
    fn keys_in_blocks_are_found_as_in_the_pack() {
        let entries = thousand();
        let whole = KeyedLists::from_sorted(entries.iter().map(|(k, v)| (k, v)));
        let mut split = whole.clone();
        let parts = split.split(2000, 0, 5);
        assert!(split.keys_stored() && split.is_stored());
        assert_eq!(split.len(), 1000);
        assert_eq!(split.block_index().len(), 1000usize.div_ceil(BLOCK_KEYS));
        assert_eq!(split.key(0), "", "no key stays in the pack");
        assert_eq!(split.check(5 + parts.len()), Ok(()));
        assert!(
            split.check(4 + parts.len()).is_err(),
            "a part in a missing segment"
        );
        // Every key (the first and last of each block among them), and absent keys before,
        // between (on both sides of a block boundary) and after them.
        let mut probes: Vec<String> = entries.iter().map(|e| e.0.clone()).collect();
        for i in [0usize, 127, 128, 255, 256, 999] {
            probes.push(format!("key{:04}", i * 2 + 1));
        }
        probes.extend(["", "a", "key", "key0000 ", "key1998x", "zzz"].map(String::from));
        for key in &probes {
            let expected = whole.find_in(key, &|_| None).unwrap();
            let found = find_by_range(&split, &parts, 5, key);
            assert_eq!(found.map(|f| f.key), expected.map(|f| f.key), "{key}");
            let (Some(found), Some(expected)) = (found, expected) else {
                continue;
            };
            let value = whole.value_of(&expected, &|_| None).unwrap();
            if value.is_empty() {
                assert!(!split.must_read_found(&found));
                assert_eq!(split.value_of(&found, &|_| None), Ok(&[][..]));
                continue;
            }
            let id = split.id(ListKind::Postings, &found);
            assert_eq!(id.at, Some(found.at));
            assert!(split.must_read_id(&id));
            assert_eq!(split.value_of(&found, &|_| None), Err(found.key));
            let bytes = read(&parts, 5, split.range_of(&id).unwrap());
            assert_eq!(bytes, value, "{key}");
            assert_eq!(split.verify_of(&id, &bytes), Ok(()));
            let mut bad = bytes.clone();
            bad[0] ^= 1;
            assert_eq!(
                split.verify_of(&id, &bad),
                Err(ListError::Checksum { key: found.key })
            );
        }
        // The pack keeps the blocks' first keys and places only.
        let bytes = postcard::to_allocvec(&split).unwrap();
        assert!(bytes.len() < 400, "{} bytes in the pack", bytes.len());
        let back: KeyedLists = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, split);
    }

    #[test]
    fn a_damaged_block_is_an_error_never_an_answer() {
        let entries = thousand();
        let mut split = KeyedLists::from_sorted(entries.iter().map(|(k, v)| (k, v)));
        let parts = split.split(2000, 0, 0);
        let b = split.block_for("key0300").unwrap();
        let block = read(&parts, 0, split.block_index().range(b).unwrap());
        // A copy damaged on the way fails the block's check value.
        let mut bad = block.clone();
        bad[9] ^= 0x20;
        assert_eq!(
            split.block_index().verify(b, &bad),
            Err(ListError::Checksum { key: b })
        );
        // A block that does not decode as the pack says (cut short, another block's bytes, a
        // shared prefix longer than the key before it) is named.
        let other = read(&parts, 0, split.block_index().range(b + 1).unwrap());
        for damaged in [&block[..20], &other[..], &[0, 5, 0][..], &[][..]] {
            assert_eq!(
                split.find_in("key0300", &|_| Some(damaged)),
                Err(ListError::Block { block: b })
            );
        }
        assert_eq!(
            ListId {
                kind: ListKind::PostingsKeys,
                key: b,
                at: None
            }
            .to_string(),
            format!("the block of terms #{b}")
        );
    }

    #[test]
    fn small_dictionaries_keep_their_keys_and_blocks_do_not_nest() {
        let entries = thousand();
        let whole = KeyedLists::from_sorted(entries.iter().map(|(k, _)| (k, [7u8; 100])));
        // Values above the limit (100 kB), keys under it (19 kB): only the values move.
        let mut split = whole.clone();
        assert!(!split.split(4000, 50_000, 0).is_empty());
        assert!(split.is_stored() && !split.keys_stored());
        assert_eq!(split.find("key0002"), Some(1));
        assert_eq!(split.block_for("key0002"), None);
        // Nothing above the limit: nothing moves.
        let mut kept = whole.clone();
        assert!(kept.split(4000, usize::MAX, 0).is_empty());
        assert_eq!(kept, whole);
        // A block index that claims blocks of its own is refused when decoding.
        let mut nested = whole.clone();
        nested.split(2000, 0, 0);
        let mut inner = nested.clone();
        if let Some(b) = inner.blocks.as_mut() {
            b.index.blocks = nested.blocks.clone();
        }
        let bytes = postcard::to_allocvec(&inner).unwrap();
        assert!(postcard::from_bytes::<KeyedLists>(&bytes).is_err());
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
            let parts = split.split_values(cap, 0, 3);
            proptest::prop_assert!(parts.iter().all(|p| !p.is_empty()));
            // With the keys in blocks too, each key is found the same.
            let mut blocked = split.clone();
            let key_parts = blocked.move_keys(cap, 3 + parts.len() as u32);
            let all: Vec<Vec<u8>> = parts.iter().chain(&key_parts).cloned().collect();
            for (k, (key, value)) in values.iter().enumerate() {
                proptest::prop_assert_eq!(split.find(key), Some(k));
                let found = find_by_range(&blocked, &all, 3, key).unwrap();
                proptest::prop_assert_eq!(found.key as usize, k);
                let id = blocked.id(ListKind::Postings, &found);
                if !value.is_empty() {
                    let bytes = read(&all, 3, blocked.range_of(&id).unwrap());
                    proptest::prop_assert_eq!(&bytes, value);
                    proptest::prop_assert_eq!(blocked.verify_of(&id, &bytes), Ok(()));
                }
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
