//! Exact token counts with OpenAI's tiktoken encodings (through `tiktoken-rs`).
//!
//! Each encoding's tables are built at most once per process, on first use, and shared
//! (`tiktoken-rs` keeps them in process-wide singletons). Building `o200k_base` that way is the
//! single most expensive start-up step of a short command (about 250 ms), so a host that keeps
//! files can install a [`RankTable`] exported from tiktoken-rs once and loaded in milliseconds
//! afterwards; counts are identical (see [`table`]). Callers that know which encoding they will
//! need should call [`Encoding::preload`] early, off the main thread.

mod memo;
pub mod split;
pub mod table;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
#[cfg(feature = "reference")]
use tiktoken_rs::CoreBPE;

pub use table::{RankTable, TableError};

/// Fast tables installed by the host, one slot per encoding.
static INSTALLED: [OnceLock<RankTable>; 5] = [const { OnceLock::new() }; 5];

/// Where a host that carries tables (the Worker compiles them in) loads one on first use, so a
/// process pays only for the encodings it counts with.
static LOADER: OnceLock<fn(Encoding) -> Option<RankTable>> = OnceLock::new();

/// A tiktoken encoding ctxgate can count exactly.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series, GPT-5.
    O200kBase,
    /// gpt-oss (o200k plus the harmony chat tokens; ordinary text counts like o200k).
    O200kHarmony,
    /// GPT-4, GPT-3.5-turbo, text-embedding-3.
    Cl100kBase,
    /// Codex and text-davinci-002/003.
    P50kBase,
    /// GPT-3 (davinci).
    R50kBase,
}

impl Encoding {
    /// Every encoding, in a stable order.
    pub const ALL: [Encoding; 5] = [
        Encoding::O200kBase,
        Encoding::O200kHarmony,
        Encoding::Cl100kBase,
        Encoding::P50kBase,
        Encoding::R50kBase,
    ];

