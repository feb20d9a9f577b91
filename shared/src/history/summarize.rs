//! Deterministic extractive summaries, at three levels.
//!
//! - **Message** ([`summarize_message`]): a chat message's most informative sentences, chosen
//!   knowing the message before and after it (sentences that carry the thread — terms shared
//!   with a neighbour — and sentences with facts — numbers, names, paths, identifiers — win),
//!   kept in their original order so the thread still reads naturally.
//! - **Agent span** ([`summarize_agent_span`]): an assistant's tool-using turn and the tools'
//!   results become the facts an agent needs later: files modified, commands and tests run with
//!   pass/fail counts, errors with their first lines, commits made, decisions stated.
//! - **Segment and topic** ([`aggregate_lines`]): about ten messages become one line (key terms
//!   and the segment's most informative sentence); adjacent segments that share key terms are
//!   grouped under a topic line. The oldest part of a conversation becomes one aggregate.
//!
//! Everything derived passes through [`crate::secrets::redact`] before any cutting, so a secret
//! is never carried forward, whole or in part. The output depends only on the inputs named in
//! each function (no conversation-wide statistics), which is what lets summaries be cached by
//! message hash.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::message::{Message, Role};
use crate::secrets::redact;

/// Bumped whenever any summarizer's output changes, so cached summaries are regenerated.
pub const SUMMARIZER_VERSION: &str = "extractive-1";

/// Segment size of the aggregate, in messages.
pub const SEGMENT_MESSAGES: usize = 10;

const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "are",
    "but",
    "not",
    "you",
    "all",
    "any",
    "can",
    "had",
    "her",
    "was",
    "one",
    "our",
    "out",
    "has",
    "him",
    "his",
    "how",
    "its",
    "may",
    "new",
    "now",
    "old",
    "see",
    "two",
    "way",
    "who",
    "did",
    "get",
    "got",
    "let",
    "say",
    "she",
    "too",
    "use",
    "that",
    "this",
    "with",
    "have",
    "from",
    "they",
    "will",
    "would",
    "there",
    "their",
    "what",
    "about",
    "which",
    "when",
    "make",
    "like",
    "just",
    "know",
    "take",
    "into",
    "your",
    "some",
    "could",
    "them",
    "than",
    "then",
    "also",
    "only",
    "well",
    "were",
    "been",
    "does",
    "more",
    "very",
    "here",
    "should",
    "because",
    "these",
    "those",
    "where",
    "after",
    "before",
    "other",
    "being",
    "want",
    "need",
    "yes",
    "sure",
    "thanks",
    "thank",
    "okay",
    "please",
    "really",
    "think",
    "thing",
    "things",
    "much",
    "many",
    "even",
    "still",
    "each",
    "such",
    "same",
    "over",
    "while",
    "using",
    "used",
    "doing",
    "done",
    "going",
    "right",
    "good",
    "great",
    "something",
    "anything",
    "it's",
    "don't",
    "i'm",
    "can't",
    "that's",
    "i'll",
    "you're",
    "there's",
    "let's",
    "what's",
];

fn is_stopword(w: &str) -> bool {
    STOPWORDS.contains(&w)
}

/// Lowercased content words (3+ characters, not stopwords), in order.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !is_stopword(w))
}

/// Collapses runs of whitespace to single spaces.
fn squash(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for w in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// Cuts `text` to at most `max` bytes at a word boundary, marking the cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.min(text.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => &cut[..i],
        _ => cut,
    };
    format!("{}…", cut.trim_end())
}

/// Splits text into sentences; a fenced code block becomes one `[code: N lines]` placeholder
/// (code is rarely worth its tokens in a summary, and the full message can be recalled).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = 0usize;
    let mut fence = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            if fence {
                out.push(format!("[code: {in_code} lines]"));
                in_code = 0;
            }
            fence = !fence;
            continue;
        }
        if fence {
            in_code += 1;
            continue;
        }
        if t.is_empty() {
            continue;
        }
        let mut start = 0;
        let bytes = t.as_bytes();
        for i in 0..bytes.len() {
            let end_mark = matches!(bytes[i], b'.' | b'!' | b'?');
            let next_space = bytes.get(i + 1).is_none_or(|b| *b == b' ');
            if end_mark && next_space && i + 1 - start > 1 {
                let s = t[start..=i].trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
                start = i + 1;
            }
        }
        let rest = t[start..].trim();
        if !rest.is_empty() {
            out.push(rest.to_string());
        }
    }
    if fence && in_code > 0 {
        out.push(format!("[code: {in_code} lines]"));
    }
    out
}

