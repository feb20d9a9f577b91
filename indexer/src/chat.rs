//! A client for OpenAI-compatible `/chat/completions` endpoints (plain HTTP, e.g. a local
//! Ollama or vLLM server): the one model client behind every LLM summary ctxgate writes —
//! conversation history in `ctxgate compact`, file summaries in the indexer.

use std::time::Duration;

use serde_json::json;

/// Where a chat model is served.
#[derive(Clone, PartialEq, Eq)]
pub struct ChatEndpoint {
    /// Base URL, such as `http://localhost:11434/v1` (`/chat/completions` is appended).
    pub url: String,
    /// The model to ask.
    pub model: String,
    /// Sent as a bearer token when set.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ChatEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatEndpoint")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Why a chat call gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The request failed or the server answered with an error status.
    #[error("request to {url} failed: {message}")]
    Http {
        /// The endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The answer is not a chat completion.
    #[error("the answer from {url} is not a chat completion: {message}")]
    Answer {
        /// The endpoint.
        url: String,
        /// What is missing.
        message: String,
    },
}

/// A blocking chat-completions client.
pub struct ChatClient {
    agent: ureq::Agent,
    url: String,
    model: String,
    key: Option<String>,
}

impl ChatClient {
    /// A client for `endpoint`, with a 60 s limit per call.
    pub fn new(endpoint: &ChatEndpoint) -> Self {
        Self {
            agent: ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(60)))
                .build()
                .into(),
            url: format!("{}/chat/completions", endpoint.url.trim_end_matches('/')),
            model: endpoint.model.clone(),
            key: endpoint.api_key.clone(),
        }
    }

    /// The full URL called.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model asked.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Asks the model, at temperature 0, to answer `user` under the `system` instruction in at
    /// most `max_tokens`; returns the answer's text, trimmed.
    pub fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<String, ChatError> {
        let body = json!({
            "model": self.model,
            "temperature": 0,
            "max_tokens": max_tokens,
            "messages": [
                { "role": "system", "content": system },
                { "role": "user", "content": user },
            ],
        });
        let http = |message: String| ChatError::Http {
            url: self.url.clone(),
            message,
        };
        let mut req = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        if let Some(k) = &self.key {
            req = req.header("Authorization", &format!("Bearer {k}"));
        }
        let mut res = req
            .send(body.to_string())
            .map_err(|e| http(e.to_string()))?;
        let text = res
            .body_mut()
            .read_to_string()
            .map_err(|e| http(e.to_string()))?;
        let answer = |message: String| ChatError::Answer {
            url: self.url.clone(),
            message,
        };
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| answer(e.to_string()))?;
        v["choices"][0]["message"]["content"]
            .as_str()
            .map(|s| s.trim().to_string())
            .ok_or_else(|| answer("no choices[0].message.content".into()))
    }
}
