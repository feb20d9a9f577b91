//! Credentials of private git sources.
//!
//! What a reference may be named, the secret it names, and scrubbing that secret out of any
//! text before the text is shown, logged or stored.
//!
//! A git source names a credential (`{"kind":"git", .., "credential":"ci-token"}`); the token
//! itself stays with the host that fetches (a file of the data directory, or AWS Secrets
//! Manager) and is looked up within the project's org only. Nothing here does I/O: the hosts
//! read and write the secret, this module decides its shape and what must never leak.

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The user name sent with a token when the credential names none: GitHub takes any user
/// name with a token (`x-access-token` is the one its app tokens document), as do GitLab's
/// personal and project tokens.
pub const DEFAULT_USERNAME: &str = "x-access-token";

/// A credential's secret: sent to the git server as HTTP Basic `username:token`.
///
/// `Debug` shows the user name only, so a stray `{:?}` cannot print the token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    /// The Basic-auth user name (`x-access-token`, `oauth2`, a forge user).
    #[serde(default = "default_username")]
    pub username: String,
    /// The token or password.
    pub token: String,
}

fn default_username() -> String {
    DEFAULT_USERNAME.to_owned()
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl Credential {
    /// A credential for `token` with `username` (or [`DEFAULT_USERNAME`]); the token is trimmed
    /// of the line end a file or `echo` leaves, and must be one line of visible characters:
    /// anything else would make a broken header, or a token that shows in a terminal.
    pub fn new(username: Option<&str>, token: &str) -> Result<Self, &'static str> {
        let token = token.trim_end_matches(['\r', '\n']);
        let username = username.unwrap_or(DEFAULT_USERNAME);
        if token.is_empty() {
            return Err("the token is empty");
        }
        if token.chars().any(|c| c.is_control() || c == ' ') {
            return Err("the token must be one line without spaces or control characters");
        }
        if username.is_empty() || username.chars().any(|c| c.is_control() || c == ':') {
            return Err("the user name must be non-empty, without `:` or control characters");
        }
        if token.len() < 8 {
            return Err("the token is shorter than 8 characters");
        }
        Ok(Self {
            username: username.to_owned(),
            token: token.to_owned(),
        })
    }

    /// Every form the token could take in a text: itself, percent-encoded (in a URL), and the
    /// base64 of `username:token` (an `Authorization: Basic` header).
    fn forms(&self) -> Vec<String> {
        let basic = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.username, self.token));
        let mut forms = vec![self.token.clone(), percent_encoded(&self.token), basic];
        forms.sort();
        forms.dedup();
        // Longest first, so a form containing another is replaced whole.
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        forms
    }

    /// `text` with every form of this credential's token replaced, then [`scrub`]bed.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for form in self.forms() {
            if !form.is_empty() {
                out = out.replace(&form, REDACTED);
            }
        }
        scrub(&out)
    }
}

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Whether `name` may name a credential: 1-64 letters, digits, `-`, `_` or `.`, not starting
/// with `.` (it becomes a file name and part of a secret's name).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The name of `org`'s credential `name` in AWS Secrets Manager: the org is part of the name,
/// so an org's reference can only ever reach that org's secrets (and IAM can be scoped by it).
pub fn secret_id(prefix: &str, org: &str, name: &str) -> String {
    format!("{}/{org}/{name}", prefix.trim_end_matches('/'))
}

/// `text` without the secrets any text about a URL or an HTTP exchange can carry, whatever
/// the token: the password of a URL's user info (`https://user:secret@host` becomes
/// `https://user:<redacted>@host`) and the value of `Authorization` headers.
pub fn scrub(text: &str) -> String {
    scrub_authorization(&scrub_userinfo(text))
}

