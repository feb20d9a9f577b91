//! Indexing a repository into a new published version, reusing everything unchanged.
//!
//! A file whose size and modification time match the previous version (and which was not
//! modified in the racy instant around that indexing) is not read at all; a file whose content
//! hash matches is not re-chunked or re-counted. When nothing changed no version is written.
//! Otherwise the new version's objects are written first (new chunk texts as one
//! content-addressed segment, then the pack, then the manifest) and the project's current
//! version flips last, under a per-project lock so that two indexers of one repository never
//! race: the second finds the first's version up to date and reuses it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ctxgate_core::chunk::{ChunkOptions, FileClass, FilterOptions, Language, chunk_text, classify};
use ctxgate_core::graph::{ImportGraph, import_specs};
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::open;
use ctxgate_core::index::{
    ChunkRecord, FORMAT_VERSION, FileEntry, FileStat, IndexPack, PackError, PackMeta, Recency,
    References, chunk_id,
};
use ctxgate_core::lexical::{Bm25Builder, Bm25Params, doc_terms};
use ctxgate_core::summary::file::{Extract, extract};
use ctxgate_core::tokens::Encoding;
use rayon::prelude::*;
use serde::Serialize;

use crate::IndexerError;
use crate::chat::ChatEndpoint;
use crate::store::{IndexStore, LOCAL_ORG, Manifest, ProjectItem, VersionItem, keys};
use crate::summarize::{SummaryReport, summarizer};
use crate::walk::{WalkOptions, walk};

/// How to index.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// Which skippable files to include, and the size limit.
    pub filter: FilterOptions,
    /// Walk settings.
    pub walk: WalkOptions,
    /// Chunk sizes.
    pub chunk: ChunkOptions,
    /// Encodings whose counts each chunk carries.
    pub encodings: Vec<Encoding>,
    /// Re-read and re-chunk every file.
    pub force: bool,
    /// A model that writes file summaries instead of the extractive summarizer.
    pub summarize_llm: Option<ChatEndpoint>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            filter: FilterOptions::default(),
            walk: WalkOptions::default(),
            chunk: ChunkOptions::default(),
            encodings: vec![Encoding::O200kBase, Encoding::Cl100kBase],
            force: false,
            summarize_llm: None,
        }
    }
}

impl IndexOptions {
    /// Everything that decides how files become chunks; `rules` changes when the chunker or the
    /// file classifier changes, so that no file keeps chunks cut by older rules.
    fn settings(&self) -> String {
        let c = &self.chunk;
        let f = &self.filter;
        format!(
            "rules=3;secrets={};chunk={},{},{},{};filter={},{},{},{};hidden={};links={};enc={}",
            ctxgate_core::secrets::RULES_VERSION,
            c.max_bytes,
            c.min_bytes,
            c.window_lines,
            c.overlap_lines,
            f.include_lock,
            f.include_minified,
            f.include_generated,
            f.max_file_bytes,
            self.walk.hidden,
            self.walk.follow_links,
            self.encodings
                .iter()
                .map(|e| e.name())
                .collect::<Vec<_>>()
                .join("+")
        )
    }
}

/// Receives progress while files are processed (a progress bar in the CLI).
pub trait Progress: Sync {
    /// Processing of `total` files starts.
    fn start(&self, total: u64);
    /// One file is done.
    fn advance(&self);
    /// All files are done.
    fn finish(&self);
}

/// Progress that goes nowhere.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64) {}
    fn advance(&self) {}
    fn finish(&self) {}
}

/// Whether indexing produced a new version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexStatus {
    /// A new version was published.
    Published,
    /// Nothing changed; the current version stands.
    UpToDate,
}

