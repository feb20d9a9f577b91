//! Answering a query with context from the current index of a repository.
//!
//! The steps are the core's; this module only supplies the bytes: it brings the index up to date
//! (incrementally), searches it, reads the texts of the chosen chunks from their segments, and
//! lets the composer hold the prompt to the budget with the target model's tokenizer. The
//! tokenizer's tables are built on a second thread while the index is checked and opened, since
//! building them is the longest single step of a short run.

use ctxgate_core::compress::Compression;
use std::path::PathBuf;
use std::time::Instant;

use std::borrow::Cow;

use ctxgate_core::assemble::summaries::SizeClass;
use ctxgate_core::assemble::{AssembleError, ChunkSource, QueryOptions};
use ctxgate_core::catalog::{BudgetPolicy, Catalog, ModelBudget, resolve_budget};
use ctxgate_core::compose::{Piece, SummaryPiece};
use ctxgate_core::index::IndexPack;
use ctxgate_core::intent::QueryAnalysis;
use ctxgate_core::lists::ListId;
use ctxgate_core::profile::{Profile, ProfileReport};
use ctxgate_core::rank::Weights;
use ctxgate_core::tokens::Encoding;
use serde::Serialize;

use crate::IndexerError;
use crate::pipeline::{IndexOptions, IndexStatus, Progress, index_repo, open_current};
use crate::store::{LOCAL_ORG, Store, keys};

/// A request for context.
#[derive(Clone, Debug)]
pub struct AssembleRequest {
    /// The repository folder.
    pub repo: PathBuf,
    /// What the model will be asked.
    pub query: String,
    /// Hard limit on the prompt, in the model's tokens.
    pub budget: Option<u32>,
    /// Target model (id or alias).
    pub model: Option<String>,
    /// How a model's window is divided.
    pub policy: BudgetPolicy,
    /// How to (re-)index.
    pub index: IndexOptions,
    /// Files the client has open or recently edited.
    pub hot_paths: Vec<String>,
    /// How much each piece's text may be reduced.
    pub compression: Compression,
    /// How the budget is spent.
    pub profile: Profile,
    /// The error output a `repair` request answers.
    pub error_output: Option<String>,
    /// Dense retrieval's embedding model, if on.
    pub dense: Option<crate::embed::DenseConfig>,
    /// Stages plugged in between ranking and selection (`ctxgate_core::rank::Rerank`).
    pub rerankers: ctxgate_core::rank::Rerankers,
}

/// What compression saved.
#[derive(Clone, Debug, Serialize)]
pub struct Savings {
    /// Tokens compression took out of the pieces sent (their counts before, less after).
    pub compression_tokens_saved: u32,
    /// What those tokens would have cost at the target model's input price (`None` without a
    /// model, or for a model the catalog has no price for).
    pub compression_usd_saved: Option<f64>,
    /// The model whose price was used.
    pub priced_with: Option<String>,
}

/// How the budget was spent and why.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// The model's window as divided, when a model was named.
    pub window: Option<ModelBudget>,
    /// Tokens in the whole indexed repository, in the target's tokens.
    pub repo_tokens: u64,
    /// Files and chunks indexed.
    pub repo_files: usize,
    /// Chunks indexed.
    pub repo_chunks: usize,
    /// Tokens of the prompt without any code (framing and the query).
    pub frame_tokens: u32,
    /// Tokens given to code pieces.
    pub code_tokens: u32,
    /// How pieces were chosen, then the size strategy that chose the summaries.
    pub strategy: String,
    /// The repository's size relative to the room for context (`small`, `medium`, `large`).
    pub size_class: SizeClass,
    /// Chunks that matched the query.
    pub candidates: usize,
    /// Relevant chunks that did not fit.
    pub left_out: usize,
    /// Index version used and whether this run published it.
    pub index_version: u64,
    /// Whether the index was rebuilt for this request.
    pub index_status: IndexStatus,
    /// Milliseconds spent indexing, retrieving and composing.
    pub timings_ms: Timings,
}

/// Where the time went.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Checking and updating the index.
    pub index: u64,
    /// Opening the index and searching it.
    pub retrieve: u64,
    /// Reading texts, composing and counting.
    pub compose: u64,
}

