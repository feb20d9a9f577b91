//! Helpers for the CLI tests: sample repositories and running the real binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    let body = String::from_utf8(body).unwrap();
                    let req: serde_json::Value = serde_json::from_str(&body).unwrap();
                    let user = req["messages"][1]["content"].as_str().unwrap_or("");
                    let words: Vec<&str> = user.split_whitespace().take(5).collect();
                    let answer = serde_json::json!({"choices": [{"message": {"role": "assistant",
                        "content": format!("MODEL-SUMMARY {}", words.join(" "))}}]})
                    .to_string();
                    log.lock().unwrap().push(body);
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if out.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/v1"), seen)
}
