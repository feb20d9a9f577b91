//! The words code uses for the words people ask in.
//!
//! A question is written in English ("what message is shown", "how long does it wait", "what
//! happens on Ctrl+C"); the code that answers it says `msg`, `delay`/`backoff` and
//! `KeyboardInterrupt`. BM25 only meets words that are shared, so a question's terms are
//! widened with the abbreviations and the close code words of a fixed, general lexicon: the
//! abbreviations programmers write in every language, and a few English words whose code
//! counterpart is a different word. Nothing here names a project; a change request, written in
//! the code's own words, is not widened (see [`crate::rank::is_question`]).

use super::terms::stem;

/// English words of questions and the code words they stand for. Each left word's stem is
/// matched against the question's terms; the right words are added as terms of their own.
const LEXICON: &[(&str, &[&str])] = &[
    // Abbreviations of words that code itself seldom spells out. Those of the words that name
    // the objects of most programs (error, request, response, value, argument, message…) are
    // left out: the whole word is common in code already, and widening it outweighs the
    // question's rarer words (measured on the training questions).
    ("address", &["addr"]),
    ("allocate", &["alloc"]),
    ("attribute", &["attr", "attrs"]),
    ("authentication", &["auth"]),
    ("authorization", &["auth"]),
    ("buffer", &["buf"]),
    ("certificate", &["cert"]),
    ("character", &["char"]),
    ("configuration", &["config", "cfg", "conf"]),
    ("configure", &["config"]),
    ("connection", &["conn"]),
    ("database", &["db"]),
    ("description", &["desc"]),
    ("destination", &["dst", "dest"]),
    ("directory", &["dir"]),
    ("folder", &["dir", "directory"]),
    ("environment", &["env", "environ"]),
    ("information", &["info"]),
    ("initialize", &["init"]),
    ("length", &["len"]),
    ("maximum", &["max"]),
    ("minimum", &["min"]),
    ("password", &["pwd"]),
    ("position", &["pos"]),
    ("previous", &["prev"]),
    ("specification", &["spec"]),
    ("temporary", &["tmp", "temp"]),
    ("utility", &["util"]),
    // Code words for English ones.
    ("wait", &["delay", "timeout", "backoff", "sleep"]),
    ("enforce", &["limit", "exceed", "fit"]),
    ("wide", &["width"]),
    ("big", &["size", "max"]),
    ("large", &["size", "max"]),
    ("many", &["max", "limit"]),
    ("crash", &["panic", "exception", "abort"]),
    ("panic", &["recover", "recovery"]),
    ("ctrl", &["interrupt", "sigint", "keyboardinterrupt"]),
    ("language", &["lang", "syntax"]),
    ("colour", &["color"]),
    ("terminal", &["tty", "isatty", "interactive"]),
    ("mistype", &["suggest", "suggestion", "distance"]),
    ("typo", &["suggest", "suggestion", "distance"]),
    ("misspell", &["suggest", "suggestion", "distance"]),
    ("retry", &["attempt", "backoff"]),
    ("wrong", &["invalid"]),
    ("success", &["ok", "valid"]),
    ("pager", &["paging"]),
    ("paging", &["pager"]),
    ("login", &["auth", "credential"]),
    ("quit", &["exit"]),
    ("shutdown", &["close", "exit"]),
];

/// How much more a question's own term weighs than a code word it stands for, as a multiple of
/// query term frequency (BM25 weighs a query term by the square root of its frequency, so 4 is
/// twice the weight): a code word is a guess, and the question's words stay what it asks.
const OWN_WEIGHT: u16 = 4;

/// `terms` (a question's, from [`super::query_terms`]) with the code words of [`LEXICON`] for
/// those it has added once each, after them, at half their weight ([`OWN_WEIGHT`]); the
/// question's own terms keep their order and their weights relative to each other. Without a
/// word to widen, `terms` unchanged.
pub fn widen_question(terms: &[(String, u16)]) -> Vec<(String, u16)> {
    let mut out: Vec<(String, u16)> = terms
        .iter()
        .map(|(t, n)| (t.clone(), n.saturating_mul(OWN_WEIGHT)))
        .collect();
    let own = out.len();
    for (word, code) in LEXICON {
        let key = stem(word);
        if !terms.iter().any(|(t, _)| t == key) {
            continue;
        }
        for c in *code {
            let c = stem(c);
            if !out.iter().any(|(t, _)| t == c) {
                out.push((c.to_string(), 1));
            }
        }
    }
    for (t, _) in terms {
        for b in super::derive::bases(t) {
            if !out.iter().any(|(x, _)| *x == b) {
                out.push((b, 1));
            }
        }
    }
    if out.len() == own {
        return terms.to_vec();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexical::query_terms;

    fn widened(q: &str) -> Vec<String> {
        widen_question(&query_terms(q))
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn question_words_meet_the_code_words() {
        let w = widened("What is shown on Ctrl+C if the environment has no terminal?");
        for t in ["ctrl", "interrupt", "keyboardinterrupt", "env", "tty"] {
            assert!(w.iter().any(|x| x == t), "{t} in {w:?}");
        }
        let w = widened("How long does the client wait between retries?");
        assert!(
            w.iter().any(|x| x == "backoff") && w.iter().any(|x| x == stem("delay")),
            "{w:?}"
        );
        // The question's own terms come first, in their order.
        let own = query_terms("How long does the client wait between retries?");
        let wide = widen_question(&own);
        for (k, (t, n)) in own.iter().enumerate() {
            assert_eq!(wide[k], (t.clone(), n * OWN_WEIGHT));
        }
        assert!(wide[own.len()..].iter().all(|(_, n)| *n == 1));
    }

    #[test]
    fn nothing_to_widen_leaves_the_terms_alone() {
        let q = query_terms("where is parse_config called");
        assert_eq!(widen_question(&q), q);
    }

    #[test]
    fn every_entry_is_lowercase_and_adds_a_new_word() {
        for (word, code) in LEXICON {
            assert_eq!(word.to_lowercase(), *word);
            assert!(!code.is_empty());
            assert!(code.iter().all(|c| stem(c) != stem(word)), "{word}");
        }
    }
}
