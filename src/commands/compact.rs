//! `ctxgate compact`: a conversation in, the same conversation within a token budget out.

use ctxgate_core::error_code::ErrorCode;
use std::io::Read;
use std::path::{Path, PathBuf};

use ctxgate_core::catalog::{BudgetPolicy, resolve_budget};
use ctxgate_core::history::{
    CompactOptions, CompactReport, Extractive, NoCache, Summarizer, SummaryCache, SummaryInput,
    SummaryKey, SummaryKind, compact_with, parse_bytes, render_for_summary,
};
use ctxgate_core::tokens::Encoding;
use ctxgate_indexer::chat::{ChatClient, ChatEndpoint, ChatError};
use serde_json::json;

use super::{catalog, data_dir, print_json, thousands};
use crate::args::{CompactArgs, Format, Global};
use crate::failure::CmdResult;
use crate::failure::Failure;

/// Summaries kept as one small file each under `<data dir>/cache/summaries/<version>/`, named by
/// the key's hash: an unchanged message is never summarized twice, a new summarizer version
/// starts a new folder, and clearing is deleting the folder.
struct FileCache {
    dir: PathBuf,
}

impl FileCache {
    fn path(&self, key: &SummaryKey) -> PathBuf {
        self.dir.join(key.path())
    }
}

impl SummaryCache for FileCache {
    fn get(&mut self, key: &SummaryKey) -> Option<String> {
        std::fs::read_to_string(self.path(key)).ok()
    }

    fn put(&mut self, key: &SummaryKey, summary: &str) {
        let path = self.path(key);
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            // Written aside and renamed, so a reader never sees half a summary.
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, summary)?;
            std::fs::rename(&tmp, &path)
        };
        if let Err(e) = write() {
            tracing::debug!("summary cache: cannot write {}: {e}", path.display());
        }
    }
}

/// Summaries from a model behind an OpenAI-compatible `/chat/completions` endpoint. The model sees
/// the messages with secrets redacted; a failed call falls back to the extractive summary (and
/// stops further calls, with one warning).
struct LlmSummarizer {
    client: ChatClient,
    failed: bool,
}

impl LlmSummarizer {
    fn new(base: &str, model: &str) -> Self {
        Self {
            client: ChatClient::new(&ChatEndpoint {
                url: base.to_string(),
                model: model.to_string(),
                api_key: std::env::var("CTXGATE_LLM_API_KEY").ok(),
            }),
            failed: false,
        }
    }

    fn ask(&self, input: &SummaryInput<'_>) -> Result<String, ChatError> {
        let words = input.extractive.split_whitespace().count().clamp(20, 120);
        let instruction = match input.kind {
            SummaryKind::Message => format!(
                "Summarize the chat message below in at most {words} words for someone continuing the conversation. Keep names, numbers, paths, identifiers and decisions. Lines marked before/after are context only. Reply with the summary only."
            ),
            SummaryKind::AgentTurn => format!(
                "Summarize this coding-agent turn in at most {words} words: files modified, commands and tests run with pass/fail counts, errors (first line), commits, decisions. Reply with the summary only."
            ),
        };
        let answer =
            self.client
                .complete(&instruction, &render_for_summary(input), (words * 2) as u32)?;
        Ok(format!("[summarized] {answer}"))
    }
}

impl Summarizer for LlmSummarizer {
    fn version(&self) -> String {
        format!("llm-1:{}", self.client.model())
    }

    fn summarize(&mut self, input: &SummaryInput<'_>) -> Option<String> {
        if self.failed {
            return None;
        }
        match self.ask(input) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!(
                    "warning: the summarizing model failed ({e}); using extractive summaries"
                );
                self.failed = true;
                None
            }
        }
    }
}

fn summaries_dir(data: &Path) -> PathBuf {
    data.join("cache").join("summaries")
}

fn clear(data: &Path) -> Result<u64, Failure> {
    let dir = summaries_dir(data);
    let mut removed = 0u64;
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                removed += 1;
            }
        }
    }
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(removed),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(Failure::coded(
            ErrorCode::IoError,
            format!("cannot clear {}: {e}", dir.display()),
        )),
    }
}