/// The assembled context.
#[derive(Clone, Debug, Serialize)]
pub struct AssembleReport {
    /// The pieces in the prompt, in prompt order: verbatim ranges of files.
    pub pieces: Vec<Piece>,
    /// The summaries in the prompt (project, directories, files), in prompt order; never pieces.
    pub summaries: Vec<SummaryPiece>,
    /// The prompt's count with the target tokenizer.
    pub tokens_total: u32,
    /// The budget it is held to.
    pub budget: u32,
    /// The model, when one was named.
    pub model: Option<String>,
    /// The tokenizer (`o200k_base`, or `estimate(...)`).
    pub tokenizer: String,
    /// Whether `tokens_total` is exact.
    pub exact: bool,
    /// The prompt.
    pub prompt: String,
    /// What the caller should know.
    pub warnings: Vec<String>,
    /// What the request was understood to be.
    pub intent: QueryAnalysis,
    /// The budget analysis.
    pub analysis: Analysis,
    /// What compression saved.
    pub savings: Savings,
    /// The assembly profile and what it did.
    pub profile: ProfileReport,
}

/// Assembles context for `req` from the embedded store.
pub fn assemble(
    store: &Store,
    catalog: &Catalog,
    req: &AssembleRequest,
    progress: &dyn Progress,
) -> Result<AssembleReport, IndexerError> {
    let query = req.query.trim();
    if query.is_empty() {
        return Err(IndexerError::EmptyQuery);
    }
    let model = req
        .model
        .as_deref()
        .map(|m| catalog.resolve(m))
        .transpose()?;
    let resolved = resolve_budget(model, req.budget, &req.policy, Encoding::O200kBase)?;
    let spec = resolved.tokenizer;
    // Ready the tokenizer while the index is checked and opened.
    let data_dir = store.root().to_path_buf();
    let preload = std::thread::spawn(move || crate::token_tables::install(&data_dir, spec.base()));

    let t0 = Instant::now();
    let report = index_repo(store, &req.repo, &req.index, progress)?;
    let t1 = Instant::now();
    let mut warnings = report.warnings.clone();
    let opened = open_current(store, LOCAL_ORG, &report.project.id)?
        .ok_or_else(|| IndexerError::Corrupt("no current version after indexing".into()))?;
    let pack = &opened.pack;
    // The shipped parameters apply at query time, whatever a pack was built with.
    let mut options = QueryOptions {
        weights: weights(),
        // The shipped parameters apply at query time, whatever a pack was built with.
        bm25: bm25_override().unwrap_or_default(),
        hot_paths: req.hot_paths.clone(),
        exclude: Vec::new(),
        signatures_sent: Vec::new(),
        compression: req.compression,
        profile: req.profile,
        error_output: req.error_output.clone(),
        without_summaries: false,
        dense: Vec::new(),
        rerankers: req.rerankers.clone(),
    };
    let source = StoreChunks {
        store,
        org: LOCAL_ORG,
        project: &report.project.id,
    };
    if let Some(dense) = &req.dense {
        let tag = &opened.manifest.pack_sha256;
        options.dense = dense_hits(store, pack, tag, &source, dense, query, progress)?;
    }
    let _ = preload.join();
    let t2 = Instant::now();
    let done = ctxgate_core::assemble::assemble(pack, &source, query, &resolved, &options)?;
    if let Some(to) = crate::candidate_dump::requested() {
        crate::candidate_dump::write(&to, pack, &source, query, &options)?;
    }
    let t3 = Instant::now();
    warnings.extend(done.warnings.iter().cloned());
    let saved = done.compression_saved_tokens;
    let savings = Savings {
        compression_tokens_saved: saved,
        compression_usd_saved: model.map(|m| m.input_cost(saved)),
        priced_with: model.map(|m| m.id.clone()),
    };
    Ok(AssembleReport {
        tokens_total: done.tokens_total,
        budget: resolved.budget,
        model: resolved.model.clone(),
        tokenizer: spec.label(),
        exact: spec.is_exact(),
        prompt: done.prompt,
        pieces: done.pieces,
        summaries: done.summaries,
        warnings,
        intent: done.intent,
        analysis: Analysis {
            window: resolved.window,
            repo_tokens: done.repo_tokens,
            repo_files: pack.files.len(),
            repo_chunks: pack.chunks.len(),
            frame_tokens: done.frame_tokens,
            code_tokens: done.code_tokens,
            strategy: done.strategy,
            size_class: done.size_class,
            candidates: done.candidates,
            left_out: done.left_out,
            index_version: opened.version,
            index_status: report.status,
            timings_ms: Timings {
                index: (t1 - t0).as_millis() as u64,
                retrieve: (t2 - t1).as_millis() as u64,
                compose: (t3 - t2).as_millis() as u64,
            },
        },
        savings,
        profile: done.profile,
    })
}

/// The chunks nearest to `query` by embedding, scaled for ranking; chunks the cache lacks are
/// embedded first.
fn dense_hits(
    store: &Store,
    pack: &IndexPack,
    pack_sha256: &str,
    source: &dyn ChunkSource,
    dense: &crate::embed::DenseConfig,
    query: &str,
    progress: &dyn Progress,
) -> Result<Vec<(u32, f32)>, IndexerError> {
    let embedder = dense.embedder(store.root())?;
    let (table, _) = crate::embed::pack_vectors(
        store.root(),
        pack,
        pack_sha256,
        source,
        embedder.as_ref(),
        progress,
    )?;
    Ok(crate::embed::query_hits(embedder.as_ref(), &table, query)?)
}

