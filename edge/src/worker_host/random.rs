//! Random bytes from the Workers runtime's CSPRNG (`crypto.getRandomValues`).

use js_sys::{Function, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

/// `getRandomValues` fills at most this many bytes per call (Web Crypto's limit).
const MAX_PER_CALL: usize = 65_536;

/// `n` random bytes.
pub fn bytes(n: usize) -> Result<Vec<u8>, JsValue> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))?;
    let fill: Function =
        Reflect::get(&crypto, &JsValue::from_str("getRandomValues"))?.dyn_into()?;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let chunk = (n - out.len()).min(MAX_PER_CALL);
        let array = Uint8Array::new_with_length(chunk as u32);
        fill.call1(&crypto, &array)?;
        out.extend(array.to_vec());
    }
    Ok(out)
}
