//! Values assigned to secret-named keys, in every syntax the rule reads: code in any
//! language, object literals and dict entries, `.env`, YAML, TOML, INI, shell and Markdown.

use super::*;

/// Bytes an assignment's name and value may span: a name, an operator and a value on one
/// line, within this many bytes of where the name starts looking (so a minified file's one
/// long line costs no more per hit than a short one).
pub(super) const NAME_MAX: usize = 128;
pub(super) const VALUE_MAX: usize = 1024;

/// The identifier around a [`Patterns::name_hint`] hit: letters, digits, `_`, `-` and `.`
/// (`DB_PASSWORD_PROD`, `x-api-key`, `spring.datasource.password`), without leading or
/// trailing `-`/`.` (`--password`, `the password.`).
pub(super) fn name_around(text: &str, hit: Range<usize>) -> Option<Range<usize>> {
    let b = text.as_bytes();
    let part = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.');
    let (mut s, mut e) = (hit.start, hit.end);
    while s > 0 && part(b[s - 1]) {
        s -= 1;
        if hit.start - s > NAME_MAX {
            return None;
        }
    }
    while e < b.len() && part(b[e]) {
        e += 1;
        if e - hit.end > NAME_MAX {
            return None;
        }
    }
    while s < e && matches!(b[s], b'-' | b'.') {
        s += 1;
    }
    while e > s && matches!(b[e - 1], b'-' | b'.') {
        e -= 1;
    }
    (s < e).then_some(s..e)
}

/// A literal value found after a name.
pub(super) struct Assigned {
    range: Range<usize>,
    /// Written between quotes (else bare, as in `.env`, YAML, INI and shell).
    quoted: bool,
    /// The second of two strings (`"NAME", "value"`): a pair in a call, or any two strings in
    /// a list, so it is judged as strictly as in source, in chat too.
    listed: bool,
}

/// The literals assigned to the name at `name` (two when `name: x = y` may be read either as a
/// typed assignment or as `name: x`), if any: after an optional closing quote (also
/// `\"`, inside a JSON string) and `]` (`env["TOKEN"] = …`), an operator — `=`, `:=`, `:`,
/// `=>`, `==`, `?=`, `??=`, `||=`, a typed `: &str =` or Go's `name string =`, or a comma
/// after a quoted name (`define('DB_PASSWORD', '…')`, `headers.set("X-Api-Key", "…")`) — then
/// a string on the same line (with `r`, `b`, `f`, `@`, `$` or `r#` prefixes, or escaped
/// quotes) or a bare word. A bare word followed by `(`, `[`, `{` or `<` is a call, an index
/// or a type, not a value; so is a formatted string with a `{` in it.
pub(super) fn assigned_values(text: &str, name: Range<usize>) -> [Option<Assigned>; 2] {
    let b = text.as_bytes();
    let mut limit = (name.end + VALUE_MAX).min(b.len());
    while !text.is_char_boundary(limit) {
        limit -= 1;
    }
    // Past the window reads as a line's end, so every step below stops at either.
    let at = |i: usize| if i < limit { b[i] } else { b'\n' };
    let blank = |c: u8| c == b' ' || c == b'\t';
    let blank_or_end = |c: u8| blank(c) || c == b'\n' || c == b'\r';
    let quote = |c: u8| matches!(c, b'"' | b'\'' | b'`');
    let mut i = name.end;
    let quoted_name = name.start > 0 && quote(b[name.start - 1]);
    if quoted_name {
        let q = b[name.start - 1];
        if at(i) == b'\\' && at(i + 1) == q {
            i += 2;
        } else if at(i) == q {
            i += 1;
        }
    }
    if at(i) == b']' {
        i += 1;
    }
    let before = i;
    while blank(at(i)) {
        i += 1;
    }
    let spaced = i > before;
    // `=` that is not `==` or `=>`, after a type: the end of `: &'static str =`, ` string =`.
    let typed = |mut j: usize, first: fn(u8) -> bool, part: fn(u8) -> bool| {
        while blank(at(j)) {
            j += 1;
        }
        // A redacted value (`key: [REDACTED:secret]`) is not a type.
        if !first(at(j)) || b[j.min(limit)..limit].starts_with(b"[REDACTED") {
            return None;
        }
        let from = j;
        while j - from < 80 && part(at(j)) {
            j += 1;
        }
        while blank(at(j)) {
            j += 1;
        }
        (at(j) == b'=' && !matches!(at(j + 1), b'=' | b'>')).then_some(j + 1)
    };
    let mut comma = false;
    // After `name: Type =` the value follows the `=`, unless the `:` was the operator and what
    // follows it the value (`password: Bearer x=`): both are looked at.
    let mut after_colon = None;
    let start = match (at(i), at(i + 1), at(i + 2)) {
        (b':', b'=', _) | (b'=', b'>', _) | (b'?', b'=', _) => i + 2,
        (b':', b':', _) => return [None, None],
        // A segment of an ARN or URN (`…:secret:id-ABCD1E`), not a key.
        (b':', c, _) if name.start > 0 && b[name.start - 1] == b':' && !blank(c) => {
            return [None, None];
        }
        (b':', ..) => match typed(
            i + 1,
            |c| c.is_ascii_alphabetic() || matches!(c, b'_' | b'&' | b'[' | b'('),
            |c| c.is_ascii_alphanumeric() || b"_&'<>[]().,?|*: \t".contains(&c),
        ) {
            Some(t) => {
                after_colon = Some(i + 1);
                t
            }
            None => i + 1,
        },
        (b'=', b'=', b'=') | (b'?', b'?', b'=') | (b'|', b'|', b'=') => i + 3,
        (b'=', b'=', _) => i + 2,
        (b'=', ..) => i + 1,
        (b',', ..) if quoted_name => {
            comma = true;
            i + 1
        }
        // C's `#define API_KEY "…"`.
        (b'"', ..) if spaced && text[..name.start].trim_end().ends_with("#define") => i,
        (c, ..) if spaced && c.is_ascii_alphabetic() => match typed(
            i,
            |c| c.is_ascii_alphabetic(),
            |c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'[' | b']' | b'*'),
        ) {
            Some(t) => t,
            None => return [None, None],
        },
        _ => return [None, None],
    };
    let literal = |mut i: usize| {
        while blank(at(i)) {
            i += 1;
        }
        // String prefixes: `r"…"`, `b'…'`, `f"…"`, `@"…"`, `$"…"`, `r#"…"#`.
        let prefix = (0..3)
            .take_while(|&k| b"rRbBuUfFL@$8#".contains(&at(i + k)))
            .count();
        let formatted =
            (i..i + prefix).any(|k| matches!(at(k), b'f' | b'F' | b'$')) || at(i + prefix) == b'`';
        let open = i + prefix;
        let escaped = at(open) == b'\\' && quote(at(open + 1));
        if escaped || quote(at(open)) {
            let (q, from) = if escaped {
                (at(open + 1), open + 2)
            } else {
                (at(open), open + 1)
            };
            let mut j = from;
            loop {
                match at(j) {
                    b'\n' => return None,
                    b'\\' if escaped && at(j + 1) == q => break,
                    b'\\' if !escaped && at(j + 1) != b'\n' => j += 2,
                    c if c == q && !escaped => break,
                    _ => j += 1,
                }
            }
            if formatted && b[from..j].contains(&b'{') {
                return None;
            }
            return Some(Assigned {
                range: from..j,
                quoted: true,
                listed: comma,
            });
        }
        // After `"NAME",` only a string is a value; `#`/`//` start a comment (YAML's `key: # …`).
        if comma
            || (at(i) == b'#' && blank_or_end(at(i + 1)))
            || (at(i) == b'/' && at(i + 1) == b'/')
        {
            return None;
        }
        let bare = |c: u8| !c.is_ascii_whitespace() && !b"\"'`,;()[]{}<>\\".contains(&c);
        // A query string's next `&name=` ends the value (`?token=…&page=2`).
        let next_param = |j: usize| {
            let mut k = j + 1;
            while at(k).is_ascii_alphanumeric() || b"_.-[]".contains(&at(k)) {
                k += 1;
            }
            k > j + 1 && at(k) == b'='
        };
        let mut j = i;
        while j < limit && bare(at(j)) && !(at(j) == b'&' && next_param(j)) {
            j += 1;
        }
        // An expression (`t.key || n.pass`, `a?.b`) is not a value either.
        let expression = ["||", "&&", "??", "?.", "=>", "==", "!=", "->"]
            .iter()
            .any(|op| text[i..j].contains(op));
        (j > i && !expression && !matches!(at(j), b'(' | b'[' | b'{' | b'<')).then_some(Assigned {
            range: i..j,
            quoted: false,
            listed: false,
        })
    };
    [literal(start), after_colon.and_then(literal)]
}

