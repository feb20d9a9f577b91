use proptest::prelude::*;

use super::*;

fn chunks(text: &str, lang: Language) -> Vec<ChunkSpan> {
    chunk_text(text, lang, &ChunkOptions::default())
}

fn small_opts() -> ChunkOptions {
    ChunkOptions {
        max_bytes: 300,
        min_bytes: 60,
        window_lines: 8,
        overlap_lines: 2,
    }
}

/// Every byte is inside some chunk (unless the text is all whitespace), and chunks are
/// well-formed.
fn assert_covers(text: &str, spans: &[ChunkSpan]) {
    let lines = LineIndex::new(text);
    let mut covered = vec![false; text.len()];
    for s in spans {
        assert!(
            s.byte_start < s.byte_end && s.byte_end <= text.len(),
            "{s:?}"
        );
        assert!(text.is_char_boundary(s.byte_start) && text.is_char_boundary(s.byte_end));
        assert_eq!(s.start_line, lines.line_of(s.byte_start));
        assert_eq!(s.end_line, lines.line_of(s.byte_end - 1));
        assert!(s.start_line <= s.end_line);
        covered[s.byte_start..s.byte_end]
            .iter_mut()
            .for_each(|c| *c = true);
    }
    let blank = text.bytes().all(|b| b.is_ascii_whitespace());
    for (i, b) in text.bytes().enumerate() {
        assert!(
            (blank && b.is_ascii_whitespace()) || covered[i],
            "byte {i} ({:?}) not covered",
            b as char
        );
    }
}

#[cfg(feature = "syntax")]
#[test]
fn rust_functions_and_impls_with_doc_comments() {
    let src = r#"use std::fmt;

/// Adds two numbers.
/// Carefully.
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[derive(Debug)]
pub struct Point { x: i32, y: i32 }

impl Point {
    /// Makes a point.
    pub fn new(x: i32, y: i32) -> Self { Self { x, y } }
}
"#;
    let opts = ChunkOptions {
        min_bytes: 0,
        ..ChunkOptions::default()
    };
    let spans = chunk_text(src, Language::Rust, &opts);
    assert_covers(src, &spans);
    let add = spans
        .iter()
        .find(|s| s.symbol.as_deref() == Some("add"))
        .expect("add chunk");
    assert_eq!(add.kind, ChunkKind::Function);
    assert_eq!(add.start_line, 3, "doc comment belongs to the function");
    assert_eq!(add.end_line, 8, "the blank line after it too");
    let point = spans
        .iter()
        .find(|s| s.symbol.as_deref() == Some("Point") && s.kind == ChunkKind::Struct);
    assert_eq!(
        point.map(|p| p.start_line),
        Some(9),
        "attribute belongs to the struct"
    );
    assert!(spans.iter().any(|s| s.kind == ChunkKind::Impl));
}

#[cfg(feature = "syntax")]
#[test]
fn oversized_impl_is_opened_into_methods() {
    let mut src = String::from("struct S;\n\nimpl S {\n");
    for i in 0..12 {
        src.push_str(&format!(
            "    /// Method {i}.\n    pub fn method_{i}(&self) -> u32 {{\n        let v = {i};\n        v * 2 + {i}\n    }}\n\n"
        ));
    }
    src.push_str("}\n");
    let spans = chunk_text(&src, Language::Rust, &small_opts());
    assert_covers(&src, &spans);
    assert!(
        spans.iter().all(|s| s.byte_end - s.byte_start <= 300),
        "{spans:#?}"
    );
    assert!(
        spans.iter().any(|s| s
            .symbol
            .as_deref()
            .is_some_and(|n| n.contains("S::method_3"))),
        "{spans:#?}"
    );
}

#[cfg(feature = "syntax")]
#[test]
fn oversized_function_is_split_inside() {
    let mut src = String::from("def big():\n    \"\"\"Doc.\"\"\"\n");
    for i in 0..40 {
        src.push_str(&format!(
            "    value_{i} = compute({i})\n    print(value_{i})\n"
        ));
    }
    src.push_str("\n\ndef small():\n    return 1\n");
    let spans = chunk_text(&src, Language::Python, &small_opts());
    assert_covers(&src, &spans);
    assert!(spans.len() > 3);
    assert!(spans.iter().all(|s| s.byte_end - s.byte_start <= 300));
    assert!(
        spans
            .iter()
            .filter(|s| s.symbol.as_deref() == Some("big"))
            .count()
            > 2
    );
}

