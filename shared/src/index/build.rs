//! Building a version's search structures from its chunks: the BM25 index, the references
//! (which chunks use which defined names) and the import graph, next to the reader of each.
//!
//! The work per chunk ([`ChunkTerms::extract`]) is independent, so a host may run it in
//! parallel (the indexer does, with rayon); [`build`] then folds the results in chunk order,
//! which is what makes two builds of the same chunks byte-identical.

use crate::chunk::{Language, identifiers};
use crate::graph::{ImportGraph, import_specs};
use crate::lexical::{Bm25Builder, Bm25Index, Bm25Params, doc_terms};

use super::{ChunkRecord, FileEntry, References};

/// What one chunk contributes to the search structures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChunkTerms {
    /// BM25 terms with their counts (the text's and the path's).
    pub terms: Vec<(String, u16)>,
    /// Import specifiers found in the text.
    pub imports: Vec<String>,
    /// Identifiers the text uses (for references).
    pub names: Vec<String>,
}

impl ChunkTerms {
    /// The terms of chunk `text` from the file at `path`, written in `language` (its label).
    pub fn extract(text: &str, path: &str, language: &str) -> Self {
        Self {
            terms: doc_terms(text, path),
            imports: import_specs(text, language),
            names: identifiers(text, Language::from_path(path)),
        }
    }
}

/// A version's search structures.
pub struct Built {
    /// BM25 over every chunk, postings still inline (the host may split them out).
    pub lexical: Bm25Index,
    /// Defined names and the chunks that use them.
    pub references: References,
    /// Which file imports which.
    pub graph: ImportGraph,
}

/// Builds the structures of `chunks` (of `files`) from each chunk's [`ChunkTerms`], in chunk
/// order.
pub fn build(files: &[FileEntry], chunks: &[ChunkRecord], terms: Vec<ChunkTerms>) -> Built {
    let mut builder = Bm25Builder::default();
    let mut specs: Vec<(String, Vec<String>)> = files
        .iter()
        .map(|f| (f.language.to_string(), Vec::new()))
        .collect();
    let mut used = Vec::with_capacity(chunks.len());
    for (c, t) in chunks.iter().zip(terms) {
        builder.add(&t.terms);
        specs[c.file as usize].1.extend(t.imports);
        used.push(t.names);
    }
    let lexical = builder.finish(Bm25Params::default());
    let references = References::build(chunks, &used);
    drop(used);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let graph = ImportGraph::build(&paths, &specs);
    Built {
        lexical,
        references,
        graph,
    }
}
