//! The chunker on every language: the first byte picks the language and the size limits, the
//! rest is the file. Spans must lie inside the text, on character boundaries, with their lines.
#![no_main]

use ctxgate_core::chunk::{ChunkOptions, Language, chunk_text, identifiers};
use libfuzzer_sys::fuzz_target;

const LANGUAGES: [Language; 11] = [
    Language::Rust,
    Language::Python,
    Language::Go,
    Language::JavaScript,
    Language::TypeScript,
    Language::Tsx,
    Language::Java,
    Language::C,
    Language::Cpp,
    Language::Markdown,
    Language::Other,
];

/// Small limits, so splitting and merging run on small inputs too.
const SMALL: ChunkOptions = ChunkOptions {
    max_bytes: 200,
    min_bytes: 40,
    window_lines: 8,
    overlap_lines: 2,
};

fuzz_target!(|data: &[u8]| {
    let [pick, rest @ ..] = data else {
        return;
    };
    let language = LANGUAGES[usize::from(*pick % 11)];
    let opts = if *pick >= 128 {
        SMALL
    } else {
        ChunkOptions::default()
    };
    let text = String::from_utf8_lossy(rest);
    let lines = text.split('\n').count() as u32;
    for span in chunk_text(&text, language, &opts) {
        assert!(
            span.byte_start < span.byte_end && span.byte_end <= text.len(),
            "{span:?}"
        );
        assert!(text.is_char_boundary(span.byte_start) && text.is_char_boundary(span.byte_end));
        assert!(
            span.start_line <= span.end_line && span.end_line <= lines,
            "{span:?}"
        );
    }
    let _ = identifiers(&text, language);
});
