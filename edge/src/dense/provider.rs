//! A query embedder over any OpenAI-compatible `POST {base}/embeddings` endpoint, sent through
//! the host's [`HttpClient`] (`fetch` in the Worker): the Worker's way to embed a query, since
//! it runs no model.
//!
//! Wire format, as the indexer's client: `{"model", "input": [query], "encoding_format":
//! "float"}` in, `{"data": [{"index", "embedding"}]}` out. A failure answers the tenant with
//! the indexer's codes (`embed_unauthorized`, `embed_rate_limited`, ...) and the status only:
//! the provider's URL and its own error text (OpenAI's 401 names a masked key) are the
//! operator's, so they go to the host's log ([`HttpClient::warn`]).

use async_trait::async_trait;
use ctxgate_core::dense::wire;
use ctxgate_core::error_code::ErrorCode;

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

    /// The tenant's error for a failed request (`public`), with the operator's `detail` logged.
    fn failed(
        &self,
        code: ErrorCode,
        public: &str,
        detail: impl std::fmt::Display,
    ) -> BackendError {
        self.client.warn(&format!(
            "embeddings request to {} failed: {detail}",
            self.url
        ));
        BackendError::Embedding {
            code,
            message: format!("{public}; the server's log has the provider's answer"),
        }
    }
}

/// The code of an embeddings API's refusal, by its status (the indexer's codes).
fn status_code(status: u16) -> ErrorCode {
    match status {
        401 | 403 => ErrorCode::EmbedUnauthorized,
        429 => ErrorCode::EmbedRateLimited,
        _ => ErrorCode::EmbedHttpError,
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
        let res = self.client.send(req).await.map_err(|e| {
            self.failed(
                ErrorCode::EmbedUnreachable,
                "the embeddings provider could not be reached",
                e,
            )
        })?;
        if !(200..300).contains(&res.status) {
            let detail = wire::refusal(&res.body);
            return Err(self.failed(
                status_code(res.status),
                &format!(
                    "the embeddings provider refused the request (HTTP {})",
                    res.status
                ),
                format!("HTTP {}: {detail}", res.status),
            ));
        }
        vector_of(&res.body, self.settings.dims).map_err(|e| {
            self.failed(
                ErrorCode::EmbedBadAnswer,
                "the embeddings provider's answer is not a valid embeddings response",
                e,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::HttpResponse;

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

    /// A provider that refuses every request the way OpenAI refuses a wrong key, and keeps
    /// what the host logged.
    struct Refusing(std::sync::Mutex<Vec<String>>);

    #[async_trait]
    impl HttpClient for Refusing {
        async fn send(&self, _: SignedRequest) -> Result<HttpResponse, BackendError> {
            Ok(HttpResponse {
                status: 401,
                body: br#"{"error":{"message":"Incorrect API key provided: sk-ab***yz"}}"#.to_vec(),
            })
        }
        fn warn(&self, message: &str) {
            self.0.lock().unwrap().push(message.to_owned());
        }
        async fn pause(&self, _: u64) {}
        fn now_ms(&self) -> u64 {
            0
        }
        fn random_u64(&self) -> u64 {
            4
        }
    }

    #[test]
    fn a_refusal_tells_the_tenant_its_code_and_the_operator_its_text() {
        let api = EmbeddingsApi::new(
            Refusing(std::sync::Mutex::default()),
            ApiSettings {
                url: "https://embed.internal.example/v1".into(),
                model: "m".into(),
                dims: 3,
                api_key: Some("sk-secret".into()),
            },
        );
        let err = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(api.embed_query("q"))
            .unwrap_err();
        let BackendError::Embedding { code, message } = err else {
            panic!("{err:?}");
        };
        assert_eq!(code, "embed_unauthorized");
        assert!(message.contains("HTTP 401"), "{message}");
        for private in ["sk-", "internal.example", "Incorrect API key"] {
            assert!(!message.contains(private), "{message}");
        }
        let logged = api.client.0.lock().unwrap().join("\n");
        assert!(
            logged.contains("Incorrect API key") && logged.contains("internal.example"),
            "{logged}"
        );
    }
}
