//! Continuation tokens: a signed, expiring note of what a client has already been given, so the
//! next call can deliver the next page without the server keeping any session.
//!
//! The token is `base64url(postcard(claims)) "." base64url(hmac_sha256(secret, payload))`. The
//! claims bind it to one organisation, project, index version and query, so a token cannot be
//! replayed against another org's project or against a different question, and it expires.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::error_code::ErrorCode;

/// What a continuation token vouches for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The organisation it was issued to.
    pub org: String,
    /// The project id.
    pub project: String,
    /// The index version the page came from.
    pub version: u64,
    /// First 16 bytes of the query's sha256 (a different query needs a fresh start).
    pub query: [u8; 16],
    /// Pack indices of the chunks already delivered whole: never sent again.
    pub delivered: Vec<u32>,
    /// Pack indices of the chunks delivered only as an outline (a signature, a signpost): a later
    /// page may send them whole, not as an outline again.
    pub partial: Vec<u32>,
    /// Expiry, milliseconds since the epoch.
    pub expires_ms: u64,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not two base64url parts, or claims that do not decode.
    #[error("the continuation token is malformed")]
    Malformed,
    /// The signature does not match: altered, or from another deployment.
    #[error("the continuation token's signature does not match (altered or foreign token)")]
    BadSignature,
    /// Past its expiry.
    #[error("the continuation token expired")]
    Expired,
    /// Valid, but for another org, project, version or query.
    #[error("the continuation token belongs to another request ({0})")]
    Mismatch(&'static str),
}

impl TokenError {
    /// The machine-readable code every host reports for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            TokenError::Malformed => ErrorCode::ContinuationMalformed,
            TokenError::BadSignature => ErrorCode::ContinuationInvalid,
            TokenError::Expired => ErrorCode::ContinuationExpired,
            TokenError::Mismatch(_) => ErrorCode::ContinuationMismatch,
        }
    }
}

/// The query's fingerprint as stored in claims.
pub fn query_fingerprint(query: &str) -> [u8; 16] {
    let d = crate::hash::Sha256Digest::of(query.trim().as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&d.0[..16]);
    out
}

fn mac(secret: &[u8], payload: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    m.update(payload);
    m
}

/// Signs `claims` with `secret`.
pub fn issue(claims: &Claims, secret: &[u8]) -> String {
    let payload = postcard::to_allocvec(claims).unwrap_or_default();
    let tag = mac(secret, &payload).finalize().into_bytes();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        URL_SAFE_NO_PAD.encode(tag)
    )
}

/// Checks `token`'s signature and expiry and returns its claims.
pub fn verify(token: &str, secret: &[u8], now_ms: u64) -> Result<Claims, TokenError> {
    let (payload, tag) = token.trim().split_once('.').ok_or(TokenError::Malformed)?;
    let payload = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| TokenError::Malformed)?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| TokenError::Malformed)?;
    // Constant-time comparison.
    mac(secret, &payload)
        .verify_slice(&tag)
        .map_err(|_| TokenError::BadSignature)?;
    let claims: Claims = postcard::from_bytes(&payload).map_err(|_| TokenError::Malformed)?;
    if claims.expires_ms <= now_ms {
        return Err(TokenError::Expired);
    }
    Ok(claims)
}

/// What the pages so far sent, whole and as outlines: what a continuation carries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Chunks sent whole.
    pub whole: Vec<u32>,
    /// Chunks sent only as an outline, never whole.
    pub partial: Vec<u32>,
}

impl Sent {
    /// What was sent once a page sent `chosen` (its chunks, in prompt order), of which
    /// `partial` only as outlines: a chunk once sent whole stays whole, one sent whole now
    /// leaves the outlines.
    pub fn after(mut self, chosen: &[u32], partial: &[u32]) -> Self {
        for &c in chosen {
            if partial.contains(&c) {
                if !self.partial.contains(&c) && !self.whole.contains(&c) {
                    self.partial.push(c);
                }
            } else if !self.whole.contains(&c) {
                self.whole.push(c);
                self.partial.retain(|&p| p != c);
            }
        }
        self
    }
}

impl Claims {
    /// What the pages before this token delivered.
    pub fn sent(&self) -> Sent {
        Sent {
            whole: self.delivered.clone(),
            partial: self.partial.clone(),
        }
    }

    /// Refuses a token issued for another org, project or query. A newer index version is
    /// refused too: its chunk numbering differs.
    pub fn check(
        &self,
        org: &str,
        project: &str,
        version: u64,
        query: &str,
    ) -> Result<(), TokenError> {
        if self.org != org {
            return Err(TokenError::Mismatch("organisation"));
        }
        if self.project != project {
            return Err(TokenError::Mismatch("project"));
        }
        if self.version != version {
            return Err(TokenError::Mismatch("index version changed; start again"));
        }
        if self.query != query_fingerprint(query) {
            return Err(TokenError::Mismatch("query"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn claims() -> Claims {
        Claims {
            org: "acme".into(),
            project: "p1".into(),
            version: 3,
            query: query_fingerprint("why does parse fail"),
            delivered: vec![1, 5, 9],
            partial: vec![4],
            expires_ms: 2_000,
        }
    }

    #[test]
    fn round_trip_and_checks() {
        let t = issue(&claims(), b"secret");
        let c = verify(&t, b"secret", 1_000).unwrap();
        assert_eq!(c, claims());
        assert!(c.check("acme", "p1", 3, "why does parse fail").is_ok());
        assert_eq!(
            c.check("other", "p1", 3, "why does parse fail"),
            Err(TokenError::Mismatch("organisation"))
        );
        assert!(c.check("acme", "p1", 3, "another question").is_err());
        assert_eq!(verify(&t, b"secret", 2_000), Err(TokenError::Expired));
        assert_eq!(verify(&t, b"other", 1_000), Err(TokenError::BadSignature));
        assert_eq!(verify("nonsense", b"secret", 0), Err(TokenError::Malformed));
    }

    #[test]
    fn a_chunk_sent_in_part_may_come_whole_later_and_then_never_again() {
        let first = Sent::default().after(&[3, 7, 8], &[7, 8]);
        assert_eq!(first.whole, vec![3]);
        assert_eq!(first.partial, vec![7, 8]);
        // Page 2 sends 7 whole and 9 in part.
        let second = first.after(&[7, 9], &[9]);
        assert_eq!(second.whole, vec![3, 7]);
        assert_eq!(second.partial, vec![8, 9]);
        // A chunk already whole is not demoted by a later partial mention.
        let third = second.clone().after(&[3], &[3]);
        assert_eq!(third, second);
    }

    proptest! {
        /// Changing any one character of a token never yields accepted claims that differ.
        #[test]
        fn tampering_is_detected(pos in 0usize..200, ch in proptest::char::range('-', 'z')) {
            let t = issue(&claims(), b"secret");
            let mut chars: Vec<char> = t.chars().collect();
            let pos = pos % chars.len();
            prop_assume!(chars[pos] != ch);
            chars[pos] = ch;
            let tampered: String = chars.into_iter().collect();
            // Accepted only when the change hit base64 padding bits: then the claims are intact.
            if let Ok(c) = verify(&tampered, b"secret", 1_000) {
                prop_assert_eq!(c, claims());
            }
        }
    }
}
