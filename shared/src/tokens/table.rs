//! A fast-starting exact counter built from tiktoken-rs's own vocabulary.
//!
//! Building tiktoken-rs's `o200k_base` tables takes about 250 ms on a laptop core (200,000
//! base64 lines decoded, then an encoder, a decoder and a sorted copy of every token), which is
//! most of the time of a short `ctxgate assemble`. Counting needs only the encoder and the
//! pre-tokenizer regex, so ctxgate exports the vocabulary once from tiktoken-rs into a compact
//! binary table (kept in the data directory, checksummed) and later processes load that table in
//! a few milliseconds. The counter runs tiktoken's algorithm unchanged: the same regex (same
//! `fancy-regex` version) splits the text into pieces, a piece in the vocabulary is one token,
//! any other piece is merged pair by pair, lowest rank first. An exported table is checked
//! against tiktoken-rs on a sample before it is written, and the tests compare the two counters
//! on random and real text.
//!
//! Table layout: `b"CTXGTOKS"`, u32 LE layout version, u32 LE encoding name length + name,
//! u32 LE entry count, then per entry u32 LE rank, u16 LE length, the token's bytes; then the
//! sha256 of everything before it.

use std::sync::OnceLock;

use fancy_regex::Regex;
use rustc_hash::FxHashMap;

use super::Encoding;
use crate::hash::Sha256Digest;

const MAGIC: &[u8; 8] = b"CTXGTOKS";
const LAYOUT: u32 = 1;

/// Why a table cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
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

/// The pre-tokenizer pattern of each encoding, as tiktoken-rs compiles it.
fn pattern(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::O200kBase | Encoding::O200kHarmony => tiktoken_rs::O200K_BASE_PAT_STR,
        Encoding::Cl100kBase => {
            "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s"
        }
        Encoding::P50kBase | Encoding::R50kBase => {
            "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s"
        }
    }
}

/// An encoding's vocabulary and regex, ready to count.
pub struct RankTable {
    encoding: Encoding,
    ranks: FxHashMap<&'static [u8], u32>,
    /// One regex per thread slot, compiled on the slot's first count. A fancy-regex `Regex`
    /// shares its scratch pool with its clones, and only the pool's first thread takes the fast
    /// path: every other thread paid a locked pool round trip per pre-token (about a tenth of a
    /// warm `/v1/context` on `ctxgate serve`'s worker threads), so each slot compiles its own.
    regexes: Box<[OnceLock<Regex>]>,
    /// The regex compiled (and so checked) at load: the fallback should a slot fail to compile
    /// the same pattern again, which it cannot.
    first: Regex,
}

/// Regex copies per table; threads beyond this share.
const REGEX_SLOTS: usize = 16;

fn thread_slot() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % REGEX_SLOTS;
    }
    SLOT.with(|s| *s)
}

impl std::fmt::Debug for RankTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankTable")
            .field("encoding", &self.encoding)
            .field("tokens", &self.ranks.len())
            .finish()
    }
}

/// Text that exercises every branch of the pre-tokenizers: code, contractions, numbers, runs of
/// spaces and newlines, punctuation runs, non-Latin scripts and emoji.
const SAMPLE: &str = "fn main() {\n    let x: Vec<u32> = (0..100_000).collect(); // I'll count\n\n\n\t}\r\n\
    It's DON'T we've 12345 3.14159 ===== ---->>>  \u{a0}trailing   \n\
    Größe naïve café 東京は晴れ 🙂👍🏽 Привет мир عربى ok?!\n    \n\
    SELECT * FROM t WHERE id = '42';\n<|endoftext|> https://example.com/a/b?c=d&e=f\n";

