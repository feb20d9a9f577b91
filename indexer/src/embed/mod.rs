//! Embedding chunks and requests for dense retrieval.
//!
//! One trait, [`Embedder`], with two providers: [`local::MiniLm`] (all-MiniLM-L6-v2 run by
//! candle on this machine, the offline default; feature `embed-local`) and
//! [`openai::OpenAiEmbeddings`] (any OpenAI-compatible `/embeddings` endpoint). Vectors are
//! cached by the chunk's sha256 and the model ([`cache::VectorCache`]), so a re-index embeds
//! only the chunks that changed, and identical chunks are embedded once.
//!
//! [`vectors_for`] turns a pack into the [`VectorTable`] the core ranks with.

pub mod cache;
#[cfg(feature = "embed-local")]
pub mod distilled;
#[cfg(feature = "embed-local")]
pub mod local;
#[cfg(feature = "embed-local")]
pub mod model_files;
pub mod openai;

use std::collections::HashMap;

use ctxgate_core::assemble::{AssembleError, ChunkSource, Needs};
use ctxgate_core::dense::VectorTable;
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::IndexPack;

use crate::progress::Progress;

/// Turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// The model's name as vectors are labelled and cached: vectors of different models never
    /// mix.
    fn model(&self) -> &str;
    /// Dimensions of its vectors.
    fn dims(&self) -> usize;
    /// How many texts one call should carry.
    fn batch_size(&self) -> usize {
        32
    }
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// How far its nearest chunks are trusted against the other signals (multiplies the
    /// scaled hits, so the `dense` rank weight stays one setting for every model): a static
    /// model's neighbours are coarser than a transformer's.
    fn trust(&self) -> f32 {
        1.0
    }
}

/// Why texts could not be embedded.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model's files are missing or unreadable.
    #[error("embedding model: {0}")]
    Model(String),
    /// The model failed on its input.
    #[error("embedding failed: {0}")]
    Inference(String),
    /// The endpoint could not be reached or answered with an error status.
    #[error("embeddings request to {url} failed: {message}")]
    Http {
        /// The endpoint.
        url: String,
        /// The answer's status, if one came.
        status: Option<u16>,
        /// What went wrong (the server's own error message when it gave one).
        message: String,
    },
    /// The answer is not an embeddings response, or does not match the request.
    #[error("the answer from {url} is not a valid embeddings response: {message}")]
    Answer {
        /// The endpoint.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The vector cache failed.
    #[error("embedding cache: {0}")]
    Cache(#[from] rusqlite::Error),
    /// A chunk's text could not be read.
    #[error("chunk text: {0}")]
    Text(String),
}

impl EmbedError {
    /// The machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            EmbedError::Model(_) => ErrorCode::EmbedModelUnavailable,
            EmbedError::Inference(_) => ErrorCode::EmbedFailed,
            EmbedError::Http {
                status: Some(401 | 403),
                ..
            } => ErrorCode::EmbedUnauthorized,
            EmbedError::Http {
                status: Some(429), ..
            } => ErrorCode::EmbedRateLimited,
            EmbedError::Http {
                status: Some(_), ..
            } => ErrorCode::EmbedHttpError,
            EmbedError::Http { status: None, .. } => ErrorCode::EmbedUnreachable,
            EmbedError::Answer { .. } => ErrorCode::EmbedBadAnswer,
            EmbedError::Cache(_) => ErrorCode::EmbedCacheError,
            EmbedError::Text(_) => ErrorCode::StoreCorrupt,
        }
    }

    /// What a tenant of a server may be told: a provider's URL and its own error text (OpenAI's
    /// 401 names a masked key) belong to the server's operator, who finds them in the log
    /// (the full [`std::fmt::Display`]); the code and status say what failed.
    pub fn public_message(&self) -> String {
        let what = match self {
            EmbedError::Http {
                status: Some(status),
                ..
            } => format!("the embeddings provider refused the request (HTTP {status})"),
            EmbedError::Http { status: None, .. } => {
                "the embeddings provider could not be reached".to_owned()
            }
            EmbedError::Answer { .. } => {
                "the embeddings provider's answer is not a valid embeddings response".to_owned()
            }
            _ => return self.to_string(),
        };
        format!("{what}; the server's log has the provider's answer")
    }
}

/// Which embedding model dense retrieval uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DenseConfig {
    /// all-MiniLM-L6-v2 on this machine (feature `embed-local`).
    Local,
    /// The static table distilled from it ([`distilled`]; feature `embed-local`).
    Static,
    /// An OpenAI-compatible embeddings API.
    Api(openai::EmbeddingsEndpoint),
}

