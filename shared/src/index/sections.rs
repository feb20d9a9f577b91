//! The pack's body as sections of length-prefixed frames, so that a reader can decode a pack
//! while its parts arrive and let go of each frame's bytes once it is decoded.
//!
//! Before format 9 the body was one postcard value, decoded after the whole pack was joined in
//! memory: an 88M-token repository's 59 MiB pack and its 89 MiB decoded form were both held at
//! once, and in a Worker the WebAssembly memory that peak reached is never given back. Format 9
//! read it section by section, but a section was still decoded only once all of it was in, so
//! the largest late section's bytes (the summaries, about 15 MB there) sat beside everything
//! decoded before. Format 10 cuts the large tables into frames of [`FRAME_RECORDS`] records, so
//! a reader holds what is decoded, one frame and the parts in flight.
//!
//! ```text
//! per frame:
//!   4   length of the frame's bytes, u32 little-endian
//!   ..  a value encoded with postcard
//! sections, in order: meta, files*, chunks*, segments, lexical, file summaries*, directory
//! summaries*, project summary, summary texts, summary lines, graph, references, recency,
//! history, paths, delta — one frame each, except the tables
//! (*): a frame with the number of records (u64), then frames of up to FRAME_RECORDS records
//! each (a postcard sequence), as many as the records need
//! ```

use serde::Serialize;
use serde::de::{DeserializeOwned, DeserializeSeed};

use super::summaries::{StoredDir, StoredFile, StoredSummaries};
use super::{FORMAT_VERSION, IndexPack, MAGIC, PackError, PackMeta, check};
use crate::lists::values::ValueList;
use crate::summary::Summary;

/// Bytes of a frame's length.
const LEN: usize = 4;

/// Records in one frame of a table: a chunk record is about 150 bytes encoded, so a frame is
/// about 150 KB — small beside a pack part (up to 4 MiB), large enough that framing costs
/// nothing measurable.
pub(crate) const FRAME_RECORDS: usize = 1024;

/// The most bytes reserved up front for a table whatever its count frame claims (a damaged
/// count must not abort a Worker's isolate on allocation); a longer table still decodes,
/// growing past it.
const MAX_RESERVE_BYTES: usize = 32 << 20;

/// The sections, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Meta,
    Files,
    Chunks,
    Segments,
    Lexical,
    FileSummaries,
    DirSummaries,
    Project,
    SummaryTexts,
    SummaryLines,
    Graph,
    References,
    Recency,
    History,
    Paths,
    Delta,
}

const ORDER: [Section; 16] = [
    Section::Meta,
    Section::Files,
    Section::Chunks,
    Section::Segments,
    Section::Lexical,
    Section::FileSummaries,
    Section::DirSummaries,
    Section::Project,
    Section::SummaryTexts,
    Section::SummaryLines,
    Section::Graph,
    Section::References,
    Section::Recency,
    Section::History,
    Section::Paths,
    Section::Delta,
];

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Meta => "meta",
            Section::Files => "files",
            Section::Chunks => "chunks",
            Section::Segments => "segments",
            Section::Lexical => "lexical",
            Section::FileSummaries => "file summaries",
            Section::DirSummaries => "directory summaries",
            Section::Project => "project summary",
            Section::SummaryTexts => "summary texts",
            Section::SummaryLines => "summary lines",
            Section::Graph => "graph",
            Section::References => "references",
            Section::Recency => "recency",
            Section::History => "history",
            Section::Paths => "paths",
            Section::Delta => "delta",
        }
    }
}

/// Appends `value` as one frame.
fn frame<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), PackError> {
    let body = postcard::to_allocvec(value).map_err(|e| PackError::Corrupt(e.to_string()))?;
    let len = u32::try_from(body.len())
        .map_err(|_| PackError::Corrupt("a frame of 4 GiB or more".into()))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(())
}

/// Appends `rows` as a table: its count, then its frames.
fn table<T: Serialize>(out: &mut Vec<u8>, rows: &[T]) -> Result<(), PackError> {
    frame(out, &(rows.len() as u64))?;
    for part in rows.chunks(FRAME_RECORDS) {
        frame(out, part)?;
    }
    Ok(())
}

