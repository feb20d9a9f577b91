//! The index pack: one immutable file per published index version.
//!
//! # Format (version 15; version 14 stored each file's and chunk's sha256 as 32 numbers instead of a byte string, version 13 had no path tables (built by every reader on a version's first query), version 12 had no history section, version 11 had no delta section (a version in layers: [`delta`]), version 10 kept every summary text, every dictionary's keys and BM25's document frequencies in the pack, version 9 decoded each section whole instead of its tables' frames, version 8 had one postcard body instead of sections, version 7 kept the symbol references in the pack whatever their size,
//! version 6 kept every index's postings in the pack, version 5 stored
//! BM25 postings as plain vectors, version 4 had no symbol
//! references and no recency, version 3 no import graph and unstemmed terms, version 2 no
//! summaries, version 1 no ctime or inode in the file stat)
//!
//! Summaries ([`summaries::StoredSummaries`]: their texts apart, by range once
//! large), the import graph, the symbol references and the
//! files' recency, the chunks' history and the paths' terms and kinds come at the end of the body.
//!
//! ```text
//! offset  size  content
//! 0       8     magic  b"CTXGPACK"
//! 8       4     format version, u32 little-endian (FORMAT_VERSION)
//! 12      ..    body: length-prefixed frames (u32 LE) of postcard values (varint
//!               integers, length-prefixed sequences and strings), the `IndexPack`'s fields
//!               in declaration order, the large tables as a count and frames of records
//!               ([`sections`])
//! ```
//!
//! The body holds, in order: the pack's metadata ([`PackMeta`]: project name, the tiktoken
//! encodings counted, chunking options), the file table ([`FileEntry`]: path, sha256, size,
//! the stat used to skip re-hashing, language, why it was skipped, its chunks), the chunk table
//! ([`ChunkRecord`]: id, file, kind, symbol, lines, bytes, sha256, token counts per encoding,
//! where its text is stored), the list of chunk segments, the BM25 index whose document
//! ids are chunk indexes (its sorted terms in one string, its postings as one byte string of
//! varint document gaps and term frequencies: [`crate::lexical::Bm25Index`]; a large index's
//! postings are in segments of their own, read by range per query term, and so are its
//! terms, in blocks of 128 with their postings' places and check values, of which the pack
//! keeps each block's first term and place: [`lists::KeyedLists`], [`lists::KeyBlocks`]), the
//! summaries, the import graph between files
//! ([`ImportGraph`]) and
//! the users of each defined symbol ([`References`], the same keyed lists: a large index's in
//! segments, read by range per named symbol, its names in blocks like the terms), how many commits ago each file last changed
//! ([`Recency`]), the messages of the commits that wrote each chunk's lines ([`History`]) and
//! the terms of the files' paths with each file's kinds ([`path_tables::PathTables`]).
//!
//! Chunk texts are not in the pack: they live in content-addressed segments (a segment is the
//! concatenation of chunk texts, named by its own sha256), so identical chunks are stored once
//! and a re-index stores only chunks that did not exist before. A segment holds at most 4 MiB
//! of new text (the indexer's `SEGMENT_CAP`; one larger chunk gets a segment of its own), so no
//! object of a large repository nears any store's size limit. Readers read a chunk's text by
//! byte range (`segment_offset`, its length) and check it against the chunk's sha256; the edge
//! reads only the ranges a query's pieces need (`ctxgate-edge`'s `texts` module).
//!
//! Any change to the body's layout bumps [`FORMAT_VERSION`]; a reader refuses other versions
//! with [`PackError::Version`], whose message tells the user to re-index.

pub mod build;
mod check;
pub mod delta;
pub mod derived;
pub mod file_calls;
pub mod gc;
pub mod history;
pub mod inline;
pub mod layout;
pub mod open;
pub mod path_tables;
pub mod recency;
pub mod references;
mod sections;
pub mod summaries;

pub use history::History;
pub use inline::{ChunkId, TokenCounts};
pub use recency::Recency;
pub use references::References;
pub use sections::PackReader;

use serde::{Deserialize, Serialize};

use crate::chunk::ChunkKind;
use crate::error_code::ErrorCode;
use crate::graph::ImportGraph;
use crate::hash::Sha256Digest;
use crate::lexical::Bm25Index;
use crate::lists;
use crate::tokens::Encoding;

