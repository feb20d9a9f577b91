//! What a repository path says about its file before anything reads it: a test, a document, or
//! a file that is rarely the answer to anything (built output, someone else's code kept in the
//! tree, seeds and snapshots).
//!
//! Ranking reads these for every candidate of every request, and the index's path tables
//! ([`crate::index::path_tables::PathTables`]) keep them per file, so they are plain string tests that
//! allocate at most one lowercase copy of the path. They live apart from `rank` so that the
//! index may use them without importing the ranker.

use serde::{Deserialize, Serialize};

/// Test code by the usual conventions of the indexed languages.
pub fn is_test_path(path: &str) -> bool {
    is_test_lower(&path.to_ascii_lowercase())
}

/// [`is_test_path`] of a path already lowercase (ASCII): a version's tables test every path
/// three ways, one copy each was an allocation per file per test.
pub(crate) fn is_test_lower(lower: &str) -> bool {
    debug_assert!(!lower.bytes().any(|b| b.is_ascii_uppercase()), "{lower}");
    let name = lower.rsplit('/').next().unwrap_or(lower);
    const DIRS: [&str; 9] = [
        "/test/",
        "/tests/",
        "/testing/",
        "/__tests__/",
        "/spec/",
        "/specs/",
        "/testdata/",
        "/fixtures/",
        "/e2e/",
    ];
    in_dir(lower, &DIRS)
        || name.starts_with("test_")
        || name.ends_with("_test.go")
        || name.ends_with("_test.py")
        || name.ends_with("_tests.rs")
        || name == "tests.rs"
        || name == "conftest.py"
        || [".test.", ".spec."].iter().any(|m| name.contains(m))
}

/// Prose rather than code: Markdown, text, changelogs.
pub fn is_doc_path(path: &str) -> bool {
    is_doc_lower(&path.to_ascii_lowercase())
}

/// [`is_doc_path`] of a path already lowercase (ASCII).
pub(crate) fn is_doc_lower(lower: &str) -> bool {
    debug_assert!(!lower.bytes().any(|b| b.is_ascii_uppercase()), "{lower}");
    let name = lower.rsplit('/').next().unwrap_or(lower);
    [".md", ".markdown", ".mdx", ".txt", ".rst", ".adoc"]
        .iter()
        .any(|e| name.ends_with(e))
        || name.starts_with("changelog")
        || name.starts_with("changes")
        || is_manual_page(name)
        || in_dir(lower, &["/docs/"])
}

/// A Unix manual page (`fd.1`, `git-config.5`): prose about a program, in roff.
fn is_manual_page(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, section)) => {
            !stem.is_empty()
                && section.len() == 1
                && section.bytes().all(|b| (b'1'..=b'9').contains(&b))
        }
        None => false,
    }
}

/// Why a file is set aside from code context: it is indexed and can be named or searched, but
/// a request that does not name it is rarely answered by it, and a small budget spent on it is
/// lost to the source.
///
/// The pack stores it by each variant's place here ([`crate::index::path_tables`]): a new
/// reason goes last, and reordering them is a new format version (as is any change to the tests
/// in this module: the pack keeps their answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SetAside {
    /// Built from the source: a site build, a bundle, a compiled or declaration copy.
    Generated,
    /// Another project's code kept in the tree (`vendor/`, `third_party/`, bundled copies).
    Vendored,
    /// Inputs and expected outputs rather than code: fuzz seeds and corpora, snapshots, and
    /// data files of a line or two.
    Data,
}

impl SetAside {
    /// The reason as the answer's `left out` names it.
    pub fn reason(self) -> &'static str {
        match self {
            SetAside::Generated => "generated",
            SetAside::Vendored => "vendored",
            SetAside::Data => "data",
        }
    }
}

/// Folders whose files are built output. Not `build/` or `out/`: some projects keep source
/// there (bat's build scripts live in `build/`), and a demoted source file costs more than a
/// built one that ranks.
const GENERATED_DIRS: [&str; 4] = ["/dist/", "/_site/", "/.next/", "/__generated__/"];

