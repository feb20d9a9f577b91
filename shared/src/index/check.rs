//! The structural check every decoded pack passes before a reader sees it: every index one part
//! of the pack holds into another (a chunk's file and segment, a file's chunk range, the BM25
//! dictionary's offsets, the graph's, references' and summaries' file and chunk numbers) lies in
//! range, and every count vector has one entry per counted encoding. Readers index with these
//! numbers directly; a damaged or hostile pack that still decodes is refused here, as corrupt,
//! instead of panicking a reader (found by the `index_reader` fuzz target).

use super::IndexPack;

/// Why `pack` is inconsistent, if it is.
pub(super) fn check(pack: &IndexPack) -> Result<(), String> {
    let files = pack.files.len();
    let chunks = pack.chunks.len();
    let encodings = pack.meta.encodings.len();
    for (i, f) in pack.files.iter().enumerate() {
        let end = u64::from(f.first_chunk) + u64::from(f.chunk_count);
        if end > chunks as u64 {
            return Err(format!("file #{i} names chunks up to {end} of {chunks}"));
        }
    }
    for (i, c) in pack.chunks.iter().enumerate() {
        if c.file as usize >= files {
            return Err(format!("chunk #{i} names file #{} of {files}", c.file));
        }
        if c.segment as usize >= pack.segments.len() {
            return Err(format!("chunk #{i} names a missing segment #{}", c.segment));
        }
        if c.byte_end < c.byte_start || c.end_line < c.start_line {
            return Err(format!("chunk #{i} ends before it starts"));
        }
        if c.tokens.len() != encodings {
            return Err(format!("chunk #{i} has {} counts", c.tokens.len()));
        }
    }
    pack.lexical
        .check(chunks, pack.segments.len())
        .map_err(|e| format!("lexical index: {e}"))?;
    // A delta pack's users and recency are numbered as the version it makes with its base.
    let (version_files, version_chunks) = match &pack.delta {
        Some(d) => (d.files as usize, d.chunks as usize),
        None => (files, chunks),
    };
    if !pack.graph.within(files) {
        return Err("the import graph names a missing file".into());
    }
    if !pack.references.within(version_chunks, pack.segments.len()) {
        return Err("references name a missing chunk".into());
    }
    if !pack.recency.within(version_files) {
        return Err("recency names a missing file".into());
    }
    if !pack.history.within(version_chunks) {
        return Err("the history does not match the chunks".into());
    }
    if let Some(paths) = &pack.paths {
        paths.check(files)?;
    }
    pack.summaries.check(files, encodings, pack.segments.len())
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::lexical::{Bm25Builder, Bm25Params};

    /// One file of one chunk in one segment, consistent.
    fn pack() -> IndexPack {
        let mut lexical = Bm25Builder::default();
        lexical.add(&[("parse".into(), 1)]);
        IndexPack {
            files: vec![FileEntry {
                path: "a.rs".into(),
                sha256: Sha256Digest::of(b"abc"),
                stat: FileStat {
                    size: 3,
                    mtime_ns: 0,
                    ctime_ns: 0,
                    inode: 0,
                },
                language: "rust".into(),
                skipped: None,
                first_chunk: 0,
                chunk_count: 1,
            }],
            chunks: vec![ChunkRecord {
                id: ChunkId::new("c").unwrap(),
                file: 0,
                kind: crate::chunk::ChunkKind::Function,
                symbol: None,
                start_line: 1,
                end_line: 1,
                byte_start: 0,
                byte_end: 3,
                sha256: Sha256Digest::of(b"abc"),
                tokens: TokenCounts::new(&[1]).unwrap(),
                segment: 0,
                segment_offset: 0,
            }],
            segments: vec!["s".into()],
            lexical: lexical.finish(Bm25Params::default()),
            ..super::super::tests::tiny()
        }
    }

    /// One way to damage a pack.
    type Damage = fn(&mut IndexPack);

    fn decoded(pack: &IndexPack) -> Result<IndexPack, PackError> {
        IndexPack::decode(&pack.encode().unwrap())
    }

    #[test]
    fn a_consistent_pack_decodes() {
        assert_eq!(decoded(&pack()).unwrap(), pack());
        // With its path tables, as the indexer writes it: they come back as they were built.
        let mut with_paths = pack();
        with_paths.paths = Some(crate::index::path_tables::PathTables::of(
            &with_paths.files,
            &with_paths.chunks,
        ));
        let back = decoded(&with_paths).unwrap();
        assert_eq!(back, with_paths);
        assert_eq!(back.paths(), with_paths.paths.as_ref().unwrap());
    }

    #[test]
    fn packs_whose_numbers_point_nowhere_are_corrupt() {
        let damages: [(&str, Damage); 9] = [
            ("missing file", |p| p.chunks[0].file = 7),
            ("missing segment", |p| p.chunks[0].segment = 1),
            ("backwards bytes", |p| p.chunks[0].byte_start = 5),
            ("counts of another encoding list", |p| {
                p.chunks[0].tokens = TokenCounts::new(&[1, 2]).unwrap()
            }),
            ("chunk range past the end", |p| p.files[0].chunk_count = 2),
            ("dictionary of other documents", |p| {
                p.lexical = Bm25Builder::default().finish(Bm25Params::default())
            }),
            ("graph to a missing file", |p| {
                p.graph.imports = vec![vec![3]]
            }),
            ("path tables of other files", |p| {
                p.paths = Some(crate::index::path_tables::PathTables::of(
                    &[p.files[0].clone(), p.files[0].clone()],
                    &p.chunks,
                ))
            }),
            ("summary of a missing file", |p| {
                p.summaries =
                    crate::index::summaries::StoredSummaries::store(crate::summary::Summaries {
                        files: vec![crate::summary::FileSummary {
                            file: 4,
                            origin: Default::default(),
                            line: String::new(),
                            summary: crate::summary::Summary::counted(String::new(), &[]),
                        }],
                        ..Default::default()
                    })
                    .unwrap()
            }),
        ];
        for (what, damage) in damages {
            let mut p = pack();
            damage(&mut p);
            assert!(matches!(decoded(&p), Err(PackError::Corrupt(_))), "{what}");
        }
    }

    /// Packs the `index_reader` fuzz target decoded and then panicked on while reading (the
    /// first: a chunk naming a file past the file table): each is now refused as corrupt. An
    /// input saved under an earlier format is replayed with this format's header, so its body
    /// still reaches the decoder and the check ("missing file" above keeps the first case
    /// exact whatever the format).
    #[test]
    fn fuzz_regressions_are_refused_as_corrupt() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/regressions/index_reader");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let mut bytes = std::fs::read(&path).unwrap();
            if bytes.len() >= 12 {
                bytes[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
            }
            let decoded = IndexPack::decode(&bytes);
            assert!(matches!(decoded, Err(PackError::Corrupt(_))), "{path:?}");
            seen += 1;
        }
        assert!(seen > 0, "no regression inputs in {dir:?}");
    }
}
