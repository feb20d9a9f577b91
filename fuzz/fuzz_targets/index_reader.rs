//! The index format reader: a manifest (any bytes), a pack (any bytes, or the sample project's
//! pack with bytes flipped and cut), a pack merged as a delta over the sample's, then what a
//! query reads of a pack that decoded: derived facts, the paths' tables, BM25, token totals and a whole assembly.
#![no_main]

use std::borrow::Cow;

use ctxgate_core::assemble::{AssembleError, ChunkSource, QueryOptions, assemble};
use ctxgate_core::catalog::{ResolvedBudget, TokenizerSpec};
use ctxgate_core::index::IndexPack;
use ctxgate_core::index::open::{open_pack, read_manifest};
use ctxgate_core::lexical::query_terms;
use ctxgate_core::lists::{ListId, ListKind};
use ctxgate_core::tokens::Encoding;
use ctxgate_fuzz::sample::{ORG, sample};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [mode, rest @ ..] = data else {
        return;
    };
    let sample = sample();
    match mode % 4 {
        0 => {
            if let Ok(manifest) = read_manifest(ORG, &sample.project_id, sample.version, rest)
                && let Ok(pack) = open_pack(&manifest, sample.pack())
            {
                read(&pack);
            }
        }
        1 => {
            if let Ok(pack) = IndexPack::decode(rest) {
                read(&pack);
            }
        }
        // Any pack that decodes, merged as a delta over the sample's (format 12's layers):
        // refused or read, never a panic.
        3 => {
            if let Ok(delta) = IndexPack::decode(rest)
                && let Ok(base) = IndexPack::decode(sample.pack())
                && let Ok(merged) = ctxgate_core::index::delta::merge(base, delta)
            {
                read(&merged);
            }
        }
        _ => {
            let bytes = edited(sample.pack(), rest);
            // Replaying a crash with CTXGATE_FUZZ_DUMP=FILE keeps the pack it decoded, for the
            // regression files the core's tests read (fuzz/regressions/index_reader/).
            if let Some(path) = std::env::var_os("CTXGATE_FUZZ_DUMP") {
                std::fs::write(path, &bytes).expect("dump");
            }
            if let Ok(pack) = IndexPack::decode(&bytes) {
                read(&pack);
            }
        }
    }
});

/// `pack` cut to the length in the first two bytes of `edits` (when shorter), with the rest
/// read as (offset, xor) triples.
fn edited(pack: &[u8], edits: &[u8]) -> Vec<u8> {
    let mut bytes = pack.to_vec();
    let Some((cut, edits)) = edits.split_first_chunk::<2>() else {
        return bytes;
    };
    for e in edits.chunks_exact(3) {
        let at = usize::from(u16::from_le_bytes([e[0], e[1]])) % bytes.len();
        bytes[at] ^= e[2];
    }
    bytes.truncate(usize::from(u16::from_le_bytes(*cut)).max(12));
    bytes
}

/// Every text is the same line: the pack is what is under test.
struct AnyText;

impl ChunkSource for AnyText {
    fn text(&self, _pack: &IndexPack, _i: usize) -> Result<Option<String>, AssembleError> {
        Ok(Some(
            "fn parse_config(path: &str) -> Config { read(path) }\n".into(),
        ))
    }

    /// No list is held: a pack that keeps lists in segments stops with a read it lacks.
    fn list(&self, _pack: &IndexPack, _id: ListId) -> Result<Option<Cow<'_, [u8]>>, AssembleError> {
        Ok(None)
    }
}

fn read(pack: &IndexPack) {
    let _ = pack.derived();
    // The paths' tables as ranking reads them: kinds by file, a term's files.
    let paths = pack.paths();
    for f in 0..pack.files.len() {
        let _ = (paths.test_file[f], paths.doc_file[f], paths.set_aside[f]);
    }
    for t in ["src", "config", "parse"] {
        if let Some(id) = paths.term_id(t) {
            let _ = paths.files_with_term(id).len();
        }
    }
    for encoding in Encoding::ALL {
        let _ = pack.total_tokens(encoding);
    }
    let query = query_terms("how is the config parsed? parse_config render_page");
    let _ = pack.lexical.search(&query);
    let lists = pack.lexical.lists();
    for (t, _) in &query {
        if let Some(b) = lists.block_for(t) {
            let _ = lists.block_index().range(b);
            let _ = lists.block_index().verify(b, b"\x01\x01");
        }
        // A block read back as damaged as the pack: an error or an answer, never a panic.
        let block: &[u8] = b"\x00\x00\x05parse\x02\x01\x01\x01\x01";
        if let Ok(Some(found)) = lists.find_in(t, &|_| Some(block)) {
            let id = lists.id(ListKind::Postings, &found);
            let _ = lists.range_of(&id);
            let _ = lists.verify_of(&id, b"\x01\x01");
        }
    }
    let resolved = ResolvedBudget {
        budget: 2_000,
        history: 0,
        tokenizer: TokenizerSpec::Exact(Encoding::O200kBase),
        model: None,
        window: None,
        warnings: Vec::new(),
    };
    let _ = assemble(
        pack,
        &AnyText,
        "how is the config parsed?",
        &resolved,
        &QueryOptions::default(),
    );
}
