//! Secret detection and redaction.
//!
//! Anything ctxgate *derives* from user text (summaries of old conversation turns, aggregates)
//! passes through [`redact`] first, so a key pasted into a chat months ago is never carried
//! forward in clear by a summary. Text kept verbatim is the client's own and is not touched.
//! Indexed files pass through [`redact_source`] before they are chunked: a key committed to a
//! repository is never stored in a segment, embedded, summarised or returned in a piece.
//!
//! Detection follows the rule set of a well-kept scanner (gitleaks' rules are the reference):
//! provider token shapes with their fixed prefixes ([`TOKEN_RULES`]), PEM private keys (also
//! with escaped `\n` line breaks, as inside JSON), passwords inside URLs, random-looking bearer
//! tokens, and assignments to a secret-named key (`password = …`, `"api_key": "…"`) whose value
//! passes an entropy check. A redacted secret becomes `[REDACTED:kind]`, which keeps a summary
//! readable ("the deploy uses [REDACTED:aws_access_key]").
//!
//! Each token rule starts with a literal the regex engine skips ahead to, so scanning a file
//! costs little more per rule than a substring search.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

/// The rule set's version. Indexers record it with their settings, so a version indexed under
/// an older rule set is re-read in full (an unchanged file is otherwise reused as it was, with
/// whatever an older rule set let through).
pub const RULES_VERSION: u32 = 2;

/// What kind of secret a match was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretKind {
    /// `-----BEGIN ... PRIVATE KEY-----` blocks.
    PrivateKey,
    /// A provider token recognised by its shape; the label names the rule
    /// (`aws_access_key`, `stripe_key`, ...).
    Token(&'static str),
    /// The password of a `scheme://user:password@host` URL.
    UrlPassword,
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
            SecretKind::Token(label) => label,
            SecretKind::UrlPassword => "url_password",
            SecretKind::Assignment => "secret",
            SecretKind::BearerToken => "bearer_token",
        }
    }
}

