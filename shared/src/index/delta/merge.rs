//! Opening a delta: [`merge`] lays the base's kept files and chunks and the delta's out in
//! path order, in place over the base's tables, and leaves the base's lists to an [`Overlay`].

use std::collections::HashSet;

use super::super::summaries::{LayeredTexts, StoredSummaries, layered_position};
use super::super::{ChunkRecord, FileEntry, IndexPack, PackError};
use super::{DROPPED, DeltaFacts, Overlay, mapped_row};
use crate::graph::ImportGraph;
use crate::lexical::Bm25Index;

fn corrupt(what: &str) -> PackError {
    PackError::Corrupt(format!("delta pack: {what}"))
}

/// `base` with the entries `keep` refuses dropped and `delta`'s entries put where `from_base`
/// (the merged sequence: `true` for the next kept base entry, `false` for the next delta
/// entry) says, in place: a Worker's memory never shrinks, so a second copy of a large chunk
/// table would be its peak for good.
pub(super) fn interleave<T: Clone>(
    base: &mut Vec<T>,
    keep: &[bool],
    mut delta: Vec<T>,
    from_base: &[bool],
) {
    let mut k = 0;
    base.retain(|_| {
        k += 1;
        keep.get(k - 1).copied().unwrap_or(false)
    });
    let Some(placeholder) = base.first().cloned() else {
        *base = delta;
        return;
    };
    let mut unplaced = base.len();
    let total = unplaced + delta.len();
    base.resize(total, placeholder);
    // From the back: a kept entry's merged slot is never before its slot now, and every slot
    // after the kept entries not yet placed holds a placeholder until it is written.
    for w in (0..total).rev() {
        if from_base.get(w).copied().unwrap_or(true) {
            unplaced = unplaced.saturating_sub(1);
            base.swap(unplaced, w);
        } else if let Some(d) = delta.pop() {
            base[w] = d;
        }
    }
}

/// The version `delta` (a delta pack) makes of `base` (a whole pack): its tables merged in
/// path order, the base's lists read through an [`Overlay`].
pub fn merge(base: IndexPack, mut delta: IndexPack) -> Result<IndexPack, PackError> {
    let facts = delta.delta.take().ok_or_else(|| corrupt("not a delta"))?;
    check_mergeable(&base, &delta, &facts)?;
    let removed = |p: &str| {
        facts
            .removed
            .binary_search_by(|r| r.as_str().cmp(p))
            .is_ok()
    };

    // Files: the base's kept and the delta's, merged by path.
    let keep_file: Vec<bool> = base.files.iter().map(|f| !removed(&f.path)).collect();
    let order = merged_files(&base, &delta, &keep_file, &facts)?;
    let chunk_order = merged_chunks(&base, &delta, &keep_file, &order, &facts)?;

    let segment_offset = base.segments.len() as u32;
    let (files, chunks) = placed_tables(
        base.files,
        base.chunks,
        delta.files,
        delta.chunks,
        &keep_file,
        &order,
        &chunk_order,
        segment_offset,
    )?;

    let mut segments = base.segments;
    segments.extend(delta.segments);

    let graph = merged_graph(
        &base.graph,
        &order.base_files,
        facts.graph_rows,
        files.len(),
    )?;
    if !graph.within(files.len()) || !delta.recency.within(files.len()) {
        return Err(corrupt("its graph or recency names a missing file"));
    }

    let summaries = merge_summaries(
        base.summaries,
        delta.summaries,
        &order.base_files,
        &order.delta_files,
        &facts.removed_dirs,
        segment_offset,
    );

    let (params, base_postings, _) = base.lexical.into_parts();
    let (_, delta_postings, _) = delta.lexical.into_parts();
    Ok(IndexPack {
        meta: delta.meta,
        files,
        chunks,
        segments,
        lexical: Bm25Index::from_parts(params, base_postings, chunk_order.doc_len),
        summaries,
        graph,
        references: base.references,
        recency: delta.recency,
        history: delta.history,
        // The merged files' tables are built by the first query that needs them.
        paths: None,
        delta: None,
        overlay: Some(Box::new(Overlay {
            base_chunks: chunk_order.base_chunks,
            postings: delta_postings,
            references: delta.references.into_lists(),
            dropped_names: facts.dropped_names,
            segment_offset,
        })),
        derived: Default::default(),
    })
}

