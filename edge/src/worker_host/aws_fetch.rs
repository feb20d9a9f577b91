//! The Worker's [`HttpClient`] for S3 and DynamoDB: `fetch` with the signed request as is.

use async_trait::async_trait;
use worker::send::SendFuture;
use worker::{Fetch, Headers, Method, Request, RequestInit};

use crate::aws::{AwsConfig, HttpClient, HttpResponse, SignedRequest};
use crate::backend::BackendError;

/// `fetch`, for signed AWS requests.
pub struct WorkerFetch;

fn storage(e: impl std::fmt::Display) -> BackendError {
    BackendError::Storage(e.to_string())
}

#[async_trait]
impl HttpClient for WorkerFetch {
    async fn send(&self, req: SignedRequest) -> Result<HttpResponse, BackendError> {
        SendFuture::new(async move {
            let headers = Headers::new();
            for (k, v) in &req.headers {
                // `host` is the URL's; fetch sets it and refuses to be told.
                if k.eq_ignore_ascii_case("host") {
                    continue;
                }
                headers.set(k, v).map_err(storage)?;
            }
            let mut init = RequestInit::new();
            init.with_method(if req.method == "POST" {
                Method::Post
            } else {
                Method::Get
            })
            .with_headers(headers);
            if !req.body.is_empty() {
                init.with_body(Some(js_sys::Uint8Array::from(req.body.as_slice()).into()));
            }
            let request = Request::new_with_init(&req.url, &init).map_err(storage)?;
            let mut res = Fetch::Request(request).send().await.map_err(storage)?;
            let status = res.status_code();
            let body = res.bytes().await.map_err(storage)?;
            Ok(HttpResponse { status, body })
        })
        .await
    }

    fn warn(&self, message: &str) {
        worker::console_warn!("{message}");
    }

    async fn pause(&self, ms: u64) {
        SendFuture::new(worker::Delay::from(std::time::Duration::from_millis(ms))).await;
    }

    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }

    fn random_u64(&self) -> u64 {
        // Jitter only spreads retries; a failed generator leaves them unspread, nothing worse.
        super::random::bytes(8)
            .unwrap_or_default()
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    }
}

/// The AWS settings in the Worker's vars and secrets ([`AwsConfig::from_vars`]).
pub fn config(var: impl Fn(&str) -> Option<String>) -> Result<Option<AwsConfig>, String> {
    AwsConfig::from_vars(var)
}
