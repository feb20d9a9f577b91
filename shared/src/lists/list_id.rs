//! Which value of a pack's lists a host reads: the kinds of lists (a base's and, for a version
//! opened from a base and a delta, the delta's) and the id of one value, which hosts key their
//! reads and caches by.

/// The lists of a pack a reader may have to read by range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// BM25 postings, keyed by term.
    Postings,
    /// Symbol references, keyed by name.
    References,
    /// The blocks of the postings' terms ([`super::KeyBlocks`]), by block number.
    PostingsKeys,
    /// The blocks of the references' names ([`super::KeyBlocks`]), by block number.
    ReferencesKeys,
    /// Summary texts, by position ([`crate::index::summaries::StoredSummaries::texts`]).
    SummaryTexts,
    /// A delta pack's postings ([`crate::index::delta`]), keyed by term.
    DeltaPostings,
    /// A delta pack's symbol references, keyed by name.
    DeltaReferences,
    /// The blocks of a delta pack's terms.
    DeltaPostingsKeys,
    /// The blocks of a delta pack's names.
    DeltaReferencesKeys,
}

impl ListKind {
    /// The kind of the blocks that hold these lists' keys, if they can have any.
    pub fn key_blocks(self) -> Option<ListKind> {
        match self {
            ListKind::Postings => Some(ListKind::PostingsKeys),
            ListKind::References => Some(ListKind::ReferencesKeys),
            ListKind::DeltaPostings => Some(ListKind::DeltaPostingsKeys),
            ListKind::DeltaReferences => Some(ListKind::DeltaReferencesKeys),
            ListKind::PostingsKeys
            | ListKind::ReferencesKeys
            | ListKind::SummaryTexts
            | ListKind::DeltaPostingsKeys
            | ListKind::DeltaReferencesKeys => None,
        }
    }

    /// The same lists in a version's delta pack (itself for a delta's, and for summary texts,
    /// which a merged version addresses by its own positions).
    pub fn in_delta(self) -> ListKind {
        match self {
            ListKind::Postings => ListKind::DeltaPostings,
            ListKind::References => ListKind::DeltaReferences,
            ListKind::PostingsKeys => ListKind::DeltaPostingsKeys,
            ListKind::ReferencesKeys => ListKind::DeltaReferencesKeys,
            other => other,
        }
    }

    /// Whether these are a delta pack's lists.
    pub fn is_delta(self) -> bool {
        matches!(
            self,
            ListKind::DeltaPostings
                | ListKind::DeltaReferences
                | ListKind::DeltaPostingsKeys
                | ListKind::DeltaReferencesKeys
        )
    }
}

/// One key's value among a pack's lists (or one block of keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListId {
    /// Which lists.
    pub kind: ListKind,
    /// The key's id in them (a block's number, for blocks).
    pub key: u32,
    /// Where the value lies and its check value, when the pack does not hold the key's own
    /// (its keys are in blocks: this came from the key's block, [`super::KeyedLists::id`]).
    pub at: Option<ValueAt>,
}

/// Names the value in errors: "the postings of term #5", "the users of name #5".
impl std::fmt::Display for ListId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            ListKind::Postings => write!(f, "the postings of term #{}", self.key),
            ListKind::References => write!(f, "the users of name #{}", self.key),
            ListKind::PostingsKeys => write!(f, "the block of terms #{}", self.key),
            ListKind::ReferencesKeys => write!(f, "the block of names #{}", self.key),
            ListKind::SummaryTexts => write!(f, "the text of summary #{}", self.key),
            ListKind::DeltaPostings => write!(f, "the delta's postings of term #{}", self.key),
            ListKind::DeltaReferences => write!(f, "the delta's users of name #{}", self.key),
            ListKind::DeltaPostingsKeys => write!(f, "the delta's block of terms #{}", self.key),
            ListKind::DeltaReferencesKeys => {
                write!(f, "the delta's block of names #{}", self.key)
            }
        }
    }
}

/// Where a key's value lies in the byte string of every value, and its check value (0 for values
/// in the pack).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueAt {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
    /// The first four bytes of the sha256 of the value ([`super::ListStore::Segments`]).
    pub sum: u32,
}
