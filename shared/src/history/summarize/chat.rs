//! A chat message's summary: its most informative sentences, chosen knowing its neighbours, so a
//! shortened thread still reads as a conversation.

use std::collections::HashSet;

use super::text::{clip, fact_score, sentences, squash, words};
use crate::secrets::redact;

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
}
