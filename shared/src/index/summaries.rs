//! The summaries as a pack holds them: what choosing needs (whose summary, who wrote it, its
//! counts) in the pack, the texts apart and read by range once chosen.
//!
//! Choosing summaries for a prompt ([`crate::assemble::summaries`]) reads only their counts; a
//! prompt shows at most a few dozen texts. A large repository's texts are tens of MiB (an
//! 88M-token monorepo: ~20 MiB with the files' one-line descriptions), which a Worker's isolate
//! would otherwise hold for every query, so they are a [`ValueList`]: in the pack while small, in
//! segments of the version once large. The files' one-line descriptions, which only the indexer
//! reads (to rebuild directory summaries), are another. What the summaries are and how they are
//! built is [`crate::summary`]; this is only how the pack stores them.

use serde::{Deserialize, Serialize};

use super::inline::TokenCounts;
use crate::lists::ListRange;
use crate::lists::values::{TooLarge, ValueList};
use crate::summary::{DirSummary, FileSummary, Summaries, Summary};

/// A file's summary without its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredFile {
    /// Index into the pack's file table.
    pub file: u32,
    /// Which summarizer wrote it (see [`FileSummary::origin`]).
    pub origin: compact_str::CompactString,
    /// Exact token counts of its text, one per [`crate::index::PackMeta::encodings`].
    pub tokens: TokenCounts,
}

/// A directory's summary without its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredDir {
    /// Path relative to the repository root, `/`-separated, without a trailing slash.
    pub path: String,
    /// Exact token counts of its text.
    pub tokens: TokenCounts,
}

/// Every summary of a pack.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredSummaries {
    /// File summaries, sorted by file index; files that were not chunked have none.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub files: Vec<StoredFile>,
    /// Directory summaries, sorted by path (the root has none: the project summary covers it).
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub dirs: Vec<StoredDir>,
    /// The project summary, text included: every broad query shows it.
    pub project: Option<Summary>,
    /// The texts: file summary `k`'s is value `k`, directory summary `k`'s is value
    /// `files.len() + k` ([`StoredSummaries::file_text`], [`StoredSummaries::dir_text`]).
    pub texts: ValueList,
    /// File summary `k`'s one-line description, for its directory's summary.
    pub lines: ValueList,
    /// For a version opened from a base and a delta ([`crate::index::delta`]): where each
    /// text and line is, `texts` and `lines` being the base's. Not stored.
    #[serde(skip)]
    pub layered: Option<Box<LayeredTexts>>,
}

/// Marks a position in [`LayeredTexts`] as the delta's.
const DELTA_BIT: u32 = 1 << 31;

/// The texts and lines of summaries merged from a base pack's and a delta pack's.
#[derive(Clone, Debug, PartialEq)]
pub struct LayeredTexts {
    /// Text `k` of the merged summaries: the base's value at this position, or with
    /// [`DELTA_BIT`] the delta's.
    pub texts_from: Vec<u32>,
    /// Line `k` likewise.
    pub lines_from: Vec<u32>,
    /// The delta's texts.
    pub texts: ValueList,
    /// The delta's lines.
    pub lines: ValueList,
    /// The delta's segment numbers follow the base's: this is added to its ranges.
    pub segment_offset: u32,
}

/// Where a merged position is: (the delta's?, its position there).
fn layer_of(from: u32) -> (bool, u32) {
    (from & DELTA_BIT != 0, from & !DELTA_BIT)
}

/// Position `k` of a layer (the base's or, with `delta`, the delta's) as [`LayeredTexts`]
/// records it.
pub fn layered_position(delta: bool, k: u32) -> u32 {
    if delta { k | DELTA_BIT } else { k }
}

/// A counts list the pack cannot hold (more encodings than a chunk's counts).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// More counts than a pack records per text.
    #[error("a summary carries more token counts than a pack records")]
    Counts,
    /// The texts sum to 4 GiB or more.
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
}

