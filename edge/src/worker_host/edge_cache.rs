//! [`ObjectCache`] over the Workers Cache API (`caches.default`).
//!
//! R2 (or S3) is read once per version per data centre instead of once per isolate: a fresh
//! isolate finds the version's manifest, pack and segments in the local cache. Entries are
//! keyed by the object's store key under a host name of our own, so they cannot collide with
//! cached pages of the zone, and are marked immutable (a published version never changes).
//! On `*.workers.dev` the Cache API stores nothing; every read then falls through to the store.
//!
//! Writes wait for the answer: [`ObjectCache::put`] only copies the object out of wasm memory,
//! and [`write_after_answer`] hands the writes to `waitUntil` behind a timer turn, so the
//! first answer of an isolate no longer pays for filling the cache (the writes' own work on
//! the isolate's thread: 670-681 → 507-518 ms of the monorepo's cold call, docs/performance.md).
//! An isolate that starts in between reads the store once more.

use std::cell::RefCell;

use async_trait::async_trait;
use worker::send::SendFuture;
use worker::{Cache, Context, Response, web_sys};

use crate::state::ObjectCache;

/// The cache's URL of an index object.
fn url(key: &str) -> String {
    format!("https://index-objects.ctxgate.internal/{key}")
}

/// How long the cache may keep an object: a year (objects are immutable; the cache evicts
/// what is not read anyway).
const CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The Workers Cache API as an [`ObjectCache`].
pub struct EdgeCache;

#[async_trait]
impl ObjectCache for EdgeCache {
    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        SendFuture::new(async {
            let mut hit = Cache::default().get(url(key), false).await.ok()??;
            if hit.status_code() != 200 {
                return None;
            }
            hit.bytes().await.ok()
        })
        .await
    }

    async fn put(&self, key: &str, bytes: &[u8]) {
        // Copied straight from wasm memory into a JavaScript buffer: a `Vec` copy first would
        // raise the isolate's wasm memory by the object's size for good (linear memory never
        // shrinks), for a pack of many megabytes.
        let body = js_sys::Uint8Array::from(bytes);
        PENDING.with(|p| p.borrow_mut().push((key.to_string(), body)));
    }
}

thread_local! {
    /// Objects read and not yet written to the cache, by every request of the isolate (one
    /// thread): whichever request answers first writes what is queued, others' reads included.
    static PENDING: RefCell<Vec<(String, js_sys::Uint8Array)>> = const { RefCell::new(Vec::new()) };
}

/// Writes the queued objects into the cache once this request's answer is on its way: a timer
/// turn first, so that the response is handed to the runtime before the writes' work starts.
/// A request cancelled mid-read leaves its objects queued for the next answer.
pub fn write_after_answer(ctx: &Context) {
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if pending.is_empty() {
        return;
    }
    ctx.wait_until(async move {
        worker::Delay::from(std::time::Duration::from_millis(0)).await;
        for (key, body) in pending {
            write(&key, &body).await;
        }
    });
}

async fn write(key: &str, body: &js_sys::Uint8Array) {
    let Ok(res) = web_sys::Response::new_with_opt_buffer_source(Some(body)) else {
        return;
    };
    if res.headers().set("cache-control", CACHE_CONTROL).is_err() {
        return;
    }
    if let Err(e) = Cache::default().put(url(key), Response::from(res)).await {
        worker::console_warn!("caching index object {key}: {e}");
    }
}
