//! The verbs code names for the nouns and adjectives questions ask in.
//!
//! People ask about "number coercion", "the selection", "enforcement", "retrieval", "validity";
//! code calls `coerce`, `select`, `enforce`, `retrieve`, `is_valid`. The light stemmer
//! ([`super::terms::stem`]) only meets inflections, so a question's derived words are given the
//! words they are derived from as well: each English derivational ending is taken off and the
//! usual ways the base word ends are tried. Most guesses name no term of the index and cost
//! nothing; the rest are the words code writes.

use super::terms::stem;

/// Endings of a (stemmed) question word and the endings its base word may have instead, most
/// specific first; only the first ending that matches is used.
const ENDINGS: &[(&str, &[&str])] = &[
    // registration → register, administration → administer.
    ("tration", &["ter"]),
    // validation → validate, creation → create, configuration → configure.
    ("ation", &["ate", "e", ""]),
    // resolution → resolve, evaluation is handled above.
    ("ution", &["ve", "ute"]),
    // coercion → coerce, selection → select, compression → compress, conversion → convert,
    // expansion → expand, decision → decide, comparison → compare.
    ("sion", &["d", "de", "t", "se", "s"]),
    ("ion", &["", "e"]),
    ("ison", &["e"]),
    // enforcement → enforce, assignment → assign.
    ("ment", &[""]),
    // acceptance → accept, existence → exist, inference → infer (the stemmer took the `e`).
    ("anc", &["", "e"]),
    ("enc", &["", "e"]),
    // visibility → visible, validity → valid, sensitivity → sensitive (the stemmer took the `y`).
    ("ilit", &["le"]),
    ("it", &["", "e"]),
    // retrieval → retrieve, removal → remove, traversal → traverse.
    ("al", &["e"]),
    // configurable → configure, readable → read (the stemmer took the `e`).
    ("abl", &["", "e"]),
    // strictness → strict.
    ("ness", &[""]),
];

/// A base word this short is too likely to be some other word.
const MIN_BASE: usize = 4;

/// The stems of the words `term` (a stemmed question term) may be derived from, without `term`
/// itself; none for a word without a derivational ending.
pub fn bases(term: &str) -> Vec<String> {
    let Some((ending, bases)) = ENDINGS
        .iter()
        .find(|(e, _)| term.len() >= e.len() + MIN_BASE && term.ends_with(e) && term.is_ascii())
    else {
        return Vec::new();
    };
    let root = &term[..term.len() - ending.len()];
    let mut out: Vec<String> = Vec::new();
    for b in *bases {
        let word = format!("{root}{b}");
        let s = stem(&word).to_string();
        if s.len() >= MIN_BASE && s != term && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(word: &str, base: &str) -> bool {
        bases(stem(word)).contains(&stem(base).to_string())
    }

    #[test]
    fn nouns_meet_their_verbs() {
        for (noun, verb) in [
            ("coercion", "coerce"),
            ("validation", "validate"),
            ("configuration", "configure"),
            ("registration", "register"),
            ("resolution", "resolve"),
            ("selection", "select"),
            ("compression", "compress"),
            ("conversion", "convert"),
            ("expansion", "expand"),
            ("decision", "decide"),
            ("enforcement", "enforce"),
            ("acceptance", "accept"),
            ("existence", "exist"),
            ("visibility", "visible"),
            ("validity", "valid"),
            ("retrieval", "retrieve"),
            ("configurable", "configure"),
            ("strictness", "strict"),
        ] {
            assert!(has(noun, verb), "{noun} → {verb}: {:?}", bases(stem(noun)));
        }
    }

    #[test]
    fn plain_words_and_short_roots_give_nothing() {
        for w in [
            "timeout", "budget", "parse", "header", "ion", "unit", "total", "mention",
        ] {
            assert!(
                bases(stem(w)).iter().all(|b| b.len() >= MIN_BASE),
                "{w}: {:?}",
                bases(stem(w))
            );
        }
        assert!(bases("timeout").is_empty() && bases("budget").is_empty());
    }
}