impl StoredSummaries {
    /// The pack's form of `built`, every text held in the pack (a writer splits large ones
    /// out with [`StoredSummaries::split`]).
    pub fn store(built: Summaries) -> Result<Self, StoreError> {
        let counts = |s: &Summary| TokenCounts::new(&s.tokens).map_err(|_| StoreError::Counts);
        let texts = ValueList::from_values(
            built
                .files
                .iter()
                .map(|f| f.summary.text.as_bytes())
                .chain(built.dirs.iter().map(|d| d.summary.text.as_bytes())),
        )?;
        let lines = ValueList::from_values(built.files.iter().map(|f| f.line.as_bytes()))?;
        let files = built
            .files
            .iter()
            .map(|f| {
                Ok(StoredFile {
                    file: f.file,
                    origin: f.origin.clone(),
                    tokens: counts(&f.summary)?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let dirs = built
            .dirs
            .into_iter()
            .map(|d| {
                Ok(StoredDir {
                    tokens: counts(&d.summary)?,
                    path: d.path,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Self {
            files,
            dirs,
            project: built.project,
            texts,
            lines,
            layered: None,
        })
    }

    /// The list text `k` is in and its position there, with the segment offset of that list.
    fn text_at(&self, k: u32) -> (&ValueList, u32, u32) {
        match &self.layered {
            None => (&self.texts, k, 0),
            Some(l) => match l.texts_from.get(k as usize).map(|&f| layer_of(f)) {
                Some((true, q)) => (&l.texts, q, l.segment_offset),
                Some((false, p)) => (&self.texts, p, 0),
                None => (&self.texts, u32::MAX, 0),
            },
        }
    }

    /// Text `k` when the pack holds it.
    pub fn text_inline(&self, k: u32) -> Option<&[u8]> {
        let (list, k, _) = self.text_at(k);
        list.inline(k as usize)
    }

    /// Where text `k` is read from, when the pack does not hold it.
    pub fn text_range(&self, k: u32) -> Option<ListRange> {
        let (list, k, offset) = self.text_at(k);
        list.range(k).map(|r| ListRange {
            segment: r.segment + offset,
            ..r
        })
    }

    /// Checks bytes read for text `k`.
    pub fn text_verify(&self, k: u32, bytes: &[u8]) -> Result<(), crate::lists::ListError> {
        let (list, p, _) = self.text_at(k);
        list.verify(p, bytes)
            .map_err(|_| crate::lists::ListError::Checksum { key: k })
    }

    /// Whether text `k` must be read from a segment.
    pub fn text_must_read(&self, k: u32) -> bool {
        let (list, k, _) = self.text_at(k);
        list.must_read(k as usize)
    }

    /// Moves large texts and lines out to segments `first_segment`, ... (see
    /// [`ValueList::split`]); returns their bytes, texts' first.
    pub fn split(&mut self, cap: usize, inline_max: usize, first_segment: u32) -> Vec<Vec<u8>> {
        let mut parts = self.texts.split(cap, inline_max, first_segment);
        let next = first_segment + parts.len() as u32;
        parts.extend(self.lines.split(cap, inline_max, next));
        parts
    }

    /// File summary `k` of file `file` (an index into the file table).
    pub fn file(&self, file: u32) -> Option<(usize, &StoredFile)> {
        let k = self.files.binary_search_by_key(&file, |s| s.file).ok()?;
        Some((k, &self.files[k]))
    }

    /// The summary of directory `path`, and its position.
    pub fn dir(&self, path: &str) -> Option<(usize, &StoredDir)> {
        let k = self
            .dirs
            .binary_search_by(|d| d.path.as_str().cmp(path))
            .ok()?;
        Some((k, &self.dirs[k]))
    }

    /// Which value of [`StoredSummaries::texts`] is file summary `k`'s text.
    pub fn file_text(&self, k: usize) -> u32 {
        k as u32
    }

    /// Which value of [`StoredSummaries::texts`] is directory summary `k`'s text.
    pub fn dir_text(&self, k: usize) -> u32 {
        (self.files.len() + k) as u32
    }

    /// Checks what readers index with: one text per summary and one line per file summary,
    /// counts for every encoding, files inside the file table, parts in listed segments.
    pub fn check(&self, files: usize, encodings: usize, segments: usize) -> Result<(), String> {
        if self.files.iter().any(|s| s.file as usize >= files) {
            return Err("a file summary names a file past the file table".into());
        }
        if !self.files.windows(2).all(|w| w[0].file < w[1].file) {
            return Err("file summaries out of order".into());
        }
        let counts_ok = self
            .files
            .iter()
            .map(|f| f.tokens.len())
            .chain(self.dirs.iter().map(|d| d.tokens.len()))
            .chain(self.project.iter().map(|p| p.tokens.len()))
            .all(|n| n == encodings);
        if !counts_ok {
            return Err("a summary without one count per encoding".into());
        }
        if self.texts.len() != self.files.len() + self.dirs.len() {
            return Err("not one text per summary".into());
        }
        if self.lines.len() != self.files.len() {
            return Err("not one line per file summary".into());
        }
        self.texts
            .check(segments)
            .and_then(|()| self.lines.check(segments))
            .map_err(|e| format!("summary texts: {e}"))
    }

    /// The summaries with every text, those in segments read with `read` and checked: for the
    /// indexer, which builds a new version on the previous one's.
    pub fn load<E>(
        &self,
        mut read: impl FnMut(ListRange) -> Result<Vec<u8>, E>,
        corrupt: impl Fn(String) -> E,
    ) -> Result<Summaries, E> {
        let texts = self
            .texts
            .load(&mut read, |e| corrupt(format!("a summary text: {e}")))?;
        let lines = self
            .lines
            .load(&mut read, |e| corrupt(format!("a file's line: {e}")))?;
        // A merged version's texts and lines come from the base's lists or the delta's.
        let layered = match &self.layered {
            None => None,
            Some(l) => {
                let offset = l.segment_offset;
                let mut shifted = |r: ListRange| {
                    read(ListRange {
                        segment: r.segment + offset,
                        ..r
                    })
                };
                let texts = l
                    .texts
                    .load(&mut shifted, |e| corrupt(format!("a summary text: {e}")))?;
                let lines = l
                    .lines
                    .load(&mut shifted, |e| corrupt(format!("a file's line: {e}")))?;
                Some((l, texts, lines))
            }
        };
        let pick = |k: usize, lines_of: bool| -> Vec<u8> {
            let own = if lines_of { &lines } else { &texts };
            let Some((l, t, li)) = &layered else {
                return own.inline(k).unwrap_or_default().to_vec();
            };
            let (from, delta) = if lines_of {
                (&l.lines_from, li)
            } else {
                (&l.texts_from, t)
            };
            match from.get(k).map(|&f| layer_of(f)) {
                Some((true, q)) => delta.inline(q as usize),
                Some((false, p)) => own.inline(p as usize),
                None => None,
            }
            .unwrap_or_default()
            .to_vec()
        };
        let text = |k: usize| -> Result<String, E> {
            String::from_utf8(pick(k, false))
                .map_err(|_| corrupt(format!("summary text #{k} is not UTF-8")))
        };
        let files = self
            .files
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let line = pick(k, true);
                Ok(FileSummary {
                    file: f.file,
                    origin: f.origin.clone(),
                    line: String::from_utf8(line).map_err(|_| {
                        corrupt(format!("the line of file summary #{k} is not UTF-8"))
                    })?,
                    summary: Summary {
                        text: text(k)?,
                        tokens: f.tokens.to_vec(),
                    },
                })
            })
            .collect::<Result<_, E>>()?;
        let dirs = self
            .dirs
            .iter()
            .enumerate()
            .map(|(k, d)| {
                Ok(DirSummary {
                    path: d.path.clone(),
                    summary: Summary {
                        text: text(self.files.len() + k)?,
                        tokens: d.tokens.to_vec(),
                    },
                })
            })
            .collect::<Result<_, E>>()?;
        Ok(Summaries {
            files,
            dirs,
            project: self.project.clone(),
        })
    }

    /// The summaries with every text, when the pack holds them all (a small index, or one
    /// just built); `None` when some are in segments.
    pub fn inlined(&self) -> Option<Summaries> {
        if self.texts.is_stored() || self.lines.is_stored() || self.layered.is_some() {
            return None;
        }
        self.load(|_| Err(()), |_| ()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::EXTRACTIVE;

    fn built() -> Summaries {
        let s = |t: &str| Summary {
            text: t.into(),
            tokens: vec![t.len() as u32, 1],
        };
        Summaries {
            files: (0..30u32)
                .map(|i| FileSummary {
                    file: i * 2,
                    origin: EXTRACTIVE.into(),
                    line: format!("line {i}"),
                    summary: s(&format!("file {i} ").repeat(i as usize % 4 + 1)),
                })
                .collect(),
            dirs: vec![
                DirSummary {
                    path: "a".into(),
                    summary: s("dir a"),
                },
                DirSummary {
                    path: "b/c".into(),
                    summary: s("dir b/c"),
                },
            ],
            project: Some(s("the project")),
        }
    }

    #[test]
    fn stored_summaries_find_their_texts_in_the_pack_or_in_segments() {
        let built = built();
        let stored = StoredSummaries::store(built.clone()).unwrap();
        assert_eq!(stored.check(60, 2, 0), Ok(()));
        assert_eq!(stored.inlined().as_ref(), Some(&built));
        let (k, f) = stored.file(6).unwrap();
        assert_eq!(f.file, 6);
        assert_eq!(
            stored.texts.inline(stored.file_text(k) as usize),
            Some(built.files[3].summary.text.as_bytes())
        );
        let (k, d) = stored.dir("b/c").unwrap();
        assert_eq!(d.path, "b/c");
        assert_eq!(
            stored.texts.inline(stored.dir_text(k) as usize),
            Some(&b"dir b/c"[..])
        );
        assert!(stored.file(5).is_none() && stored.dir("b").is_none());

        let mut split = stored.clone();
        let parts = split.split(40, 0, 2);
        assert!(split.texts.is_stored() && split.lines.is_stored());
        assert_eq!(split.check(60, 2, 2 + parts.len()), Ok(()));
        assert!(split.inlined().is_none());
        let read = |r: ListRange| -> Result<Vec<u8>, String> {
            let seg = &parts[(r.segment - 2) as usize];
            Ok(seg[r.start as usize..(r.start + r.len) as usize].to_vec())
        };
        assert_eq!(split.load(read, |e| e).unwrap(), built);
        // A damaged segment is an error naming what failed, never a wrong text.
        let mut damaged = parts.clone();
        damaged[0][0] ^= 1;
        let read = |r: ListRange| -> Result<Vec<u8>, String> {
            let seg = &damaged[(r.segment - 2) as usize];
            Ok(seg[r.start as usize..(r.start + r.len) as usize].to_vec())
        };
        let err = split.load(read, |e| e).unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn bad_stored_summaries_are_refused() {
        let stored = StoredSummaries::store(built()).unwrap();
        assert!(stored.check(10, 2, 0).is_err(), "a file past the table");
        assert!(
            stored.check(60, 1, 0).is_err(),
            "counts for another encoding list"
        );
        let mut missing = stored.clone();
        missing.dirs.pop();
        assert!(
            missing.check(60, 2, 0).is_err(),
            "a text without its summary"
        );
    }
}
