//! The pack's body as sections, each preceded by its length, so that a reader can decode a pack
//! while its parts arrive and let go of each section's bytes once it is decoded.
//!
//! Before format 9 the body was one postcard value, decoded after the whole pack was joined in
//! memory: an 88M-token repository's 59 MiB pack and its 89 MiB decoded form were both held at
//! once, and in a Worker the WebAssembly memory that peak reached is never given back. Read
//! section by section, a reader holds the decoded sections, the one section being completed and
//! the parts in flight.
//!
//! ```text
//! per section, in order (meta, files, chunks, segments, lexical, summaries, graph, references,
//! recency):
//!   4   length of the section's bytes, u32 little-endian
//!   ..  the section: its value encoded with postcard
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{FORMAT_VERSION, IndexPack, MAGIC, PackError, PackMeta, check};

/// Bytes of a section's length.
const LEN: usize = 4;

/// Number of sections of a pack.
const SECTIONS: usize = 9;

/// Appends `value` as one section.
fn section<T: Serialize>(out: &mut Vec<u8>, value: &T) -> Result<(), PackError> {
    let body = postcard::to_allocvec(value).map_err(|e| PackError::Corrupt(e.to_string()))?;
    let len = u32::try_from(body.len())
        .map_err(|_| PackError::Corrupt("a section of 4 GiB or more".into()))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(())
}

/// The whole pack: header, then every section.
pub(super) fn encode(pack: &IndexPack) -> Result<Vec<u8>, PackError> {
    let mut out = Vec::with_capacity(1 << 20);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    section(&mut out, &pack.meta)?;
    section(&mut out, &pack.files)?;
    section(&mut out, &pack.chunks)?;
    section(&mut out, &pack.segments)?;
    section(&mut out, &pack.lexical)?;
    section(&mut out, &pack.summaries)?;
    section(&mut out, &pack.graph)?;
    section(&mut out, &pack.references)?;
    section(&mut out, &pack.recency)?;
    Ok(out)
}

/// The sections decoded so far.
#[derive(Default)]
struct Decoded {
    meta: Option<PackMeta>,
    files: Option<Vec<super::FileEntry>>,
    chunks: Option<Vec<super::ChunkRecord>>,
    segments: Option<Vec<String>>,
    lexical: Option<crate::lexical::Bm25Index>,
    summaries: Option<crate::summary::Summaries>,
    graph: Option<crate::graph::ImportGraph>,
    references: Option<super::References>,
    recency: Option<super::Recency>,
}

/// Decodes a pack from its bytes in order, in pieces of any size: each section as soon as its
/// last byte has arrived, after which its bytes are dropped.
#[derive(Default)]
pub struct PackReader {
    /// Bytes received and not yet decoded (the header, or the current section).
    pending: Vec<u8>,
    /// Whether the header was read and accepted.
    header: bool,
    /// Sections decoded.
    done: usize,
    decoded: Decoded,
}

/// A large table, decoded into a vector of exactly its length (encoded as the vector itself).
#[derive(serde::Deserialize)]
#[serde(bound(deserialize = "T: serde::Deserialize<'de>"))]
struct Exact<T>(#[serde(deserialize_with = "super::exact_vec::deserialize")] Vec<T>);

/// One section's value, or why it does not decode.
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

impl PackReader {
    /// A reader waiting for the pack's first bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next `bytes` of the pack, decoding every section they complete.
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
        // Whole sections inside `bytes` decode from it directly; only a section cut by the end
        // of `bytes` is kept, to be completed by the next pushes.
        if !self.pending.is_empty() {
            self.pending.extend_from_slice(bytes);
            let Some((sec, _)) = Self::whole(&self.pending) else {
                return Ok(());
            };
            let used = LEN + sec.len();
            let pending = std::mem::take(&mut self.pending);
            self.section(&pending[LEN..used])?;
            // What followed the completed section, decoded from the copy just made.
            return self.push(&pending[used..]);
        }
        while let Some((sec, rest)) = Self::whole(bytes) {
            self.section(sec)?;
            bytes = rest;
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    /// The first section of `bytes` when all of it is there, and what follows it.
    fn whole(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
        let (len, rest) = bytes.split_first_chunk::<LEN>()?;
        let len = u32::from_le_bytes(*len) as usize;
        (rest.len() >= len).then(|| rest.split_at(len))
    }

    /// Decodes the next section from its bytes.
    fn section(&mut self, bytes: &[u8]) -> Result<(), PackError> {
        let d = &mut self.decoded;
        match self.done {
            0 => d.meta = Some(value(bytes, "meta")?),
            1 => d.files = Some(value::<Exact<_>>(bytes, "files")?.0),
            2 => d.chunks = Some(value::<Exact<_>>(bytes, "chunks")?.0),
            3 => d.segments = Some(value(bytes, "segments")?),
            4 => d.lexical = Some(value(bytes, "lexical")?),
            5 => d.summaries = Some(value(bytes, "summaries")?),
            6 => d.graph = Some(value(bytes, "graph")?),
            7 => d.references = Some(value(bytes, "references")?),
            8 => d.recency = Some(value(bytes, "recency")?),
            _ => return Err(PackError::Corrupt("bytes past the last section".into())),
        }
        self.done += 1;
        Ok(())
    }

    /// The pack, once every section has arrived, checked ([`check::check`]).
    pub fn finish(self) -> Result<IndexPack, PackError> {
        if !self.header {
            return Err(PackError::Magic);
        }
        if self.done == SECTIONS && !self.pending.is_empty() {
            return Err(PackError::Corrupt("bytes past the last section".into()));
        }
        if self.done != SECTIONS {
            return Err(PackError::Corrupt(format!(
                "the pack ends inside section {} of {SECTIONS}",
                self.done + 1
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
            summaries: d.summaries.ok_or_else(missing)?,
            graph: d.graph.ok_or_else(missing)?,
            references: d.references.ok_or_else(missing)?,
            recency: d.recency.ok_or_else(missing)?,
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
        section(&mut out, &7u32).unwrap();
        out[0] += 1;
        out.push(0);
        assert!(value::<u32>(&out[LEN..], "x").is_err());
    }
}
