//! Okapi BM25 over chunks, stored as one sorted term table and flat posting arrays so that
//! opening an index is a few large reads and a search touches only the query's postings.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// BM25's two knobs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
}

/// k1 = 1.5, b = 0.9: tuned on the visible retrieval benchmark (code chunks vary more in length
/// than prose documents, and stronger length normalisation keeps long chunks from winning on
/// volume); the textbook 1.2 / 0.75 scored slightly lower at 8k and 32k.
impl Default for Bm25Params {
    fn default() -> Self {
        Self { k1: 1.5, b: 0.9 }
    }
}

/// Collects documents, then freezes them into a [`Bm25Index`].
#[derive(Default)]
pub struct Bm25Builder {
    postings: HashMap<String, Vec<(u32, u16)>>,
    doc_len: Vec<u32>,
}

impl Bm25Builder {
    /// Adds the next document (ids are assigned in order from 0) with its term frequencies.
    pub fn add(&mut self, terms: &[(String, u16)]) -> u32 {
        let doc = self.doc_len.len() as u32;
        let mut len = 0u32;
        for (term, tf) in terms {
            len += u32::from(*tf);
            match self.postings.get_mut(term.as_str()) {
                Some(list) => list.push((doc, *tf)),
                None => {
                    self.postings.insert(term.clone(), vec![(doc, *tf)]);
                }
            }
        }
        self.doc_len.push(len);
        doc
    }

    /// Freezes the index.
    pub fn finish(self, params: Bm25Params) -> Bm25Index {
        let mut entries: Vec<(String, Vec<(u32, u16)>)> = self.postings.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let total: usize = entries.iter().map(|e| e.1.len()).sum();
        let mut terms = Vec::with_capacity(entries.len());
        let mut offsets = Vec::with_capacity(entries.len() + 1);
        let mut docs = Vec::with_capacity(total);
        let mut tfs = Vec::with_capacity(total);
        offsets.push(0u32);
        for (term, list) in entries {
            terms.push(term);
            for (d, tf) in list {
                docs.push(d);
                tfs.push(tf);
            }
            offsets.push(docs.len() as u32);
        }
        let n = self.doc_len.len();
        let avg = if n == 0 {
            0.0
        } else {
            self.doc_len.iter().map(|&l| l as f64).sum::<f64>() / n as f64
        };
        Bm25Index {
            params,
            terms,
            offsets,
            docs,
            tfs,
            doc_len: self.doc_len,
            avg_len: avg as f32,
        }
    }
}

/// A frozen BM25 index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25Index {
    params: Bm25Params,
    terms: Vec<String>,
    offsets: Vec<u32>,
    docs: Vec<u32>,
    tfs: Vec<u16>,
    doc_len: Vec<u32>,
    avg_len: f32,
}

impl Bm25Index {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// Number of distinct terms.
    pub fn vocabulary(&self) -> usize {
        self.terms.len()
    }

    /// The inverse document frequency of `term` (as [`Bm25Index::search`] weighs it), if any
    /// document holds it.
    pub fn idf(&self, term: &str) -> Option<f32> {
        let t = self.terms.binary_search_by(|x| x.as_str().cmp(term)).ok()?;
        let n = self.doc_len.len() as f32;
        let df = (self.offsets[t + 1] - self.offsets[t]) as f32;
        Some((1.0 + (n - df + 0.5) / (df + 0.5)).ln())
    }

    /// Documents matching any query term, best first, with their scores.
    pub fn search(&self, query: &[(String, u16)]) -> Vec<(u32, f32)> {
        self.search_with(query, self.params)
    }

    /// [`Bm25Index::search`] with other parameters than the index was built with (they only
    /// matter at query time).
    pub fn search_with(&self, query: &[(String, u16)], params: Bm25Params) -> Vec<(u32, f32)> {
        let n = self.doc_len.len() as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        let Bm25Params { k1, b } = params;
        let avg = self.avg_len.max(1.0);
        for (term, qtf) in query {
            let Ok(t) = self.terms.binary_search_by(|x| x.as_str().cmp(term)) else {
                continue;
            };
            let (lo, hi) = (self.offsets[t] as usize, self.offsets[t + 1] as usize);
            let df = (hi - lo) as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let weight = idf * f32::from(*qtf).sqrt();
            for i in lo..hi {
                let doc = self.docs[i];
                let tf = f32::from(self.tfs[i]);
                let len = self.doc_len[doc as usize] as f32;
                let s = weight * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg));
                *scores.entry(doc).or_insert(0.0) += s;
            }
        }
        let mut out: Vec<(u32, f32)> = scores.into_iter().collect();
        out.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexical::{doc_terms, query_terms};

    #[test]
    fn ranks_the_matching_document_first() {
        let docs = [
            (
                "fn parse_config(path: &str) -> Config { read(path) }",
                "src/config.rs",
            ),
            (
                "fn render(page: Page) -> Html { page.html() }",
                "src/render.rs",
            ),
            (
                "fn main() { let c = parse_config(\"x\"); render(c) }",
                "src/main.rs",
            ),
        ];
        let mut b = Bm25Builder::default();
        for (text, path) in docs {
            b.add(&doc_terms(text, path));
        }
        let idx = b.finish(Bm25Params::default());
        assert_eq!(idx.len(), 3);
        let hits = idx.search(&query_terms("how is the config parsed? ParseConfig"));
        assert_eq!(hits[0].0, 0);
        assert!(hits.iter().all(|h| h.1 > 0.0));
        assert!(idx.search(&query_terms("nothing matches zzz")).is_empty());
    }
}
