//! Query time: which summaries fill the room the best pieces left.
//!
//! How much of the repository a budget can hold decides what helps most, so the repository's
//! size relative to the room for context (the budget less the query and its framing) picks a
//! strategy, reported in the response:
//!
//! | class  | repository / room | summaries, in order of preference |
//! |--------|-------------------|-----------------------------------|
//! | small  | ≤ [`SMALL_UP_TO`]× | nearly everything: every file not included whole, the most relevant first |
//! | medium | ≤ [`LARGE_ABOVE`]× | the largest relevant files not included whole, then the directories of the chosen pieces |
//! | large  | above             | task-driven: the rest of the chosen pieces' files, their directories, then other relevant files |
//!
//! A broad request (intent `explain`, repository-wide scope, or the `plan` profile) gets the
//! project summary first;
//! otherwise it comes last, if room is left. Summaries are only ever added after the pieces were
//! chosen, and the composer drops them before any piece when the exact count is over the budget.

use std::cell::OnceCell;

use rustc_hash::FxHashSet as HashSet;

use serde::Serialize;

use crate::catalog::TokenizerSpec;
use crate::compose::{Piece, SummaryPiece};
use crate::index::{ChunkRecord, IndexPack};
use crate::intent::{Intent, QueryAnalysis, Scope};
use crate::summary::{EXTRACTIVE, SummaryKind};

/// A repository at most this many times the room is small.
pub const SMALL_UP_TO: f64 = 2.0;
/// A repository more than this many times the room is large.
pub const LARGE_ABOVE: f64 = 20.0;
/// Most summaries in one prompt.
const MAX_SUMMARIES: usize = 48;

/// The repository's size relative to the room for context.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeClass {
    /// Nearly all of it fits: what does not fit whole is summarized.
    Small,
    /// The largest relevant files are summarized.
    Medium,
    /// Summaries follow the task: the chosen pieces' neighbourhood.
    Large,
}

impl SizeClass {
    /// The class of `repo_tokens` for `room` tokens of context, and the ratio.
    pub fn of(repo_tokens: u64, room: u32) -> (Self, f64) {
        let ratio = if room == 0 {
            f64::INFINITY
        } else {
            repo_tokens as f64 / f64::from(room)
        };
        let class = if ratio <= SMALL_UP_TO {
            SizeClass::Small
        } else if ratio <= LARGE_ABOVE {
            SizeClass::Medium
        } else {
            SizeClass::Large
        };
        (class, ratio)
    }

    /// `small`, `medium` or `large`.
    pub fn name(self) -> &'static str {
        match self {
            SizeClass::Small => "small",
            SizeClass::Medium => "medium",
            SizeClass::Large => "large",
        }
    }

    fn plan(self) -> &'static str {
        match self {
            SizeClass::Small => "nearly everything: files not included whole are summarized",
            SizeClass::Medium => "the largest relevant files not included whole are summarized",
            SizeClass::Large => {
                "task-driven: the chosen pieces' files and directories are summarized"
            }
        }
    }
}

/// Where a chosen summary's text is: the pack holds the project's, the others may be in
/// segments ([`crate::index::summaries::StoredSummaries::texts`]), read once chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextAt {
    /// The project summary's, in the pack.
    Project,
    /// Value `k` of the pack's summary texts.
    Stored(u32),
}

/// The summaries chosen for a prompt and why.
#[derive(Clone, Debug)]
pub struct Filled {
    /// Summaries, most wanted first, each with where its text is (the piece's `text` is empty
    /// until the caller reads it).
    pub summaries: Vec<(SummaryPiece, TextAt)>,
    /// The repository's size class.
    pub class: SizeClass,
    /// Repository tokens per token of room.
    pub ratio: f64,
}

impl Filled {
    /// The size strategy for `strategy`, given how many summaries made it into the prompt.
    pub fn describe(&self, kept: usize) -> String {
        let ratio = if self.ratio.is_finite() {
            format!("{:.1}x", self.ratio)
        } else {
            "more than".to_string()
        };
        format!(
            "size {} (the repository is {ratio} the room; small up to {SMALL_UP_TO}x, medium up to {LARGE_ABOVE}x, large above): {}; {kept} summaries",
            self.class.name(),
            self.class.plan()
        )
    }
}

