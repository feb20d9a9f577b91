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
}

/// The AWS settings in the Worker's vars and secrets, when `CTXGATE_STORE` is set:
/// `CTXGATE_STORE` (`s3://bucket/prefix`), `CTXGATE_TABLE`, `AWS_REGION`,
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, optionally `AWS_SESSION_TOKEN`,
/// `AWS_ENDPOINT_URL` (a local server), `CTXGATE_INDEXER_FUNCTION` (the indexer function to start
/// when a project is registered) and `AWS_ENDPOINT_URL_LAMBDA`.
pub fn config(var: impl Fn(&str) -> Option<String>) -> Result<Option<AwsConfig>, String> {
    let Some(store) = var("CTXGATE_STORE") else {
        return Ok(None);
    };
    let need =
        |name: &str| var(name).ok_or_else(|| format!("CTXGATE_STORE is set but {name} is not"));
    let (bucket, prefix) = AwsConfig::parse_store(&store)?;
    Ok(Some(AwsConfig {
        endpoint: var("AWS_ENDPOINT_URL"),
        region: var("AWS_REGION").unwrap_or_else(|| "us-east-1".into()),
        access_key_id: need("AWS_ACCESS_KEY_ID")?,
        secret_access_key: need("AWS_SECRET_ACCESS_KEY")?,
        session_token: var("AWS_SESSION_TOKEN"),
        bucket,
        prefix,
        table: need("CTXGATE_TABLE")?,
        indexer_function: var("CTXGATE_INDEXER_FUNCTION"),
        lambda_endpoint: var("AWS_ENDPOINT_URL_LAMBDA"),
    }))
}
