//! Answering a query with context from the current index of a repository.
//!
//! The steps are the core's; this module only supplies the bytes: it brings the index up to date
//! (incrementally), searches it, reads the texts of the chosen chunks from their segments, and
//! lets the composer hold the prompt to the budget with the target model's tokenizer. The
//! tokenizer's tables are built on a second thread while the index is checked and opened, since
//! building them is the longest single step of a short run.

use std::path::PathBuf;
use std::time::Instant;

use ctxgate_core::catalog::{BudgetPolicy, Catalog, ModelBudget, TokenizerSpec, resolve_budget};
use ctxgate_core::chunk::{ChunkKind, signature_len};
use ctxgate_core::compose::{Piece, PieceForm, fit, render};
use ctxgate_core::index::IndexPack;
use ctxgate_core::intent::{QueryAnalysis, analyze};
use ctxgate_core::lexical::query_terms;
use ctxgate_core::rank::{Signals, Weights, rank};
use ctxgate_core::select::{Candidate, select_greedy};
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
    /// How pieces were chosen.
    pub strategy: String,
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
    /// The pieces in the prompt, in prompt order.
    pub pieces: Vec<Piece>,
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
    let mut warnings = resolved.warnings.clone();
    warnings.extend(report.warnings.iter().cloned());
    let opened = open_current(store, LOCAL_ORG, &report.project.id)?
        .ok_or_else(|| IndexerError::Corrupt("no current version after indexing".into()))?;
    let pack = &opened.pack;
    // The shipped parameters apply at query time, whatever a pack was built with.
    let params = bm25_override().unwrap_or_default();
    let hits = pack.lexical.search_with(&query_terms(query), params);
    let intent = analyze(query);
    let weights = weights();
    let ranked = rank(pack, &hits, &intent, &weights);
    let mut original: std::collections::HashMap<u32, f32> = std::collections::HashMap::new();
    let reasons: std::collections::HashMap<u32, Signals> =
        ranked.iter().map(|r| (r.chunk, r.signals)).collect();
    let hits: Vec<(u32, f32)> = ranked.iter().map(|r| (r.chunk, r.score)).collect();

    let _ = preload.join();
    let frame_tokens = spec.count(&render(&[], query));
    let slot = pack.encoding_slot(spec.base());
    let token_of = |i: usize| -> Option<u32> { slot.map(|s| spec.scale(pack.chunks[i].tokens[s])) };
    let repo_tokens: u64 = match slot {
        Some(s) => pack
            .chunks
            .iter()
            .map(|c| u64::from(spec.scale(c.tokens[s])))
            .sum(),
        None => pack.chunks.iter().map(|c| c.len() / 3).sum(),
    };
    let room = resolved.budget.saturating_sub(frame_tokens);
    let mut strategy;
    let mut texts: std::collections::HashMap<u32, String> = std::collections::HashMap::new();
    let mut scores: Vec<(u32, f32)> = hits;
    if scores.is_empty() {
        strategy = "query only: nothing in the repository matches the query".to_string();
        warnings.push(
            "no relevant code found for the query; the prompt carries the query alone (low confidence)".into(),
        );
    } else {
        strategy = format!(
            "ranked by BM25, named symbols and mentioned files ({} candidates)",
            scores.len()
        );
    }
    // A repository that fits whole goes in whole (matching chunks keep their scores).
    let whole_fits = repo_tokens + overhead_total(pack) <= u64::from(room);
    if whole_fits && !scores.is_empty() {
        let mut seen = vec![false; pack.chunks.len()];
        for (i, _) in &scores {
            seen[*i as usize] = true;
        }
        scores.extend(
            (0..pack.chunks.len() as u32)
                .filter(|i| !seen[*i as usize])
                .map(|i| (i, 0.0)),
        );
        strategy = "whole repository: it fits in the budget".to_string();
    }
    // Small budgets get signatures of the best definitions instead of bodies.
    let signatures_only = resolved.budget < SIGNATURES_BELOW && !scores.is_empty();
    let mut signatures: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    if signatures_only {
        let mut kept = Vec::new();
        for &(i, score) in scores.iter().take(300) {
            let kind = pack.chunks[i as usize].kind;
            if matches!(
                kind,
                ChunkKind::Block | ChunkKind::Window | ChunkKind::Section
            ) {
                continue;
            }
            let text = chunk_text(store, &report.project.id, pack, i as usize)?;
            if let Some(n) = signature_len(&text) {
                signatures.insert(i, n);
            }
            texts.insert(i, text);
            kept.push((i, score));
        }
        if !kept.is_empty() {
            scores = kept;
            strategy = format!(
                "signatures only: the budget is under {SIGNATURES_BELOW} tokens ({} definitions considered)",
                scores.len()
            );
        }
    }
    let candidates_count = scores.len();
    let mut cands = Vec::with_capacity(scores.len());
    // Counting texts on the fly (an encoding the index did not count) stops once the candidates
    // counted so far could fill the budget several times over: the rest could not be chosen.
    let mut counted_on_the_fly = 0u64;
    let mut piece_tokens: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for &(i, score) in &scores {
        let signature = signatures
            .get(&i)
            .and_then(|&n| texts.get(&i).map(|t| spec.count(&t[..n])));
        let tokens = match signature.or_else(|| token_of(i as usize)) {
            Some(t) => t,
            None => {
                if counted_on_the_fly > 4 * u64::from(room) {
                    break;
                }
                let text = chunk_text(store, &report.project.id, pack, i as usize)?;
                let t = spec.count(&text);
                counted_on_the_fly += u64::from(t);
                texts.insert(i, text);
                t
            }
        };
        // Selection plans with each piece's header included, so the budget it fills is real.
        cands.push(Candidate {
            key: i,
            tokens: tokens + header_cost(pack, i as usize),
            score: weights.priority(score.max(f32::MIN_POSITIVE), tokens),
        });
        original.insert(i, score);
        piece_tokens.insert(i, tokens);
    }
    let chosen = select_greedy(cands, room, 0).chosen;
    let mut pieces = Vec::with_capacity(chosen.len());
    let mut left_out = candidates_count.saturating_sub(chosen.len());
    for c in chosen {
        let text = match texts.remove(&c.key) {
            Some(t) => t,
            None => chunk_text(store, &report.project.id, pack, c.key as usize)?,
        };
        let score = original.get(&c.key).copied().unwrap_or(c.score);
        let tokens = piece_tokens.get(&c.key).copied().unwrap_or(c.tokens);
        let mut p = piece(pack, c.key as usize, text, tokens, score);
        if let Some(&n) = signatures.get(&c.key) {
            p = to_signature(p, n, &spec);
        }
        // Pieces added because the whole repository fits have no signal: all zeros.
        p.reasoning = Some(reasons.get(&c.key).copied().unwrap_or_default());

        pieces.push(p);
    }
    let t2 = Instant::now();
    let composition = fit(pieces, query, resolved.budget, &spec)?;
    if composition.dropped > 0 {
        left_out += composition.dropped;
    }
    let t3 = Instant::now();
    let code_tokens = composition.tokens.saturating_sub(frame_tokens);
    Ok(AssembleReport {
        tokens_total: composition.tokens,
        budget: resolved.budget,
        model: resolved.model.clone(),
        tokenizer: spec.label(),
        exact: spec.is_exact(),
        prompt: composition.prompt,
        pieces: composition.pieces,
        warnings,
        intent,

        analysis: Analysis {
            window: resolved.window,
            repo_tokens,
            repo_files: pack.files.len(),
            repo_chunks: pack.chunks.len(),
            frame_tokens,
            code_tokens,
            strategy,
            candidates: candidates_count,
            left_out,
            index_version: opened.version,
            index_status: report.status,
            timings_ms: Timings {
                index: (t1 - t0).as_millis() as u64,
                retrieve: (t2 - t1).as_millis() as u64,
                compose: (t3 - t2).as_millis() as u64,
            },
        },
    })
}