/// What the query was and what was chosen for it.
pub struct FillInput<'a> {
    /// The pack answered from.
    pub pack: &'a IndexPack,
    /// The chosen pieces, best first.
    pub pieces: &'a [Piece],
    /// Candidate chunks and their scores, best first.
    pub scores: &'a [(u32, f32)],
    /// The request's analysis.
    pub intent: &'a QueryAnalysis,
    /// Tokens in the whole repository, in the target's tokens.
    pub repo_tokens: u64,
    /// Room for context: the budget less the query and its framing.
    pub room: u32,
    /// What the pieces left of the room (a conservative estimate).
    pub left: u32,
    /// The target tokenizer.
    pub tokenizer: &'a TokenizerSpec,
    /// Put the project summary first whatever the intent (the `plan` profile).
    pub project_first: bool,
}

/// Chooses the summaries that fill `input.left`, in the order the size class prefers.
///
/// The work is proportional to what is looked at, not to the repository: the order of wants is
/// walked lazily (the relevant files are ranked only when the walk reaches them, which a full
/// room never does), whether a file went in whole is decided from the few chosen pieces, and a
/// summary is copied only once it fits.
pub fn fill(input: &FillInput<'_>) -> Filled {
    let (class, ratio) = SizeClass::of(input.repo_tokens, input.room);
    let walk = Walk::new(input);
    let broad = input.project_first
        || input.intent.intent == Intent::Explain
        || input.intent.scope == Scope::RepoWide;
    let parts = parts_for(input.pieces.len() >= input.pack.chunks.len(), class);
    let first = broad.then_some(Want::Project);
    let last = (!broad).then_some(Want::Project);
    let order = first
        .into_iter()
        .chain(parts.iter().flat_map(|&part| walk.part(part)))
        .chain(last);
    let summaries = take_fitting(input, &walk, order);
    Filled {
        summaries,
        class,
        ratio,
    }
}

/// What the walk over the order of wants reads, computed once from the pieces or on first use.
struct Walk<'a> {
    /// The pack answered from.
    pack: &'a IndexPack,
    /// Candidate chunks and their scores, best first.
    scores: &'a [(u32, f32)],
    /// The chosen pieces' files, in the pieces' order.
    piece_files: Vec<u32>,
    /// The pieces' files whose every chunk went in whole.
    whole_pieces: HashSet<u32>,
    /// The target tokenizer's base encoding among the pack's counts.
    slot: Option<usize>,
    /// Files with a positive score, best first, and whether each file has one.
    relevant_cell: OnceCell<(Vec<u32>, Vec<bool>)>,
}

impl<'a> Walk<'a> {
    /// Decides from the chosen pieces which files are theirs and which of those went in whole.
    fn new(input: &FillInput<'a>) -> Self {
        let pack = input.pack;
        let file_of = |path: &str| -> Option<u32> {
            pack.files
                .binary_search_by(|f| f.path.as_str().cmp(path))
                .ok()
                .map(|i| i as u32)
        };
        let mut piece_files: Vec<u32> = Vec::new();
        for p in input.pieces {
            if let Some(f) = file_of(&p.path)
                && !piece_files.contains(&f)
            {
                piece_files.push(f);
            }
        }
        // A signature leaves the rest of its chunk out: only whole (or lightly compressed)
        // chunks count as included. Only a file with a piece (or with no chunk at all) can be
        // whole.
        let included: HashSet<&str> = input
            .pieces
            .iter()
            .filter(|p| !p.form.is_outline())
            .map(|p| p.chunk_id.as_str())
            .collect();
        let whole_pieces: HashSet<u32> = piece_files
            .iter()
            .copied()
            .filter(|&f| {
                chunks_of(pack, f)
                    .iter()
                    .all(|c| included.contains(c.id.as_str()))
            })
            .collect();
        let slot = pack.encoding_slot(input.tokenizer.base());
        Self {
            pack,
            scores: input.scores,
            piece_files,
            whole_pieces,
            slot,
            relevant_cell: OnceCell::new(),
        }
    }

    /// Whether file `f` has chunks that did not all go in whole.
    fn not_whole(&self, f: u32) -> bool {
        self.pack.files[f as usize].chunk_count > 0 && !self.whole_pieces.contains(&f)
    }

    /// The tokens of `file` whole, in the pack's encoding (or a guess without one).
    fn file_tokens(&self, file: u32) -> u64 {
        chunks_of(self.pack, file)
            .iter()
            .map(|c| u64::from(self.slot.map_or((c.len() / 3) as u32, |s| c.tokens[s])))
            .sum()
    }

