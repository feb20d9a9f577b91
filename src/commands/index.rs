//! `ctxgate index DIR`.

use ctxgate_core::error_code::ErrorCode;
use ctxgate_indexer::IndexerError;
use ctxgate_indexer::assemble::StoreChunks;
use ctxgate_indexer::embed::{DenseConfig, EmbedReport, pack_vectors};
use ctxgate_indexer::pipeline::{IndexStatus, index_repo, open_current};
use ctxgate_indexer::store::LOCAL_ORG;

use super::{index_options, index_store, open_store, print_json, thousands};
use crate::args::{DenseArg, Format, Global, IndexArgs};
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::progress::FileBar;

/// Embeds the current version's chunks into the data directory's vector caches.
fn embed(global: &Global, project: &str, dense: &DenseConfig) -> Result<EmbedReport, Failure> {
    let store = open_store(global)?;
    let opened = open_current(&store, LOCAL_ORG, project)?
        .ok_or_else(|| Failure::from(IndexerError::Corrupt("no current version".into())))?;
    let embedder = dense.embedder(store.root()).map_err(IndexerError::from)?;
    let source = StoreChunks {
        store: &store,
        org: LOCAL_ORG,
        project,
    };
    let bar = FileBar::new(global.quiet, "embedding");
    let (_, report) = pack_vectors(
        store.root(),
        &opened.pack,
        &opened.manifest.pack_sha256,
        &source,
        embedder.as_ref(),
        &bar,
    )
    .map_err(IndexerError::from)?;
    Ok(report)
}

pub fn run(global: &Global, args: &IndexArgs) -> CmdResult {
    if args.dense.dense != DenseArg::Off && args.store.store.is_some() {
        return Err(Failure::coded(
            ErrorCode::DenseNeedsLocalStore,
            "--dense keeps vectors in the local data directory; it cannot be combined with --store",
        ));
    }
    let store = index_store(global, &args.store)?;
    let config = crate::config::load(&args.dir)?;
    let mut opts = index_options(&args.flags, config.as_ref().map(|(_, c)| c))?;
    if let Some(root) = store.local_root() {
        opts.walk.exclude.push(root.to_path_buf());
    }
    let bar = FileBar::new(global.quiet, "indexing");
    let report = index_repo(store.as_ref(), &args.dir, &opts, &bar)?;
    let vectors = match super::dense_config(&args.dense)? {
        None => None,
        Some(dense) => Some(embed(global, &report.project.id, &dense)?),
    };
    if args.format == Format::Json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            #[serde(flatten)]
            report: &'a ctxgate_indexer::pipeline::IndexReport,
            #[serde(skip_serializing_if = "Option::is_none")]
            vectors: Option<EmbedReport>,
        }
        return print_json(&Out {
            report: &report,
            vectors,
        });
    }
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    let status = match report.status {
        IndexStatus::Published => "published",
        IndexStatus::UpToDate => "up to date",
    };
    println!(
        "{} ({}) version {} {status} in {} ms",
        report.project.name, report.project.id, report.version, report.elapsed_ms
    );
    println!(
        "  files: {} seen, {} chunked, {} reused, {} skipped",
        report.files_seen,
        report.files_chunked,
        report.files_reused,
        report.skipped.len()
    );
    println!(
        "  chunks: {} ({} distinct), {} bytes of text, {} bytes newly stored",
        thousands(report.chunks as u64),
        thousands(report.unique_chunks as u64),
        thousands(report.text_bytes),
        thousands(report.stored_bytes)
    );
    for (enc, n) in &report.tokens {
        println!("  tokens ({enc}): {}", thousands(*n));
    }
    let s = &report.summaries;
    println!(
        "  summaries: {} files ({} extracted, {} by a model, {} reused; {}), {} directories, project",
        s.files, s.extracted, s.llm_summarized, s.reused, s.summarizer, s.directories
    );
    if let Some(v) = vectors {
        println!(
            "  vectors: {} chunks, {} newly embedded",
            thousands(v.chunks as u64),
            thousands(v.embedded as u64)
        );
    }
    Ok(())
}
