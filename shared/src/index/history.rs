//! What the commits that wrote each chunk's lines said (the indexer reads the repository's
//! first-parent history; a project without history has none and the signal stays 0).
//!
//! A request is often worded like the earlier commits that worked on the same lines ("fix the
//! synopsis of choices" after "show choices in the synopsis"), even when it shares no word with
//! the code itself: the words of those commits' messages reach the chunks the lexical index
//! cannot. Measured in simulation before it was built (docs/retrieval.md, "The project's own
//! history, line by line"): held out +0.022 line recall at 32k.

use serde::{Deserialize, Serialize};

/// Words too common in commit messages to tell commits apart.
const STOP: &[&str] = &[
    "add", "added", "adds", "an", "and", "as", "at", "be", "by", "fix", "fixed", "fixes", "for",
    "from", "in", "into", "is", "it", "not", "of", "on", "or", "that", "the", "this", "to", "use",
    "when", "with",
];

/// How much a long message's similarity is damped per word (a 50-word message counts half).
const LENGTH_DAMPING: f32 = 0.02;

/// One commit that wrote indexed lines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Message {
    /// Its message's words, duplicates included (for the length damping).
    words: u32,
    /// Its distinct words, as indexes into [`History::terms`], ascending.
    terms: Vec<u32>,
}

/// Per chunk, the commits that wrote its lines, and their messages' words.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// The commit the walk started from (hex; empty without history): a later HEAD makes a
    /// re-index build a new version even when no file changed, so lines committed since get
    /// their writers.
    head: String,
    /// Commits walked (the document count of the words' idf; 0: no history).
    commits: u32,
    /// Message words, ascending, each with how many walked commits' messages hold it.
    terms: Vec<(String, u32)>,
    /// The commits that wrote some indexed line.
    messages: Vec<Message>,
    /// Chunk `i`'s commits are `wrote[starts[i]..starts[i + 1]]` (empty without history).
    starts: Vec<u32>,
    /// Indexes into `messages`.
    wrote: Vec<u32>,
}

/// Lower-cased words of `text`, identifiers split where their case changes (`parseHTTPHeader`:
/// parse, http, header), one-letter words and [`STOP`] words dropped.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let token = token.trim_start_matches(|c: char| c.is_ascii_digit());
        let b = token.as_bytes();
        let mut start = 0;
        for i in 1..b.len() {
            let (p, c) = (b[i - 1], b[i]);
            let next_lower = b.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let boundary = (c.is_ascii_uppercase() && !p.is_ascii_uppercase())
                || (c.is_ascii_uppercase() && p.is_ascii_uppercase() && next_lower)
                || (c.is_ascii_digit() && p.is_ascii_uppercase());
            if boundary {
                out.push(token[start..i].to_ascii_lowercase());
                start = i;
            }
        }
        if start < b.len() {
            out.push(token[start..].to_ascii_lowercase());
        }
    }
    out.retain(|w| w.len() > 1 && !STOP.contains(&w.as_str()));
    out
}

impl History {
    /// From `commits` walked, the number of their messages holding each word (`df`), the
    /// messages of the commits that wrote indexed lines, and per chunk (in chunk order) the
    /// indexes of those messages. Words of `df` no message holds are not kept.
    pub fn new(
        commits: u32,
        df: &std::collections::HashMap<String, u32>,
        messages: &[String],
        per_chunk: &[Vec<u32>],
    ) -> Self {
        let split: Vec<Vec<String>> = messages.iter().map(|m| words(m)).collect();
        let mut kept: Vec<&str> = split.iter().flatten().map(String::as_str).collect();
        kept.sort_unstable();
        kept.dedup();
        let terms: Vec<(String, u32)> = kept
            .iter()
            .map(|w| ((*w).to_owned(), df.get(*w).copied().unwrap_or(1).max(1)))
            .collect();
        let messages = split
            .iter()
            .map(|ws| {
                let mut ids: Vec<u32> = ws
                    .iter()
                    .filter_map(|w| terms.binary_search_by(|t| t.0.as_str().cmp(w)).ok())
                    .map(|i| i as u32)
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                Message {
                    words: ws.len() as u32,
                    terms: ids,
                }
            })
            .collect();
        let mut starts = Vec::with_capacity(per_chunk.len() + 1);
        let mut wrote = Vec::new();
        starts.push(0);
        for list in per_chunk {
            let mut list = list.clone();
            list.sort_unstable();
            list.dedup();
            wrote.extend(list);
            starts.push(wrote.len() as u32);
        }
        Self {
            head: String::new(),
            commits: commits.max(1),
            terms,
            messages,
            starts,
            wrote,
        }
    }

    /// This history, made from the walk that started at `head`.
    pub fn from_head(mut self, head: String) -> Self {
        self.head = head;
        self
    }

    /// The commit the walk started from (empty without history).
    pub fn head(&self) -> &str {
        &self.head
    }

    /// Whether it has anything to say (a project with history and indexed lines).
    pub fn is_empty(&self) -> bool {
        self.wrote.is_empty()
    }