/// Replaces the password of every `scheme://user:password@` in `text`.
fn scrub_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at the first `/`, `?`, `#` or whitespace.
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _)) => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(REDACTED);
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Replaces what follows `Authorization:` (any case), up to the line's end, keeping the scheme.
fn scrub_authorization(text: &str) -> String {
    const NEEDLE: &str = "authorization";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(found) = lower[from..].find(NEEDLE) {
        let start = from + found + NEEDLE.len();
        out.push_str(&text[from..start]);
        // `Authorization: Basic xyz`, `"authorization": "Bearer xyz"`, `authorization=xyz`.
        let after = &text[start..];
        let sep = after
            .find(|c: char| !matches!(c, ':' | '=' | '"' | '\'' | ' '))
            .unwrap_or(after.len());
        if sep == 0 {
            from = start;
            continue;
        }
        out.push_str(&after[..sep]);
        let value = &after[sep..];
        let end = value
            .find(['\r', '\n', '"', '\'', ',', '}'])
            .unwrap_or(value.len());
        let shown = &value[..end];
        if let Some((scheme, _)) = shown.split_once(' ') {
            out.push_str(scheme);
            out.push(' ');
        }
        out.push_str(REDACTED);
        from = start + sep + end;
    }
    out.push_str(&text[from..]);
    out
}

/// `s` with every byte outside URL-safe characters percent-encoded, as a URL would carry it.
fn percent_encoded(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain() {
        for ok in ["ci-token", "gh_1", "a", "x.y"] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", ".hidden", "../x", "a/b", "a b", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert_eq!(secret_id("ctxgate/", "acme", "ci"), "ctxgate/acme/ci");
    }

    #[test]
    fn tokens_are_checked_and_never_debug_printed() {
        let c = Credential::new(None, "ghp_secret123\n").unwrap();
        assert_eq!(c.token, "ghp_secret123");
        assert_eq!(c.username, DEFAULT_USERNAME);
        let shown = format!("{c:?}");
        assert!(!shown.contains("ghp_secret123"), "{shown}");
        assert!(Credential::new(None, "").is_err());
        assert!(Credential::new(None, "two words here").is_err());
        assert!(Credential::new(None, "short").is_err());
        assert!(Credential::new(Some("a:b"), "ghp_secret123").is_err());
        let parsed: Credential = serde_json::from_str(r#"{"token":"abcdefgh12"}"#).unwrap();
        assert_eq!(parsed.username, DEFAULT_USERNAME);
    }

    #[test]
    fn every_form_of_the_token_is_scrubbed() {
        let c = Credential::new(Some("oauth2"), "tok/en+secret=1").unwrap();
        let basic = base64::engine::general_purpose::STANDARD.encode("oauth2:tok/en+secret=1");
        let text = format!(
            "fetching https://oauth2:tok%2Fen%2Bsecret%3D1@h/r.git failed; header Basic {basic}; \
             raw tok/en+secret=1"
        );
        let clean = c.scrub(&text);
        for leak in ["tok/en+secret=1", "tok%2Fen%2Bsecret%3D1", basic.as_str()] {
            assert!(!clean.contains(leak), "{leak} in {clean}");
        }
        assert!(
            clean.contains("https://oauth2:<redacted>@h/r.git"),
            "{clean}"
        );
    }

    #[test]
    fn userinfo_and_authorization_are_scrubbed_whatever_the_secret() {
        assert_eq!(
            scrub("git: https://bob:hunter2@example.com/r.git: 401"),
            "git: https://bob:<redacted>@example.com/r.git: 401"
        );
        assert_eq!(
            scrub("ssh://git@example.com/r.git"),
            "ssh://git@example.com/r.git"
        );
        assert_eq!(
            scrub("sent Authorization: Bearer abc.def\nnext"),
            "sent Authorization: Bearer <redacted>\nnext"
        );
        assert_eq!(
            scrub(r#"{"authorization":"Basic eDp5","x":1}"#),
            r#"{"authorization":"Basic <redacted>","x":1}"#
        );
        assert_eq!(
            scrub("no secrets: authorization"),
            "no secrets: authorization"
        );
        assert_eq!(scrub("a://b:c@d a://e"), "a://b:<redacted>@d a://e");
    }
}
