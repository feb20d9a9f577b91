//! Whether a value looks like a secret: its entropy for its alphabet, how often its
//! characters change kind, and what it is not (a stand-in, a reference, a number, code, a
//! pattern, a path).

use super::*;

/// Shannon entropy in bits per character.
pub(super) fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    let mut n = 0u32;
    for b in s.bytes() {
        counts[b as usize] += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    let n = f64::from(n);
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether a token looks random rather than like a placeholder (`<your token here>`,
/// `$TOKEN`, `xxxxxxxx...`).
pub(super) fn looks_random(token: &str) -> bool {
    let has_digit = token.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = token.bytes().any(|b| b.is_ascii_alphabetic());
    has_digit && has_alpha && entropy(token) >= 3.0
}

/// Punctuation that separates the parts of names, paths and versions (`a_b`, `a/b`, `1.2`).
pub(super) fn separator(b: u8) -> bool {
    matches!(b, b'_' | b'-' | b'.' | b'/' | b':' | b'\\' | b'@')
}

/// How often the kind of character changes inside a value: the share of adjacent pairs (not
/// across a separator) that go lower→upper, letter↔digit, or to or from a symbol. Random
/// strings change often (`x8JkQ2mP`: 0.7); words, identifiers and paths rarely do
/// (`accessToken`: 0.1, `OPENAI_API_KEY`, `/etc/ssl/key.pem`: 0).
pub(super) fn mixedness(v: &str) -> f64 {
    #[derive(PartialEq)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Symbol,
    }
    let class = |b: u8| match b {
        b'a'..=b'z' => Class::Lower,
        b'A'..=b'Z' => Class::Upper,
        b'0'..=b'9' => Class::Digit,
        _ => Class::Symbol,
    };
    let (mut pairs, mut changes) = (0u32, 0u32);
    for w in v.as_bytes().windows(2) {
        if separator(w[0]) || separator(w[1]) {
            continue;
        }
        pairs += 1;
        let (a, b) = (class(w[0]), class(w[1]));
        // Upper → lower is how every capitalised word starts; it says nothing.
        if a != b && !(a == Class::Upper && b == Class::Lower) {
            changes += 1;
        }
    }
    if pairs == 0 {
        0.0
    } else {
        f64::from(changes) / f64::from(pairs)
    }
}

/// Whether a literal assigned to a secret-named key looks like a secret itself: 8 characters
/// or more, no spaces, not a number, date or version, not code ([`code_like`]) or a regex; an
/// entropy of at least 70% of what a random string of its length and alphabet would have (hex:
/// 16 symbols, base64: 64, else 94 — so 2.8 bits per character for long hex and 4.2 for long
/// base64, near the usual scanners' 3.0 and 4.5, and less for short values); and characters
/// that change kind often enough ([`mixedness`] of 0.2 or more), which words, identifiers and
/// paths do not.
pub(super) fn secret_like(v: &str) -> bool {
    let n = v.len();
    if !(8..=1024).contains(&n)
        || v.contains(char::is_whitespace)
        || v.contains("://")
        || number_like(v)
        || code_like(v)
        || regex_like(v)
    {
        return false;
    }
    let mut core = v.bytes().filter(|&b| !separator(b));
    let alphabet: usize = if core.clone().all(|b| b.is_ascii_hexdigit())
        && !(core.clone().any(|b| b.is_ascii_lowercase())
            && core.clone().any(|b| b.is_ascii_uppercase()))
    {
        16
    } else if core.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')) {
        64
    } else {
        94
    };
    let random = 0.7 * (n.min(alphabet) as f64).log2();
    entropy(v) >= random && mixedness(v) >= 0.2
}

/// Values that name a secret instead of being one, compared on letters and digits alone,
/// without case (`<PASSWORD>`, `your-api-key`, `None`).
#[rustfmt::skip]
pub(super) const STAND_IN_VALUES: &[&str] = &[
    "password", "passwd", "pass", "pwd", "passphrase", "secret", "secrets", "token", "key",
    "apikey", "secretkey", "privatekey", "accesskey", "accesstoken", "authtoken", "credentials",
    "changeme", "example", "test", "testing", "dummy", "sample", "fake", "placeholder", "redacted",
    "todo", "tbd", "none", "null", "nil", "undefined", "true", "false", "empty", "default",
    "string", "str", "value", "required", "optional", "hidden", "masked", "notset", "unset", "foo",
    "bar", "baz", "foobar", "qux", "abc", "xyz", "abc123", "admin", "root", "user", "guest",
    "qwerty", "letmein", "yourpassword", "yoursecret", "yourtoken", "yourkey", "yourapikey",
    "mypassword", "mysecret", "mytoken", "mykey", "myapikey", "supersecret",
];

/// Words that mark a value as a stand-in wherever they stand in it (`changeme123`,
/// `your-api-key-here`), unless what is left without them still looks like a secret (AWS's
/// documented `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY` reads like one, so it is redacted).
#[rustfmt::skip]
pub(super) const STAND_IN_WORDS: &[&str] = &[
    "changeme", "change_me", "change-me", "placeholder", "example", "dummy", "sample", "fake",
    "your_", "your-", "yourpass", "yoursecret", "yourtoken", "yourkey", "yourapi", "replace",
    "insert", "redacted", "xxxx", "****", "....", "notreal", "not_real", "not-real", "notasecret",
    "not_a_secret", "not-a-secret",
];

