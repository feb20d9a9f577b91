//! Okapi BM25 over chunks, stored as one sorted term table and flat posting arrays so that
//! opening an index is a few large reads and a search touches only the query's postings.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::lists::{Found, KeyedLists, ListError, push_varint, read_varint};

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
        let postings = KeyedLists::from_sorted(entries.iter().map(|(term, list)| {
            let mut bytes = Vec::with_capacity(list.len() * 2);
            let mut last = 0u32;
            for &(d, tf) in list {
                // Documents are added in id order, so each list is ascending: store the gaps.
                push_varint(&mut bytes, d - last);
                push_varint(&mut bytes, u32::from(tf));
                last = d;
            }
            (term, bytes)
        }));
        Bm25Index::from_parts(params, postings, self.doc_len)
    }
}

/// One term's postings in one layer of a version ([`crate::index::delta`]): their bytes and, for
/// a base pack's, the map from its document numbers to the merged version's (`u32::MAX`: a
/// document the version no longer has).
#[derive(Clone, Copy, Debug)]
pub struct LayerPostings<'a> {
    /// The postings' varints.
    pub bytes: &'a [u8],
    /// Document number map, `None` when they are the index's own numbers.
    pub map: Option<&'a [u32]>,
}

/// Every document of one term's postings layers with its term frequency, in the index's own
/// numbering (dropped documents left out).
fn layer_docs(layers: &[LayerPostings<'_>]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for layer in layers {
        let postings = Postings {
            bytes: layer.bytes,
            doc: 0,
        };
        match layer.map {
            None => out.extend(postings),
            Some(map) => out.extend(postings.filter_map(|(d, tf)| {
                map.get(d as usize)
                    .copied()
                    .filter(|&m| m != u32::MAX)
                    .map(|m| (m, tf))
            })),
        }
    }
    out
}

/// Each posting's document and term frequency, in order (for the indexer, which cuts a version's
/// postings into a base's and a delta's).
pub fn decode_postings(bytes: &[u8]) -> impl Iterator<Item = (u32, u32)> + '_ {
    Postings { bytes, doc: 0 }
}

/// `docs` (ascending, each with its term frequency) as postings bytes.
pub fn encode_postings(docs: impl IntoIterator<Item = (u32, u32)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut last = 0u32;
    for (d, tf) in docs {
        push_varint(&mut bytes, d.wrapping_sub(last));
        push_varint(&mut bytes, tf);
        last = d;
    }
    bytes
}

/// A frozen BM25 index, laid out for a small resident size and a fast open: the sorted terms
/// in one string, and each term's postings as LEB128 varints (the gap to the previous document,
/// then the term frequency) in one byte string ([`KeyedLists`]). deno's index (116k terms,
/// 4.3M postings) takes about 12 MiB this way; as vectors of strings, `u32` documents and `u16`
/// frequencies it took 30 MiB. The postings of a large index live outside the pack
/// ([`crate::lists::ListStore::Segments`]), and so do the terms of a large dictionary
/// ([`crate::lists::KeyBlocks`]): a reader holds one key per block of terms and reads
/// the blocks, then the postings, of the query's terms.
///
/// A term's document frequency is the number of its postings, counted when they are read
/// (only a query's terms need it): stored, it was 2.4 MiB per 610k terms in every reader.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25Index {
    params: Bm25Params,
    /// Every term and its postings.
    postings: KeyedLists,
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    doc_len: Vec<u32>,
    avg_len: f32,
}

impl Bm25Index {
    /// An index of `postings` over documents of lengths `doc_len` (its average taken here).
    pub fn from_parts(params: Bm25Params, postings: KeyedLists, doc_len: Vec<u32>) -> Self {
        let n = doc_len.len();
        let avg = if n == 0 {
            0.0
        } else {
            doc_len.iter().map(|&l| l as f64).sum::<f64>() / n as f64
        };
        Bm25Index {
            params,
            postings,
            doc_len,
            avg_len: avg as f32,
        }
    }

    /// Its parameters, its postings and each document's length.
    pub fn into_parts(self) -> (Bm25Params, KeyedLists, Vec<u32>) {
        (self.params, self.postings, self.doc_len)
    }

    /// Each document's length (its terms' frequencies summed).
    pub fn doc_lens(&self) -> &[u32] {
        &self.doc_len
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// Checks what a decoded index's readers index with: one length per each of `docs`
    /// documents, and dictionary and postings laid out as [`KeyedLists::check`] requires
    /// (naming only the first `segments` segments).
    pub fn check(&self, docs: usize, segments: usize) -> Result<(), &'static str> {
        if self.doc_len.len() != docs {
            return Err("document lengths do not match the documents");
        }
        self.postings.check(segments)
    }