/// The whole pack: header, then every section.
pub(super) fn encode(pack: &IndexPack) -> Result<Vec<u8>, PackError> {
    let mut out = Vec::with_capacity(1 << 20);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    frame(&mut out, &pack.meta)?;
    table(&mut out, &pack.files)?;
    table(&mut out, &pack.chunks)?;
    frame(&mut out, &pack.segments)?;
    frame(&mut out, &pack.lexical)?;
    table(&mut out, &pack.summaries.files)?;
    table(&mut out, &pack.summaries.dirs)?;
    frame(&mut out, &pack.summaries.project)?;
    frame(&mut out, &pack.summaries.texts)?;
    frame(&mut out, &pack.summaries.lines)?;
    frame(&mut out, &pack.graph)?;
    frame(&mut out, &pack.references)?;
    frame(&mut out, &pack.recency)?;
    frame(&mut out, &pack.history)?;
    frame(&mut out, &pack.paths)?;
    frame(&mut out, &pack.delta)?;
    Ok(out)
}

/// The sections decoded so far (a table from its count frame on).
#[derive(Default)]
struct Decoded {
    meta: Option<PackMeta>,
    files: Option<Vec<super::FileEntry>>,
    chunks: Option<Vec<super::ChunkRecord>>,
    segments: Option<Vec<String>>,
    lexical: Option<crate::lexical::Bm25Index>,
    summary_files: Option<Vec<StoredFile>>,
    summary_dirs: Option<Vec<StoredDir>>,
    project: Option<Option<Summary>>,
    summary_texts: Option<ValueList>,
    summary_lines: Option<ValueList>,
    graph: Option<crate::graph::ImportGraph>,
    references: Option<super::References>,
    recency: Option<super::Recency>,
    history: Option<super::History>,
    paths: Option<Option<super::path_tables::PathTables>>,
    delta: Option<Option<super::delta::DeltaFacts>>,
}

/// Decodes a pack from its bytes in order, in pieces of any size: each frame as soon as its
/// last byte has arrived, after which its bytes are dropped.
#[derive(Default)]
pub struct PackReader {
    /// Bytes received and not yet decoded (the header, or the current frame).
    pending: Vec<u8>,
    /// Whether the header was read and accepted.
    header: bool,
    /// Sections completed.
    done: usize,
    /// Records the current table still expects, once its count frame was read.
    rows_left: Option<u64>,
    /// Room to reserve in the file and chunk tables beyond their own records (a base that a
    /// delta will be merged into: [`PackReader::with_room`]).
    room: (u64, u64),
    /// A base a delta will be merged into: its paths' tables are passed over undecoded (the
    /// merged version's are built from the merged files; decoded, they would only raise the
    /// isolate's high-water mark).
    for_merge: bool,
    decoded: Decoded,
}

/// One frame's value, or why it does not decode.
fn value<T: DeserializeOwned>(bytes: &[u8], name: &str) -> Result<T, PackError> {
    let (v, rest) = postcard::take_from_bytes::<T>(bytes)
        .map_err(|e| PackError::Corrupt(format!("section `{name}`: {e}")))?;
    if !rest.is_empty() {
        return Err(PackError::Corrupt(format!(
            "section `{name}` has {} bytes past its value",
            rest.len()
        )));
    }
    Ok(v)
}

/// Takes one frame of a table into `slot`: its count (reserving that many records) or its
/// next records. Whether the table is complete.
fn table_frame<T: DeserializeOwned>(
    slot: &mut Option<Vec<T>>,
    rows_left: &mut Option<u64>,
    bytes: &[u8],
    name: &str,
    room: u64,
) -> Result<bool, PackError> {
    let Some(left) = *rows_left else {
        let count: u64 = value(bytes, name)?;
        let most = (MAX_RESERVE_BYTES / std::mem::size_of::<T>().max(1)) as u64;
        let reserve = usize::try_from(count.max(room).min(most)).unwrap_or(0);
        *slot = Some(Vec::with_capacity(reserve));
        *rows_left = Some(count);
        return Ok(count == 0);
    };
    // The frame's records go straight into the table: decoded into a vector of their own and
    // then moved, every record was copied once more (a third of the decoding's samples on the
    // monorepo's pack; deno's first call natively 5% faster without it).
    let mut de = postcard::Deserializer::from_bytes(bytes);
    let n = AppendRows {
        to: slot.get_or_insert_with(Vec::new),
        most: left,
    }
    .deserialize(&mut de)
    .map_err(|e| PackError::Corrupt(format!("section `{name}`: {e}")))?;
    let rest = de
        .finalize()
        .map_err(|e| PackError::Corrupt(format!("section `{name}`: {e}")))?;
    if !rest.is_empty() {
        return Err(PackError::Corrupt(format!(
            "section `{name}` has {} bytes past its value",
            rest.len()
        )));
    }
    if n == 0 || n > left {
        return Err(PackError::Corrupt(format!(
            "section `{name}`: a frame of {n} records where {left} were left"
        )));
    }
    *rows_left = Some(left - n);
    Ok(left == n)
}

