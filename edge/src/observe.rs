//! One record per request, the same on both hosts: the router's outermost layer ([`observe`])
//! names the request (`X-Request-Id`), times it, counts it in [`crate::metrics`] and leaves a
//! [`RequestRecord`] in the response's extensions for the host to write — as a JSON line on
//! `ctxgate serve`'s stderr, as a `console.log` line and an Analytics Engine data point in the
//! Worker.
//!
//! What a record holds is decided here, once: ids, the route *template*, status, error code,
//! tokens, cache outcomes, latency — never a key, a query's text or code, or a path's own
//! values (a project or object name is in the raw path, not in the template).
//!
//! Handlers fill what only they know through the request's [`RequestNote`] (the caller's org,
//! the tokens a metered call settled, whether its index version came from a cache); the error
//! code and the quota limit come from the [`ApiError`](crate::error::ApiError) that answered
//! ([`ErrorFacts`]).

use std::sync::{Arc, Mutex};

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;

use crate::error::ErrorFacts;
use crate::metrics::IndexCache;
use crate::state::AppState;

/// The header that names a request: taken from the caller when it is a sane id, else made
/// here, and answered in every response.
pub const REQUEST_ID: &str = "x-request-id";

/// What the handlers of one request noted for its record.
#[derive(Clone, Debug, Default)]
pub struct RequestNote(Arc<Mutex<Noted>>);

#[derive(Clone, Debug, Default)]
struct Noted {
    org: Option<String>,
    tokens: u64,
    pointer: Option<bool>,
    version: Option<bool>,
    refused: Option<&'static str>,
}

impl RequestNote {
    fn with(&self, f: impl FnOnce(&mut Noted)) {
        let mut n = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut n);
    }

    /// The authenticated caller's organisation.
    pub fn org(&self, org: &str) {
        self.with(|n| n.org = Some(org.to_string()));
    }

    /// Tokens a metered call settled (added up over the calls of one MCP request).
    pub fn tokens(&self, tokens: u64) {
        self.with(|n| n.tokens += tokens);
    }

    /// A call refused by the quota `limit` (counted once per request, however it answers).
    pub fn refused(&self, limit: &'static str) {
        self.with(|n| n.refused = Some(limit));
    }

    /// Whether the index version's `cache` had what the call needed.
    pub fn cache(&self, cache: IndexCache, hit: bool) {
        self.with(|n| match cache {
            IndexCache::Pointer => n.pointer = Some(hit),
            IndexCache::Version => n.version = Some(hit),
        });
    }

    fn take(&self) -> Noted {
        let mut taken = Noted::default();
        self.with(|n| taken = std::mem::take(n));
        taken
    }
}

/// One request, as both hosts log it.
#[derive(Clone, Debug, Serialize)]
pub struct RequestRecord {
    /// Always `request` (to tell these lines from others in one stream).
    pub event: &'static str,
    /// When it was answered (ms since the epoch, the host's clock).
    pub ts_ms: u64,
    /// The request's id (`X-Request-Id`).
    pub request_id: String,
    /// The HTTP method (`OTHER` for a non-standard one).
    pub method: &'static str,
    /// The matched route's template (`/v1/projects/{id}`), `unmatched` when none matched.
    pub route: String,
    /// The answer's status.
    pub status: u16,
    /// The caller's organisation, once its key was accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    /// The error's machine-readable code, for an error answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<&'static str>,
    /// The limit a quota refusal hit (a 429 `quota_exceeded`, or an MCP tool call's error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_limit: Option<&'static str>,
    /// Tokens delivered (settled by metered calls).
    pub tokens: u64,
    /// `hit` or `miss` in the current-version pointer cache, when the call resolved a project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer_cache: Option<&'static str>,
    /// `hit` or `miss` in the opened-versions cache, when the call read an index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_cache: Option<&'static str>,
    /// Milliseconds from routing to the answer. In the Worker the clock only moves across I/O
    /// (Cloudflare freezes it during computation), so there it is the time spent waiting.
    pub latency_ms: f64,
}

impl RequestRecord {
    /// The record as one line of JSON (no newline).
    pub fn json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A caller's id is kept if it is short and plain (so it cannot forge log lines or headers).
fn sane_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    ok.then(|| s.to_string())
}