/// A file that was not chunked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    /// Repo-relative path.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// What an indexing run did.
#[derive(Clone, Debug, Serialize)]
pub struct IndexReport {
    /// The project.
    pub project: ProjectItem,
    /// The current version after the run.
    pub version: u64,
    /// Whether it is new.
    pub status: IndexStatus,
    /// Files the walk found.
    pub files_seen: usize,
    /// Files read and chunked in this run.
    pub files_chunked: usize,
    /// Files reused from the previous version.
    pub files_reused: usize,
    /// Files not chunked, and why.
    pub skipped: Vec<Skipped>,
    /// Chunks in the version.
    pub chunks: usize,
    /// Distinct chunk texts.
    pub unique_chunks: usize,
    /// Bytes of chunk text stored in this run.
    pub stored_bytes: u64,
    /// Total tokens per encoding.
    pub tokens: BTreeMap<String, u64>,
    /// Bytes of indexed text.
    pub text_bytes: u64,
    /// File, directory and project summaries.
    pub summaries: SummaryReport,
    /// Problems met (unreadable files, links, invalid UTF-8).
    pub warnings: Vec<String>,
    /// Wall time.
    pub elapsed_ms: u64,
}

/// The id of the local project for a repository folder: stable for its canonical path.
pub fn local_project_id(canonical: &Path) -> String {
    let digest = Sha256Digest::of(canonical.to_string_lossy().as_bytes());
    format!("p{}", &digest.to_hex()[..16])
}

/// Checks that `repo` is an existing folder and returns its canonical path.
pub fn canonical_repo(repo: &Path) -> Result<PathBuf, IndexerError> {
    let meta =
        std::fs::metadata(repo).map_err(|_| IndexerError::RepoMissing(repo.to_path_buf()))?;
    if !meta.is_dir() {
        return Err(IndexerError::RepoNotDir(repo.to_path_buf()));
    }
    repo.canonicalize()
        .map_err(IndexerError::io("resolve", repo))
}

/// A published version, opened.
pub struct OpenVersion {
    /// Its number.
    pub version: u64,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its index.
    pub pack: IndexPack,
}

/// Opens the current version of a project, if it has one.
pub fn open_current(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
) -> Result<Option<OpenVersion>, IndexerError> {
    let Some(item) = store.project(org, project)? else {
        return Ok(None);
    };
    let Some(version) = item.current_version else {
        return Ok(None);
    };
    let manifest_bytes = store.get_object(&keys::manifest(org, project, version))?;
    let manifest = open::read_manifest(org, project, version, &manifest_bytes)?;
    let pack = open::open_pack(&manifest, &store.get_object(&manifest.pack_key)?)?;
    Ok(Some(OpenVersion {
        version,
        manifest,
        pack,
    }))
}

enum Outcome {
    /// Same as before (index into the previous pack's files), possibly with a new stat.
    Reused { prev: usize, stat: FileStat },
    /// Read, and not chunked.
    Skipped { entry: FileEntry },
    /// Read and chunked.
    Fresh {
        entry: FileEntry,
        chunks: Vec<NewChunk>,
        extract: Extract,
    },
    /// Unreadable: left out with a warning.
    Failed { warning: String },
}

