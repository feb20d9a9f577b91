//! The longer descriptions of some operations and of the path parameters, kept apart from the
//! table of [`super::operations`] so that it reads as a table.

pub(super) const CREATE_PROJECT: &str = "Fetches and indexes the source, then answers (synchronous: \
seconds for a small repository). `ctxgate serve` fetches git (https) and tarball (https) URLs on \
public addresses only; `--allow-private-sources` lets it reach private, loopback and link-local \
addresses and plain http, and `--local-root DIR` lets it read folders (`local`, `file://` git \
URLs) on its own machine inside DIR: an absolute path without `..` that does not leave DIR through \
a symbolic link (any other answers 403 `source_not_allowed`, whether or not it exists; a path \
with a NUL byte, over 4096 bytes or a name over 255 answers 400 `source_bad_path`). A private git repository is fetched over http(s) with the credential \
its source names (`\"credential\": NAME`, stored by the operator with `ctxgate credential set NAME \
--org ORG`, usable by that org only; the token is never shown): 400 `source_auth_required` when \
the server asks for credentials and the source names none, `source_credential_rejected` when it \
refuses the one named, `credential_not_found` when the org has no credential by that name, \
`source_bad_url` for a URL that carries a password. A refused source answers 403 `source_not_allowed` (policy) or \
`source_refused` (local paths on a server without `--local-root`); a wrong source 400 (`source_bad_archive`, `source_rev_not_found`, \
`source_too_large`, ...); an unreachable or failing remote 502 (`source_unreachable`, \
`source_git_error`, `source_http_error`). The Worker does not index. Deployed over S3 and \
DynamoDB, it registers git and tarball sources for the batch indexer (the Lambda function's \
scheduled pass fetches them; by default public https hosts only) and answers 202 with \
`current_version` null; registering a name again replaces a registration that was never \
indexed, and a name already indexed is 409 `conflict`. Folders and `file://` URLs are 403 \
`source_refused` there. Deployed over R2 and Durable Objects, it answers 403 `source_refused` \
and serves what an indexer publishes through the admin endpoints. The job counts against the \
org's `index_jobs_per_hour`: past it, 429 `quota_exceeded` with `Retry-After` and \
`details.limit` `index_jobs_per_hour`, and nothing is registered.";

pub(super) const METRICS: &str = "Counters and latency histograms since this process started (`ctxgate \
serve`) or, in the Worker, since this isolate started: Cloudflare runs many isolates, each \
counting its own requests; the whole deployment's figures are in the Workers Analytics Engine \
dataset when one is bound. Series: `ctxgate_http_requests_total` and \
`ctxgate_http_request_duration_seconds` by method, route template and status, \
`ctxgate_tokens_delivered_total` by org and route, `ctxgate_quota_refusals_total` by org and \
limit, `ctxgate_index_cache_lookups_total` by cache and result, \
`ctxgate_index_job_duration_seconds` by trigger and outcome (docs/observability.md).";

pub(super) const CREATE_WEBHOOK: &str = "A new random secret for the project's push webhook, \
replacing any previous one (whose deliveries are refused from then on). The answer is the only \
place the secret appears: it is stored server-side and never shown again. Set it on the forge \
with the answered path below this server's public URL (GitHub: content type application/json, \
the `push` event; GitLab: secret token, push events). Only projects indexed from a git \
repository registered through this server take webhooks (409 `webhook_source_unsupported`); a \
host that cannot queue indexing answers 403 `webhooks_unsupported`. docs/webhooks.md.";

pub(super) const DELIVERY: &str = "Authenticated by the project's webhook secret, not an API key: a \
missing signature is 401 `webhook_signature_missing`, a wrong one (or a project without a \
webhook: the two are not told apart) 401 `webhook_signature_invalid`. A delivery whose id or \
body was received before is 409 `webhook_replayed`. A push to another repository than the \
project's is 422 `webhook_repository_mismatch`; a push of another branch or tag than the one \
the project follows (its `rev`, or the default branch), a deleted ref, a ping or another event \
is 200 with nothing done; a push of the followed ref is 202 with the re-index queued (natively \
a job on this server; over AWS an asynchronous invocation of the indexer function). A queued \
re-index counts against the org's `index_jobs_per_hour` (429 `quota_exceeded` past it, and the \
delivery may come again); a push merged into a re-index already queued costs nothing. Refused \
deliveries change nothing.";

pub(super) const COMPACT: &str = "Keeps system and pinned messages and the last `keep_rounds` rounds \
verbatim; older messages become extractive summaries (agent turns keep files, commands, test \
counts, errors, commits, decisions), the oldest one aggregate; only then are the oldest dropped. \
Secrets are never carried into summaries. Metered: reserves `budget` tokens, settles \
`tokens_total`. `budget_too_small` (400) gives `details.needed`.";

pub(super) const GC: &str = "Garbage collection of what `ctxgate project publish` uploaded (a Worker's R2; \
the native host's data directory): keeps each project's current version, the `keep_last` before \
it, versions younger than `keep_younger_than_seconds`, and anything superseded or written less \
than `grace_seconds` ago; deletes every other version's manifest and pack and the segments no \
kept version names. A host reading the indexer's S3 answers 501 `not_supported` (collect it with \
`ctxgate gc --store`). `ctxgate gc --to URL --org ORG` calls this.";

pub(super) const STATUS: &str = "What the console's projects page shows: the current version's commit, remote, \
file, chunk and token counts, and the newest indexing job with its state and \
error code (hosts that keep no job records answer `last_job: null`).";

pub(super) const REINDEX: &str = "Publishes a new version when the project's files changed (an unchanged folder \
costs a stat walk); requests made meanwhile are answered from the previous \
version. Hosts that do not index sources (the Worker over R2) answer 403 \
`source_refused`. The job counts against the org's `index_jobs_per_hour` \
(429 `quota_exceeded` with `Retry-After` past it).";

pub(super) const MCP: &str = "Tools `get_context`, `search_code`, `count_tokens` and `list_projects`, each \
under the caller's org and quota. Protocol and tool errors are JSON-RPC \
answers (200): a tool's API error is its result with `isError: true`.";

pub(super) const SET_DENSE: &str = "With dense on, `/v1/context` embeds each query through the host's embeddings \
provider and ranks with the version's published vectors (the `dense` signal); \
off (the default) makes no provider call.";

pub(super) const PUT_OBJECT: &str = "`key` is the object's store key below `org/{org}/` (segments, packs, \
manifests; `ctxgate project publish` sends them, manifest last). Up to 96 MiB \
natively, 32 MiB in the Worker.";

pub(super) const HAS_OBJECT: &str = "204 when stored, 404 `object_not_found` when not: a publisher skips \
content-addressed segments an earlier version uploaded.";

/// What a path parameter is.
pub(super) fn parameter(name: &str) -> &'static str {
    match name {
        "id" => "The project's id or name.",
        "project" => "The project's id, as `POST /v1/projects/{id}/webhook` answered.",
        "org" => "The organisation's name.",
        "name" => "The project's name within the organisation.",
        "key" => {
            "The object's key within the organisation's store. It may hold `/` separators, \
             sent as they are: the route takes the rest of the path (OpenAPI cannot express \
             such a parameter, so generated clients must not percent-encode the slashes)."
        }
        _ => "",
    }
}
