//! Answering a query from one opened index: retrieval, ranking, selection and composition.
//!
//! Both hosts run this: the CLI over the embedded store and the edge API over whatever backend
//! holds the pack. Chunk texts come through [`ChunkSource`], because the pack stores only where
//! each text lives; the caller decides how to read it (a file range, an object already in
//! memory). Nothing here counts time or touches storage.

pub mod ask;
mod candidates;
mod estimate;
mod excerpts;
pub mod features;
mod pieces;
mod plan;
mod report;
mod retrieve;
mod signposts;
pub mod summaries;

pub use plan::{Plan, plan};
pub use report::BudgetBar;

use std::borrow::Cow;

use serde::Serialize;

use crate::catalog::{BudgetError, ResolvedBudget};
use crate::compose::{ComposeError, Piece};
use crate::compress::Compression;
use crate::error_code::ErrorCode;
use crate::index::IndexPack;
use crate::intent::QueryAnalysis;
use crate::lexical::Bm25Params;
use crate::lists::ListId;
use crate::profile::{Profile, ProfileReport};
use crate::rank::Weights;

/// Below this budget, pieces are signatures only: a few declarations tell a model more than
/// one body.
pub const SIGNATURES_BELOW: u32 = 1000;

/// Under `medium`, a piece scoring at least this share of the best chosen piece stays at
/// `light`: the pieces that carry the answer keep their bodies, the supporting ones keep their
/// signatures.
pub const MEDIUM_KEEP_SHARE: f32 = 0.5;

/// Under `medium` and `aggressive`, how many candidates too large to fit whole are compressed
/// to see whether they fit (each costs a text read and a count).
pub(crate) const SHRINK_TRIES: usize = 64;

/// Room under which no alternative is tried (beyond its header): a signature is rarely smaller.
pub(crate) const MIN_ALTERNATIVE_TOKENS: u32 = 12;

/// Reads what the pack being answered from does not hold: chunk texts, and the postings of a
/// large index's terms. `Ok(None)` is not a failure: a source that holds only what it fetched
/// so far says it lacks this one, and the phase asking ends with a [`Step::Needs`] naming every
/// read it lacked.
pub trait ChunkSource {
    /// The chunk's exact text, or `None` when this source holds only the texts fetched so far
    /// and not this one.
    fn text(&self, pack: &IndexPack, i: usize) -> Result<Option<String>, AssembleError>;

    /// The value of list key `id` (a term's postings, a name's users, a block of a large
    /// dictionary's keys) that the pack keeps in segments, checked against the pack
    /// ([`crate::lists::KeyedLists::verify`]), or `None` when this source holds only what it
    /// fetched so far and not this.
    fn list(&self, pack: &IndexPack, id: ListId) -> Result<Option<Cow<'_, [u8]>>, AssembleError>;
}

/// What a phase must have read before it can go on: pack indices of chunk texts, and lists
/// (postings, references, blocks of their keys, summary texts). A phase names all it lacks at
/// once, so a host reads them in one round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Chunks whose texts the source has not fetched (pack indices).
    pub texts: Vec<u32>,
    /// Lists the source has not fetched.
    pub lists: Vec<ListId>,
}

impl Needs {
    /// Nothing to read.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty() && self.lists.is_empty()
    }

    /// Adds what `other` needs, so two lookups that both lack reads ask for them together.
    pub(crate) fn add(&mut self, other: Needs) {
        self.texts.extend(other.texts);
        self.lists.extend(other.lists);
    }
}

/// Worded as hosts have reported a read loop that gave up.
impl std::fmt::Display for Needs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.texts.len(), self.lists.len()) {
            (t, 0) => write!(f, "the texts of {t} chunks are not fetched yet"),
            (0, l) => write!(f, "{l} lists of the index are not fetched yet"),
            (t, l) => write!(
                f,
                "the texts of {t} chunks and {l} lists of the index are not fetched yet"
            ),
        }
    }
}

/// A phase's outcome ([`plan`], [`Plan::compose`]): done, or the reads it needs first. A host
/// that reads from remote storage fetches them and runs the phase again; a source that holds
/// every read never gets a [`Step::Needs`].
#[derive(Debug)]
#[must_use]
pub enum Step<T> {
    /// The phase is done.
    Ready(T),
    /// The source lacked these reads; nothing else went wrong.
    Needs(Needs),
}

impl<T> Step<T> {
    /// The outcome, or [`AssembleError::Unread`] when reads are still needed: for a source that
    /// should have held them, or a host that stopped reading.
    pub fn ready(self) -> Result<T, AssembleError> {
        match self {
            Step::Ready(t) => Ok(t),
            Step::Needs(n) => Err(AssembleError::Unread(n)),
        }
    }
}