/// How much a sentence carries facts: numbers, capitalised names (not sentence-initial),
/// identifiers and paths, quoted strings, URLs.
fn fact_score(s: &str) -> f32 {
    let mut score = 0.0;
    for (i, w) in s.split_whitespace().enumerate() {
        let w =
            w.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | ':' | '(' | ')' | '!' | '?'));
        if w.is_empty() {
            continue;
        }
        if w.bytes().any(|b| b.is_ascii_digit()) {
            score += 1.0;
        } else if w.contains(['_', '/', '`', '@', '#']) || w.contains("::") {
            score += 0.8;
        } else if i > 0 && w.chars().next().is_some_and(char::is_uppercase) {
            score += 0.6;
        } else if w.starts_with('"') || w.starts_with('\'') {
            score += 0.3;
        }
    }
    score
}

/// A chat message's summary text, knowing its neighbours' texts. `None` when the message has no
/// text worth keeping (then the summary is a one-line placeholder).
pub fn summarize_message(prev: Option<&str>, text: &str, next: Option<&str>) -> String {
    let clean = redact(text);
    let clean = clean.as_ref();
    let squashed = squash(clean);
    // Up to ~a quarter of the message, between ~25 and ~80 tokens (≈4 bytes a token).
    let cap = (squashed.len() / 4).clamp(100, 320);
    if squashed.len() <= cap {
        return squashed;
    }
    let context: HashSet<String> = prev
        .into_iter()
        .chain(next)
        .flat_map(|t| words(t).collect::<Vec<_>>())
        .collect();
    let sents = sentences(clean);
    let mut scored: Vec<(f32, usize)> = sents
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let ws: Vec<String> = words(s).collect();
            let n = ws.len().max(1) as f32;
            // Longer words are rarer: a crude, context-free stand-in for idf.
            let content: f32 = ws.iter().map(|w| (w.len() as f32).ln()).sum::<f32>() / n.sqrt();
            let shared = ws.iter().filter(|w| context.contains(*w)).count() as f32;
            let first = if i == 0 { 1.5 } else { 0.0 };
            let question = if s.ends_with('?') { 0.5 } else { 0.0 };
            let code = if s.starts_with("[code:") { -2.0 } else { 0.0 };
            (
                content + 0.6 * shared.sqrt() + fact_score(s) + first + question + code,
                i,
            )
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut chosen = Vec::new();
    let mut used = 0;
    for (_, i) in scored {
        let s = clip(&squash(&sents[i]), 240);
        if used > 0 && used + s.len() + 1 > cap {
            continue;
        }
        used += s.len() + 1;
        chosen.push((i, s));
        if used >= cap {
            break;
        }
    }
    chosen.sort_by_key(|(i, _)| *i);
    let body: Vec<String> = chosen.into_iter().map(|(_, s)| s).collect();
    format!("[summarized] {}", body.join(" … "))
}

struct AgentPatterns {
    tests: Regex,
    commit_out: Regex,
    commit_msg: Regex,
    error: Regex,
    decision: Regex,
    diff_file: Regex,
}

fn agent_patterns() -> &'static AgentPatterns {
    static P: OnceLock<AgentPatterns> = OnceLock::new();
    P.get_or_init(|| {
        let p = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("pattern {s}: {e}"));
        AgentPatterns {
            tests: p(r"(?i)\b(\d+) (passed|failed|errors?)\b"),
            commit_out: p(r"^\[([\w./\-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$"),
            commit_msg: p(r#"git commit\b.*?-(?:a?m)\s+(?:"([^"]+)"|'([^']+)'|(\S+))"#),
            error: p(
                r"^\s*(?:error(?:\[\w+\])?:|[A-Za-z]*Error\b|Traceback|thread '.*' panicked|panicked at|FAILED\b|FAIL\b|fatal:|npm ERR!|E\s{2,}\S|--- FAIL)",
            ),
            decision: p(
                r"(?i)\b(?:i'll|i will|let's|we should|we'll|decided|decision|going to|the plan|instead|chose|choose|the fix is|root cause|because)\b",
            ),
            diff_file: p(r"(?m)^(?:\+\+\+ b/|\*\*\* (?:Update|Add) File: )(\S+)"),
        }
    })
}