struct NewChunk {
    record: ChunkRecord,
    text: String,
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn stat_of(meta: &std::fs::Metadata) -> FileStat {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    #[cfg(unix)]
    let (ctime_ns, inode) = {
        use std::os::unix::fs::MetadataExt;
        (meta.ctime() * 1_000_000_000 + meta.ctime_nsec(), meta.ino())
    };
    #[cfg(not(unix))]
    let (ctime_ns, inode) = (0, 0);
    FileStat {
        size: meta.len(),
        mtime_ns,
        ctime_ns,
        inode,
    }
}

/// The most bytes of chunk text in one segment: well under every store's object limit (the
/// Worker's 32 MiB upload, R2, S3 single PUT, the Workers Cache API), and small enough that
/// an isolate reading a segment whole stays far from its memory limit.
pub const SEGMENT_CAP: usize = 4 << 20;

/// Writes each of `buffers` as a content-addressed segment (unless one with its bytes exists)
/// and names it in `segments`: chunk texts and postings alike.
fn store_segments(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    buffers: &[Vec<u8>],
    segments: &mut Vec<String>,
) -> Result<(), IndexerError> {
    for buffer in buffers {
        let sha = Sha256Digest::of(buffer).to_hex();
        let key = keys::segment(org, project_id, &sha);
        if !store.has_object(&key)? {
            store.put_object(&key, buffer)?;
        }
        segments.push(sha);
    }
    Ok(())
}

/// Postings up to this size stay in the pack: a small index loads them with it, cheaper than
/// one more read per query. Larger ones go to segments and are read per query term, so a
/// reader of a large index holds only its dictionary. `CTXGATE_POSTINGS_INLINE_MAX` (bytes)
/// overrides it, so tests can take the segment path on a small repository.
pub const POSTINGS_INLINE_MAX: usize = 1 << 20;

fn postings_inline_max() -> usize {
    std::env::var("CTXGATE_POSTINGS_INLINE_MAX")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(POSTINGS_INLINE_MAX)
}

/// Which project of which organisation an index run publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectTarget {
    /// The owning organisation.
    pub org: String,
    /// The project id (unique across organisations).
    pub id: String,
    /// The project's name within its organisation.
    pub name: String,
    /// How the project's source is shown (a URL); `None` shows the indexed folder.
    pub source: Option<String>,
}

impl ProjectTarget {
    /// Project `name` of `org`: its id is derived from both, so names never collide across orgs.
    pub fn named(org: &str, name: &str) -> Self {
        Self {
            org: org.into(),
            id: ctxgate_core::index::layout::project_id(org, name),
            name: name.into(),
            source: None,
        }
    }
}

/// Indexes the local folder `repo` for the local organisation (the CLI's default), publishing a
/// new version when anything changed.
pub fn index_repo(
    store: &dyn IndexStore,
    repo: &Path,
    opts: &IndexOptions,
    progress: &dyn Progress,
) -> Result<IndexReport, IndexerError> {
    let root = canonical_repo(repo)?;
    let target = ProjectTarget {
        org: LOCAL_ORG.into(),
        id: local_project_id(&root),
        name: root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into()),
        source: None,
    };
    index_project(store, &target, &root, opts, progress)
}

