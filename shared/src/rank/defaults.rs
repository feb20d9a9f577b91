//! Questions about settings and defaults ("what is the default timeout?", "how many redirects
//! before it gives up?") are answered by a few kinds of code: a constant block at the top of a
//! module, a `Default` implementation or a function named for defaults or configuration, a
//! constructor that fills in its fields. Their words are the request's only in part (the value
//! is a number, the name an abbreviation), so plain BM25 ranks the code that *uses* the setting
//! above the line that sets it. When a request asks for a default, those chunks' scores are
//! raised by [`super::Weights::defaults`], and so are configuration files (JSON, YAML, TOML…).

use crate::chunk::ChunkKind;
use crate::index::IndexPack;
use crate::index::derived::ChunkBits;

use super::{Ranked, sort_best_first};

/// Phrases that ask for a default or a limit, matched in the lowercased request.
const CUES: [&str; 17] = [
    "default",
    "out of the box",
    "don't set",
    "don't pass",
    "don't specify",
    "don't configure",
    "don't choose",
    "don't pick",
    "do not set",
    "not set",
    "not configured",
    "unless",
    "maximum",
    "minimum",
    "how many",
    "how long",
    "limit",
];

/// Words that open a question even without a question mark ("how is the budget enforced").
const QUESTION_WORDS: [&str; 6] = ["what", "where", "which", "how", "why", "who"];

/// Whether `query` is a question rather than a change request: it ends with a question mark
/// or opens with a question word. Words that also open commit messages ("When route is
/// registered…", "Do not panic…", "Should…") make a question only with the question mark. A
/// commit-style request that mentions a default ("change the default port") is about the code
/// that uses it as much as the line that sets it.
pub fn is_question(query: &str) -> bool {
    let trimmed = query.trim();
    trimmed.ends_with('?')
        || trimmed
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .is_some_and(|w| QUESTION_WORDS.iter().any(|q| w.eq_ignore_ascii_case(q)))
}

/// Whether `query` is a question ([`is_question`]) for a default value, a limit or a setting
/// left unset.
pub fn asks_for_defaults(query: &str) -> bool {
    if !is_question(query) {
        return false;
    }
    let lower = query.to_lowercase().replace('’', "'");
    CUES.iter().any(|c| lower.contains(c))
}

/// Name parts of a chunk that holds defaults: a `Default` implementation, a function named for
/// defaults, configuration or options, a constructor.
const NAMES: [&str; 7] = [
    "default",
    "config",
    "setting",
    "option",
    "__init__",
    "constructor",
    "init",
];

/// Whether a chunk of `kind` defining `symbol` is where defaults are usually set.
pub fn holds_defaults(kind: ChunkKind, symbol: Option<&str>) -> bool {
    if kind == ChunkKind::Block {
        // Code between definitions: a module's constants and settings.
        return true;
    }
    let Some(symbol) = symbol else {
        return false;
    };
    let lower = symbol.to_ascii_lowercase();
    let last = lower
        .rsplit(['.', ':', ' ', ','])
        .find(|p| !p.is_empty())
        .unwrap_or(&lower);
    last == "new" || NAMES.iter().any(|n| lower.contains(n))
}

/// Whether a file of language label `language` ([`crate::chunk::Language::label`]) is a
/// configuration file, whose every line is a setting.
pub fn is_configuration(language: &str) -> bool {
    [
        "json",
        "yaml",
        "yml",
        "toml",
        "ini",
        "cfg",
        "conf",
        "properties",
        "env",
    ]
    .iter()
    .any(|c| language.eq_ignore_ascii_case(c))
}

/// Raises the score of every candidate with lexical evidence that [`holds_defaults`] by the
/// factor `boost` (kept in its prior), when `query` [`asks_for_defaults`]; `ranked` stays best
/// first. A boost of 1 changes nothing.
pub fn boost_defaults(pack: &IndexPack, ranked: &mut [Ranked], query: &str, boost: f32) {
    if boost == 1.0 || !asks_for_defaults(query) {
        return;
    }
    let mut changed = false;
    let holders = pack.derived().holds_defaults(|| {
        ChunkBits::from_fn(pack.chunks.len(), |c| {
            let chunk = &pack.chunks[c];
            pack.files
                .get(chunk.file as usize)
                .is_some_and(|f| is_configuration(&f.language))
                || holds_defaults(chunk.kind, chunk.symbol.as_deref())
        })
    });
    for r in ranked.iter_mut() {
        if r.signals.lexical > 0.0 && holders.get(r.chunk as usize) {
            r.score *= boost;
            r.signals.prior *= boost;
            changed = true;
        }
    }
    if changed {
        sort_best_first(ranked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_about_defaults_and_limits_are_recognised() {
        for q in [
            "What is the default timeout?",
            "how many redirects does it follow before giving up?",
            "Which theme is used if I don’t pick one?",
            "what is the maximum body size",
        ] {
            assert!(asks_for_defaults(q), "{q}");
        }
        for q in [
            "where are routes matched?",
            "fix the crash in the parser",
            "Change the default port to 8080",
        ] {
            assert!(!asks_for_defaults(q), "{q}");
        }
    }

    #[test]
    fn commit_openings_are_questions_only_with_a_question_mark() {
        for q in [
            "how is the token budget enforced",
            "Where are routes matched",
            "When is the cache flushed?",
            "does the client retry on 503?",
        ] {
            assert!(is_question(q), "{q}");
        }
        for q in [
            "When route is registered with empty path it is normalized to `/`.",
            "Do not use LFS64 functions on linux/musl",
            "Should not panic on an empty body",
            "fix the crash in the parser",
        ] {
            assert!(!is_question(q), "{q}");
        }
    }

    #[test]
    fn constants_constructors_and_default_functions_hold_defaults() {
        assert!(holds_defaults(ChunkKind::Block, None));
        assert!(holds_defaults(ChunkKind::Method, Some("Console.__init__")));
        assert!(holds_defaults(
            ChunkKind::Function,
            Some("defaultConfiguration")
        ));
        assert!(holds_defaults(ChunkKind::Impl, Some("Default for Options")));
        assert!(holds_defaults(ChunkKind::Function, Some("Client::new")));
        assert!(!holds_defaults(ChunkKind::Function, Some("render_table")));
        assert!(!holds_defaults(ChunkKind::Function, None));
        assert!(is_configuration("toml") && is_configuration("yaml"));
        assert!(!is_configuration("rust"));
    }
}