/// What an agent span did, gathered before rendering.
#[derive(Default)]
struct AgentFacts {
    tools: Vec<(String, u32)>,
    modified: Vec<String>,
    read: Vec<String>,
    commands: Vec<String>,
    passed: u64,
    failed: u64,
    errors: Vec<String>,
    commits: Vec<String>,
    decisions: Vec<String>,
    said: Vec<String>,
}

fn push_unique(list: &mut Vec<String>, item: String, max: usize) {
    if list.len() < max && !list.contains(&item) {
        list.push(item);
    }
}

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "file",
    "filename",
    "target_file",
    "filepath",
];
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script", "shell"];

fn tool_call_facts(facts: &mut AgentFacts, call: &Value) {
    let f = call.get("function").unwrap_or(call);
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("tool")
        .to_string();
    match facts.tools.iter_mut().find(|(n, _)| *n == name) {
        Some((_, c)) => *c += 1,
        None => facts.tools.push((name.clone(), 1)),
    }
    let args: Value = match f.get("arguments") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let lname = name.to_lowercase();
    let writes = [
        "edit", "write", "create", "patch", "replace", "insert", "apply", "save",
    ]
    .iter()
    .any(|k| lname.contains(k));
    if let Value::Object(obj) = &args {
        for k in PATH_KEYS {
            if let Some(p) = obj.get(*k).and_then(Value::as_str) {
                let p = clip(&redact(p), 160);
                if writes {
                    push_unique(&mut facts.modified, p, 30);
                } else {
                    push_unique(&mut facts.read, p, 12);
                }
            }
        }
        for k in COMMAND_KEYS {
            let cmd = match obj.get(*k) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Array(a)) => Some(
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            };
            if let Some(c) = cmd {
                command_facts(facts, &c);
            }
        }
    }
    let raw = match &args {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    for c in agent_patterns().diff_file.captures_iter(&raw) {
        if let Some(m) = c.get(1) {
            push_unique(&mut facts.modified, clip(&redact(m.as_str()), 160), 30);
        }
    }
}

fn command_facts(facts: &mut AgentFacts, cmd: &str) {
    let cmd = redact(cmd);
    let one = squash(&cmd);
    if let Some(c) = agent_patterns().commit_msg.captures(&one)
        && let Some(m) = c.get(1).or(c.get(2)).or(c.get(3))
    {
        push_unique(&mut facts.commits, clip(m.as_str(), 120), 8);
    }
    push_unique(&mut facts.commands, clip(&one, 120), 12);
}

fn output_facts(facts: &mut AgentFacts, text: &str) {
    let text = redact(text);
    let p = agent_patterns();
    for line in text.lines() {
        let has_counts = line.contains("passed") || line.contains("failed");
        if has_counts
            && (line.contains("test result")
                || line.contains("==")
                || line.contains("Tests:")
                || line.contains(" in ")
                || line.trim_start().starts_with(char::is_numeric))
        {
            for c in p.tests.captures_iter(line) {
                let n: u64 = c[1].parse().unwrap_or(0);
                match &c[2] {
                    "passed" => facts.passed += n,
                    _ => facts.failed += n,
                }
            }
        }
        if let Some(c) = p.commit_out.captures(line.trim()) {
            push_unique(
                &mut facts.commits,
                format!("{} {}", &c[2], clip(&c[3], 100)),
                8,
            );
        }
        if p.error.is_match(line) {
            push_unique(&mut facts.errors, clip(line.trim(), 160), 4);
        }
    }
}

fn assistant_text_facts(facts: &mut AgentFacts, text: &str) {
    let clean = redact(text);
    let p = agent_patterns();
    for s in sentences(&clean) {
        if s.starts_with("[code:") {
            continue;
        }
        if p.decision.is_match(&s) {
            push_unique(&mut facts.decisions, clip(&s, 200), 4);
        } else {
            push_unique(&mut facts.said, clip(&s, 200), 2);
        }
    }
}

