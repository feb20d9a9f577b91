//! The summaries of a new version: file summaries reused, extracted or asked of a model;
//! directory and project summaries rebuilt from them.
//!
//! A file's summary depends only on its bytes and the summarizer, so an unchanged file keeps
//! its previous summary, and a model's summary is found again by the file's sha256 (in the
//! previous version, even under other indexing settings): only changed files cost a call. A
//! failed call leaves the extractive summary in place, warns once and stops further calls.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use ctxgate_core::chunk::Language;
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::summaries::StoredSummaries;
use ctxgate_core::index::{ChunkRecord, FileEntry, IndexPack};
use ctxgate_core::summary::file::{Extract, extract};
use ctxgate_core::summary::tree::{FileFacts, ProjectInputs, directories, project};
use ctxgate_core::summary::{
    DirSummary, EXTRACTIVE, FileSummary, Summaries, Summary, first_sentence, llm_origin,
    llm_request,
};
use ctxgate_core::tokens::Encoding;
use rayon::prelude::*;
use serde::Serialize;

use crate::chat::{ChatClient, ChatEndpoint};

/// Largest README or manifest read for the project summary.
const MAX_PROJECT_FILE_BYTES: u64 = 1 << 20;
/// Most words a model's file summary is asked for, as tokens (with room to finish).
const LLM_MAX_TOKENS: u32 = 200;

/// What summarizing did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SummaryReport {
    /// File summaries in the version.
    pub files: usize,
    /// Directory summaries in the version.
    pub directories: usize,
    /// Whether the version has a project summary.
    pub project: bool,
    /// File summaries extracted in this run.
    pub extracted: usize,
    /// File summaries kept from the previous version.
    pub reused: usize,
    /// File summaries a model wrote in this run.
    pub llm_summarized: usize,
    /// Who wrote the file summaries this run asked for (`extractive-1`, `llm-1:<model>`).
    pub summarizer: String,
}

impl SummaryReport {
    /// The report of a version left as it was.
    pub fn unchanged(summaries: &StoredSummaries, summarizer: String) -> Self {
        Self {
            files: summaries.files.len(),
            directories: summaries.dirs.len(),
            project: summaries.project.is_some(),
            reused: summaries.files.len(),
            summarizer,
            ..Self::default()
        }
    }
}

/// Who writes file summaries in a run.
pub fn summarizer(llm: Option<&ChatEndpoint>) -> String {
    llm.map_or_else(|| EXTRACTIVE.to_string(), |e| llm_origin(&e.model))
}

/// The new version's files, and where each came from.
pub(crate) struct Inputs<'a> {
    /// The repository folder.
    pub root: &'a Path,
    /// The project's name.
    pub name: &'a str,
    /// The new file table.
    pub files: &'a [FileEntry],
    /// The new chunk table.
    pub chunks: &'a [ChunkRecord],
    /// Encodings counted.
    pub encodings: &'a [Encoding],
    /// Extractive summaries of the files read in this run, by new file index.
    pub fresh: HashMap<u32, Extract>,
    /// The previous file index of each reused file, by new file index.
    pub reused: HashMap<u32, u32>,
    /// The previous version and its summaries with their texts, when readable (whatever its
    /// settings).
    pub previous: Option<(&'a IndexPack, &'a Summaries)>,
    /// Whether `reused` indexes into `previous` (its files were reusable).
    pub reused_from_previous: bool,
    /// The model that writes file summaries, if any.
    pub llm: Option<&'a ChatEndpoint>,
}

/// Builds the summaries of a version; returns them, what was done, and warnings.
pub(crate) fn build(inputs: Inputs<'_>) -> (Summaries, SummaryReport, Vec<String>) {
    let mut warnings = Vec::new();
    let wanted = summarizer(inputs.llm);
    let mut report = SummaryReport {
        summarizer: wanted.clone(),
        ..SummaryReport::default()
    };
    let same_encodings = inputs
        .previous
        .is_some_and(|(p, _)| p.meta.encodings == inputs.encodings);
    let mut drafts = file_summaries(&inputs, &wanted, same_encodings, &mut report);
    if let Some(endpoint) = inputs.llm {
        ask_model(
            endpoint,
            &inputs,
            &wanted,
            &mut drafts,
            &mut report,
            &mut warnings,
        );
    }
    let Drafts {
        mut files,
        needs_count,
        ..
    } = drafts;
    let counts: Vec<(usize, Vec<u32>)> = needs_count
        .par_iter()
        .map(|&k| {
            let text = &files[k].summary.text;
            (k, inputs.encodings.iter().map(|e| e.count(text)).collect())
        })
        .collect();
    for (k, tokens) in counts {
        files[k].summary.tokens = tokens;
    }

    // Directories and the project, from the files' lines and sizes (first encoding).
    let facts = file_facts(&inputs, &files);
    let dirs = dir_summaries(&inputs, &facts, same_encodings);
    let project = project_summary(&inputs, &facts);

    report.files = files.len();
    report.directories = dirs.len();
    report.project = true;
    (
        Summaries {
            files,
            dirs,
            project: Some(project),
        },
        report,
        warnings,
    )
}