impl DenseConfig {
    /// The embedder, loading (and on first use downloading) the local model into `data_dir`.
    pub fn embedder(&self, data_dir: &std::path::Path) -> Result<Box<dyn Embedder>, EmbedError> {
        match self {
            #[cfg(feature = "embed-local")]
            DenseConfig::Local => {
                let dir = model_files::ensure_minilm(data_dir)?;
                Ok(Box::new(local::MiniLm::load(&dir)?))
            }
            #[cfg(feature = "embed-local")]
            DenseConfig::Static => {
                let dir = model_files::ensure_minilm(data_dir)?;
                Ok(Box::new(distilled::StaticMiniLm::load(&dir)?))
            }
            #[cfg(not(feature = "embed-local"))]
            DenseConfig::Local | DenseConfig::Static => {
                let _ = data_dir;
                Err(EmbedError::Model(
                    "this build has no local embedding model (feature `embed-local`)".into(),
                ))
            }
            DenseConfig::Api(endpoint) => Ok(Box::new(openai::OpenAiEmbeddings::new(endpoint)?)),
        }
    }
}

/// How many nearest chunks become candidates.
pub const DENSE_CANDIDATES: usize = 100;

/// The chunks of `table` nearest to `query`, scaled for ranking: the one way every host turns a
/// query into dense hits (the CLI per call, the server with its tables cached).
pub fn query_hits(
    embedder: &dyn Embedder,
    table: &VectorTable,
    query: &str,
) -> Result<Vec<(u32, f32)>, EmbedError> {
    let vector = embedder
        .embed(&[query])?
        .pop()
        .ok_or_else(|| EmbedError::Inference("no vector for the query".into()))?;
    let nearest = table
        .nearest(&vector, DENSE_CANDIDATES)
        .map_err(|e| EmbedError::Inference(e.to_string()))?;
    let trust = embedder.trust();
    Ok(ctxgate_core::dense::scaled_hits(&nearest)
        .into_iter()
        .map(|(c, v)| (c, v * trust))
        .collect())
}

/// The text embedded for a chunk: its path and symbol, then its code, so that a chunk whose
/// body never names its purpose is still found by where it lives. `code` is a stored chunk
/// text, already redacted by the indexer (`secrets::redact_source`): no secret reaches a model
/// or an embeddings API.
pub fn chunk_text(path: &str, symbol: Option<&str>, code: &str) -> String {
    match symbol {
        Some(s) => format!("{path} {s}\n{code}"),
        None => format!("{path}\n{code}"),
    }
}

/// What [`vectors_for`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmbedReport {
    /// Chunks with a vector.
    pub chunks: usize,
    /// Distinct texts the model was asked for (the rest came from the cache).
    pub embedded: usize,
}

/// A previous version's published vectors, by what each depends on ([`embedding_key`]): a
/// re-index copies their rows as stored instead of asking the model again.
pub struct Reuse {
    table: VectorTable,
    rows: HashMap<Sha256Digest, u32>,
}

impl Reuse {
    /// `table`'s rows, each named by its key (rows without a vector are left out).
    pub fn new(table: VectorTable, keys: impl IntoIterator<Item = Sha256Digest>) -> Self {
        let rows = keys
            .into_iter()
            .enumerate()
            .filter(|&(i, _)| table.scales.get(i).is_some_and(|&s| s > 0.0))
            .map(|(i, key)| (key, i as u32))
            .collect();
        Self { table, rows }
    }
}

/// Keys looked up in the vector cache at a time: the vectors found are stored in the table at
/// once, so no more than this many are held as `f32`.
const CACHE_BATCH: usize = 2048;