/// The summary of an assistant turn that used tools (the assistant and tool messages of one
/// round, in order).
pub fn summarize_agent_span(messages: &[&Message]) -> String {
    let mut facts = AgentFacts::default();
    for m in messages {
        match m.role {
            Role::Tool | Role::Function => output_facts(&mut facts, &m.text_content()),
            _ => {
                assistant_text_facts(&mut facts, &m.text_content());
                if let Some(Value::Array(calls)) = &m.tool_calls {
                    for c in calls {
                        tool_call_facts(&mut facts, c);
                    }
                }
                if let Some(fc) = m.extra.get("function_call") {
                    tool_call_facts(&mut facts, fc);
                }
            }
        }
    }
    let mut out = format!("[summarized agent turn, {} messages]", messages.len());
    let list = |items: &[String]| items.join(", ");
    if !facts.said.is_empty() {
        out.push_str("\nSaid: ");
        out.push_str(&facts.said.join(" "));
    }
    if !facts.tools.is_empty() {
        let t: Vec<String> = facts
            .tools
            .iter()
            .map(|(n, c)| {
                if *c > 1 {
                    format!("{n}×{c}")
                } else {
                    n.clone()
                }
            })
            .collect();
        out.push_str("\nTools: ");
        out.push_str(&t.join(", "));
    }
    if !facts.modified.is_empty() {
        out.push_str("\nFiles modified: ");
        out.push_str(&list(&facts.modified));
    }
    if !facts.read.is_empty() {
        out.push_str("\nFiles read: ");
        out.push_str(&list(&facts.read));
    }
    if !facts.commands.is_empty() {
        out.push_str("\nCommands: ");
        let c: Vec<String> = facts.commands.iter().map(|c| format!("`{c}`")).collect();
        out.push_str(&c.join("; "));
    }
    if facts.passed + facts.failed > 0 {
        out.push_str(&format!(
            "\nTests: {} passed, {} failed",
            facts.passed, facts.failed
        ));
    }
    if !facts.errors.is_empty() {
        out.push_str("\nErrors: ");
        out.push_str(&facts.errors.join(" | "));
    }
    if !facts.commits.is_empty() {
        out.push_str("\nCommits: ");
        out.push_str(&list(&facts.commits));
    }
    if !facts.decisions.is_empty() {
        out.push_str("\nDecisions: ");
        out.push_str(&facts.decisions.join(" "));
    }
    // Belt and braces: nothing assembled above may re-form a secret.
    redact(&out).into_owned()
}

/// One line of the aggregate, and the messages (0-based input positions) it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregateLine {
    /// The rendered line (no newline).
    pub text: String,
    /// Whether this is a topic heading (kept longest when space is short).
    pub topic: bool,
    /// Input positions covered.
    pub covers: Vec<usize>,
}

/// What the aggregate needs of one message, computed once however many resolutions are tried.
#[derive(Clone, Debug)]
pub struct Digest {
    /// Input position.
    pub pos: usize,
    role: Role,
    terms: Vec<(String, u32)>,
    facts: Vec<String>,
    best: Option<(f32, String)>,
}

/// Whether a word is a fact worth carrying on its own: a hash, version or number with context, a
/// path or file name, an identifier.
fn is_fact(w: &str) -> bool {
    let digits = w.bytes().filter(u8::is_ascii_digit).count();
    let alpha = w.bytes().filter(u8::is_ascii_alphabetic).count();
    (digits > 0 && alpha > 0 && w.len() >= 5)
        || (digits > 0 && w.contains('.') && w.len() >= 3)
        || (w.contains('/') && alpha > 0 && w.len() >= 4 && !w.starts_with("http"))
        || (w.contains('_') && alpha > 0 && w.len() >= 4)
        || w.contains("::")
        || (w.len() >= 4
            && w.rfind('.')
                .is_some_and(|i| i > 0 && (1..=4).contains(&(w.len() - i - 1)))
            && alpha > 2)
}

fn push_facts(facts: &mut Vec<String>, text: &str, max: usize) {
    for w in text.split_whitespace() {
        if facts.len() >= max {
            return;
        }
        let w = w.trim_matches(|c: char| {
            !(c.is_alphanumeric() || matches!(c, '/' | '_' | '.' | ':' | '-'))
        });
        let w = w.trim_end_matches(['.', ':']);
        if is_fact(w) && !w.starts_with("[REDACTED") && !facts.iter().any(|f| f == w) {
            facts.push(clip(w, 80));
        }
    }
}

