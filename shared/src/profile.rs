//! Assembly profiles for clients that work in several passes.
//!
//! - `expand` (the default) spends the whole budget on the best pieces: what every request got
//!   before profiles existed.
//! - `plan` is a small first look: the budget is capped at [`PLAN_BUDGET`] tokens, at most
//!   [`PLAN_PIECES`] pieces are taken, and compression is at least `medium` (the best piece
//!   stays at `light`, the others keep their signatures). The project summary is the first
//!   summary it asks for, reported in [`ProfileReport::project_summary`].
//! - `repair` answers an error: the request carries the error output, whose stack frames
//!   (`path:line`, Python's `File "x.py", line N`) and error strings are read with the request's
//!   entity extraction. The chunks that contain the named lines come first (at most
//!   [`REPAIR_FRAME_PIECES`], in the order the output names them), then at most
//!   [`REPAIR_CONTEXT_PIECES`] of the best other pieces; the error text itself goes into the task,
//!   cut to at most half the budget (its head and tail kept). The budget promise is unchanged:
//!   the composer counts the task with the error inside it.

use serde::Serialize;

use crate::catalog::TokenizerSpec;
use crate::index::IndexPack;
use crate::intent::Frame;

/// The largest budget of a `plan` request.
pub const PLAN_BUDGET: u32 = 2_000;
/// The most pieces a `plan` request takes.
pub const PLAN_PIECES: usize = 5;
/// The most chunks named by stack frames that a `repair` request takes.
pub const REPAIR_FRAME_PIECES: usize = 8;
/// The most other pieces a `repair` request takes after the framed ones.
pub const REPAIR_CONTEXT_PIECES: usize = 5;

/// How a request spends its budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// A small overview: few pieces, compressed, a capped budget.
    Plan,
    /// The full budget on the best pieces.
    #[default]
    Expand,
    /// The error output and the code it points at.
    Repair,
}

impl Profile {
    /// The names of all profiles.
    pub const NAMES: &'static str = "plan, expand, repair";

    /// Parses a profile name; `Err` carries the names that are available.
    pub fn from_name(name: &str) -> Result<Self, &'static str> {
        match name {
            "plan" => Ok(Self::Plan),
            "expand" => Ok(Self::Expand),
            "repair" => Ok(Self::Repair),
            _ => Err(Self::NAMES),
        }
    }

    /// The profile's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Expand => "expand",
            Self::Repair => "repair",
        }
    }

    /// The budget the prompt is held to, given the request's.
    pub fn budget(self, requested: u32) -> u32 {
        match self {
            Self::Plan => requested.min(PLAN_BUDGET),
            Self::Expand | Self::Repair => requested,
        }
    }
}

/// What a profile did, reported with the answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProfileReport {
    /// The profile applied.
    pub name: Profile,
    /// The budget the prompt was held to (the request's, or `plan`'s cap).
    pub budget: u32,
    /// The most pieces the profile takes, when it limits them.
    pub max_pieces: Option<usize>,
    /// The project summary in the prompt, when there is one (the `plan` profile asks for it
    /// first; others when the intent is broad or room is left).
    pub project_summary: Option<String>,
    /// `repair`: the stack frames read from the error output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub error_frames: Vec<Frame>,
    /// `repair`: chunks containing a framed line that were taken first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_pieces: Option<usize>,
    /// `repair`: tokens of the error output as it went into the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_tokens: Option<u32>,
    /// `repair`: whether the error output was cut to fit.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error_truncated: bool,
}

/// Whether a frame's path (as an error printed it: absolute, `./`-relative, Windows separators)
/// names the repository file `path`.
fn names_file(frame: &str, path: &str) -> bool {
    let f = frame.replace('\\', "/");
    let f = f.trim_start_matches("./");
    f == path || f.ends_with(&format!("/{path}")) || path.ends_with(&format!("/{f}"))
}

/// Pack indices of the chunks containing the lines `frames` name, in frame order, without
/// repeats, at most [`REPAIR_FRAME_PIECES`]. Of overlapping chunks (line windows) the smallest
/// is taken.
pub fn frame_chunks(pack: &IndexPack, frames: &[Frame]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for frame in frames {
        let Some(line) = frame.line else { continue };
        let best = pack
            .chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.start_line <= line
                    && line <= c.end_line
                    && pack
                        .files
                        .get(c.file as usize)
                        .is_some_and(|f| names_file(&frame.path, &f.path))
            })
            .min_by_key(|(_, c)| c.end_line - c.start_line)
            .map(|(i, _)| i as u32);
        if let Some(i) = best
            && !out.contains(&i)
        {
            out.push(i);
            if out.len() == REPAIR_FRAME_PIECES {
                break;
            }
        }
    }
    out
}