    /// Number of distinct terms.
    pub fn vocabulary(&self) -> usize {
        self.postings.len()
    }

    /// The terms and their postings.
    pub fn lists(&self) -> &KeyedLists {
        &self.postings
    }

    fn idf_of(&self, df: u32) -> f32 {
        let n = self.doc_len.len() as f32;
        let df = df as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Moves the postings out of the index into parts of at most `cap` bytes
    /// ([`KeyedLists::split`], which moves a large dictionary's terms to blocks after them);
    /// postings of at most `inline_max` bytes stay in the index.
    pub fn split_postings(
        &mut self,
        cap: usize,
        inline_max: usize,
        first_segment: u32,
    ) -> Vec<Vec<u8>> {
        self.postings.split(cap, inline_max, first_segment)
    }

    /// Documents matching any query term, best first, with their scores, for an index whose
    /// terms and postings are in the pack (an index being built, a small one, a test's).
    pub fn search(&self, query: &[(String, u16)]) -> Vec<(u32, f32)> {
        let found: Vec<(Found, u16)> = query
            .iter()
            .filter_map(|(term, qtf)| Some((self.postings.find_in(term, &|_| None).ok()??, *qtf)))
            .collect();
        self.search_found(&found, self.params, &|_| None, usize::MAX)
            .map(|s| s.hits)
            .unwrap_or_default()
    }

    /// Scores the documents of the query terms `found` ([`KeyedLists::find_in`], each with its
    /// frequency in the query) with `params` (they only matter at query time), the postings
    /// the pack does not hold taken from `external`; the terms it lacks are the error. Only
    /// the best `limit` documents are returned, with each term's idf.
    pub fn search_found<'a>(
        &'a self,
        found: &[(Found, u16)],
        params: Bm25Params,
        external: &dyn Fn(u32) -> Option<&'a [u8]>,
        limit: usize,
    ) -> Result<Searched, ListError> {
        let mut lists = Vec::with_capacity(found.len());
        let mut missing = Vec::new();
        for (term, qtf) in found {
            match self.postings.value_of(term, external) {
                Ok(bytes) => lists.push((*qtf, bytes)),
                Err(t) => missing.push(t),
            }
        }
        if !missing.is_empty() {
            return Err(ListError::Needed(missing));
        }
        let mut idf = Vec::with_capacity(lists.len());
        let mut weighted = Vec::with_capacity(lists.len());
        let mut postings = 0usize;
        for (qtf, bytes) in lists {
            let count = postings_count(bytes);
            postings += count as usize;
            let term_idf = self.idf_of(count);
            idf.push(term_idf);
            weighted.push((term_idf * f32::from(qtf).sqrt(), Postings { bytes, doc: 0 }));
        }
        let out = self.scores_of(weighted, postings, params, limit);
        Ok(Searched { hits: out, idf })
    }
}

impl Bm25Index {
    /// [`Bm25Index::search_found`] for a version in layers ([`crate::index::delta`]): each
    /// query term's frequency and its postings in every layer holding it, the documents mapped
    /// to this index's numbering. A term's document frequency is its live postings in all
    /// layers, so the scores are those of the version built whole; a term whose postings are
    /// all of dropped documents is not in the version (it gets no idf: the second value says
    /// which terms have live postings).
    pub fn search_layers(
        &self,
        terms: &[(u16, Vec<LayerPostings<'_>>)],
        params: Bm25Params,
        limit: usize,
    ) -> (Searched, Vec<bool>) {
        let mut idf = Vec::with_capacity(terms.len());
        let mut live = Vec::with_capacity(terms.len());
        let mut weighted = Vec::with_capacity(terms.len());
        let mut postings = 0usize;
        for (qtf, layers) in terms {
            let docs = layer_docs(layers);
            live.push(!docs.is_empty());
            if docs.is_empty() {
                continue;
            }
            postings += docs.len();
            let term_idf = self.idf_of(docs.len() as u32);
            idf.push(term_idf);
            weighted.push((term_idf * f32::from(*qtf).sqrt(), docs.into_iter()));
        }
        let out = self.scores_of(weighted, postings, params, limit);
        (Searched { hits: out, idf }, live)
    }
}

impl Bm25Index {
    /// The best `limit` documents of the terms' postings (each term's weight, its documents
    /// with their term frequencies; `postings` of them in all), best first.
    fn scores_of<I: Iterator<Item = (u32, u32)>>(
        &self,
        weighted: Vec<(f32, I)>,
        postings: usize,
        params: Bm25Params,
        limit: usize,
    ) -> Vec<(u32, f32)> {
        let Bm25Params { k1, b } = params;
        let avg = self.avg_len.max(1.0);
        // Scores accumulate in one array over the documents (a hash map per posting was the
        // largest cost of a query on a large index); `hit` lists the documents touched.
        let mut held = crate::scratch::Scratch::take(&SCORES, self.doc_len.len());
        let scores = held.entries();
        // Sized once: grown by doubling, it was copied a dozen times on a large repository.
        let mut hit: Vec<u32> = Vec::with_capacity(postings.min(self.doc_len.len()));
        for (weight, docs) in weighted {
            for (doc, tf) in docs {
                let Some(&len) = self.doc_len.get(doc as usize) else {
                    continue;
                };
                let tf = tf as f32;
                let s = weight * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len as f32 / avg));
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    hit.push(doc);
                }
                *slot += s;
            }
        }
        let mut out: Vec<(u32, f32)> = hit.iter().map(|&d| (d, scores[d as usize])).collect();
        for &d in &hit {
            scores[d as usize] = 0.0;
        }
        held.cleared();
        // A document whose terms all weigh 0 was pushed again each time: keep one.
        crate::order::best_first_top(&mut out, limit);
        out.dedup_by_key(|e| e.0);
        out
    }
}

