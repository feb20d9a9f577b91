//! Indexing a repository into a new published version, reusing everything unchanged.
//!
//! A file whose size and modification time match the previous version (and which was not
//! modified in the racy instant around that indexing) is not read at all; a file whose content
//! hash matches is not re-chunked or re-counted. When nothing changed no version is written.
//! Otherwise the new version's objects are written first (new chunk texts as one
//! content-addressed segment, then the pack, then the manifest) and the project's current
//! version flips last, under a per-project lock so that two indexers of one repository never
//! race: the second finds the first's version up to date and reuses it.

mod commit;
mod delta;
mod merge;
mod previous;
mod scan;
mod segments;
mod terms;
mod vectors;
mod version;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ctxgate_core::chunk::{ChunkOptions, FilterOptions};
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::{ChunkRecord, FileEntry, IndexPack, Recency};
use ctxgate_core::source::Origin;
use ctxgate_core::source::SourceSpec;
use ctxgate_core::tokens::Encoding;
use serde::Serialize;

pub use crate::progress::{NoProgress, Progress};
pub use previous::{OpenVersion, open_current, summaries as load_summaries};
pub use segments::{LISTS_INLINE_MAX, SEGMENT_CAP};
use version::{Run, Version};

use crate::IndexerError;
use crate::chat::ChatEndpoint;
use crate::store::{IndexStore, LOCAL_ORG, ProjectItem};
use crate::summarize::{SummaryReport, summarizer};
use crate::walk::WalkOptions;

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
    /// An embeddings API whose vectors of the chunks are published with the version (the
    /// Lambda's `CTXGATE_EMBED_*`); `None` publishes none.
    pub embed: Option<crate::embed::openai::EmbeddingsEndpoint>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            filter: FilterOptions::default(),
            walk: WalkOptions::default(),
            chunk: chunk_options(),
            encodings: vec![Encoding::O200kBase, Encoding::Cl100kBase],
            force: false,
            summarize_llm: None,
            embed: None,
        }
    }
}

/// The chunk sizes: the defaults, or `CTXGATE_CHUNK_MAX_BYTES=N` for chunking experiments (not
/// a supported setting, like `CTXGATE_RANK_WEIGHTS`; the sizes are part of the index settings,
/// so an index cut with others is cut again). A malformed value is logged and ignored.
fn chunk_options() -> ChunkOptions {
    let mut opts = ChunkOptions::default();
    if let Ok(v) = std::env::var("CTXGATE_CHUNK_MAX_BYTES") {
        match v.parse::<usize>() {
            Ok(n) if n > opts.min_bytes => opts.max_bytes = n,
            _ => tracing::warn!("CTXGATE_CHUNK_MAX_BYTES={v} ignored"),
        }
    }
    opts
}

