//! What a request is about: its intent, the things it names, its scope and how hard it looks.
//!
//! Detection is deterministic and explainable: each intent has cue words and patterns with
//! weights, and the strongest wins (`feature_add` when nothing matches, the most common request).
//! Entities are what retrieval can act on directly: file paths, symbol-like identifiers, quoted
//! strings and error messages, and stack-trace frames.
//!
//! How each intent steers retrieval (applied by the ranker):
//! - `bug_fix` / `debug`: error strings and stack frames are searched verbatim, and the files of
//!   named frames count as mentioned;
//! - `test`: test files of the matched code are pulled in;
//! - `explain`: breadth first — more files, fewer pieces per file;
//! - `refactor` / `feature_add`: named symbols and their files first.

use serde::Serialize;

/// The kind of work a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// Fix a defect.
    BugFix,
    /// Add or extend behaviour.
    FeatureAdd,
    /// Understand code.
    Explain,
    /// Restructure without changing behaviour.
    Refactor,
    /// Write or fix tests.
    Test,
    /// Investigate an error or a trace.
    Debug,
}

/// How much of the repository a request touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One file.
    SingleFile,
    /// A few files.
    MultiFile,
    /// The whole repository.
    RepoWide,
}

/// A stack-trace frame named in the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Frame {
    /// File path as written.
    pub path: String,
    /// Line, when given.
    pub line: Option<u32>,
}

/// Things the request names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Entities {
    /// File paths (as written).
    pub paths: Vec<String>,
    /// Identifiers that look like code: snake_case, camelCase, `qualified::names`, `calls()`,
    /// anything in backticks.
    pub symbols: Vec<String>,
    /// Quoted strings and error messages.
    pub strings: Vec<String>,
    /// Stack-trace frames.
    pub frames: Vec<Frame>,
}

/// The analysis of a request.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QueryAnalysis {
    /// The detected intent.
    pub intent: Intent,
    /// How sure (0-1): the winner's share of all cue weight.
    pub confidence: f32,
    /// What the request names.
    pub entities: Entities,
    /// How much it touches.
    pub scope: Scope,
    /// How hard it looks (0-1).
    pub complexity: f32,
}

const CUES: &[(Intent, &[&str], f32)] = &[
    (
        Intent::BugFix,
        &[
            "fix",
            "fixes",
            "fixed",
            "bug",
            "broken",
            "wrong",
            "incorrect",
            "regression",
            "crash",
            "crashes",
            "issue",
            "doesn't",
            "not working",
            "fails",
            "failing",
            "typo",
        ],
        1.0,
    ),
    (
        Intent::Debug,
        &[
            "error",
            "exception",
            "traceback",
            "stack trace",
            "panic",
            "panicked",
            "debug",
            "segfault",
            "why does",
            "undefined",
            "null pointer",
        ],
        1.0,
    ),
    (
        Intent::Test,
        &[
            "test",
            "tests",
            "testing",
            "unit test",
            "coverage",
            "spec",
            "assert",
            "mock",
            "fixture",
        ],
        1.0,
    ),
    (
        Intent::Refactor,
        &[
            "refactor",
            "rename",
            "clean up",
            "cleanup",
            "simplify",
            "extract",
            "reorganize",
            "deduplicate",
            "move",
            "restructure",
            "chore",
        ],
        1.0,
    ),
    (
        Intent::Explain,
        &[
            "explain",
            "how does",
            "how do",
            "what is",
            "what does",
            "where is",
            "understand",
            "overview",
            "describe",
            "walk me through",
            "?",
        ],
        0.8,
    ),
    (
        Intent::FeatureAdd,
        &[
            "add",
            "adds",
            "implement",
            "support",
            "new",
            "create",
            "introduce",
            "allow",
            "enable",
            "feat",
            "feature",
        ],
        0.9,
    ),
];

const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "go", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx", "java", "c",
    "h", "cc", "cpp", "cxx", "hpp", "hh", "md", "toml", "json", "yaml", "yml", "rb", "php", "cs",
    "kt", "swift", "scala", "sh", "sql", "html", "css", "scss", "vue", "svelte", "lua", "ex",
    "exs",
];

