//! The two halves of a run that changes something: building the new version whole from the
//! scan ([`build_version`]), and publishing it, whole or as a delta, with its lists in segments
//! ([`publish_version`]).

use std::collections::BTreeMap;
use std::path::Path;

use ctxgate_core::index::build::{Built, build};
use ctxgate_core::index::summaries::StoredSummaries;
use ctxgate_core::index::{IndexPack, PackMeta};
use ctxgate_core::summary::Summaries;

use super::{
    IndexOptions, OpenVersion, ProjectTarget, SEGMENT_CAP, Skipped, commit, delta, merge, previous,
    recency, scan, segments, terms, totals, unique, vectors,
};
use crate::IndexerError;
use crate::embed::{EmbedReport, Embedder};
use crate::store::IndexStore;
use crate::summarize::SummaryReport;

/// One indexing run's fixed facts: where it writes, which project, from which folder, how.
pub(super) struct Run<'a> {
    pub(super) store: &'a dyn IndexStore,
    pub(super) target: &'a ProjectTarget,
    pub(super) root: &'a Path,
    pub(super) opts: &'a IndexOptions,
    /// When the run started indexing (after its lock), the version's time.
    pub(super) indexed_at_ns: i64,
}

/// The new version built whole (its lists and texts still in the pack), with what the report
/// says of its building.
pub(super) struct Version {
    pub(super) whole: IndexPack,
    pub(super) summaries: Summaries,
    /// The previous version's summaries, when it had readable ones: a delta keeps theirs.
    pub(super) previous_summaries: Option<Summaries>,
    pub(super) skipped: Vec<Skipped>,
    pub(super) files_chunked: usize,
    pub(super) files_reused: usize,
    pub(super) stored_bytes: u64,
    pub(super) summary_report: SummaryReport,
}

/// Builds the new version from the scan's `outcomes`: files and chunks merged with those
/// reused from `reusable`, new texts placed in segments, the lexical index, references and
/// graph built, files summarized, recency and history read.
pub(super) fn build_version(
    run: &Run<'_>,
    previous: Option<&OpenVersion>,
    reusable: Option<&IndexPack>,
    settings: String,
    outcomes: Vec<(String, scan::Outcome)>,
    warnings: &mut Vec<String>,
) -> Result<Version, IndexerError> {
    let Run {
        store,
        target,
        root,
        opts,
        indexed_at_ns,
    } = *run;
    let org = target.org.as_str();
    let project_id = target.id.as_str();
    let files_seen = outcomes.len();
    let merge::Merged {
        files,
        mut chunks,
        texts,
        skipped,
        files_chunked,
        files_reused,
        fresh_extracts,
        reused_from,
    } = merge::merge(outcomes, reusable)?;
    warnings.extend(merge::utf8_warnings(&files));
    if chunks.is_empty() {
        return Err(IndexerError::RepoEmpty {
            path: root.to_path_buf(),
            seen: files_seen,
        });
    }
    let (segments, stored_bytes) =
        segments::place_texts(store, org, project_id, reusable, &mut chunks, &texts)?;
    let reused_texts =
        segments::reused_segments(store, org, project_id, &segments, &chunks, &texts)?;
    let terms = terms::chunk_terms(&files, &chunks, &texts, &reused_texts)?;
    drop(reused_texts);
    let Built {
        lexical,
        references,
        graph,
    } = build(&files, &chunks, terms);
    let text_bytes = files
        .iter()
        .filter(|f| f.skipped.is_none())
        .map(|f| f.stat.size)
        .sum();
    let previous_summaries = previous_summaries(store, org, project_id, previous, warnings);
    let (summaries, summary_report, summary_warnings) =
        crate::summarize::build(crate::summarize::Inputs {
            root,
            name: &target.name,
            files: &files,
            chunks: &chunks,
            encodings: &opts.encodings,
            fresh: fresh_extracts,
            reused: reused_from,
            previous: previous
                .zip(previous_summaries.as_ref())
                .map(|(p, s)| (&p.pack, s)),
            reused_from_previous: reusable.is_some(),
            llm: opts.summarize_llm.as_ref(),
        });
    warnings.extend(summary_warnings);
    let recency = recency(root, &files);
    // A fetched source's folder is new each time: its walk is not kept.
    let git_dir = target.git_dir.as_deref();
    let history_cache = store.cache_root().join("cache/history");
    let history = crate::history::chunk_history(
        root,
        git_dir,
        &files,
        &chunks,
        crate::history::MAX_COMMITS,
        git_dir.is_none().then_some(history_cache.as_path()),
    );
    let paths = Some(ctxgate_core::index::path_tables::PathTables::of(
        &files, &chunks,
    ));
    let whole = IndexPack {
        meta: PackMeta {
            project: target.name.clone(),
            encodings: opts.encodings.clone(),
            max_chunk_bytes: opts.chunk.max_bytes as u32,
            text_bytes,
            indexed_at_ns,
            settings,
        },
        files,
        chunks,
        segments,
        lexical,
        summaries: StoredSummaries::store(summaries.clone())
            .map_err(|e| IndexerError::Corrupt(format!("summaries: {e}")))?,
        graph,
        references,
        recency,
        history,
        paths,
        delta: None,
        overlay: None,
        derived: Default::default(),
    };
    Ok(Version {
        whole,
        summaries,
        previous_summaries,
        skipped,
        files_chunked,
        files_reused,
        stored_bytes,
        summary_report,
    })
}

