//! A fast-starting exact counter built from tiktoken-rs's own vocabulary.
//!
//! Building tiktoken-rs's `o200k_base` tables takes about 250 ms on a laptop core (200,000
//! base64 lines decoded, then an encoder, a decoder and a sorted copy of every token), which is
//! most of the time of a short `ctxgate assemble`. Counting needs only the encoder and the
//! pre-tokenizer regex, so ctxgate exports the vocabulary once from tiktoken-rs into a compact
//! binary table (kept in the data directory, checksummed) and later processes load that table in
//! a few milliseconds. The counter runs tiktoken's algorithm unchanged: the same pre-tokenizer
//! splits the text into pieces (written out as scanners in [`super::split`], which match the
//! regexes piece for piece), a piece in the vocabulary is one token,
//! any other piece is merged pair by pair, lowest rank first. An exported table is checked
//! against tiktoken-rs on a sample before it is written, and the tests compare the two counters
//! on random and real text.
//!
//! Table layout (version 2): `b"CTXGTOKS"`, u32 LE layout version, u32 LE encoding name length +
//! name, u32 LE token count, u32 LE length of the entries, the entries (per token u32 LE rank,
//! u16 LE length, its bytes), u32 LE slot count (a power of two, at least twice the tokens),
//! the slots (u32 LE offset of an entry, or `u32::MAX`: an open-addressing index by
//! [`slot_hash`], linear probing); then the sha256 of everything before it. Loading checks the
//! structure and builds nothing, so a table compiled into the Worker is ready at once.

use super::{Encoding, split};
use crate::hash::Sha256Digest;

const MAGIC: &[u8; 8] = b"CTXGTOKS";
/// The table layout this build reads and writes (hosts name their files by it).
pub const LAYOUT: u32 = 2;

/// Why a table cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TableError {
    /// Not a table, another layout, or damaged.
    #[error("token table is invalid: {0}")]
    Invalid(&'static str),
    /// A table for another encoding.
    #[error("token table is for {found}, not {expected}")]
    WrongEncoding {
        /// Encoding in the file.
        found: String,
        /// Encoding asked for.
        expected: &'static str,
    },
    /// The exported table does not count like tiktoken-rs (never expected; the table is not used).
    #[error("token table for {0} disagrees with tiktoken-rs on the self-check sample")]
    SelfCheck(&'static str),
}

/// An encoding's vocabulary, ready to count.
pub struct RankTable {
    encoding: Encoding,
    /// The vocabulary as written by [`RankTable::export`]: per token, u32 LE rank, u16 LE
    /// length, its bytes.
    entries: &'static [u8],
    /// Open-addressing hash index over `entries`, built at export: per slot a u32 LE offset
    /// into `entries` (or [`EMPTY`]); the slot count is a power of two. Loading builds nothing,
    /// which is what makes a fresh Worker isolate's first count cheap.
    slots: &'static [u8],
    mask: usize,
}

/// A slot with no token.
const EMPTY: u32 = u32::MAX;

/// The index's hash: defined here rather than taken from a crate, because tables written to
/// disk by one build are read by another and the two must agree forever (the layout version
/// changes if this does). Eight bytes at a time, multiply-xorshift mixing.
fn slot_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word)).wrapping_mul(K);
        h ^= h >> 29;
    }
    h ^ (h >> 32)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let v = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([v[0], v[1], v[2], v[3]]))
}

impl std::fmt::Debug for RankTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankTable")
            .field("encoding", &self.encoding)
            .field("slots", &(self.mask + 1))
            .finish()
    }
}