impl RankTable {
    /// Exports `encoding`'s vocabulary from tiktoken-rs (builds its tables: slow, once).
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
        let name = encoding.name().as_bytes();
        let mut out = Vec::with_capacity(entries.len() * 12 + 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&LAYOUT.to_le_bytes());
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (rank, bytes) in &entries {
            out.extend_from_slice(&rank.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            out.extend_from_slice(bytes);
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
    /// which self-checks against tiktoken-rs): neither copied nor re-hashed, so a Worker's
    /// first count costs only building the lookup map. The structure is still checked.
    pub fn load_static(encoding: Encoding, bytes: &'static [u8]) -> Result<Self, TableError> {
        if bytes.len() < 8 + 4 + 4 + 4 + 32 || &bytes[..8] != MAGIC {
            return Err(TableError::Invalid("bad magic"));
        }
        Self::parse(encoding, &bytes[..bytes.len() - 32])
    }

    fn parse(encoding: Encoding, body: &'static [u8]) -> Result<Self, TableError> {
        let mut at = 8;
        let u32_at = |at: &mut usize| -> Result<u32, TableError> {
            let v = body
                .get(*at..*at + 4)
                .ok_or(TableError::Invalid("truncated"))?;
            *at += 4;
            Ok(u32::from_le_bytes([v[0], v[1], v[2], v[3]]))
        };
        if u32_at(&mut at)? != LAYOUT {
            return Err(TableError::Invalid("unknown layout version"));
        }
        let name_len = u32_at(&mut at)? as usize;
        let name = body
            .get(at..at + name_len)
            .ok_or(TableError::Invalid("truncated"))?;
        at += name_len;
        if name != encoding.name().as_bytes() {
            return Err(TableError::WrongEncoding {
                found: String::from_utf8_lossy(name).into_owned(),
                expected: encoding.name(),
            });
        }
        let n = u32_at(&mut at)? as usize;
        let mut ranks = FxHashMap::with_capacity_and_hasher(n, Default::default());
        for _ in 0..n {
            let rank = u32_at(&mut at)?;
            let len = body
                .get(at..at + 2)
                .ok_or(TableError::Invalid("truncated"))?;
            let len = u16::from_le_bytes([len[0], len[1]]) as usize;
            at += 2;
            let token = body
                .get(at..at + len)
                .ok_or(TableError::Invalid("truncated"))?;
            at += len;
            ranks.insert(token, rank);
        }
        if at != body.len() {
            return Err(TableError::Invalid("trailing bytes"));
        }
        let first = Regex::new(pattern(encoding)).map_err(|_| TableError::Invalid("pattern"))?;
        let regexes: Box<[OnceLock<Regex>]> = (0..REGEX_SLOTS).map(|_| OnceLock::new()).collect();
        // The loading thread counts first (the self-check): its slot starts with this one.
        let _ = regexes[thread_slot()].set(first.clone());
        Ok(Self {
            encoding,
            ranks,
            regexes,
            first,
        })
    }

    /// The encoding this table counts.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Exact number of tokens of `text` (ordinary text; special-token strings count as text).
    pub fn count(&self, text: &str) -> usize {
        let mut n = 0;
        let regex = self.regexes[thread_slot()].get_or_init(|| {
            Regex::new(pattern(self.encoding)).unwrap_or_else(|_| self.first.clone())
        });
        for m in regex.find_iter(text) {
            // The regex cannot fail on these patterns; a backtracking limit would, and then the
            // rest of the text is counted byte by byte, which over-counts rather than under.
            let Ok(m) = m else {
                return n + text.len();
            };
            let piece = m.as_str().as_bytes();
            if piece.len() == 1 || self.ranks.contains_key(piece) {
                n += 1;
            } else {
                n += self.merge_count(piece);
            }
        }
        n
    }

    /// tiktoken's byte-pair merge: repeatedly join the adjacent pair whose bytes have the lowest
    /// rank (leftmost on ties) until no pair is in the vocabulary; the parts left are the tokens.
    fn merge_count(&self, piece: &[u8]) -> usize {
        let rank_of = |s: &[u8]| self.ranks.get(s).copied().unwrap_or(u32::MAX);
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

#[cfg(test)]
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
