//! Recognising a replayed delivery.
//!
//! A forge names each delivery (`X-GitHub-Delivery`, `X-Gitlab-Event-UUID`) and keeps the name
//! when it redelivers. But the name is a header, outside GitHub's signature, and GitLab signs
//! nothing: whoever captured one delivery could send its body again under a new name. So a
//! delivery leaves two marks, its name and its body's digest, and is a replay when either was
//! seen before. Two genuine pushes never share a body (each names the commits it moved).

use crate::error_code::ErrorCode;
use crate::hash::Sha256Digest;

/// Longest delivery id taken (GitHub's and GitLab's are 36-character UUIDs).
const MAX_ID: usize = 128;

/// Why a delivery id cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The header is absent.
    #[error("the `{0}` header is missing")]
    Missing(&'static str),
    /// The header is not 1-128 letters, digits, `-`, `_` or `.`.
    #[error("the `{0}` header must be 1-128 letters, digits, `-`, `_` or `.`")]
    Invalid(&'static str),
}

impl DeliveryError {
    /// The API's machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            DeliveryError::Missing(_) => ErrorCode::WebhookDeliveryMissing,
            DeliveryError::Invalid(_) => ErrorCode::WebhookDeliveryInvalid,
        }
    }
}

/// The marks a delivery leaves: `id:{delivery id}` and `body:{sha256 of the body}`.
pub fn marks(
    header: &'static str,
    id: Option<&str>,
    body: &[u8],
) -> Result<[String; 2], DeliveryError> {
    let id = id.map(str::trim).ok_or(DeliveryError::Missing(header))?;
    let plain = !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !plain {
        return Err(DeliveryError::Invalid(header));
    }
    Ok([
        format!("id:{id}"),
        format!("body:{}", Sha256Digest::of(body).to_hex()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_is_marked_by_name_and_body() {
        let h = "x-github-delivery";
        let a = marks(h, Some("72d3162e-cc78-11e3-81ab-4c9367dc0958"), b"one").unwrap();
        assert_eq!(a[0], "id:72d3162e-cc78-11e3-81ab-4c9367dc0958");
        let renamed = marks(h, Some("another-id"), b"one").unwrap();
        assert_eq!(a[1], renamed[1], "the same body under a new name");
        let other = marks(h, Some("another-id"), b"two").unwrap();
        assert_ne!(a[1], other[1]);
        assert_eq!(
            marks(h, None, b"").unwrap_err().code(),
            "webhook_delivery_missing"
        );
        for bad in ["", " ", "a/b", "a b", "x#y", &"a".repeat(129)] {
            assert_eq!(
                marks(h, Some(bad), b"").unwrap_err().code(),
                "webhook_delivery_invalid",
                "{bad:?}"
            );
        }
    }
}