/// Whether a value assigned to a secret-named key is a secret: in source, a literal that
/// looks like one ([`secret_like`]); in chat, any literal of 3 characters or more (a
/// passphrase with spaces too, when quoted) — in both, not a stand-in ([`stand_in`]), and, if
/// bare, not a number, a path or a reference ([`reference`]).
pub(super) fn assigned_secret(v: &str, quoted: bool, mode: Mode) -> bool {
    if v.starts_with("[REDACTED") || stand_in(v) {
        return false;
    }
    match mode {
        Mode::Source => secret_like(v),
        Mode::Chat => {
            v.len() >= 3 && !path_like(v) && !(!quoted && (number_like(v) || reference(v)))
        }
    }
}

/// Secret-named keys assigned a secret (see [`secret_name`], [`assigned_values`],
/// [`assigned_secret`]): the value's range, the name and quotes left in place.
pub(super) fn assignments(text: &str, mode: Mode, found: &mut Found) {
    let mut seen = 0;
    for hit in patterns().name_hint.find_iter(text) {
        if hit.start() < seen {
            continue;
        }
        let Some(name) = name_around(text, hit.range()) else {
            seen = hit.end();
            continue;
        };
        seen = name.end;
        // The label of an earlier redaction (`[REDACTED:secret]`) is not a name.
        if text[..name.start].ends_with("[REDACTED:") || !secret_name(&text[name.clone()]) {
            continue;
        }
        // Two strings in a row are judged strictly, and only a long second one is taken for
        // a secret (a list of header names is not a name and its value).
        for value in assigned_values(text, name).into_iter().flatten() {
            if (!value.listed || value.range.len() >= 12)
                && assigned_secret(
                    &text[value.range.clone()],
                    value.quoted,
                    if value.listed { Mode::Source } else { mode },
                )
            {
                found.push((value.range, SecretKind::Assignment));
            }
        }
    }
}
