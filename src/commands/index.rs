//! `ctxgate index DIR`.

use ctxgate_indexer::pipeline::{IndexStatus, index_repo};

use super::{index_options, index_store, print_json, thousands};
use crate::CmdResult;
use crate::args::{Format, Global, IndexArgs};
use crate::progress::FileBar;

pub fn run(global: &Global, args: &IndexArgs) -> CmdResult {
    let store = index_store(global, &args.store)?;
    let mut opts = index_options(&args.flags);
    if let Some(root) = store.local_root() {
        opts.walk.exclude.push(root.to_path_buf());
    }
    let bar = FileBar::new(global.quiet, "indexing");
    let report = index_repo(store.as_ref(), &args.dir, &opts, &bar)?;
    if args.format == Format::Json {
        return print_json(&report);
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
    Ok(())
}