pub fn run(global: &Global, args: &CompactArgs) -> CmdResult {
    if args.clear_summaries {
        let data = data_dir(global)?;
        let removed = clear(&data)?;
        let reading =
            args.file.is_some() || args.budget.is_some() || args.model.is_some() || args.stats;
        if !reading {
            if args.format == Format::Json {
                return print_json(&json!({ "cleared_summaries": removed }));
            }
            println!(
                "cleared {removed} cached summaries from {}",
                summaries_dir(&data).display()
            );
            return Ok(());
        }
        eprintln!("cleared {removed} cached summaries");
    }
    let catalog = catalog(global)?;
    let model = args
        .model
        .as_deref()
        .map(|m| catalog.resolve(m))
        .transpose()?;
    let resolved = resolve_budget(
        model,
        args.budget,
        &BudgetPolicy::default(),
        Encoding::O200kBase,
    )?;
    let bytes = match &args.file {
        Some(f) => std::fs::read(f).map_err(|e| {
            Failure::coded(
                ErrorCode::FileUnreadable,
                format!("cannot read `{}`: {e}", f.display()),
            )
        })?,
        None => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map_err(|e| {
                Failure::coded(ErrorCode::IoError, format!("cannot read stdin: {e}"))
            })?;
            buf
        }
    };
    let conversation = parse_bytes(&bytes)?;
    let data = data_dir(global).ok();
    if let Some(d) = &data {
        ctxgate_indexer::token_tables::install(d, resolved.tokenizer.base());
    }
    let opts = CompactOptions {
        budget: resolved.budget,
        keep_rounds: args.keep_rounds,
        query: args.query.clone(),
        exact_stats: true,
    };
    let mut file_cache;
    let mut none = NoCache;
    let cache: &mut dyn SummaryCache = match data.as_deref() {
        Some(d) if !args.no_cache => {
            file_cache = FileCache {
                dir: summaries_dir(d),
            };
            &mut file_cache
        }
        _ => &mut none,
    };
    let mut extractive = Extractive;
    let mut llm;
    let summarizer: &mut dyn Summarizer = match (&args.llm_url, &args.llm_model) {
        (Some(url), Some(model)) => {
            llm = LlmSummarizer::new(url, model);
            &mut llm
        }
        _ => &mut extractive,
    };
    let done = compact_with(
        &conversation.messages,
        &resolved.tokenizer,
        &opts,
        cache,
        summarizer,
    )?;
    for w in &resolved.warnings {
        eprintln!("warning: {w}");
    }
    let r = &done.report;
    if args.stats {
        if args.format == Format::Json {
            return print_json(&json!({
                "model": resolved.model,
                "tokenizer": resolved.tokenizer.label(),
                "exact": resolved.tokenizer.is_exact(),
                "stats": r,
            }));
        }
        print_stats(
            r,
            &resolved.tokenizer.label(),
            resolved.tokenizer.is_exact(),
        );
        return Ok(());
    }
    print_json(&conversation.to_json(&done.messages))?;
    if args.format == Format::Text {
        eprintln!(
            "compacted {} messages ({} tokens) to {} ({} tokens, budget {}): {} summarized, {} aggregated, {} dropped",
            r.messages_before,
            opt(r.tokens_before),
            r.messages_after,
            thousands(u64::from(r.tokens_total)),
            thousands(u64::from(r.budget)),
            r.summarized.iter().map(|s| s.messages.len()).sum::<usize>(),
            r.aggregated.len(),
            r.dropped.len(),
        );
    }
    Ok(())
}

/// A count, or `-` when it was not taken.
fn opt(n: Option<u32>) -> String {
    n.map_or_else(|| "-".into(), |n| thousands(u64::from(n)))
}

/// `0-4, 7, 9-12`.
fn ranges(positions: &[usize]) -> String {
    if positions.is_empty() {
        return "none".into();
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < positions.len() {
        let mut j = i;
        while j + 1 < positions.len() && positions[j + 1] == positions[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            positions[i].to_string()
        } else {
            format!("{}-{}", positions[i], positions[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

fn print_stats(r: &CompactReport, tokenizer: &str, exact: bool) {
    println!(
        "{} messages, {} tokens -> {} messages, {} tokens (budget {}; {tokenizer}{})",
        r.messages_before,
        opt(r.tokens_before),
        r.messages_after,
        thousands(u64::from(r.tokens_total)),
        thousands(u64::from(r.budget)),
        if exact { "" } else { ", estimated" }
    );
    println!(
        "{} rounds; the last {} kept whole\n",
        r.rounds, r.keep_rounds
    );
    println!(
        "{:<12} {:>9} {:>12} {:>12}",
        "TIER", "MESSAGES", "TOKENS IN", "TOKENS OUT"
    );
    for (tier, s) in &r.tiers {
        let name = serde_json::to_value(tier)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        println!(
            "{:<12} {:>9} {:>12} {:>12}",
            name,
            s.messages,
            opt(s.tokens_before),
            thousands(u64::from(s.tokens_after))
        );
    }
    let summarized: Vec<usize> = r
        .summarized
        .iter()
        .flat_map(|s| s.messages.iter().copied())
        .collect();
    let turns = r
        .summarized
        .iter()
        .filter(|s| s.kind == "agent_turn")
        .count();
    println!(
        "\nsummarized ({} summaries, {turns} of them agent turns): {}",
        r.summarized.len(),
        ranges(&summarized)
    );
    println!("aggregated: {}", ranges(&r.aggregated));
    println!("recalled:   {}", ranges(&r.recalled));
    println!("dropped:    {}", ranges(&r.dropped));
    println!(
        "summaries:  {} computed, {} from the cache ({})",
        r.cache_misses, r.cache_hits, r.summarizer
    );
    println!("(positions are 0-based indices into the input's messages)");
}