/// Refuses a delta that cannot be merged onto `base`, before anything is sized by its counts.
fn check_mergeable(
    base: &IndexPack,
    delta: &IndexPack,
    facts: &DeltaFacts,
) -> Result<(), PackError> {
    if base.delta.is_some() {
        return Err(corrupt("its base is a delta itself"));
    }
    // The base's chunks keep their token counts: the same encodings, or readers would index
    // past them.
    if base.meta.encodings != delta.meta.encodings || base.meta.settings != delta.meta.settings {
        return Err(corrupt(
            "its base was indexed with other settings or encodings",
        ));
    }
    // Both packs' files tile their chunk tables (as the indexer writes them), and the merged
    // counts are at most the two together: nothing below is sized by a count unchecked.
    let tiles = |p: &IndexPack| {
        let mut next = 0u64;
        p.files.iter().all(|f| {
            let ok = u64::from(f.first_chunk) == next;
            next += u64::from(f.chunk_count);
            ok
        }) && next == p.chunks.len() as u64
    };
    if !tiles(base) || !tiles(delta) {
        return Err(corrupt("a pack's files do not tile its chunk table"));
    }
    if facts.files as usize > base.files.len() + delta.files.len()
        || facts.chunks as usize > base.chunks.len() + delta.chunks.len()
    {
        return Err(corrupt(
            "it claims more files or chunks than the two packs hold",
        ));
    }
    Ok(())
}

/// Where each file goes in the merged table.
struct FileOrder {
    /// Per merged file, whether it is the base's (`true`) or the delta's.
    from_base: Vec<bool>,
    /// Each base file's merged number, [`DROPPED`] for a dropped one.
    base_files: Vec<u32>,
    /// Each delta file's merged number.
    delta_files: Vec<u32>,
}

/// The base's kept files (`keep_file`) and the delta's, merged by path.
fn merged_files(
    base: &IndexPack,
    delta: &IndexPack,
    keep_file: &[bool],
    facts: &DeltaFacts,
) -> Result<FileOrder, PackError> {
    let mut file_from_base = Vec::with_capacity(facts.files as usize);
    let mut base_files = vec![DROPPED; base.files.len()];
    let mut delta_files = vec![DROPPED; delta.files.len()];
    let (mut i, mut j) = (0usize, 0usize);
    loop {
        while i < base.files.len() && !keep_file[i] {
            i += 1;
        }
        let take_base = match (base.files.get(i), delta.files.get(j)) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) if a.path == b.path => {
                return Err(corrupt(&format!("`{}` is both kept and changed", a.path)));
            }
            (Some(a), Some(b)) => a.path < b.path,
        };
        let merged = file_from_base.len() as u32;
        if take_base {
            base_files[i] = merged;
            i += 1;
        } else {
            delta_files[j] = merged;
            j += 1;
        }
        file_from_base.push(take_base);
    }
    if file_from_base.len() != facts.files as usize {
        return Err(corrupt("its file count does not match the merge"));
    }
    Ok(FileOrder {
        from_base: file_from_base,
        base_files,
        delta_files,
    })
}

/// Where each chunk goes in the merged table, and its length there.
struct ChunkOrder {
    /// Per base chunk, whether its file is kept.
    keep: Vec<bool>,
    /// Per merged chunk, whether it is the base's (`true`) or the delta's.
    from_base: Vec<bool>,
    /// Each base chunk's merged number, [`DROPPED`] for a dropped one.
    base_chunks: Vec<u32>,
    /// Each merged chunk's length (in terms), for BM25.
    doc_len: Vec<u32>,
}

