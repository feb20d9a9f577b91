//! The native [`HttpClient`] for the edge's signed S3 and DynamoDB requests: `ctxgate serve
//! --store s3://…` reads what the Lambda publishes exactly as the Worker does, through the
//! same signed requests, sent here by reqwest instead of the Worker's `fetch`.

use async_trait::async_trait;
use ctxgate_edge::aws::{HttpClient, HttpResponse, SignedRequest};
use ctxgate_edge::backend::BackendError;

/// Sends signed requests as they are.
pub struct NativeHttp {
    client: reqwest::Client,
}

impl NativeHttp {
    /// A client with connection reuse and a bound on every call.
    pub fn new() -> Result<Self, BackendError> {
        // reqwest is built without a TLS provider of its own: use ring, as the indexer does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| BackendError::Storage(format!("HTTP client: {e}")))?;
        Ok(Self { client })
    }
}

#[async_trait]
impl HttpClient for NativeHttp {
    async fn send(&self, req: SignedRequest) -> Result<HttpResponse, BackendError> {
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|e| BackendError::Storage(format!("method {}: {e}", req.method)))?;
        let mut builder = self.client.request(method, &req.url);
        for (name, value) in &req.headers {
            builder = builder.header(name, value);
        }
        let res = builder
            .body(req.body)
            .send()
            .await
            .map_err(|e| BackendError::Storage(format!("{} {}: {e}", req.method, req.url)))?;
        let status = res.status().as_u16();
        let body = res
            .bytes()
            .await
            .map_err(|e| BackendError::Storage(format!("reading {}: {e}", req.url)))?
            .to_vec();
        Ok(HttpResponse { status, body })
    }

    fn warn(&self, message: &str) {
        tracing::warn!("{message}");
    }

    async fn pause(&self, ms: u64) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }

    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    fn random_u64(&self) -> u64 {
        let mut buf = [0u8; 8];
        // Jitter only spreads retries; a failed generator leaves them unspread, nothing worse.
        let _ = getrandom::fill(&mut buf);
        u64::from_le_bytes(buf)
    }
}
