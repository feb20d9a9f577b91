//! Push webhooks from GitHub and GitLab: every decision, none of the I/O.
//!
//! A forge calls the API when a repository is pushed to; the edge stores each project's webhook
//! secret and the deliveries it has seen, and queues the re-index. What it decides is here, so
//! both hosts decide it alike and it is tested without a server:
//!
//! - [`signature`]: whether a call comes from whoever holds the project's secret (GitHub's
//!   `X-Hub-Signature-256` HMAC of the raw body, GitLab's `X-Gitlab-Token`), compared in
//!   constant time;
//! - [`push`]: what a push event says (the repository's URLs, the ref, the default branch,
//!   whether the ref was deleted), from either forge's JSON;
//! - [`watch`]: whether a push moves what a project indexes (the same repository, whatever URL
//!   form each side spells it in, and the branch or tag the project follows);
//! - [`delivery`]: the marks a delivery leaves so that a replay of it is recognised, by its
//!   delivery id or by its body.

pub mod delivery;
pub mod push;
pub mod signature;
pub mod watch;

/// Which forge sent a webhook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forge {
    /// GitHub (or GitHub Enterprise): `X-Hub-Signature-256`, `X-GitHub-Event`,
    /// `X-GitHub-Delivery`.
    GitHub,
    /// GitLab: `X-Gitlab-Token`, `X-Gitlab-Event`, `X-Gitlab-Event-UUID`.
    GitLab,
}

impl Forge {
    /// The header that authenticates a delivery.
    pub fn signature_header(self) -> &'static str {
        match self {
            Forge::GitHub => "x-hub-signature-256",
            Forge::GitLab => "x-gitlab-token",
        }
    }

    /// The header that names the event.
    pub fn event_header(self) -> &'static str {
        match self {
            Forge::GitHub => "x-github-event",
            Forge::GitLab => "x-gitlab-event",
        }
    }

    /// The header that identifies a delivery (the same on a forge's redelivery).
    pub fn delivery_header(self) -> &'static str {
        match self {
            Forge::GitHub => "x-github-delivery",
            Forge::GitLab => "x-gitlab-event-uuid",
        }
    }

    /// The forge's name in paths and answers.
    pub fn name(self) -> &'static str {
        match self {
            Forge::GitHub => "github",
            Forge::GitLab => "gitlab",
        }
    }
}