/// The chunks follow their files (`order`); every file's chunks must lie in its pack's table.
fn merged_chunks(
    base: &IndexPack,
    delta: &IndexPack,
    keep_file: &[bool],
    order: &FileOrder,
    facts: &DeltaFacts,
) -> Result<ChunkOrder, PackError> {
    let chunk_flags = |pack: &IndexPack, keep: &[bool]| -> Result<Vec<bool>, PackError> {
        let mut live = vec![false; pack.chunks.len()];
        for (f, e) in pack.files.iter().enumerate() {
            let first = e.first_chunk as usize;
            let slot = live
                .get_mut(first..first + e.chunk_count as usize)
                .ok_or_else(|| corrupt("a file's chunks past the table"))?;
            slot.fill(keep.get(f).copied().unwrap_or(false));
        }
        Ok(live)
    };
    let keep_chunk = chunk_flags(base, keep_file)?;
    let counts_of = |files: &[FileEntry], keep: &[bool]| -> Vec<u32> {
        files
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(f, _)| f.chunk_count)
            .collect()
    };
    let base_counts = counts_of(&base.files, keep_file);
    let delta_counts = counts_of(&delta.files, &vec![true; delta.files.len()]);
    let (mut bc, mut dc) = (base_counts.iter(), delta_counts.iter());
    let mut chunk_from_base = Vec::with_capacity(facts.chunks as usize);
    for &b in &order.from_base {
        let n = if b { bc.next() } else { dc.next() };
        chunk_from_base.extend(std::iter::repeat_n(b, n.copied().unwrap_or(0) as usize));
    }
    if chunk_from_base.len() != facts.chunks as usize {
        return Err(corrupt("its chunk count does not match the merge"));
    }
    // Base chunk numbers in the merged table, and every chunk's length there.
    let mut base_chunks = vec![DROPPED; base.chunks.len()];
    let mut merged_base = chunk_from_base.iter().enumerate().filter(|(_, b)| **b);
    for (c, _) in keep_chunk.iter().enumerate().filter(|(_, k)| **k) {
        if let Some((m, _)) = merged_base.next() {
            base_chunks[c] = m as u32;
        }
    }
    let (base_lens, delta_lens) = (base.lexical.doc_lens(), delta.lexical.doc_lens());
    let mut doc_len = vec![0u32; chunk_from_base.len()];
    for (c, &m) in base_chunks.iter().enumerate() {
        if let Some(slot) = doc_len.get_mut(m as usize) {
            *slot = base_lens.get(c).copied().unwrap_or(0);
        }
    }
    let mut delta_slots = chunk_from_base.iter().enumerate().filter(|(_, b)| !**b);
    for &len in delta_lens {
        if let Some((m, _)) = delta_slots.next() {
            doc_len[m] = len;
        }
    }
    Ok(ChunkOrder {
        keep: keep_chunk,
        from_base: chunk_from_base,
        base_chunks,
        doc_len,
    })
}

/// The merged file and chunk tables, in place over the base's: each file's chunks where they
/// now are, the delta's texts in segments after the base's (`segment_offset`).
#[allow(clippy::too_many_arguments)]
fn placed_tables(
    base_files: Vec<FileEntry>,
    base_chunks: Vec<ChunkRecord>,
    delta_files: Vec<FileEntry>,
    delta_chunks: Vec<ChunkRecord>,
    keep_file: &[bool],
    order: &FileOrder,
    chunk_order: &ChunkOrder,
    segment_offset: u32,
) -> Result<(Vec<FileEntry>, Vec<ChunkRecord>), PackError> {
    let mut files = base_files;
    interleave(&mut files, keep_file, delta_files, &order.from_base);
    let mut chunks = base_chunks;
    interleave(
        &mut chunks,
        &chunk_order.keep,
        delta_chunks,
        &chunk_order.from_base,
    );
    if chunks.len() != chunk_order.from_base.len() {
        return Err(corrupt(
            "its files' chunks do not add up to its chunk table",
        ));
    }
    let mut next_chunk = 0u32;
    for (m, (file, &from_base)) in files.iter_mut().zip(&order.from_base).enumerate() {
        file.first_chunk = next_chunk;
        next_chunk += file.chunk_count;
        let own = chunks
            .get_mut(file.first_chunk as usize..next_chunk as usize)
            .ok_or_else(|| corrupt("its files' chunks do not add up to its chunk table"))?;
        for c in own {
            c.file = m as u32;
            if !from_base {
                c.segment += segment_offset;
            }
        }
    }
    Ok((files, chunks))
}