/// Why a phase stopped inside the core: it needs reads first, or it failed. `?` carries both
/// out of every step; the public phases turn it into a [`Step`] or an [`AssembleError`].
#[derive(Debug)]
pub(crate) enum Halt {
    /// Reads the source lacked.
    Needs(Needs),
    /// A failure the host reports.
    Failed(AssembleError),
}

impl Halt {
    /// Chunk texts the source lacked.
    pub(crate) fn texts(texts: Vec<u32>) -> Self {
        Halt::Needs(Needs {
            texts,
            lists: Vec::new(),
        })
    }

    /// Lists the source lacked.
    pub(crate) fn lists(lists: Vec<ListId>) -> Self {
        Halt::Needs(Needs {
            texts: Vec::new(),
            lists,
        })
    }

    /// A phase's result at the public boundary: needed reads are a step, not an error.
    pub(crate) fn step<T>(r: Result<T, Halt>) -> Result<Step<T>, AssembleError> {
        match r {
            Ok(t) => Ok(Step::Ready(t)),
            Err(Halt::Needs(n)) => Ok(Step::Needs(n)),
            Err(Halt::Failed(e)) => Err(e),
        }
    }
}

impl From<AssembleError> for Halt {
    fn from(e: AssembleError) -> Self {
        Halt::Failed(e)
    }
}

impl From<ComposeError> for Halt {
    fn from(e: ComposeError) -> Self {
        Halt::Failed(e.into())
    }
}

/// Chunk `i`'s text through `source`, or a halt naming it when the source lacks it.
pub(crate) fn text_of(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    i: usize,
) -> Result<String, Halt> {
    source
        .text(pack, i)?
        .ok_or_else(|| Halt::texts(vec![i as u32]))
}

/// List `id` through `source`, or a halt naming it when the source lacks it.
pub(crate) fn list_of<'s>(
    pack: &IndexPack,
    source: &'s dyn ChunkSource,
    id: ListId,
) -> Result<Cow<'s, [u8]>, Halt> {
    source.list(pack, id)?.ok_or_else(|| Halt::lists(vec![id]))
}

/// Why a query could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// The query has no words.
    #[error("the query is empty")]
    EmptyQuery,
    /// A chunk's text could not be read.
    #[error("chunk text unavailable: {0}")]
    Source(String),
    /// Reads a phase needed that its source never held ([`Step::ready`]): a source that holds
    /// every text lost one, or a host's read loop gave up after its rounds.
    #[error("{0}")]
    Unread(Needs),
    /// The prompt could not be held to the budget.
    #[error(transparent)]
    Compose(#[from] ComposeError),
    /// The `repair` profile was asked for without the error output it answers.
    #[error("the repair profile needs the error output (error_output / --error-file)")]
    ErrorOutputMissing,
    /// The budget cannot hold any code ([`BudgetError::TooSmall`]).
    #[error(transparent)]
    Budget(#[from] BudgetError),
}

impl AssembleError {
    /// The machine-readable code every host reports for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            AssembleError::EmptyQuery => ErrorCode::QueryEmpty,
            AssembleError::Compose(c) => c.code(),
            AssembleError::ErrorOutputMissing => ErrorCode::ErrorOutputMissing,
            AssembleError::Budget(b) => b.code(),
            AssembleError::Source(_) => ErrorCode::IndexCorrupt,
            // A host's read loop gave up on texts or postings it could not keep.
            AssembleError::Unread(_) => ErrorCode::StorageUnavailable,
        }
    }
}

/// How to search and rank: the tuned defaults unless an experiment overrides them.
#[derive(Clone, Debug, Default)]
pub struct QueryOptions {
    /// Signal weights.
    pub weights: Weights,
    /// BM25 parameters used at query time, whatever the pack was built with.
    pub bm25: Bm25Params,
    /// Paths the client has open or recently edited: they count as mentioned.
    pub hot_paths: Vec<String>,
    /// Chunks already delivered (a continuation): never chosen again.
    pub exclude: Vec<u32>,
    /// Chunks the caller already received only as an outline (a signature or a signpost, on an
    /// earlier continuation page or in its session): they may come whole, never as an outline
    /// again (under [`SIGNATURES_BELOW`], where every piece is a signature, not at all).
    pub signatures_sent: Vec<u32>,
    /// How much each piece's text may be reduced.
    pub compression: Compression,
    /// How the budget is spent (`expand` unless asked).
    pub profile: Profile,
    /// The error output a `repair` request answers (ignored by other profiles).
    pub error_output: Option<String>,
    /// Leave summaries out (search pages carry pieces only).
    pub without_summaries: bool,
    /// Dense hits (chunk, 0-1 from [`crate::dense::scaled_hits`]) when the caller embedded the
    /// request; empty otherwise.
    pub dense: Vec<(u32, f32)>,
    /// Re-ranking stages the host plugs in between ranking and selection
    /// ([`crate::rank::Rerank`]; none by default).
    pub rerankers: crate::rank::Rerankers,
}

