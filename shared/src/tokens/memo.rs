//! Pre-token counts remembered across calls, for text that comes back answer after answer.
//!
//! A context answer counts its piece headers and fences exactly (the pieces' own counts come
//! from the index): about 80 lines like `### moby+moby/vendor/…/parse.go:436-568` per 32k
//! answer. Their pre-tokens — path parts, fences, language names — are rarely single tokens, so
//! each costs a byte-pair merge whose every step probes the 200k-entry rank table (a likely
//! cache miss); on a warm answer over an 88M-token index that was a tenth of the answer's time.
//! The same paths come back in later answers, so their counts are kept here, per encoding, up
//! to a bound; a count from here is the one the merge gave, so results never change.

use std::sync::Mutex;

use rustc_hash::FxHashMap;

use super::table::RankTable;

/// Bytes of pre-tokens kept per encoding before the memo starts again: about 8,000 pre-tokens,
/// the headers of a hundred answers. The map and its allocations about triple it; an isolate's
/// memory is bounded (128 MB, and the index's share of it is measured), so it stays small.
const MAX_KEY_BYTES: usize = 64 * 1024;

/// Longer pre-tokens (a run of one character, a long identifier) are counted, not kept.
const MAX_PIECE_BYTES: usize = 64;

/// Counts by pre-token, with the bytes its keys hold.
#[derive(Default)]
pub(super) struct PieceCounts {
    counts: FxHashMap<Box<[u8]>, u32>,
    key_bytes: usize,
}

/// One memo per encoding; a `None` until the first use (a map cannot be built in a `static`).
static MEMOS: [Mutex<Option<PieceCounts>>; 5] = [const { Mutex::new(None) }; 5];

impl PieceCounts {
    /// The count of `piece` (a pre-token of `table`'s encoding), from here or merged and kept.
    fn count(&mut self, table: &RankTable, piece: &[u8]) -> u32 {
        if piece.len() == 1 || piece.len() > MAX_PIECE_BYTES {
            return table.piece_count(piece) as u32;
        }
        if let Some(&n) = self.counts.get(piece) {
            return n;
        }
        let n = table.piece_count(piece) as u32;
        if self.key_bytes + piece.len() > MAX_KEY_BYTES {
            self.counts.clear();
            self.key_bytes = 0;
        }
        self.key_bytes += piece.len();
        self.counts.insert(piece.into(), n);
        n
    }
}

/// [`RankTable::count`] of `text` through the encoding's memo. When another thread holds the
/// memo (or a panic poisoned it) the text is counted without it: the same count either way.
pub(super) fn count(table: &RankTable, text: &str) -> usize {
    let Ok(mut slot) = MEMOS[table.encoding() as usize].try_lock() else {
        return table.count(text);
    };
    let memo = slot.get_or_insert_with(PieceCounts::default);
    let mut n = 0usize;
    super::split::for_each_piece(table.encoding(), text, |piece| {
        n += memo.count(table, piece.as_bytes()) as usize;
    });
    n
}

#[cfg(all(test, feature = "reference"))]
mod tests {
    use super::*;
    use crate::tokens::Encoding;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    fn table() -> &'static RankTable {
        static T: OnceLock<RankTable> = OnceLock::new();
        T.get_or_init(|| {
            let e = Encoding::O200kBase;
            RankTable::load(e, RankTable::export(e).expect("export")).expect("load")
        })
    }

    #[test]
    fn a_full_memo_starts_again_and_still_counts_the_same() {
        let mut memo = PieceCounts::default();
        let t = table();
        // Distinct pre-tokens until the bound is passed more than once.
        for i in 0..(3 * MAX_KEY_BYTES / 8) {
            let piece = format!("x{i:07}");
            let direct = t.piece_count(piece.as_bytes()) as u32;
            assert_eq!(memo.count(t, piece.as_bytes()), direct);
            assert!(memo.key_bytes <= MAX_KEY_BYTES);
        }
        assert!(!memo.counts.is_empty());
    }

    proptest! {
        /// Counting through the memo, again and again, gives the table's count.
        #[test]
        fn remembered_counts_are_the_counts(
            texts in proptest::collection::vec("[ -~\t\n\u{a0}é漢😀]{0,80}", 1..6),
        ) {
            let t = table();
            for _ in 0..2 {
                for text in &texts {
                    prop_assert_eq!(count(t, text), t.count(text));
                }
            }
        }
    }
}