/// Folders that hold another project's code.
const VENDORED_DIRS: [&str; 7] = [
    "/vendor/",
    "/vendored/",
    "/third_party/",
    "/third-party/",
    "/thirdparty/",
    "/node_modules/",
    "/bundled/",
];

/// Folders of inputs and expected outputs.
const DATA_DIRS: [&str; 7] = [
    "/seeds/",
    "/corpus/",
    "/corpora/",
    "/__snapshots__/",
    "/snapshots/",
    "/golden/",
    "/regressions/",
];

/// Whether `lower` (a lowercase path) is under one of `dirs` (each `/name/`), at the top or
/// deeper.
fn in_dir(lower: &str, dirs: &[&str]) -> bool {
    dirs.iter()
        .any(|d| lower.starts_with(&d[1..]) || lower.contains(d))
}

/// What the path alone says about setting the file aside ([`SetAside`]); the index adds
/// [`SetAside::Data`] for tiny files without a language ([`is_tiny_data`]).
pub fn set_aside_by_path(path: &str) -> Option<SetAside> {
    set_aside_by_lower(&path.to_ascii_lowercase())
}

/// [`set_aside_by_path`] of a path already lowercase (ASCII).
pub(crate) fn set_aside_by_lower(lower: &str) -> Option<SetAside> {
    debug_assert!(!lower.bytes().any(|b| b.is_ascii_uppercase()), "{lower}");
    let name = lower.rsplit('/').next().unwrap_or(lower);
    if in_dir(lower, &VENDORED_DIRS) {
        Some(SetAside::Vendored)
    } else if in_dir(lower, &DATA_DIRS) || name.ends_with(".snap") {
        Some(SetAside::Data)
    } else if in_dir(lower, &GENERATED_DIRS)
        || [".min.js", ".min.css", ".bundle.js", ".map"]
            .iter()
            .any(|e| name.ends_with(e))
        || is_site_page(lower, name)
    {
        Some(SetAside::Generated)
    } else {
        None
    }
}

/// A page of a built documentation site: HTML under a site, docs or API-docs folder.
fn is_site_page(lower: &str, name: &str) -> bool {
    const SITE_DIRS: [&str; 8] = [
        "/site/",
        "/_build/",
        "/docs/",
        "/doc/",
        "/public/",
        "/javadoc/",
        "/apidocs/",
        "/html/",
    ];
    (name.ends_with(".html") || name.ends_with(".htm")) && in_dir(lower, &SITE_DIRS)
}

/// The tokens under which a file that no grammar reads is taken for data (a seed, a one-line
/// fixture) rather than a configuration worth reading.
pub const TINY_DATA_TOKENS: u32 = 24;

/// Whether a file named `name` (lowercase, no folder) of `tokens()` tokens whose language label is
/// `language` (a grammar's name, else the extension, else `text`:
/// [`crate::chunk::Language::label`]) is a tiny data file: a fuzz seed or a one-line input
/// without an extension, or a small file whose extension says data. Text, configuration and
/// code count as what they are however small, and so do the build files that have no
/// extension.
pub fn is_tiny_data(name: &str, language: &str, tokens: impl FnOnce() -> u32) -> bool {
    const DATA: [&str; 11] = [
        "text", "bin", "dat", "data", "in", "out", "raw", "seed", "input", "expected", "golden",
    ];
    const NAMED: [&str; 9] = [
        "makefile",
        "dockerfile",
        "license",
        "readme",
        "procfile",
        "gemfile",
        "justfile",
        "rakefile",
        "codeowners",
    ];
    // The tokens last: adding up a file's chunks reads their records, and most files are
    // ruled out by their language alone.
    DATA.iter().any(|d| language.eq_ignore_ascii_case(d))
        && !name.starts_with('.')
        && !NAMED.iter().any(|n| name.starts_with(n))
        && tokens() < TINY_DATA_TOKENS
}

