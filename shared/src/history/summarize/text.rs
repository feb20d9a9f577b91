//! The text handling every summary level shares (content words, sentences, cutting, fact
//! weight), in one place so the levels agree on what a word, a sentence and a fact are.

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
pub(super) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !is_stopword(w))
}

/// Collapses runs of whitespace to single spaces.
pub(super) fn squash(text: &str) -> String {
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
pub(super) fn sentences(text: &str) -> Vec<String> {
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
pub(super) fn fact_score(s: &str) -> f32 {
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
