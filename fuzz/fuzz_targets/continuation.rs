//! Continuation tokens: any text as a token, and any claims payload signed with the right
//! secret (so decoding runs past the signature check).
#![no_main]

use ctxgate_core::continuation::{issue, verify};
use libfuzzer_sys::fuzz_target;

const SECRET: &[u8] = b"fuzz-token-secret";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = verify(&text, SECRET, 0).map(|c| c.check("acme", "p", 1, "q"));
    let signed = signed_payload(data);
    if let Ok(claims) = verify(&signed, SECRET, 0) {
        // What decodes re-issues to a token that verifies to the same claims.
        let again = issue(&claims, SECRET);
        assert_eq!(verify(&again, SECRET, 0), Ok(claims));
    }
});

/// `data` as the claims payload of a token with a valid signature.
fn signed_payload(data: &[u8]) -> String {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(SECRET).expect("any key");
    mac.update(data);
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(data),
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}
