//! Helpers for the CLI tests: sample repositories and running the real binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod http_stub;
pub use http_stub::*;

pub struct Env {
    pub home: tempfile::TempDir,
    pub repo: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            repo: tempfile::tempdir().unwrap(),
        }
    }

    pub fn repo(&self) -> &Path {
        self.repo.path()
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.repo.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
        c.env("CTXGATE_HOME", self.home.path())
            .env_remove("CTXGATE_CATALOG")
            .env_remove("CTXGATE_LOG");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// `ctxgate assemble --repo <the repo> ARGS...`
    pub fn assemble(&self, args: &[&str]) -> Output {
        self.cmd()
            .args(["assemble", "--repo"])
            .arg(self.repo.path())
            .args(args)
            .output()
            .unwrap()
    }

    pub fn repo_arg(&self) -> String {
        self.repo.path().to_string_lossy().into_owned()
    }

    /// A small multi-language repository with a known answer to "parse the config".
    pub fn sample(&self) {
        self.write(
            "src/config.rs",
            "//! Configuration.\n\nuse std::path::Path;\n\n/// Reads and parses the configuration file.\npub fn parse_config(path: &Path) -> Config {\n    let text = std::fs::read_to_string(path).unwrap_or_default();\n    Config { text }\n}\n\n/// The parsed configuration.\npub struct Config {\n    pub text: String,\n}\n",
        );
        self.write(
            "src/render.rs",
            "/// Renders a page to HTML.\npub fn render_page(title: &str) -> String {\n    format!(\"<h1>{title}</h1>\")\n}\n",
        );
        self.write(
            "app/server.py",
            "import os\n\n\nclass Server:\n    \"\"\"Serves pages.\"\"\"\n\n    def start(self, port):\n        return port\n",
        );
        self.write(
            "web/app.ts",
            "export function greet(name: string): string {\n  return `hi ${name}`;\n}\n",
        );
        self.write(
            "README.md",
            "# Sample\n\nA sample project.\n\n## Config\n\nSee parse_config.\n",
        );
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

/// Every file under `dir` with its bytes and modification time.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
            }
            let bytes = if meta.is_file() {
                std::fs::read(&p).unwrap_or_default()
            } else {
                Vec::new()
            };
            out.push((p, bytes, meta.modified().unwrap()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A stand-in for an OpenAI-compatible server: its "summary" is the first words of what it was
/// sent, so the output depends on the request. Returns its base URL and the bodies it received.
pub fn fake_model_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let addr = json_server(move |r| {
        let body = String::from_utf8(r.body).unwrap();
        let req: serde_json::Value = serde_json::from_str(&body).unwrap();
        let user = req["messages"][1]["content"].as_str().unwrap_or("");
        let words: Vec<&str> = user.split_whitespace().take(5).collect();
        let answer = serde_json::json!({"choices": [{"message": {"role": "assistant",
            "content": format!("MODEL-SUMMARY {}", words.join(" "))}}]});
        log.lock().unwrap().push(body);
        ("200 OK", answer)
    });
    (format!("http://{addr}/v1"), seen)
}

/// The flags that point `--dense api` at [`embeddings_server`] with 64 dimensions.
pub fn dense_api_flags(url: &str) -> Vec<String> {
    [
        "--dense",
        "api",
        "--embed-url",
        url,
        "--embed-model",
        "test-embedder",
        "--embed-dims",
        "64",
    ]
    .map(String::from)
    .to_vec()
}

/// A small seeded generator (SplitMix64) for crash and load tests: the seed is printed, so a
/// failing run can be replayed with it.
pub struct SeededRng(u64);

impl SeededRng {
    /// `CTXGATE_TEST_SEED` when set, else `default`.
    pub fn from_env(default: u64) -> Self {
        let seed = std::env::var("CTXGATE_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default);
        eprintln!("seed {seed} (CTXGATE_TEST_SEED replays it)");
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo).max(1)
    }
}
