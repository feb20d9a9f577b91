//! What a push event says, from GitHub's or GitLab's JSON.
//!
//! Only the fields a decision needs are read: the repository's URLs (every form the forge
//! gives: https, ssh, scp-like, web), the ref, the repository's default branch, the commit the
//! ref moved to and whether the ref was deleted. Anything else in the payload is ignored, so a
//! forge that adds fields changes nothing.

use serde_json::Value;

use super::Forge;

use crate::error_code::ErrorCode;

/// What a delivery is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A push of a branch or a tag.
    Push(Push),
    /// GitHub's `ping`, sent when a webhook is created: the repository's URLs, when the hook
    /// belongs to one.
    Ping {
        /// The repository's URLs (empty for an organisation's hook).
        repository_urls: Vec<String>,
    },
    /// Any other event (issues, merge requests, ...): nothing to do.
    Other(String),
}

/// One push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// Every URL the payload gives for the repository.
    pub repository_urls: Vec<String>,
    /// The full ref pushed (`refs/heads/main`, `refs/tags/v1`).
    pub git_ref: String,
    /// The repository's default branch (`main`).
    pub default_branch: String,
    /// The commit the ref now points at (all zeros when it was deleted).
    pub after: String,
    /// Whether the push deleted the ref.
    pub deleted: bool,
}

/// Why a payload cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// The event header is absent.
    #[error("the `{0}` header is missing")]
    EventMissing(&'static str),
    /// The body is not JSON (a GitHub hook set to `application/x-www-form-urlencoded`, say).
    #[error("the body is not JSON ({0}); set the webhook's content type to application/json")]
    NotJson(String),
    /// A field the event needs is absent or has the wrong type.
    #[error("the payload has no `{0}`")]
    Missing(&'static str),
}

impl PayloadError {
    /// The API's machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            PayloadError::EventMissing(_) => ErrorCode::WebhookEventMissing,
            PayloadError::NotJson(_) | PayloadError::Missing(_) => ErrorCode::WebhookPayloadInvalid,
        }
    }
}

/// Reads a delivery: `event` is the event header's value (`None` when absent), `body` the raw
/// body.
pub fn parse(forge: Forge, event: Option<&str>, body: &[u8]) -> Result<Event, PayloadError> {
    let event = event
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .ok_or(PayloadError::EventMissing(forge.event_header()))?;
    let kind = match (forge, event) {
        (Forge::GitHub, "push") => Kind::Push,
        (Forge::GitHub, "ping") => Kind::Ping,
        (Forge::GitLab, "Push Hook" | "Tag Push Hook") => Kind::Push,
        _ => return Ok(Event::Other(event.to_owned())),
    };
    let json: Value =
        serde_json::from_slice(body).map_err(|e| PayloadError::NotJson(e.to_string()))?;
    if !json.is_object() {
        return Err(PayloadError::NotJson("not an object".into()));
    }
    Ok(match (forge, kind) {
        (Forge::GitHub, Kind::Ping) => Event::Ping {
            repository_urls: urls(&json["repository"], GITHUB_URLS),
        },
        (Forge::GitHub, _) => Event::Push(github_push(&json)?),
        (Forge::GitLab, _) => Event::Push(gitlab_push(&json)?),
    })
}

enum Kind {
    Push,
    Ping,
}

/// The URL fields of GitHub's `repository` object.
const GITHUB_URLS: &[&str] = &[
    "clone_url",
    "html_url",
    "ssh_url",
    "git_url",
    "url",
    "svn_url",
];
/// The URL fields of GitLab's `project` and `repository` objects.
const GITLAB_URLS: &[&str] = &[
    "git_http_url",
    "git_ssh_url",
    "web_url",
    "http_url",
    "ssh_url",
    "url",
    "homepage",
];

fn urls(object: &Value, fields: &[&str]) -> Vec<String> {
    fields
        .iter()
        .filter_map(|f| object.get(*f)?.as_str())
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect()
}

fn text<'a>(v: &'a Value, field: &'static str) -> Result<&'a str, PayloadError> {
    v.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(PayloadError::Missing(field))
}

/// The commit id git writes for "no commit" (a deleted ref's `after`).
fn is_zero(commit: &str) -> bool {
    !commit.is_empty() && commit.bytes().all(|b| b == b'0')
}

fn github_push(json: &Value) -> Result<Push, PayloadError> {
    let repo = json
        .get("repository")
        .filter(|r| r.is_object())
        .ok_or(PayloadError::Missing("repository"))?;
    let repository_urls = urls(repo, GITHUB_URLS);
    if repository_urls.is_empty() {
        return Err(PayloadError::Missing("repository.clone_url"));
    }
    let after = json.get("after").and_then(Value::as_str).unwrap_or("");
    Ok(Push {
        repository_urls,
        git_ref: text(json, "ref")?.to_owned(),
        default_branch: text(repo, "default_branch")
            .map_err(|_| PayloadError::Missing("repository.default_branch"))?
            .to_owned(),
        deleted: json.get("deleted").and_then(Value::as_bool) == Some(true) || is_zero(after),
        after: after.to_owned(),
    })
}

