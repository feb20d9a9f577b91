//! The aggregate's lines: segments and topics over the oldest messages, so a long history still
//! says what was discussed when there is room for one message only.

use std::collections::HashSet;

use serde_json::Value;

use super::text::{clip, fact_score, sentences, squash, words};
use super::tool_args::{COMMAND_KEYS, PATH_KEYS};
use crate::history::message::{Message, Role};
use crate::secrets::redact;

/// Segment size of the aggregate, in messages.
pub const SEGMENT_MESSAGES: usize = 10;

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
