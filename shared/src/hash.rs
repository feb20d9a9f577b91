//! SHA-256 fingerprints, printed as lowercase hex everywhere ctxgate shows or stores them.

use sha2::{Digest, Sha256};

/// A SHA-256 digest; the content address of chunks, files and segments.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// Digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parses 64 hex characters.
    pub fn from_hex(text: &str) -> Option<Self> {
        if text.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl std::fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sha256({})", self.to_hex())
    }
}

impl std::fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// `#[serde(with = "crate::hash::digest_bytes")]` for a digest of a pack's tables: stored as a
/// byte string (a length byte, then the 32 bytes) instead of the 32-element tuple serde makes of
/// an array, which postcard decodes a byte per call — 8% of opening the 88M-token monorepo
/// corpus's pack natively, a digest for every file and chunk.
pub mod digest_bytes {
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    use super::Sha256Digest;

    /// Writes `d` as a byte string.
    pub fn serialize<S: Serializer>(d: &Sha256Digest, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&d.0)
    }

    /// Reads a digest written by [`serialize`] (or, from JSON, a sequence of 32 numbers).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Sha256Digest, D::Error> {
        struct Digest;
        impl<'de> Visitor<'de> for Digest {
            type Value = Sha256Digest;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("32 bytes")
            }
            fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Sha256Digest, E> {
                <[u8; 32]>::try_from(v)
                    .map(Sha256Digest)
                    .map_err(|_| E::invalid_length(v.len(), &self))
            }
            // Formats without byte strings (JSON) write bytes as a sequence of numbers.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Sha256Digest, A::Error> {
                let mut out = [0u8; 32];
                for (i, b) in out.iter_mut().enumerate() {
                    *b = seq
                        .next_element()?
                        .ok_or_else(|| A::Error::invalid_length(i, &self))?;
                }
                if seq.next_element::<u8>()?.is_some() {
                    return Err(A::Error::invalid_length(33, &self));
                }
                Ok(Sha256Digest(out))
            }
        }
        d.deserialize_bytes(Digest)
    }
}

/// Lowercase hex of any byte string.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_as_bytes_round_trips_in_postcard_and_json_and_refuses_other_lengths() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Row(#[serde(with = "digest_bytes")] Sha256Digest);
        let row = Row(Sha256Digest::of(b"abc"));
        let bytes = postcard::to_allocvec(&row).unwrap();
        assert_eq!(bytes.len(), 33, "a length byte and the digest");
        assert_eq!(postcard::from_bytes::<Row>(&bytes).unwrap(), row);
        let json = serde_json::to_string(&row).unwrap();
        assert_eq!(serde_json::from_str::<Row>(&json).unwrap(), row);
        assert!(postcard::from_bytes::<Row>(&serde_bytes_of(&[1u8; 31])).is_err());
        assert!(postcard::from_bytes::<Row>(&serde_bytes_of(&[1u8; 33])).is_err());
        assert!(serde_json::from_str::<Row>("[1,2,3]").is_err());
        assert!(serde_json::from_str::<Row>(&format!("{:?}", [7u8; 33])).is_err());
    }

    /// `bytes` as postcard writes a byte string.
    fn serde_bytes_of(bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn hex_round_trips() {
        let d = Sha256Digest::of(b"abc");
        assert_eq!(
            d.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Sha256Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Sha256Digest::from_hex("zz"), None);
    }
}