    /// Files with a positive score, best first, and which files have one: ranked on first use.
    fn relevant(&self) -> &(Vec<u32>, Vec<bool>) {
        let pack = self.pack;
        self.relevant_cell.get_or_init(|| {
            let mut best = vec![f32::NEG_INFINITY; pack.files.len()];
            let mut files: Vec<u32> = Vec::new();
            for &(chunk, score) in self.scores {
                if score <= 0.0 {
                    continue;
                }
                let file = pack.chunks[chunk as usize].file;
                let b = &mut best[file as usize];
                if *b == f32::NEG_INFINITY {
                    files.push(file);
                }
                *b = b.max(score);
            }
            files.sort_by(|a, b| {
                best[*b as usize]
                    .total_cmp(&best[*a as usize])
                    .then(a.cmp(b))
            });
            let scored = best.iter().map(|b| *b != f32::NEG_INFINITY).collect();
            (files, scored)
        })
    }

    /// The chosen pieces' directories, deepest first, each once.
    fn dirs(&self) -> Vec<Want<'a>> {
        let pack = self.pack;
        let mut out: Vec<Want> = Vec::new();
        for &f in &self.piece_files {
            let mut path = pack.files[f as usize].path.as_str();
            while let Some((parent, _)) = path.rsplit_once('/') {
                if !out
                    .iter()
                    .any(|w| matches!(w, Want::Dir(d) if *d == parent))
                {
                    out.push(Want::Dir(parent));
                }
                path = parent;
            }
        }
        out
    }

    /// One part of the order, built only when the walk reaches it.
    fn part(&self, part: Part) -> Box<dyn Iterator<Item = Want<'a>> + '_> {
        let pack = self.pack;
        match part {
            Part::Relevant => Box::new(
                self.relevant()
                    .0
                    .iter()
                    .copied()
                    .filter(move |&f| self.not_whole(f))
                    .map(Want::File),
            ),
            Part::Unscored => Box::new(
                (0..pack.files.len() as u32)
                    .filter(move |&f| !self.relevant().1[f as usize] && self.not_whole(f))
                    .map(Want::File),
            ),
            Part::Largest => {
                let mut largest: Vec<(u64, u32)> = self
                    .relevant()
                    .0
                    .iter()
                    .copied()
                    .filter(|&f| self.not_whole(f))
                    .map(|f| (self.file_tokens(f), f))
                    .collect();
                largest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                Box::new(largest.into_iter().map(|(_, f)| Want::File(f)))
            }
            Part::PieceFiles => Box::new(
                self.piece_files
                    .iter()
                    .copied()
                    .filter(move |&f| self.not_whole(f))
                    .map(Want::File),
            ),
            Part::Dirs => Box::new(self.dirs().into_iter()),
        }
    }
}

/// The chunks of `file`, in order.
fn chunks_of(pack: &IndexPack, file: u32) -> &[ChunkRecord] {
    let f = &pack.files[file as usize];
    let first = f.first_chunk as usize;
    &pack.chunks[first..first + f.chunk_count as usize]
}

/// The parts of the order the size class prefers (none when every chunk went in whole).
fn parts_for(everything_whole: bool, class: SizeClass) -> &'static [Part] {
    match (everything_whole, class) {
        (true, _) => &[],
        (false, SizeClass::Small) => &[Part::Relevant, Part::Unscored, Part::Dirs],
        (false, SizeClass::Medium) => &[Part::Largest, Part::Dirs],
        // The pieces' files come first; when the relevant files follow, those are skipped as
        // already seen.
        (false, SizeClass::Large) => &[Part::PieceFiles, Part::Dirs, Part::Relevant],
    }
}

/// A wanted summary found in the pack, with what its piece reports.
struct Found<'a> {
    kind: SummaryKind,
    path: &'a str,
    /// Its text's counts, one per encoding of the pack.
    counts: &'a [u32],
    text: TextAt,
    origin: Option<&'a str>,
    /// The summarized file, for a file summary.
    file: Option<u32>,
}

