//! `ctxgate assemble`.

use ctxgate_core::error_code::ErrorCode;
use std::fmt::Write as _;
use std::io::{IsTerminal, Read};
use std::path::Path;

use ctxgate_core::assemble::ask::{self, AskError, Limits};
use ctxgate_core::catalog::BudgetPolicy;
use ctxgate_core::profile::Profile;
use ctxgate_indexer::assemble::{AssembleReport, AssembleRequest, assemble};
use ctxgate_indexer::pipeline::IndexStatus;

use super::{catalog, index_options, open_store, print_json, thousands};
use crate::args::{AssembleArgs, CompressionArg, Format, Global};
use crate::config::ProjectConfig;
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::progress::FileBar;

/// `writeln!` into a `String`, which cannot fail.
macro_rules! push_line {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// The query from `--query` or `--query-file`, checked by the core's rule ([`ask::check_query`]).
fn read_query(args: &AssembleArgs) -> Result<String, Failure> {
    let query = match (&args.query, &args.query_file) {
        (Some(q), _) => q.clone(),
        (None, Some(path)) => read_text(path, "query", ErrorCode::QueryFileUnreadable)?,
        (None, None) => {
            return Err(Failure::coded(
                ErrorCode::QueryMissing,
                "give --query TEXT or --query-file FILE",
            ));
        }
    };
    ask::check_query(&query, &Limits::LOCAL).map_err(ask_failure)?;
    Ok(query)
}

/// A refused ask as a command failure: the core's code, and its message with the flags that
/// stand for the API's fields here.
fn ask_failure(e: AskError) -> Failure {
    let message = match &e {
        AskError::ErrorOutputMissing => {
            "--profile repair needs the error output: give --error-file FILE".to_string()
        }
        AskError::ErrorOutputUnused { profile } => format!(
            "--error-file is read by --profile repair only, not `{}`",
            profile.name()
        ),
        other => other.to_string(),
    };
    Failure::coded(e.code(), message)
}

/// A UTF-8 file, or stdin for `-`; `what` names it in errors.
fn read_text(path: &Path, what: &str, code: ErrorCode) -> Result<String, Failure> {
    let bytes = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| Failure::coded(code, format!("cannot read the {what} from stdin: {e}")))?;
        buf
    } else {
        std::fs::read(path).map_err(|e| {
            Failure::coded(
                code,
                format!("cannot read {what} file `{}`: {e}", path.display()),
            )
        })?
    };
    String::from_utf8(bytes).map_err(|_| {
        Failure::coded(
            code,
            format!("{what} file `{}` is not valid UTF-8", path.display()),
        )
    })
}

/// The profile asked for, and the error output it needs: `repair` by default with
/// `--error-file`, which no other profile uses.
fn read_profile(
    args: &AssembleArgs,
    config: Option<&ProjectConfig>,
) -> Result<(Profile, Option<String>), Failure> {
    let asked = args
        .profile
        .or_else(|| config.and_then(|c| c.profile).map(|n| n.0))
        .map(Profile::from);
    let profile = ask::choose_profile(asked, args.error_file.is_some()).map_err(ask_failure)?;
    let Some(path) = &args.error_file else {
        return Ok((profile, None));
    };
    if path.as_os_str() == "-" && args.query_file.as_deref() == Some(Path::new("-")) {
        return Err(Failure::coded(
            ErrorCode::ErrorFileUnreadable,
            "the query and the error output cannot both come from stdin",
        ));
    }
    let text = read_text(path, "error output", ErrorCode::ErrorFileUnreadable)?;
    ask::check_error_output(&text, &Limits::LOCAL).map_err(ask_failure)?;
    Ok((profile, Some(text)))
}