/// Digests one message for the aggregate (secrets redacted before anything is taken).
pub fn digest(pos: usize, m: &Message) -> Digest {
    let text = m.text_content();
    let clean = redact(&text);
    let mut counts: rustc_hash::FxHashMap<String, u32> = rustc_hash::FxHashMap::default();
    for w in words(&clean) {
        *counts.entry(w).or_insert(0) += 1;
    }
    // FxHash has a fixed seed, so this order is deterministic; callers sort what they show.
    let terms: Vec<(String, u32)> = counts.into_iter().collect();
    let mut facts = Vec::new();
    push_facts(&mut facts, &clean, 12);
    if let Some(Value::Array(calls)) = &m.tool_calls {
        for c in calls {
            let f = c.get("function").unwrap_or(c);
            let args: Value = match f.get("arguments") {
                Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
                Some(v) => v.clone(),
                None => Value::Null,
            };
            for k in PATH_KEYS.iter().chain(COMMAND_KEYS) {
                if let Some(v) = args.get(*k).and_then(Value::as_str) {
                    push_facts(&mut facts, &redact(v), 16);
                }
            }
        }
    }
    let mut best: Option<(f32, String)> = None;
    for s in sentences(&clean) {
        if s.starts_with("[code:") || s.len() < 20 {
            continue;
        }
        let sc = fact_score(&s) + (words(&s).count() as f32).sqrt();
        if best.as_ref().is_none_or(|(b, _)| sc > *b) {
            best = Some((sc, s));
        }
    }
    Digest {
        pos,
        role: m.role,
        terms,
        facts,
        best,
    }
}

/// The aggregate's lines for `digests` (oldest first) at a resolution of `segment` messages a
/// line: for each topic a heading, then one line per segment with its key terms and facts (and,
/// at the finest resolution, its most informative sentence).
pub fn aggregate_lines(digests: &[Digest], segment: usize) -> Vec<AggregateLine> {
    struct Segment {
        covers: Vec<usize>,
        keywords: Vec<String>,
        line: String,
    }
    let segment = segment.max(1);
    let mut segments: Vec<Segment> = Vec::new();
    for chunk in digests.chunks(segment) {
        let mut counts: rustc_hash::FxHashMap<&str, u32> = rustc_hash::FxHashMap::default();
        let mut facts: Vec<&str> = Vec::new();
        let per_message = (16 / chunk.len()).max(1);
        for d in chunk {
            for (w, c) in &d.terms {
                *counts.entry(w.as_str()).or_insert(0) += c;
            }
            for f in d.facts.iter().take(per_message) {
                if facts.len() < 16 && !facts.contains(&f.as_str()) {
                    facts.push(f);
                }
            }
        }
        // Frequent and long terms describe a segment best.
        let mut freq: Vec<(&str, u32)> = counts.into_iter().collect();
        freq.sort_unstable_by(|a, b| {
            let sa = a.1 as f32 * (a.0.len() as f32).ln();
            let sb = b.1 as f32 * (b.0.len() as f32).ln();
            sb.total_cmp(&sa).then(a.0.cmp(b.0))
        });
        let keywords: Vec<String> = freq
            .into_iter()
            .take(5)
            .map(|(w, _)| w.to_string())
            .collect();
        let first = chunk.first().map_or(0, |d| d.pos) + 1;
        let last = chunk.last().map_or(0, |d| d.pos) + 1;
        let mut roles: Vec<&str> = chunk.iter().map(|d| d.role.name()).collect();
        roles.sort_unstable();
        roles.dedup();
        let mut line = format!(
            "- #{first}-{last} ({}): {}",
            roles.join("/"),
            keywords.join(", ")
        );
        if !facts.is_empty() {
            line.push_str("; facts: ");
            line.push_str(&facts.join(" "));
        }
        if segment <= SEGMENT_MESSAGES
            && let Some((_, s)) = chunk
                .iter()
                .filter_map(|d| d.best.as_ref())
                .max_by(|a, b| a.0.total_cmp(&b.0))
        {
            line.push_str(" — ");
            line.push_str(&clip(&squash(s), 140));
        }
        segments.push(Segment {
            covers: chunk.iter().map(|d| d.pos).collect(),
            keywords,
            line,
        });
    }
    // Topics: runs of segments whose key terms overlap.
    let mut out = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        let mut j = i + 1;
        let mut terms: HashSet<&str> = segments[i].keywords.iter().map(String::as_str).collect();
        while j < segments.len() {
            let next: HashSet<&str> = segments[j].keywords.iter().map(String::as_str).collect();
            if terms.intersection(&next).count() < 2 {
                break;
            }
            terms.extend(next);
            j += 1;
        }
        let group = &segments[i..j];
        let mut tally: Vec<(&str, usize)> = Vec::new();
        for s in group {
            for k in &s.keywords {
                match tally.iter_mut().find(|(x, _)| x == k) {
                    Some((_, c)) => *c += 1,
                    None => tally.push((k, 1)),
                }
            }
        }
        tally.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let label: Vec<&str> = tally.iter().take(4).map(|(k, _)| *k).collect();
        let covers: Vec<usize> = group.iter().flat_map(|s| s.covers.clone()).collect();
        let (first, last) = (
            covers.first().map_or(0, |c| c + 1),
            covers.last().map_or(0, |c| c + 1),
        );
        out.push(AggregateLine {
            text: format!("Topic: {} (#{first}-{last})", label.join(", ")),
            topic: true,
            covers,
        });
        for s in group {
            out.push(AggregateLine {
                text: s.line.clone(),
                topic: false,
                covers: s.covers.clone(),
            });
        }
        i = j;
    }
    out
}

