//! `ctxgate models`.

use ctxgate_core::catalog::BudgetPolicy;
use ctxgate_core::error_code::ErrorCode;
use serde::Serialize;

use super::{catalog, print_json, thousands};
use crate::args::{Format, Global, ModelsArgs};
use crate::failure::CmdResult;

#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    model: &'a ctxgate_core::catalog::Model,
    usable_context: u32,
    tokenizer_label: String,
    exact: bool,
}

pub fn run(global: &Global, args: &ModelsArgs) -> CmdResult {
    let catalog = catalog(global)?;
    let policy = BudgetPolicy::default();
    let rows: Vec<Row<'_>> = catalog
        .models()
        .iter()
        .filter(|m| {
            args.provider
                .as_deref()
                .is_none_or(|p| m.provider.eq_ignore_ascii_case(p))
        })
        .map(|m| Row {
            model: m,
            usable_context: policy.divide(m).usable,
            tokenizer_label: m.tokenizer.label(),
            exact: m.tokenizer.is_exact(),
        })
        .collect();
    if let (Some(p), true) = (&args.provider, rows.is_empty()) {
        let mut known: Vec<&str> = catalog
            .models()
            .iter()
            .map(|m| m.provider.as_str())
            .collect();
        known.sort_unstable();
        known.dedup();
        return Err(crate::failure::Failure::coded(
            ErrorCode::UnknownProvider,
            format!("no model of provider `{p}`; known: {}", known.join(", ")),
        ));
    }
    if args.format == Format::Json {
        return print_json(&rows);
    }
    println!(
        "{:<30} {:<10} {:>10} {:>10} {:>8} {:<30} {:>8} {:>8} {:<8} ALIASES",
        "MODEL",
        "PROVIDER",
        "WINDOW",
        "USABLE",
        "MAX OUT",
        "TOKENIZER",
        "IN $/M",
        "OUT $/M",
        "TIER"
    );
    for r in &rows {
        let m = r.model;
        let line = format!(
            "{:<30} {:<10} {:>10} {:>10} {:>8} {:<30} {:>8.2} {:>8.2} {:<8} {}",
            m.id,
            m.provider,
            thousands(u64::from(m.context_window)),
            thousands(u64::from(r.usable_context)),
            thousands(u64::from(m.max_output)),
            r.tokenizer_label,
            m.input_price_per_mtok,
            m.output_price_per_mtok,
            format!("{:?}", m.tier).to_lowercase(),
            m.typed_aliases().collect::<Vec<_>>().join(", ")
        );
        println!("{}", line.trim_end());
    }
    println!(
        "\nUSABLE = window x 0.75 (the 75 % rule; the rest is left for the reply and system prompt).\n\
         estimate(...) tokenizers have no public tokenizer: counts are the base encoding's times a conservative ratio.\n\
         ALIASES: other names --model and the API's `model` accept; a short name (sonnet, gpt, gemini, llama3) is the newest model of its family. --format json lists every alias."
    );
    Ok(())
}