/// Provider tokens: (label, pattern). Each pattern is a shape a provider documents or a scanner
/// recognises — a fixed prefix and a body of a known alphabet and length — so ordinary code and
/// prose do not match. When two rules match at one place, the longer match wins, then the
/// earlier rule.
pub const TOKEN_RULES: &[(&str, &str)] = &[
    (
        "aws_access_key",
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
    ),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    (
        "gitlab_token",
        r"\bgl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|oas)-[A-Za-z0-9_\-]{20,}",
    ),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    (
        "stripe_key",
        r"\b(?:sk|rk|pk)_(?:live|test|prod)_[0-9A-Za-z]{10,99}\b",
    ),
    (
        "anthropic_key",
        r"\bsk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{32,}",
    ),
    ("openai_key", r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{20,}"),
    (
        "slack_token",
        r"\bxox[abposre]-[A-Za-z0-9\-]{10,}|https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+",
    ),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    (
        "sendgrid_key",
        r"\bSG\.[A-Za-z0-9_\-]{20,24}\.[A-Za-z0-9_\-]{39,50}",
    ),
    ("mailgun_key", r"\bkey-[0-9a-zA-Z]{32}\b"),
    ("mailchimp_key", r"\b[0-9a-f]{32}-us\d{1,2}\b"),
    ("twilio_key", r"\bSK[0-9a-fA-F]{32}\b"),
    ("huggingface_token", r"\bhf_[A-Za-z]{34,40}\b"),
    ("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    ("docker_token", r"\bdckr_pat_[A-Za-z0-9_\-]{27,}"),
    ("shopify_token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    (
        "square_token",
        r"\b(?:sq0atp|sq0csp)-[0-9A-Za-z_\-]{22,60}|\bEAAA[A-Za-z0-9_\-]{60}\b",
    ),
    ("linear_key", r"\blin_api_[A-Za-z0-9]{40}\b"),
    ("postman_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    (
        "doppler_token",
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b",
    ),
    ("vault_token", r"\bhv[sb]\.[A-Za-z0-9_\-]{24,}"),
    ("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("sentry_token", r"\bsntry[su]_[A-Za-z0-9+/=_\-]{30,}"),
    (
        "age_secret_key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    ),
    ("telegram_token", r"\b\d{8,10}:AA[0-9A-Za-z_\-]{33}\b"),
    (
        "discord_webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+",
    ),
    (
        "firebase_key",
        r"\bAAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{120,}",
    ),
    ("azure_storage_key", r"AccountKey=[A-Za-z0-9+/]{86}=="),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
    ),
];

struct Patterns {
    /// The token rules, in [`TOKEN_RULES`]' order.
    tokens: Vec<(&'static str, Regex)>,
    /// PEM blocks; an unterminated block (a truncated paste) is redacted to the end.
    private_key: Regex,
    /// `scheme://user:password@`: the password is group 1.
    url_password: Regex,
    /// `Bearer <token>`: the token is group 1.
    bearer: Regex,
    /// A secret-naming word (`password`, `api_key`, ...), anywhere in a key's name.
    assignment_key: Regex,
    /// Right after such a word: `=`/`:` and a double-quoted (1), single-quoted (2) or bare (3)
    /// value. Split from the key so the scan can skip ahead to the words.
    assignment_value: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let p = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("secret pattern {s}: {e}"));
        Patterns {
            tokens: TOKEN_RULES.iter().map(|(l, r)| (*l, p(r))).collect(),
            private_key: p(
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
            ),
            url_password: p(
                r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@'`<>]{1,128}:([^\s:/@'`<>]{3,128})@[A-Za-z0-9\[]",
            ),
            bearer: p(r"(?i:\bbearer)\s+([A-Za-z0-9\-._~+/]{16,}=*)"),
            assignment_key: p(
                r"(?i)(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?)",
            ),
            assignment_value: p(
                r#"^["']?[ \t]*(?::=|=|:)[ \t]*(?:"([^"\n]{3,})"|'([^'\n]{3,})'|([^\s"',;]{3,}))"#,
            ),
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

/// Whether a token looks random rather than like a placeholder (`<your token here>`,
/// `$TOKEN`, `xxxxxxxx...`).
fn looks_random(token: &str) -> bool {
    let has_digit = token.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = token.bytes().any(|b| b.is_ascii_alphabetic());
    has_digit && has_alpha && entropy(token) >= 3.0
}

/// Whether a URL's password is a stand-in (`${DB_PASSWORD}`, `$PASS`, `<password>`, `****`,
/// `%s`) rather than a secret.
fn placeholder(value: &str) -> bool {
    value.starts_with(['$', '<', '{', '%', '*'])
        || value.bytes().all(|b| b == value.as_bytes()[0])
        || matches!(
            value.to_ascii_lowercase().as_str(),
            "password" | "pass" | "passwd" | "secret" | "changeme" | "example"
        )
}

type Found = Vec<(Range<usize>, SecretKind)>;

/// Every match of every rule, unmerged (overlaps resolved by [`merge`]).
fn find_all(text: &str) -> Found {
    let p = patterns();
    let mut found = Found::new();
    // Rule by rule: each starts with a literal the regex engine skips ahead to. (One
    // alternation over every rule was ~1000 times slower on large files: its automaton does
    // not fit the lazy DFA's cache.) Equal matches keep the earlier rule's label (`merge`).
    for (label, re) in &p.tokens {
        for m in re.find_iter(text) {
            found.push((m.range(), SecretKind::Token(label)));
        }
    }
    for m in p.private_key.find_iter(text) {
        found.push((m.range(), SecretKind::PrivateKey));
    }
    // URLs: the pattern has no literal prefix to skip ahead to, so it is tried only around each
    // `://` (a scheme is at most 21 bytes before it; user, password and host follow within
    // 260), which keeps it as fast as the prefixed rules.
    let mut next = 0;
    for (at, _) in text.match_indices("://") {
        let mut from = at.saturating_sub(22).max(next);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let mut to = (at + 264).min(text.len());
        while !text.is_char_boundary(to) {
            to -= 1;
        }
        for caps in p.url_password.captures_iter(&text[from..to]) {
            if let Some(m) = caps.get(1)
                && !placeholder(m.as_str())
            {
                found.push((from + m.start()..from + m.end(), SecretKind::UrlPassword));
                next = next.max(from + m.end());
            }
        }
    }
    for caps in p.bearer.captures_iter(text) {
        if let Some(m) = caps.get(1)
            && looks_random(m.as_str())
        {
            found.push((m.range(), SecretKind::BearerToken));
        }
    }
    for key in p.assignment_key.find_iter(text) {
        let rest = &text[key.end()..];
        let Some(caps) = p.assignment_value.captures(rest) else {
            continue;
        };
        // The value is whichever alternative matched.
        if let Some(m) = (1..=3).find_map(|g| caps.get(g))
            && !m.as_str().starts_with("[REDACTED")
        {
            found.push((
                key.end() + m.start()..key.end() + m.end(),
                SecretKind::Assignment,
            ));
        }
    }
    found
}

/// Whether a kind names what the secret is (a provider's token, a key, a URL's password)
/// rather than only where it stood (an assignment, a bearer header).
fn specific(kind: SecretKind) -> bool {
    !matches!(kind, SecretKind::Assignment | SecretKind::BearerToken)
}

/// Sorted, non-overlapping ranges: overlapping matches become one, labelled by the first
/// specific kind among them (else the first kind).
fn merge(mut found: Found) -> Found {
    found.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut merged = Found::with_capacity(found.len());
    for (r, k) in found {
        match merged.last_mut() {
            Some((last, kind)) if r.start < last.end => {
                last.end = last.end.max(r.end);
                if !specific(*kind) && specific(k) {
                    *kind = k;
                }
            }
            _ => merged.push((r, k)),
        }
    }
    merged
}

/// The byte ranges of secrets in `text`, with their kinds, sorted and non-overlapping.
pub fn find(text: &str) -> Found {
    merge(find_all(text))
}

/// The secrets of a source file: every rule of [`find`], except that an assignment to a
/// secret-named key counts only when its value is *quoted* and looks random (at least 12
/// characters, letters and digits, entropy of 3 bits per character or more). The looser
/// assignment rule of [`find`] is for chat text; in code it would hide `token = lexer.next()`.
/// Assignments are judged before overlaps are merged, so a dropped assignment can never take a
/// private key or a token inside its value with it.
pub fn find_in_source(text: &str) -> Found {
    let mut found = find_all(text);
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
    merge(found)
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

fn replace(text: &str, found: Found, keep_lines: bool) -> Cow<'_, str> {
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

/// One planted secret per rule, for tests here and in the indexer and CLI suites: (label, a
/// line of text holding the secret, the secret itself). Fabricated values of each provider's
/// shape; none is a real credential.
pub fn planted_samples() -> Vec<(&'static str, String, String)> {
    let s = |label: &'static str, line: &str, secret: &str| {
        (label, line.replace("{}", secret), secret.to_string())
    };
    vec![
        s("aws_access_key", "aws_key_id = {}", "AKIAZ7QX3M2KPLW9RT4B"),
        s(
            "github_token",
            "GH={}",
            "ghp_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2",
        ),
        s("gitlab_token", "gitlab: {}", "glpat-X9mK2pQ7vL4wR8tZ3nB6"),
        s(
            "google_api_key",
            "const MAPS = \"{}\";",
            "AIzaSyD4kQ9mXz2Lp7Vw3Rt8Yn6Bc1Hf5Jg0As2",
        ),
        s(
            "stripe_key",
            "stripe.api_key = {}",
            "sk_live_51Hq8ZxKp2Lm7Vw3Rt9Yn4Bc6",
        ),
        s(
            "anthropic_key",
            "ANTHROPIC={}",
            "sk-ant-api03-Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1",
        ),
        s(
            "openai_key",
            "client = OpenAI(key={})",
            "sk-proj-Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0",
        ),
        s(
            "slack_token",
            "SLACK={}",
            "xoxb-2048193847-7749201938475-Kp3Nc6Bd1Hf5",
        ),
        s(
            "npm_token",
            "//registry.npmjs.org/:_authToken={}",
            "npm_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2",
        ),
        s(
            "pypi_token",
            "TWINE={}",
            "pypi-AgEIcHlwaS5vcmcCJDQ4ZjJhYjU5LTk3MzktNDk5Yi1hNWY3LWE4ZTU2ZDM4MjQxYQ",
        ),
        s(
            "sendgrid_key",
            "sg = {}",
            "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",
        ),
        s(
            "mailgun_key",
            "MAILGUN={}",
            "key-8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "mailchimp_key",
            "MAILCHIMP={}",
            "8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e-us14",
        ),
        s(
            "twilio_key",
            "TWILIO={}",
            "SK8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "huggingface_token",
            "HF={}",
            "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",
        ),
        s(
            "digitalocean_token",
            "DO={}",
            "dop_v1_8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "docker_token",
            "DOCKER={}",
            "dckr_pat_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5",
        ),
        s(
            "shopify_token",
            "SHOPIFY={}",
            "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",
        ),
        s(
            "square_token",
            "SQUARE={}",
            "sq0atp-Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1",
        ),
        s(
            "linear_key",
            "LINEAR={}",
            "lin_api_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Z",
        ),
        s(
            "postman_key",
            "POSTMAN={}",
            "PMAK-8f3a9c2e7b1d4f6a0c5e9b2d-7f1a3c8e8f3a9c2e7b1d4f6a0c5e9b2d7f",
        ),
        s(
            "doppler_token",
            "DOPPLER={}",
            "dp.pt.Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx",
        ),
        s(
            "vault_token",
            "VAULT_TOKEN_VALUE={}",
            "hvs.Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8",
        ),
        s(
            "databricks_token",
            "DATABRICKS={}",
            "dapi8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "sentry_token",
            "SENTRY={}",
            "sntrys_eyJpYXQiOjE3MDAwMDAwMDAsInVybCI6Imh0dHBz",
        ),
        s(
            "age_secret_key",
            "{}",
            "AGE-SECRET-KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6MU",
        ),
        s(
            "telegram_token",
            "BOT={}",
            "7281940365:AAQ8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8",
        ),
        s(
            "discord_webhook",
            "hook = \"{}\"",
            "https://discord.com/api/webhooks/1093847562019384756/Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0",
        ),
        s(
            "firebase_key",
            "FCM={}",
            "AAAAQ8vLm2X:APA91bQ8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1Mv6Ny3Lb9Kc2Pd5Ge8HjQ8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1Mv6Ny3Lb9Kc2Pd5Ge8Hj",
        ),
        s(
            "azure_storage_key",
            "DefaultEndpointsProtocol=https;AccountName=acme;{};EndpointSuffix=core.windows.net",
            "AccountKey=Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1Mv6Ny3Lb9Kc2Pd5Ge8HjQ8vLm2Xw7Rt4Yz9Kp3Nc6==",
        ),
        s(
            "jwt",
            "auth: {}",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQ4MjEiLCJyb2xlIjoiYWRtaW4ifQ.Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1",
        ),
        s(
            "url_password",
            "DATABASE_URL=postgres://app:{}@db.internal:5432/prod",
            "Tr4mp0l1ne-Wh1sk3y-88",
        ),
        s(
            "private_key",
            "{\"type\": \"service_account\", \"private_key\": \"{}\"}",
            "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n",
        ),
        s(
            "secret",
            "const API_KEY = \"{}\";",
            "Zx81kQ2mPq7Lw0Rt5Yv3Hn",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A distinctive part of a secret: the last 10 characters of its longest alphanumeric run.
    fn tail(secret: &str) -> &str {
        let run = secret
            .split(|c: char| !c.is_ascii_alphanumeric())
            .max_by_key(|r| r.len())
            .unwrap_or(secret);
        &run[run.len().saturating_sub(10)..]
    }

    #[test]
    fn every_planted_secret_is_redacted_with_its_label_in_chat_and_in_source() {
        let samples = planted_samples();
        let labelled: std::collections::HashSet<&str> = samples.iter().map(|s| s.0).collect();
        for (label, _) in TOKEN_RULES {
            assert!(
                labelled.contains(label),
                "no planted sample for rule {label}"
            );
        }
        for (label, line, secret) in &samples {
            for (what, out) in [
                ("redact", redact(line)),
                ("redact_source", redact_source(line)),
            ] {
                assert!(
                    out.contains(&format!("[REDACTED:{label}]")),
                    "{what}: {line} -> {out} (wanted {label})"
                );
                assert!(!out.contains(tail(secret)), "{what}: {line} -> {out}");
            }
        }
    }

    #[test]
    fn a_file_of_every_sample_keeps_its_lines_and_leaks_nothing() {
        let samples = planted_samples();
        let file: String = samples.iter().map(|s| format!("{}\n", s.1)).collect();
        let out = redact_source(&file);
        assert_eq!(out.lines().count(), file.lines().count());
        for (_, _, secret) in &samples {
            assert!(!out.contains(tail(secret)), "{secret} in\n{out}");
        }
    }

    #[test]
    fn a_pem_key_as_a_quoted_json_value_is_redacted_in_source() {
        // The quoted value is also an assignment to `private_key`, which source rules drop
        // (it holds spaces): the key inside must not go with it.
        let json = "{\n  \"private_key\": \"-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAz9f\\n-----END RSA PRIVATE KEY-----\\n\",\n  \"client_email\": \"a@b.iam.gserviceaccount.com\"\n}\n";
        let out = redact_source(json);
        assert!(!out.contains("MIIEowIBAAKCAQEAz9f"), "{out}");
        assert!(out.contains("[REDACTED:private_key]"), "{out}");
        assert!(out.contains("client_email"), "{out}");
    }

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
    fn ordinary_code_stays_untouched_in_source() {
        for code in [
            "let token = lexer.next();",
            "password = request.form['password']",
            "\"password\": \"<your password>\",",
            "PASSWORD_FIELD = \"password\"",
            "api_key = os.environ[\"API_KEY\"]",
            "let url = \"postgres://user:${DB_PASSWORD}@localhost/db\";",
            "const URL: &str = \"https://user:password@example.com\";",
            "git clone https://github.com/owner/repo.git",
            "sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
            "fn sk(x: u32) -> u32 { x }",
            "let skip_list = vec![];",
            "token: \"xxxxxxxxxxxxxxxxxxxx\"",
        ] {
            assert!(
                matches!(redact_source(code), Cow::Borrowed(_)),
                "{code} -> {}",
                redact_source(code)
            );
        }
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
    fn bearer_tokens_and_chat_assignments_are_redacted() {
        let cases = [
            ("password=hunter2hunter2", "secret"),
            ("DB_PASSWORD: \"correct horse battery\"", "secret"),
            (
                "Authorization: Bearer 4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
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
    fn redaction_is_idempotent() {
        let samples = planted_samples();
        let file: String = samples.iter().map(|s| format!("{}\n", s.1)).collect();
        for f in [redact, redact_source] {
            let once = f(&file).into_owned();
            assert_eq!(f(&once), once);
        }
    }
}