/// Walks `order`, keeping each summary that fits the room left and is smaller than its file.
fn take_fitting<'a>(
    input: &FillInput<'a>,
    walk: &Walk<'a>,
    order: impl Iterator<Item = Want<'a>>,
) -> Vec<(SummaryPiece, TextAt)> {
    let mut left = input.left;
    let mut seen_files = vec![false; input.pack.files.len()];
    let mut summaries = Vec::new();
    for want in order {
        if summaries.len() == MAX_SUMMARIES || left < 20 {
            break;
        }
        let Some(Found {
            kind,
            path,
            counts,
            text,
            origin,
            file,
        }) = find(input.pack, want, &mut seen_files)
        else {
            continue;
        };
        let (tokens, base) = summary_tokens(input.pack, counts, text, walk.slot, input.tokenizer);
        let cost = tokens + header_cost(path);
        if cost > left {
            continue;
        }
        // A summary no smaller than its file says less than the file would.
        let whole_tokens = file.map(|f| {
            input
                .tokenizer
                .scale(u32::try_from(walk.file_tokens(f)).unwrap_or(u32::MAX))
        });
        if whole_tokens.is_some_and(|t| tokens >= t) {
            continue;
        }
        left -= cost;
        let piece = SummaryPiece {
            kind,
            path: path.to_string(),
            origin: origin.unwrap_or(EXTRACTIVE).to_string(),
            tokens,
            file_tokens: whole_tokens,
            text: String::new(),
            base_tokens: base,
        };
        summaries.push((piece, text));
    }
    summaries
}

/// The pack's summary for `want`, if it has one and (for a file) it was not wanted before.
fn find<'a>(pack: &'a IndexPack, want: Want<'a>, seen_files: &mut [bool]) -> Option<Found<'a>> {
    let sums = &pack.summaries;
    match want {
        Want::Project => sums.project.as_ref().map(|s| Found {
            kind: SummaryKind::Project,
            path: ".",
            counts: &s.tokens,
            text: TextAt::Project,
            origin: None,
            file: None,
        }),
        Want::Dir(d) => sums.dir(d).map(|(k, s)| Found {
            kind: SummaryKind::Directory,
            path: d,
            counts: &s.tokens,
            text: TextAt::Stored(sums.dir_text(k)),
            origin: None,
            file: None,
        }),
        Want::File(f) => {
            if std::mem::replace(&mut seen_files[f as usize], true) {
                return None;
            }
            sums.file(f).map(|(k, s)| Found {
                kind: SummaryKind::File,
                path: pack.files[f as usize].path.as_str(),
                counts: &s.tokens,
                text: TextAt::Stored(sums.file_text(k)),
                origin: Some(s.origin.as_str()),
                file: Some(f),
            })
        }
    }
}

/// The parts of the order of wants, between the project summary's two possible places.
#[derive(Clone, Copy)]
enum Part {
    /// Files with a positive score, best first.
    Relevant,
    /// Files with no score, in path order.
    Unscored,
    /// Relevant files, largest first.
    Largest,
    /// The chosen pieces' files.
    PieceFiles,
    /// The chosen pieces' directories, deepest first.
    Dirs,
}

enum Want<'a> {
    Project,
    Dir(&'a str),
    File(u32),
}

/// What the project summary would cost in the prompt (its text and header), when there is one:
/// the `plan` profile keeps this much of the room free while choosing pieces.
pub fn project_cost(pack: &IndexPack, tokenizer: &TokenizerSpec) -> Option<u32> {
    let summary = pack.summaries.project.as_ref()?;
    let slot = pack.encoding_slot(tokenizer.base());
    Some(
        summary_tokens(pack, &summary.tokens, TextAt::Project, slot, tokenizer).0
            + header_cost("."),
    )
}

/// A summary's tokens for `tokenizer`, and its count in the index's encoding when it has one.
/// Without that count, the project's text (in the pack) is counted; another text is not at
/// hand, so its first count is taken with a margin — an estimate the composer's exact count
/// corrects (it drops summaries before pieces when over).
fn summary_tokens(
    pack: &IndexPack,
    counts: &[u32],
    text: TextAt,
    slot: Option<usize>,
    tokenizer: &TokenizerSpec,
) -> (u32, Option<u32>) {
    let base = slot.and_then(|s| counts.get(s).copied());
    let tokens = match (base, text, &pack.summaries.project) {
        (Some(b), _, _) => tokenizer.scale(b),
        (None, TextAt::Project, Some(p)) => tokenizer.count(&p.text),
        (None, _, _) => {
            let first = counts.first().copied().unwrap_or(0);
            tokenizer.scale(first.saturating_add(first / 4))
        }
    };
    (tokens, base)
}

/// A conservative guess of a summary's header and fence (about three characters a token); the
/// composer's exact count corrects any error.
fn header_cost(path: &str) -> u32 {
    ((path.len() + 90) / 3) as u32
}