thread_local! {
    /// One score per document, all zero between searches: a search of the monorepo corpus's
    /// 180k chunks no longer allocates and zeroes 720 KB (only the documents it touched are
    /// reset), and an isolate's memory does not grow by it either, having kept it anyway.
    static SCORES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What [`Bm25Index::search_found`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Searched {
    /// The best documents with their scores, best first.
    pub hits: Vec<(u32, f32)>,
    /// Each query term's inverse document frequency, in the order of the terms searched.
    pub idf: Vec<f32>,
}

/// The number of postings in `bytes` (each posting is two varints; each varint ends with the
/// one byte under 0x80). Counted eight bytes at a time: a common term of a large repository has
/// megabytes of postings, and a byte at a time cost a warm query more than its lookups.
fn postings_count(bytes: &[u8]) -> u32 {
    let (words, rest) = bytes.as_chunks::<8>();
    let high = 0x8080_8080_8080_8080u64;
    let ends: u32 = words
        .iter()
        .map(|w| (!u64::from_le_bytes(*w) & high).count_ones())
        .sum();
    let ends = ends + rest.iter().filter(|&&b| b < 0x80).count() as u32;
    ends / 2
}

/// A term's postings, decoded as they are read.
struct Postings<'a> {
    bytes: &'a [u8],
    doc: u32,
}

impl Iterator for Postings<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        let gap = read_varint(&mut self.bytes)?;
        let tf = read_varint(&mut self.bytes)?;
        self.doc = self.doc.wrapping_add(gap);
        Some((self.doc, tf))
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

    #[test]
    fn a_document_whose_first_share_is_zero_is_one_hit_with_its_whole_score() {
        // A zero frequency (no builder writes one; a damaged pack could hold it) adds 0, so the
        // document is listed again when the next term reaches it: it must come out once, with
        // the next term's share, as it does when scored term by term.
        let lists = KeyedLists::from_sorted([
            ("a", encode_postings([(0, 0), (1, 1)])),
            ("b", encode_postings([(0, 2), (2, 1)])),
        ]);
        let idx = Bm25Index::from_parts(Bm25Params::default(), lists, vec![3, 3, 3]);
        let hits = idx.search(&[("a".to_string(), 1), ("b".to_string(), 1)]);
        let zero_first: Vec<&(u32, f32)> = hits.iter().filter(|h| h.0 == 0).collect();
        assert_eq!(zero_first.len(), 1, "{hits:?}");
        let alone = idx.search(&[("b".to_string(), 1)]);
        assert_eq!(zero_first[0].1, alone.iter().find(|h| h.0 == 0).unwrap().1);
    }

    #[test]
    fn postings_are_counted_by_their_varint_ends() {
        for n in [0u32, 1, 3, 4, 5, 17, 1000] {
            let mut bytes = Vec::new();
            for d in 0..n {
                push_varint(&mut bytes, d * 97 % 300);
                push_varint(&mut bytes, 1 + d % 200);
            }
            assert_eq!(postings_count(&bytes), n);
        }
    }

    proptest::proptest! {
        /// The compact index scores exactly as a naive BM25 over the same documents.
        #[test]
        fn scores_match_a_naive_bm25(
            docs in proptest::collection::vec(
                proptest::collection::vec((0u8..12, 1u16..4), 0..8), 1..40),
            query in proptest::collection::vec(0u8..14, 1..5),
            cap in 1usize..64,
        ) {
            let mut b = Bm25Builder::default();
            let docs: Vec<Vec<(String, u16)>> = docs
                .into_iter()
                .map(|d| {
                    let mut m: std::collections::BTreeMap<String, u16> = Default::default();
                    for (t, tf) in d {
                        *m.entry(format!("t{t}")).or_default() += tf;
                    }
                    m.into_iter().collect()
                })
                .collect();
            for d in &docs {
                b.add(d);
            }
            let params = Bm25Params::default();
            let idx = b.finish(params);
            let q: Vec<(String, u16)> = {
                let mut m: std::collections::BTreeMap<String, u16> = Default::default();
                for t in query {
                    *m.entry(format!("t{t}")).or_default() += 1;
                }
                m.into_iter().collect()
            };
            let n = docs.len() as f32;
            let lens: Vec<f32> = docs.iter().map(|d| d.iter().map(|x| f32::from(x.1)).sum()).collect();
            let avg = (lens.iter().map(|&l| f64::from(l)).sum::<f64>() / f64::from(n)) as f32;
            let mut naive: Vec<(u32, f32)> = Vec::new();
            for (i, d) in docs.iter().enumerate() {
                let mut s = 0.0f32;
                let mut any = false;
                for (term, qtf) in &q {
                    let df = docs.iter().filter(|x| x.iter().any(|y| &y.0 == term)).count() as f32;
                    if let Some(&(_, tf)) = d.iter().find(|y| &y.0 == term) {
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        let tf = f32::from(tf);
                        let k1 = params.k1;
                        s += idf * f32::from(*qtf).sqrt() * tf * (k1 + 1.0)
                            / (tf + k1 * (1.0 - params.b + params.b * lens[i] / avg.max(1.0)));
                        any = true;
                    }
                }
                if any {
                    naive.push((i as u32, s));
                }
            }
            naive.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let got = idx.search(&q);
            proptest::prop_assert_eq!(got.len(), naive.len());
            for (g, w) in got.iter().zip(&naive) {
                proptest::prop_assert_eq!(g.0, w.0);
                proptest::prop_assert!((g.1 - w.1).abs() <= 1e-4 * w.1.abs().max(1.0));
            }
            // Encoding and decoding the index changes nothing.
            let bytes = postcard::to_allocvec(&idx).unwrap();
            let back: Bm25Index = postcard::from_bytes(&bytes).unwrap();
            proptest::prop_assert_eq!(&back, &idx);
            // With its postings and terms moved to parts and read back by range, it scores the
            // same: blocks first, then postings.
            let mut split = idx.clone();
            let parts = split.split_postings(cap, 0, 3);
            proptest::prop_assert!(parts.iter().all(|p| !p.is_empty()));
            let lists = split.lists();
            let read = |r: crate::lists::ListRange| {
                let part = &parts[(r.segment - 3) as usize];
                part[r.start as usize..(r.start + r.len) as usize].to_vec()
            };
            let blocks: Vec<(u32, Vec<u8>)> = q
                .iter()
                .filter_map(|(t, _)| lists.block_for(t))
                .map(|b| (b, read(lists.block_index().range(b).unwrap())))
                .collect();
            for (b, bytes) in &blocks {
                proptest::prop_assert_eq!(lists.block_index().verify(*b, bytes), Ok(()));
            }
            let block = |b: u32| blocks.iter().find(|r| r.0 == b).map(|r| r.1.as_slice());
            let found: Vec<(Found, u16)> = q
                .iter()
                .filter_map(|(t, qtf)| lists.find_in(t, &block).unwrap().map(|f| (f, *qtf)))
                .collect();
            let values: Vec<(u32, Vec<u8>)> = found
                .iter()
                .filter(|(f, _)| lists.must_read_found(f))
                .map(|(f, _)| {
                    let id = lists.id(crate::lists::ListKind::Postings, f);
                    (f.key, read(lists.range_of(&id).unwrap()))
                })
                .collect();
            for ((f, _), (_, bytes)) in found.iter().filter(|(f, _)| lists.must_read_found(f)).zip(&values) {
                let id = lists.id(crate::lists::ListKind::Postings, f);
                proptest::prop_assert_eq!(lists.verify_of(&id, bytes), Ok(()));
            }
            let external = |t: u32| values.iter().find(|r| r.0 == t).map(|r| r.1.as_slice());
            let searched = split.search_found(&found, params, &external, usize::MAX).unwrap();
            proptest::prop_assert_eq!(&searched.hits, &got);
            // Without the blocks or the postings it names what it lacks.
            if let Some((b, _)) = blocks.first() {
                let t = q.iter().find(|(t, _)| lists.block_for(t) == Some(*b)).unwrap();
                proptest::prop_assert_eq!(
                    lists.find_in(&t.0, &|_| None),
                    Err(ListError::BlocksNeeded(vec![*b]))
                );
            }
            if let Some((t, _)) = values.first() {
                let missing = split.search_found(&found, params, &|_| None, usize::MAX).unwrap_err();
                proptest::prop_assert!(matches!(missing, ListError::Needed(ref v) if v.contains(t)));
            }
        }
    }
}