/// The assembled context and how it was chosen.
#[derive(Clone, Debug, Serialize)]
pub struct Assembled {
    /// The pieces in the prompt, in prompt order.
    pub pieces: Vec<Piece>,
    /// The prompt's count with the target tokenizer.
    pub tokens_total: u32,
    /// The prompt.
    pub prompt: String,
    /// What the caller should know.
    pub warnings: Vec<String>,
    /// What the request was understood to be.
    pub intent: QueryAnalysis,
    /// Tokens in the whole index, in the target's tokens.
    pub repo_tokens: u64,
    /// Tokens of the prompt without any code (framing and the query).
    pub frame_tokens: u32,
    /// Tokens of the task alone (the query and any error output), part of `frame_tokens`.
    pub task_tokens: u32,
    /// Tokens given to code pieces.
    pub code_tokens: u32,
    /// How pieces were chosen, then the size strategy that chose the summaries.
    pub strategy: String,
    /// Summaries in the prompt (never among `pieces`: they quote no lines), in prompt order.
    pub summaries: Vec<crate::compose::SummaryPiece>,
    /// The repository's size relative to the room for context.
    pub size_class: summaries::SizeClass,
    /// Chunks that matched the query.
    pub candidates: usize,
    /// Relevant chunks that did not fit (a continuation can deliver them).
    pub left_out: usize,
    /// Tokens compression took out of the pieces sent (their counts before, less after).
    pub compression_saved_tokens: u32,
    /// The profile and what it did.
    pub profile: ProfileReport,
    /// Pack indices of the chunks in the prompt (for continuations and audit), whole or not.
    #[serde(skip)]
    pub chosen: Vec<u32>,
    /// Those of `chosen` given only as an outline (a signature, a signpost): a continuation
    /// page may send them whole, not as an outline again.
    #[serde(skip)]
    pub partial: Vec<u32>,
    /// Pack indices of excluded chunks (the caller already has them) that rank at least as high
    /// as the weakest chosen piece, best first: the caller should reuse them, so they are named
    /// instead of sent again.
    #[serde(skip)]
    pub already_delivered: Vec<u32>,
}

/// Answers `query` from `pack` within `resolved.budget`, counted by `resolved.tokenizer`: a
/// [`plan`] composed at once, for sources that hold every text (local files, memory): a read
/// the source lacks is a failure ([`AssembleError::Unread`]), not a step.
///
/// The guarantee: `tokens_total` is the exact count of `prompt` (or the documented estimate
/// for models without a public tokenizer) and never exceeds the budget.
pub fn assemble(
    pack: &IndexPack,
    source: &dyn ChunkSource,
    query: &str,
    resolved: &ResolvedBudget,
    options: &QueryOptions,
) -> Result<Assembled, AssembleError> {
    plan(pack, source, query, resolved, options)?
        .ready()?
        .compose(pack, source)?
        .ready()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lists::ListKind;

    #[test]
    fn a_step_still_needing_reads_is_a_storage_failure_naming_them() {
        let texts = Needs {
            texts: vec![1, 2],
            lists: Vec::new(),
        };
        let e = Step::<()>::Needs(texts).ready().unwrap_err();
        assert_eq!(e.code(), ErrorCode::StorageUnavailable);
        assert_eq!(e.to_string(), "the texts of 2 chunks are not fetched yet");
        let lists = Needs {
            texts: Vec::new(),
            lists: vec![ListId {
                kind: ListKind::Postings,
                key: 3,
                at: None,
            }],
        };
        let e = Step::<()>::Needs(lists).ready().unwrap_err();
        assert_eq!(e.to_string(), "1 lists of the index are not fetched yet");
        assert!(matches!(Step::Ready(7).ready(), Ok(7)));
    }

    #[test]
    fn a_halt_is_a_step_unless_it_failed() {
        let needs = Halt::step::<()>(Err(Halt::texts(vec![4])));
        assert!(matches!(needs, Ok(Step::Needs(ref n)) if n.texts == [4] && n.lists.is_empty()));
        let failed = Halt::step::<()>(Err(AssembleError::EmptyQuery.into()));
        assert!(matches!(failed, Err(AssembleError::EmptyQuery)));
        assert!(matches!(Halt::step(Ok(5)), Ok(Step::Ready(5))));
    }
}