pub fn run(global: &Global, args: &AssembleArgs) -> CmdResult {
    if let Some(failure) = words_for_folder(args) {
        return Err(failure);
    }
    let repo = args.folder();
    let config = crate::config::load(&repo)?;
    let config = config.as_ref().map(|(_, c)| c);
    let query = read_query(args)?;
    let (profile, error_output) = read_profile(args, config)?;
    if !(args.context_share > 0.0 && args.context_share <= 1.0) {
        return Err(Failure::coded(
            ErrorCode::InvalidContextShare,
            "--context-share must be in (0, 1]",
        ));
    }
    let catalog = catalog(global)?;
    let store = open_store(global)?;
    let mut index = index_options(&args.flags, config)?;
    // A flag wins over the file; `--model` alone sets the budget from its window, so the file's
    // budget only applies when neither flag is given.
    let (budget, model) = match (args.budget, &args.model) {
        (None, None) => (
            config.and_then(|c| c.budget),
            config.and_then(|c| c.model.clone()),
        ),
        (b, m) => (b, m.clone()),
    };
    let compression = args
        .compression
        .or_else(|| config.and_then(|c| c.compression).map(|n| n.0))
        .unwrap_or(CompressionArg::None);
    index.walk.exclude.push(store.root().to_path_buf());
    let req = AssembleRequest {
        repo,
        query,
        budget,
        model,
        policy: BudgetPolicy {
            context_share: args.context_share,
            reserve_reply: args.reserve_reply,
            system_prompt_tokens: args.system_prompt_tokens,
        },
        index,
        hot_paths: args.hot.clone(),
        compression: compression.into(),
        profile,
        error_output,
        dense: super::dense_config(&args.dense)?,
        rerankers: Default::default(),
    };
    let bar = FileBar::new(global.quiet, "indexing");
    let report = assemble(&store, &catalog, &req, &bar)?;
    if let Some(path) = &args.output {
        let bytes = match args.format {
            Format::Json => serde_json::to_vec_pretty(&report)
                .map_err(|e| Failure::coded(ErrorCode::InternalError, e.to_string()))?,
            Format::Text => report.prompt.clone().into_bytes(),
        };
        write_output(path, &bytes)?;
        if args.format == Format::Text && !global.quiet {
            eprintln!("{}", written(&report, path));
            for w in &report.warnings {
                eprintln!("warning: {w}");
            }
        }
        return Ok(());
    }
    match args.format {
        Format::Json => print_json(&report),
        Format::Text => {
            // A person at a terminal reads the analysis above the prompt; a pipe or a file
            // (`> ctx.md`) gets the prompt alone, and the analysis goes to stderr.
            if !args.prompt_only && std::io::stdout().is_terminal() {
                println!("{}{PROMPT_RULE}", analysis(&report, &catalog));
            } else if !global.quiet {
                eprint!("{}", analysis(&report, &catalog));
            }
            print!("{}", report.prompt);
            Ok(())
        }
    }
}

/// The line between the analysis and the prompt when both go to a terminal.
const PROMPT_RULE: &str =
    "---------------------------------------- prompt ----------------------------------------";

/// `-o FILE`'s one line on stderr: what was written where.
fn written(r: &AssembleReport, path: &Path) -> String {
    let model = r
        .model
        .as_deref()
        .map(|m| format!(", {m}"))
        .unwrap_or_default();
    format!(
        "{} of {} tokens in {} pieces{model} written to {}",
        thousands(u64::from(r.tokens_total)),
        thousands(u64::from(r.budget)),
        r.pieces.len(),
        path.display()
    )
}

/// `assemble "how are cookies stored"`: words where the folder goes. When DIR is not a folder,
/// no query was given and DIR reads like one (it has a space or ends with `?`), the refusal
/// prints the command that was meant: the same command line with `. --query WORDS` in place of
/// DIR, quoted for a POSIX shell, so that it runs as printed.
fn words_for_folder(args: &AssembleArgs) -> Option<Failure> {
    let dir = args.dir.as_ref()?;
    if args.query.is_some() || args.query_file.is_some() || dir.is_dir() {
        return None;
    }
    let words = dir.to_str()?.trim();
    if !(words.contains(char::is_whitespace) || words.ends_with('?')) {
        return None;
    }
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let at = argv.iter().position(|a| a == "assemble")?;
    let dir_at = at + 1 + argv[at + 1..].iter().position(|a| a.trim() == words)?;
    let mut meant = vec!["ctxgate".to_string()];
    for (i, a) in argv.iter().enumerate() {
        if i == dir_at {
            meant.extend([".".to_string(), "--query".to_string(), shell_quote(words)]);
        } else {
            meant.push(shell_quote(a));
        }
    }
    Some(Failure::coded(
        ErrorCode::QueryMissing,
        format!(
            "`{words}` is not a folder, and no --query was given; to ask it as a query, run:\n  {}",
            meant.join(" ")
        ),
    ))
}

