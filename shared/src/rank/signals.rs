//! Gathering each candidate's signals for [`super::rank`], one signal per step, in the order
//! the score depends on them.

use crate::chunk::ChunkKind;
use crate::index::IndexPack;
use crate::index::derived::{ChunkBits, Derived};
use crate::index::path_tables::PathTables;
use crate::index::references::{defined_names, name_key};
use crate::intent::{Intent, QueryAnalysis};

use crate::scratch::Scratch;

use super::{REFERENCE_USERS, Touched, Weights, path_matches};

thread_local! {
    /// [`FileEvidence::best`] between requests.
    static FILE_BEST: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// [`FileEvidence::sum`] between requests.
    static FILE_SUM: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// [`set_graph`]'s strength of each file between requests.
    static FILE_STRENGTH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// [`set_graph`]'s neighbours' share of each file between requests.
    static FILE_NEAR: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Each file's raw BM25 evidence, kept until every hit is in so the best file can scale it.
/// Per-file arrays of the thread, as [`Touched`]'s: the monorepo's 46k files made each query
/// allocate and zero four of them, where it touches a few thousand files.
pub(super) struct FileEvidence {
    /// The best chunk score in each file.
    best: Scratch<f32>,
    /// The sum of the chunk scores in each file.
    sum: Scratch<f32>,
}

impl FileEvidence {
    /// Gives the arrays back, zero again: `files` holds every file of a hit (the touched
    /// chunks' files: touching only adds to them).
    pub(super) fn release(mut self, files: &[u32]) {
        let (best, sum) = (self.best.entries(), self.sum.entries());
        for &f in files {
            best[f as usize] = 0.0;
            sum[f as usize] = 0.0;
        }
        self.best.cleared();
        self.sum.cleared();
    }
}

/// Touches the BM25 hits with their scaled lexical score, and sums their scores per file.
pub(super) fn touch_lexical(
    touched: &mut Touched,
    pack: &IndexPack,
    hits: &[(u32, f32)],
) -> FileEvidence {
    let files = pack.files.len();
    let chunk_file = &pack.derived().chunk_file;
    let best = hits.iter().map(|h| h.1).fold(0.0f32, f32::max);
    // File evidence: best chunk plus a share of the others.
    let mut best_of = Scratch::take(&FILE_BEST, files);
    let mut sum_of = Scratch::take(&FILE_SUM, files);
    let (file_best, file_sum) = (best_of.entries(), sum_of.entries());
    for &(c, s) in hits {
        let Some(&file) = chunk_file.get(c as usize) else {
            continue;
        };
        let sig = touched.touch(c, file);
        if best > 0.0 {
            sig.lexical = s / best;
        }
        let f = file as usize;
        file_best[f] = file_best[f].max(s);
        file_sum[f] += s;
    }
    FileEvidence {
        best: best_of,
        sum: sum_of,
    }
}

/// Touches the dense hits: a near embedding is evidence of its own.
pub(super) fn touch_dense(touched: &mut Touched, chunk_file: &[u32], dense: &[(u32, f32)]) {
    for &(c, v) in dense {
        if let Some(&file) = chunk_file.get(c as usize) {
            touched.touch(c, file).dense = v;
        }
    }
}

/// Gives the chunks touched so far their file's evidence, scaled by the best file's.
pub(super) fn set_file(touched: &mut Touched, evidence: &FileEvidence, weights: &Weights) {
    let (file_best, file_sum) = (evidence.best.view(), evidence.sum.view());
    let file_raw = |f: usize| file_best[f] + weights.file_spread * (file_sum[f] - file_best[f]);
    // Over the touched chunks' files: every file with evidence is one, the rest weigh 0.
    let file_max = touched
        .files
        .iter()
        .map(|&f| file_raw(f as usize))
        .fold(0.0f32, f32::max);
    // The file signal goes to chunks with evidence of their own (not to those touched below
    // only because their file or symbol is named).
    if file_max > 0.0 {
        for (k, &f) in touched.files.iter().enumerate() {
            touched.signals[k].file = file_raw(f as usize) / file_max;
        }
    }
}

/// The files the request names, in index order (so the prior can binary-search them).
pub(super) fn mentioned_files(pack: &IndexPack, analysis: &QueryAnalysis) -> Vec<u32> {
    let files = pack.files.len();
    if analysis.entities.paths.is_empty() {
        Vec::new()
    } else {
        (0..files as u32)
            .filter(|&f| {
                let path = &pack.files[f as usize].path;
                analysis
                    .entities
                    .paths
                    .iter()
                    .any(|p| path_matches(path, p))
            })
            .collect()
    }
}

/// A named documentation file's head, in chunks: where a changelog's new entry goes.
const NAMED_DOC_HEAD: u32 = 2;

/// A named documentation file's chunks that count as named beyond its head: its best matches
/// for the request's words (the section a request to edit it asks about).
const NAMED_DOC_MATCHES: usize = 2;

/// Touches the chunks of each named file as named: the request is about them whatever their
/// words. All of a source file's; of a documentation file, its head ([`NAMED_DOC_HEAD`] chunks)
/// and its best lexical matches ([`NAMED_DOC_MATCHES`]): "update History.md" names a changelog
/// of thousands of lines, and all of it touched as named and counted as code filled a 32k
/// answer with the changelog alone. Returns those chunks of the named documentation files,
/// sorted, for [`set_priors`]: their other chunks count as documentation.
pub(super) fn touch_mentioned(
    touched: &mut Touched,
    pack: &IndexPack,
    mentioned: &[u32],
) -> Vec<u32> {
    let chunk_file = &pack.derived().chunk_file;
    let doc_file = &pack.paths().doc_file;
    let mut named_doc: Vec<u32> = Vec::new();
    for &f in mentioned {
        let entry = &pack.files[f as usize];
        let all = entry.first_chunk..entry.first_chunk + entry.chunk_count;
        let chunks: Vec<u32> = if doc_file.get(f as usize).copied().unwrap_or(false) {
            let head = entry.first_chunk.saturating_add(NAMED_DOC_HEAD);
            let mut matches: Vec<(f32, u32)> = (head..all.end)
                .filter_map(|c| Some((touched.get(c)?.lexical, c)))
                .filter(|(lexical, _)| *lexical > 0.0)
                .collect();
            matches.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let kept: Vec<u32> = (all.start..head.min(all.end))
                .chain(matches.iter().take(NAMED_DOC_MATCHES).map(|m| m.1))
                .collect();
            named_doc.extend(&kept);
            kept
        } else {
            all.collect()
        };
        for c in chunks {
            if (c as usize) < chunk_file.len() {
                touched.touch(c, f).mention = 1.0;
            }
        }
    }
    named_doc.sort_unstable();
    named_doc
}

/// The keys of the symbols the request names, long enough to say something.
pub(crate) fn wanted_symbols(analysis: &QueryAnalysis) -> Vec<String> {
    analysis
        .entities
        .symbols
        .iter()
        .map(|s| name_key(s))
        .filter(|s| s.len() >= 3)
        .collect()
}

/// Touches the chunks that define a named symbol (1), or a name containing one (0.5).
pub(super) fn touch_symbols(touched: &mut Touched, pack: &IndexPack, wanted: &[String]) {
    if wanted.is_empty() {
        return;
    }
    for (i, chunk) in pack.chunks.iter().enumerate() {
        if chunk.symbol.is_none() {
            continue;
        }
        let names: Vec<String> = defined_names(chunk).collect();
        if names.iter().any(|n| wanted.contains(n)) {
            touched.touch(i as u32, chunk.file).symbol = 1.0;
        } else if names
            .iter()
            .any(|n| wanted.iter().any(|w| n.contains(w.as_str())))
        {
            touched.touch(i as u32, chunk.file).symbol = 0.5;
        }
    }
}

/// Touches the most relevant users of each named symbol (`named`: each name with its users, as
/// [`crate::index::References`] lists them): a change to it reaches them.
pub(super) fn touch_references(
    touched: &mut Touched,
    pack: &IndexPack,
    named: &[(String, Vec<u32>)],
) {
    let chunk_file = &pack.derived().chunk_file;
    for (_, users) in named {
        // Users with some lexical evidence of their own, best first (a pack from elsewhere
        // may list chunks it does not have: skipped, not indexed).
        let lexical = |u: u32| touched.get(u).map_or(0.0, |s| s.lexical);
        let mut users: Vec<u32> = users
            .iter()
            .copied()
            .filter(|&u| lexical(u) > 0.0 && (u as usize) < chunk_file.len())
            .collect();
        users.sort_by(|a, b| lexical(*b).total_cmp(&lexical(*a)).then(a.cmp(b)));
        for &u in users.iter().take(REFERENCE_USERS) {
            touched.touch(u, chunk_file[u as usize]).reference = 1.0;
        }
    }
}

/// Whether a chunk of `kind` defining `symbol` is a test module inside a source file (Rust's
/// `#[cfg(test)] mod tests`, or a part of one).
fn is_test_module(kind: ChunkKind, symbol: Option<&str>) -> bool {
    let Some(s) = symbol else {
        return false;
    };
    let head = s.split("::").next().unwrap_or(s);
    (kind == ChunkKind::Module || s.contains("::")) && matches!(head, "tests" | "test")
}

/// How many unnamed blocks back [`in_test_module`] looks for the test module they are in.
const UNNAMED_BACK: usize = 4;

/// Whether chunk `c` of `chunks` is part of a test module inside a source file: named as one
/// ([`is_test_module`]), or an unnamed block (a macro of property tests, a table of cases) that
/// follows such a chunk in the same file, with at most [`UNNAMED_BACK`] unnamed blocks between.
fn in_test_module(chunks: &[crate::index::ChunkRecord], c: usize) -> bool {
    let Some(r) = chunks.get(c) else {
        return false;
    };
    if is_test_module(r.kind, r.symbol.as_deref()) {
        return true;
    }
    if r.kind != ChunkKind::Block || r.symbol.is_some() {
        return false;
    }
    for back in 1..=UNNAMED_BACK.min(c) {
        let p = &chunks[c - back];
        if p.file != r.file {
            return false;
        }
        if is_test_module(p.kind, p.symbol.as_deref()) {
            return true;
        }
        if p.kind != ChunkKind::Block || p.symbol.is_some() {
            return false;
        }
    }
    false
}

/// Sets each candidate's file-kind prior: tests and docs count less unless asked for or named;
/// a test module inside a source file counts as [`Weights::inline_test_prior`] says.
pub(super) fn set_priors(
    touched: &mut Touched,
    pack: &IndexPack,
    derived: &Derived,
    mentioned: &[u32],
    named_doc: &[u32],
    analysis: &QueryAnalysis,
    weights: &Weights,
) {
    let paths = pack.paths();
    let prior = |c: u32, f: usize| -> f32 {
        if mentioned.binary_search(&(f as u32)).is_ok()
            && (!paths.doc_file[f] || named_doc.binary_search(&c).is_ok())
        {
            1.0
        } else {
            let kind = if paths.test_file[f] && analysis.intent != Intent::Test {
                weights.test_prior
            } else if paths.doc_file[f] {
                if analysis.intent == Intent::Explain {
                    weights.explain_doc_prior
                } else {
                    weights.doc_prior
                }
            } else {
                1.0
            };
            // Built, vendored and data files count less whatever their kind.
            match paths.set_aside.get(f) {
                Some(Some(_)) => kind * weights.set_aside_prior,
                _ => kind,
            }
        }
    };
    // Every candidate is known now: the per-file signals below are read for their files only.
    let inline_tests =
        (weights.inline_test_prior != 1.0 && analysis.intent != Intent::Test).then(|| {
            derived.in_test_module(|| {
                ChunkBits::from_fn(pack.chunks.len(), |c| in_test_module(&pack.chunks, c))
            })
        });
    for (k, (&c, &f)) in touched.chunks.iter().zip(&touched.files).enumerate() {
        let mut p = prior(c, f as usize);
        if let Some(inline) = inline_tests
            && !paths.test_file[f as usize]
            && inline.get(c as usize)
        {
            p *= weights.inline_test_prior;
        }
        touched.signals[k].prior = p;
    }
}

/// The path term ids ([`PathTables::term_id`], `None` for a term in no path) and BM25 idf of
/// the request's terms that say something about a path.
fn positive_idf(paths: &PathTables, term_idf: &[(String, f32)]) -> Vec<(Option<u32>, f32)> {
    term_idf
        .iter()
        // A word in most chunks says nothing about a path (BM25's idf can go negative).
        .filter(|(_, w)| *w > 0.0)
        .map(|(t, w)| (paths.term_id(t), *w))
        .collect()
}

/// Sets each candidate's path signal: the share of the request's term weight in its file's path
/// (`term_idf`: the request's terms the index holds, with their idf, in query order).
pub(super) fn set_path(touched: &mut Touched, pack: &IndexPack, term_idf: &[(String, f32)]) {
    let files = pack.files.len();
    let paths = pack.paths();
    let idf = positive_idf(paths, term_idf);
    let total: f32 = idf.iter().map(|t| t.1).sum();
    if total > 0.0 {
        // Each file's share of the weight, summed over the query's terms in query order from
        // the float sum's own start: the same float as summing each file's terms.
        let mut file_path = vec![std::iter::empty::<f32>().sum::<f32>(); files];
        for &(id, w) in &idf {
            let Some(id) = id else { continue };
            for &f in paths.files_with_term(id) {
                if let Some(share) = file_path.get_mut(f as usize) {
                    *share += w;
                }
            }
        }
        for (k, &f) in touched.files.iter().enumerate() {
            touched.signals[k].path = file_path.get(f as usize).map_or(0.0, |s| s / total);
        }
    }
}

/// Sets each candidate's recency: how lately its file changed in git history.
pub(super) fn set_recency(touched: &mut Touched, pack: &IndexPack) {
    for (k, &f) in touched.files.iter().enumerate() {
        touched.signals[k].recency = pack.recency.score(f);
    }
}

/// Sets the graph signal of chunks with lexical evidence: a strong file's neighbours share it.
/// A file's strength is its best score without the graph's share, so the graph never feeds on
/// itself.
pub(super) fn set_graph(touched: &mut Touched, pack: &IndexPack, weights: &Weights) {
    let files = pack.files.len();
    let derived = pack.derived();
    let mut strength_of = Scratch::take(&FILE_STRENGTH, files);
    let strength = strength_of.entries();
    for (k, &f) in touched.files.iter().enumerate() {
        let f = f as usize;
        strength[f] = strength[f].max(weights.base(&touched.signals[k]));
    }
    let top = touched
        .files
        .iter()
        .map(|&f| strength[f as usize])
        .fold(0.0f32, f32::max);
    if top > 0.0 {
        // A file's share once worked out: its bits, marked by a bit above them (0 is "not yet").
        let mut near_of = Scratch::take(&FILE_NEAR, files);
        let near = near_of.entries();
        for k in 0..touched.files.len() {
            if touched.signals[k].lexical <= 0.0 {
                continue;
            }
            let f = touched.files[k] as usize;
            if near[f] == 0 {
                let share = derived
                    .neighbours(f)
                    .iter()
                    .filter_map(|&g| strength.get(g as usize))
                    .copied()
                    .fold(0.0f32, f32::max)
                    / top;
                near[f] = (1 << 32) | u64::from(share.to_bits());
            }
            touched.signals[k].graph = f32::from_bits(near[f] as u32);
        }
        for &f in &touched.files {
            near[f as usize] = 0;
        }
        near_of.cleared();
    }
    for &f in &touched.files {
        strength[f as usize] = 0.0;
    }
    strength_of.cleared();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_modules_inside_source_files_are_recognised() {
        assert!(is_test_module(ChunkKind::Module, Some("tests")));
        assert!(is_test_module(
            ChunkKind::Function,
            Some("tests::fits_the_budget")
        ));
        assert!(!is_test_module(ChunkKind::Function, Some("tests")));
        assert!(!is_test_module(ChunkKind::Module, Some("testing")));
        assert!(!is_test_module(ChunkKind::Function, Some("select_greedy")));
        assert!(!is_test_module(ChunkKind::Block, None));
    }
}
