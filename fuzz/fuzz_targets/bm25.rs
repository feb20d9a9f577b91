//! BM25 postings: an index built from arbitrary documents, its postings moved to segments, then
//! searched with arbitrary bytes as the postings read back (the decoder's input when a segment
//! is damaged or hostile); and a dictionary decoded from arbitrary bytes, checked and searched.
#![no_main]

use ctxgate_core::lexical::{Bm25Builder, Bm25Index, Bm25Params, doc_terms, query_terms};
use libfuzzer_sys::{arbitrary, fuzz_target};

#[derive(arbitrary::Arbitrary, Debug)]
struct Input {
    docs: Vec<String>,
    query: String,
    cap: u8,
    postings: Vec<u8>,
    index: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let mut builder = Bm25Builder::default();
    for doc in input.docs.iter().take(64) {
        builder.add(&doc_terms(doc, "src/lib.rs"));
    }
    let mut index = builder.finish(Bm25Params::default());
    let query = query_terms(&input.query);
    let inline = index.search(&query);
    let segments = index.split_postings(usize::from(input.cap).max(1), 0, 0);
    // Read back from the segments it moved them to, the postings rank as they did inline.
    let from_segments = |t: u32| {
        let r = index.lists().range(t)?;
        let start = usize::try_from(r.start).ok()?;
        let end = start.checked_add(usize::try_from(r.len).ok()?)?;
        segments.get(r.segment as usize)?.get(start..end)
    };
    if let Ok(hits) = index.search_with(&query, Bm25Params::default(), &from_segments, usize::MAX) {
        assert_eq!(hits, inline);
    }
    for t in index.stored_terms(&query) {
        let _ = index.lists().verify(t, &input.postings);
    }
    let read_back = |_| Some(input.postings.as_slice());
    let _ = index.search_with(&query, Bm25Params::default(), &read_back, usize::MAX);
    // A decoded dictionary is read only once it passes the check a pack makes of it.
    if let Ok(decoded) = postcard::from_bytes::<Bm25Index>(&input.index)
        && decoded.check(decoded.len(), usize::MAX).is_ok()
    {
        let _ = decoded.search(&query);
        for t in decoded.stored_terms(&query) {
            let _ = decoded.lists().range(t);
            let _ = decoded.lists().verify(t, &input.postings);
        }
        let _ = decoded.search_with(&query, Bm25Params::default(), &read_back, usize::MAX);
    }
});
