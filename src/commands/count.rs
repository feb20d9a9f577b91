//! `ctxgate count`.

use ctxgate_core::error_code::ErrorCode;
use std::io::Read;

use ctxgate_core::catalog::TokenizerSpec;
use ctxgate_core::tokens::Encoding;
use serde::Serialize;

use super::{catalog, print_json, thousands};
use crate::args::{CountArgs, Format, Global};
use crate::failure::CmdResult;
use crate::failure::Failure;

#[derive(Serialize)]
struct Counted {
    input: String,
    bytes: usize,
    counts: Vec<Count>,
}

#[derive(Serialize)]
struct Count {
    target: String,
    tokenizer: String,
    tokens: u32,
    exact: bool,
}

pub fn run(global: &Global, args: &CountArgs) -> CmdResult {
    let targets = targets(global, args)?;
    if let Ok(dir) = super::data_dir(global) {
        let mut encodings: Vec<Encoding> = targets.iter().map(|(_, s)| s.base()).collect();
        encodings.sort();
        encodings.dedup();
        for e in encodings {
            ctxgate_indexer::token_tables::install(&dir, e);
        }
    }
    let inputs = read_inputs(args)?;
    let results: Vec<Counted> = inputs
        .iter()
        .map(|(name, text)| Counted {
            input: name.clone(),
            bytes: text.len(),
            counts: targets
                .iter()
                .map(|(target, spec)| Count {
                    target: target.clone(),
                    tokenizer: spec.label(),
                    tokens: spec.count(text),
                    exact: spec.is_exact(),
                })
                .collect(),
        })
        .collect();
    // One sum per target over every input (what a prompt made of them all would hold, less
    // the few tokens joining them may add or merge).
    let totals: Vec<Count> = targets
        .iter()
        .enumerate()
        .map(|(i, (target, spec))| Count {
            target: target.clone(),
            tokenizer: spec.label(),
            tokens: results.iter().map(|r| r.counts[i].tokens).sum(),
            exact: spec.is_exact(),
        })
        .collect();
    if args.format == Format::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            inputs: &'a [Counted],
            totals: &'a [Count],
        }
        return print_json(&Out {
            inputs: &results,
            totals: &totals,
        });
    }
    for r in &results {
        for c in &r.counts {
            let approx = if c.exact { "" } else { " (estimate)" };
            if results.len() == 1 && r.counts.len() == 1 {
                println!("{}{approx}", c.tokens);
            } else {
                println!(
                    "{:>12}{approx}  {}  {} ({})",
                    thousands(u64::from(c.tokens)),
                    r.input,
                    c.target,
                    c.tokenizer
                );
            }
        }
    }
    if results.len() > 1 {
        for c in &totals {
            let approx = if c.exact { "" } else { " (estimate)" };
            println!(
                "{:>12}{approx}  total ({} inputs)  {} ({})",
                thousands(u64::from(c.tokens)),
                results.len(),
                c.target,
                c.tokenizer
            );
        }
    }
    Ok(())
}

/// What to count with: the models and encodings asked for, or `o200k_base`.
fn targets(global: &Global, args: &CountArgs) -> Result<Vec<(String, TokenizerSpec)>, Failure> {
    let catalog = catalog(global)?;
    let mut targets: Vec<(String, TokenizerSpec)> = Vec::new();
    for m in &args.models {
        let model = catalog.resolve(m)?;
        targets.push((model.id.clone(), model.tokenizer));
    }
    for e in &args.encodings {
        let enc = Encoding::from_name(e).ok_or_else(|| {
            Failure::coded(ErrorCode::UnknownEncoding,
                format!("unknown encoding `{e}` (use o200k_base, o200k_harmony, cl100k_base, p50k_base or r50k_base)"),
            )
        })?;
        targets.push((enc.name().to_string(), TokenizerSpec::Exact(enc)));
    }
    if targets.is_empty() {
        targets.push((
            "o200k_base".into(),
            TokenizerSpec::Exact(Encoding::O200kBase),
        ));
    }
    Ok(targets)
}

/// Each input's name and text: the files named, or stdin.
fn read_inputs(args: &CountArgs) -> Result<Vec<(String, String)>, Failure> {
    let mut inputs: Vec<(String, String)> = Vec::new();
    let stdin = std::path::Path::new("-");
    let files: Vec<&std::path::Path> = if args.files.is_empty() {
        vec![stdin]
    } else {
        args.files.iter().map(|f| f.as_path()).collect()
    };
    for f in files {
        let (name, bytes) = if f == stdin {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map_err(|e| {
                Failure::coded(ErrorCode::IoError, format!("cannot read stdin: {e}"))
            })?;
            ("stdin".to_string(), buf)
        } else {
            let bytes = std::fs::read(f).map_err(|e| {
                Failure::coded(
                    ErrorCode::FileUnreadable,
                    format!("cannot read `{}`: {e}", f.display()),
                )
            })?;
            (format!("`{}`", f.display()), bytes)
        };
        let text = String::from_utf8(bytes).map_err(|e| {
            Failure::coded(
                ErrorCode::InvalidUtf8,
                format!(
                    "{name} is not valid UTF-8 (byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        inputs.push((f.display().to_string(), text));
    }
    Ok(inputs)
}