#[cfg(feature = "syntax")]
#[test]
fn every_grammar_finds_its_definitions() {
    let cases: &[(Language, &str, &str)] = &[
        (
            Language::Python,
            "import os\n\nclass Greeter:\n    def hello(self):\n        return 'hi'\n",
            "Greeter",
        ),
        (
            Language::Go,
            "package main\n\n// Run runs.\nfunc Run() int {\n\treturn 1\n}\n",
            "Run",
        ),
        (
            Language::JavaScript,
            "const x = 1;\n\nfunction greet(name) {\n  return `hi ${name}`;\n}\n",
            "greet",
        ),
        (
            Language::TypeScript,
            "export interface Shape { area(): number }\n\nexport function area(s: Shape): number { return s.area(); }\n",
            "area",
        ),
        (
            Language::Tsx,
            "export function App() {\n  return <div>hi</div>;\n}\n",
            "App",
        ),
        (
            Language::Java,
            "package a;\n\npublic class Main {\n  public static void main(String[] args) {}\n}\n",
            "Main",
        ),
        (
            Language::C,
            "#include <stdio.h>\n\nstatic int square(int x) {\n  return x * x;\n}\n",
            "square",
        ),
        (
            Language::Cpp,
            "namespace ns {\nclass Box {\n public:\n  int size() const { return 1; }\n};\n}\n",
            "ns",
        ),
    ];
    let opts = ChunkOptions {
        min_bytes: 0,
        ..ChunkOptions::default()
    };
    for (lang, src, want) in cases {
        let spans = chunk_text(src, *lang, &opts);
        assert_covers(src, &spans);
        assert!(
            spans
                .iter()
                .any(|s| s.symbol.as_deref().is_some_and(|n| n.contains(want))),
            "{lang:?}: no `{want}` in {spans:#?}"
        );
    }
}

#[cfg(feature = "syntax")]
#[test]
fn tiny_siblings_are_merged() {
    let src: String = (0..20).map(|i| format!("fn f{i}() {{}}\n")).collect();
    let spans = chunks(&src, Language::Rust);
    assert_covers(&src, &spans);
    assert!(spans.len() < 5, "{spans:#?}");
}

#[test]
fn markdown_sections() {
    let mut src = String::from(
        "# Title\n\nintro\n\n## Install\n\n```sh\n# not a heading\ncargo build\n```\n\n## Use\n\n",
    );
    src.push_str(&"Some words about use. ".repeat(40));
    src.push('\n');
    let opts = ChunkOptions {
        min_bytes: 10,
        ..ChunkOptions::default()
    };
    let spans = chunk_text(&src, Language::Markdown, &opts);
    assert_covers(&src, &spans);
    let titles: Vec<_> = spans.iter().filter_map(|s| s.symbol.clone()).collect();
    assert_eq!(titles, ["Title", "Install", "Use"]);
}

#[test]
fn windows_overlap_and_cut_long_lines() {
    let src: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let spans = chunk_text(&src, Language::Other, &small_opts());
    assert_covers(&src, &spans);
    assert_eq!(spans[0].start_line, 1);
    assert_eq!(spans[0].end_line, 8);
    assert_eq!(spans[1].start_line, 7, "two lines of overlap");
    let long = "é".repeat(1000);
    let spans = chunk_text(&long, Language::Other, &small_opts());
    assert_covers(&long, &spans);
    assert!(spans.len() >= 6 && spans.iter().all(|s| s.byte_end - s.byte_start <= 300));
}

fn arb_source() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("fn f() {".to_string()),
        Just("}".to_string()),
        Just("    let x = 1;".to_string()),
        Just("/// doc".to_string()),
        Just("impl A {".to_string()),
        Just("def g():".to_string()),
        Just("class C:".to_string()),
        Just("# Heading".to_string()),
        Just("```".to_string()),
        Just(String::new()),
        "[a-zA-Z_{}();: ]{0,40}",
        "\\PC{0,20}",
    ];
    prop::collection::vec(line, 0..80).prop_map(|v| v.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn chunks_cover_every_byte(src in arb_source(), lang in prop::sample::select(vec![
        Language::Rust, Language::Python, Language::Go, Language::JavaScript, Language::TypeScript,
        Language::Tsx, Language::Java, Language::C, Language::Cpp, Language::Markdown, Language::Other,
    ])) {
        let spans = chunk_text(&src, lang, &small_opts());
        assert_covers(&src, &spans);
    }
}