fn gitlab_push(json: &Value) -> Result<Push, PayloadError> {
    let project = json
        .get("project")
        .filter(|p| p.is_object())
        .ok_or(PayloadError::Missing("project"))?;
    let mut repository_urls = urls(project, GITLAB_URLS);
    if let Some(repo) = json.get("repository") {
        repository_urls.extend(urls(repo, GITLAB_URLS));
    }
    if repository_urls.is_empty() {
        return Err(PayloadError::Missing("project.git_http_url"));
    }
    let after = json.get("after").and_then(Value::as_str).unwrap_or("");
    Ok(Push {
        repository_urls,
        git_ref: text(json, "ref")?.to_owned(),
        default_branch: text(project, "default_branch")
            .map_err(|_| PayloadError::Missing("project.default_branch"))?
            .to_owned(),
        deleted: is_zero(after),
        after: after.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn github(after: &str, deleted: bool) -> Vec<u8> {
        json!({
            "ref": "refs/heads/main", "before": "1".repeat(40), "after": after,
            "deleted": deleted,
            "repository": {
                "full_name": "acme/web", "default_branch": "main",
                "clone_url": "https://github.com/acme/web.git",
                "html_url": "https://github.com/acme/web",
                "ssh_url": "git@github.com:acme/web.git",
                "git_url": "git://github.com/acme/web.git"
            },
            "head_commit": {"id": after}
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_github_push_is_read() {
        let e = parse(Forge::GitHub, Some("push"), &github(&"a".repeat(40), false)).unwrap();
        let Event::Push(p) = e else { panic!("{e:?}") };
        assert_eq!(p.git_ref, "refs/heads/main");
        assert_eq!(p.default_branch, "main");
        assert!(!p.deleted);
        assert_eq!(p.repository_urls.len(), 4);
        assert!(
            p.repository_urls
                .contains(&"git@github.com:acme/web.git".into())
        );
        let e = parse(Forge::GitHub, Some("push"), &github(&"0".repeat(40), true)).unwrap();
        assert!(matches!(e, Event::Push(Push { deleted: true, .. })));
    }

    #[test]
    fn a_gitlab_push_is_read() {
        let body = json!({
            "object_kind": "push", "ref": "refs/heads/dev", "after": "0".repeat(40),
            "project": {
                "path_with_namespace": "acme/web", "default_branch": "main",
                "git_http_url": "https://gitlab.com/acme/web.git",
                "git_ssh_url": "git@gitlab.com:acme/web.git",
                "web_url": "https://gitlab.com/acme/web"
            },
            "repository": {"url": "git@gitlab.com:acme/web.git"}
        })
        .to_string();
        let Event::Push(p) = parse(Forge::GitLab, Some("Push Hook"), body.as_bytes()).unwrap()
        else {
            panic!()
        };
        assert_eq!(p.git_ref, "refs/heads/dev");
        assert!(p.deleted, "an all-zero `after` deletes the branch");
        assert_eq!(p.repository_urls.len(), 4);
    }

    #[test]
    fn pings_other_events_and_bad_payloads() {
        let ping =
            json!({"zen": "x", "hook_id": 1, "repository": {"clone_url": "https://h/r.git"}});
        assert_eq!(
            parse(Forge::GitHub, Some("ping"), ping.to_string().as_bytes()),
            Ok(Event::Ping {
                repository_urls: vec!["https://h/r.git".into()]
            })
        );
        assert_eq!(
            parse(Forge::GitHub, Some("issues"), b"not even json"),
            Ok(Event::Other("issues".into()))
        );
        assert_eq!(
            parse(Forge::GitLab, Some("Merge Request Hook"), b"{}"),
            Ok(Event::Other("Merge Request Hook".into()))
        );
        let missing = |forge, event, body: &[u8]| parse(forge, event, body).unwrap_err().code();
        assert_eq!(missing(Forge::GitHub, None, b"{}"), "webhook_event_missing");
        assert_eq!(
            missing(Forge::GitLab, Some(" "), b"{}"),
            "webhook_event_missing"
        );
        assert_eq!(
            missing(Forge::GitHub, Some("push"), b"payload=%7B%7D"),
            "webhook_payload_invalid"
        );
        assert_eq!(
            missing(Forge::GitHub, Some("push"), b"[]"),
            "webhook_payload_invalid"
        );
        assert_eq!(
            parse(Forge::GitHub, Some("push"), br#"{"ref":"refs/heads/x"}"#),
            Err(PayloadError::Missing("repository"))
        );
        let no_default = json!({"ref": "refs/heads/x", "repository": {"clone_url": "https://h/r"}});
        assert_eq!(
            parse(
                Forge::GitHub,
                Some("push"),
                no_default.to_string().as_bytes()
            ),
            Err(PayloadError::Missing("repository.default_branch"))
        );
        let no_ref = json!({"project": {"default_branch": "main", "git_http_url": "https://h/r"}});
        assert_eq!(
            parse(
                Forge::GitLab,
                Some("Push Hook"),
                no_ref.to_string().as_bytes()
            ),
            Err(PayloadError::Missing("ref"))
        );
    }
}