/// A conservative guess of a piece's header and fence in tokens (about three characters a
/// token); the composer's exact count corrects any error.
fn header_cost(pack: &IndexPack, i: usize) -> u32 {
    let c = &pack.chunks[i];
    let path = pack.files[c.file as usize].path.len();
    let symbol = c.symbol.as_ref().map_or(0, String::len);
    ((2 * path + symbol + 80) / 3) as u32
}

fn overhead_total(pack: &IndexPack) -> u64 {
    (0..pack.chunks.len())
        .map(|i| u64::from(header_cost(pack, i)))
        .sum()
}

fn chunk_text(
    store: &Store,
    project: &str,
    pack: &IndexPack,
    i: usize,
) -> Result<String, IndexerError> {
    let c = &pack.chunks[i];
    let key = keys::segment(LOCAL_ORG, project, &pack.segments[c.segment as usize]);
    let bytes = store.get_range(&key, c.segment_offset, c.len() as usize)?;
    String::from_utf8(bytes)
        .map_err(|_| IndexerError::Corrupt(format!("chunk {} is not UTF-8", c.id)))
}

fn piece(pack: &IndexPack, i: usize, text: String, tokens: u32, score: f32) -> Piece {
    let c = &pack.chunks[i];
    let f = &pack.files[c.file as usize];
    Piece {
        path: f.path.clone(),
        language: f.language.clone(),
        start_line: c.start_line,
        end_line: c.end_line,
        byte_start: c.byte_start,
        byte_end: c.byte_end,
        kind: c.kind.name().to_string(),
        symbol: c.symbol.clone(),
        chunk_id: c.id.clone(),
        sha256: c.sha256.to_hex(),
        text,
        tokens,
        score: if score <= f32::MIN_POSITIVE {
            0.0
        } else {
            score
        },
        form: PieceForm::Full,
        reasoning: None,
    }
}

/// Below this budget, pieces are signatures only: a few declarations tell a model more than
/// one body.
pub const SIGNATURES_BELOW: u32 = 1000;

/// Cuts a piece down to its signature, fixing its provenance.
fn to_signature(mut p: Piece, len: usize, spec: &TokenizerSpec) -> Piece {
    p.text.truncate(len);
    p.byte_end = p.byte_start + len as u64;
    p.end_line = p.start_line + p.text.trim_end_matches('\n').matches('\n').count() as u32;
    p.sha256 = ctxgate_core::hash::Sha256Digest::of(p.text.as_bytes()).to_hex();
    p.tokens = spec.count(&p.text);
    p.form = PieceForm::Signature;
    p
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

/// The ranking weights: the tuned defaults, or `CTXGATE_RANK_WEIGHTS=lexical,file,symbol,mention`
/// (for tuning experiments; not a supported setting).
fn weights() -> Weights {
    let mut w = Weights::default();
    if let Ok(spec) = std::env::var("CTXGATE_RANK_WEIGHTS") {
        let v: Vec<f32> = spec
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        if let [l, f, s, m, rest @ ..] = v.as_slice() {
            w.lexical = *l;
            w.file = *f;
            w.symbol = *s;
            w.mention = *m;
            if let Some(spread) = rest.first() {
                w.file_spread = *spread;
            }
            if let Some(penalty) = rest.get(1) {
                w.size_penalty = *penalty;
            }
            if let Some(t) = rest.get(2) {
                w.test_prior = *t;
            }
            if let Some(d) = rest.get(3) {
                w.doc_prior = *d;
            }
        }
    }
    w
}