/// Indexes the folder `repo` as project `target`, publishing a new version when anything
/// changed.
pub fn index_project(
    store: &dyn IndexStore,
    target: &ProjectTarget,
    repo: &Path,
    opts: &IndexOptions,
    progress: &dyn Progress,
) -> Result<IndexReport, IndexerError> {
    let started = Instant::now();
    let root = canonical_repo(repo)?;
    if let Some(data) = store.local_root()
        && data.starts_with(&root)
    {
        return Err(IndexerError::DataDirInsideRepo {
            data: data.to_path_buf(),
            repo: root,
        });
    }
    let org = target.org.as_str();
    let project_id = target.id.clone();
    let name = target.name.clone();
    store.upsert_project(&ProjectItem {
        id: project_id.clone(),
        org: org.into(),
        name: name.clone(),
        source: target
            .source
            .clone()
            .unwrap_or_else(|| root.to_string_lossy().into_owned()),
        current_version: None,
        updated_at_ns: now_ns(),
    })?;
    let _lock = store.lock_project(&project_id, &format!("pid {}", std::process::id()))?;
    let indexed_at_ns = now_ns();
    let settings = opts.settings();
    let mut warnings = Vec::new();

    let current_version = store
        .project(org, &project_id)?
        .and_then(|p| p.current_version);
    let previous = match open_current(store, org, &project_id) {
        Ok(p) => p,
        Err(IndexerError::Pack(e @ PackError::Version { .. })) => {
            warnings.push(format!("previous index ignored: {e}"));
            None
        }
        // A damaged or missing previous version must not block every later run: rebuild.
        Err(e @ (IndexerError::Pack(_) | IndexerError::Corrupt(_) | IndexerError::Io { .. })) => {
            warnings.push(format!("previous index unreadable, rebuilding: {e}"));
            None
        }
        Err(e) => return Err(e),
    };
    let reusable = previous
        .as_ref()
        .filter(|p| !opts.force && p.pack.meta.settings == settings);
    let prev_by_path: HashMap<&str, usize> = reusable
        .map(|p| {
            p.pack
                .files
                .iter()
                .enumerate()
                .map(|(i, f)| (f.path.as_str(), i))
                .collect()
        })
        .unwrap_or_default();

    let (found, walk_warnings) = walk(&root, &opts.walk);
    warnings.extend(walk_warnings);
    progress.start(found.len() as u64);
    let data_dir = store.cache_root();
    let outcomes: Vec<(String, Outcome)> = found
        .par_iter()
        .map(|f| {
            let prev = prev_by_path
                .get(f.rel.as_str())
                .and_then(|&i| reusable.map(|p| (i, &p.pack)));
            let outcome = process_file(&f.rel, &f.abs, prev, opts, data_dir);
            progress.advance();
            (f.rel.clone(), outcome)
        })
        .collect();
    progress.finish();

    let files_seen = found.len();
    let mut changed = previous.is_none() || reusable.is_none();
    let mut seen_paths = 0usize;
    for (_, o) in &outcomes {
        match o {
            Outcome::Reused { .. } => seen_paths += 1,
            Outcome::Fresh { .. } | Outcome::Skipped { .. } => changed = true,
            Outcome::Failed { .. } => {}
        }
    }
    if let Some(p) = reusable
        && seen_paths != p.pack.files.len()
    {
        changed = true; // files were removed or became unreadable
    }
    // A model asked to summarize must summarize the unchanged files it has not summarized yet.
    let wanted = summarizer(opts.summarize_llm.as_ref());
    if let Some(p) = reusable
        && opts.summarize_llm.is_some()
    {
        changed |= outcomes.iter().any(|(_, o)| match o {
            Outcome::Reused { prev, .. } => {
                p.pack.files[*prev].chunk_count > 0
                    && p.pack
                        .summaries
                        .file(*prev as u32)
                        .is_none_or(|s| s.origin != wanted)
            }
            _ => false,
        });
    }
    for (_, o) in &outcomes {
        if let Outcome::Failed { warning } = o {
            warnings.push(warning.clone());
        }
    }

    if !changed && let Some(prev) = &previous {
        let pack = &prev.pack;
        let mut skipped = Vec::new();
        for f in &pack.files {
            if let Some(reason) = &f.skipped {
                skipped.push(Skipped {
                    path: f.path.clone(),
                    reason: reason.clone(),
                });
            }
        }
        let project = store
            .project(org, &project_id)?
            .ok_or_else(|| IndexerError::Corrupt("project vanished".into()))?;
        return Ok(IndexReport {
            project,
            version: prev.version,
            status: IndexStatus::UpToDate,
            files_seen,
            files_chunked: 0,
            files_reused: seen_paths,
            skipped,
            chunks: pack.chunks.len(),
            unique_chunks: unique(&pack.chunks),
            stored_bytes: 0,
            tokens: totals(pack),
            text_bytes: pack.meta.text_bytes,
            summaries: SummaryReport::unchanged(&pack.summaries, wanted),
            warnings,
            elapsed_ms: started.elapsed().as_millis() as u64,
        });
    }

    // Assemble the new pack: reused files keep their records, fresh ones bring new text.
    let prev_pack = reusable.map(|p| &p.pack);
    let mut files = Vec::with_capacity(outcomes.len());
    let mut chunks: Vec<ChunkRecord> = Vec::new();
    let mut texts: Vec<Option<String>> = Vec::new(); // text for fresh chunks, None for reused
    let mut skipped = Vec::new();
    let (mut files_chunked, mut files_reused) = (0, 0);
    let mut fresh_extracts: HashMap<u32, Extract> = HashMap::new();
    let mut reused_from: HashMap<u32, u32> = HashMap::new();
    for (_, outcome) in outcomes {
        let file_idx = files.len() as u32;
        match outcome {
            Outcome::Failed { .. } => continue,
            Outcome::Reused { prev, stat } => {
                let pack = prev_pack
                    .ok_or_else(|| IndexerError::Corrupt("reuse without a previous pack".into()))?;
                let mut entry = pack.files[prev].clone();
                entry.stat = stat;
                reused_from.insert(file_idx, prev as u32);
                let first = entry.first_chunk as usize;
                entry.first_chunk = chunks.len() as u32;
                for c in &pack.chunks[first..first + entry.chunk_count as usize] {
                    let mut c = c.clone();
                    c.file = file_idx;
                    chunks.push(c);
                    texts.push(None);
                }
                if let Some(reason) = &entry.skipped {
                    skipped.push(Skipped {
                        path: entry.path.clone(),
                        reason: reason.clone(),
                    });
                }
                files_reused += 1;
                files.push(entry);
            }
            Outcome::Skipped { entry } => {
                skipped.push(Skipped {
                    path: entry.path.clone(),
                    reason: entry.skipped.clone().unwrap_or_default(),
                });
                let mut entry = entry;
                entry.first_chunk = chunks.len() as u32;
                files.push(entry);
            }
            Outcome::Fresh {
                mut entry,
                chunks: fresh,
                extract,
            } => {
                fresh_extracts.insert(file_idx, extract);
                entry.first_chunk = chunks.len() as u32;
                entry.chunk_count = fresh.len() as u32;
                for mut c in fresh {
                    c.record.file = file_idx;
                    chunks.push(c.record);
                    texts.push(Some(c.text));
                }
                files_chunked += 1;
                files.push(entry);
            }
        }
    }
    for f in &files {
        if let Some(reason) = &f.skipped
            && reason.starts_with("not valid UTF-8")
        {
            warnings.push(format!("skipped `{}`: {reason}", f.path));
        }
    }
    if chunks.is_empty() {
        return Err(IndexerError::RepoEmpty {
            path: root,
            seen: files_seen,
        });
    }

    // Where every chunk text lives: previous segments for known texts, a new segment for the rest.
    let mut segments: Vec<String> = prev_pack.map(|p| p.segments.clone()).unwrap_or_default();
    let mut located: HashMap<Sha256Digest, (u32, u64)> = HashMap::new();
    if let Some(p) = prev_pack {
        for c in &p.chunks {
            located
                .entry(c.sha256)
                .or_insert((c.segment, c.segment_offset));
        }
    }
    // New texts go into segments of at most SEGMENT_CAP bytes (a chunk larger than the cap gets
    // a segment of its own), so no object comes near any store's size limit.
    let mut buffers: Vec<Vec<u8>> = Vec::new();
    for (c, text) in chunks.iter_mut().zip(&texts) {
        if let Some(&(seg, off)) = located.get(&c.sha256) {
            c.segment = seg;
            c.segment_offset = off;
        } else if let Some(text) = text {
            let full = buffers
                .last()
                .is_none_or(|b| !b.is_empty() && b.len() + text.len() > SEGMENT_CAP);
            if full {
                buffers.push(Vec::new());
            }
            let seg = (segments.len() + buffers.len() - 1) as u32;
            let buffer = buffers.last_mut().expect("a buffer was just ensured");
            let off = buffer.len() as u64;
            buffer.extend_from_slice(text.as_bytes());
            located.insert(c.sha256, (seg, off));
            c.segment = seg;
            c.segment_offset = off;
        } else {
            return Err(IndexerError::Corrupt(format!(
                "chunk {} has no stored text",
                c.id
            )));
        }
    }
    let stored_bytes = buffers.iter().map(|b| b.len() as u64).sum::<u64>();
    store_segments(store, org, &project_id, &buffers, &mut segments)?;
    // Keep only the segments still referenced.
    let mut used = vec![false; segments.len()];
    for c in &chunks {
        used[c.segment as usize] = true;
    }
    let mut remap = vec![0u32; segments.len()];
    let mut kept = Vec::new();
    for (i, s) in segments.into_iter().enumerate() {
        if used[i] {
            remap[i] = kept.len() as u32;
            kept.push(s);
        }
    }
    for c in &mut chunks {
        c.segment = remap[c.segment as usize];
    }
    let mut segments = kept;

    // BM25 over every chunk; reused chunks' texts come back from their segments.
    let segment_bytes: Vec<Option<Vec<u8>>> = {
        let mut need = vec![false; segments.len()];
        for (c, t) in chunks.iter().zip(&texts) {
            if t.is_none() {
                need[c.segment as usize] = true;
            }
        }
        segments
            .iter()
            .zip(need)
            .map(|(s, n)| {
                if n {
                    store
                        .get_object(&keys::segment(org, &project_id, s))
                        .map(Some)
                } else {
                    Ok(None)
                }
            })
            .collect::<Result<_, _>>()?
    };
    #[allow(clippy::type_complexity)]
    let terms: Vec<(Vec<(String, u16)>, Vec<String>, Vec<String>)> = chunks
        .par_iter()
        .zip(texts.par_iter())
        .map(|(c, t)| {
            let path = files[c.file as usize].path.as_str();
            let text: &str = match t {
                Some(t) => t,
                None => match segment_bytes[c.segment as usize]
                    .as_deref()
                    .and_then(|b| {
                        b.get(c.segment_offset as usize..(c.segment_offset + c.len()) as usize)
                    })
                    .and_then(|b| std::str::from_utf8(b).ok())
                {
                    Some(t) => t,
                    None => {
                        return Err(IndexerError::Corrupt(format!(
                            "chunk {} has no stored text",
                            c.id
                        )));
                    }
                },
            };
            let language = files[c.file as usize].language.as_str();
            Ok((
                doc_terms(text, path),
                import_specs(text, language),
                ctxgate_core::chunk::identifiers(text, Language::from_path(path)),
            ))
        })
        .collect::<Result<_, IndexerError>>()?;
    let mut builder = Bm25Builder::default();
    let mut specs: Vec<(String, Vec<String>)> = files
        .iter()
        .map(|f| (f.language.clone(), Vec::new()))
        .collect();
    let mut used = Vec::with_capacity(chunks.len());
    for (c, (t, imports, names)) in chunks.iter().zip(terms) {
        builder.add(&t);
        specs[c.file as usize].1.extend(imports);
        used.push(names);
    }
    // A large index's postings go to segments of their own, read by range per query term.
    let mut lexical = builder.finish(Bm25Params::default());
    let parts = lexical.split_postings(SEGMENT_CAP, postings_inline_max(), segments.len() as u32);
    store_segments(store, org, &project_id, &parts, &mut segments)?;
    drop(parts);
    let references = References::build(&chunks, &used);
    drop(used);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let graph = ImportGraph::build(&paths, &specs);
    let text_bytes = files
        .iter()
        .filter(|f| f.skipped.is_none())
        .map(|f| f.stat.size)
        .sum();
    let (summaries, summary_report, summary_warnings) =
        crate::summarize::build(crate::summarize::Inputs {
            root: &root,
            name: &name,
            files: &files,
            chunks: &chunks,
            encodings: &opts.encodings,
            fresh: fresh_extracts,
            reused: reused_from,
            previous: previous.as_ref().map(|p| &p.pack),
            reused_from_previous: reusable.is_some(),
            llm: opts.summarize_llm.as_ref(),
        });
    warnings.extend(summary_warnings);
    let recency = match crate::recency::last_changes(&root, ctxgate_core::index::recency::WINDOW) {
        Some((commits, ages)) => Recency::new(
            commits,
            files
                .iter()
                .enumerate()
                .filter_map(|(i, f)| ages.get(&f.path).map(|&age| (i as u32, age)))
                .collect(),
        ),
        None => Recency::default(),
    };
    let pack = IndexPack {
        meta: PackMeta {
            project: name,
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
        summaries,
        graph,
        references,
        recency,
        derived: Default::default(),
    };

    let mut version = previous
        .as_ref()
        .map_or(0, |p| p.version)
        .max(store.latest_version(&project_id)?)
        + 1;
    let bytes = pack.encode()?;
    // Version objects are never overwritten: a number whose pack exists (left by a killed run,
    // or written by a racing indexer) is skipped, so version numbers may have gaps.
    let mut skipped_numbers = 0;
    while !store.put_new_object(&keys::pack(org, &project_id, version), &bytes)? {
        skipped_numbers += 1;
        if skipped_numbers > 100 {
            return Err(IndexerError::Corrupt(format!(
                "100 version numbers after {version} already have packs"
            )));
        }
        version += 1;
    }
    let pack_key = keys::pack(org, &project_id, version);
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        org: org.into(),
        project: project_id.clone(),
        version,
        pack_key,
        pack_bytes: bytes.len() as u64,
        pack_sha256: Sha256Digest::of(&bytes).to_hex(),
        segment_keys: pack
            .segments
            .iter()
            .map(|s| keys::segment(org, &project_id, s))
            .collect(),
        created_at_ns: indexed_at_ns,
    };
    let manifest_json =
        serde_json::to_vec_pretty(&manifest).map_err(|e| IndexerError::Corrupt(e.to_string()))?;
    if !store.put_new_object(&keys::manifest(org, &project_id, version), &manifest_json)? {
        return Err(IndexerError::Busy {
            project: project_id.clone(),
            holder: format!("another indexer writing version {version}"),
        });
    }
    let item = VersionItem {
        project: project_id.clone(),
        version,
        manifest_key: keys::manifest(org, &project_id, version),
        files: pack.files.len() as u64,
        chunks: pack.chunks.len() as u64,
        created_at_ns: indexed_at_ns,
    };
    crash_point("before_publish");
    if !store.publish_version(org, &item, current_version)? {
        return Err(IndexerError::Corrupt(
            "another indexer published while this one held the lock".into(),
        ));
    }
    let project = store
        .project(org, &project_id)?
        .ok_or_else(|| IndexerError::Corrupt("project vanished".into()))?;
    Ok(IndexReport {
        project,
        version,
        status: IndexStatus::Published,
        files_seen,
        files_chunked,
        files_reused,
        skipped,
        chunks: pack.chunks.len(),
        unique_chunks: unique(&pack.chunks),
        stored_bytes,
        tokens: totals(&pack),
        text_bytes: pack.meta.text_bytes,
        summaries: summary_report,
        warnings,
        elapsed_ms: started.elapsed().as_millis() as u64,
    })
}

