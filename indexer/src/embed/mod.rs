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
pub mod local;
#[cfg(feature = "embed-local")]
pub mod model_files;
pub mod openai;

use ctxgate_core::assemble::ChunkSource;
use ctxgate_core::dense::VectorTable;
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
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::Model(_) => "embed_model_unavailable",
            EmbedError::Inference(_) => "embed_failed",
            EmbedError::Http {
                status: Some(401 | 403),
                ..
            } => "embed_unauthorized",
            EmbedError::Http {
                status: Some(429), ..
            } => "embed_rate_limited",
            EmbedError::Http {
                status: Some(_), ..
            } => "embed_http_error",
            EmbedError::Http { status: None, .. } => "embed_unreachable",
            EmbedError::Answer { .. } => "embed_bad_answer",
            EmbedError::Cache(_) => "embed_cache_error",
            EmbedError::Text(_) => "store_corrupt",
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
            #[cfg(not(feature = "embed-local"))]
            DenseConfig::Local => {
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
    Ok(ctxgate_core::dense::scaled_hits(&nearest))
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

/// The vectors of every chunk of `pack`, embedding (and caching) only the texts the cache does
/// not hold.
pub fn vectors_for(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    embedder: &dyn Embedder,
    cache: &cache::VectorCache,
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
    let mut known = cache.get_many(model, &keys)?;
    let mut missing: Vec<usize> = Vec::new();
    let mut queued = std::collections::HashSet::new();
    for (i, key) in keys.iter().enumerate() {
        if !known.contains_key(key) && queued.insert(*key) {
            missing.push(i);
        }
    }
    if !missing.is_empty() {
        tracing::info!(
            "embedding {} of {} chunks with {model} (the rest are cached)",
            missing.len(),
            keys.len()
        );
    }
    progress.start(missing.len() as u64);
    for batch in missing.chunks(embedder.batch_size().max(1)) {
        let mut texts = Vec::with_capacity(batch.len());
        for &i in batch {
            let c = &pack.chunks[i];
            let code = source
                .text(pack, i)
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
        let fresh: Vec<(Sha256Digest, Vec<f32>)> = batch
            .iter()
            .zip(vectors)
            .map(|(&i, v)| (keys[i], v))
            .collect();
        cache.put_many(model, &fresh)?;
        for _ in batch {
            progress.advance();
        }
        known.extend(fresh);
    }
    progress.finish();
    let mut table = VectorTable::new(model, embedder.dims() as u32);
    for key in &keys {
        table
            .push(known.get(key).map(Vec::as_slice))
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
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
    let (t, report) = vectors_for(pack, source, embedder, &cache, progress)?;
    // A table that cannot be kept is rebuilt from the vector cache next time.
    if let Some(dir) = table_path.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let tmp = table_path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, t.encode()).is_ok() {
            let _ = std::fs::rename(&tmp, &table_path);
        }
    }
    Ok((t, report))
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