    /// Commits that wrote some indexed line.
    pub fn writers(&self) -> usize {
        self.messages.len()
    }

    /// Whether it fits a version of `chunks` chunks (a decoded pack's check).
    pub fn within(&self, chunks: usize) -> bool {
        if self.starts.is_empty() {
            return self.wrote.is_empty() && self.messages.is_empty();
        }
        let terms = self.terms.len() as u32;
        self.starts.len() == chunks + 1
            && self.starts.first() == Some(&0)
            && self.starts.windows(2).all(|w| w[0] <= w[1])
            && self.starts.last().copied() == Some(self.wrote.len() as u32)
            && self
                .wrote
                .iter()
                .all(|&m| (m as usize) < self.messages.len())
            && self
                .messages
                .iter()
                .all(|m| m.terms.iter().all(|&t| t < terms))
    }

    /// Per chunk of `chunks`, how much the messages of the commits that wrote it resemble
    /// `query`: per commit the idf of the query words its message holds, damped by the
    /// message's length; per chunk their sum over the square root of one more than their
    /// number (a chunk many commits wrote is not favoured for that alone). Unscaled; 0 for
    /// every chunk without history.
    pub fn scores(&self, query: &str, chunks: &[u32]) -> Vec<f32> {
        let mut wanted: Vec<(u32, f32)> = words(query)
            .iter()
            .filter_map(|w| self.terms.binary_search_by(|t| t.0.as_str().cmp(w)).ok())
            .map(|i| (i as u32, self.idf(self.terms[i].1)))
            .collect();
        wanted.sort_unstable_by_key(|w| w.0);
        wanted.dedup_by_key(|w| w.0);
        if wanted.is_empty() || self.is_empty() {
            return vec![0.0; chunks.len()];
        }
        let mut similarity: Vec<Option<f32>> = vec![None; self.messages.len()];
        chunks
            .iter()
            .map(|&c| {
                let (Some(&a), Some(&b)) =
                    (self.starts.get(c as usize), self.starts.get(c as usize + 1))
                else {
                    return 0.0;
                };
                let writers = &self.wrote[a as usize..b as usize];
                let sum: f32 = writers
                    .iter()
                    .map(|&m| {
                        *similarity[m as usize].get_or_insert_with(|| {
                            self.similarity(&self.messages[m as usize], &wanted)
                        })
                    })
                    .sum();
                sum / (1.0 + writers.len() as f32).sqrt()
            })
            .collect()
    }

    fn similarity(&self, message: &Message, wanted: &[(u32, f32)]) -> f32 {
        let shared: f32 = wanted
            .iter()
            .filter(|(t, _)| message.terms.binary_search(t).is_ok())
            .map(|(_, idf)| idf)
            .sum();
        shared / (1.0 + LENGTH_DAMPING * message.words as f32)
    }

    /// BM25's idf over the walked commits' messages.
    fn idf(&self, df: u32) -> f32 {
        let (n, df) = (self.commits as f32, df as f32);
        (1.0 + (n - df + 0.5).max(0.0) / (df + 0.5)).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn words_split_identifiers_and_drop_the_common_ones() {
        assert_eq!(
            words("Fix parseHTTPHeader for the HTTP2 client_id (#123)"),
            vec!["parse", "http", "header", "http", "client", "id"]
        );
        assert_eq!(words("a b: Ünïcode x2y 42nd"), vec!["code", "x2y", "nd"]);
    }

    fn sample() -> History {
        let messages = vec![
            "Show choices in the synopsis".to_owned(),
            "Speed up the parser".to_owned(),
            "Release 1.0".to_owned(),
        ];
        let mut df = HashMap::new();
        for m in &messages {
            let mut ws = words(m);
            ws.sort();
            ws.dedup();
            for w in ws {
                *df.entry(w).or_insert(0) += 1;
            }
        }
        // Ten commits walked; chunk 0 by the synopsis commit, chunk 1 by the parser and the
        // release, chunk 2 by none.
        History::new(10, &df, &messages, &[vec![0], vec![1, 2, 1], vec![]])
    }

    #[test]
    fn the_chunk_whose_writers_resemble_the_request_scores_first() {
        let h = sample();
        assert!(h.within(3));
        assert!(!h.within(4));
        let s = h.scores("Fix double-bracketing of choices in synopsis", &[0, 1, 2]);
        assert!(s[0] > 0.0, "{s:?}");
        assert_eq!(s[1], 0.0);
        assert_eq!(s[2], 0.0);
        let s = h.scores("the parser is slow", &[0, 1, 2, 7]);
        assert!(s[1] > 0.0 && s[0] == 0.0 && s[3] == 0.0, "{s:?}");
        // Duplicated writers count once.
        assert_eq!(h.wrote.len(), 3);
    }

    #[test]
    fn no_history_scores_nothing() {
        let h = History::default();
        assert!(h.is_empty() && h.within(5));
        assert_eq!(h.scores("synopsis", &[0, 1]), vec![0.0, 0.0]);
    }
}
