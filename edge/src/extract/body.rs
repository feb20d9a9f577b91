//! The JSON body of a request, with the API's error shape for every way it can be wrong.

use crate::error::ApiError;

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
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as JSON with `Content-Type: application/json`",
            )),
            Err(R::JsonSyntaxError(e)) => Err(ApiError::bad_request(
                "malformed_json",
                format!("the body is not valid JSON: {}", e.body_text()),
            )),
            Err(R::JsonDataError(e)) => Err(ApiError::bad_request(
                "invalid_request",
                format!(
                    "the body does not match the request schema: {}",
                    e.body_text()
                ),
            )),
            Err(R::BytesRejection(e)) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    "the request body is over this server's limit",
                ))
            }
            Err(e) => Err(ApiError::bad_request("invalid_body", e.body_text())),
        }
    }
}
