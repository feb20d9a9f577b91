//! A query embedder over any OpenAI-compatible `POST {base}/embeddings` endpoint, sent through
//! the host's [`HttpClient`] (`fetch` in the Worker): the Worker's way to embed a query, since
//! it runs no model.
//!
//! Wire format, as the indexer's client: `{"model", "input": [query], "encoding_format":
//! "float"}` in, `{"data": [{"index", "embedding"}]}` out; an error's `{"error": {"message"}}`
//! is passed on with the same codes (`embed_unauthorized`, `embed_rate_limited`, ...).

use async_trait::async_trait;
use ctxgate_core::dense::wire;

use super::QueryEmbedder;
use crate::aws::{HttpClient, SignedRequest};
use crate::backend::BackendError;

/// Where the embeddings model is served, from the host's settings ([`ApiSettings::from_vars`]).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiSettings {
    /// Base URL, such as `https://api.openai.com/v1`.
    pub url: String,
    /// The model asked for.
    pub model: String,
    /// Dimensions of its vectors (checked on every answer).
    pub dims: usize,
    /// Sent as a bearer token when set.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ApiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiSettings")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("dims", &self.dims)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ApiSettings {
    /// `CTXGATE_EMBED_URL`, `CTXGATE_EMBED_MODEL`, `CTXGATE_EMBED_DIMS` and the secret
    /// `CTXGATE_EMBED_API_KEY` (the Lambda's names); `None` without a URL.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let Some(url) = var("CTXGATE_EMBED_URL") else {
            return Ok(None);
        };
        let model = var("CTXGATE_EMBED_MODEL")
            .ok_or("CTXGATE_EMBED_URL needs CTXGATE_EMBED_MODEL (the model to ask)")?;
        let dims = var("CTXGATE_EMBED_DIMS").unwrap_or_default();
        let dims = dims
            .trim()
            .parse()
            .ok()
            .filter(|&d: &usize| d > 0)
            .ok_or_else(|| format!("CTXGATE_EMBED_DIMS must be a positive number, not `{dims}`"))?;
        Ok(Some(Self {
            url,
            model,
            dims,
            api_key: var("CTXGATE_EMBED_API_KEY"),
        }))
    }
}

/// The embedder.
pub struct EmbeddingsApi<C> {
    client: C,
    url: String,
    label: String,
    settings: ApiSettings,
}

impl<C: HttpClient> EmbeddingsApi<C> {
    /// Queries embedded at `settings` through `client`.
    pub fn new(client: C, settings: ApiSettings) -> Self {
        Self {
            client,
            url: format!("{}/embeddings", settings.url.trim_end_matches('/')),
            label: format!("openai:{}", settings.model),
            settings,
        }
    }

    fn failed(&self, code: &'static str, message: impl std::fmt::Display) -> BackendError {
        BackendError::Embedding {
            code,
            message: format!("embeddings request to {} failed: {message}", self.url),
        }
    }
}

/// The code of an embeddings API's refusal, by its status (the indexer's codes).
fn status_code(status: u16) -> &'static str {
    match status {
        401 | 403 => "embed_unauthorized",
        429 => "embed_rate_limited",
        _ => "embed_http_error",
    }
}

/// The one vector of an answer to a one-input request, checked.
fn vector_of(body: &[u8], dims: usize) -> Result<Vec<f32>, String> {
    wire::vectors(body, 1, dims)?
        .pop()
        .ok_or_else(|| "no vector for the query".to_owned())
}

#[async_trait]
impl<C: HttpClient> QueryEmbedder for EmbeddingsApi<C> {
    fn model(&self) -> &str {
        &self.label
    }

    async fn embed_query(&self, query: &str) -> Result<Vec<f32>, BackendError> {
        let body = wire::request(&self.settings.model, &[query]);
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = &self.settings.api_key {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        let req = SignedRequest {
            method: "POST",
            url: self.url.clone(),
            headers,
            body: body.into_bytes(),
        };
        let res = self
            .client
            .send(req)
            .await
            .map_err(|e| self.failed("embed_unreachable", e))?;
        if !(200..300).contains(&res.status) {
            let detail = wire::refusal(&res.body);
            return Err(self.failed(
                status_code(res.status),
                format!("HTTP {}: {detail}", res.status),
            ));
        }
        vector_of(&res.body, self.settings.dims).map_err(|e| BackendError::Embedding {
            code: "embed_bad_answer",
            message: format!(
                "the answer from {} is not a valid embeddings response: {e}",
                self.url
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_from_vars_and_answers_are_checked() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(ApiSettings::from_vars(vars(&[])), Ok(None));
        let s = ApiSettings::from_vars(vars(&[
            ("CTXGATE_EMBED_URL", "http://x/v1"),
            ("CTXGATE_EMBED_MODEL", "m"),
            ("CTXGATE_EMBED_DIMS", "3"),
            ("CTXGATE_EMBED_API_KEY", "k"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((s.dims, s.api_key.as_deref()), (3, Some("k")));
        assert!(!format!("{s:?}").contains("\"k\""));
        assert!(
            ApiSettings::from_vars(vars(&[("CTXGATE_EMBED_URL", "http://x")]))
                .unwrap_err()
                .contains("CTXGATE_EMBED_MODEL")
        );
        let ok = br#"{"data":[{"index":0,"embedding":[0.5,1,2]}]}"#;
        assert_eq!(vector_of(ok, 3), Ok(vec![0.5, 1.0, 2.0]));
        assert!(vector_of(ok, 4).unwrap_err().contains("3 dimensions"));
        assert!(vector_of(br#"{"data":[]}"#, 3).is_err());
        assert_eq!(status_code(401), "embed_unauthorized");
        assert_eq!(status_code(429), "embed_rate_limited");
        assert_eq!(status_code(500), "embed_http_error");
    }
}