/// Whether `v`'s letters and digits, lowercased, spell `word`.
pub(super) fn spells(v: &str, word: &str) -> bool {
    v.bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(|b| b.to_ascii_lowercase())
        .eq(word.bytes())
}

/// Where `word` occurs in `v`, ignoring ASCII case.
pub(super) fn find_ci(v: &str, word: &str) -> Option<usize> {
    v.as_bytes()
        .windows(word.len())
        .position(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

/// Whether a value stands for a secret instead of being one: a template (`${VAR}`,
/// `{{ var }}`, `%(name)s`, `#{x}`, `<your-key>`, `%s`), a variable (`$DB_PASSWORD`,
/// `%APPDATA%`), a mask (`****`, `xxxxxxxx`, one character repeated), or placeholder wording
/// ([`STAND_IN_VALUES`], [`STAND_IN_WORDS`]).
pub(super) fn stand_in(v: &str) -> bool {
    let b = v.as_bytes();
    let Some((&first, &last)) = b.first().zip(b.last()) else {
        return true;
    };
    let variable = |name: &[u8]| {
        name.first()
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
            && mixedness(&v[1..=name.len()]) < 0.2
    };
    if ["${", "{{", "}}", "%(", "#{", "<%", "$(", "%{"]
        .iter()
        .any(|m| v.contains(m))
        || matches!((first, last), (b'<', b'>') | (b'{', b'}') | (b'[', b']'))
        || matches!(v, "%s" | "%d" | "%v" | "%r" | "?")
        || (first == b'$' && variable(&b[1..]))
        || (b.len() > 2 && first == b'%' && last == b'%' && variable(&b[1..b.len() - 1]))
        || b.iter().all(|&c| c == first)
        || STAND_IN_VALUES.iter().any(|w| spells(v, w))
    {
        return true;
    }
    if !STAND_IN_WORDS.iter().any(|w| find_ci(v, w).is_some()) {
        return false;
    }
    let mut rest = v.to_string();
    for w in STAND_IN_WORDS {
        while let Some(at) = find_ci(&rest, w) {
            rest.replace_range(at..at + w.len(), "");
        }
    }
    !secret_like(&rest)
}

/// Whether a bare value refers to a value held elsewhere: a member chain that reads as words
/// (`process.env.API_KEY`, `self.token`, `config::SECRET`), not a random string with dots.
pub(super) fn reference(v: &str) -> bool {
    let chain = v.split(['.', ':']).filter(|p| !p.is_empty()).all(|p| {
        p.bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
            && p.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
    });
    chain && v.contains(['.', ':']) && mixedness(v) < 0.2
}

/// Whether a value is a number, a date, a version or an address: digits and punctuation, or
/// a hexadecimal literal.
pub(super) fn number_like(v: &str) -> bool {
    !v.bytes().any(|b| b.is_ascii_alphabetic())
        || (v.len() > 2 && v.as_bytes()[..2].eq_ignore_ascii_case(b"0x"))
        || v.parse::<f64>().is_ok()
}

/// Whether a value reads as code: an identifier or a path of them (`KeySizeUser`,
/// `sqlite3_int64`, `theApiKey`, `&ec::Seed`) that is borrowed or whose letters stand mostly in
/// words of three letters or more. A random string's letters come in ones and twos
/// (`x8JkQ2mPq7Lw0Rt5`); hex digits are never read as words.
pub(super) fn code_like(v: &str) -> bool {
    let body = v.trim_start_matches(['&', '*', '$', '@', '!']);
    if body.is_empty()
        || body.bytes().all(|c| c.is_ascii_hexdigit())
        || !body
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_.:->".contains(&c))
    {
        return false;
    }
    if v.starts_with('&') {
        return true;
    }
    let (mut letters, mut in_words) = (0, 0);
    for w in words(body).filter(|w| w.bytes().all(|c| c.is_ascii_alphabetic())) {
        letters += w.len();
        if w.len() >= 3 {
            in_words += w.len();
        }
    }
    letters > 0 && in_words * 4 >= letters * 3
}

/// Whether a value is a regular expression (`\bAIza[0-9A-Za-z_\-]{35}`): an escape class or a
/// counted repetition.
pub(super) fn regex_like(v: &str) -> bool {
    let b = v.as_bytes();
    b.windows(2)
        .any(|w| w[0] == b'\\' && b"bdswBDSW".contains(&w[1]))
        || b.iter().enumerate().any(|(i, &c)| {
            c == b'{'
                && b[i + 1..].first().is_some_and(u8::is_ascii_digit)
                && b[i + 1..]
                    .iter()
                    .find(|c| !(c.is_ascii_digit() || **c == b','))
                    == Some(&b'}')
        })
}

/// Whether a value is a file path (`/etc/ssl/key.pem`, `./certs`, `~/.ssh/id_ed25519`).
pub(super) fn path_like(v: &str) -> bool {
    ["/", "./", "../", "~/"].iter().any(|p| v.starts_with(p)) && mixedness(v) < 0.2
}