impl IndexOptions {
    /// Everything that decides how files become chunks; `rules` changes when the chunker or the
    /// file classifier changes, so that no file keeps chunks cut by older rules.
    fn settings(&self) -> String {
        let c = &self.chunk;
        let f = &self.filter;
        format!(
            "rules=4;secrets={};chunk={},{},{},{};filter={},{},{},{};hidden={};links={};enc={}",
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
    /// The vectors published with the version, when the run embeds: how many chunks have one
    /// and how many texts the provider was asked for (the rest were reused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<crate::embed::EmbedReport>,
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

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
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
    /// The repository and commit the files came from, for links to them; `None` reads them
    /// from the folder's git work tree, when it is in one.
    pub origin: Option<Origin>,
    /// The repository whose HEAD's tree the files are (a fetched git source), read for their
    /// history; `None` reads the folder's git work tree, when it is in one.
    pub git_dir: Option<PathBuf>,
}

impl ProjectTarget {
    /// Project `name` of `org`: its id is derived from both, so names never collide across orgs.
    pub fn named(org: &str, name: &str) -> Self {
        Self {
            org: org.into(),
            id: ctxgate_core::index::layout::project_id(org, name),
            name: name.into(),
            source: None,
            origin: None,
            git_dir: None,
        }
    }
}

/// The origin of files fetched from `spec` at `revision`: a git URL and its commit (tarballs
/// and folders have none here; a folder's is read from its work tree).
pub fn fetched_origin(spec: &SourceSpec, revision: Option<&str>) -> Option<Origin> {
    match spec {
        SourceSpec::Git { url, .. } => Some(Origin::new(Some(url), revision, "")),
        _ => None,
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
        origin: None,
        git_dir: None,
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
    refuse_data_dir_inside(store, &root)?;
    let org = target.org.as_str();
    let project_id = target.id.as_str();
    register(store, target, &root)?;
    let _lock = store.lock_project(project_id, &format!("pid {}", std::process::id()))?;
    let indexed_at_ns = now_ns();
    let settings = opts.settings();
    let mut warnings = Vec::new();

    let current_version = store
        .project(org, project_id)?
        .and_then(|p| p.current_version);
    let previous = previous::read(store, org, project_id, &mut warnings)?;
    let reusable = previous
        .as_ref()
        .filter(|p| !opts.force && p.pack.meta.settings == settings)
        .map(|p| &p.pack);
    let outcomes = scan::scan(
        &root,
        reusable,
        opts,
        store.cache_root(),
        progress,
        &mut warnings,
    );
    let files_seen = outcomes.len();
    let wanted = summarizer(opts.summarize_llm.as_ref());
    let model_summaries = opts.summarize_llm.as_ref().map(|_| wanted.as_str());
    let change = scan::change(&outcomes, previous.is_some(), reusable, model_summaries);
    let embedder = match &opts.embed {
        Some(endpoint) => Some(crate::embed::openai::OpenAiEmbeddings::new(endpoint)?),
        None => None,
    };
    let vectors_missing = |prev: &OpenVersion| {
        embedder
            .as_ref()
            .is_some_and(|e| vectors::missing(prev, crate::embed::Embedder::model(e)))
    };
    // A version with history is rebuilt when HEAD moved, even with no file changed: lines
    // committed since have writers now.
    let git_dir = target.git_dir.as_deref();
    let head_moved = |prev: &OpenVersion| {
        let had = prev.pack.history.head();
        !had.is_empty() && crate::history::head_of(&root, git_dir).as_deref() != Some(had)
    };
    if !change.changed
        && let Some(prev) = &previous
        && !vectors_missing(prev)
        && !head_moved(prev)
    {
        let project = store
            .project(org, project_id)?
            .ok_or_else(|| IndexerError::Corrupt("project vanished".into()))?;
        let mut report = up_to_date(project, prev, files_seen, change.reused, &wanted);
        report.warnings = warnings;
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        return Ok(report);
    }

    let run = Run {
        store,
        target,
        root: &root,
        opts,
        indexed_at_ns,
    };
    let Version {
        whole,
        summaries,
        previous_summaries,
        skipped,
        files_chunked,
        files_reused,
        stored_bytes,
        summary_report,
    } = version::build_version(
        &run,
        previous.as_ref(),
        reusable,
        settings,
        outcomes,
        &mut warnings,
    )?;
    let (version, counts, embeddings) = version::publish_version(
        &run,
        previous.as_ref(),
        current_version,
        embedder.as_ref().map(|e| e as &dyn crate::embed::Embedder),
        whole,
        summaries,
        previous_summaries,
    )?;
    let project = store
        .project(org, project_id)?
        .ok_or_else(|| IndexerError::Corrupt("project vanished".into()))?;
    Ok(IndexReport {
        project,
        version,
        status: IndexStatus::Published,
        files_seen,
        files_chunked,
        files_reused,
        skipped,
        chunks: counts.chunks,
        unique_chunks: counts.unique_chunks,
        stored_bytes,
        tokens: counts.tokens,
        text_bytes: counts.text_bytes,
        summaries: summary_report,
        embeddings,
        warnings,
        elapsed_ms: started.elapsed().as_millis() as u64,
    })
}

/// Records `target` as a project (its source, or the folder `root`) before its lock is taken.
fn register(
    store: &dyn IndexStore,
    target: &ProjectTarget,
    root: &Path,
) -> Result<(), IndexerError> {
    store.upsert_project(&ProjectItem {
        id: target.id.clone(),
        org: target.org.clone(),
        name: target.name.clone(),
        source: target
            .source
            .clone()
            .unwrap_or_else(|| root.to_string_lossy().into_owned()),
        current_version: None,
        updated_at_ns: now_ns(),
    })
}

/// ctxgate never writes inside a repository it indexes.
fn refuse_data_dir_inside(store: &dyn IndexStore, root: &Path) -> Result<(), IndexerError> {
    match store.local_root() {
        Some(data) if data.starts_with(root) => Err(IndexerError::DataDirInsideRepo {
            data: data.to_path_buf(),
            repo: root.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// The report of a run that found nothing changed: `prev` stands (warnings and time are the
/// caller's to fill in).
fn up_to_date(
    project: ProjectItem,
    prev: &OpenVersion,
    files_seen: usize,
    files_reused: usize,
    wanted: &str,
) -> IndexReport {
    let pack = &prev.pack;
    let skipped = pack
        .files
        .iter()
        .filter_map(|f| {
            f.skipped.as_ref().map(|reason| Skipped {
                path: f.path.clone(),
                reason: reason.clone(),
            })
        })
        .collect();
    IndexReport {
        project,
        version: prev.version,
        status: IndexStatus::UpToDate,
        files_seen,
        files_chunked: 0,
        files_reused,
        skipped,
        chunks: pack.chunks.len(),
        unique_chunks: unique(&pack.chunks),
        stored_bytes: 0,
        tokens: totals(pack),
        text_bytes: pack.meta.text_bytes,
        summaries: SummaryReport::unchanged(&pack.summaries, wanted.to_owned()),
        embeddings: None,
        warnings: Vec::new(),
        elapsed_ms: 0,
    }
}

/// The files' last changes in the repository's git history, when it has one.
fn recency(root: &Path, files: &[FileEntry]) -> Recency {
    match crate::recency::last_changes(root, ctxgate_core::index::recency::WINDOW) {
        Some((commits, ages)) => Recency::new(
            commits,
            files
                .iter()
                .enumerate()
                .filter_map(|(i, f)| ages.get(&f.path).map(|&age| (i as u32, age)))
                .collect(),
        ),
        None => Recency::default(),
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