#[test]
fn markdown_fences_close_only_on_a_matching_fence() {
    let src = "# A\n\n````md\n```\n# not a heading\n```\n````\n\n# B\n\ntext\n";
    let opts = ChunkOptions {
        min_bytes: 0,
        ..ChunkOptions::default()
    };
    let spans = chunk_text(src, Language::Markdown, &opts);
    let titles: Vec<_> = spans.iter().filter_map(|s| s.symbol.clone()).collect();
    assert_eq!(titles, ["A", "B"]);
}

#[cfg(feature = "syntax")]
#[test]
fn identifiers_come_from_the_syntax_tree_not_comments_or_strings() {
    let text = "fn run(store: &Store) {\n    // open_later is only mentioned\n    let v = store.open_all(\"close_now\");\n    helper::finish(v)\n}\n";
    let names = super::identifiers(text, Language::Rust);
    for used in ["run", "store", "Store", "open_all", "helper", "finish"] {
        assert!(names.iter().any(|n| n == used), "{used} in {names:?}");
    }
    for absent in ["open_later", "close_now", "v"] {
        assert!(!names.iter().any(|n| n == absent), "{absent} in {names:?}");
    }
    // Python, and a fragment (a method body cut out of its class) still parses.
    let names = super::identifiers(
        "    def go(self):\n        return compute_all(self.items)\n",
        Language::Python,
    );
    assert!(names.iter().any(|n| n == "compute_all"), "{names:?}");
    // No grammar: identifier-shaped words.
    let names = super::identifiers(
        "call do_work(12) then 3x9 0xdeadbeef naïve_fn",
        Language::Other,
    );
    assert_eq!(names, ["call", "do_work", "then", "naïve_fn"]);
}

#[test]
fn blank_lines_between_chunks_belong_to_the_chunk_above() {
    let src = "\n\nfn a() {\n    1\n}\n\n\nfn b() {\n    2\n}\n\n";
    let opts = ChunkOptions {
        min_bytes: 0,
        ..ChunkOptions::default()
    };
    let spans = chunk_text(src, Language::Rust, &opts);
    let lines: Vec<(u32, u32)> = spans.iter().map(|s| (s.start_line, s.end_line)).collect();
    if cfg!(feature = "syntax") {
        // The file's leading blank lines go to the first chunk, each gap to the chunk above.
        assert_eq!(lines, [(1, 7), (8, 11)]);
    }
    assert_covers(src, &spans);
    assert_eq!(spans.last().map(|s| s.byte_end), Some(src.len()));
}

#[test]
fn lines_blanked_by_a_redaction_stay_out_of_chunks() {
    // The redaction keeps the key's lines (5 and 6), empty: they are not blank lines to take
    // in, or a chunk would cite the key's lines.
    let original = "fn a() {\n    1\n}\n-----BEGIN KEY-----\nabc\n-----END KEY-----\n\nfn b() {}\n";
    let redacted = "fn a() {\n    1\n}\n[REDACTED:key]\n\n\n\nfn b() {}\n";
    let opts = ChunkOptions {
        min_bytes: 0,
        window_lines: 3,
        overlap_lines: 0,
        ..ChunkOptions::default()
    };
    let covers = |spans: &[ChunkSpan], line: u32| {
        spans
            .iter()
            .any(|s| (s.start_line..=s.end_line).contains(&line))
    };
    for lang in [Language::Other, Language::Rust] {
        let plain = chunk_text(redacted, lang, &opts);
        assert!(
            covers(&plain, 5) && covers(&plain, 6),
            "{lang:?}: {plain:?}"
        );
        let spans = chunk_redacted(redacted, original, lang, &opts);
        assert!(
            !covers(&spans, 5) && !covers(&spans, 6),
            "{lang:?}: {spans:?}"
        );
        assert!(
            covers(&spans, 4) && covers(&spans, 8),
            "{lang:?}: {spans:?}"
        );
    }
}
