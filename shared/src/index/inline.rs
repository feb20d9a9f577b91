//! Small fixed-size values of the chunk table stored inline instead of on the heap.
//!
//! A large repository's chunk table has hundreds of thousands of records; as `String` and
//! `Vec<u32>` each record's id and token counts were two heap allocations (24 + 24 bytes of
//! headers, the bytes themselves, the allocator's own overhead). In a Worker that is memory the
//! isolate keeps; inline they cost 25 and 24 bytes and no allocation. Both encode exactly as the
//! string and the sequence they replace.

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest chunk id: [`super::chunk_id`] writes 24 hex characters.
pub const CHUNK_ID_MAX: usize = 24;

/// A chunk's id, at most [`CHUNK_ID_MAX`] ASCII characters. It hashes, compares and orders as
/// its text (it can be looked up by `&str` through [`Borrow`](std::borrow::Borrow)); the bytes
/// past its length are always zero.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ChunkId {
    len: u8,
    bytes: [u8; CHUNK_ID_MAX],
}

/// Why a string is not a chunk id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a chunk id is at most {CHUNK_ID_MAX} ASCII characters, not {0:?}")]
pub struct BadChunkId(pub String);

impl ChunkId {
    /// `s` as an id.
    pub fn new(s: &str) -> Result<Self, BadChunkId> {
        if s.len() > CHUNK_ID_MAX || !s.is_ascii() {
            return Err(BadChunkId(s.to_string()));
        }
        let mut bytes = [0u8; CHUNK_ID_MAX];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        Ok(Self {
            len: s.len() as u8,
            bytes,
        })
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        // ASCII by construction, so always valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl Default for ChunkId {
    fn default() -> Self {
        Self {
            len: 0,
            bytes: [0; CHUNK_ID_MAX],
        }
    }
}

impl std::hash::Hash for ChunkId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for ChunkId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ChunkId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::ops::Deref for ChunkId {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ChunkId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for ChunkId {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for ChunkId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ChunkId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ChunkId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for ChunkId {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl From<ChunkId> for String {
    fn from(id: ChunkId) -> String {
        id.as_str().to_string()
    }
}

impl Serialize for ChunkId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ChunkId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ChunkId;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a string of at most {CHUNK_ID_MAX} ASCII characters")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ChunkId, E> {
                ChunkId::new(v).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// Most encodings a pack counts: there are five.
pub const COUNTS_MAX: usize = 5;

/// Exact token counts, one per encoding the pack counts (at most [`COUNTS_MAX`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TokenCounts {
    len: u8,
    counts: [u32; COUNTS_MAX],
}

/// Why counts do not fit.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("at most {COUNTS_MAX} token counts, not {0}")]
pub struct TooManyCounts(pub usize);

impl TokenCounts {
    /// The counts of `values`.
    pub fn new(values: &[u32]) -> Result<Self, TooManyCounts> {
        if values.len() > COUNTS_MAX {
            return Err(TooManyCounts(values.len()));
        }
        let mut counts = [0u32; COUNTS_MAX];
        counts[..values.len()].copy_from_slice(values);
        Ok(Self {
            len: values.len() as u8,
            counts,
        })
    }
}

impl std::ops::Deref for TokenCounts {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.counts[..usize::from(self.len)]
    }
}

impl std::ops::DerefMut for TokenCounts {
    fn deref_mut(&mut self) -> &mut [u32] {
        &mut self.counts[..usize::from(self.len)]
    }
}

impl<'a> IntoIterator for &'a TokenCounts {
    type Item = &'a u32;
    type IntoIter = std::slice::Iter<'a, u32>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for TokenCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// Counts beyond [`COUNTS_MAX`] are dropped; every pack counts fewer encodings than exist.
impl FromIterator<u32> for TokenCounts {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut out = Self::default();
        for (slot, v) in out.counts.iter_mut().zip(iter) {
            *slot = v;
            out.len += 1;
        }
        out
    }
}

impl Serialize for TokenCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for TokenCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TokenCounts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "at most {COUNTS_MAX} token counts")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TokenCounts, A::Error> {
                let mut out = TokenCounts::default();
                while let Some(v) = seq.next_element::<u32>()? {
                    let slot = out
                        .counts
                        .get_mut(usize::from(out.len))
                        .ok_or_else(|| A::Error::custom(TooManyCounts(COUNTS_MAX + 1)))?;
                    *slot = v;
                    out.len += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_encode_as_the_strings_they_replace() {
        let id = ChunkId::new("0123456789abcdef01234567").unwrap();
        let as_string = postcard::to_allocvec(&"0123456789abcdef01234567".to_string()).unwrap();
        assert_eq!(postcard::to_allocvec(&id).unwrap(), as_string);
        assert_eq!(postcard::from_bytes::<ChunkId>(&as_string).unwrap(), id);
        assert_eq!(&*id, "0123456789abcdef01234567");
        let long = postcard::to_allocvec(&"x".repeat(25)).unwrap();
        assert!(postcard::from_bytes::<ChunkId>(&long).is_err());
        assert!(ChunkId::new("é").is_err());
        assert_eq!(ChunkId::new("").unwrap().as_str(), "");
    }

    #[test]
    fn ids_are_found_by_their_text_and_ordered_as_it() {
        let mut set = std::collections::HashSet::new();
        set.insert(ChunkId::new("abc").unwrap());
        assert!(set.contains("abc"));
        assert!(!set.contains("abd"));
        let (b, ab) = (ChunkId::new("b").unwrap(), ChunkId::new("ab").unwrap());
        assert_eq!(b.cmp(&ab), "b".cmp("ab"));
    }

    #[test]
    fn counts_encode_as_the_vectors_they_replace() {
        let c = TokenCounts::new(&[7, 300_000]).unwrap();
        let as_vec = postcard::to_allocvec(&vec![7u32, 300_000]).unwrap();
        assert_eq!(postcard::to_allocvec(&c).unwrap(), as_vec);
        assert_eq!(postcard::from_bytes::<TokenCounts>(&as_vec).unwrap(), c);
        assert_eq!(c[1], 300_000);
        let six = postcard::to_allocvec(&vec![1u32; 6]).unwrap();
        assert!(postcard::from_bytes::<TokenCounts>(&six).is_err());
        assert_eq!(TokenCounts::new(&[1; 6]), Err(TooManyCounts(6)));
    }
}
