//! The incoming request as the router's, read from workerd's `Request` directly.
//!
//! workers-rs's own conversion (its `HttpRequest`) also reads the request's `cf` object, which
//! workerd deep-clones through JSON on every read, and hands over the body as a Rust stream over
//! a `ReadableStream` reader (a reader, a promise per chunk, releasing the lock). perf on the
//! workerd thread that serves the Worker showed both on every warm call; nothing here uses `cf`,
//! the abort signal or the redirect mode workers-rs attaches. The router needs the method, the
//! URL and the headers; the body is read by [`body_bytes`] when its length is declared (one
//! `arrayBuffer()`), else through the capped stream as before (`super::read_capped`).

use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method};
use worker::{js_sys, wasm_bindgen, wasm_bindgen_futures, web_sys};

/// Why a request could not be turned into the router's.
fn refused(what: &str, e: impl std::fmt::Debug) -> worker::Error {
    worker::Error::RustError(format!("request {what}: {e:?}"))
}

/// The method, URL and headers of `req`.
pub(super) fn parts(req: &web_sys::Request) -> worker::Result<Parts> {
    let method = Method::from_bytes(req.method().as_bytes()).map_err(|e| refused("method", e))?;
    let mut builder = axum::http::Request::builder().method(method).uri(req.url());
    if let Some(headers) = builder.headers_mut() {
        let entries = js_sys::try_iter(&req.headers().entries())
            .map_err(|e| refused("headers", e))?
            .ok_or_else(|| refused("headers", "not iterable"))?;
        for entry in entries {
            // Each entry is a `[name, value]` pair of strings.
            let pair = js_sys::Array::from(&entry.map_err(|e| refused("header", e))?);
            let (Some(name), Some(value)) = (pair.get(0).as_string(), pair.get(1).as_string())
            else {
                return Err(refused("header", "not a pair of strings"));
            };
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| refused("header name", e))?,
                HeaderValue::from_str(&value).map_err(|e| refused("header value", e))?,
            );
        }
    }
    let (parts, ()) = builder
        .body(())
        .map_err(|e| refused("head", e))?
        .into_parts();
    Ok(parts)
}

/// The whole body of `req`, read by the runtime's own `arrayBuffer()`: one promise and one copy
/// into the module's memory. Only for a body whose declared length is within its limit (workerd
/// holds a body to its declared length), so memory stays bounded as with the capped stream.
pub(super) async fn body_bytes(req: &web_sys::Request) -> Result<Vec<u8>, wasm_bindgen::JsValue> {
    let buffer = wasm_bindgen_futures::JsFuture::from(req.array_buffer()?).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}