/// Appends a frame's records (a sequence) to a table as they are decoded, at most `most` of
/// them; the value is how many the frame held. Records past `most` are decoded and dropped, so
/// a frame is refused for the same reasons and with the same errors as when it was decoded
/// whole (a broken record first, then too many records).
struct AppendRows<'a, T> {
    to: &'a mut Vec<T>,
    most: u64,
}

impl<'de, T: serde::Deserialize<'de>> serde::de::DeserializeSeed<'de> for AppendRows<'_, T> {
    type Value = u64;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for AppendRows<'_, T> {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a sequence of records")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let mut n = 0u64;
        while let Some(row) = seq.next_element::<T>()? {
            if n < self.most {
                self.to.push(row);
            }
            n += 1;
        }
        Ok(n)
    }
}

impl PackReader {
    /// A reader waiting for the pack's first bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader whose file and chunk tables are allocated for at least `files` and `chunks`
    /// records: a base pack a delta will be merged into in place, so the merged tables never
    /// need a second allocation (in a Worker, whose memory never shrinks, the copy would stay
    /// its peak: 105 MiB instead of 61 on the monorepo corpus). Its paths' tables are passed
    /// over: the merged version builds its own.
    pub fn with_room(files: u64, chunks: u64) -> Self {
        Self {
            room: (files, chunks),
            for_merge: true,
            ..Self::default()
        }
    }