/// The previous version's summaries with their texts (those of unchanged files are kept);
/// unreadable ones are rebuilt rather than block the run.
fn previous_summaries(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    previous: Option<&OpenVersion>,
    warnings: &mut Vec<String>,
) -> Option<Summaries> {
    match previous {
        Some(p) => match previous::summaries(store, org, project_id, &p.pack) {
            Ok(s) => Some(s),
            Err(e) => {
                warnings.push(format!(
                    "previous summaries unreadable, summarizing again: {e}"
                ));
                None
            }
        },
        None => None,
    }
}

/// A large index's lists go to segments of their own, read by range per query term and per
/// named symbol (and a large dictionary's keys, in blocks after them); large summary texts
/// too: a query reads the few it shows.
fn store_lists(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    pack: &mut IndexPack,
) -> Result<(), IndexerError> {
    let inline_max = segments::lists_inline_max();
    let parts = pack
        .lexical
        .split_postings(SEGMENT_CAP, inline_max, pack.segments.len() as u32);
    segments::store_segments(store, org, project_id, &parts, &mut pack.segments)?;
    let parts = pack
        .references
        .split(SEGMENT_CAP, inline_max, pack.segments.len() as u32);
    segments::store_segments(store, org, project_id, &parts, &mut pack.segments)?;
    let parts = pack
        .summaries
        .split(SEGMENT_CAP, inline_max, pack.segments.len() as u32);
    segments::store_segments(store, org, project_id, &parts, &mut pack.segments)?;
    Ok(())
}

/// Publishes the version built (`whole`): its vectors embedded when `embedder` is given, as a
/// delta over `previous` when the change is small, its lists in segments of their own, then
/// the manifest and the project's current version (`current` until now). The version's number,
/// what the report counts of it, and the embedding's report.
pub(super) fn publish_version(
    run: &Run<'_>,
    previous: Option<&OpenVersion>,
    current_version: Option<u64>,
    embedder: Option<&dyn Embedder>,
    whole: IndexPack,
    summaries: Summaries,
    previous_summaries: Option<Summaries>,
) -> Result<(u64, Counts, Option<EmbedReport>), IndexerError> {
    let Run {
        store,
        target,
        root,
        opts,
        indexed_at_ns,
    } = *run;
    let org = target.org.as_str();
    let project_id = target.id.as_str();
    let embedded = match embedder {
        Some(e) => Some(vectors::embed_version(
            store, org, project_id, &whole, previous, e,
        )?),
        None => None,
    };
    let counts = Counts {
        chunks: whole.chunks.len(),
        unique_chunks: unique(&whole.chunks),
        tokens: totals(&whole),
        text_bytes: whole.meta.text_bytes,
    };
    // A small change is published as a delta over the previous version's base: the base's
    // objects stay as they are, and only the changed files' own index is uploaded.
    let layered = match (previous, opts.force) {
        (Some(p), false) => delta::over(
            store,
            org,
            project_id,
            p,
            previous_summaries,
            &whole,
            &summaries,
        )?,
        _ => None,
    };
    drop(summaries);
    let (mut pack, base_manifest) = match layered {
        Some((delta, base)) => (delta, Some(base)),
        None => (whole, None),
    };
    store_lists(store, org, project_id, &mut pack)?;
    let base = commit::Base {
        previous: previous.map(|p| p.version),
        current: current_version,
        indexed_at_ns,
        origin: target
            .origin
            .clone()
            .or_else(|| crate::recency::origin(root)),
        layered_on: base_manifest,
    };
    let version = commit::publish(
        store,
        org,
        project_id,
        &pack,
        embedded.as_ref().map(|(t, _)| t),
        &base,
    )?;
    Ok((version, counts, embedded.map(|(_, r)| r)))
}

/// What a report says of the version built, whether it is published whole or as a delta.
pub(super) struct Counts {
    pub(super) chunks: usize,
    pub(super) unique_chunks: usize,
    pub(super) tokens: BTreeMap<String, u64>,
    pub(super) text_bytes: u64,
}