/// Import graph: the base's rows mapped (`base_files`), the delta's rows instead where it has
/// them.
fn merged_graph(
    base: &ImportGraph,
    base_files: &[u32],
    graph_rows: Vec<(u32, Vec<u32>)>,
    files: usize,
) -> Result<ImportGraph, PackError> {
    let mut imports: Vec<Vec<u32>> = vec![Vec::new(); files];
    for (b, &m) in base_files.iter().enumerate() {
        if m != DROPPED {
            imports[m as usize] = mapped_row(base, b as u32, base_files);
        }
    }
    for (f, row) in graph_rows {
        let slot = imports
            .get_mut(f as usize)
            .ok_or_else(|| corrupt("a graph row past the files"))?;
        *slot = row;
    }
    Ok(ImportGraph { imports })
}

/// The merged version's summaries: the kept files' from the base, the changed files' from the
/// delta (by merged file), the base's directories but those dropped or changed and the delta's
/// directories (by path), the delta's project summary; texts and lines where they are.
fn merge_summaries(
    base: StoredSummaries,
    delta: StoredSummaries,
    base_files: &[u32],
    delta_files: &[u32],
    removed_dirs: &[String],
    segment_offset: u32,
) -> StoredSummaries {
    let mut files: Vec<(super::super::summaries::StoredFile, u32, u32)> = Vec::new();
    for (k, f) in base.files.iter().enumerate() {
        if let Some(&m) = base_files.get(f.file as usize).filter(|m| **m != DROPPED) {
            let mut f = f.clone();
            f.file = m;
            files.push((
                f,
                layered_position(false, k as u32),
                layered_position(false, k as u32),
            ));
        }
    }
    for (k, f) in delta.files.iter().enumerate() {
        if let Some(&m) = delta_files.get(f.file as usize).filter(|m| **m != DROPPED) {
            let mut f = f.clone();
            f.file = m;
            files.push((
                f,
                layered_position(true, k as u32),
                layered_position(true, k as u32),
            ));
        }
    }
    files.sort_by_key(|f| f.0.file);
    let changed: HashSet<&str> = delta.dirs.iter().map(|d| d.path.as_str()).collect();
    let gone = |p: &str| {
        changed.contains(p) || removed_dirs.binary_search_by(|r| r.as_str().cmp(p)).is_ok()
    };
    let base_dir_text = |k: usize| layered_position(false, (base.files.len() + k) as u32);
    let delta_dir_text = |k: usize| layered_position(true, (delta.files.len() + k) as u32);
    let mut dirs: Vec<(super::super::summaries::StoredDir, u32)> = base
        .dirs
        .iter()
        .enumerate()
        .filter(|(_, d)| !gone(&d.path))
        .map(|(k, d)| (d.clone(), base_dir_text(k)))
        .chain(
            delta
                .dirs
                .iter()
                .enumerate()
                .map(|(k, d)| (d.clone(), delta_dir_text(k))),
        )
        .collect();
    dirs.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    let texts_from = files
        .iter()
        .map(|f| f.1)
        .chain(dirs.iter().map(|d| d.1))
        .collect();
    let lines_from = files.iter().map(|f| f.2).collect();
    StoredSummaries {
        files: files.into_iter().map(|f| f.0).collect(),
        dirs: dirs.into_iter().map(|d| d.0).collect(),
        project: delta.project,
        texts: base.texts,
        lines: base.lines,
        layered: Some(Box::new(LayeredTexts {
            texts_from,
            lines_from,
            texts: delta.texts,
            lines: delta.lines,
            segment_offset,
        })),
    }
}