/// The aggregate message's first line.
pub fn aggregate_header(first: usize, last: usize, count: usize) -> String {
    format!(
        "[summary of {count} earlier messages, #{first}-{last}, oldest first; messages are numbered from 1]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_messages_are_kept_and_long_ones_cut() {
        assert_eq!(
            summarize_message(None, "  hello   there ", None),
            "hello there"
        );
        let long = "We moved the database to Postgres 16 on port 5433. ".to_string()
            + &"This sentence is filler without much in it at all. ".repeat(40);
        let s = summarize_message(None, &long, None);
        assert!(s.starts_with("[summarized]"));
        assert!(s.contains("5433"), "{s}");
        assert!(s.len() < long.len() / 2);
    }

    #[test]
    fn summaries_are_deterministic_and_context_aware() {
        let text = "Filler words are here to pad the text out a lot. ".repeat(10)
            + "The kafka consumer lags behind badly. "
            + &"More filler words are here to pad the text out. ".repeat(10);
        let a = summarize_message(Some("why does kafka lag?"), &text, None);
        assert_eq!(
            a,
            summarize_message(Some("why does kafka lag?"), &text, None)
        );
        assert!(a.contains("kafka"), "{a}");
    }

    #[test]
    fn agent_span_keeps_what_an_agent_needs() {
        let call = serde_json::json!([
            {"id": "1", "type": "function", "function": {"name": "edit_file", "arguments": "{\"path\": \"src/lib.rs\", \"old\": \"a\", \"new\": \"b\"}"}},
            {"id": "2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"cargo test && git commit -am 'fix parser'\"}"}}
        ]);
        let mut a = Message::text(
            Role::Assistant,
            "The root cause is an off-by-one in the parser. I'll fix it.",
        );
        a.tool_calls = Some(call);
        let t = Message::text(
            Role::Tool,
            "running 5 tests\nerror[E0308]: mismatched types\n  --> src/lib.rs:3\ntest result: FAILED. 4 passed; 1 failed; 0 ignored\n[main 1a2b3c4] fix parser\nexport AWS_KEY=AKIAIOSFODNN7EXAMPLE",
        );
        let s = summarize_agent_span(&[&a, &t]);
        for want in [
            "Files modified: src/lib.rs",
            "cargo test",
            "Tests: 4 passed, 1 failed",
            "error[E0308]: mismatched types",
            "fix parser",
            "1a2b3c4",
            "root cause",
        ] {
            assert!(s.contains(want), "missing {want}: {s}");
        }
        assert!(!s.contains("AKIAIOSFODNN7EXAMPLE"));
    }

    #[test]
    fn aggregate_covers_every_message() {
        let msgs: Vec<Message> = (0..25)
            .map(|i| {
                Message::text(
                    Role::User,
                    format!("message {i} about deploying nginx and docker"),
                )
            })
            .collect();
        let digests: Vec<Digest> = msgs.iter().enumerate().map(|(i, m)| digest(i, m)).collect();
        let lines = aggregate_lines(&digests, SEGMENT_MESSAGES);
        let mut covered: Vec<usize> = lines
            .iter()
            .filter(|l| l.topic)
            .flat_map(|l| l.covers.clone())
            .collect();
        covered.sort();
        assert_eq!(covered, (0..25).collect::<Vec<_>>());
        assert_eq!(lines.iter().filter(|l| !l.topic).count(), 3);
    }
}