/// Magic bytes at the start of every pack.
pub const MAGIC: &[u8; 8] = b"CTXGPACK";
/// The body layout this build reads and writes.
pub const FORMAT_VERSION: u32 = 15;

/// Pack-wide facts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PackMeta {
    /// Project name (the folder's name for local repositories).
    pub project: String,
    /// Encodings whose counts each chunk carries, in the order of [`ChunkRecord::tokens`].
    pub encodings: Vec<Encoding>,
    /// Largest chunk in bytes at indexing time.
    pub max_chunk_bytes: u32,
    /// Bytes of the indexed text.
    pub text_bytes: u64,
    /// When indexing started, nanoseconds since the epoch; a file modified after this instant may
    /// have changed without its stat showing it, so it is re-hashed next time.
    pub indexed_at_ns: i64,
    /// The indexing settings (filters, chunk sizes) in a canonical form; a re-index with other
    /// settings cannot reuse this pack's files.
    pub settings: String,
}

/// What the indexer saw of a file's metadata, to avoid re-reading unchanged files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the epoch (0 where the platform has none): it moves
    /// even when a tool pins the modification time.
    pub ctime_ns: i64,
    /// Inode number (0 where the platform has none): a file replaced by another differs.
    pub inode: u64,
}

/// One file of the repository.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// sha256 of the file's bytes.
    #[serde(with = "crate::hash::digest_bytes")]
    pub sha256: Sha256Digest,
    /// Stat at indexing time.
    pub stat: FileStat,
    /// Language label (held inline).
    pub language: compact_str::CompactString,
    /// Why the file was not chunked, if it was not.
    pub skipped: Option<String>,
    /// Its chunks: `chunks[first_chunk .. first_chunk + chunk_count]`.
    pub first_chunk: u32,
    /// Number of chunks.
    pub chunk_count: u32,
}

/// One chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// Stable id: derived from path, content and position among identical chunks of the file,
    /// so it survives edits elsewhere in the file.
    pub id: ChunkId,
    /// Index into the file table.
    pub file: u32,
    /// What it holds.
    pub kind: ChunkKind,
    /// The symbol it defines (most are short enough to be held inline, without an allocation
    /// per chunk).
    pub symbol: Option<compact_str::CompactString>,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// First byte in the file (32 bits: files the indexer reads are far smaller, and the
    /// chunk table is resident in every reader — postcard writes u32 and u64 alike).
    pub byte_start: u32,
    /// One past the last byte.
    pub byte_end: u32,
    /// sha256 of the chunk's text.
    #[serde(with = "crate::hash::digest_bytes")]
    pub sha256: Sha256Digest,
    /// Exact token counts, one per [`PackMeta::encodings`].
    pub tokens: TokenCounts,
    /// Index into [`IndexPack::segments`].
    pub segment: u32,
    /// Offset of the text in its segment (segments hold at most 4 MiB, or one chunk).
    pub segment_offset: u32,
}

impl ChunkRecord {
    /// Length of the text in bytes.
    pub fn len(&self) -> u64 {
        u64::from(self.byte_end.saturating_sub(self.byte_start))
    }

    /// Whether the chunk is empty (never, for chunks the indexer writes).
    pub fn is_empty(&self) -> bool {
        self.byte_end == self.byte_start
    }
}

/// A published index version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexPack {
    /// Pack-wide facts.
    pub meta: PackMeta,
    /// Files, sorted by path.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub files: Vec<FileEntry>,
    /// Chunks, grouped by file in file order.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub chunks: Vec<ChunkRecord>,
    /// Segment names (sha256 hex of each segment's bytes).
    pub segments: Vec<String>,
    /// BM25 over chunks (document id = chunk index).
    pub lexical: Bm25Index,
    /// File, directory and project summaries (their texts by range once large).
    pub summaries: summaries::StoredSummaries,
    /// Imports between files.
    pub graph: ImportGraph,
    /// Chunks that use each defined symbol.
    pub references: References,
    /// How recently each file changed in the repository's git history.
    pub recency: Recency,
    /// What the commits that wrote each chunk's lines said (numbered as the version's chunks,
    /// in a delta pack too).
    pub history: History,
    /// The terms and kinds of the files' paths ([`path_tables`]), as the indexer wrote them;
    /// `None` in a version merged from a base and a delta (its reader builds them:
    /// [`IndexPack::paths`]).
    pub paths: Option<path_tables::PathTables>,
    /// In a delta pack ([`delta`]): what it changes in its base beyond its own files. `None`
    /// in a whole pack.
    pub delta: Option<delta::DeltaFacts>,
    /// In a version opened from a base and a delta: the delta's lists and how the base's chunk
    /// numbers map to the version's. Not stored.
    #[serde(skip)]
    pub overlay: Option<Box<delta::Overlay>>,
    /// Per-file facts computed on first use ([`IndexPack::derived`]); not stored.
    #[serde(skip)]
    pub derived: std::sync::OnceLock<derived::Derived>,
}

