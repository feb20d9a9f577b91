//! The web console: one HTML page, one stylesheet and one script, compiled into the router so
//! both hosts serve the same bytes with no build step (`GET /console`). The page signs in with
//! an organisation's API key, kept in the tab's session storage and sent only as the
//! `Authorization` header of the API calls it makes; it reads the same public endpoints as any
//! client (`/v1/usage`, `/v1/context`, `/v1/projects`, `/v1/projects/{id}/status`).
//!
//! Served with a strict Content Security Policy: the script and stylesheet of this origin only,
//! no inline script, no framing, requests to this origin only.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

const PAGE: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("console.js");
const STYLE: &str = include_str!("console.css");

/// What a console answer may do: this origin's script, styles and API, nothing else.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /console`: the page.
pub async fn page() -> Response {
    asset(PAGE, "text/html; charset=utf-8")
}

/// `GET /console/console.js`.
pub async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /console/console.css`.
pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// `GET /`: the console.
pub async fn home() -> Redirect {
    Redirect::to("/console")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(POLICY),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page load (page, script, stylesheet) stays under 100 KB, and the page names the
    /// assets this module serves.
    #[test]
    fn a_page_load_is_small_and_complete() {
        let total = PAGE.len() + SCRIPT.len() + STYLE.len();
        assert!(total < 100 * 1024, "{total} bytes");
        assert!(PAGE.contains(r#"src="/console/console.js""#));
        assert!(PAGE.contains(r#"href="/console/console.css""#));
        // No inline script or style that the policy would block.
        assert!(!PAGE.contains("<script>") && !PAGE.contains("style="));
    }

    /// The key is never put in a URL: the script reads it from session storage and sends it
    /// as a header only.
    #[test]
    fn the_key_goes_in_a_header_only() {
        assert!(SCRIPT.contains(r#"Authorization: "Bearer " + key()"#));
        assert!(!SCRIPT.contains("localStorage"));
        assert!(!SCRIPT.contains("?key=") && !SCRIPT.contains("&key="));
    }
}
