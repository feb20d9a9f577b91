//! Splitting text into search terms.

/// Longest identifier kept whole; longer runs are usually data, not names.
const MAX_TERM: usize = 64;

/// Calls `emit` for every term of `text`: each identifier lowercased, then its parts when it has
/// more than one. Terms shorter than two characters are dropped.
pub fn for_each_term(text: &str, mut emit: impl FnMut(&str)) {
    let mut buf = String::with_capacity(64);
    let mut part = String::with_capacity(64);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !is_ident_byte(b) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_ident_byte(bytes[i]) {
            i += 1;
        }
        // Identifiers made only of digits are numbers: skipped.
        let ident = &text[start..i];
        if ident.bytes().all(|c| c.is_ascii_digit()) || ident.len() > MAX_TERM {
            continue;
        }
        let ident = ident.trim_matches('_');
        if ident.len() < 2 {
            continue;
        }
        buf.clear();
        lower_into(ident, &mut buf);
        emit(stem(&buf));
        split_parts(ident, &mut part, &mut |t: &str| emit(stem(t)), &buf);
    }
}

/// A light English stemmer for the words of prose and identifiers (`options` → `option`,
/// `parsing`/`parsed`/`parse` → `pars`), applied alike to indexed text and to queries so that a
/// commit message's "fix parsing of flags" meets `parse_flag`. Only lowercase ASCII words of
/// five letters or more are touched, and only plural, `-ing`, `-ed` and a final `-e` are
/// stripped: conservative enough never to merge unrelated identifiers often, which matters more
/// here than reaching every inflection.
pub fn stem(word: &str) -> &str {
    let b = word.as_bytes();
    if b.len() < 5 || !b.iter().all(u8::is_ascii_lowercase) {
        return word;
    }
    let has_vowel = |s: &[u8]| s.iter().any(|c| b"aeiouy".contains(c));
    let mut w = word;
    if let Some(x) = w.strip_suffix("ies") {
        // `entries` → `entr`, like `entry` below.
        return &word[..x.len()];
    }
    if w.ends_with("sses") {
        w = &w[..w.len() - 2];
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w = &w[..w.len() - 1];
    }
    let mut stripped = false;
    for suffix in ["ing", "ed"] {
        if let Some(x) = w.strip_suffix(suffix)
            && x.len() >= 3
            && has_vowel(x.as_bytes())
            && !w.ends_with("eed")
        {
            w = x;
            stripped = true;
            break;
        }
    }
    let wb = w.as_bytes();
    let n = wb.len();
    if stripped && n >= 4 && wb[n - 1] == wb[n - 2] && !b"lsz".contains(&wb[n - 1]) {
        // `stopped` → `stopp` → `stop`.
        w = &w[..n - 1];
    } else if w.len() >= 5 && w.ends_with('e') {
        w = &w[..w.len() - 1];
    } else if w.len() >= 5 && w.ends_with('y') {
        // `entry` and `entries` meet at `entr`.
        w = &w[..w.len() - 1];
    }
    w
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

fn lower_into(s: &str, out: &mut String) {
    if s.is_ascii() {
        out.extend(s.bytes().map(|b| b.to_ascii_lowercase() as char));
    } else {
        out.extend(s.chars().flat_map(char::to_lowercase));
    }
}

/// Emits the snake_case / camelCase parts of `ident` when there are at least two.
fn split_parts(ident: &str, part: &mut String, emit: &mut impl FnMut(&str), whole: &str) {
    if ident.is_ascii() {
        split_ascii_parts(ident, part, emit, whole);
    } else {
        split_char_parts(ident, part, emit, whole);
    }
}

/// [`split_parts`] for an ASCII identifier, without allocating: every identifier of every
/// chunk and path goes through here (two vectors per identifier were a sixth of building a
/// version's path tables, docs/performance.md). The same parts as [`split_char_parts`].
fn split_ascii_parts(ident: &str, part: &mut String, emit: &mut impl FnMut(&str), whole: &str) {
    let b = ident.as_bytes();
    // The first part waits until a second shows there are two.
    let mut first: Option<(usize, usize)> = None;
    let mut parts = 0usize;
    let mut emit_part = |(s, e): (usize, usize), part: &mut String| {
        if e - s < 2 {
            return;
        }
        part.clear();
        part.extend(b[s..e].iter().map(|c| c.to_ascii_lowercase() as char));
        if part != whole {
            emit(part);
        }
    };
    let mut push_part = |r: (usize, usize), part: &mut String| {
        parts += 1;
        match parts {
            1 => first = Some(r),
            2 => {
                if let Some(f) = first.take() {
                    emit_part(f, part);
                }
                emit_part(r, part);
            }
            _ => emit_part(r, part),
        }
    };
    let mut start = 0;
    for i in 0..b.len() {
        let c = b[i];
        if c == b'_' {
            if i > start {
                push_part((start, i), part);
            }
            start = i + 1;
            continue;
        }
        if i > start {
            let prev = b[i - 1];
            let next_lower = b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            // fooBar | FOOBar (before the last capital of a run) | foo2Bar
            if c.is_ascii_uppercase()
                && (prev.is_ascii_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_ascii_uppercase() && next_lower))
            {
                push_part((start, i), part);
                start = i;
            }
        }
    }
    if start < b.len() {
        push_part((start, b.len()), part);
    }
}