    /// Takes the next `bytes` of the pack, decoding every frame they complete. After an error
    /// the reader holds part of a table and must be dropped, as every caller does.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), PackError> {
        if !self.header {
            let want = 12 - self.pending.len();
            let take = want.min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < 12 {
                return Ok(());
            }
            let found = IndexPack::peek_version(&self.pending)?;
            if found != FORMAT_VERSION {
                return Err(PackError::Version {
                    found,
                    expected: FORMAT_VERSION,
                });
            }
            self.header = true;
            self.pending.clear();
        }
        // Whole frames inside `bytes` decode from it directly; only a frame cut by the end of
        // `bytes` is kept, completed from the next pushes a little at a time (never a whole
        // next part appended while one frame is waiting).
        while !self.pending.is_empty() {
            if !self.fill_pending(&mut bytes, LEN) {
                return Ok(());
            }
            let mut len = [0u8; LEN];
            len.copy_from_slice(&self.pending[..LEN]);
            let need = LEN + u32::from_le_bytes(len) as usize;
            if !self.fill_pending(&mut bytes, need) {
                return Ok(());
            }
            let pending = std::mem::take(&mut self.pending);
            self.frame(&pending[LEN..])?;
        }
        while let Some((body, rest)) = Self::whole(bytes) {
            self.frame(body)?;
            bytes = rest;
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    /// Moves bytes from the front of `bytes` into `pending` until it holds `need`; whether it
    /// does.
    fn fill_pending(&mut self, bytes: &mut &[u8], need: usize) -> bool {
        let take = need.saturating_sub(self.pending.len()).min(bytes.len());
        self.pending.extend_from_slice(&bytes[..take]);
        *bytes = &bytes[take..];
        self.pending.len() >= need
    }

    /// The first frame of `bytes` when all of it is there, and what follows it.
    fn whole(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
        let (len, rest) = bytes.split_first_chunk::<LEN>()?;
        let len = u32::from_le_bytes(*len) as usize;
        (rest.len() >= len).then(|| rest.split_at(len))
    }

    /// Decodes the next frame from its bytes.
    fn frame(&mut self, bytes: &[u8]) -> Result<(), PackError> {
        let Some(&section) = ORDER.get(self.done) else {
            return Err(PackError::Corrupt("bytes past the last section".into()));
        };
        let name = section.name();
        let d = &mut self.decoded;
        let left = &mut self.rows_left;
        let complete = match section {
            Section::Meta => {
                d.meta = Some(value(bytes, name)?);
                true
            }
            Section::Files => table_frame(&mut d.files, left, bytes, name, self.room.0)?,
            Section::Chunks => table_frame(&mut d.chunks, left, bytes, name, self.room.1)?,
            Section::Segments => {
                d.segments = Some(value(bytes, name)?);
                true
            }
            Section::Lexical => {
                d.lexical = Some(value(bytes, name)?);
                true
            }
            Section::FileSummaries => table_frame(&mut d.summary_files, left, bytes, name, 0)?,
            Section::DirSummaries => table_frame(&mut d.summary_dirs, left, bytes, name, 0)?,
            Section::Project => {
                d.project = Some(value(bytes, name)?);
                true
            }
            Section::SummaryTexts => {
                d.summary_texts = Some(value(bytes, name)?);
                true
            }
            Section::SummaryLines => {
                d.summary_lines = Some(value(bytes, name)?);
                true
            }
            Section::Graph => {
                d.graph = Some(value(bytes, name)?);
                true
            }
            Section::References => {
                d.references = Some(value(bytes, name)?);
                true
            }
            Section::Recency => {
                d.recency = Some(value(bytes, name)?);
                true
            }
            Section::History => {
                d.history = Some(value(bytes, name)?);
                true
            }
            Section::Paths => {
                d.paths = Some(if self.for_merge {
                    None
                } else {
                    value(bytes, name)?
                });
                true
            }
            Section::Delta => {
                d.delta = Some(value(bytes, name)?);
                true
            }
        };
        if complete {
            self.done += 1;
            self.rows_left = None;
        }
        Ok(())
    }

    /// The pack, once every section has arrived, checked ([`check::check`]).
    pub fn finish(self) -> Result<IndexPack, PackError> {
        if !self.header {
            return Err(PackError::Magic);
        }
        if self.done == ORDER.len() && !self.pending.is_empty() {
            return Err(PackError::Corrupt("bytes past the last section".into()));
        }
        if self.done != ORDER.len() || !self.pending.is_empty() {
            return Err(PackError::Corrupt(format!(
                "the pack ends inside section {} of {}",
                self.done + 1,
                ORDER.len()
            )));
        }
        let d = self.decoded;
        let missing = || PackError::Corrupt("a section is missing".into());
        let pack = IndexPack {
            meta: d.meta.ok_or_else(missing)?,
            files: d.files.ok_or_else(missing)?,
            chunks: d.chunks.ok_or_else(missing)?,
            segments: d.segments.ok_or_else(missing)?,
            lexical: d.lexical.ok_or_else(missing)?,
            summaries: StoredSummaries {
                files: d.summary_files.ok_or_else(missing)?,
                dirs: d.summary_dirs.ok_or_else(missing)?,
                project: d.project.ok_or_else(missing)?,
                texts: d.summary_texts.ok_or_else(missing)?,
                lines: d.summary_lines.ok_or_else(missing)?,
                layered: None,
            },
            graph: d.graph.ok_or_else(missing)?,
            references: d.references.ok_or_else(missing)?,
            recency: d.recency.ok_or_else(missing)?,
            history: d.history.ok_or_else(missing)?,
            paths: d.paths.ok_or_else(missing)?,
            delta: d.delta.ok_or_else(missing)?,
            overlay: None,
            derived: Default::default(),
        };
        check::check(&pack).map_err(PackError::Corrupt)?;
        Ok(pack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tables_frame_appends_its_records_and_refuses_more_than_are_left() {
        let frame = |rows: &[u32]| postcard::to_allocvec(rows).expect("encodes");
        let mut slot: Option<Vec<u32>> = Some(vec![7]);
        let mut left = Some(5);
        let done = table_frame(&mut slot, &mut left, &frame(&[1, 2, 3]), "t", 0).expect("fits");
        assert_eq!(
            (done, &slot, left),
            (false, &Some(vec![7, 1, 2, 3]), Some(2))
        );
        let done = table_frame(&mut slot, &mut left, &frame(&[4, 5]), "t", 0).expect("fits");
        assert_eq!((done, left), (true, Some(0)));
        let mut left = Some(2);
        let err = table_frame(&mut slot, &mut left, &frame(&[1, 2, 3]), "t", 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            PackError::Corrupt("section `t`: a frame of 3 records where 2 were left".into())
                .to_string()
        );
        let err = table_frame(&mut slot, &mut left, &frame(&[]), "t", 0).unwrap_err();
        assert!(err.to_string().contains("a frame of 0 records"), "{err}");
        let mut bytes = frame(&[1]);
        bytes.push(0);
        let err = table_frame(&mut slot, &mut left, &bytes, "t", 0).unwrap_err();
        assert!(err.to_string().contains("1 bytes past its value"), "{err}");
        let err = table_frame(&mut slot, &mut left, &frame(&[1, 2])[..2], "t", 0).unwrap_err();
        assert!(
            err.to_string().contains("section `t`: Hit the end"),
            "{err}"
        );
    }

    #[test]
    fn any_cut_of_the_bytes_decodes_the_same_pack() {
        let pack = crate::index::tests::tiny();
        let bytes = pack.encode().unwrap();
        for size in [1, 2, 5, 12, 13, 64, bytes.len()] {
            let mut r = PackReader::new();
            for piece in bytes.chunks(size) {
                r.push(piece).unwrap();
            }
            assert_eq!(r.finish().unwrap(), pack, "pieces of {size}");
        }
    }

    /// A pack whose summary table takes several frames (the chunk table is checked against the
    /// files, so a long table of summaries is the cheap one to make).
    fn framed() -> IndexPack {
        let mut pack = crate::index::tests::tiny();
        let mut built = pack.summaries.inlined().unwrap_or_default();
        built.dirs = (0..FRAME_RECORDS * 2 + 7)
            .map(|i| crate::summary::DirSummary {
                path: format!("d{i:05}"),
                summary: Summary {
                    text: format!("directory {i}"),
                    tokens: vec![3],
                },
            })
            .collect();
        pack.summaries = StoredSummaries::store(built).unwrap();
        pack
    }

    #[test]
    fn a_base_for_a_merge_passes_over_its_paths_tables() {
        let mut pack = crate::index::tests::tiny();
        pack.paths = Some(crate::index::path_tables::PathTables::default());
        let bytes = pack.encode().unwrap();
        let read = |mut r: PackReader| {
            r.push(&bytes).unwrap();
            r.finish().unwrap()
        };
        assert_eq!(read(PackReader::new()).paths, pack.paths);
        assert_eq!(read(PackReader::with_room(0, 0)).paths, None);
    }

    #[test]
    fn a_table_in_several_frames_decodes_from_any_cut() {
        let pack = framed();
        let bytes = pack.encode().unwrap();
        for size in [1, 7, 4096, 100_000, bytes.len()] {
            let mut r = PackReader::new();
            for piece in bytes.chunks(size) {
                r.push(piece).unwrap();
            }
            let back = r.finish().unwrap();
            assert_eq!(back, pack, "pieces of {size}");
            assert_eq!(back.summaries.dirs.capacity(), FRAME_RECORDS * 2 + 7);
        }
    }

    #[test]
    fn a_frame_longer_than_its_table_is_corrupt() {
        let mut pack = crate::index::tests::tiny();
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        frame(&mut out, &pack.meta).unwrap();
        frame(&mut out, &1u64).unwrap();
        pack.files = vec![];
        let two: Vec<u32> = vec![1, 2];
        frame(&mut out, &two).unwrap();
        let err = PackReader::new().push(&out).unwrap_err();
        assert!(matches!(err, PackError::Corrupt(m) if m.contains("files")));
        // An empty frame is no value at all.
        let mut empty = out[..12].to_vec();
        empty.extend_from_slice(&0u32.to_le_bytes());
        let mut r = PackReader::new();
        r.push(&empty[..13]).unwrap();
        assert!(r.push(&empty[13..]).is_err());
    }

    #[test]
    fn a_short_or_long_pack_is_corrupt() {
        let bytes = crate::index::tests::tiny().encode().unwrap();
        let mut r = PackReader::new();
        r.push(&bytes[..bytes.len() - 1]).unwrap();
        assert!(matches!(r.finish(), Err(PackError::Corrupt(_))));
        let mut long = bytes.clone();
        long.extend_from_slice(&[1, 0, 0, 0, 0]);
        let mut r = PackReader::new();
        assert!(matches!(r.push(&long), Err(PackError::Corrupt(_))));
        assert!(matches!(PackReader::new().finish(), Err(PackError::Magic)));
    }

    #[test]
    fn a_section_with_bytes_past_its_value_is_corrupt() {
        let mut out = Vec::new();
        frame(&mut out, &7u32).unwrap();
        out[0] += 1;
        out.push(0);
        assert!(value::<u32>(&out[LEN..], "x").is_err());
    }
}
