//! The chunker on every language: the first byte picks the language and the size limits, the
//! rest is the file. Spans must lie inside the text, on character boundaries, with their lines,
//! and together cover every byte; chunking the file's redaction (`chunk_redacted`) must hold the
//! same shape and never take in a line the redaction blanked.
#![no_main]

use ctxgate_core::chunk::{ChunkOptions, Language, chunk_redacted, chunk_text, identifiers};
use ctxgate_core::secrets::redact_source;
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
    let spans = chunk_text(&text, language, &opts);
    for span in &spans {
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
    if !text.bytes().all(|b| b.is_ascii_whitespace()) {
        let mut covered = vec![false; text.len()];
        for s in &spans {
            covered[s.byte_start..s.byte_end]
                .iter_mut()
                .for_each(|c| *c = true);
        }
        assert!(covered.iter().all(|&c| c), "a byte in no chunk: {spans:?}");
    }
    let redacted = redact_source(&text);
    if redacted != text {
        let original: Vec<&str> = text.split('\n').collect();
        let lines: Vec<&str> = redacted.split('\n').collect();
        assert_eq!(original.len(), lines.len(), "the redaction keeps the lines");
        let white = |l: &str| l.bytes().all(|b| b.is_ascii_whitespace());
        for span in chunk_redacted(&redacted, &text, language, &opts) {
            assert!(span.byte_start < span.byte_end && span.byte_end <= redacted.len());
            assert!(redacted.is_char_boundary(span.byte_start));
            assert!(redacted.is_char_boundary(span.byte_end));
            // Blank lines a chunk takes in at either end are blank in the original too: the
            // lines a redaction blanked are never taken in as blank lines.
            let first = span.start_line as usize - 1;
            let last = (span.end_line as usize - 1).min(lines.len() - 1);
            let ends = (first..=last)
                .take_while(|&l| white(lines[l]))
                .chain((first..=last).rev().take_while(|&l| white(lines[l])));
            for l in ends {
                assert!(
                    white(original[l]),
                    "{span:?} takes in line {} the redaction blanked",
                    l + 1
                );
            }
        }
    }
    let _ = identifiers(&text, language);
});
