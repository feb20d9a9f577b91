//! The budget is a promise: over random repositories, queries, budgets, models, compression
//! levels and profiles, the assembled prompt re-counted with the model's tokenizer never exceeds
//! the budget.

use ctxgate_core::catalog::{BudgetPolicy, Catalog};
use ctxgate_core::compress::Compression;
use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::profile::{PLAN_BUDGET, PLAN_PIECES, Profile};
use ctxgate_indexer::assemble::{AssembleRequest, assemble};
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress};
use ctxgate_indexer::store::Store;
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "parse",
    "config",
    "render",
    "page",
    "server",
    "start",
    "token",
    "budget",
    "select",
    "chunk",
    "index",
    "query",
    "User",
    "HttpClient",
    "load_file",
    "retry",
    "cache",
    "error",
    "value",
    "item",
];

fn arb_file() -> impl Strategy<Value = (String, String)> {
    let ext = prop::sample::select(vec![
        "rs", "py", "go", "js", "ts", "java", "c", "cpp", "md", "txt",
    ]);
    let line = prop::collection::vec(prop::sample::select(WORDS.to_vec()), 0..12)
        .prop_map(|w| w.join(" "));
    let body = prop::collection::vec(line, 1..60);
    (prop::sample::select(WORDS.to_vec()), ext, body).prop_map(|(name, ext, lines)| {
        let text = match ext {
            "rs" => lines
                .iter()
                .enumerate()
                .map(|(i, l)| format!("/// {l}\nfn f{i}() {{ let x = \"{l}\"; }}\n"))
                .collect(),
            "py" => lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    format!("def f{i}():\n    # {l}\n    x = '{l}'\n    y = x\n    return x\n\n")
                })
                .collect(),
            "go" | "js" | "java" => lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let head = match ext {
                        "go" => format!("func f{i}(x int) int {{"),
                        "js" => format!("function f{i}(x) {{"),
                        _ => format!("static int f{i}(int x) {{"),
                    };
                    format!(
                        "{head}\n    // {l}\n    x = x + 1;\n    g(\"{l}\");\n    return x;\n}}\n"
                    )
                })
                .collect(),
            _ => lines.join("\n"),
        };
        (format!("{}/{name}.{ext}", name.to_lowercase()), text)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn assembled_prompt_never_exceeds_the_budget(
        files in prop::collection::vec(arb_file(), 1..12),
        query in prop::collection::vec(prop::sample::select(WORDS.to_vec()), 1..6),
        budget in ctxgate_core::catalog::MIN_BUDGET..4000,
        model in prop::sample::select(vec![None, Some("gpt-4o"), Some("claude"), Some("gpt-4")]),
        compression in prop::sample::select(vec![
            Compression::None,
            Compression::Light,
            Compression::Medium,
            Compression::Aggressive,
        ]),
        profile in prop::sample::select(vec![Profile::Expand, Profile::Plan, Profile::Repair]),
        frame_line in 1u32..40,
    ) {
        let repo = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        for (path, text) in &files {
            let p = repo.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let catalog = Catalog::builtin();
        // "claude" stands for any model whose count is an estimate.
        let model = model.map(|m| match m {
            "claude" => catalog.models().iter().find(|x| !x.tokenizer.is_exact()).unwrap().id.clone(),
            "gpt-4" => catalog.get("gpt-4").map_or("gpt-4o".to_string(), |x| x.id.clone()),
            other => other.to_string(),
        });
        let store = Store::open(home.path()).unwrap();
        // A stack trace naming a line of the first file, absolute like a real one, and one of a
        // file outside the repository.
        let error_output = (profile == Profile::Repair).then(|| {
            format!(
                "Traceback (most recent call last):\n  File \"/srv/app/{}\", line {frame_line}, in f0\n  at /usr/lib/x.js:3:1\nError: {} failed\n",
                files[0].0, query[0]
            )
        });
        let req = AssembleRequest {
            repo: repo.path().to_path_buf(),
            query: query.join(" "),
            budget: Some(budget),
            model: model.clone(),
            policy: BudgetPolicy::default(),
            index: IndexOptions::default(),
            hot_paths: Vec::new(),
            compression,
            profile,
            error_output,
            dense: None,
            rerankers: Default::default(),
        };
        match assemble(&store, &catalog, &req, &NoProgress) {
            Ok(report) => {
                let spec = match &model {
                    Some(m) => catalog.resolve(m).unwrap().tokenizer,
                    None => ctxgate_core::catalog::TokenizerSpec::Exact(ctxgate_core::tokens::Encoding::O200kBase),
                };
                let recount = spec.count(&report.prompt);
                prop_assert!(recount <= budget, "{recount} > {budget}");
                prop_assert_eq!(recount, report.tokens_total);
                for p in &report.pieces {
                    prop_assert!(report.prompt.contains(p.text.trim_end()));
                    // Provenance is of the text sent.
                    prop_assert_eq!(&p.sha256, &Sha256Digest::of(p.text.as_bytes()).to_hex());
                    if let Some(before) = p.original_tokens {
                        prop_assert!(before > p.tokens);
                    }
                }
                let saved: u32 = report.pieces.iter()
                    .filter_map(|p| p.original_tokens.map(|o| o - p.tokens))
                    .sum();
                prop_assert_eq!(report.savings.compression_tokens_saved, saved);
                match profile {
                    Profile::Plan => {
                        prop_assert!(recount <= PLAN_BUDGET);
                        prop_assert!(report.pieces.len() <= PLAN_PIECES);
                    }
                    Profile::Repair => prop_assert!(report.prompt.contains("## Error output")),
                    Profile::Expand => {}
                }
                prop_assert_eq!(report.profile.name, profile);
                // Summaries ride in the same prompt, inside the same budget, never as pieces.
                for s in &report.summaries {
                    prop_assert!(report.prompt.contains(s.text.trim_end()));
                    prop_assert!(!report.pieces.iter().any(|p| p.chunk_id.is_empty() || p.path == "."));
                }
            }
            Err(ctxgate_indexer::IndexerError::Compose(_)) => {} // the query alone is over a tiny budget
            Err(ctxgate_indexer::IndexerError::RepoEmpty { .. }) => {} // only whitespace files
            Err(e) => prop_assert!(false, "unexpected error: {e}"),
        }
    }
}
