//! Hierarchical summaries: of every file, every directory and the project.
//!
//! The indexer builds them once per version and stores them in the pack
//! ([`crate::index::summaries`]); at query time they fill the room the best pieces leave
//! ([`crate::assemble::summaries`]), so a model sees the shape of what it was not given whole.
//! Everything here is deterministic: the same bytes give the same summaries.
//!
//! - a **file** summary is its leading doc comment or module docstring (first paragraph, capped)
//!   and the signatures of its exported definitions (capped) — [`file::extract`];
//! - a **directory** summary lists its subdirectories and files with their sizes in tokens and
//!   a one-line description of each file — [`tree::directories`];
//! - the **project** summary is the README's head, the top-level layout with sizes and the main
//!   entry points (binaries, `__main__.py`, `package.json` `main`/`bin`, Cargo `[[bin]]`...) —
//!   [`tree::project`].
//!
//! A host may replace file summaries with a model's ([`FileSummary::origin`] names which
//! summarizer wrote one); the indexer reuses the summary of an unchanged file, so only changed
//! files are summarized again. Sizes inside directory and project summaries are counted with
//! the pack's first encoding; each stored summary carries its exact count in every encoding the
//! pack counts, like chunks do.

pub mod file;
pub mod tree;

use serde::{Deserialize, Serialize};

use crate::tokens::Encoding;

/// The [`FileSummary::origin`] of extractive summaries (bumped when the extraction changes).
pub const EXTRACTIVE: &str = "extractive-1";

/// What a summary covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SummaryKind {
    /// The whole repository.
    Project,
    /// One directory.
    Directory,
    /// One file.
    File,
}

/// A summary's text and its exact counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The text.
    pub text: String,
    /// Exact token counts, one per [`crate::index::PackMeta::encodings`].
    pub tokens: Vec<u32>,
}

impl Summary {
    /// `text` counted with each of `encodings`.
    pub fn counted(text: String, encodings: &[Encoding]) -> Self {
        let tokens = encodings.iter().map(|e| e.count(&text)).collect();
        Self { text, tokens }
    }
}

/// The summary of one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSummary {
    /// Index into the pack's file table.
    pub file: u32,
    /// Which summarizer wrote it: [`EXTRACTIVE`], or `llm-1:<model>` (held inline when short, as
    /// the extractive origin is).
    pub origin: compact_str::CompactString,
    /// One line describing the file, for its directory's summary.
    pub line: String,
    /// The summary.
    pub summary: Summary,
}

/// The summary of one directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirSummary {
    /// Path relative to the repository root, `/`-separated, without a trailing slash.
    pub path: String,
    /// The summary.
    pub summary: Summary,
}

/// Every summary of a pack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summaries {
    /// File summaries, sorted by file index; files that were not chunked have none.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub files: Vec<FileSummary>,
    /// Directory summaries, sorted by path (the root has none: the project summary covers it).
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub dirs: Vec<DirSummary>,
    /// The project summary.
    pub project: Option<Summary>,
}

impl Summaries {
    /// The summary of file `file` (an index into the file table).
    pub fn file(&self, file: u32) -> Option<&FileSummary> {
        self.files
            .binary_search_by_key(&file, |s| s.file)
            .ok()
            .map(|i| &self.files[i])
    }

    /// The summary of directory `path`.
    pub fn dir(&self, path: &str) -> Option<&DirSummary> {
        self.dirs
            .binary_search_by(|d| d.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.dirs[i])
    }
}

/// The [`FileSummary::origin`] of summaries written by `model`.
pub fn llm_origin(model: &str) -> String {
    format!("llm-1:{model}")
}

/// Longest file text sent to a model for its summary, in bytes.
pub const LLM_INPUT_BYTES: usize = 24 * 1024;

/// The instruction and the message that ask a chat model for the summary of the file at `path`
/// (its text cut to [`LLM_INPUT_BYTES`]); `extractive` is the file's extractive summary, a hint.
pub fn llm_request(path: &str, text: &str, extractive: &str) -> (String, String) {
    let mut end = text.len().min(LLM_INPUT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < text.len() {
        "\n[… cut]\n"
    } else {
        ""
    };
    let system = "Summarize the source file below for a developer who has not read it, in at most 80 words: what it is for, its main public definitions and how they are used. Start with one sentence that says what the file is. Reply with the summary only.".to_string();
    let user = format!(
        "File: {path}\n\nExported definitions:\n{extractive}\n\n{}{cut}",
        &text[..end]
    );
    (system, user)
}

/// The first sentence of `text` (up to `max` bytes, cut at a word), for one-line descriptions.
pub fn first_sentence(text: &str, max: usize) -> String {
    let para = text.split("\n\n").next().unwrap_or("").trim();
    let flat = para.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat
        .char_indices()
        .find(|&(i, c)| c == '.' && flat[i + 1..].chars().next().is_none_or(char::is_whitespace))
        .map_or(flat.len(), |(i, _)| i + 1);
    cap(&flat[..end], max)
}

/// `text` cut to at most `max` bytes at a word boundary, with `…` when cut.
pub(crate) fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text[..end]
        .rfind(' ')
        .filter(|&i| i > max / 2)
        .unwrap_or(end);
    format!("{}…", text[..cut].trim_end())
}

/// `1234` as `1,234`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_and_caps() {
        assert_eq!(
            first_sentence("Reads the config. Then more.", 100),
            "Reads the config."
        );
        assert_eq!(
            first_sentence("Uses v1.2 of\nthe API", 100),
            "Uses v1.2 of the API"
        );
        assert_eq!(cap("one two three four", 9), "one two…");
        assert_eq!(cap("short", 9), "short");
        assert_eq!(cap("ééééé", 3), "é…");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn lookups() {
        let s = |t: &str| Summary {
            text: t.into(),
            tokens: vec![1],
        };
        let all = Summaries {
            files: vec![
                FileSummary {
                    file: 0,
                    origin: EXTRACTIVE.into(),
                    line: String::new(),
                    summary: s("a"),
                },
                FileSummary {
                    file: 3,
                    origin: EXTRACTIVE.into(),
                    line: String::new(),
                    summary: s("b"),
                },
            ],
            dirs: vec![DirSummary {
                path: "src".into(),
                summary: s("d"),
            }],
            project: None,
        };
        assert_eq!(all.file(3).map(|f| f.summary.text.as_str()), Some("b"));
        assert!(all.file(1).is_none());
        assert!(all.dir("src").is_some() && all.dir("lib").is_none());
    }
}