    /// The encoding's tiktoken name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::O200kHarmony => "o200k_harmony",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::P50kBase => "p50k_base",
            Encoding::R50kBase => "r50k_base",
        }
    }

    /// Parses a tiktoken name such as `o200k_base`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The name of the table this encoding counts with: gpt-oss's harmony encoding adds chat
    /// tokens to o200k, and ordinary text (all ctxgate counts) splits and merges the same.
    pub fn table_name(self) -> &'static str {
        match self {
            Encoding::O200kHarmony => Encoding::O200kBase.name(),
            e => e.name(),
        }
    }

    /// tiktoken-rs's tables, built on first use and shared by the whole process: the reference
    /// every count agrees with. Hosts that carry every table (the Worker) leave it out: its
    /// vocabularies are ~7 MB of the module.
    #[cfg(feature = "reference")]
    pub fn reference(self) -> &'static CoreBPE {
        match self {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::O200kHarmony => tiktoken_rs::o200k_harmony_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Encoding::P50kBase => tiktoken_rs::p50k_base_singleton(),
            Encoding::R50kBase => tiktoken_rs::r50k_base_singleton(),
        }
    }

    /// Makes `table` this process's counter for its encoding; false when one is already
    /// installed.
    pub fn install(table: RankTable) -> bool {
        INSTALLED[table.encoding() as usize].set(table).is_ok()
    }

    /// Makes `loader` the source of tables not installed yet, asked on an encoding's first
    /// count (it may answer `None`: tiktoken-rs counts then); false when one is already set.
    pub fn set_loader(loader: fn(Encoding) -> Option<RankTable>) -> bool {
        LOADER.set(loader).is_ok()
    }

    /// The installed fast table, if any (loaded now if a loader has it).
    pub fn installed(self) -> Option<&'static RankTable> {
        let slot = &INSTALLED[self as usize];
        if let Some(t) = slot.get() {
            return Some(t);
        }
        let table = LOADER.get()?(self)?;
        // Two threads may load at once; the first to finish is kept.
        let _ = slot.set(table);
        slot.get()
    }

    /// Makes sure a later count does not pay for building tables.
    pub fn preload(self) {
        #[cfg(feature = "reference")]
        if self.installed().is_none() {
            let _ = self.reference();
        }
        #[cfg(not(feature = "reference"))]
        let _ = self.installed();
    }

    /// Exact number of tokens in `text`, special-token strings counted as ordinary text (which is
    /// how a chat API treats them when they arrive inside a message).
    pub fn count(self, text: &str) -> u32 {
        let n = match self.installed() {
            Some(t) => t.count(text),
            // Without tiktoken-rs and without a table (a host bug: the Worker carries every
            // table) one token per byte is an upper bound, which keeps budgets safe.
            #[cfg(not(feature = "reference"))]
            None => text.len(),
            // tiktoken-rs unwraps a regex error (its backtracking limit, hit by megabyte-long
            // runs of one character); one token per byte over-counts, which keeps budgets safe.
            #[cfg(feature = "reference")]
            None => std::panic::catch_unwind(|| self.reference().count_ordinary(text))
                .unwrap_or(text.len()),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// [`Encoding::count`] for text whose pre-tokens come back call after call (a prompt's
    /// headers: the same paths and fences on every answer): their counts are remembered per
    /// process, up to a bound (see `memo`). The same count as [`Encoding::count`].
    pub fn count_repeated(self, text: &str) -> u32 {
        match self.installed() {
            Some(t) => u32::try_from(memo::count(t, text)).unwrap_or(u32::MAX),
            None => self.count(text),
        }
    }

    /// Whether a count splits exactly at every line start: for text `a` ending in `\n` and text
    /// `b` starting with spaces or tabs (or none) and then a non-whitespace character (an
    /// unindented `/` only when `a` ends in an ASCII letter or digit before its `\n`),
    /// `count(a + b) == count(a) + count(b)`.
    ///
    /// True for the encodings whose pre-tokenizer pattern tries `\s*[\r\n]+` before any other
    /// whitespace rule: no pre-token can then run from a line's end into the next line's first
    /// visible character, and BPE never merges across pre-tokens. The GPT-2 pattern (p50k,
    /// r50k) splits runs of newlines differently at the end of a text, so it is excluded. The
    /// composer relies on this to reuse the index's counts of chunk texts instead of
    /// re-counting them; a property test checks it.
    pub fn splits_at_line_starts(self) -> bool {
        matches!(
            self,
            Encoding::O200kBase | Encoding::O200kHarmony | Encoding::Cl100kBase
        )
    }

    /// Encodes to token ids with tiktoken-rs.
    #[cfg(feature = "reference")]
    pub fn encode(self, text: &str) -> Vec<u32> {
        self.reference().encode_ordinary(text)
    }
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(all(test, feature = "reference"))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn r50k_only(e: Encoding) -> Option<RankTable> {
        if e != Encoding::R50kBase {
            return None;
        }
        RankTable::load(e, RankTable::export(e).ok()?).ok()
    }

    /// A loader is asked on first use, only for what it has, and counts stay tiktoken's.
    #[test]
    fn loader_supplies_tables_on_first_use() {
        assert!(Encoding::set_loader(r50k_only));
        assert!(Encoding::P50kBase.installed().is_none());
        let table = Encoding::R50kBase.installed().expect("loaded on first use");
        let text = "fn main() { println!(\"It's 12345 naïve 🙂\"); }\n";
        assert_eq!(
            table.count(text),
            Encoding::R50kBase.reference().count_ordinary(text)
        );
        assert!(std::ptr::eq(
            table,
            Encoding::R50kBase.installed().expect("kept")
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The exactness the composer relies on when it reuses indexed counts.
        #[test]
        fn counts_split_at_line_starts(
            a in "[ -~\t\r\n\u{a0}\u{2028}é漢😀]{0,60}",
            b in "[ -~\t\r\n\u{a0}é漢😀]{0,60}",
            indent in "[ \t]{0,6}",
            first in "[!-~é漢😀]",
        ) {
            let left = format!("{a}\n");
            // o200k's punctuation rule runs a newline on into `/` (see `compose::line_start`).
            prop_assume!(!indent.is_empty() || first != "/");
            let right = format!("{indent}{first}{b}");
            for e in [Encoding::O200kBase, Encoding::O200kHarmony, Encoding::Cl100kBase] {
                prop_assert!(e.splits_at_line_starts());
                let reference = e.reference();
                let whole = reference.count_ordinary(&format!("{left}{right}"));
                let parts = reference.count_ordinary(&left) + reference.count_ordinary(&right);
                prop_assert_eq!(whole, parts, "{:?}", e);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The one exception above has its own exception: after a word, `/` starts afresh.
        #[test]
        fn counts_split_before_slashes_after_a_word(
            a in "[ -~\t\r\n\u{a0}é漢😀]{0,60}",
            last in "[A-Za-z0-9]",
            b in "[ -~\t\r\n\u{a0}é漢😀]{0,60}",
        ) {
            let left = format!("{a}{last}\n");
            let right = format!("/{b}");
            for e in [Encoding::O200kBase, Encoding::O200kHarmony, Encoding::Cl100kBase] {
                let reference = e.reference();
                let whole = reference.count_ordinary(&format!("{left}{right}"));
                let parts = reference.count_ordinary(&left) + reference.count_ordinary(&right);
                prop_assert_eq!(whole, parts, "{:?}", e);
            }
        }
    }

    #[test]
    fn known_counts() {
        // Reference values from OpenAI's tiktoken.
        assert_eq!(Encoding::O200kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count("tiktoken is great!"), 6);
        assert_eq!(Encoding::O200kBase.count(""), 0);
        assert_eq!(
            Encoding::O200kBase.count("<|endoftext|>"),
            Encoding::O200kBase.encode("<|endoftext|>").len() as u32
        );
    }

    #[test]
    fn names_round_trip() {
        for e in Encoding::ALL {
            assert_eq!(Encoding::from_name(e.name()), Some(e));
        }
        assert_eq!(Encoding::from_name("gpt2"), None);
    }
}
