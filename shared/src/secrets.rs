//! Secret detection and redaction.
//!
//! Anything ctxgate *derives* from user text (summaries of old conversation turns, aggregates)
//! passes through [`redact`] first, so a key pasted into a chat months ago is never carried
//! forward in clear by a summary. Text kept verbatim is the client's own and is not touched.
//! Indexed files pass through [`redact_source`] before they are chunked: a key committed to a
//! repository is never stored in a segment, embedded, or returned in a piece.
//!
//! Detection is deliberately pattern-based and conservative: well-known token shapes (AWS,
//! GitHub, OpenAI, Slack, PEM private keys), `password = ...`-style assignments, and bearer
//! tokens that look random. A redacted secret becomes `[REDACTED:kind]`, which keeps a summary
//! readable ("the deploy uses [REDACTED:aws_access_key]").

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

/// What kind of secret a match was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretKind {
    /// `-----BEGIN ... PRIVATE KEY-----` blocks.
    PrivateKey,
    /// AWS access key ids (`AKIA...`, `ASIA...`).
    AwsAccessKey,
    /// GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// OpenAI-style keys (`sk-...`, `sk-proj-...`).
    OpenaiKey,
    /// Slack tokens (`xoxb-...`) and webhook URLs.
    SlackToken,
    /// The value of a `password=`, `api_key: ...`, `secret=...` assignment.
    Assignment,
    /// A random-looking bearer token.
    BearerToken,
}

impl SecretKind {
    /// The label written in place of the secret.
    pub fn label(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private_key",
            SecretKind::AwsAccessKey => "aws_access_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::OpenaiKey => "openai_key",
            SecretKind::SlackToken => "slack_token",
            SecretKind::Assignment => "secret",
            SecretKind::BearerToken => "bearer_token",
        }
    }
}