/// Text that exercises every branch of the pre-tokenizers: code, contractions, numbers, runs of
/// spaces and newlines, punctuation runs, non-Latin scripts and emoji.
#[cfg(feature = "reference")]
const SAMPLE: &str = "fn main() {\n    let x: Vec<u32> = (0..100_000).collect(); // I'll count\n\n\n\t}\r\n\
    It's DON'T we've 12345 3.14159 ===== ---->>>  \u{a0}trailing   \n\
    Größe naïve café 東京は晴れ 🙂👍🏽 Привет мир عربى ok?!\n    \n\
    SELECT * FROM t WHERE id = '42';\n<|endoftext|> https://example.com/a/b?c=d&e=f\n";

impl RankTable {
    /// Exports `encoding`'s vocabulary from tiktoken-rs (builds its tables: slow, once).
    #[cfg(feature = "reference")]
    pub fn export(encoding: Encoding) -> Result<Vec<u8>, TableError> {
        let bpe = encoding.reference();
        let mut specials: Vec<u32> = bpe
            .special_tokens()
            .iter()
            .flat_map(|s| bpe.encode_with_special_tokens(s))
            .collect();
        specials.sort_unstable();
        let mut entries: Vec<(u32, Vec<u8>)> = Vec::with_capacity(200_000);
        let mut misses = 0u32;
        let mut rank = 0u32;
        // Ranks are dense with a few gaps; stop after a long run of unknown ranks.
        while misses < 4096 {
            if specials.binary_search(&rank).is_err() {
                match bpe.decode_bytes(&[rank]) {
                    Ok(bytes) => {
                        entries.push((rank, bytes));
                        misses = 0;
                    }
                    Err(_) => misses += 1,
                }
            }
            rank += 1;
        }
        let name = encoding.table_name().as_bytes();
        let mut blob = Vec::with_capacity(entries.len() * 12);
        let slot_count = (entries.len() * 2).next_power_of_two();
        let mask = slot_count - 1;
        let mut slots = vec![EMPTY; slot_count];
        for (rank, bytes) in &entries {
            let offset = u32::try_from(blob.len()).map_err(|_| TableError::Invalid("too large"))?;
            let mut slot = slot_hash(bytes) as usize & mask;
            while slots[slot] != EMPTY {
                slot = (slot + 1) & mask;
            }
            slots[slot] = offset;
            blob.extend_from_slice(&rank.to_le_bytes());
            blob.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            blob.extend_from_slice(bytes);
        }
        let mut out = Vec::with_capacity(blob.len() + slot_count * 4 + 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&LAYOUT.to_le_bytes());
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(blob.len() as u32).to_le_bytes());
        out.extend_from_slice(&blob);
        out.extend_from_slice(&(slot_count as u32).to_le_bytes());
        for offset in slots {
            out.extend_from_slice(&offset.to_le_bytes());
        }
        let digest = Sha256Digest::of(&out);
        out.extend_from_slice(&digest.0);
        let table = RankTable::load(encoding, out.clone())?;
        for line in SAMPLE.split_inclusive('\n').chain([SAMPLE]) {
            if table.count(line) != bpe.count_ordinary(line) {
                return Err(TableError::SelfCheck(encoding.name()));
            }
        }
        Ok(out)
    }

    /// Loads a table written by [`RankTable::export`]. The bytes are kept for the life of the
    /// process (tables are installed once and shared).
    pub fn load(encoding: Encoding, bytes: Vec<u8>) -> Result<Self, TableError> {
        if bytes.len() < 8 + 4 + 4 + 4 + 32 || &bytes[..8] != MAGIC {
            return Err(TableError::Invalid("bad magic"));
        }
        let (body, digest) = bytes.split_at(bytes.len() - 32);
        if Sha256Digest::of(body).0 != digest {
            return Err(TableError::Invalid("checksum mismatch"));
        }
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        Self::parse(encoding, &bytes[..bytes.len() - 32])
    }

    /// Loads a table compiled into the program (a host's build script ran [`RankTable::export`],
    /// which self-checks against tiktoken-rs): neither copied nor re-hashed nor indexed (the
    /// index is in the table). The structure is still checked.
    pub fn load_static(encoding: Encoding, bytes: &'static [u8]) -> Result<Self, TableError> {
        if bytes.len() < 8 + 4 + 4 + 4 + 32 || &bytes[..8] != MAGIC {
            return Err(TableError::Invalid("bad magic"));
        }
        Self::parse(encoding, &bytes[..bytes.len() - 32])
    }

    fn parse(encoding: Encoding, body: &'static [u8]) -> Result<Self, TableError> {
        let truncated = TableError::Invalid("truncated");
        let mut at = 8;
        let next_u32 = |at: &mut usize| -> Result<u32, TableError> {
            let v = u32_at(body, *at).ok_or(TableError::Invalid("truncated"))?;
            *at += 4;
            Ok(v)
        };
        if next_u32(&mut at)? != LAYOUT {
            return Err(TableError::Invalid("unknown layout version"));
        }
        let span = |at: usize, len: usize| at.checked_add(len).filter(|&end| end <= body.len());
        let name_len = next_u32(&mut at)? as usize;
        let name_end = span(at, name_len).ok_or(truncated.clone())?;
        let name = &body[at..name_end];
        at = name_end;
        if name != encoding.table_name().as_bytes() {
            return Err(TableError::WrongEncoding {
                found: String::from_utf8_lossy(name).into_owned(),
                expected: encoding.table_name(),
            });
        }
        let _tokens = next_u32(&mut at)?;
        let entries_len = next_u32(&mut at)? as usize;
        let entries_end = span(at, entries_len).ok_or(truncated.clone())?;
        let entries = &body[at..entries_end];
        at = entries_end;
        let slot_count = next_u32(&mut at)? as usize;
        if !slot_count.is_power_of_two() {
            return Err(TableError::Invalid("slot count is not a power of two"));
        }
        let slots_end = slot_count
            .checked_mul(4)
            .and_then(|len| span(at, len))
            .ok_or(truncated)?;
        let slots = &body[at..slots_end];
        if slots_end != body.len() {
            return Err(TableError::Invalid("trailing bytes"));
        }
        Ok(Self {
            encoding,
            entries,
            slots,
            mask: slot_count - 1,
        })
    }

    /// The rank of `token`, if it is in the vocabulary. A damaged index answers `None` rather
    /// than panicking (offsets are read with bounds checks).
    fn rank(&self, token: &[u8]) -> Option<u32> {
        let mut slot = slot_hash(token) as usize & self.mask;
        // Every probe sequence ends at an empty slot: the index is at most half full.
        for _ in 0..=self.mask {
            let offset = u32_at(self.slots, slot * 4)?;
            if offset == EMPTY {
                return None;
            }
            let at = offset as usize;
            let len = self.entries.get(at.checked_add(4)?..at.checked_add(6)?)?;
            let len = u16::from_le_bytes([len[0], len[1]]) as usize;
            if self.entries.get(at + 6..(at + 6).checked_add(len)?)? == token {
                return u32_at(self.entries, at);
            }
            slot = (slot + 1) & self.mask;
        }
        None
    }

    /// The encoding this table counts.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Exact number of tokens of `text` (ordinary text; special-token strings count as text).
    pub fn count(&self, text: &str) -> usize {
        let mut n = 0;
        split::for_each_piece(self.encoding, text, |piece| {
            n += self.piece_count(piece.as_bytes());
        });
        n
    }

    /// The number of tokens of one pre-token.
    pub(super) fn piece_count(&self, piece: &[u8]) -> usize {
        if piece.len() == 1 || self.rank(piece).is_some() {
            1
        } else {
            self.merge_count(piece)
        }
    }

    /// tiktoken's byte-pair merge: repeatedly join the adjacent pair whose bytes have the lowest
    /// rank (leftmost on ties) until no pair is in the vocabulary; the parts left are the tokens.
    fn merge_count(&self, piece: &[u8]) -> usize {
        let rank_of = |s: &[u8]| self.rank(s).unwrap_or(u32::MAX);
        // parts[i] = (start of part i, rank of part i joined with part i+1)
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        for i in 0..piece.len() - 1 {
            parts.push((i, rank_of(&piece[i..i + 2])));
        }
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        loop {
            let mut min = (u32::MAX, usize::MAX);
            for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < min.0 {
                    min = (r, i);
                }
            }
            if min.0 == u32::MAX {
                break;
            }
            let i = min.1;
            let joined_rank = |parts: &[(usize, u32)], j: usize| {
                if j + 3 < parts.len() {
                    rank_of(&piece[parts[j].0..parts[j + 3].0])
                } else {
                    u32::MAX
                }
            };
            if i > 0 {
                parts[i - 1].1 = joined_rank(&parts, i - 1);
            }
            parts[i].1 = joined_rank(&parts, i);
            parts.remove(i + 1);
        }
        parts.len() - 1
    }
}

