//! Who is calling: `Authorization: Bearer <key>` → the caller's organisation ([`Caller`]), or
//! the admin secret ([`Admin`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use ctxgate_core::error_code::ErrorCode;
use ctxgate_core::hash::Sha256Digest;

use crate::backend::OrgRecord;
use crate::error::ApiError;
use crate::observe::RequestNote;
use crate::state::AppState;

/// An authenticated caller.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The caller's organisation.
    pub org: OrgRecord,
    /// Which of its keys called ([`key_id`]).
    pub key_id: String,
    /// The request said `Cache-Control: no-cache`: resolve projects afresh instead of through
    /// the cached version pointer, to see a version published a moment ago.
    pub fresh: bool,
    /// The request's record, where metered calls note the tokens they deliver (a detached one
    /// for calls that come from no HTTP request, MCP over stdio).
    pub note: RequestNote,
}

/// A key's public id: the first 16 hex digits of its hash. The key has 192 bits of entropy, so
/// this names it in audit records without weakening it.
pub fn key_id(key_hash: &str) -> String {
    key_hash.chars().take(16).collect()
}

/// How keys are stored: only their sha256.
pub fn hash_key(key: &str) -> String {
    Sha256Digest::of(key.as_bytes()).to_hex()
}

/// The bearer token of a request, if any.
pub fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let key = bearer(parts).ok_or_else(|| {
            ApiError::new(
                ErrorCode::MissingApiKey,
                "send your API key as `Authorization: Bearer <key>`",
            )
        })?;
        let hash = hash_key(key);
        let record =
            state.accounts.key(&hash).await?.ok_or_else(|| {
                ApiError::new(ErrorCode::InvalidApiKey, "the API key is not valid")
            })?;
        let org = state.accounts.org(&record.org).await?.ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidApiKey,
                "the API key's organisation is gone",
            )
        })?;
        let note = parts
            .extensions
            .get::<RequestNote>()
            .cloned()
            .unwrap_or_default();
        note.org(&org.name);
        Ok(Caller {
            org,
            key_id: key_id(&hash),
            fresh: wants_fresh(parts),
            note,
        })
    }
}

/// Whether the request's `Cache-Control` asks for no cached answer (`no-cache` or `max-age=0`).
fn wants_fresh(parts: &Parts) -> bool {
    parts
        .headers
        .get_all(axum::http::header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|d| {
            let d = d.trim().to_ascii_lowercase();
            d == "no-cache" || d == "no-store" || d == "max-age=0"
        })
}

/// A request carrying the admin secret.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match admin_refusal(state.config.admin_secret.as_deref(), parts) {
            None => Ok(Admin),
            Some(refusal) => Err(refusal),
        }
    }
}

/// Why a request is not an admin's, given the server's admin secret (`None` when it is one).
pub fn admin_refusal(admin_secret: Option<&str>, parts: &Parts) -> Option<ApiError> {
    let Some(secret) = admin_secret else {
        return Some(ApiError::new(
            ErrorCode::AdminDisabled,
            "this server has no admin secret; admin endpoints are off",
        ));
    };
    (!carries_secret(parts, secret)).then(|| {
        ApiError::new(
            ErrorCode::InvalidAdminSecret,
            "send the admin secret as `Authorization: Bearer <secret>`",
        )
    })
}

/// Whether the request's bearer token is `secret`. Comparing hashes keeps the comparison's time
/// independent of the secret.
pub fn carries_secret(parts: &Parts, secret: &str) -> bool {
    bearer(parts).is_some_and(|k| hash_key(k) == hash_key(secret))
}
