//! Ranking signals end to end: the import graph and path signals computed from an indexed
//! repository, and file diversity under a small budget, as each piece's `reasoning` reports them.

use std::path::Path;

use ctxgate_core::catalog::{BudgetPolicy, Catalog};
use ctxgate_core::compress::Compression;
use ctxgate_core::profile::Profile;
use ctxgate_indexer::assemble::{AssembleRequest, assemble};
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress};
use ctxgate_indexer::store::Store;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// `query` over `root` with the default model, `budget` tokens, no compression, `expand`.
fn request(root: &Path, query: &str, budget: u32) -> AssembleRequest {
    AssembleRequest {
        repo: root.to_path_buf(),
        query: query.into(),
        budget: Some(budget),
        model: None,
        policy: BudgetPolicy::default(),
        index: IndexOptions::default(),
        hot_paths: Vec::new(),
        compression: Compression::None,
        profile: Profile::Expand,
        error_output: None,
        dense: None,
        rerankers: Default::default(),
    }
}

#[test]
fn graph_path_and_diversity_reach_the_reasoning() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    // Two functions long enough to be chunks of their own.
    let body = |name: &str, op: &str| {
        let mut f = format!("def {name}(view, rows):\n    \"\"\"Scrolls the view.\"\"\"\n");
        for i in 0..40 {
            f.push_str(&format!(
                "    step_{i} = view.top {op} rows * {i} + len(view.rows)\n"
            ));
        }
        f.push_str("    view.top = min(max(step_39, 0), view.limit)\n    return draw(view)\n\n\n");
        f
    };
    write(
        root,
        "app/pager.py",
        &format!(
            "from .render import draw\n\n\n{}{}",
            body("scroll_down", "+"),
            body("scroll_up", "-")
        ),
    );
    write(
        root,
        "app/render.py",
        "def draw(view):\n    \"\"\"Draws the rows of the view up to its limit.\"\"\"\n    return [row for row in view.rows[view.top:view.limit]]\n",
    );
    write(
        root,
        "app/config.py",
        "def load(path):\n    \"\"\"Reads the view limit from a file.\"\"\"\n    return int(open(path).read())\n",
    );
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let req = request(
        root,
        "the pager cannot scroll the view past its limit",
        4000,
    );
    let report = assemble(&store, &Catalog::builtin(), &req, &NoProgress).unwrap();
    let why = |path: &str| {
        report
            .pieces
            .iter()
            .filter(|p| p.path == path)
            .map(|p| p.reasoning.unwrap())
            .collect::<Vec<_>>()
    };
    let pager = why("app/pager.py");
    let render = why("app/render.py");
    let config = why("app/config.py");
    assert!(!pager.is_empty() && !render.is_empty() && !config.is_empty());
    // "pager" is in one path only.
    assert!(pager.iter().all(|s| s.path > 0.0), "{pager:?}");
    assert!(render.iter().chain(&config).all(|s| s.path == 0.0));
    // render.py is imported by the strongest file; config.py is linked to nothing.
    assert!(render.iter().all(|s| s.graph > 0.0), "{render:?}");
    assert!(config.iter().all(|s| s.graph == 0.0), "{config:?}");
    // Under 8k a file's second chunk counts 0.9 of its score.
    let mut d: Vec<f32> = pager.iter().map(|s| s.diversity).collect();
    d.sort_by(f32::total_cmp);
    assert_eq!(d.first().copied(), Some(0.9), "{pager:?}");
    assert_eq!(d.last().copied(), Some(1.0));
}

/// A query that matches thousands of chunks: selection considers only the best of them (up to
/// 16 times the room, at least 2,048), yet the answer still reports every match, keeps the
/// budget, and takes the chunks that match best.
#[test]
fn a_query_matching_thousands_of_chunks_keeps_the_budget_and_the_best() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    for i in 0..3000 {
        write(
            root,
            &format!("mods/m{:02}/f{i}.py", i % 40),
            &format!(
                "def handler_{i}(request):\n    \"\"\"Reads the request.\"\"\"\n    return request.body\n"
            ),
        );
    }
    // The two chunks the query is about, each also matching the rarer words.
    write(
        root,
        "core/retry.py",
        "def retry_request(request, attempts):\n    \"\"\"Retries a failed request with backoff.\"\"\"\n    for attempt in range(attempts):\n        backoff(attempt)\n    return request.body\n",
    );
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let req = request(root, "retry a failed request with backoff", 2000);
    let report = assemble(&store, &Catalog::builtin(), &req, &NoProgress).unwrap();
    assert!(
        report.analysis.candidates > 3000,
        "every match is reported: {}",
        report.analysis.candidates
    );
    assert!(report.tokens_total <= 2000);
    assert_eq!(report.pieces[0].path, "core/retry.py");
    assert!(report.pieces.len() > 10, "the room is still filled");
}

