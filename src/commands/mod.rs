//! One module per subcommand, plus what they share: the data directory, the catalog and the
//! indexing flags.

pub mod admin;
pub mod assemble;
pub mod aws;
pub mod aws_http;
pub mod compact;
pub mod count;
pub mod credential;
pub mod gc;
pub mod index;
pub mod mcp;
pub mod models;
pub mod serve;
pub mod watch;

use ctxgate_core::error_code::ErrorCode;
use std::path::PathBuf;

use ctxgate_core::catalog::Catalog;
use ctxgate_core::chunk::FilterOptions;
use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::chat::ChatEndpoint;
use ctxgate_indexer::pipeline::IndexOptions;
use ctxgate_indexer::store::{IndexStore, Store};
use ctxgate_indexer::walk::{Globs, WalkOptions};

use crate::args::{Global, IndexFlags, StoreArgs};
use crate::failure::Failure;

/// The data directory: --data-dir / CTXGATE_HOME, else the platform's data folder.
pub fn data_dir(global: &Global) -> Result<PathBuf, Failure> {
    if let Some(d) = &global.data_dir {
        return Ok(d.clone());
    }
    directories::ProjectDirs::from("dev", "ctxgate", "ctxgate")
        .map(|p| p.data_dir().to_path_buf())
        .ok_or_else(|| {
            Failure::coded(
                ErrorCode::NoDataDir,
                "cannot find a home folder; set --data-dir or CTXGATE_HOME",
            )
        })
}

pub fn open_store(global: &Global) -> Result<Store, Failure> {
    Ok(Store::open(&data_dir(global)?)?)
}

/// The store `--store`/`--table` name, else the embedded data directory.
pub fn index_store(global: &Global, args: &StoreArgs) -> Result<Box<dyn IndexStore>, Failure> {
    match (&args.store, &args.table) {
        (Some(url), Some(table)) => {
            let location = S3Location::parse(url)?;
            // Token tables are still cached locally.
            let cache = data_dir(global)?;
            Ok(Box::new(AwsStore::open(location, table, &cache)?))
        }
        _ => Ok(Box::new(open_store(global)?)),
    }
}

/// The built-in catalog, with the user's file laid over it.
pub fn catalog(global: &Global) -> Result<Catalog, Failure> {
    let builtin = Catalog::builtin();
    let path = match &global.catalog {
        Some(p) => Some(p.clone()),
        None => data_dir(global)
            .ok()
            .map(|d| d.join("models.toml"))
            .filter(|p| p.is_file()),
    };
    let Some(path) = path else { return Ok(builtin) };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Failure::coded(
            ErrorCode::CatalogUnreadable,
            format!("cannot read catalog `{}`: {e}", path.display()),
        )
    })?;
    let user = Catalog::from_toml(&text).map_err(|e| {
        Failure::coded(
            ErrorCode::InvalidCatalog,
            format!("{}: {e}", path.display()),
        )
    })?;
    Ok(builtin.merge(user)?)
}

/// How to index, from the flags and then the folder's config file; a bad glob is refused here,
/// before anything is read.
pub fn index_options(
    flags: &IndexFlags,
    config: Option<&crate::config::ProjectConfig>,
) -> Result<IndexOptions, Failure> {
    let pick = |flag: &Vec<String>, file: Option<&Vec<String>>| {
        if flag.is_empty() {
            file.cloned().unwrap_or_default()
        } else {
            flag.clone()
        }
    };
    let globs = Globs {
        include: pick(&flags.include, config.map(|c| &c.include)),
        exclude: pick(&flags.exclude, config.map(|c| &c.exclude)),
    };
    globs
        .compile()
        .map_err(|e| Failure::coded(ErrorCode::InvalidGlob, e.to_string()))?;
    Ok(IndexOptions {
        filter: FilterOptions {
            include_lock: flags.include_lock,
            include_minified: flags.include_minified,
            include_generated: flags.include_generated,
            max_file_bytes: flags.max_file_size,
        },
        walk: WalkOptions {
            follow_links: flags.follow_links,
            hidden: flags.hidden,
            exclude: Vec::new(),
            globs,
        },
        force: flags.force,
        summarize_llm: match (&flags.summarize_llm_url, &flags.summarize_llm_model) {
            (Some(url), Some(model)) => Some(ChatEndpoint {
                url: url.clone(),
                model: model.clone(),
                api_key: std::env::var("CTXGATE_LLM_API_KEY").ok(),
            }),
            _ => None,
        },
        ..IndexOptions::default()
    })
}

/// Prints `value` as one JSON document.
/// The embedding model `--dense` asks for.
pub fn dense_config(
    args: &crate::args::DenseArgs,
) -> Result<Option<ctxgate_indexer::embed::DenseConfig>, Failure> {
    match args.dense {
        crate::args::DenseArg::Off => Ok(None),
        crate::args::DenseArg::Local => Ok(Some(ctxgate_indexer::embed::DenseConfig::Local)),
        crate::args::DenseArg::Static => Ok(Some(ctxgate_indexer::embed::DenseConfig::Static)),
        crate::args::DenseArg::Api => {
            let url = args.embed_url.clone().ok_or_else(|| {
                Failure::flag(
                    ErrorCode::EmbedUrlMissing,
                    "--dense api needs --embed-url URL",
                )
            })?;
            Ok(Some(ctxgate_indexer::embed::DenseConfig::Api(
                ctxgate_indexer::embed::openai::EmbeddingsEndpoint {
                    url,
                    model: args.embed_model.clone(),
                    api_key: std::env::var("CTXGATE_EMBED_API_KEY").ok(),
                    dims: args.embed_dims,
                },
            )))
        }
    }
}

/// `ctxgate completions SHELL`: the completion script on stdout.
pub fn completions(args: &crate::args::CompletionsArgs) -> crate::failure::CmdResult {
    use clap::CommandFactory;
    let mut cmd = crate::args::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "ctxgate", &mut std::io::stdout());
    Ok(())
}

pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?;
    println!("{text}");
    Ok(())
}

/// Thousands separators for people.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
