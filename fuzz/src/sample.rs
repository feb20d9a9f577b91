//! A small project indexed once per process with the real pipeline: the objects a published
//! version consists of (manifest, pack, segments), for the API and index-reader targets.

use std::sync::OnceLock;

use ctxgate_core::index::layout::keys;
use ctxgate_indexer::pipeline::{IndexOptions, NoProgress, ProjectTarget, index_project};
use ctxgate_indexer::store::Store;

/// The organisation that owns the sample project.
pub const ORG: &str = "acme";
/// The sample project's name.
pub const PROJECT: &str = "sample";

/// Hand-written files in several languages, so every chunker and the summaries have work.
const FILES: &[(&str, &str)] = &[
    (
        "src/config.rs",
        "//! Configuration.\n\nuse std::path::Path;\n\n/// Reads and parses the configuration file.\npub fn parse_config(path: &Path) -> Config {\n    let text = std::fs::read_to_string(path).unwrap_or_default();\n    Config { text }\n}\n\n/// The parsed configuration.\npub struct Config {\n    pub text: String,\n}\n",
    ),
    (
        "src/render.rs",
        "use crate::config::parse_config;\n\n/// Renders a page to HTML.\npub fn render_page(title: &str) -> String {\n    let _ = parse_config(std::path::Path::new(\"x\"));\n    format!(\"<h1>{title}</h1>\")\n}\n",
    ),
    (
        "tools/report.py",
        "import json\n\n\ndef load(path):\n    \"\"\"Loads a report.\"\"\"\n    with open(path) as f:\n        return json.load(f)\n\n\nclass Report:\n    def total(self, rows):\n        return sum(r[\"n\"] for r in rows)\n",
    ),
    (
        "web/app.ts",
        "export interface User { id: number; name: string }\n\nexport function greet(u: User): string {\n  return `hello ${u.name}`;\n}\n",
    ),
    (
        "cmd/main.go",
        "package main\n\nimport \"fmt\"\n\n// Add sums two numbers.\nfunc Add(a, b int) int { return a + b }\n\nfunc main() { fmt.Println(Add(1, 2)) }\n",
    ),
    (
        "README.md",
        "# Sample\n\nA sample project for the fuzz targets.\n\n## Usage\n\nCall `parse_config` then `render_page`.\n",
    ),
];

/// The published objects of the sample project's first version.
pub struct SampleIndex {
    /// The project id.
    pub project_id: String,
    /// The published version.
    pub version: u64,
    /// Every object under the organisation, by key.
    pub objects: Vec<(String, Vec<u8>)>,
}

impl SampleIndex {
    /// The bytes of the object `key`.
    pub fn object(&self, key: &str) -> &[u8] {
        self.objects
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, b)| b.as_slice())
            .unwrap_or_else(|| panic!("the sample index has no `{key}`"))
    }

    /// The manifest's bytes.
    pub fn manifest(&self) -> &[u8] {
        self.object(&keys::manifest(ORG, &self.project_id, self.version))
    }

    /// The pack's bytes.
    pub fn pack(&self) -> &[u8] {
        self.object(&keys::pack(ORG, &self.project_id, self.version))
    }
}

/// The sample index, built on first use.
pub fn sample() -> &'static SampleIndex {
    static SAMPLE: OnceLock<SampleIndex> = OnceLock::new();
    SAMPLE.get_or_init(build)
}

fn build() -> SampleIndex {
    let repo = tempfile::tempdir().expect("temporary folder");
    for (path, text) in FILES {
        let file = repo.path().join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("folder");
        std::fs::write(&file, text).expect("file");
    }
    let data = tempfile::tempdir().expect("temporary folder");
    let store = Store::open(data.path()).expect("store");
    let target = ProjectTarget::named(ORG, PROJECT);
    let report = index_project(
        &store,
        &target,
        repo.path(),
        &IndexOptions::default(),
        &NoProgress,
    )
    .expect("the sample project indexes");
    let objects = store
        .list_objects(&format!("org/{ORG}/"))
        .expect("objects")
        .into_iter()
        .map(|o| {
            let bytes = store.get_object(&o.key).expect("object");
            (o.key, bytes)
        })
        .collect();
    SampleIndex {
        project_id: target.id,
        version: report.version,
        objects,
    }
}