/// Built output, vendored copies and fuzz seeds that match a question are left out of code
/// context and counted in a warning, unless the request names them; a question about a default
/// finds the constant that sets it.
#[test]
fn set_aside_files_are_left_out_and_defaults_are_found() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    write(
        root,
        "src/client.js",
        "const DEFAULT_TIMEOUT_MS = 30000;\nconst RETRY_LIMIT = 2;\n\nfunction send(request, options) {\n  const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;\n  return fetchWithTimeout(request, timeout);\n}\n\nmodule.exports = { send };\n",
    );
    write(
        root,
        "dist/client.js",
        "const DEFAULT_TIMEOUT_MS = 30000;\nfunction send(request, options) { const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS; return fetchWithTimeout(request, timeout); }\n",
    );
    write(
        root,
        "vendor/fetch/timeout.js",
        "function fetchWithTimeout(request, timeout) { return fetch(request, { signal: AbortSignal.timeout(timeout) }); }\n",
    );
    for i in 0..5 {
        write(root, &format!("fuzz/seeds/send/s{i}"), "timeout request");
    }
    // More code than the budget holds, so that the answer is chosen, not the whole tree.
    let filler: String = (0..600)
        .map(|i| format!("function layout{i}(node) {{ return node.width * {i} + node.height; }}\n"))
        .collect();
    write(root, "src/layout.js", &filler);
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let question = "what is the default timeout of a request?";
    let report = assemble(
        &store,
        &Catalog::builtin(),
        &request(root, question, 4000),
        &NoProgress,
    )
    .unwrap();
    let paths: Vec<&str> = report.pieces.iter().map(|p| p.path.as_str()).collect();
    assert!(paths.contains(&"src/client.js"), "{paths:?}");
    assert!(
        paths.iter().all(|p| !p.starts_with("dist/")
            && !p.starts_with("vendor/")
            && !p.starts_with("fuzz/")),
        "{paths:?}"
    );
    let note = report
        .warnings
        .iter()
        .find(|w| w.contains("set aside"))
        .expect("a warning counts what was set aside");
    assert!(
        note.contains("data: 5") && note.contains("generated: 1"),
        "{note}"
    );
    let client = report
        .pieces
        .iter()
        .find(|p| p.path == "src/client.js")
        .unwrap();
    assert!(client.start_line <= 1 && client.end_line >= 1, "{client:?}");

    // Named, a set-aside file is the request's subject like any other.
    let named = assemble(
        &store,
        &Catalog::builtin(),
        &request(root, "what does dist/client.js export?", 4000),
        &NoProgress,
    )
    .unwrap();
    assert!(named.pieces.iter().any(|p| p.path == "dist/client.js"));
}

/// A stage plugged in between ranking and selection (`Rerank`) re-orders what the built-in
/// ranking chose: here it puts the one chunk of a file that matches the request weakly first,
/// and the answer leads with it; without it, that file comes after the ones that match well.
#[test]
fn a_plugged_in_stage_reorders_before_selection() {
    use std::sync::Arc;

    use ctxgate_core::rank::{Ranked, Rerank, Rerankers, StageInput};

    /// Raises the chunks of one file above every other candidate.
    struct Favour(&'static str);

    impl Rerank for Favour {
        fn name(&self) -> &'static str {
            "favour"
        }
        fn rerank(&self, input: &StageInput<'_>, ranked: &mut Vec<Ranked>) {
            let top = ranked.first().map_or(1.0, |r| r.score);
            for r in ranked.iter_mut() {
                let file = input.pack.chunks[r.chunk as usize].file as usize;
                if input.pack.files[file].path == self.0 {
                    r.score = top * 2.0;
                }
            }
            ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
        }
    }

    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    write(
        root,
        "net/retry.py",
        "def retry_request(request, attempts):\n    \"\"\"Retries a failed request with backoff.\"\"\"\n    for attempt in range(attempts):\n        backoff(attempt)\n    return request.body\n",
    );
    write(
        root,
        "net/log.py",
        "def log_request(request):\n    \"\"\"Writes one line per request.\"\"\"\n    print(request.method, request.path)\n",
    );
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let mut req = request(root, "retry a failed request with backoff", 2000);
    let plain = assemble(&store, &Catalog::builtin(), &req, &NoProgress).unwrap();
    assert_eq!(plain.pieces[0].path, "net/retry.py");
    req.rerankers = Rerankers::new(vec![Arc::new(Favour("net/log.py"))]);
    let favoured = assemble(&store, &Catalog::builtin(), &req, &NoProgress).unwrap();
    assert_eq!(favoured.pieces[0].path, "net/log.py");
    assert!(favoured.tokens_total <= 2000);
}