/// The task of a `repair` request: the query, then the error output in a fence, the output cut
/// (its first and last lines kept, a marker between) until it takes at most `max_tokens`.
/// Returns the task, the error's tokens as sent and whether it was cut.
pub fn repair_task(
    query: &str,
    error: &str,
    max_tokens: u32,
    spec: &TokenizerSpec,
) -> (String, u32, bool) {
    let error = error.trim_end();
    let lines: Vec<&str> = error.lines().collect();
    let mut shown = error.to_string();
    let mut tokens = spec.count(&shown);
    let mut truncated = false;
    let mut keep = lines.len() / 2;
    while tokens > max_tokens {
        truncated = true;
        if keep == 0 {
            // A few huge lines: keep a prefix that fits, cut at a character boundary.
            let mut end = shown.len().min(max_tokens as usize * 2);
            loop {
                while end > 0 && !shown.is_char_boundary(end) {
                    end -= 1;
                }
                shown.truncate(end);
                tokens = spec.count(&shown);
                if tokens <= max_tokens || end == 0 {
                    break;
                }
                end = end * 3 / 4;
            }
            break;
        }
        keep /= 2;
        let head = &lines[..keep.min(lines.len())];
        let tail = &lines[lines.len().saturating_sub(keep)..];
        let omitted = lines.len().saturating_sub(2 * keep);
        shown = format!(
            "{}\n… {omitted} lines omitted …\n{}",
            head.join("\n"),
            tail.join("\n")
        );
        tokens = spec.count(&shown);
    }
    let longest = shown.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let task = format!("{query}\n\n## Error output\n\n{fence}\n{shown}\n{fence}");
    (task, tokens, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    #[test]
    fn names_and_budgets() {
        for p in [Profile::Plan, Profile::Expand, Profile::Repair] {
            assert_eq!(Profile::from_name(p.name()), Ok(p));
        }
        assert!(Profile::from_name("fix").is_err());
        assert_eq!(Profile::Plan.budget(8000), PLAN_BUDGET);
        assert_eq!(Profile::Plan.budget(500), 500);
        assert_eq!(Profile::Expand.budget(8000), 8000);
    }

    #[test]
    fn frame_paths_match_repository_paths() {
        assert!(names_file("src/store.rs", "src/store.rs"));
        assert!(names_file("/home/ci/work/app/src/store.rs", "src/store.rs"));
        assert!(names_file("./src/store.rs", "src/store.rs"));
        assert!(names_file("app\\views.py", "app/views.py"));
        assert!(names_file("views.py", "app/views.py"));
        assert!(!names_file("src/other_store.rs", "src/store.rs"));
        assert!(!names_file("xstore.rs", "src/store.rs"));
    }

    #[test]
    fn repair_task_holds_the_error_within_its_share() {
        let spec = TokenizerSpec::Exact(Encoding::O200kBase);
        let (task, tokens, cut) = repair_task("fix it", "Error: boom\n  at a.js:3\n", 100, &spec);
        assert_eq!(
            task,
            "fix it\n\n## Error output\n\n```\nError: boom\n  at a.js:3\n```"
        );
        assert!(!cut && tokens > 0);
        let long: String = (0..400)
            .map(|i| format!("frame {i} at x.py:{i}\n"))
            .collect();
        let (task, tokens, cut) = repair_task("q", &long, 200, &spec);
        assert!(cut && tokens <= 200, "{tokens}");
        assert!(task.contains("frame 0 at") && task.contains("frame 399 at"));
        assert!(task.contains("lines omitted"));
        let one = "x".repeat(10_000);
        let (_, tokens, cut) = repair_task("q", &one, 50, &spec);
        assert!(cut && tokens <= 50);
        let fenced = repair_task("q", "```\nerr\n```", 100, &spec).0;
        assert!(fenced.contains("````\n```\nerr\n```\n````"), "{fenced}");
    }
}