/// The file summaries of a run before the model is asked: which need their tokens counted,
/// and which were extracted in this run (not reused).
struct Drafts {
    files: Vec<FileSummary>,
    needs_count: Vec<usize>,
    extracted: Vec<bool>,
}

/// Each file's summary: the one `wanted` wrote of the same bytes before, else the unchanged
/// file's, else extracted now.
fn file_summaries(
    inputs: &Inputs<'_>,
    wanted: &str,
    same_encodings: bool,
    report: &mut SummaryReport,
) -> Drafts {
    let prev = inputs.previous;
    // Earlier summaries by (file sha256, summarizer): the cache of model summaries.
    let cache: HashMap<(Sha256Digest, &str), &FileSummary> = prev
        .map(|(p, sums)| {
            sums.files
                .iter()
                .filter_map(|s| {
                    let f = p.files.get(s.file as usize)?;
                    Some(((f.sha256, s.origin.as_str()), s))
                })
                .collect()
        })
        .unwrap_or_default();

    let mut files: Vec<FileSummary> = Vec::new();
    let mut needs_count: Vec<usize> = Vec::new();
    let mut extracted: Vec<bool> = Vec::new();
    for (i, entry) in inputs.files.iter().enumerate() {
        let i = i as u32;
        if entry.skipped.is_some() || entry.chunk_count == 0 {
            continue;
        }
        // The summary this run's summarizer wrote of these bytes, else the unchanged file's.
        let kept = cache.get(&(entry.sha256, wanted)).copied().or_else(|| {
            let &p = inputs
                .reused
                .get(&i)
                .filter(|_| inputs.reused_from_previous)?;
            prev?.1.file(p)
        });
        let summary = if let Some(s) = kept {
            report.reused += 1;
            extracted.push(false);
            FileSummary {
                file: i,
                ..s.clone()
            }
        } else {
            let e = match inputs.fresh.get(&i) {
                Some(e) => e.clone(),
                None => match read_text(inputs.root, entry) {
                    Some(text) => extract(&entry.path, Language::from_path(&entry.path), &text),
                    None => continue,
                },
            };
            report.extracted += 1;
            extracted.push(true);
            FileSummary {
                file: i,
                origin: EXTRACTIVE.into(),
                line: e.line,
                summary: Summary {
                    text: e.text,
                    tokens: Vec::new(),
                },
            }
        };
        if summary.summary.tokens.is_empty() || !same_encodings {
            needs_count.push(files.len());
        }
        files.push(summary);
    }
    Drafts {
        files,
        needs_count,
        extracted,
    }
}

/// The model's summary instead of each file's that `wanted` did not write, asked in parallel;
/// the first failure stops the calls not yet made and is one warning.
fn ask_model(
    endpoint: &ChatEndpoint,
    inputs: &Inputs<'_>,
    wanted: &str,
    drafts: &mut Drafts,
    report: &mut SummaryReport,
    warnings: &mut Vec<String>,
) {
    let client = ChatClient::new(endpoint);
    let failed = AtomicBool::new(false);
    // `Err` only for the first failure: it stops the calls not yet made.
    let asked: Vec<(usize, Result<Option<String>, String>)> = drafts
        .files
        .par_iter()
        .enumerate()
        .filter(|(_, s)| s.origin != wanted)
        .map(|(k, s)| {
            if failed.load(Ordering::Relaxed) {
                return (k, Ok(None));
            }
            let entry = &inputs.files[s.file as usize];
            let Some(text) = read_text(inputs.root, entry) else {
                return (k, Ok(None));
            };
            let (system, user) = llm_request(&entry.path, &text, &s.summary.text);
            match client.complete(&system, &user, LLM_MAX_TOKENS) {
                Ok(answer) => (k, Ok(Some(answer).filter(|a| !a.is_empty()))),
                Err(e) if !failed.swap(true, Ordering::Relaxed) => (k, Err(e.to_string())),
                Err(_) => (k, Ok(None)),
            }
        })
        .collect();
    for (k, answer) in asked {
        match answer {
            Err(e) => warnings.push(format!(
                "the summarizing model failed ({e}); files it has not summarized keep extractive summaries"
            )),
            Ok(Some(text)) => {
                let s = &mut drafts.files[k];
                s.origin = wanted.into();
                s.line = first_sentence(&text, 120);
                s.summary = Summary {
                    text,
                    tokens: Vec::new(),
                };
                report.llm_summarized += 1;
                if drafts.extracted[k] {
                    report.extracted -= 1;
                } else {
                    report.reused -= 1;
                }
                if !drafts.needs_count.contains(&k) {
                    drafts.needs_count.push(k);
                }
            }
            Ok(None) => {}
        }
    }
}

