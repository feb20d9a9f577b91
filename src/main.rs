//! `ctxgate`: the smallest, most relevant context for an LLM request, within an exact token
//! budget, with provenance for every piece.

mod args;
mod commands;
mod config;
mod failure;
mod host;
mod progress;

use ctxgate_core::error_code::ErrorCode;
use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    // A server and the jobs talk to sockets and child processes (gitoxide pipes into `git
    // upload-pack` for `file://` URLs): a peer that hangs up is an error to handle there, not a
    // reason to die. The others are filters whose stdout may be a closed pipe.
    if !matches!(
        cli.command,
        Command::Serve(_) | Command::Mcp(_) | Command::Aws(_) | Command::Jobs(_)
    ) {
        restore_sigpipe();
    }
    init_logging(cli.global.verbose, cli.global.quiet);
    let format = cli.command.format();
    let result = match &cli.command {
        Command::Index(a) => commands::index::run(&cli.global, a),
        Command::Assemble(a) => commands::assemble::run(&cli.global, a),
        Command::Count(a) => commands::count::run(&cli.global, a),
        Command::Models(a) => commands::models::run(&cli.global, a),
        Command::Compact(a) => commands::compact::run(&cli.global, a),
        Command::Serve(a) => commands::serve::run(&cli.global, a),
        Command::Mcp(a) => commands::mcp::run(&cli.global, a),
        Command::Org(c) => commands::admin::org(&cli.global, c),
        Command::Key(c) => commands::admin::key(&cli.global, c),
        Command::Quota(c) => commands::admin::quota(&cli.global, c),
        Command::Project(c) => commands::admin::project(&cli.global, c),
        Command::Credential(c) => commands::credential::run(&cli.global, c),
        Command::Aws(c) => commands::aws::run(&cli.global, c),
        Command::Jobs(a) => commands::aws::jobs(&cli.global, a),
        Command::Gc(a) => commands::gc::run(&cli.global, a),
        Command::Completions(a) => commands::completions(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.report(format),
    }
}

/// A command line clap refused. Help and version are printed as clap prints them; an error is
/// one JSON document on stdout when the line asked for `--format json` (scripts parse errors
/// as they parse answers), else clap's own text. Exit code 2 either way.
fn usage_error(e: clap::Error) -> ExitCode {
    let shown = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if shown || !wants_json(std::env::args()) {
        e.exit()
    }
    let code = match e.kind() {
        ErrorKind::UnknownArgument => ErrorCode::UnknownArgument,
        ErrorKind::InvalidSubcommand => ErrorCode::UnknownCommand,
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => ErrorCode::InvalidValue,
        ErrorKind::MissingRequiredArgument | ErrorKind::MissingSubcommand => {
            ErrorCode::MissingArgument
        }
        ErrorKind::ArgumentConflict => ErrorCode::ArgumentConflict,
        _ => ErrorCode::InvalidUsage,
    }
    .as_str();
    let text = e.render().to_string();
    let message = text
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string();
    let doc =
        serde_json::json!({ "error": { "code": code, "message": message, "usage": text.trim() } });
    println!("{doc}");
    ExitCode::from(2)
}

/// Whether a command line asks for JSON output (`--format json` or `--format=json`).
fn wants_json(args: impl Iterator<Item = String>) -> bool {
    let args: Vec<String> = args.collect();
    args.iter().any(|a| a == "--format=json")
        || args
            .windows(2)
            .any(|w| w[0] == "--format" && w[1] == "json")
}

/// Rust ignores SIGPIPE, which turns `ctxgate assemble ... | head` into a panic on the first
/// write after `head` exits; like other Unix filters, ctxgate should just stop.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called in main before any thread exists (parsing spawns none); SIG_DFL is valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn init_logging(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CTXGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Colours only for a person at a terminal: not into a log file or a pipe, and never when
    // NO_COLOR is set (https://no-color.org).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .init();
}
