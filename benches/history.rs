//! History compaction, measured: how many early facts survive, and how fast.
//!
//! Run with `scripts/bench-history.sh` (it builds the dataset from real commit histories with
//! `scripts/history_dataset.py`). For each long conversation and budget (2k / 8k / 32k tokens,
//! o200k_base), four strategies are compared on the share of facts — answers that sit in the
//! first quarter of the conversation — still present in the result:
//! plain truncation (newest messages that fit), drop-the-middle (half the budget for the oldest
//! messages, the rest for the newest), `compact` without a query, and `compact` with the fact's
//! question as its query. Facts of the last round are checked separately (they must always
//! survive). Speed: `compact` on the first 1,000 messages of each agent run at 8k, median of 21,
//! no summary cache, with and without counting every message for the report
//! (`HISTORY_BENCH_SPEED_ONLY=1` skips the facts). Nothing here asserts a time.

use std::path::PathBuf;
use std::time::Instant;

use ctxgate_core::catalog::TokenizerSpec;
use ctxgate_core::history::{
    CompactOptions, Message, NoCache, Role, compact, conversation_tokens, message_tokens,
};
use ctxgate_core::tokens::Encoding;
use serde_json::Value;

const BUDGETS: [u32; 3] = [2_000, 8_000, 32_000];

struct Fact {
    question: String,
    answer: String,
    recent: bool,
}

struct Conversation {
    name: String,
    messages: Vec<Message>,
    facts: Vec<Fact>,
}

fn load(path: &PathBuf) -> Vec<Conversation> {
    let text = std::fs::read_to_string(path).expect("dataset (run scripts/bench-history.sh)");
    let data: Vec<Value> = serde_json::from_str(&text).expect("dataset JSON");
    data.into_iter()
        .map(|c| Conversation {
            name: c["name"].as_str().unwrap_or("?").to_string(),
            messages: serde_json::from_value(c["messages"].clone()).expect("messages"),
            facts: c["facts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| Fact {
                    question: f["question"].as_str().unwrap_or("").to_string(),
                    answer: f["answer"].as_str().unwrap_or("").to_string(),
                    recent: f["where"] == "recent",
                })
                .collect(),
        })
        .collect()
}

/// Everything a model would read, as one string to look answers up in.
fn text_of(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap_or_default()
}

/// System messages, then the newest messages that fit.
fn truncate(messages: &[Message], tok: &TokenizerSpec, budget: u32) -> Vec<Message> {
    let system: Vec<&Message> = messages.iter().filter(|m| m.role == Role::System).collect();
    let mut used = 3 + system.iter().map(|m| message_tokens(tok, m)).sum::<u32>();
    let mut tail = Vec::new();
    for m in messages.iter().rev().filter(|m| m.role != Role::System) {
        let c = message_tokens(tok, m);
        if used + c > budget {
            break;
        }
        used += c;
        tail.push(m.clone());
    }
    tail.reverse();
    system.into_iter().cloned().chain(tail).collect()
}

/// System messages, the oldest messages within half the budget, then the newest that fit.
fn drop_middle(messages: &[Message], tok: &TokenizerSpec, budget: u32) -> Vec<Message> {
    let rest: Vec<&Message> = messages.iter().filter(|m| m.role != Role::System).collect();
    let mut out: Vec<Message> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .cloned()
        .collect();
    let mut used = 3 + out.iter().map(|m| message_tokens(tok, m)).sum::<u32>();
    let half = used + (budget.saturating_sub(used)) / 2;
    let mut head = 0;
    for m in &rest {
        let c = message_tokens(tok, m);
        if used + c > half {
            break;
        }
        used += c;
        out.push((*m).clone());
        head += 1;
    }
    let mut tail = Vec::new();
    for m in rest[head..].iter().rev() {
        let c = message_tokens(tok, m);
        if used + c > budget {
            break;
        }
        used += c;
        tail.push((*m).clone());
    }
    tail.reverse();
    out.extend(tail);
    out
}

fn share(hit: usize, of: usize) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.0} %", 100.0 * hit as f64 / of as f64)
    }
}