/// What the directory and project summaries read of each summarized file.
fn file_facts<'a>(inputs: &Inputs<'a>, files: &'a [FileSummary]) -> Vec<FileFacts<'a>> {
    let by_file: HashMap<u32, &str> = files.iter().map(|s| (s.file, s.line.as_str())).collect();
    inputs
        .files
        .iter()
        .enumerate()
        .filter(|(_, f)| f.skipped.is_none() && f.chunk_count > 0)
        .map(|(i, f)| {
            let first = f.first_chunk as usize;
            let tokens = inputs.chunks[first..first + f.chunk_count as usize]
                .iter()
                .map(|c| u64::from(c.tokens.first().copied().unwrap_or(0)))
                .sum();
            FileFacts {
                path: &f.path,
                tokens,
                line: by_file.get(&(i as u32)).copied().unwrap_or(""),
            }
        })
        .collect()
}

/// Each directory's summary; its token counts reused when the previous version had the same
/// text under the same encodings.
fn dir_summaries(
    inputs: &Inputs<'_>,
    facts: &[FileFacts<'_>],
    same_encodings: bool,
) -> Vec<DirSummary> {
    let prev = inputs.previous;
    let prev_dirs: HashMap<(&str, &str), &Vec<u32>> = prev
        .filter(|_| same_encodings)
        .map(|(_, sums)| {
            sums.dirs
                .iter()
                .map(|d| {
                    (
                        (d.path.as_str(), d.summary.text.as_str()),
                        &d.summary.tokens,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    directories(facts)
        .into_par_iter()
        .map(|(path, text)| {
            let tokens = match prev_dirs.get(&(path.as_str(), text.as_str())) {
                Some(t) => (*t).clone(),
                None => inputs.encodings.iter().map(|e| e.count(&text)).collect(),
            };
            DirSummary {
                path,
                summary: Summary { text, tokens },
            }
        })
        .collect()
}

/// The project's summary, from its files, its README and its manifests.
fn project_summary(inputs: &Inputs<'_>, facts: &[FileFacts<'_>]) -> Summary {
    let readme = inputs
        .files
        .iter()
        .filter(|f| !f.path.contains('/') && f.skipped.is_none())
        .filter(|f| f.path.to_ascii_lowercase().starts_with("readme"))
        .min_by_key(|f| (!f.path.to_ascii_lowercase().ends_with(".md"), f.path.len()))
        .and_then(|f| Some((f.path.as_str(), read_text(inputs.root, f)?)));
    let manifests: Vec<(&str, String)> = inputs
        .files
        .iter()
        .filter(|f| f.path.matches('/').count() <= 1)
        .filter(|f| {
            let name = f.path.rsplit('/').next().unwrap_or("");
            matches!(name, "Cargo.toml" | "package.json" | "pyproject.toml")
        })
        .filter_map(|f| Some((f.path.as_str(), read_text(inputs.root, f)?)))
        .collect();
    let manifest_refs: Vec<(&str, &str)> =
        manifests.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let text = project(&ProjectInputs {
        name: inputs.name,
        files: facts,
        readme: readme.as_ref().map(|(p, t)| (*p, t.as_str())),
        manifests: &manifest_refs,
    });
    Summary::counted(text, inputs.encodings)
}

/// The text of `entry` as it is on disk, when it still has the indexed content.
fn read_text(root: &Path, entry: &FileEntry) -> Option<String> {
    let path = root.join(&entry.path);
    let meta = std::fs::metadata(&path).ok()?;
    if meta.len() > MAX_PROJECT_FILE_BYTES.max(entry.stat.size) {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    if entry.skipped.is_none() && Sha256Digest::of(&bytes) != entry.sha256 {
        return None;
    }
    String::from_utf8(bytes).ok()
}