/// Why a pack cannot be opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PackError {
    /// Not a pack at all.
    #[error("not a ctxgate index pack (bad magic bytes)")]
    Magic,
    /// Written by another format version.
    #[error(
        "index format version {found} is not supported by this ctxgate (it reads version {expected}); \
         re-index the repository with `ctxgate index --force DIR`"
    )]
    Version {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// The body does not decode.
    #[error("index pack is corrupt: {0}")]
    Corrupt(String),
}

impl PackError {
    /// The machine-readable code every host reports for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            PackError::Version { .. } => ErrorCode::IndexVersionMismatch,
            _ => ErrorCode::IndexCorrupt,
        }
    }
}

impl IndexPack {
    /// Serializes the pack with its header.
    pub fn encode(&self) -> Result<Vec<u8>, PackError> {
        sections::encode(self)
    }

    /// Reads the header of `bytes` and returns the format version it declares.
    pub fn peek_version(bytes: &[u8]) -> Result<u32, PackError> {
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err(PackError::Magic);
        }
        let mut v = [0u8; 4];
        v.copy_from_slice(&bytes[8..12]);
        Ok(u32::from_le_bytes(v))
    }

    /// Opens a pack, refusing other format versions ([`PackReader`] decodes one as its parts
    /// arrive).
    pub fn decode(bytes: &[u8]) -> Result<Self, PackError> {
        let mut reader = PackReader::new();
        reader.push(bytes)?;
        reader.finish()
    }

    /// Per-file facts every query reads, computed the first time they are asked for.
    pub fn derived(&self) -> &derived::Derived {
        self.derived
            .get_or_init(|| derived::Derived::of(&self.chunks, &self.graph))
    }

    /// The terms and kinds of the files' paths: the pack's own, or (a merged version, a pack
    /// built without them) built the first time they are asked for.
    pub fn paths(&self) -> &path_tables::PathTables {
        match &self.paths {
            Some(p) => p,
            None => self
                .derived()
                .paths
                .get_or_init(|| path_tables::PathTables::of(&self.files, &self.chunks)),
        }
    }

    /// The pack's keyed lists of `kind` (none for the summary texts, which are by position:
    /// [`summaries::StoredSummaries::texts`]).
    pub fn lists(&self, kind: lists::ListKind) -> &lists::KeyedLists {
        self.keyed(kind).unwrap_or(lists::KeyedLists::none())
    }

    /// The keyed lists value `kind` is read from (`None` for the summary texts).
    fn keyed(&self, kind: lists::ListKind) -> Option<&lists::KeyedLists> {
        use lists::ListKind as K;
        let delta = |f: fn(&delta::Overlay) -> &lists::KeyedLists| {
            Some(self.overlay.as_deref().map_or(lists::KeyedLists::none(), f))
        };
        match kind {
            K::Postings => Some(self.lexical.lists()),
            K::References => Some(self.references.lists()),
            K::PostingsKeys => Some(self.lexical.lists().block_index()),
            K::ReferencesKeys => Some(self.references.lists().block_index()),
            K::SummaryTexts => None,
            K::DeltaPostings => delta(|o| &o.postings),
            K::DeltaReferences => delta(|o| &o.references),
            K::DeltaPostingsKeys => delta(|o| o.postings.block_index()),
            K::DeltaReferencesKeys => delta(|o| o.references.block_index()),
        }
    }

    /// Where list value `id` is read from, when the pack does not hold it (a delta's lists'
    /// segments are numbered after the base's).
    pub fn list_range(&self, id: lists::ListId) -> Option<lists::ListRange> {
        match self.keyed(id.kind) {
            Some(l) => {
                let r = l.range_of(&id)?;
                let offset = match (&self.overlay, id.kind.is_delta()) {
                    (Some(o), true) => o.segment_offset,
                    _ => 0,
                };
                Some(lists::ListRange {
                    segment: r.segment + offset,
                    ..r
                })
            }
            None => self.summaries.text_range(id.key),
        }
    }

    /// Checks bytes read for list value `id` against what the pack recorded.
    pub fn verify_list(&self, id: lists::ListId, bytes: &[u8]) -> Result<(), lists::ListError> {
        match self.keyed(id.kind) {
            Some(l) => l.verify_of(&id, bytes),
            None => self.summaries.text_verify(id.key, bytes),
        }
    }

    /// Whether list value `id` must be read from a segment (it is outside the pack and not
    /// empty).
    pub fn must_read(&self, id: lists::ListId) -> bool {
        match self.keyed(id.kind) {
            Some(l) => l.must_read_id(&id),
            None => self.summaries.text_must_read(id.key),
        }
    }

    /// Position of `encoding` among the counted encodings.
    pub fn encoding_slot(&self, encoding: Encoding) -> Option<usize> {
        self.meta.encodings.iter().position(|e| *e == encoding)
    }

    /// Total tokens of all chunks in `encoding`, if it was counted.
    pub fn total_tokens(&self, encoding: Encoding) -> Option<u64> {
        let slot = self.encoding_slot(encoding)?;
        Some(self.chunks.iter().map(|c| u64::from(c.tokens[slot])).sum())
    }
}

