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

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use serde::Serialize;

use crate::catalog::TokenizerSpec;
use crate::compose::{Piece, PieceForm, SummaryPiece};
use crate::index::IndexPack;
use crate::intent::{Intent, QueryAnalysis, Scope};

use super::{Summary, SummaryKind};

/// A repository at most this many times the room is small.
pub const SMALL_UP_TO: f64 = 2.0;
/// A repository more than this many times the room is large.
pub const LARGE_ABOVE: f64 = 20.0;
/// Most summaries in one prompt.
const MAX_SUMMARIES: usize = 48;

/// The repository's size relative to the room for context.
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

/// The summaries chosen for a prompt and why.
#[derive(Clone, Debug)]
pub struct Filled {
    /// Summaries, most wanted first.
    pub summaries: Vec<SummaryPiece>,
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
pub fn fill(input: &FillInput<'_>) -> Filled {
    let (class, ratio) = SizeClass::of(input.repo_tokens, input.room);
    let pack = input.pack;
    let sums = &pack.summaries;
    // A signature leaves the rest of its chunk out: only whole (or lightly compressed) chunks
    // count as included.
    let included: HashSet<&str> = input
        .pieces
        .iter()
        .filter(|p| p.form != PieceForm::Signature)
        .map(|p| p.chunk_id.as_str())
        .collect();
    let file_of = |path: &str| -> Option<u32> {
        pack.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| i as u32)
    };
    let whole = |file: u32| -> bool {
        let f = &pack.files[file as usize];
        let first = f.first_chunk as usize;
        pack.chunks[first..first + f.chunk_count as usize]
            .iter()
            .all(|c| included.contains(c.id.as_str()))
    };
    let mut piece_files: Vec<u32> = Vec::new();
    for p in input.pieces {
        if let Some(f) = file_of(&p.path)
            && !piece_files.contains(&f)
        {
            piece_files.push(f);
        }
    }
    let mut relevance: HashMap<u32, f32> = HashMap::default();
    let mut relevant: Vec<u32> = Vec::new();
    for &(chunk, score) in input.scores {
        let file = pack.chunks[chunk as usize].file;
        if score <= 0.0 {
            continue;
        }
        let e = relevance.entry(file).or_insert_with(|| {
            relevant.push(file);
            score
        });
        *e = e.max(score);
    }
    relevant.sort_by(|a, b| relevance[b].total_cmp(&relevance[a]).then(a.cmp(b)));
    let file_tokens = |file: u32| -> u64 {
        let f = &pack.files[file as usize];
        let first = f.first_chunk as usize;
        let slot = pack.encoding_slot(input.tokenizer.base());
        pack.chunks[first..first + f.chunk_count as usize]
            .iter()
            .map(|c| u64::from(slot.map_or((c.len() / 3) as u32, |s| c.tokens[s])))
            .sum()
    };
    let everything_whole = input.pieces.len() >= pack.chunks.len();

    let mut order: Vec<Want> = Vec::new();
    let broad = input.project_first
        || input.intent.intent == Intent::Explain
        || input.intent.scope == Scope::RepoWide;
    if broad {
        order.push(Want::Project);
    }
    if !everything_whole {
        let not_whole = |f: &u32| !whole(*f);
        let dirs = || -> Vec<Want> {
            let mut out: Vec<Want> = Vec::new();
            for &f in &piece_files {
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
        };
        match class {
            SizeClass::Small => {
                order.extend(
                    relevant
                        .iter()
                        .filter(|f| not_whole(f))
                        .map(|&f| Want::File(f)),
                );
                order.extend(
                    (0..pack.files.len() as u32)
                        .filter(|f| !relevance.contains_key(f) && not_whole(f))
                        .map(Want::File),
                );
                order.extend(dirs());
            }
            SizeClass::Medium => {
                let mut largest: Vec<(u64, u32)> = relevant
                    .iter()
                    .filter(|f| not_whole(f))
                    .map(|&f| (file_tokens(f), f))
                    .collect();
                largest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                order.extend(largest.into_iter().map(|(_, f)| Want::File(f)));
                order.extend(dirs());
            }
            SizeClass::Large => {
                order.extend(
                    piece_files
                        .iter()
                        .filter(|f| not_whole(f))
                        .map(|&f| Want::File(f)),
                );
                order.extend(dirs());
                order.extend(
                    relevant
                        .iter()
                        .filter(|f| !piece_files.contains(f) && not_whole(f))
                        .map(|&f| Want::File(f)),
                );
            }
        }
    }
    if !broad {
        order.push(Want::Project);
    }

    let slot = pack.encoding_slot(input.tokenizer.base());
    let mut left = input.left;
    let mut seen_files: HashSet<u32> = HashSet::default();
    let mut summaries = Vec::new();
    for want in order {
        if summaries.len() == MAX_SUMMARIES || left < 20 {
            break;
        }
        let (kind, path, summary, origin, whole_tokens) = match want {
            Want::Project => match &sums.project {
                Some(s) => (SummaryKind::Project, ".".to_string(), s, None, None),
                None => continue,
            },
            Want::Dir(d) => match sums.dir(d) {
                Some(s) => (
                    SummaryKind::Directory,
                    d.to_string(),
                    &s.summary,
                    None,
                    None,
                ),
                None => continue,
            },
            Want::File(f) => {
                if !seen_files.insert(f) {
                    continue;
                }
                match sums.file(f) {
                    Some(s) => (
                        SummaryKind::File,
                        pack.files[f as usize].path.clone(),
                        &s.summary,
                        Some(s.origin.clone()),
                        Some(
                            input
                                .tokenizer
                                .scale(u32::try_from(file_tokens(f)).unwrap_or(u32::MAX)),
                        ),
                    ),
                    None => continue,
                }
            }
        };
        let piece = summary_piece(
            kind,
            path,
            summary,
            origin,
            whole_tokens,
            slot,
            input.tokenizer,
        );
        // A summary no smaller than its file says less than the file would.
        if piece.file_tokens.is_some_and(|t| piece.tokens >= t) {
            continue;
        }
        let cost = piece.tokens + header_cost(&piece);
        if cost > left {
            continue;
        }
        left -= cost;
        summaries.push(piece);
    }
    Filled {
        summaries,
        class,
        ratio,
    }
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
    let piece = summary_piece(
        SummaryKind::Project,
        ".".to_string(),
        summary,
        None,
        None,
        slot,
        tokenizer,
    );
    Some(piece.tokens + header_cost(&piece))
}

fn summary_piece(
    kind: SummaryKind,
    path: String,
    summary: &Summary,
    origin: Option<String>,
    file_tokens: Option<u32>,
    slot: Option<usize>,
    tokenizer: &TokenizerSpec,
) -> SummaryPiece {
    let base = slot.and_then(|s| summary.tokens.get(s).copied());
    let tokens = match base {
        Some(b) => tokenizer.scale(b),
        None => tokenizer.count(&summary.text),
    };
    SummaryPiece {
        kind,
        path,
        origin: origin.unwrap_or_else(|| super::EXTRACTIVE.to_string()),
        tokens,
        file_tokens,
        text: summary.text.clone(),
        base_tokens: base,
    }
}

/// A conservative guess of a summary's header and fence (about three characters a token); the
/// composer's exact count corrects any error.
fn header_cost(p: &SummaryPiece) -> u32 {
    ((p.path.len() + 90) / 3) as u32
}
