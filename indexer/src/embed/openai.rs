//! A client for OpenAI-compatible `POST {base}/embeddings` endpoints (OpenAI, Azure-style
//! gateways, vLLM, Ollama, LiteLLM, text-embeddings-inference): the provider for deployments
//! that embed with an API instead of the local model.
//!
//! Wire format: the request is `{"model", "input": [texts], "encoding_format": "float"}`; the
//! answer is `{"data": [{"index", "embedding": [floats]}, ...]}`, whose entries may come in any
//! order (they are placed by `index`). An error answer's `{"error": {"message"}}` is passed on.

use std::time::Duration;

use ctxgate_core::dense::wire;

use super::{EmbedError, Embedder};

/// Where an embeddings model is served.
#[derive(Clone, PartialEq, Eq)]
pub struct EmbeddingsEndpoint {
    /// Base URL, such as `https://api.openai.com/v1` (`/embeddings` is appended).
    pub url: String,
    /// The model to ask.
    pub model: String,
    /// Sent as a bearer token when set.
    pub api_key: Option<String>,
    /// Dimensions of the model's vectors (checked on every answer).
    pub dims: usize,
}

impl std::fmt::Debug for EmbeddingsEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingsEndpoint")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("dims", &self.dims)
            .finish()
    }
}

/// A blocking embeddings client.
pub struct OpenAiEmbeddings {
    client: reqwest::blocking::Client,
    url: String,
    remote_model: String,
    label: String,
    key: Option<String>,
    dims: usize,
}

impl OpenAiEmbeddings {
    /// A client for `endpoint`, with a 120 s limit per call.
    pub fn new(endpoint: &EmbeddingsEndpoint) -> Result<Self, EmbedError> {
        crate::source::ensure_tls_provider();
        let url = format!("{}/embeddings", endpoint.url.trim_end_matches('/'));
        let client = reqwest::blocking::Client::builder()
            .user_agent(concat!("ctxgate/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| EmbedError::Http {
                url: url.clone(),
                status: None,
                message: e.to_string(),
            })?;
        Ok(Self {
            client,
            label: format!("openai:{}", endpoint.model),
            url,
            remote_model: endpoint.model.clone(),
            key: endpoint.api_key.clone(),
            dims: endpoint.dims,
        })
    }

    fn http(&self, status: Option<u16>, message: impl Into<String>) -> EmbedError {
        EmbedError::Http {
            url: self.url.clone(),
            status,
            message: message.into(),
        }
    }

    fn answer(&self, message: impl Into<String>) -> EmbedError {
        EmbedError::Answer {
            url: self.url.clone(),
            message: message.into(),
        }
    }
}

impl Embedder for OpenAiEmbeddings {
    fn model(&self) -> &str {
        &self.label
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn batch_size(&self) -> usize {
        64
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let body = wire::request(&self.remote_model, texts);
        let mut req = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
        }
        let resp = req
            .send()
            .map_err(|e| self.http(None, crate::source::error_chain(&e)))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .map_err(|e| self.http(Some(status.as_u16()), e.to_string()))?;
        if !status.is_success() {
            let detail = wire::refusal(&bytes);
            return Err(self.http(Some(status.as_u16()), format!("HTTP {status}: {detail}")));
        }
        wire::vectors(&bytes, texts.len(), self.dims).map_err(|e| self.answer(e))
    }
}
