//! Whether a name holds a secret word: the words of an identifier in any case style, the
//! secret words, the key compounds and the qualifiers that make a name something else
//! (`token_count`, `private_key_path`).

use super::*;

/// The words of an identifier: it is cut at punctuation, between letters and digits, and at
/// case changes, so `DB_PASSWORD_PROD`, `dbPasswordProd` and `db-password-prod` all read
/// `db`, `password`, `prod` (and `HTTPToken` reads `HTTP`, `Token`).
pub(super) fn words(name: &str) -> impl Iterator<Item = &str> {
    let b = name.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < b.len() && !b[at].is_ascii_alphanumeric() {
            at += 1;
        }
        if at == b.len() {
            return None;
        }
        let start = at;
        at += 1;
        while at < b.len() {
            let (p, c) = (b[at - 1], b[at]);
            let cut = !c.is_ascii_alphanumeric()
                || p.is_ascii_digit() != c.is_ascii_digit()
                || (p.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (p.is_ascii_uppercase()
                    && c.is_ascii_uppercase()
                    && b.get(at + 1).is_some_and(u8::is_ascii_lowercase));
            if cut {
                break;
            }
            at += 1;
        }
        Some(&name[start..at])
    })
}

/// Words that name a secret on their own.
#[rustfmt::skip]
pub(super) const SECRET_WORDS: &[&str] = &[
    "password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets", "token", "credential",
    "credentials", "cred", "creds", "auth", "apikey",
];

/// Words before `key` that make it a secret in one word (`APIKEY`, `secretkey`).
#[rustfmt::skip]
pub(super) const KEY_COMPOUNDS: &[&str] = &[
    "api", "secret", "access", "private", "priv", "auth", "signing", "master", "encryption",
    "client", "session",
];

/// Words before `key` that make it something other than a secret (`cache_key`, `sortKey`,
/// `public_key`).
#[rustfmt::skip]
pub(super) const PLAIN_KEYS: &[&str] = &[
    "cache", "sort", "primary", "foreign", "partition", "public", "pub", "publishable", "lookup",
    "map", "hash", "dict", "idempotency", "unique", "row", "group", "index", "object", "cursor",
    "sequence", "shortcut", "hot", "i18n", "translation", "locale", "lang", "composite", "routing",
    "shard", "bucket", "column", "field", "dedup", "dedupe", "event", "message", "state", "item",
    "entry", "node", "table", "query", "search", "route", "registry", "config", "setting",
    "settings", "list", "join", "range", "next", "prev", "last", "first", "match", "tree", "heap",
    "seen", "by", "react", "child", "parent", "label", "name", "type", "attr", "prop", "param",
    "context", "store", "cell", "grid", "record", "doc", "document", "file", "path", "dir",
    "tag", "websocket",
];

/// Words after a secret word that make the name about the secret rather than the secret
/// itself (`private_key_path`, `token_count`, `password_field`, `SECRET_NAME`, `auth_url`);
/// a final `s` is ignored.
#[rustfmt::skip]
pub(super) const QUALIFIERS: &[&str] = &[
    "path", "file", "filename", "dir", "directory", "folder", "url", "uri", "endpoint", "link",
    "host", "domain", "server", "name", "id", "field", "len", "length", "size", "count", "limit",
    "budget", "max", "min", "type", "kind", "format", "prefix", "suffix", "header", "env", "var",
    "variable", "param", "parameter", "arg", "label", "placeholder", "hint", "regex", "re",
    "pattern", "policy", "rule", "validator", "validation", "strength", "reset", "required",
    "enabled", "disabled", "expiry", "expires", "expiration", "expire", "expired", "ttl",
    "timeout", "lifetime", "age", "version", "index", "idx", "position", "pos", "column", "col",
    "attr", "attribute", "selector", "input", "prompt", "message", "msg", "error", "err", "text",
    "title", "description", "desc", "help", "mode", "source", "location", "provider", "store",
    "storage", "manager", "service", "class", "ref", "arn", "region", "method", "scheme",
    "strategy", "backend", "plugin", "flow", "grant", "scope", "audience", "issuer", "realm",
    "user", "username", "login", "email", "loader", "reader", "parser", "encoder", "decoder",
    "encoding", "generator", "factory", "handler", "callback", "fn", "func", "cache", "usage",
    "stat", "estimate", "offset", "start", "end", "span", "stream", "iter", "list", "buffer",
    "vec", "set", "used", "seen", "valid", "invalid", "match", "matcher", "check", "checker",
    "exist", "visible", "show", "hidden", "mask", "masked", "widget", "button", "form", "view",
    "page", "screen", "route", "component", "dialog", "modal", "algorithm", "alg", "cipher",
    "digest", "curve", "bits", "rotation", "status", "request", "response",
];

/// Whether `word` is one of `list`, without case (and, with `plural`, without a final `s`).
pub(super) fn one_of(list: &[&str], word: &str, plural: bool) -> bool {
    let singular = match word.len() {
        n if plural && n > 3 && word.as_bytes()[n - 1].eq_ignore_ascii_case(&b's') => {
            &word[..n - 1]
        }
        _ => word,
    };
    list.iter()
        .any(|w| w.eq_ignore_ascii_case(word) || w.eq_ignore_ascii_case(singular))
}

/// Whether an identifier names a secret: a secret word anywhere in it (`DB_PASSWORD_PROD`,
/// `passwordHash`, `aws_secret_access_key`, `authToken`, `client-secret`, `SECRET_KEY_BASE`),
/// or `key` after another word (`API_KEY`, `secretKey`, `signing_key`; not `cache_key`,
/// `public_key` or `key` alone), not followed by a qualifier (`token_count`,
/// `private_key_path`, `password_field`).
pub(super) fn secret_name(name: &str) -> bool {
    let mut secret = false;
    let mut prev: Option<&str> = None;
    for w in words(name) {
        let ends_with =
            |s: &str| w.len() > s.len() && w[w.len() - s.len()..].eq_ignore_ascii_case(s);
        let key = (w.eq_ignore_ascii_case("key") || w.eq_ignore_ascii_case("keys"))
            && prev.is_some_and(|p| !one_of(PLAIN_KEYS, p, false));
        if !w.bytes().all(|c| c.is_ascii_digit()) {
            // `Tags.1.key` is read as `Tags.key`.
            prev = Some(w);
        }
        let compound = ["password", "passwd", "passphrase"]
            .iter()
            .any(|s| find_ci(w, s).is_some())
            || ["secret", "token", "apikey"].iter().any(|s| ends_with(s))
            || (ends_with("key") && one_of(KEY_COMPOUNDS, &w[..w.len() - 3], false));
        if key || compound || one_of(SECRET_WORDS, w, false) {
            secret = true;
        } else if secret && one_of(QUALIFIERS, w, true) {
            secret = false;
        }
    }
    secret
}