/// [`split_parts`] for any identifier, by character.
fn split_char_parts(ident: &str, part: &mut String, emit: &mut impl FnMut(&str), whole: &str) {
    let chars: Vec<char> = ident.chars().collect();
    let mut bounds: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for i in 0..chars.len() {
        let c = chars[i];
        if c == '_' {
            if i > start {
                bounds.push((start, i));
            }
            start = i + 1;
            continue;
        }
        if i > start {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            // fooBar | FOOBar (before the last capital of a run) | foo2Bar
            if c.is_uppercase()
                && (prev.is_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_uppercase() && next_lower))
            {
                bounds.push((start, i));
                start = i;
            }
        }
    }
    if start < chars.len() {
        bounds.push((start, chars.len()));
    }
    if bounds.len() < 2 {
        return;
    }
    for (s, e) in bounds {
        if e - s < 2 {
            continue;
        }
        part.clear();
        part.extend(chars[s..e].iter().flat_map(|c| c.to_lowercase()));
        if part != whole {
            emit(part);
        }
    }
}

/// Term frequencies of a chunk: its text plus its path's components, sorted by term.
pub fn doc_terms(text: &str, path: &str) -> Vec<(String, u16)> {
    let mut counts: std::collections::HashMap<String, u16> = std::collections::HashMap::new();
    let mut add = |t: &str| {
        if let Some(c) = counts.get_mut(t) {
            *c = c.saturating_add(1);
        } else {
            counts.insert(t.to_string(), 1);
        }
    };
    for_each_term(text, &mut add);
    for_each_term(path, &mut add);
    let mut v: Vec<(String, u16)> = counts.into_iter().collect();
    v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The distinct terms of a query with how often each occurs, without English function words
/// (they match comments everywhere and name nothing).
pub fn query_terms(query: &str) -> Vec<(String, u16)> {
    let mut terms = doc_terms(query, "");
    terms.retain(|(t, _)| !STOPWORDS.iter().any(|w| stem(w) == t));
    terms
}

/// English function words dropped from queries.
const STOPWORDS: &[&str] = &[
    "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does", "don",
    "during", "each", "eg", "etc", "few", "for", "from", "had", "has", "have", "he", "her", "here",
    "his", "how", "ie", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my",
    "no", "not", "now", "of", "on", "once", "only", "or", "other", "our", "out", "over", "own",
    "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "us", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A way to split an identifier into parts ([`split_ascii_parts`], [`split_char_parts`]).
    type Split = fn(&str, &mut String, &mut dyn FnMut(&str), &str);

    #[test]
    fn ascii_parts_are_the_parts_split_by_character() {
        let parts = |split: Split, ident: &str| {
            let mut whole = String::new();
            lower_into(ident, &mut whole);
            let mut got = Vec::new();
            split(
                ident,
                &mut String::new(),
                &mut |t: &str| got.push(t.to_string()),
                &whole,
            );
            got
        };
        let ascii: Split = |i, p, e, w| split_ascii_parts(i, p, &mut |t: &str| e(t), w);
        let chars: Split = |i, p, e, w| split_char_parts(i, p, &mut |t: &str| e(t), w);
        let mut idents: Vec<String> = [
            "fooBar",
            "FOOBar",
            "foo2Bar",
            "snake_case_name",
            "HTTPServer",
            "a_b",
            "ab_cd",
            "x",
            "getHTTPResponseCode",
            "__init__",
            "ABC",
            "Ab",
            "aB",
            "_a_B_cd_",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // 5,000 short strings over letters of both cases, a digit and the underscore, from a
        // fixed generator.
        let alphabet = b"aAbB_1zZ";
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = 1 + (x % 9) as usize;
            let s: String = (0..len)
                .map(|k| alphabet[((x >> (k * 3 + 8)) % 8) as usize] as char)
                .collect();
            idents.push(s);
        }
        for ident in &idents {
            assert_eq!(parts(ascii, ident), parts(chars, ident), "{ident}");
        }
        assert_eq!(parts(ascii, "getHTTPResponse"), ["get", "http", "response"]);
    }

    fn terms(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        for_each_term(s, |t| v.push(t.to_string()));
        v
    }

    #[test]
    fn identifiers_whole_and_split() {
        assert_eq!(terms("parse_config"), ["parse_config", "pars", "config"]);
        assert_eq!(terms("HTTPRequest"), ["httprequest", "http", "request"]);
        assert_eq!(terms("getUserID2"), ["getuserid2", "get", "user", "id2"]);
        assert_eq!(terms("x = 42 + y"), Vec::<String>::new());
        assert_eq!(
            terms("src/lexical/bm25.rs"),
            ["src", "lexical", "bm25", "rs"]
        );
        assert_eq!(terms("Größe_Wert"), ["größe_wert", "größe", "wert"]);
    }

    #[test]
    fn inflections_meet() {
        for group in [
            &["parse", "parsed", "parsing", "parses"][..],
            &["option", "options"],
            &["entry", "entries"],
            &["class", "classes"],
            &["stop", "stopped", "stopping"],
            &["encode", "encoded", "encoding", "encodes"],
        ] {
            let stems: Vec<&str> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.windows(2).all(|w| w[0] == w[1]),
                "{group:?} → {stems:?}"
            );
        }
        for w in [
            "status", "string", "speed", "need", "HTTP", "x86_64", "größe",
        ] {
            assert_eq!(stem(w), w);
        }
    }

    #[test]
    fn queries_drop_function_words() {
        let q: Vec<String> = query_terms("Fix the parsing of options when it is empty")
            .into_iter()
            .map(|t| t.0)
            .collect();
        // Stems on both sides: `empty` and `empties` meet at `empt`.
        assert_eq!(q, ["empt", "fix", "option", "pars"]);
    }

    #[test]
    fn doc_terms_counts_text_and_path() {
        let t = doc_terms("fn load() { load(); }", "src/loader.rs");
        assert!(t.contains(&("load".to_string(), 2)));
        assert!(t.contains(&("loader".to_string(), 1)));
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