#[cfg(all(test, feature = "reference"))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    fn table(e: Encoding) -> &'static RankTable {
        static T: [OnceLock<RankTable>; 5] = [const { OnceLock::new() }; 5];
        T[e as usize].get_or_init(|| RankTable::load(e, RankTable::export(e).unwrap()).unwrap())
    }

    #[test]
    fn every_encoding_exports_and_matches_on_the_sample() {
        for e in Encoding::ALL {
            let t = table(e);
            assert_eq!(t.count(SAMPLE), e.reference().count_ordinary(SAMPLE), "{e}");
        }
    }

    #[test]
    fn the_index_finds_every_token_with_its_rank() {
        for e in [
            Encoding::O200kBase,
            Encoding::Cl100kBase,
            Encoding::R50kBase,
        ] {
            let t = table(e);
            let bpe = e.reference();
            let mut found = 0;
            for rank in 0..t.mask as u32 {
                if let Ok(bytes) = bpe.decode_bytes(&[rank]) {
                    if bpe.special_tokens().iter().any(|s| s.as_bytes() == bytes) {
                        continue;
                    }
                    assert_eq!(t.rank(&bytes), Some(rank), "{e} rank {rank}");
                    found += 1;
                }
            }
            assert!(found > 50_000, "{e}: {found}");
            assert_eq!(t.rank(b"\xff\xfe not a token at all"), None);
        }
    }

    #[test]
    fn harmony_counts_with_the_o200k_table() {
        let harmony = RankTable::export(Encoding::O200kHarmony).unwrap();
        assert_eq!(harmony, RankTable::export(Encoding::O200kBase).unwrap());
        let t = RankTable::load(Encoding::O200kHarmony, harmony).unwrap();
        assert_eq!(
            t.count(SAMPLE),
            Encoding::O200kHarmony.reference().count_ordinary(SAMPLE)
        );
        assert!(matches!(
            RankTable::load(
                Encoding::Cl100kBase,
                RankTable::export(Encoding::R50kBase).unwrap()
            ),
            Err(TableError::WrongEncoding { .. })
        ));
    }

    #[test]
    fn damaged_tables_are_refused() {
        let mut bytes = RankTable::export(Encoding::R50kBase).unwrap();
        assert!(matches!(
            RankTable::load(Encoding::P50kBase, bytes.clone()),
            Err(TableError::WrongEncoding { .. })
        ));
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        assert!(matches!(
            RankTable::load(Encoding::R50kBase, bytes),
            Err(TableError::Invalid("checksum mismatch"))
        ));
        assert!(RankTable::load(Encoding::R50kBase, b"nope".to_vec()).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn counts_like_tiktoken(text in "(\\PC|\\s|[ \\t\\n]{1,8}|[a-zA-Z_]{1,12}|[0-9]{1,6}|[!-/:-@]{1,5}){0,60}") {
            for e in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::P50kBase] {
                prop_assert_eq!(table(e).count(&text), e.reference().count_ordinary(&text), "{}", e);
            }
        }
    }
}