/// A stable chunk id: 24 hex characters of sha256(path, content digest, ordinal among identical
/// chunks of the same file).
pub fn chunk_id(path: &str, sha: &Sha256Digest, ordinal: u32) -> ChunkId {
    let mut buf = Vec::with_capacity(path.len() + 40);
    buf.extend_from_slice(path.as_bytes());
    buf.push(0);
    buf.extend_from_slice(&sha.0);
    buf.extend_from_slice(&ordinal.to_le_bytes());
    let hex = crate::hash::hex(&Sha256Digest::of(&buf).0[..12]);
    // 24 ASCII hex characters: always an id.
    ChunkId::new(&hex).unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lexical::{Bm25Builder, Bm25Params};

    /// An empty pack counted in o200k.
    pub(crate) fn tiny() -> IndexPack {
        IndexPack {
            meta: PackMeta {
                project: "p".into(),
                encodings: vec![Encoding::O200kBase],
                max_chunk_bytes: 6000,
                text_bytes: 3,
                indexed_at_ns: 0,
                settings: String::new(),
            },
            files: vec![],
            chunks: vec![],
            segments: vec![],
            lexical: Bm25Builder::default().finish(Bm25Params::default()),
            summaries: Default::default(),
            graph: ImportGraph::default(),
            references: References::default(),
            recency: Recency::default(),
            history: History::default(),
            paths: None,
            delta: None,
            overlay: None,
            derived: Default::default(),
        }
    }

    #[test]
    fn round_trip_and_version_refusal() {
        let pack = tiny();
        let mut bytes = pack.encode().unwrap();
        assert_eq!(IndexPack::decode(&bytes).unwrap(), pack);
        let future = FORMAT_VERSION + 1;
        bytes[8..12].copy_from_slice(&future.to_le_bytes());
        let err = IndexPack::decode(&bytes).unwrap_err();
        assert_eq!(
            err,
            PackError::Version {
                found: future,
                expected: FORMAT_VERSION
            }
        );
        assert!(err.to_string().contains("re-index"));
        assert_eq!(IndexPack::decode(b"hello world!!"), Err(PackError::Magic));
        let mut truncated = pack.encode().unwrap();
        truncated.truncate(14);
        assert!(matches!(
            IndexPack::decode(&truncated),
            Err(PackError::Corrupt(_))
        ));
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        let d = Sha256Digest::of(b"x");
        assert_eq!(chunk_id("a.rs", &d, 0), chunk_id("a.rs", &d, 0));
        assert_ne!(chunk_id("a.rs", &d, 0), chunk_id("a.rs", &d, 1));
        assert_ne!(chunk_id("a.rs", &d, 0), chunk_id("b.rs", &d, 0));
        assert_eq!(chunk_id("a.rs", &d, 0).len(), 24);
    }
}
