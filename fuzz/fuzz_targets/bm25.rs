//! BM25 postings: an index built from arbitrary documents, its postings moved to segments, then
//! searched with arbitrary bytes as the postings read back (the decoder's input when a segment
//! is damaged or hostile), in one layer or in a version's two; and a dictionary decoded from
//! arbitrary bytes, checked and searched.
#![no_main]

use ctxgate_core::lexical::{
    Bm25Builder, Bm25Index, Bm25Params, LayerPostings, doc_terms, query_terms,
};
use ctxgate_core::lists::{Found, ListKind, ListRange};
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
    let lists = index.lists();
    let read = |r: ListRange| -> Option<&[u8]> {
        let start = usize::try_from(r.start).ok()?;
        let end = start.checked_add(usize::try_from(r.len).ok()?)?;
        segments.get(r.segment as usize)?.get(start..end)
    };
    // Read back from the segments it moved them to (keys in blocks first, then postings), the
    // postings rank as they did inline.
    let blocks = |b: u32| lists.block_index().range(b).and_then(read);
    let found: Vec<(Found, u16)> = query
        .iter()
        .filter_map(|(t, q)| Some((lists.find_in(t, &blocks).ok()??, *q)))
        .collect();
    let from_segments = |k: u32| {
        let f = found.iter().find(|f| f.0.key == k)?;
        read(lists.range_of(&lists.id(ListKind::Postings, &f.0))?)
    };
    if let Ok(s) = index.search_found(&found, Bm25Params::default(), &from_segments, usize::MAX) {
        assert_eq!(s.hits, inline);
    }
    for (f, _) in &found {
        let _ = lists.verify_of(&lists.id(ListKind::Postings, f), &input.postings);
    }
    // Hostile postings: read as they come, in one layer or mapped through a version's layers.
    let read_back = |_| Some(input.postings.as_slice());
    let _ = index.search_found(&found, Bm25Params::default(), &read_back, usize::MAX);
    let map: Vec<u32> = input.postings.iter().map(|&b| u32::from(b) * 3).collect();
    let layers = vec![(
        1u16,
        vec![
            LayerPostings {
                bytes: &input.postings,
                map: Some(&map),
            },
            LayerPostings {
                bytes: &input.postings,
                map: None,
            },
        ],
    )];
    let _ = index.search_layers(&layers, Bm25Params::default(), 16);
    // A decoded dictionary is read only once it passes the check a pack makes of it.
    if let Ok(decoded) = postcard::from_bytes::<Bm25Index>(&input.index)
        && decoded.check(decoded.len(), usize::MAX).is_ok()
    {
        let _ = decoded.search(&query);
        let found: Vec<(Found, u16)> = query
            .iter()
            .filter_map(|(t, q)| Some((decoded.lists().find_in(t, &|_| None).ok()??, *q)))
            .collect();
        for (f, _) in &found {
            let id = decoded.lists().id(ListKind::Postings, f);
            let _ = decoded.lists().range_of(&id);
            let _ = decoded.lists().verify_of(&id, &input.postings);
        }
        let _ = decoded.search_found(&found, Bm25Params::default(), &read_back, usize::MAX);
    }
});