/// The facts table: every conversation, budget and strategy.
fn facts_table(convs: &[Conversation], tok: &TokenizerSpec) {
    println!("## Facts recoverable (answers in the first quarter of the conversation)\n");
    println!(
        "| conversation | messages | tokens | budget | truncation | drop-the-middle | ctxgate compact | ctxgate compact + query | last-round facts kept (compact) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut totals = vec![[0usize; 5]; BUDGETS.len()];
    let mut recent_tot = vec![[0usize; 2]; BUDGETS.len()];
    for c in convs {
        let tokens = conversation_tokens(tok, &c.messages);
        let early: Vec<&Fact> = c.facts.iter().filter(|f| !f.recent).collect();
        let recent: Vec<&Fact> = c.facts.iter().filter(|f| f.recent).collect();
        for (bi, &budget) in BUDGETS.iter().enumerate() {
            let count = |msgs: &[Message], facts: &[&Fact]| {
                let t = text_of(msgs);
                facts.iter().filter(|f| t.contains(&f.answer)).count()
            };
            let tr = count(&truncate(&c.messages, tok, budget), &early);
            let dm = count(&drop_middle(&c.messages, tok, budget), &early);
            let compacted = compact(&c.messages, tok, &CompactOptions::new(budget), &mut NoCache)
                .expect("compact");
            assert!(compacted.report.tokens_total <= budget);
            let cp = count(&compacted.messages, &early);
            let rc = count(&compacted.messages, &recent);
            let mut q = 0;
            for f in &early {
                let mut opts = CompactOptions::new(budget);
                opts.query = Some(f.question.clone());
                let r = compact(&c.messages, tok, &opts, &mut NoCache).expect("compact");
                if text_of(&r.messages).contains(&f.answer) {
                    q += 1;
                }
            }
            let t = &mut totals[bi];
            t[0] += early.len();
            t[1] += tr;
            t[2] += dm;
            t[3] += cp;
            t[4] += q;
            recent_tot[bi][0] += recent.len();
            recent_tot[bi][1] += rc;
            println!(
                "| {} | {} | {} | {budget} | {} | {} | {} | {} | {} |",
                c.name,
                c.messages.len(),
                tokens,
                share(tr, early.len()),
                share(dm, early.len()),
                share(cp, early.len()),
                share(q, early.len()),
                share(rc, recent.len()),
            );
        }
    }
    println!("\n## All conversations\n");
    println!(
        "| budget | facts | truncation | drop-the-middle | ctxgate compact | ctxgate compact + query | last-round facts kept |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (bi, &budget) in BUDGETS.iter().enumerate() {
        let t = totals[bi];
        println!(
            "| {budget} | {} | {} | {} | {} | {} | {} |",
            t[0],
            share(t[1], t[0]),
            share(t[2], t[0]),
            share(t[3], t[0]),
            share(t[4], t[0]),
            share(recent_tot[bi][1], recent_tot[bi][0]),
        );
    }
}

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/history-bench/conversations.json"));
    let home = PathBuf::from("target/history-bench/home");
    std::fs::create_dir_all(&home).ok();
    ctxgate_indexer::token_tables::install(&home, Encoding::O200kBase);
    let tok = TokenizerSpec::Exact(Encoding::O200kBase);
    let convs = load(&path);

    if std::env::var_os("HISTORY_BENCH_SPEED_ONLY").is_none() {
        facts_table(&convs, &tok);
    }
    println!(
        "\n## Speed: compact the first 1,000 messages at 8k (no cache), median of 21 (`exact_stats: false`: aggregated messages are never counted)\n"
    );
    println!(
        "| conversation | tokens | median ms | min ms | max ms | median ms, every message counted for the stats |"
    );
    println!("|---|---|---|---|---|---|");
    for c in convs.iter().filter(|c| c.messages.len() >= 1000) {
        let msgs = &c.messages[..1000];
        let tokens = conversation_tokens(&tok, msgs);
        let time = |exact_stats: bool| {
            let mut opts = CompactOptions::new(8_000);
            opts.exact_stats = exact_stats;
            let mut times = Vec::new();
            for _ in 0..21 {
                let t = Instant::now();
                let r = compact(msgs, &tok, &opts, &mut NoCache).expect("compact");
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                std::hint::black_box(r);
            }
            times.sort_by(f64::total_cmp);
            times
        };
        let exact = time(true);
        let times = time(false);
        println!(
            "| {} | {tokens} | {:.1} | {:.1} | {:.1} | {:.1} |",
            c.name,
            times[times.len() / 2],
            times[0],
            times[times.len() - 1],
            exact[exact.len() / 2],
        );
    }
}
