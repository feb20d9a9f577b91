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
//! tokens, and assignments to a secret-named key. A name counts when a secret word stands
//! anywhere in it, in any case style (`DB_PASSWORD_PROD`, `secretKey`, `x-api-key`,
//! `aws_secret_access_key`), and not before a qualifier (`token_count`, `private_key_path`);
//! the assignment may be code in any language (`=`, `:=`, `:`, `=>`, object literals, dict
//! entries), `.env`, YAML, TOML, INI, shell or a Markdown code span. In chat text any literal
//! value counts; in a source file only one that looks like a secret itself (an entropy scaled
//! to its alphabet, characters that change kind often), is not a stand-in (`changeme`,
//! `${VAR}`, `<your-key>`) and not a reference (`os.environ[…]`, `getpass()`). Only the value
//! is replaced: a redacted secret becomes `[REDACTED:kind]` where it stood, which keeps code
//! and summaries readable (`API_KEY = "[REDACTED:secret]"`, "the deploy uses
//! [REDACTED:aws_access_key]").
//!
//! Each token rule starts with a literal the regex engine skips ahead to, so scanning a file
//! costs little more per rule than a substring search.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

mod assignment;
mod corpus;
mod name;
mod planted;
mod value;

use assignment::*;
pub use corpus::{PlantedFile, planted_corpus, planted_ordinary_lines};
use name::*;
pub use planted::{planted_fragment, planted_samples};
use value::*;

/// The rule set's version. Indexers record it with their settings, so a version indexed under
/// an older rule set is re-read in full (an unchanged file is otherwise reused as it was, with
/// whatever an older rule set let through).
pub const RULES_VERSION: u32 = 3;

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
    /// The value assigned to a secret-named key (`password=…`, `apiKey: "…"`,
    /// `DB_PASSWORD_PROD = '…'`).
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
    /// A piece of a secret-naming word (`pass`, `secret`, `token`, `key`, ...): where the
    /// assignment rule starts looking for a name. Whether the whole name counts is decided by
    /// [`secret_name`]; the regex only lets the scan skip ahead.
    name_hint: Regex,
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
                r#"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@'"`<>]{1,128}:([^\s:/@'"`<>]{3,128})@[A-Za-z0-9\[]"#,
            ),
            bearer: p(r"(?i:\bbearer)\s+([A-Za-z0-9\-._~+/]{16,}=*)"),
            name_hint: p(r"(?i:pass|pwd|secret|token|key|auth|cred)"),
        }
    })
}

/// Where a text comes from: chat text is redacted generously (a summary loses little by an
/// extra `[REDACTED]`), a source file only where the value itself looks like a secret (code
/// is full of `token = next_token()`).
#[derive(Clone, Copy)]
enum Mode {
    Chat,
    Source,
}

type Found = Vec<(Range<usize>, SecretKind)>;

/// Every match of every rule, unmerged (overlaps resolved by [`merge`]).
fn find_all(text: &str, mode: Mode) -> Found {
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
            // Any password but a stand-in (`${DB_PASSWORD}`, `$PASS`, `<password>`, `****`,
            // `%s`, `password`), whatever it starts with (`%40…`, `$…`), nor the label of an
            // earlier redaction (`[REDACTED:aws_access_key]=@h`).
            if let Some(m) = caps.get(1)
                && !stand_in(m.as_str())
                && !text[..from + m.start()].ends_with("[REDACTED:")
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
    assignments(text, mode, &mut found);
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
    merge(find_all(text, Mode::Chat))
}