/// Analyses a request.
pub fn analyze(query: &str) -> QueryAnalysis {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let entities = entities(query);
    let mut scores: Vec<(Intent, f32)> = CUES
        .iter()
        .map(|(intent, cues, weight)| {
            let hits = cues
                .iter()
                .filter(|cue| {
                    if cue.contains(' ') || **cue == "?" {
                        lower.contains(*cue)
                    } else {
                        words.contains(cue)
                    }
                })
                .count() as f32;
            (*intent, hits * weight)
        })
        .collect();
    // A conventional-commit prefix is a strong cue.
    for (prefix, intent) in [
        ("fix", Intent::BugFix),
        ("feat", Intent::FeatureAdd),
        ("refactor", Intent::Refactor),
        ("test", Intent::Test),
        ("docs", Intent::Explain),
    ] {
        let t = lower.trim_start();
        if t.starts_with(prefix)
            && t[prefix.len()..]
                .trim_start_matches(|c: char| {
                    c == '(' || c.is_alphanumeric() || c == ')' || c == '-' || c == '!'
                })
                .starts_with(':')
            && let Some(s) = scores.iter_mut().find(|s| s.0 == intent)
        {
            s.1 += 2.0;
        }
    }
    if !entities.frames.is_empty()
        && let Some(s) = scores.iter_mut().find(|s| s.0 == Intent::Debug)
    {
        s.1 += 2.0;
    }
    let total: f32 = scores.iter().map(|s| s.1).sum();
    let (intent, best) = scores
        .iter()
        .copied()
        .fold((Intent::FeatureAdd, 0.0f32), |acc, s| {
            if s.1 > acc.1 { s } else { acc }
        });
    let confidence = if total > 0.0 {
        (best / total).clamp(0.0, 1.0)
    } else {
        0.3
    };
    let files = {
        let mut f: Vec<&str> = entities
            .paths
            .iter()
            .map(String::as_str)
            .chain(entities.frames.iter().map(|f| f.path.as_str()))
            .collect();
        f.sort_unstable();
        f.dedup();
        f.len()
    };
    let broad = [
        "all ",
        "every",
        "everywhere",
        "across",
        "whole",
        "entire",
        "codebase",
        "repository",
        "project-wide",
    ]
    .iter()
    .any(|w| lower.contains(w));
    let scope = if broad {
        Scope::RepoWide
    } else if files >= 2 || entities.symbols.len() >= 3 {
        Scope::MultiFile
    } else if files == 1 || !entities.symbols.is_empty() {
        Scope::SingleFile
    } else {
        Scope::MultiFile
    };
    let length = (words.len() as f32 / 60.0).min(1.0);
    let breadth = match scope {
        Scope::SingleFile => 0.1,
        Scope::MultiFile => 0.5,
        Scope::RepoWide => 0.9,
    };
    let kind = match intent {
        Intent::Explain | Intent::Test => 0.2,
        Intent::BugFix | Intent::Debug => 0.4,
        Intent::Refactor | Intent::FeatureAdd => 0.6,
    };
    let complexity = (0.4 * length + 0.35 * breadth + 0.25 * kind).clamp(0.0, 1.0);
    QueryAnalysis {
        intent,
        confidence,
        entities,
        scope,
        complexity,
    }
}

/// Extracts paths, symbols, strings and frames.
pub fn entities(query: &str) -> Entities {
    let mut e = Entities::default();
    // Quoted strings and backticked code.
    for (open, close) in [('"', '"'), ('\'', '\''), ('`', '`')] {
        let mut rest = query;
        while let Some(a) = rest.find(open) {
            let after = &rest[a + open.len_utf8()..];
            let Some(b) = after.find(close) else { break };
            let inner = after[..b].trim();
            // An apostrophe inside a word (don't) is not a quote.
            let word_before = rest[..a].chars().last().is_some_and(char::is_alphanumeric);
            if !(open == '\'' && word_before) && inner.chars().count() >= 2 && !inner.contains('\n')
            {
                if open == '`' {
                    push_unique(&mut e.symbols, inner.trim_end_matches("()").to_string());
                } else {
                    push_unique(&mut e.strings, inner.to_string());
                }
            }
            rest = &after[b + close.len_utf8()..];
        }
    }
    // Error messages: the rest of a line after "error:" / "Error:" / "panicked at".
    for line in query.lines() {
        for marker in ["error:", "Error:", "ERROR:", "panicked at", "Exception:"] {
            if let Some(i) = line.find(marker) {
                let msg = line[i + marker.len()..]
                    .trim()
                    .trim_matches(|c| c == '\'' || c == '"');
                if msg.chars().count() >= 4 {
                    push_unique(&mut e.strings, msg.chars().take(200).collect());
                }
            }
        }
    }
    for raw in query.split(|c: char| {
        c.is_whitespace()
            || c == ','
            || c == ';'
            || c == '('
            || c == ')'
            || c == '"'
            || c == '\''
            || c == '`'
            || c == '['
            || c == ']'
    }) {
        let token = raw.trim_matches(|c: char| {
            c == '.' || c == ':' || c == '!' || c == '?' || c == '<' || c == '>'
        });
        if token.is_empty() {
            continue;
        }
        // path:line[:col] frames (src/main.rs:12:5, app.py:40)
        if let Some((path, line)) = split_frame(token) {
            e.frames.push(Frame {
                path: path.to_string(),
                line: Some(line),
            });
            push_unique(&mut e.paths, path.to_string());
            continue;
        }
        if looks_like_path(token) {
            push_unique(&mut e.paths, token.to_string());
            continue;
        }
        if looks_like_symbol(raw, token) {
            push_unique(&mut e.symbols, token.trim_end_matches("()").to_string());
        }
    }
    // Python frames: File "x.py", line 12
    let mut rest = query;
    while let Some(i) = rest.find("File \"") {
        let after = &rest[i + 6..];
        let Some(end) = after.find('"') else { break };
        let path = &after[..end];
        let line = after[end..]
            .strip_prefix("\", line ")
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|d| d.parse().ok());
        if looks_like_path(path) {
            e.frames.push(Frame {
                path: path.to_string(),
                line,
            });
            push_unique(&mut e.paths, path.to_string());
        }
        rest = &after[end..];
    }
    e
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !s.is_empty() && !v.contains(&s) {
        v.push(s);
    }
}