/// For crash tests: `CTXGATE_CRASH_AT=<point>` aborts the process there, as a kill would, so a
/// test can show that nothing half-written becomes visible.
fn crash_point(point: &str) {
    if std::env::var("CTXGATE_CRASH_AT").is_ok_and(|v| v == point) {
        tracing::error!("CTXGATE_CRASH_AT={point}: aborting");
        std::process::abort();
    }
}

fn unique(chunks: &[ChunkRecord]) -> usize {
    let mut shas: Vec<&Sha256Digest> = chunks.iter().map(|c| &c.sha256).collect();
    shas.sort_unstable();
    shas.dedup();
    shas.len()
}

fn totals(pack: &IndexPack) -> BTreeMap<String, u64> {
    pack.meta
        .encodings
        .iter()
        .filter_map(|e| Some((e.name().to_string(), pack.total_tokens(*e)?)))
        .collect()
}

/// Two seconds: files modified this close to (or after) the previous indexing are re-hashed,
/// since their stat may not show a change made in the same instant.
const RACY_NS: i64 = 2_000_000_000;

fn process_file(
    rel: &str,
    abs: &Path,
    prev: Option<(usize, &IndexPack)>,
    opts: &IndexOptions,
    data_dir: &Path,
) -> Outcome {
    let meta = match std::fs::metadata(abs) {
        Ok(m) => m,
        Err(e) => {
            return Outcome::Failed {
                warning: format!("skipped `{rel}`: cannot read metadata: {e}"),
            };
        }
    };
    let stat = stat_of(&meta);
    if let Some((i, pack)) = prev {
        let f = &pack.files[i];
        if f.stat == stat && stat.mtime_ns.max(stat.ctime_ns) < pack.meta.indexed_at_ns - RACY_NS {
            return Outcome::Reused { prev: i, stat };
        }
    }
    let language = Language::from_path(rel);
    let label = language.label(rel);
    let skipped_entry = |sha, reason: String| FileEntry {
        path: rel.to_string(),
        sha256: sha,
        stat,
        language: label.clone(),
        skipped: Some(reason),
        first_chunk: 0,
        chunk_count: 0,
    };
    if stat.size > opts.filter.max_file_bytes {
        let reason = format!(
            "too large ({} bytes > {})",
            stat.size, opts.filter.max_file_bytes
        );
        return Outcome::Skipped {
            entry: skipped_entry(Sha256Digest([0; 32]), reason),
        };
    }
    let bytes = match std::fs::read(abs) {
        Ok(b) => b,
        Err(e) => {
            return Outcome::Failed {
                warning: format!("skipped `{rel}`: cannot read: {e}"),
            };
        }
    };
    let sha = Sha256Digest::of(&bytes);
    if let Some((i, pack)) = prev
        && pack.files[i].sha256 == sha
    {
        return Outcome::Reused { prev: i, stat };
    }
    let class = classify(rel, &bytes, &opts.filter);
    if class != FileClass::Text {
        let reason = class.reason().unwrap_or_default();
        return Outcome::Skipped {
            entry: skipped_entry(sha, reason),
        };
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Outcome::Skipped {
            entry: skipped_entry(sha, "not valid UTF-8".into()),
        };
    };
    // Secrets are never stored, embedded or returned: chunks, counts and summaries are made
    // from the redacted text (same lines, so line numbers still point into the file).
    let text = match ctxgate_core::secrets::redact_source(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(redacted) => redacted,
    };
    // Tables are loaded only when something is counted: an unchanged re-index never pays.
    for &e in &opts.encodings {
        crate::token_tables::install(data_dir, e);
    }
    let spans = chunk_text(&text, language, &opts.chunk);
    let extract = extract(rel, language, &text);
    let mut ordinals: HashMap<Sha256Digest, u32> = HashMap::new();
    let chunks = spans
        .into_iter()
        .map(|s| {
            let body = &text[s.byte_start..s.byte_end];
            let csha = Sha256Digest::of(body.as_bytes());
            let ordinal = ordinals.entry(csha).or_insert(0);
            let id = chunk_id(rel, &csha, *ordinal);
            *ordinal += 1;
            NewChunk {
                record: ChunkRecord {
                    id,
                    file: 0,
                    kind: s.kind,
                    symbol: s.symbol,
                    start_line: s.start_line,
                    end_line: s.end_line,
                    byte_start: s.byte_start as u64,
                    byte_end: s.byte_end as u64,
                    sha256: csha,
                    tokens: opts.encodings.iter().map(|e| e.count(body)).collect(),
                    segment: 0,
                    segment_offset: 0,
                },
                text: body.to_string(),
            }
        })
        .collect::<Vec<_>>();
    Outcome::Fresh {
        entry: FileEntry {
            path: rel.to_string(),
            sha256: sha,
            stat,
            language: label,
            skipped: None,
            first_chunk: 0,
            chunk_count: 0,
        },
        chunks,
        extract,
    }
}
