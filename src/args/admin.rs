//! The arguments of the operator's commands: organisations, keys, quotas, projects,
//! credentials, AWS set-up, garbage collection and jobs.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{Format, StoreArgs};

/// Limits; a flag left out keeps the current value (`--clear` removes them all first).
#[derive(Args, Debug, Clone, Default)]
pub struct LimitFlags {
    /// Tokens per UTC day.
    #[arg(long, value_name = "N")]
    pub tokens_per_day: Option<u64>,
    /// Tokens per UTC calendar month.
    #[arg(long, value_name = "N")]
    pub tokens_per_month: Option<u64>,
    /// Requests per minute.
    #[arg(long, value_name = "N")]
    pub requests_per_minute: Option<u32>,
    /// Requests in flight at once.
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,
    /// Index jobs per hour (project creation, re-index requests, webhook pushes, `serve
    /// --watch` re-indexes; a push merged into a job already queued is free).
    #[arg(long, value_name = "N")]
    pub index_jobs_per_hour: Option<u32>,
}

#[derive(Subcommand, Debug)]
pub enum OrgCommand {
    /// Create an organisation.
    Create(OrgCreateArgs),
}

#[derive(Args, Debug)]
pub struct OrgCreateArgs {
    /// Its name (letters, digits, `-`, `_`).
    pub name: String,
    #[command(flatten)]
    pub limits: LimitFlags,
    /// Models it may use (repeatable; default: all).
    #[arg(long = "allow-model", value_name = "ID")]
    pub allow_models: Vec<String>,
    /// Rank its requests with dense retrieval (`ctxgate serve --dense`, or the Worker's
    /// embeddings provider; default off).
    #[arg(long)]
    pub dense: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Create an API key: it is printed once and stored only as a hash.
    Create(KeyCreateArgs),
}

#[derive(Args, Debug)]
pub struct KeyCreateArgs {
    /// The organisation.
    #[arg(long)]
    pub org: String,
    /// Output format (`json` prints `{"key": "..."}`).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Subcommand, Debug)]
pub enum QuotaCommand {
    /// Set an organisation's limits.
    Set(QuotaSetArgs),
}

#[derive(Args, Debug)]
pub struct QuotaSetArgs {
    /// The organisation.
    #[arg(long)]
    pub org: String,
    #[command(flatten)]
    pub limits: LimitFlags,
    /// Remove every limit before applying the flags given.
    #[arg(long)]
    pub clear: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Subcommand, Debug)]
pub enum ProjectCommand {
    /// Register a local folder as a project of an organisation and index it.
    Add(ProjectAddArgs),
    /// Upload a project's current version to a Worker deployed over R2 and Durable Objects.
    Publish(ProjectPublishArgs),
    /// Index a registered project again from its folder or URL (only what changed is re-read);
    /// a server over the same data directory answers from the new version at once.
    Reindex(ProjectReindexArgs),
}

#[derive(Args, Debug)]
pub struct ProjectReindexArgs {
    /// The organisation.
    #[arg(long)]
    pub org: String,
    /// The project's name (or id) within the organisation.
    pub name: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
#[command(after_help = "\
Uploads the version's objects (segments, pack, manifest last) through the Worker's admin API, \
then makes it the project's current version there. The organisation must exist on the Worker \
(POST /v1/admin/orgs). The admin secret is read from the variable named by --admin-secret-env, \
never from the command line, where other users of the machine could read it.

  ctxgate project add --org acme --name core ./core
  CTXGATE_ADMIN_SECRET=... ctxgate project publish --org acme --name core --to https://ctxgate.acme.workers.dev")]
pub struct ProjectPublishArgs {
    /// The organisation.
    #[arg(long)]
    pub org: String,
    /// The project's name within the organisation.
    #[arg(long)]
    pub name: String,
    /// The Worker's base URL.
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// The variable holding the Worker's ADMIN_SECRET.
    #[arg(long, value_name = "VAR", default_value = "CTXGATE_ADMIN_SECRET")]
    pub admin_secret_env: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ProjectAddArgs {
    /// The organisation.
    #[arg(long)]
    pub org: String,
    /// The project's name within the organisation.
    #[arg(long)]
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Subcommand, Debug)]
pub enum CredentialCommand {
    /// Store (or replace) a credential, its token read from stdin or `--token-file`: a git
    /// source names it with `"credential": NAME`.
    Set(CredentialSetArgs),
    /// List an organisation's credentials by name (never their tokens).
    List(CredentialListArgs),
    /// Delete a credential.
    Delete(CredentialDeleteArgs),
}

#[derive(Args, Debug)]
pub struct CredentialSetArgs {
    /// The credential's name (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// The organisation that may use it.
    #[arg(long)]
    pub org: String,
    /// The HTTP Basic user name sent with the token (`oauth2` for GitLab OAuth tokens, a
    /// forge user for app passwords).
    #[arg(long, default_value = ctxgate_core::credential::DEFAULT_USERNAME)]
    pub username: String,
    /// Read the token from this file instead of stdin (never from an argument, which other
    /// users can see in the process list).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct CredentialListArgs {
    /// The organisation.
    #[arg(long)]
    pub org: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct CredentialDeleteArgs {
    /// The credential's name.
    pub name: String,
    /// The organisation.
    #[arg(long)]
    pub org: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Subcommand, Debug)]
pub enum AwsCommand {
    /// Create the S3 bucket and the DynamoDB table when missing (safe to run again).
    Init(AwsInitArgs),
}

#[derive(Args, Debug)]
pub struct AwsInitArgs {
    /// The bucket (and key prefix) to create, `s3://BUCKET/PREFIX`.
    #[arg(long, env = "CTXGATE_STORE", value_name = "S3_URL")]
    pub store: String,
    /// The table to create.
    #[arg(long, env = "CTXGATE_TABLE", value_name = "NAME")]
    pub table: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
#[command(after_help = "\
Kept whatever the flags say: the current version, versions superseded less than --grace ago \
(a server may still answer from one it opened) and any object younger than --grace (an upload \
of a publish in flight). Segments shared with a kept version stay.

  ctxgate gc --dry-run
  ctxgate gc --keep 0 --keep-younger-than 7d --format json")]
pub struct GcArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Collect a Worker's R2 instead (its base URL; needs --org and the admin secret in
    /// CTXGATE_ADMIN_SECRET): what `ctxgate project publish` uploaded there.
    #[arg(long, value_name = "URL", conflicts_with = "store", requires = "org")]
    pub to: Option<String>,
    /// Versions kept before the current one.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub keep: usize,
    /// Also keep versions created less than this long ago (e.g. `7d`, `12h`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub keep_younger_than: Option<std::time::Duration>,
    /// How long readers and publishers are given (e.g. `15m`, `0s`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "15m")]
    pub grace: std::time::Duration,
    /// Only this organisation's projects.
    #[arg(long)]
    pub org: Option<String>,
    /// Say what would be deleted, delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct JobsArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only this organisation's jobs.
    #[arg(long)]
    pub org: Option<String>,
    /// At most this many jobs.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}
