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
        emit(&buf);
        split_parts(ident, &mut part, &mut emit, &buf);
    }
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

/// The distinct terms of a query with how often each occurs.
pub fn query_terms(query: &str) -> Vec<(String, u16)> {
    doc_terms(query, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        for_each_term(s, |t| v.push(t.to_string()));
        v
    }

    #[test]
    fn identifiers_whole_and_split() {
        assert_eq!(terms("parse_config"), ["parse_config", "parse", "config"]);
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
    fn doc_terms_counts_text_and_path() {
        let t = doc_terms("fn load() { load(); }", "src/loader.rs");
        assert!(t.contains(&("load".to_string(), 2)));
        assert!(t.contains(&("loader".to_string(), 1)));
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
