//! `GET /metrics` (admin secret): what [`crate::metrics`] counted, as Prometheus text, or as
//! JSON for a caller that asks `Accept: application/json`. Natively the process's counts; in the
//! Worker one isolate's (Cloudflare runs many, each counting its own requests since it started:
//! the deployment's whole is in the Analytics Engine dataset, see docs/observability.md).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use crate::extract::Admin;
use crate::state::AppState;

/// The content type of the Prometheus text exposition format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`.
pub async fn metrics(State(state): State<AppState>, _: Admin, headers: HeaderMap) -> Response {
    let snapshot = state.metrics.snapshot();
    if wants_json(&headers) {
        return Json(snapshot).into_response();
    }
    (
        [(header::CONTENT_TYPE, PROMETHEUS_TEXT)],
        snapshot.prometheus(),
    )
        .into_response()
}

/// Whether `Accept` names JSON (Prometheus sends `text/plain` or its protobuf and text types).
fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().starts_with("application/json"))
}