/// The method as a label: the standard ones, else `OTHER` (a caller cannot mint label values).
fn method_name(m: &axum::http::Method) -> &'static str {
    match m.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "PATCH" => "PATCH",
        "OPTIONS" => "OPTIONS",
        _ => "OTHER",
    }
}

fn hit(found: Option<bool>) -> Option<&'static str> {
    found.map(|h| if h { "hit" } else { "miss" })
}

/// The layer: names, times, counts and records each request (see the module's doc).
pub async fn observe(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let started = clock::Stopwatch::start();
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(sane_id)
        .unwrap_or_else(|| {
            state
                .accounts
                .random_bytes(8)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        });
    let note = RequestNote::default();
    req.extensions_mut().insert(note.clone());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_string();
    let method = method_name(req.method());
    let mut res = next.run(req).await;
    let seconds = started.seconds();
    let status = res.status().as_u16();
    let facts = res.extensions().get::<ErrorFacts>().copied();
    let noted = note.take();
    let quota_limit = noted.refused.or(facts.and_then(|f| f.quota_limit));
    let m = &state.metrics;
    m.request(method, &route, status, seconds);
    if let Some(org) = &noted.org {
        m.tokens(org, &route, noted.tokens);
        if let Some(limit) = quota_limit {
            m.refusal(org, limit);
        }
    }
    for (cache, found) in [
        (IndexCache::Pointer, noted.pointer),
        (IndexCache::Version, noted.version),
    ] {
        if let Some(h) = found {
            m.cache(cache, h);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, v);
    }
    let record = RequestRecord {
        event: "request",
        ts_ms: state.accounts.now_ms(),
        request_id: id,
        method,
        route,
        status,
        org: noted.org,
        error_code: facts.map(|f| f.code),
        quota_limit,
        tokens: noted.tokens,
        pointer_cache: hit(noted.pointer),
        version_cache: hit(noted.version),
        latency_ms: seconds * 1e3,
    };
    res.extensions_mut().insert(record);
    res
}

/// Elapsed time on each target: `Instant` natively; in wasm32 (no `Instant`) `Date.now()`.
mod clock {
    /// A started timer.
    pub struct Stopwatch(
        #[cfg(not(target_arch = "wasm32"))] std::time::Instant,
        #[cfg(target_arch = "wasm32")] f64,
    );

    impl Stopwatch {
        pub fn start() -> Self {
            #[cfg(not(target_arch = "wasm32"))]
            return Self(std::time::Instant::now());
            #[cfg(target_arch = "wasm32")]
            return Self(js_sys::Date::now());
        }

        /// Seconds since [`Stopwatch::start`].
        pub fn seconds(&self) -> f64 {
            #[cfg(not(target_arch = "wasm32"))]
            return self.0.elapsed().as_secs_f64();
            #[cfg(target_arch = "wasm32")]
            return ((js_sys::Date::now() - self.0) / 1e3).max(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_short_ids_are_kept() {
        let ok = HeaderValue::from_static("req-1.a:b_C");
        assert_eq!(sane_id(&ok).as_deref(), Some("req-1.a:b_C"));
        for bad in ["", "a b", "x\"y", &"a".repeat(65)] {
            assert!(
                sane_id(&HeaderValue::from_str(bad).unwrap()).is_none(),
                "{bad}"
            );
        }
    }

    #[test]
    fn odd_methods_are_one_label() {
        let odd = axum::http::Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_name(&odd), "OTHER");
        assert_eq!(method_name(&axum::http::Method::POST), "POST");
    }

    #[test]
    fn a_record_line_has_no_absent_fields() {
        let r = RequestRecord {
            event: "request",
            ts_ms: 1,
            request_id: "r".into(),
            method: "GET",
            route: "/healthz".into(),
            status: 200,
            org: None,
            error_code: None,
            quota_limit: None,
            tokens: 0,
            pointer_cache: None,
            version_cache: None,
            latency_ms: 0.5,
        };
        let v: serde_json::Value = serde_json::from_str(&r.json_line()).unwrap();
        assert_eq!(v["route"], "/healthz");
        assert!(v.get("org").is_none() && v.get("error_code").is_none());
    }
}
