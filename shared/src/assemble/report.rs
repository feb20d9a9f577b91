//! What an answer reports beside its prompt: the chunks it holds and those the caller already
//! has, where its tokens went, the warnings, and what the profile did.

use rustc_hash::{FxHashMap as HashMap, FxHashSet};

use crate::compose::{Composition, Piece, SummaryPiece};
use crate::index::IndexPack;
use crate::profile::{Profile, ProfileReport};

use super::Assembled;
use super::plan::Plan;
use super::summaries::SizeClass;

/// The chunks a prompt holds (of them, those only outlined) and the excluded chunks it names.
struct Delivery {
    chosen: Vec<u32>,
    partial: Vec<u32>,
    already_delivered: Vec<u32>,
}

/// Most excluded chunks named back as already delivered.
const MAX_ALREADY_DELIVERED: usize = 32;

impl Plan {
    /// The answer: the composed prompt with what it says about how it was chosen.
    /// `in_prompt` holds the pack indices of every piece made for it.
    pub(super) fn assembled(
        &self,
        pack: &IndexPack,
        composition: Composition,
        in_prompt: &FxHashSet<u32>,
        strategy: String,
        left_out: usize,
        size_class: SizeClass,
    ) -> Assembled {
        let mut warnings = self.warnings.clone();
        let Delivery {
            chosen,
            partial,
            already_delivered,
        } = self.delivered(pack, &composition.pieces, in_prompt);
        let summary_tokens: u32 = composition.summaries.iter().map(|s| s.tokens).sum();
        let code_tokens = composition
            .tokens
            .saturating_sub(self.frame_tokens)
            .saturating_sub(summary_tokens);
        let compression_saved_tokens = composition
            .pieces
            .iter()
            .filter_map(|p| p.original_tokens.map(|o| o.saturating_sub(p.tokens)))
            .sum();
        if self.profile == Profile::Repair && self.framed.is_empty() {
            warnings.push(
                "no stack frame of the error output names a line in the repository; pieces were chosen by its words"
                    .into(),
            );
        }
        let profile = self.profile_report(&composition.summaries);
        Assembled {
            tokens_total: composition.tokens,
            prompt: composition.prompt,
            pieces: composition.pieces,
            warnings,
            intent: self.intent.clone(),
            repo_tokens: self.repo_tokens,
            frame_tokens: self.frame_tokens,
            task_tokens: self.task_tokens,
            code_tokens,
            strategy,
            summaries: composition.summaries,
            size_class,
            candidates: self.candidates_count,
            left_out,
            compression_saved_tokens,
            profile,
            chosen,
            partial,
            already_delivered,
        }
    }

    /// The pack indices of the pieces in the prompt, in prompt order (and of those only
    /// outlined), and the excluded chunks that rank at least as high as the weakest of them: the
    /// caller should reuse those, so they are named instead of sent again.
    fn delivered(
        &self,
        pack: &IndexPack,
        pieces: &[Piece],
        in_prompt: &FxHashSet<u32>,
    ) -> Delivery {
        // The pieces' pack indices, by chunk id (only the pieces made here: hashing every chunk id
        // of a large index cost more than the rest of this mapping).
        let key_of: HashMap<&str, u32> = in_prompt
            .iter()
            .map(|&i| (pack.chunks[i as usize].id.as_str(), i))
            .collect();
        let key = |p: &Piece| key_of.get(p.chunk_id.as_str()).copied();
        let chosen: Vec<u32> = pieces.iter().filter_map(key).collect();
        let partial = pieces
            .iter()
            .filter(|p| p.form.is_outline())
            .filter_map(key)
            .collect();
        let floor = chosen
            .iter()
            .filter_map(|i: &u32| self.score_of(*i))
            .fold(f32::INFINITY, f32::min);
        let already_delivered = self
            .excluded_ranked
            .iter()
            .filter(|(_, score)| chosen.is_empty() || *score >= floor)
            .take(MAX_ALREADY_DELIVERED)
            .map(|(chunk, _)| *chunk)
            .collect();
        Delivery {
            chosen,
            partial,
            already_delivered,
        }
    }

    /// What the profile did, for the caller: its budget and piece limit, the project summary
    /// `plan` leads with, and what `repair` made of the error output.
    fn profile_report(&self, summaries: &[SummaryPiece]) -> ProfileReport {
        let profile = self.profile;
        ProfileReport {
            name: profile,
            budget: self.budget,
            max_pieces: self.max_pieces,
            project_summary: summaries
                .iter()
                .find(|s| s.kind == crate::summary::SummaryKind::Project)
                .map(|s| s.text.clone()),
            frame_pieces: (profile == Profile::Repair).then_some(self.framed.len()),
            error_frames: match profile {
                Profile::Repair => self.intent.entities.frames.clone(),
                _ => Vec::new(),
            },
            error_tokens: self.error_tokens,
            error_truncated: self.error_truncated,
        }
    }
}

// Where an answer's budget went, as one bar a person reads left to right: the task, the
// headings and provenance headers, the code, the summaries, the conversation, and the room
// left. The parts add up to the prompt's exact count, so the bar never disagrees with
// `tokens_total`.

/// An answer's budget in parts that sum to what it used, and the room left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BudgetBar {
    /// The task: the query, and the error output a `repair` answers.
    pub query: u32,
    /// Everything else that frames the code: headings, separators, each piece's provenance
    /// header and fence.
    pub headers: u32,
    /// The code pieces' own tokens.
    pub code: u32,
    /// The summaries (project, directories, files).
    pub summaries: u32,
    /// The compacted conversation, when the request carried one.
    pub history: u32,
    /// Budget left unused.
    pub free: u32,
    /// The budget the answer was held to (conversation included).
    pub budget: u32,
}

impl BudgetBar {
    /// The bar of `done`, held to `budget` with `history` tokens of conversation beside it.
    /// The pieces' own counts are measured alone, and a joined prompt can count a token or two
    /// less than its parts; the code part is capped so that the parts always sum to the total.
    pub fn of(done: &Assembled, budget: u32, history: u32) -> Self {
        let total = done.tokens_total;
        let summaries: u32 = done.summaries.iter().map(|s| s.tokens).sum();
        let summaries = summaries.min(total);
        let query = done.task_tokens.min(total - summaries);
        let pieces: u32 = done.pieces.iter().map(|p| p.tokens).sum();
        let code = pieces.min(total - summaries - query);
        let headers = total - summaries - query - code;
        let used = total.saturating_add(history);
        Self {
            query,
            headers,
            code,
            summaries,
            history,
            free: budget.saturating_sub(used),
            budget,
        }
    }

    /// The tokens the parts account for (all but `free`).
    pub fn used(&self) -> u32 {
        self.query + self.headers + self.code + self.summaries + self.history
    }
}
