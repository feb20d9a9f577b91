//! `ctxgate assemble`.

use std::io::Read;

use ctxgate_core::catalog::BudgetPolicy;
use ctxgate_indexer::assemble::{AssembleReport, AssembleRequest, assemble};
use ctxgate_indexer::pipeline::IndexStatus;

use super::{catalog, index_options, open_store, print_json, thousands};
use crate::CmdResult;
use crate::args::{AssembleArgs, Format, Global};
use crate::failure::Failure;
use crate::progress::FileBar;

fn read_query(args: &AssembleArgs) -> Result<String, Failure> {
    if let Some(q) = &args.query {
        return Ok(q.clone());
    }
    let Some(path) = &args.query_file else {
        return Err(Failure::input(
            "query_missing",
            "give --query TEXT or --query-file FILE",
        ));
    };
    let bytes = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map_err(|e| {
            Failure::input(
                "query_file_unreadable",
                format!("cannot read the query from stdin: {e}"),
            )
        })?;
        buf
    } else {
        std::fs::read(path).map_err(|e| {
            Failure::input(
                "query_file_unreadable",
                format!("cannot read query file `{}`: {e}", path.display()),
            )
        })?
    };
    String::from_utf8(bytes).map_err(|_| {
        Failure::input(
            "query_file_unreadable",
            format!("query file `{}` is not valid UTF-8", path.display()),
        )
    })
}

pub fn run(global: &Global, args: &AssembleArgs) -> CmdResult {
    let query = read_query(args)?;
    if !(args.context_share > 0.0 && args.context_share <= 1.0) {
        return Err(Failure::input(
            "invalid_context_share",
            "--context-share must be in (0, 1]",
        ));
    }
    let catalog = catalog(global)?;
    let store = open_store(global)?;
    let mut index = index_options(&args.flags);
    index.walk.exclude.push(store.root().to_path_buf());
    let req = AssembleRequest {
        repo: args.repo.clone(),
        query,
        budget: args.budget,
        model: args.model.clone(),
        policy: BudgetPolicy {
            context_share: args.context_share,
            reserve_reply: args.reserve_reply,
            system_prompt_tokens: args.system_prompt_tokens,
        },
        index,
        hot_paths: args.hot.clone(),
        compression: args.compression.into(),
    };
    let bar = FileBar::new(global.quiet, "indexing");
    let report = assemble(&store, &catalog, &req, &bar)?;
    match args.format {
        Format::Json => print_json(&report),
        Format::Text => {
            if !args.prompt_only {
                print_analysis(&report, &catalog);
            }
            print!("{}", report.prompt);
            Ok(())
        }
    }
}

fn print_analysis(r: &AssembleReport, catalog: &ctxgate_core::catalog::Catalog) {
    let a = &r.analysis;
    let exact = if r.exact { "exact" } else { "estimate" };
    println!("ctxgate budget analysis");
    match (&r.model, &a.window) {
        (Some(id), Some(w)) => {
            let provider = catalog.get(id).map(|m| m.provider.as_str()).unwrap_or("?");
            println!(
                "  model       {id} ({provider}), tokenizer {} ({exact})",
                r.tokenizer
            );
            println!(
                "  window      {} tokens: usable {}, reply reserve {}, system prompt {}",
                thousands(u64::from(w.window)),
                thousands(u64::from(w.usable)),
                thousands(u64::from(w.reply_reserve)),
                thousands(u64::from(w.system_prompt))
            );
        }
        _ => println!(
            "  model       none given, tokenizer {} ({exact})",
            r.tokenizer
        ),
    }
    println!("  budget      {} tokens", thousands(u64::from(r.budget)));
    let status = match a.index_status {
        IndexStatus::Published => "rebuilt for this request",
        IndexStatus::UpToDate => "up to date",
    };
    println!(
        "  repository  {} files, {} chunks, {} tokens (index v{}, {status})",
        thousands(a.repo_files as u64),
        thousands(a.repo_chunks as u64),
        thousands(a.repo_tokens),
        a.index_version
    );
    println!("  strategy    {}", a.strategy);
    let pct = if r.budget == 0 {
        0.0
    } else {
        f64::from(r.tokens_total) * 100.0 / f64::from(r.budget)
    };
    let summary_tokens: u64 = r.summaries.iter().map(|s| u64::from(s.tokens)).sum();
    println!(
        "  allocation  query and framing {}, code {} in {} pieces, summaries {} in {}; total {} of {} ({pct:.1} %)",
        thousands(u64::from(a.frame_tokens)),
        thousands(u64::from(a.code_tokens)),
        r.pieces.len(),
        thousands(summary_tokens),
        r.summaries.len(),
        thousands(u64::from(r.tokens_total)),
        thousands(u64::from(r.budget)),
    );
    if a.left_out > 0 {
        println!(
            "  left out    {} matching chunks did not fit",
            thousands(a.left_out as u64)
        );
    }
    println!(
        "  time        index {} ms, retrieve {} ms, compose {} ms",
        a.timings_ms.index, a.timings_ms.retrieve, a.timings_ms.compose
    );
    for w in &r.warnings {
        println!("  warning     {w}");
    }
    println!(
        "---------------------------------------- prompt ----------------------------------------"
    );
}