/// The secrets of a source file: every rule of [`find`], except that an assignment to a
/// secret-named key counts only when its value looks like a secret itself (8 characters or
/// more, random-looking, not a stand-in; see `secret_like`). The looser assignment rule of
/// [`find`] is for chat text; in code it would hide `token = lexer.next()`. Assignments are
/// judged before overlaps are merged, so a dropped assignment can never take a private key or
/// a token inside its value with it.
pub fn find_in_source(text: &str) -> Found {
    merge(find_all(text, Mode::Source))
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
    fn every_planted_secret_is_redacted_inside_other_file_types() {
        let json = |line: &str| line.replace('\\', "\\\\").replace('"', "\\\"");
        for (label, line, secret) in planted_samples() {
            for (what, text) in [
                ("markdown code span", format!("Run `{line}` once.\n")),
                ("markdown fence", format!("```sh\n{line}\n```\n")),
                (
                    "yaml block",
                    format!("script: |\n  {line}\n  make deploy\n"),
                ),
                (
                    "json string",
                    format!("{{\"cell\": \"{}\"}}\n", json(&line)),
                ),
                (
                    "python comment",
                    format!("def f():\n    # {line}\n    pass\n"),
                ),
            ] {
                for (mode, out) in [("source", redact_source(&text)), ("chat", redact(&text))] {
                    assert!(
                        !out.contains(tail(&secret)),
                        "{what} ({mode}): {text}\n-> {out}"
                    );
                    assert!(
                        out.contains(&format!("[REDACTED:{label}]")),
                        "{what} ({mode}): wanted {label}: {out}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_planted_corpus_is_caught_in_every_file_and_its_ordinary_lines_kept() {
        use std::collections::{BTreeMap, BTreeSet};
        let corpus = planted_corpus();
        let mut types: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut fragments = BTreeSet::new();
        let mut missed = Vec::new();
        for f in &corpus {
            // `.yml` and `.yaml` are one file type.
            let ext = f.path.rsplit('.').next().unwrap().replace("yml", "yaml");
            let out = redact_source(&f.text);
            let chat = redact(&f.text);
            assert_eq!(out.lines().count(), f.text.lines().count(), "{}", f.path);
            for (family, label, secret) in &f.secrets {
                types.entry(family).or_default().insert(ext.clone());
                let fragment = planted_fragment(secret);
                fragments.insert(fragment);
                if out.contains(fragment) || chat.contains(fragment) {
                    missed.push(format!("{}: {family} ({secret}) not caught", f.path));
                }
                if !out.contains(&format!("[REDACTED:{label}]")) {
                    missed.push(format!("{}: {family}: no [REDACTED:{label}]", f.path));
                }
            }
            for line in &f.ordinary {
                if !out.lines().any(|l| l == *line) {
                    missed.push(format!("{}: ordinary line changed: {line}", f.path));
                }
                if !matches!(redact_source(line), Cow::Borrowed(_)) {
                    missed.push(format!("{}: ordinary line redacted alone: {line}", f.path));
                }
            }
        }
        assert!(missed.is_empty(), "{}", missed.join("\n"));
        for (family, exts) in &types {
            assert!(exts.len() >= 2, "{family} only in {exts:?}");
        }
        for (label, _) in TOKEN_RULES {
            assert!(types.contains_key(label), "no planted {label}");
        }
        for family in [
            "secret word in the name",
            "object literal",
            "password hash",
            "client_secret",
            "passwd",
            "yaml mapping",
            "toml or ini",
            "dotenv",
            "shell export",
            "markdown code span",
            "url password from %40",
            "url password from $",
            "url_password",
            "private_key",
            "bearer token",
            "assignment",
        ] {
            assert!(types.contains_key(family), "no planted {family}");
        }
        // Each fragment is distinctive, and no ordinary line holds one.
        assert!(fragments.iter().all(|f| f.len() >= 8), "{fragments:?}");
        for line in planted_ordinary_lines() {
            assert!(fragments.iter().all(|f| !line.contains(f)), "{line}");
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

    /// Redacts `text` as a source file and checks that `secret` is gone, its name kept, and
    /// the value replaced by `[REDACTED:secret]` in place.
    #[track_caller]
    fn redacted_in_source(text: &str, secret: &str) {
        let out = redact_source(text);
        assert!(!out.contains(secret), "{text}\n-> {out}");
        assert_eq!(
            out,
            text.replace(secret, "[REDACTED:secret]"),
            "only the value is replaced"
        );
        let chat = redact(text);
        assert!(!chat.contains(secret), "chat: {text}\n-> {chat}");
    }

    #[test]
    fn secret_words_anywhere_in_a_name_in_every_language_and_config_format() {
        let v = "x8JkQ2mPq7Lw0Rt5Yv3H";
        for (what, line) in [
            ("python", "SECRET_KEY = \"{}\""),
            ("python", "DB_PASSWORD_PROD = '{}'"),
            ("python kwarg", "conn = connect(host=h, db_passwd=\"{}\")"),
            ("python typed", "api_key: str = \"{}\""),
            (
                "python dict",
                "creds = {\"client_secret\": \"{}\", \"id\": 3}",
            ),
            ("python index", "os.environ[\"OPENAI_API_KEY\"] = \"{}\""),
            ("python raw string", "SIGNING_KEY = r\"{}\""),
            ("typescript", "  secretKey: \"{}\","),
            ("typescript", "const apiKey: string = '{}';"),
            ("javascript", "headers['x-api-key'] = `{}`;"),
            ("javascript", "const config = { authToken: \"{}\" };"),
            ("go", "apiKey := \"{}\""),
            ("go", "var clientSecret string = \"{}\""),
            ("rust", "const ENCRYPTION_KEY: &str = \"{}\";"),
            ("java", "private static final String DB_PASSWORD = \"{}\";"),
            ("c", "#define MASTER_KEY \"{}\""),
            ("ruby", "config.access_token = \"{}\""),
            ("ruby", "{ :password => \"{}\" }"),
            ("php", "define('DB_PASSWORD', '{}');"),
            ("php", "$settings = ['stripe_secret' => '{}'];"),
            ("php", "$password = \"{}\";"),
            ("kotlin", "val privateKey: String = \"{}\""),
            (
                "c#",
                "var connection = \"Server=db;User Id=sa;Password={};\";",
            ),
            ("json", "{\"passphrase\": \"{}\"}"),
            (
                "json in a notebook",
                "\"    \\\"password\\\": \\\"{}\\\",\\n\",",
            ),
            ("yaml", "  password: {}"),
            ("yaml", "secret_access_key: \"{}\""),
            ("toml", "token = \"{}\""),
            ("ini", "aws_secret_access_key = {}"),
            (".env", "DB_PASS={}"),
            (".env", "STRIPE_WEBHOOK_SECRET=\"{}\""),
            ("shell", "export AUTH_TOKEN={}"),
            ("shell", "docker run -e DB_PASSWORD={} postgres"),
            ("shell", "curl --user-password={} https://example.com"),
            ("makefile", "API_TOKEN ?= {}"),
            ("http", "X-Api-Key: {}"),
            ("properties", "spring.datasource.password={}"),
            (
                "markdown",
                "Set `aws_secret_access_key = {}` in `~/.aws/credentials`.",
            ),
            ("markdown", "- `GITHUB_CREDENTIALS`: `{}`"),
            ("rst", "``SECRET_KEY = \"{}\"``"),
        ] {
            let text = line.replace("{}", v);
            let out = redact_source(&text);
            assert!(!out.contains(v), "{what}: {text}\n-> {out}");
            assert!(out.contains("[REDACTED:secret]"), "{what}: {out}");
            assert!(!redact(&text).contains(v), "{what} (chat): {text}");
        }
    }

    #[test]
    fn only_the_value_is_replaced() {
        redacted_in_source(
            "SECRET_KEY = \"x8JkQ2mPq7Lw0Rt5Yv3H\"\nDEBUG = False\n",
            "x8JkQ2mPq7Lw0Rt5Yv3H",
        );
        redacted_in_source(
            "export const cfg = {\n  secretKey: \"Vb7nQ2xLp9Wm4Kt8Rz3J\",\n};\n",
            "Vb7nQ2xLp9Wm4Kt8Rz3J",
        );
        // A bcrypt hash begins with `$`; it is not a variable.
        redacted_in_source(
            "  passwordHash: \"$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW\",",
            "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
        );
        // AWS's documented example reads like a secret, so it is treated as one.
        redacted_in_source(
            "```ini\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n```\n",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        );
        redacted_in_source(
            "SECRET_KEY = 'django-insecure-k2#x9v@q1z8m4p7w0r3t6y5u'",
            "django-insecure-k2#x9v@q1z8m4p7w0r3t6y5u",
        );
        redacted_in_source(
            "HEROKU_API_KEY=550e8400-e29b-41d4-a716-446655440000",
            "550e8400-e29b-41d4-a716-446655440000",
        );
        redacted_in_source("DB_PASSWORD: 'P@ssw0rd!9'", "P@ssw0rd!9");
        redacted_in_source("signing_key = \"9f86d081884c7d65\"", "9f86d081884c7d65");
        // A `&` inside a value is part of it; in a query string, `&name=` ends it.
        redacted_in_source("DB_PASSWORD=Zq7&vLm2Xw7Rt4", "Zq7&vLm2Xw7Rt4");
        redacted_in_source(
            "![ci](https://codecov.io/gh/o/r/badge.svg?token=yt4XSmQNKQ&branch=main)",
            "yt4XSmQNKQ",
        );
    }

    #[test]
    fn url_passwords_whatever_they_begin_with() {
        for (text, password) in [
            (
                "DATABASE_URL=postgres://app:%40Zq7vLm2Xw7@db:5432/prod",
                "%40Zq7vLm2Xw7",
            ),
            (
                "url = \"mysql://root:$ecr3tP4ss@localhost/app\"",
                "$ecr3tP4ss",
            ),
            ("redis://default:*Kp3Nc6Bd1@cache:6379", "*Kp3Nc6Bd1"),
            ("amqp://guest:hunter2hunter2@mq/", "hunter2hunter2"),
        ] {
            for (what, out) in [("source", redact_source(text)), ("chat", redact(text))] {
                assert!(!out.contains(password), "{what}: {text} -> {out}");
                assert!(out.contains("[REDACTED:url_password]"), "{what}: {out}");
                assert!(out.contains("@"), "{what}: the host is kept: {out}");
            }
        }
        for text in [
            "postgres://user:password@localhost/db",
            "postgres://user:pass@localhost/db",
            "postgres://user:${DB_PASSWORD}@localhost/db",
            "postgres://user:$DB_PASSWORD@localhost/db",
            "postgres://user:xxx@localhost/db",
            "postgres://user:****@localhost/db",
            "postgres://user:<password>@localhost/db",
            "postgres://user:{password}@localhost/db",
            "postgres://user:%s@localhost/db",
            "postgres://user:%(password)s@localhost/db",
            "postgres://user:{{ db_password }}@localhost/db",
            "https://user:changeme@example.com",
            // A URL's closing quote ends it: no password runs past it.
            "fetch(\"https://url:8000\");@something else",
        ] {
            assert!(
                matches!(redact_source(text), Cow::Borrowed(_)),
                "{text} -> {}",
                redact_source(text)
            );
            assert!(
                matches!(redact(text), Cow::Borrowed(_)),
                "chat: {text} -> {}",
                redact(text)
            );
        }
    }

    #[test]
    fn references_stand_ins_and_ordinary_code_are_left_alone_in_source() {
        for code in [
            // References to a secret held elsewhere.
            "SECRET_KEY = os.environ[\"SECRET_KEY\"]",
            "SECRET_KEY = os.environ.get(\"SECRET_KEY\", \"\")",
            "password = getpass()",
            "password = getpass.getpass(\"Password: \")",
            "api_key = process.env.API_KEY",
            "  apiKey: process.env.OPENAI_API_KEY,",
            "DB_PASSWORD = env(\"DB_PASSWORD\")",
            "token := os.Getenv(\"GITHUB_TOKEN\")",
            "let api_key = std::env::var(\"API_KEY\")?;",
            "password = user.password",
            "secret_key = settings.SECRET_KEY",
            "secret_key_base: <%= ENV[\"SECRET_KEY_BASE\"] %>",
            "password: ${DB_PASSWORD}",
            "password: \"{{ vault_db_password }}\"",
            "token: ${{ secrets.GITHUB_TOKEN }}",
            "password = \"%(db_password)s\"",
            "DB_PASSWORD=$POSTGRES_PASSWORD",
            "export API_TOKEN=\"$(vault read -field=token secret/ci)\"",
            "token = f\"{prefix}{suffix}\"",
            "const auth = `Bearer ${token}`;",
            // Stand-ins.
            "SECRET_KEY = \"changeme\"",
            "api_key = \"<your-api-key>\"",
            "token: \"****************\"",
            "password = \"example-password-123\"",
            "API_KEY = \"your-api-key-here\"",
            "API_KEY = \"dummy-key-for-tests\"",
            "password = \"test\"",
            "secret = \"secret\"",
            "password = None",
            "api_key: str = \"\"",
            "password: null",
            // Ordinary code.
            "token_count = 3",
            "max_tokens = 4096",
            "password_field = \"password\"",
            "PASSWORD_FIELD = \"user_password\"",
            "let token = next_token();",
            "let token = lexer.next();",
            "key = cache_key(x)",
            "cache_key = \"user:42:profile\"",
            "sort_key = \"created_at\"",
            "let key = format!(\"{}:{}\", a, b);",
            "\"token\": tokenize(s),",
            "tokens = tokenize(s)",
            "token = tokens[i]",
            "private_key_path = \"/etc/ssl/key.pem\"",
            "SSH_KEY_FILE=~/.ssh/id_ed25519",
            "PWD=/home/user/project",
            "pwd = os.getcwd()",
            "public_key = \"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9f8\"",
            "SECRET_NAME = \"prod/db/password\"",
            "api_key_env = \"OPENAI_API_KEY\"",
            "const TOKEN_KEY = \"accessToken\";",
            "token_type = \"Bearer\"",
            "AUTH_URL = \"https://auth.example.com/oauth/token\"",
            "credentials: \"include\",",
            "passwordRegex = /^(?=.*\\d)(?=.*[a-z]).{8,}$/",
            "if token == Token::Eof {",
            "Kind::Password => \"password\",",
            "SecretKind::Token(label) => label,",
            "let secret = Secret::new(value);",
            "auth = HTTPBasicAuth(user, pw)",
            "password_hash = bcrypt.hash(pw)",
            "    password: Option<String>,",
            "  apiKey?: string;",
            "Password string `json:\"password\"`",
            "<input type=\"password\" name=\"password\" autocomplete=\"current-password\">",
            "first_pass = True",
            "\"passport\": \"^0.7.0\",",
            "# password: see the team vault",
            "The `API_KEY` variable: set it in your shell.",
            "secrets: inherit",
            "TOKEN_ENCODING = \"base64url\"",
            "keyboard_layout = \"dvorak-programmer\"",
            // Found scanning crates' sources: types, constants, regexes, ARNs, query strings.
            "pub trait TryKeyInit: KeySizeUser + Sized {",
            "fn is_stringlike(token: &TokenTree) -> bool {",
            "    my_private_key: &ec::Seed,",
            "    pub password: Base64Data,",
            "                iKey1: sqlite3_int64,",
            "        let idx2token = token2idx",
            "\"apiKey\": \"theApiKey\",",
            "    const INITIAL_KEY_0: u32 = 0x12345678;",
            "    (\"google_api_key\", r\"\\bAIza[0-9A-Za-z_\\-]{35}\"),",
            "\"SecretId\": \"arn:aws:secretsmanager:us-east-1:111122223333:secret:id-ABCD1E\",",
            "\"Action=Op&Version=1.0&Tags.1.key=k1&Tags.1.value=v1\"",
            "for name in [\"x-SeCrEt\", \"X-secret\", \"X-SeCrEt\"] {",
            "e.token=t.key||n.pass,a.secret=b?.c",
        ] {
            assert!(
                matches!(redact_source(code), Cow::Borrowed(_)),
                "{code} -> {}",
                redact_source(code)
            );
        }
    }

    #[test]
    fn chat_is_redacted_generously_but_not_references() {
        for (text, secret) in [
            ("password=hunter2hunter2", "hunter2hunter2"),
            (
                "DB_PASSWORD_PROD: \"correct horse battery\"",
                "correct horse battery",
            ),
            ("my secretKey: Qw3rty!", "Qw3rty!"),
            ("export GITHUB_TOKEN_CI=abc123xyz", "abc123xyz"),
            ("the passphrase = trombone", "trombone"),
        ] {
            let out = redact(text);
            assert!(!out.contains(secret), "{text} -> {out}");
            assert!(out.contains("[REDACTED:secret]"), "{text} -> {out}");
        }
        for text in [
            "password = getpass()",
            "api_key = os.environ[\"API_KEY\"]",
            "apiKey: process.env.API_KEY",
            "max_tokens: 4096",
            "token: ${TOKEN}",
            "password: <your password>",
            "secretKey: changeme",
            "the token budget is 8000",
            "PRIVATE_KEY_PATH=/etc/ssl/key.pem",
        ] {
            assert!(
                matches!(redact(text), Cow::Borrowed(_)),
                "{text} -> {}",
                redact(text)
            );
        }
    }

    #[test]
    fn names_are_read_in_every_case_style() {
        let w: Vec<&str> = words("dbPasswordProd").collect();
        assert_eq!(w, ["db", "Password", "Prod"]);
        let w: Vec<&str> = words("HTTPToken_v2").collect();
        assert_eq!(w, ["HTTP", "Token", "v", "2"]);
        let w: Vec<&str> = words("--x-api-key").collect();
        assert_eq!(w, ["x", "api", "key"]);
        for name in [
            "SECRET_KEY",
            "secret_key",
            "secretKey",
            "SecretKey",
            "secret-key",
            "SECRETKEY",
            "DB_PASSWORD_PROD",
            "dbPasswordProd",
            "passwordHash",
            "aws_secret_access_key",
            "client_secret",
            "clientSecret",
            "authToken",
            "GITHUB_TOKEN",
            "token",
            "credentials",
            "passphrase",
            "pwd",
            "DB_PASS",
            "apiKey",
            "x-api-key",
            "privateKey",
            "SECRET_KEY_BASE",
            "spring.datasource.password",
            "APIKEY",
            "stripe_key",
        ] {
            assert!(secret_name(name), "{name}");
        }
        for name in [
            "key",
            "cache_key",
            "sortKey",
            "public_key",
            "token_count",
            "tokenizer",
            "password_field",
            "private_key_path",
            "SECRET_NAME",
            "secretary",
            "passport",
            "bypass",
            "keyboard",
            "monkey",
            "OAuthProvider",
            "authorization",
            "max_tokens",
        ] {
            assert!(!secret_name(name), "{name}");
        }
    }

    #[test]
    fn a_minified_line_full_of_names_is_scanned_in_one_pass() {
        // One long line, a name hint every few bytes and no value: linear, not quadratic.
        let line = "e.token=t.key||n.pass,".repeat(20_000);
        let started = std::time::Instant::now();
        assert!(matches!(redact_source(&line), Cow::Borrowed(_)));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// Pieces the assignment scanner reacts to, to assemble texts at random from.
    #[rustfmt::skip]
    const PIECES: &[&str] = &[
        "password", "API_KEY", "secretKey", "token", "key", "=", ":", ":=", "=>", ",", "\"", "'",
        "`", "\\", "\\\"", "$", "${", "{", "}", "(", "[", "]", "&", "&a=", "#define ", " ", "\t",
        "\n", "x8JkQ2mPq7Lw0Rt5", "Zq7vLm2Xw7", "://", "u:", "@h", "é", "日本", "r#", "f", "export ",
        "DB_PASS", "-e ", "0x1F", "//", "#", ".", "%40", "%(", "changeme", "EXAMPLE", "Bearer ",
        "-----BEGIN PRIVATE KEY-----", "AKIAZ7QX3M2KPLW9RT4B",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn any_text_keeps_its_lines_and_is_redacted_once(
            pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..48)
        ) {
            let text = pieces.concat();
            let out = redact_source(&text).into_owned();
            proptest::prop_assert_eq!(out.matches('\n').count(), text.matches('\n').count());
            proptest::prop_assert_eq!(redact_source(&out), out.as_str());
            let chat = redact(&text).into_owned();
            proptest::prop_assert_eq!(redact(&chat), chat.as_str());
        }
    }

    #[test]
    fn redaction_is_idempotent() {
        let samples = planted_samples();
        let file: String = samples.iter().map(|s| format!("{}\n", s.1)).collect();
        for f in [redact, redact_source] {
            let once = f(&file).into_owned();
            assert_eq!(f(&once), once);
        }
        // Cases the property test below found: a label is never read as a name, a type or a
        // URL's user.
        for text in [
            "passwordu:@h&&a=x8JkQ2mPq7Lw0Rt5password",
            "password:&a=x8JkQ2mPq7Lw0Rt5#define =#define ",
            "secretKey://AKIAZ7QX3M2KPLW9RT4B=@h",
            "password:Bearer AKIAZ7QX3M2KPLW9RT4B=",
            "DB_PASS:x8JkQ2mPq7Lw0Rt5'=://-----BEGIN PRIVATE KEY-----",
        ] {
            for f in [redact, redact_source] {
                let once = f(text).into_owned();
                assert_eq!(f(&once), once, "{text}");
            }
        }
    }
}