/// `.d.ts` files whose source, a `.ts`/`.tsx`/`.js` file of the same stem, is in the tree:
/// declarations emitted from it. `paths` is every path of the repository.
pub fn declaration_copies<'a>(paths: impl Iterator<Item = &'a str> + Clone) -> Vec<bool> {
    let stem = |p: &'a str| -> Option<(&'a str, bool)> {
        let name = p.rsplit('/').next().unwrap_or(p);
        if let Some(s) = name.strip_suffix(".d.ts") {
            Some((s, true))
        } else {
            [".ts", ".tsx", ".js", ".mjs"]
                .iter()
                .find_map(|e| name.strip_suffix(e))
                .map(|s| (s, false))
        }
    };
    let sources: rustc_hash::FxHashSet<&str> = paths
        .clone()
        .filter_map(stem)
        .filter(|(_, declaration)| !declaration)
        .map(|(s, _)| s)
        .collect();
    paths
        .map(|p| matches!(stem(p), Some((s, true)) if sources.contains(s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_and_doc_paths() {
        for p in [
            "tests/cli.rs",
            "src/foo_test.go",
            "pkg/__tests__/a.js",
            "lib/a.spec.ts",
            "test_core.py",
            "a/testdata/x.json",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["src/testing_utils_impl.rs", "src/contest.rs", "latest/x.go"] {
            assert!(!is_test_path(p), "{p}");
        }
        for p in [
            "README.md",
            "CHANGELOG",
            "docs/guide.html",
            "notes.txt",
            "doc/fd.1",
        ] {
            assert!(is_doc_path(p), "{p}");
        }
        assert!(!is_doc_path("src/main.rs"));
        assert!(!is_doc_path("src/v2.0"));
    }

    #[test]
    fn built_vendored_and_data_paths_are_set_aside() {
        let cases = [
            ("dist/index.js", Some(SetAside::Generated)),
            ("packages/a/dist/lib.js", Some(SetAside::Generated)),
            ("build/syntax_mapping.rs", None),
            ("static/app.min.js", Some(SetAside::Generated)),
            ("_site/api/index.html", Some(SetAside::Generated)),
            ("docs/api/Router.html", Some(SetAside::Generated)),
            ("site/index.html", Some(SetAside::Generated)),
            ("templates/index.html", None),
            ("vendor/github.com/x/y.go", Some(SetAside::Vendored)),
            (
                "include/spdlog/fmt/bundled/core.h",
                Some(SetAside::Vendored),
            ),
            ("fuzz/seeds/chunk/a", Some(SetAside::Data)),
            ("tests/__snapshots__/a.snap", Some(SetAside::Data)),
            ("src/build.rs", None),
            ("src/builder/mod.rs", None),
            ("src/outline.rs", None),
            ("lib/router.js", None),
        ];
        for (p, want) in cases {
            assert_eq!(set_aside_by_path(p), want, "{p}");
        }
    }

    #[test]
    fn tiny_files_without_a_language_are_data_but_configuration_is_not() {
        assert!(is_tiny_data("s4_e1", "text", || 3));
        assert!(is_tiny_data("case.in", "in", || 10));
        assert!(!is_tiny_data("s4_e1", "text", || 400));
        assert!(!is_tiny_data("notes.txt", "txt", || 10));
        assert!(!is_tiny_data("cargo.toml", "toml", || 10));
        assert!(!is_tiny_data("makefile", "text", || 10));
        assert!(!is_tiny_data(".gitignore", "text", || 10));
        assert!(!is_tiny_data("lib.rs", "rust", || 5));
    }

    #[test]
    fn declarations_of_sources_in_the_tree_are_copies() {
        let paths = ["src/a.ts", "types/a.d.ts", "types/global.d.ts", "lib/b.js"];
        assert_eq!(
            declaration_copies(paths.iter().copied()),
            vec![false, true, false, false]
        );
    }
}
