//! Authenticating a delivery with the project's webhook secret.
//!
//! GitHub signs the raw body: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`.
//! GitLab sends the secret itself in `X-Gitlab-Token`. Both are compared in constant time (the
//! `hmac` crate's `verify_slice`), so the time an answer takes says nothing about how much of a
//! guess was right.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::error_code::ErrorCode;

/// Why a delivery is not authentic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The header is not `sha256=` and 64 hex digits.
    #[error("the signature header is not `sha256=` followed by 64 hex digits")]
    Malformed,
    /// The header does not match the body under the project's secret.
    #[error("the signature does not match the body under this project's webhook secret")]
    Mismatch,
}

impl SignatureError {
    /// The API's machine-readable code (both are `webhook_signature_invalid`: a caller that
    /// cannot sign learns nothing from which one it was).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::WebhookSignatureInvalid
    }
}

fn mac(key: &[u8], message: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    m.update(message);
    m
}

/// The `X-Hub-Signature-256` value GitHub sends for `body` under `secret`.
pub fn github_signature(secret: &[u8], body: &[u8]) -> String {
    let tag = mac(secret, body).finalize().into_bytes();
    format!("sha256={}", crate::hash::hex(&tag))
}

/// Checks GitHub's `X-Hub-Signature-256` header against `body` under `secret`.
pub fn verify_github(secret: &[u8], body: &[u8], header: &str) -> Result<(), SignatureError> {
    let hex = header
        .trim()
        .strip_prefix("sha256=")
        .ok_or(SignatureError::Malformed)?;
    let tag = decode_hex(hex).ok_or(SignatureError::Malformed)?;
    if tag.len() != 32 {
        return Err(SignatureError::Malformed);
    }
    mac(secret, body)
        .verify_slice(&tag)
        .map_err(|_| SignatureError::Mismatch)
}

/// Checks GitLab's `X-Gitlab-Token` header against `secret`. Both sides are first reduced to an
/// HMAC under a fixed label, so the comparison takes the same time whatever the lengths.
pub fn verify_gitlab(secret: &[u8], header: &str) -> Result<(), SignatureError> {
    const LABEL: &[u8] = b"ctxgate gitlab token";
    let expected = mac(secret, LABEL).finalize().into_bytes();
    mac(header.as_bytes(), LABEL)
        .verify_slice(&expected)
        .map_err(|_| SignatureError::Mismatch)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_documented_example_verifies() {
        // docs.github.com, "Validating webhook deliveries": secret "It's a Secret to Everybody",
        // payload "Hello, World!".
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        let secret = b"It's a Secret to Everybody";
        assert_eq!(verify_github(secret, b"Hello, World!", header), Ok(()));
        assert_eq!(github_signature(secret, b"Hello, World!"), header);
    }

    #[test]
    fn a_changed_body_key_or_header_is_refused() {
        let secret = b"s3cret";
        let body = br#"{"ref":"refs/heads/main"}"#;
        let good = github_signature(secret, body);
        assert_eq!(verify_github(secret, body, &good), Ok(()));
        assert_eq!(
            verify_github(secret, br#"{"ref":"refs/heads/dev"}"#, &good),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_github(b"other", body, &good),
            Err(SignatureError::Mismatch)
        );
        for malformed in [
            "",
            "sha1=abcd",
            "sha256=",
            "sha256=zz",
            "sha256=abc",
            &good[..good.len() - 2],
            &format!("{good}00"),
        ] {
            assert_eq!(
                verify_github(secret, body, malformed),
                Err(SignatureError::Malformed),
                "{malformed}"
            );
        }
        // Upper-case hex is the same signature.
        assert_eq!(
            verify_github(
                secret,
                body,
                &good.to_uppercase().replace("SHA256=", "sha256=")
            ),
            Ok(())
        );
    }

    #[test]
    fn gitlab_tokens_match_exactly() {
        assert_eq!(verify_gitlab(b"tok-123", "tok-123"), Ok(()));
        for wrong in ["", "tok-12", "tok-1234", "TOK-123", " tok-123"] {
            assert_eq!(
                verify_gitlab(b"tok-123", wrong),
                Err(SignatureError::Mismatch),
                "{wrong:?}"
            );
        }
    }
}