fn split_frame(token: &str) -> Option<(&str, u32)> {
    let mut parts = token.splitn(3, ':');
    let path = parts.next()?;
    let line: u32 = parts.next()?.parse().ok()?;
    looks_like_path(path).then_some((path, line))
}

fn looks_like_path(token: &str) -> bool {
    if token.contains("://") || token.len() < 3 {
        return false;
    }
    let name = token.rsplit('/').next().unwrap_or(token);
    let has_ext = name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && CODE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
    });
    let slashy = token.contains('/')
        && token.split('/').filter(|s| !s.is_empty()).count() >= 2
        && token
            .chars()
            .all(|c| c.is_alphanumeric() || "/._-".contains(c));
    has_ext || slashy
}

fn looks_like_symbol(raw: &str, token: &str) -> bool {
    let t = token.trim_end_matches("()");
    if t.len() < 3
        || !t
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    {
        return false;
    }
    if !t
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '.')
    {
        return false;
    }
    let call = raw.contains("()") || raw.ends_with('(');
    let snake = t.contains('_') && t.chars().any(char::is_alphabetic);
    let camel = t.chars().skip(1).any(char::is_uppercase) && t.chars().any(char::is_lowercase);
    let qualified = t.contains("::")
        || (t.contains('.') && !t.ends_with('.') && t.split('.').all(|p| !p.is_empty()));
    call || snake || camel || qualified
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents() {
        assert_eq!(
            analyze("fix: crash when the config file is empty").intent,
            Intent::BugFix
        );
        assert_eq!(
            analyze("feat(parser): add support for raw strings").intent,
            Intent::FeatureAdd
        );
        assert_eq!(
            analyze("How does the budget selection work?").intent,
            Intent::Explain
        );
        assert_eq!(
            analyze("refactor: extract the retry loop into a helper").intent,
            Intent::Refactor
        );
        assert_eq!(
            analyze("add unit tests for parse_config").intent,
            Intent::Test
        );
        assert_eq!(
            analyze("thread 'main' panicked at src/store.rs:42:9: called unwrap on None").intent,
            Intent::Debug
        );
        assert_eq!(analyze("something something").intent, Intent::FeatureAdd);
    }

    #[test]
    fn entities_are_found() {
        let e = entities(
            "Fix `parseConfig()` in src/config/load.rs and context.go; error: \"invalid header value\" at app/server.py:40 (see HttpClient::send and retry_count)",
        );
        assert!(e.symbols.contains(&"parseConfig".to_string()), "{e:?}");
        assert!(e.symbols.contains(&"HttpClient::send".to_string()), "{e:?}");
        assert!(e.symbols.contains(&"retry_count".to_string()), "{e:?}");
        assert!(e.paths.contains(&"src/config/load.rs".to_string()), "{e:?}");
        assert!(e.paths.contains(&"context.go".to_string()), "{e:?}");
        assert!(
            e.strings.contains(&"invalid header value".to_string()),
            "{e:?}"
        );
        assert_eq!(
            e.frames,
            vec![Frame {
                path: "app/server.py".into(),
                line: Some(40)
            }]
        );
        let py =
            entities("Traceback:\n  File \"click/core.py\", line 1081, in main\nTypeError: bad");
        assert_eq!(
            py.frames,
            vec![Frame {
                path: "click/core.py".into(),
                line: Some(1081)
            }]
        );
        let none = entities("make it faster, don't break things. See https://x.io/a/b");
        assert!(
            none.paths.is_empty() && none.symbols.is_empty() && none.strings.is_empty(),
            "{none:?}"
        );
    }

    #[test]
    fn scope_and_complexity() {
        let one = analyze("fix the typo in README.md");
        assert_eq!(one.scope, Scope::SingleFile);
        let wide = analyze("rename the Logger type across the whole codebase");
        assert_eq!(wide.scope, Scope::RepoWide);
        assert!(wide.complexity > one.complexity);
        assert!((0.0..=1.0).contains(&wide.confidence));
    }
}