/// The vectors of every chunk of `pack`: copied from `reuse` where it holds them, then from the
/// cache, and only the remaining texts embedded (and cached).
///
/// The table is filled in place ([`VectorTable::zeroed`]): at no point is every vector held as
/// `f32` (the Lambda's 2 GB would not hold 180k chunks of 1,536 dimensions twice so).
pub fn vectors_for(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    embedder: &dyn Embedder,
    cache: &cache::VectorCache,
    reuse: Option<&Reuse>,
    progress: &dyn Progress,
) -> Result<(VectorTable, EmbedReport), EmbedError> {
    let model = embedder.model();
    let keys: Vec<Sha256Digest> = pack
        .chunks
        .iter()
        .map(|c| {
            embedding_key(
                &pack.files[c.file as usize].path,
                c.symbol.as_deref(),
                &c.sha256,
            )
        })
        .collect();
    let mut table = VectorTable::zeroed(model, embedder.dims() as u32, keys.len());
    let mut filled = vec![false; keys.len()];
    if let Some(reuse) = reuse {
        for (i, key) in keys.iter().enumerate() {
            if let Some(&j) = reuse.rows.get(key) {
                filled[i] = table.copy_row(i, &reuse.table, j as usize);
            }
        }
    }
    let unfilled: Vec<usize> = (0..keys.len()).filter(|&i| !filled[i]).collect();
    for batch in unfilled.chunks(CACHE_BATCH) {
        let wanted: Vec<Sha256Digest> = batch.iter().map(|&i| keys[i]).collect();
        let found = cache.get_many(model, &wanted)?;
        for &i in batch {
            if let Some(v) = found.get(&keys[i]) {
                set_row(&mut table, i, v)?;
                filled[i] = true;
            }
        }
    }
    // The first chunk of each key still without a vector is embedded; the others copy its row.
    let mut first_of: HashMap<Sha256Digest, usize> = HashMap::new();
    let mut missing: Vec<usize> = Vec::new();
    let mut copies: Vec<(usize, usize)> = Vec::new();
    for i in (0..keys.len()).filter(|&i| !filled[i]) {
        match first_of.entry(keys[i]) {
            std::collections::hash_map::Entry::Occupied(e) => copies.push((i, *e.get())),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i);
                missing.push(i);
            }
        }
    }
    drop(first_of);
    if !missing.is_empty() {
        tracing::info!(
            "embedding {} of {} chunks with {model} (the rest are reused or cached)",
            missing.len(),
            keys.len()
        );
    }
    progress.start(missing.len() as u64);
    for batch in missing.chunks(embedder.batch_size().max(1)) {
        let mut texts = Vec::with_capacity(batch.len());
        for &i in batch {
            let c = &pack.chunks[i];
            // The sources embedding reads hold every text: one they lack is a failure.
            let code = source
                .text(pack, i)
                .and_then(|t| {
                    t.ok_or_else(|| {
                        AssembleError::Unread(Needs {
                            texts: vec![i as u32],
                            lists: Vec::new(),
                        })
                    })
                })
                .map_err(|e| EmbedError::Text(e.to_string()))?;
            texts.push(chunk_text(
                &pack.files[c.file as usize].path,
                c.symbol.as_deref(),
                &code,
            ));
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs)?;
        if vectors.len() != batch.len() {
            return Err(EmbedError::Inference(format!(
                "{} vectors for {} texts",
                vectors.len(),
                batch.len()
            )));
        }
        for (&i, v) in batch.iter().zip(&vectors) {
            set_row(&mut table, i, v)?;
        }
        let fresh: Vec<(Sha256Digest, Vec<f32>)> = batch
            .iter()
            .zip(vectors)
            .map(|(&i, v)| (keys[i], v))
            .collect();
        cache.put_many(model, &fresh)?;
        for _ in batch {
            progress.advance();
        }
    }
    progress.finish();
    for (i, from) in copies {
        table.repeat_row(i, from);
    }
    Ok((
        table,
        EmbedReport {
            chunks: keys.len(),
            embedded: missing.len(),
        },
    ))
}

/// The vectors of a published pack (named by its sha256) in `data_dir`'s caches: the pack's
/// whole table is kept as one file, so a warm request reads one file instead of a lookup per
/// chunk; a missing table is built from the per-chunk cache, embedding what it lacks.
pub fn pack_vectors(
    data_dir: &std::path::Path,
    pack: &IndexPack,
    pack_sha256: &str,
    source: &dyn ChunkSource,
    embedder: &dyn Embedder,
    progress: &dyn Progress,
) -> Result<(VectorTable, EmbedReport), EmbedError> {
    let model = embedder.model();
    let safe: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let tag: String = pack_sha256.chars().take(32).collect();
    let table_path = data_dir
        .join("cache/vector-tables")
        .join(format!("{tag}-{safe}.bin"));
    let cached = std::fs::read(&table_path)
        .ok()
        .and_then(|b| VectorTable::decode(&b))
        .filter(|t| t.model == model && t.len() == pack.chunks.len());
    if let Some(t) = cached {
        let chunks = t.len();
        return Ok((
            t,
            EmbedReport {
                chunks,
                embedded: 0,
            },
        ));
    }
    let cache = cache::VectorCache::open(&data_dir.join("cache/vectors.sqlite"))?;
    let (t, report) = vectors_for(pack, source, embedder, &cache, None, progress)?;
    // A table that cannot be kept is rebuilt from the vector cache next time.
    let _ = crate::token_tables::write_atomic(&table_path, &t.encode());
    Ok((t, report))
}

/// Stores `vector` as row `i`; a vector of other dimensions than the model's is the model's
/// fault.
fn set_row(table: &mut VectorTable, i: usize, vector: &[f32]) -> Result<(), EmbedError> {
    table
        .set(i, vector)
        .map_err(|e| EmbedError::Inference(e.to_string()))
}

/// What a chunk's vector depends on: its text, path and symbol ([`chunk_text`]).
pub(crate) fn embedding_key(path: &str, symbol: Option<&str>, sha: &Sha256Digest) -> Sha256Digest {
    let mut buf = Vec::with_capacity(path.len() + 64);
    buf.extend_from_slice(path.as_bytes());
    buf.push(0);
    buf.extend_from_slice(symbol.unwrap_or("").as_bytes());
    buf.push(0);
    buf.extend_from_slice(&sha.0);
    Sha256Digest::of(&buf)
}