/// `arg` as a POSIX shell reads it back: bare when it is plain, else in double quotes, or in
/// single quotes when double quotes would expand something.
fn shell_quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else if !arg.contains(['$', '`', '\\', '"', '!']) {
        format!("\"{arg}\"")
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Writes `-o FILE` whole or not at all: a temporary file beside it, renamed over it.
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let fail = |e: std::io::Error| {
        Failure::coded(
            ErrorCode::OutputUnwritable,
            format!("cannot write `{}`: {e}", path.display()),
        )
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| fail(std::io::Error::other("not a file name")))?;
    let tmp = dir.join(format!(".{}.ctxgate-tmp", name.to_string_lossy()));
    std::fs::write(&tmp, bytes).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

/// The budget analysis, one fact a line: the model and window, the budget, the repository,
/// the allocation, time and warnings.
fn analysis(r: &AssembleReport, catalog: &ctxgate_core::catalog::Catalog) -> String {
    let mut out = String::new();
    let a = &r.analysis;
    let exact = if r.exact { "exact" } else { "estimate" };
    push_line!(out, "ctxgate budget analysis");
    match (&r.model, &a.window) {
        (Some(id), Some(w)) => {
            let provider = catalog.get(id).map(|m| m.provider.as_str()).unwrap_or("?");
            push_line!(
                out,
                "  model       {id} ({provider}), tokenizer {} ({exact})",
                r.tokenizer
            );
            push_line!(
                out,
                "  window      {} tokens: usable {}, reply reserve {}, system prompt {}",
                thousands(u64::from(w.window)),
                thousands(u64::from(w.usable)),
                thousands(u64::from(w.reply_reserve)),
                thousands(u64::from(w.system_prompt))
            );
        }
        _ => push_line!(
            out,
            "  model       none given, tokenizer {} ({exact})",
            r.tokenizer
        ),
    }
    push_line!(
        out,
        "  budget      {} tokens",
        thousands(u64::from(r.budget))
    );
    let status = match a.index_status {
        IndexStatus::Published => "rebuilt for this request",
        IndexStatus::UpToDate => "up to date",
    };
    push_line!(
        out,
        "  repository  {} files, {} chunks, {} tokens (index v{}, {status})",
        thousands(a.repo_files as u64),
        thousands(a.repo_chunks as u64),
        thousands(a.repo_tokens),
        a.index_version
    );
    push_line!(out, "  strategy    {}", a.strategy);
    let pct = if r.budget == 0 {
        0.0
    } else {
        f64::from(r.tokens_total) * 100.0 / f64::from(r.budget)
    };
    let summary_tokens: u64 = r.summaries.iter().map(|s| u64::from(s.tokens)).sum();
    push_line!(
        out,
        "  allocation  query and framing {}, code {} in {} pieces, summaries {} in {}; total {} of {} ({pct:.1} %)",
        thousands(u64::from(a.frame_tokens)),
        thousands(u64::from(a.code_tokens)),
        r.pieces.len(),
        thousands(summary_tokens),
        r.summaries.len(),
        thousands(u64::from(r.tokens_total)),
        thousands(u64::from(r.budget)),
    );
    let p = &r.profile;
    if p.name != Profile::Expand {
        let mut line = format!(
            "  profile     {}: budget {}",
            p.name.name(),
            thousands(u64::from(p.budget))
        );
        if let Some(m) = p.max_pieces {
            line.push_str(&format!(", at most {m} pieces"));
        }
        if let Some(n) = p.frame_pieces {
            line.push_str(&format!(
                ", {} stack frames read, {n} chunks at their lines",
                p.error_frames.len()
            ));
        }
        push_line!(out, "{line}");
    }
    let s = &r.savings;
    if s.compression_tokens_saved > 0 {
        let usd = match (&s.compression_usd_saved, &s.priced_with) {
            (Some(usd), Some(m)) => format!(" (${usd:.6} at {m}'s input price)"),
            _ => String::new(),
        };
        push_line!(
            out,
            "  compression saved {} tokens{usd}",
            thousands(u64::from(s.compression_tokens_saved))
        );
    }
    if a.left_out > 0 {
        push_line!(
            out,
            "  left out    {} matching chunks did not fit",
            thousands(a.left_out as u64)
        );
    }
    push_line!(
        out,
        "  time        index {} ms, retrieve {} ms, compose {} ms",
        a.timings_ms.index,
        a.timings_ms.retrieve,
        a.timings_ms.compose
    );
    for w in &r.warnings {
        push_line!(out, "  warning     {w}");
    }
    out
}