struct Patterns {
    /// (kind, pattern, capture group holding the secret; 0 = whole match).
    list: Vec<(SecretKind, Regex, usize)>,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let p = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("secret pattern {s}: {e}"));
        Patterns {
            list: vec![
                (
                    SecretKind::PrivateKey,
                    // An unterminated block (a truncated paste) is redacted to the end.
                    p(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)"),
                    0,
                ),
                (
                    SecretKind::AwsAccessKey,
                    p(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
                    0,
                ),
                (
                    SecretKind::GithubToken,
                    p(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
                    0,
                ),
                (
                    SecretKind::OpenaiKey,
                    p(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{20,}"),
                    0,
                ),
                (
                    SecretKind::SlackToken,
                    p(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+"),
                    0,
                ),
                (
                    SecretKind::BearerToken,
                    p(r"(?i:\bbearer)\s+([A-Za-z0-9\-._~+/]{16,}=*)"),
                    1,
                ),
                (
                    SecretKind::Assignment,
                    // key names that hold secrets, then `=` or `:`, then a quoted or bare value.
                    p(r#"(?i)\b[A-Za-z0-9_\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?)["']?\s*(?::=|=|:)\s*(?:"([^"\n]{3,})"|'([^'\n]{3,})'|([^\s"',;]{3,}))"#),
                    usize::MAX,
                ),
            ],
        }
    })
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
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

/// Whether a bearer token looks random rather than like a placeholder (`<your token here>`,
/// `$TOKEN`, `xxxxxxxx...`).
fn looks_random(token: &str) -> bool {
    let has_digit = token.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = token.bytes().any(|b| b.is_ascii_alphabetic());
    has_digit && has_alpha && entropy(token) >= 3.0
}

/// The byte ranges of secrets in `text`, with their kinds, sorted and non-overlapping.
pub fn find(text: &str) -> Vec<(std::ops::Range<usize>, SecretKind)> {
    let mut found: Vec<(std::ops::Range<usize>, SecretKind)> = Vec::new();
    for (kind, re, group) in &patterns().list {
        for caps in re.captures_iter(text) {
            let m = if *group == usize::MAX {
                // The assignment's value is whichever alternative matched.
                (1..=3).find_map(|g| caps.get(g))
            } else {
                caps.get(*group)
            };
            let Some(m) = m else { continue };
            if *kind == SecretKind::BearerToken && !looks_random(m.as_str()) {
                continue;
            }
            if *kind == SecretKind::Assignment && m.as_str().starts_with("[REDACTED") {
                continue;
            }
            found.push((m.range(), *kind));
        }
    }
    found.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut merged: Vec<(std::ops::Range<usize>, SecretKind)> = Vec::with_capacity(found.len());
    for (r, k) in found {
        match merged.last_mut() {
            Some((last, _)) if r.start < last.end => last.end = last.end.max(r.end),
            _ => merged.push((r, k)),
        }
    }
    merged
}

/// The secrets of a source file: the well-known token shapes, random-looking bearer tokens, and
/// assignments to a secret-named key of a *quoted* value that looks random. The looser
/// assignment rule of [`find`] is for chat text; in code it would hide `token = lexer.next()`.
pub fn find_in_source(text: &str) -> Vec<(std::ops::Range<usize>, SecretKind)> {
    let mut found = find(text);
    found.retain(|(r, kind)| {
        if *kind != SecretKind::Assignment {
            return true;
        }
        let value = &text[r.clone()];
        let quoted = r.start > 0
            && matches!(text.as_bytes()[r.start - 1], b'"' | b'\'')
            && text
                .as_bytes()
                .get(r.end)
                .is_some_and(|b| matches!(b, b'"' | b'\''));
        quoted && value.len() >= 12 && !value.contains(char::is_whitespace) && looks_random(value)
    });
    found
}

/// A source file with its secrets ([`find_in_source`]) replaced by `[REDACTED:kind]`, keeping
/// every line where it was (a multi-line private key leaves its line breaks), so that line
/// numbers still point into the file on disk. Borrowed when there is none.
pub fn redact_source(text: &str) -> Cow<'_, str> {
    replace(text, find_in_source(text), true)
}

/// `text` with every detected secret replaced by `[REDACTED:kind]`; borrowed when there is none.
pub fn redact(text: &str) -> Cow<'_, str> {
    replace(text, find(text), false)
}

fn replace(
    text: &str,
    found: Vec<(std::ops::Range<usize>, SecretKind)>,
    keep_lines: bool,
) -> Cow<'_, str> {
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (r, kind) in found {
        out.push_str(&text[at..r.start]);
        out.push_str("[REDACTED:");
        out.push_str(kind.label());
        out.push(']');
        if keep_lines {
            for _ in text[r.clone()].matches('\n') {
                out.push('\n');
            }
        }
        at = r.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_redaction_keeps_code_and_lines() {
        let code = "let token = lexer.next();\npassword = request.form['password']\nAPI_KEY = \"Zx81kQ2mPq7Lw0Rt5Yv3\"\nAWS = 'AKIAIOSFODNN7EXAMPLE'\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\ndef\n-----END RSA PRIVATE KEY-----\nfn after() {}\n";
        let out = redact_source(code);
        assert!(out.contains("let token = lexer.next();"), "{out}");
        assert!(out.contains("password = request.form['password']"), "{out}");
        assert!(out.contains("API_KEY = \"[REDACTED:secret]\""), "{out}");
        assert!(out.contains("AWS = '[REDACTED:aws_access_key]'"), "{out}");
        assert!(!out.contains("MIIEabc"), "{out}");
        assert_eq!(out.lines().count(), code.lines().count());
        assert_eq!(out.lines().last(), Some("fn after() {}"));
        assert!(matches!(redact_source("fn plain() {}"), Cow::Borrowed(_)));
    }

    #[test]
    fn known_shapes_are_redacted() {
        let cases = [
            ("key AKIAIOSFODNN7EXAMPLE here", "aws_access_key"),
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "github_token",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "github_token",
            ),
            ("use sk-proj-abc123DEF456ghi789JKL012mno", "openai_key"),
            ("slack xoxb-1234567890-abcdefghij", "slack_token"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
                "private_key",
            ),
            ("password=hunter2hunter2", "secret"),
            ("DB_PASSWORD: \"correct horse battery\"", "secret"),
            (
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123XYZ",
                "bearer_token",
            ),
        ];
        for (text, label) in cases {
            let r = redact(text);
            assert!(
                r.contains(&format!("[REDACTED:{label}]")),
                "{text} -> {r} (wanted {label})"
            );
        }
    }

    #[test]
    fn secrets_leave_no_trace() {
        let secret = "AKIAIOSFODNN7EXAMPLE";
        assert!(!redact(&format!("a {secret} b")).contains("IOSFODNN"));
        let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n";
        assert!(!redact(pem).contains("MIIEvQ"), "unterminated block");
    }

    #[test]
    fn ordinary_text_is_borrowed() {
        for text in [
            "the password policy is documented in SECURITY.md",
            "Bearer tokens are described in RFC 6750",
            "Authorization: Bearer $TOKEN",
            "fn sk(x: u32) -> u32 { x }",
        ] {
            assert!(
                matches!(redact(text), Cow::Borrowed(_)),
                "{text} -> {}",
                redact(text)
            );
        }
    }

    #[test]
    fn redaction_is_idempotent() {
        let once = redact("password=hunter2hunter2 and AKIAIOSFODNN7EXAMPLE").into_owned();
        assert_eq!(redact(&once), once);
    }
}
