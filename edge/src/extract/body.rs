//! The JSON body of a request, with the API's error shape for every way it can be wrong.

use crate::error::ApiError;
use ctxgate_core::error_code::ErrorCode;

/// A JSON body, with the API's error shape for every way it can be wrong.
pub struct JsonBody<T>(pub T);

impl<S, T> axum::extract::FromRequest<S> for JsonBody<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        use axum::extract::rejection::JsonRejection as R;
        use axum::http::StatusCode;
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(JsonBody(v)),
            Err(R::MissingJsonContentType(_)) => Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as JSON with `Content-Type: application/json`",
            )),
            Err(R::JsonSyntaxError(e)) => Err(ApiError::new(
                ErrorCode::MalformedJson,
                format!("the body is not valid JSON: {}", e.body_text()),
            )),
            Err(R::JsonDataError(e)) => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "the body does not match the request schema: {}",
                    e.body_text()
                ),
            )),
            Err(R::BytesRejection(e)) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::new(
                    ErrorCode::BodyTooLarge,
                    "the request body is over this server's limit",
                ))
            }
            Err(e) => Err(ApiError::new(ErrorCode::InvalidBody, e.body_text())),
        }
    }
}