/// Chunk texts read from their segments in the embedded store.
pub struct StoreChunks<'a> {
    /// The store.
    pub store: &'a Store,
    /// The owning organisation.
    pub org: &'a str,
    /// The project.
    pub project: &'a str,
}

impl ChunkSource for StoreChunks<'_> {
    fn text(&self, pack: &IndexPack, i: usize) -> Result<Option<String>, AssembleError> {
        let c = &pack.chunks[i];
        let key = keys::segment(self.org, self.project, &pack.segments[c.segment as usize]);
        let bytes = self
            .store
            .get_range(&key, u64::from(c.segment_offset), c.len() as usize)
            .map_err(|e| AssembleError::Source(e.to_string()))?;
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| AssembleError::Source(format!("chunk {} is not UTF-8", c.id)))
    }

    fn list(&self, pack: &IndexPack, id: ListId) -> Result<Option<Cow<'_, [u8]>>, AssembleError> {
        stored_list(pack, id, self.org, self.project, |key, start, len| {
            self.store
                .get_range(key, start, len)
                .map_err(|e| e.to_string())
        })
        .map(Some)
    }
}

/// Chunk texts read straight from the files of a data directory's object folder
/// ([`Store::objects_dir`]), without holding the store: for work off the request path that
/// reads many texts (embedding a whole version).
pub struct SegmentFiles {
    /// The object folder.
    pub objects: std::path::PathBuf,
    /// The owning organisation.
    pub org: String,
    /// The project.
    pub project: String,
}

impl ChunkSource for SegmentFiles {
    fn text(&self, pack: &IndexPack, i: usize) -> Result<Option<String>, AssembleError> {
        let c = &pack.chunks[i];
        let key = keys::segment(&self.org, &self.project, &pack.segments[c.segment as usize]);
        let path = self.objects.join(&key);
        let buf =
            crate::store::read_file_range(&path, u64::from(c.segment_offset), c.len() as usize)
                .map_err(|e| AssembleError::Source(format!("{}: {e}", path.display())))?;
        String::from_utf8(buf)
            .map(Some)
            .map_err(|_| AssembleError::Source(format!("chunk {} is not UTF-8", c.id)))
    }

    fn list(&self, pack: &IndexPack, id: ListId) -> Result<Option<Cow<'_, [u8]>>, AssembleError> {
        stored_list(pack, id, &self.org, &self.project, |key, start, len| {
            let path = self.objects.join(key);
            crate::store::read_file_range(&path, start, len)
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .map(Some)
    }
}

/// List value `id` read from its segment with `read(key, start, len)` and checked.
fn stored_list(
    pack: &IndexPack,
    id: ListId,
    org: &str,
    project: &str,
    read: impl FnOnce(&str, u64, usize) -> Result<Vec<u8>, String>,
) -> Result<Cow<'static, [u8]>, AssembleError> {
    let r = pack
        .list_range(id)
        .ok_or_else(|| AssembleError::Source(format!("{id} is not stored outside the pack")))?;
    let sha = pack.segments.get(r.segment as usize).ok_or_else(|| {
        AssembleError::Source(format!("list segment #{} is not listed", r.segment))
    })?;
    let key = keys::segment(org, project, sha);
    let bytes = read(&key, r.start, r.len as usize).map_err(AssembleError::Source)?;
    pack.verify_list(id, &bytes)
        .map_err(|e| AssembleError::Source(format!("{id}: {e} (segment `{key}`)")))?;
    Ok(Cow::Owned(bytes))
}

/// `CTXGATE_BM25=k1,b` for tuning experiments (not a supported setting).
fn bm25_override() -> Option<ctxgate_core::lexical::Bm25Params> {
    let spec = std::env::var("CTXGATE_BM25").ok()?;
    let v: Vec<f32> = spec
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    match v.as_slice() {
        [k1, b] => Some(ctxgate_core::lexical::Bm25Params { k1: *k1, b: *b }),
        _ => None,
    }
}

/// The ranking weights: the tuned defaults, changed by `CTXGATE_RANK_WEIGHTS=name=value,...`
/// (for tuning experiments; not a supported setting). A malformed value is logged and ignored.
pub fn weights() -> Weights {
    let (w, ignored) = Weights::tuned(std::env::var("CTXGATE_RANK_WEIGHTS").ok().as_deref());
    if let Some(why) = ignored {
        tracing::warn!("{why}");
    }
    w
}
