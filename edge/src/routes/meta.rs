//! Endpoints about the service itself: health, models, token counts (the OpenAPI document is
//! served by [`crate::openapi`], which describes these).

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use ctxgate_core::catalog::{BudgetPolicy, TokenizerSpec};
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::tokens::Encoding;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::extract::{Caller, JsonBody};
use crate::meter::{self, Delivered};
use crate::state::AppState;
use crate::wire::Health;

/// `GET /healthz`.
pub async fn healthz() -> Json<Health> {
    Json(Health::current())
}

/// One model of the catalog, with what this server makes of it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ModelRow<'a> {
    /// The catalog's entry.
    #[serde(flatten)]
    model: &'a ctxgate_core::catalog::Model,
    /// Tokens a prompt may use: the window less the reply's and the safety margin's share.
    usable_context: u32,
    /// The tokenizer that counts for it, as a label (`o200k_base`, `estimate(...)`).
    tokenizer_label: String,
    /// Whether its counts are exact (false: an estimate with a safety margin).
    exact: bool,
}

/// The answer of `GET /v1/models`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ModelList<'a> {
    /// Every model of the catalog.
    models: Vec<ModelRow<'a>>,
}

/// `GET /v1/models`: the catalog with each model's usable budget.
pub async fn models(State(state): State<AppState>) -> impl IntoResponse {
    let policy = BudgetPolicy::default();
    let models = state
        .catalog
        .models()
        .iter()
        .map(|m| ModelRow {
            model: m,
            usable_context: policy.divide(m).usable,
            tokenizer_label: m.tokenizer.label(),
            exact: m.tokenizer.is_exact(),
        })
        .collect();
    Json(ModelList { models }).into_response()
}

/// `POST /v1/tokens/count` body.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountRequest {
    /// One text.
    #[serde(default)]
    text: Option<String>,
    /// Several texts.
    #[serde(default)]
    texts: Option<Vec<String>>,
    /// A model id or alias.
    #[serde(default)]
    model: Option<String>,
    /// An encoding name (`o200k_base`...), instead of a model.
    #[serde(default)]
    encoding: Option<String>,
}

/// The largest text count accepted per request.
const MAX_TEXTS: usize = 1000;

/// `POST /v1/tokens/count`: exact counts (or the documented estimate).
pub async fn count(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<CountRequest>,
) -> Result<Json<CountAnswer>, ApiError> {
    let (spec, model) = match (&req.model, &req.encoding) {
        (Some(_), Some(_)) => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "give `model` or `encoding`, not both",
            ));
        }
        (Some(m), None) => {
            let m = state.catalog.resolve(m)?;
            (m.tokenizer, Some(m.id.clone()))
        }
        (None, Some(e)) => {
            let enc = Encoding::from_name(e).ok_or_else(|| {
                ApiError::new(
                    ErrorCode::UnknownEncoding,
                    format!(
                        "unknown encoding `{e}`; known: o200k_base, o200k_harmony, cl100k_base, p50k_base, r50k_base"
                    ),
                )
            })?;
            (TokenizerSpec::Exact(enc), None)
        }
        (None, None) => (TokenizerSpec::Exact(Encoding::O200kBase), None),
    };
    let texts: Vec<String> = match (req.text, req.texts) {
        (Some(t), None) => vec![t],
        (None, Some(ts)) if ts.len() <= MAX_TEXTS => ts,
        (None, Some(_)) => {
            return Err(ApiError::new(
                ErrorCode::TooManyTexts,
                format!("at most {MAX_TEXTS} texts per request"),
            ));
        }
        _ => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "give `text` (a string) or `texts` (an array of strings)",
            ));
        }
    };
    let admission = meter::admit(&state, &caller, 0, "/v1/tokens/count").await?;
    let counts: Vec<u32> = texts.iter().map(|t| spec.count(t)).collect();
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    meter::finish(&state, &caller, admission, 0, 200, Delivered::default()).await;
    Ok(Json(CountAnswer {
        model,
        tokenizer: spec.label(),
        exact: spec.is_exact(),
        counts,
        total,
    }))
}

/// The answer of `POST /v1/tokens/count`.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct CountAnswer {
    /// The model counted for, when one was named.
    model: Option<String>,
    /// The tokenizer that counted.
    tokenizer: String,
    /// Whether the counts are exact (false: an estimate).
    exact: bool,
    /// One count per text.
    counts: Vec<u32>,
    /// Their sum.
    total: u64,
}
